"""The files of ``ceql run --engine spark``, written on the workers by the local engine's writers
(``io/writers.py``), so that both engines write the same JSON Lines bytes, the same Parquet
schema and rows, and the same dead-letter records.

Each task writes its rows to a file of its own attempt under ``_attempts``; the driver keeps the
files of the attempts Spark reports as done (named in the job's result), renames them to
``part-00000.jsonl``, ``part-00001.jsonl``, ... in order (query, then partition), removes the
rest and marks the folder with ``_SUCCESS``. A folder without rows still holds a Parquet file
with the schema.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ceql.compile.output_schema import OutputSchema, TimeType
from ceql.io.writers import FORMATS, ParquetFileWriter, RunSchema, open_writer, restricted, widen

ATTEMPTS = "_attempts"
_DONE = "`file` string, `query` bigint, `part` bigint, `rows` bigint"


def file_rows(
    batch: pa.RecordBatch,
    out: OutputSchema,
    paths: Sequence[str],
    times: dict[str, TimeType],
    restrictions: dict[str, tuple[str, ...] | None] | None = None,
    bookkeeping: tuple[str, str] = ("__file", "__line"),
) -> pa.RecordBatch:
    """A batch of ``find`` on the run's events (times as int64 nanoseconds; events with their
    input file index and line) as rows of the query's output schema ``out`` (``times``: how
    the run's input gives each time column)."""
    measures = {m.name: m for m in out.measures}
    names = batch.schema.names
    arrays = []
    for f in out.arrow:
        if f.name == "events":
            arrays.append(_events(batch, f.type, paths, times, restrictions, bookkeeping))
        elif f.name in measures:
            arrays.append(measures[f.name].from_raw(batch.column(names.index(f.name))))
        else:
            arrays.append(batch.column(names.index(f.name)).cast(f.type))
    return pa.RecordBatch.from_arrays(arrays, schema=out.arrow)


def _events(
    batch: pa.RecordBatch,
    kind: pa.DataType,
    paths: Sequence[str],
    times: dict[str, TimeType],
    restrictions: dict[str, tuple[str, ...] | None] | None,
    bookkeeping: tuple[str, str],
) -> pa.Array:
    column = batch.column(batch.schema.names.index("events"))
    offsets = pc.subtract(column.offsets, column.offsets[0])
    values = column.flatten()
    found = dict(zip([f.name for f in values.type], values.flatten()))
    positions = batch.column(batch.schema.names.index("positions")).flatten()
    file_column, line_column = bookkeeping
    sources = pa.array(list(paths), pa.string()).take(found[file_column].cast(pa.int64()))
    event_type = kind.value_type
    arrays = []
    for f in event_type:
        if f.name == "position":
            arrays.append(positions.cast(pa.int64()))
        elif f.name == "source":
            arrays.append(sources)
        elif f.name == "row":
            arrays.append(found[line_column].cast(pa.int64()))
        elif f.name in times:
            arrays.append(times[f.name].from_ns(found[f.name].cast(pa.int64())))
        else:
            arrays.append(found[f.name].cast(f.type))
    events = pa.StructArray.from_arrays(arrays, fields=list(event_type))
    if restrictions:
        labels = batch.column(batch.schema.names.index("labels")).to_pylist() if "labels" in batch.schema.names else None
        matches = [
            (p, labels[i] if labels is not None else None)
            for i, p in enumerate(batch.column(batch.schema.names.index("positions")).to_pylist())
        ]
        events = restricted(events, matches, restrictions)
    return pa.ListArray.from_arrays(offsets.cast(pa.int32()), events, type=kind)


def write_matches(
    jobs: Sequence[tuple[Any, OutputSchema, dict]],
    run: RunSchema,
    folder: str,
    fmt: str,
    paths: Sequence[str],
) -> dict[str, int]:
    """Write every query's matches (``jobs``: the DataFrame ``find`` gave, the query's output
    schema, its SELECT restrictions) into ``folder``; returns the rows written per query."""
    os.makedirs(folder, exist_ok=True)
    attempts = os.path.join(folder, ATTEMPTS)
    extension = FORMATS[fmt].extension
    arrow, times = run.arrow, dict(run.times)
    done = None
    for index, (found, out, restrictions) in enumerate(jobs):

        def task(batches, index=index, out=out, restrictions=restrictions):
            return _write_task(batches, index, out, arrow, times, fmt, attempts, extension, paths, restrictions)

        written = found.mapInArrow(task, _DONE)
        done = written if done is None else done.unionByName(written)
    rows = done.collect() if done is not None else []
    counts = {out.name: 0 for _, out, _ in jobs}
    names = [out.name for _, out, _ in jobs]
    kept = sorted(rows, key=lambda r: (r["query"], r["part"]))
    for number, row in enumerate(kept):
        os.replace(row["file"], os.path.join(folder, f"part-{number:05d}.{extension}"))
        counts[names[row["query"]]] += row["rows"]
    shutil.rmtree(attempts, ignore_errors=True)
    if not kept and fmt == "parquet":  # readers learn the schema from a file
        writer = ParquetFileWriter(os.path.join(folder, f"part-00000.{extension}"), arrow)
        writer.close()
    _success(folder)
    return counts


def _write_task(
    batches: Iterator[pa.RecordBatch],
    index: int,
    out: OutputSchema,
    arrow: pa.Schema,
    times: dict,
    fmt: str,
    attempts: str,
    extension: str,
    paths: Sequence[str],
    restrictions: dict,
) -> Iterator[pa.RecordBatch]:
    """On a worker: one task's rows into one file of its attempt."""
    from pyspark import TaskContext

    context = TaskContext.get()
    part = context.partitionId() if context is not None else 0
    attempt = context.taskAttemptId() if context is not None else 0
    name = os.path.join(attempts, f"{index:03d}-{part:05d}-{attempt}.{extension}")
    writer: Any = None
    count = 0
    try:
        for batch in batches:
            rows = widen(file_rows(batch, out, paths, times, restrictions), arrow)
            if not rows.num_rows:
                continue
            if writer is None:
                os.makedirs(attempts, exist_ok=True)
                writer = open_writer(fmt, name, arrow)
            writer.write(rows)
            count += rows.num_rows
    finally:
        if writer is not None:
            writer.close()
    if count:
        yield pa.RecordBatch.from_pydict(
            {"file": [name], "query": [index], "part": [part], "rows": [count]},
            schema=pa.schema([("file", pa.string()), ("query", pa.int64()), ("part", pa.int64()), ("rows", pa.int64())]),
        )


def write_dead_letters(rejected, folder: str, paths: Sequence[str], schema: Any, kinds: dict[str, str]) -> None:
    """The dead-letter records (``RowError.record``'s format, as the local engine writes them)
    of the rejected rows, in input order (file, then line), into ``folder``. ``rejected`` has
    the bookkeeping columns (file index, line, reason, input) and ``__values``: the typed row
    of an event rejected after parsing (out of order, late), whose input text it becomes."""
    from ceql.spark.bookkeeping import FILE, INPUT, LINE, REASON

    os.makedirs(folder, exist_ok=True)
    attempts = os.path.join(folder, ATTEMPTS)
    ordered = rejected.orderBy(FILE, LINE)

    def task(batches):
        return _dead_letter_task(batches, attempts, paths, schema.text(), kinds, (FILE, LINE, REASON, INPUT))

    rows = ordered.mapInArrow(task, _DONE).collect()
    for number, row in enumerate(sorted(rows, key=lambda r: r["part"])):
        os.replace(row["file"], os.path.join(folder, f"part-{number:05d}.jsonl"))
    shutil.rmtree(attempts, ignore_errors=True)
    _success(folder)


def _dead_letter_task(batches, attempts, paths, declaration: str, kinds, columns) -> Iterator[pa.RecordBatch]:
    import json

    from pyspark import TaskContext

    from ceql import declare
    from ceql.io.errors import RejectList, RowError
    from ceql.io.ordering import Orderer

    file_column, line_column, reason_column, input_column = columns
    orderer = Orderer(declare(declaration), RejectList(), times=kinds)
    context = TaskContext.get()
    part = context.partitionId() if context is not None else 0
    name = os.path.join(attempts, f"{part:05d}-{context.taskAttemptId() if context is not None else 0}.jsonl")
    count = 0
    stream = None
    try:
        for batch in batches:
            for row in batch.to_pylist():
                text = row[input_column]
                if text is None and row.get("__values") is not None:
                    text = orderer.text(row["__values"])
                error = RowError(paths[row[file_column]], row[line_column], row[reason_column], text)
                if stream is None:
                    os.makedirs(attempts, exist_ok=True)
                    stream = open(name, "w", encoding="utf-8")  # noqa: SIM115 - closed below
                stream.write(json.dumps(error.record(), ensure_ascii=False) + "\n")
                count += 1
    finally:
        if stream is not None:
            stream.close()
    if count:
        yield pa.RecordBatch.from_pydict(
            {"file": [name], "query": [0], "part": [part], "rows": [count]},
            schema=pa.schema([("file", pa.string()), ("query", pa.int64()), ("part", pa.int64()), ("rows", pa.int64())]),
        )


def _success(folder: str) -> None:
    with open(os.path.join(folder, "_SUCCESS"), "w", encoding="utf-8"):
        pass
