"""Write matches: JSON Lines and Parquet (the rows of the output schema), or CORE++'s text.

Both engines of ``ceql run`` write through this module: the local engine in its process, the
Spark engine on its workers, so the files are the same. A run's rows have one schema
(``RunSchema``): the output schema of its query (``compile/output_schema.py``), or with several
queries the union of theirs, where each query's rows leave the others' columns null.

JSON Lines is the Arrow row as JSON (``JsonEncoder``): one object per row, keys in schema order,
null values written as ``null``; times as ISO-8601 text in their zone (``...Z`` in UTC, local
time with its offset in another zone, none without a zone), or the integers the input gave;
NaN and infinities as the strings ``"NaN"``, ``"Infinity"`` and ``"-Infinity"`` (never invalid
JSON); integers exact at any size.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ceql.compile.output_schema import OutputSchema, TimeType, iso_text, list_parts
from ceql.lang.schema import Schema
from ceql.match import Match

_FIXED_ORDER = ("query", "trigger", "positions", "labels", "partition")


# ---------------------------------------------------------------------------- one schema a run


class RunSchema:
    """The schema of a run's rows: one query's output schema, or the union of several (fixed
    columns, then each query's measures in query order, then ``events`` and ``ids``)."""

    def __init__(self, schemas: Sequence[OutputSchema]) -> None:
        self.schemas = {s.name: s for s in schemas}
        self.arrow = union_schema([s.arrow for s in schemas])
        self.times: dict[str, TimeType] = dict(schemas[0].times) if schemas else {}

    def rows(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """A query's batch in the run's schema (its missing columns null)."""
        return widen(batch, self.arrow)


def run_schema(queries: Sequence[tuple[str, Any]], catalog: Any, with_events: bool) -> RunSchema:
    """The schema of a ``ceql run``: each query's output schema with the times as the run's
    input gives them (``catalog.time_inputs``; integers in the declared unit until known) and,
    with ``--with-events``, the ``events`` column (``event_fields``)."""
    from ceql.compile.output_schema import event_fields, output_schema, time_types

    kinds = dict(catalog.time_inputs)
    times = time_types(catalog.schema, kinds)
    kinds = {column: kinds.get(column) or kind.kind for column, kind in times.items()}
    events = event_fields(catalog, times) if with_events else None
    schemas = [output_schema(query.plan, name=name, time_kinds=kinds, events=events) for name, query in queries]
    run = RunSchema(schemas)
    run.times = times
    return run


def union_schema(schemas: Sequence[pa.Schema]) -> pa.Schema:
    """The union of output schemas: same-named columns merge (structs field by field; int and
    double give double; other differences give string)."""
    if len(schemas) == 1:
        return schemas[0]
    merged: dict[str, pa.Field] = {}
    for schema in schemas:
        for f in schema:
            merged[f.name] = _merge_fields(merged[f.name], f) if f.name in merged else f
    fixed = [merged[n] for n in _FIXED_ORDER if n in merged]
    tail = [merged[n] for n in ("events", "ids") if n in merged]
    middle = [f for n, f in merged.items() if n not in _FIXED_ORDER and n not in ("events", "ids")]
    if "labels" in merged:  # label fields in alphabetical order, as one query has them
        labels = merged["labels"]
        fixed[fixed.index(labels)] = pa.field("labels", pa.struct(sorted(labels.type, key=lambda f: f.name)))
    return pa.schema(fixed + middle + tail)


def _merge_fields(first: pa.Field, second: pa.Field) -> pa.Field:
    return pa.field(first.name, _merge_types(first.type, second.type), first.nullable or second.nullable)


def _merge_types(first: pa.DataType, second: pa.DataType) -> pa.DataType:
    if first == second:
        return first
    if pa.types.is_struct(first) and pa.types.is_struct(second):
        fields = {f.name: f for f in first}
        for f in second:
            fields[f.name] = _merge_fields(fields[f.name], f) if f.name in fields else f
        return pa.struct(list(fields.values()))
    if {str(first), str(second)} == {"int64", "double"}:
        return pa.float64()
    return pa.string()


def widen(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """``batch`` in ``schema``: columns it lacks null, structs completed, types widened."""
    if batch.schema == schema:
        return batch
    n = batch.num_rows
    names = batch.schema.names
    arrays = [
        _widen(batch.column(names.index(f.name)), f.type) if f.name in names else pa.nulls(n, f.type)
        for f in schema
    ]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _widen(array: pa.Array, kind: pa.DataType) -> pa.Array:
    if array.type == kind:
        return array
    if pa.types.is_struct(kind) and pa.types.is_struct(array.type):
        children = dict(zip([f.name for f in array.type], array.flatten()))
        parts = [_widen(children[f.name], f.type) if f.name in children else pa.nulls(len(array), f.type) for f in kind]
        return pa.StructArray.from_arrays(parts, fields=list(kind), mask=array.is_null() if array.null_count else None)
    try:
        return array.cast(kind)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        texts = [None if v is None else json.dumps(v, default=str) for v in array.to_pylist()]
        return pa.array(texts, kind)


# ---------------------------------------------------------------------------- JSON Lines


class JsonEncoder:
    """Record batches of one schema as JSON Lines text (see the module docstring)."""

    def __init__(self, schema: pa.Schema) -> None:
        self.schema = schema
        self.names = schema.names
        self._texted = [_has_time(f.type) for f in schema]
        self._floats = [_has_float(f.type) for f in schema]

    def encode(self, batch: pa.RecordBatch) -> str:
        """The rows of ``batch`` as JSON Lines (each line ends with a newline)."""
        if batch.num_rows == 0:
            return ""
        columns = []
        for index in range(batch.num_columns):
            array = batch.column(index)
            if self._texted[index]:
                array = _texted(array)
            values = array.to_pylist()
            if self._floats[index] and _nonfinite(batch.column(index)):
                values = [_finite(v) for v in values]
            columns.append(values)
        dumps = json.dumps
        names = self.names
        return "".join(
            dumps(dict(zip(names, row)), ensure_ascii=False, allow_nan=False) + "\n" for row in zip(*columns)
        )


def _has_time(kind: pa.DataType) -> bool:
    return _holds(kind, lambda t: pa.types.is_timestamp(t) or pa.types.is_date(t))


def _has_float(kind: pa.DataType) -> bool:
    return _holds(kind, pa.types.is_floating)


def _holds(kind: pa.DataType, test: Callable[[pa.DataType], bool]) -> bool:
    """Whether ``kind`` passes ``test`` or holds (in a struct or a list) a type that does."""
    if test(kind):
        return True
    if pa.types.is_struct(kind):
        return any(_holds(f.type, test) for f in kind)
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return _holds(kind.value_type, test)
    return False


def _texted(array: pa.Array) -> pa.Array:
    """Times (also inside lists and structs) as their ISO-8601 text."""
    kind = array.type
    if pa.types.is_timestamp(kind):
        ns = array.cast(pa.timestamp("ns", kind.tz)).cast(pa.int64()).to_pylist()
        return pa.array([None if v is None else iso_text(v, kind.tz) for v in ns], pa.string())
    if pa.types.is_date(kind):
        return pa.array([None if v is None else v.isoformat() for v in array.to_pylist()], pa.string())
    if pa.types.is_struct(kind):
        parts = [_texted(child) for child in array.flatten()]
        fields = [pa.field(f.name, part.type) for f, part in zip(kind, parts)]
        return pa.StructArray.from_arrays(parts, fields=fields, mask=array.is_null() if array.null_count else None)
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        offsets, child = list_parts(array)
        cls = pa.LargeListArray if pa.types.is_large_list(kind) else pa.ListArray
        return cls.from_arrays(offsets, _texted(child), mask=array.is_null() if array.null_count else None)
    return array


def _nonfinite(array: pa.Array) -> bool:
    """Whether a column holds NaN or an infinity anywhere (also inside lists and structs)."""
    kind = array.type
    if pa.types.is_floating(kind):
        finite = pc.is_finite(array)
        return bool(pc.any(pc.invert(pc.fill_null(finite, True))).as_py())
    if pa.types.is_struct(kind):
        return any(_nonfinite(child) for child in array.flatten())
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return _nonfinite(array.flatten())
    return False


def _finite(value: Any) -> Any:
    """NaN and infinities as the strings Spark and Jackson write; other values as they are."""
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return value
    if isinstance(value, list):
        return [_finite(v) for v in value]
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    return value


class JsonLinesWriter:
    """Rows of a run schema to a file (a path, which it opens and closes) or a text stream,
    as JSON Lines."""

    def __init__(self, target: str | TextIO, schema: pa.Schema) -> None:
        self.owned = isinstance(target, str)
        self.stream: TextIO = open(target, "w", encoding="utf-8") if isinstance(target, str) else target  # noqa: SIM115
        self.encoder = JsonEncoder(schema)
        self.count = 0

    def write(self, batch: pa.RecordBatch) -> None:
        self.stream.write(self.encoder.encode(batch))
        self.count += batch.num_rows

    def close(self) -> None:
        if self.owned:
            self.stream.close()
        else:
            self.stream.flush()


class ParquetFileWriter:
    """Rows of a run schema to a Parquet file (the Arrow schema is kept in the file)."""

    def __init__(self, path: str, schema: pa.Schema) -> None:
        self.writer = pq.ParquetWriter(path, schema)
        self.count = 0

    def write(self, batch: pa.RecordBatch) -> None:
        if batch.num_rows:
            self.writer.write_batch(batch)
            self.count += batch.num_rows

    def close(self) -> None:
        self.writer.close()


class CsvWriter:
    """Rows of a flat table (``ceql sql``'s results) as CSV with a header, to a file or a text
    stream (standard output: its bytes). Lists and structs have no CSV form: such a table is
    refused before anything is written."""

    def __init__(self, target: str | TextIO, schema: pa.Schema) -> None:
        import pyarrow.csv as pcsv

        nested = [f.name for f in schema if pa.types.is_nested(f.type)]
        if nested:
            from ceql.errors import CeqlError

            raise CeqlError(f"--format csv writes flat columns; {', '.join(nested)} hold lists or structs")
        self.text: TextIO | None = None
        if isinstance(target, str):
            sink: Any = target
        else:
            target.flush()
            sink = getattr(target, "buffer", None)
            if sink is None:  # a text stream without bytes (a test's StringIO): encode here
                import io

                self.text, sink = target, io.BytesIO()
        self.sink = sink
        self.writer = pcsv.CSVWriter(sink, schema)
        self.count = 0

    def write(self, batch: pa.RecordBatch) -> None:
        self.writer.write_batch(batch)
        self.count += batch.num_rows

    def close(self) -> None:
        self.writer.close()
        if self.text is not None:
            self.text.write(self.sink.getvalue().decode("utf-8"))
        elif not isinstance(self.sink, str):
            self.sink.flush()


@dataclass(frozen=True)
class OutputFormat:
    """An output format: its name, file extension, writer, and where it may be used.

    ``writer(target, schema)`` takes a path (or, unless ``binary``, a text stream) and an Arrow
    schema, and has ``write(batch)`` and ``close()``; None for CORE++'s text, which the local
    ``ceql run`` writes match by match (``CoreTextWriter``). ``commands`` names the commands
    that offer it: ``run`` (local engine), ``spark`` (``ceql run --engine spark``), ``sql``.
    """

    name: str
    extension: str | None  # None: never chosen from an output's name
    writer: Any
    binary: bool  # needs a file: never standard output
    commands: frozenset[str]
    help: str


#: Every output format, once: ``ceql run``'s and ``ceql sql``'s ``--format`` choices, format
#: detection from an output's extension and Spark's writers all follow this table. A new
#: format is a writer above and a line here.
FORMATS: dict[str, OutputFormat] = {
    f.name: f
    for f in (
        OutputFormat("jsonl", "jsonl", JsonLinesWriter, False, frozenset({"run", "spark", "sql"}), "JSON Lines"),
        OutputFormat("parquet", "parquet", ParquetFileWriter, True, frozenset({"run", "spark", "sql"}), "Parquet"),
        OutputFormat("csv", "csv", CsvWriter, False, frozenset({"sql"}), "CSV (flat tables: ceql sql)"),
        OutputFormat("core", None, None, False, frozenset({"run"}), "CORE++'s text format"),
    )
}


def formats_for(command: str) -> dict[str, OutputFormat]:
    """The output formats a command offers (``run``, ``spark`` or ``sql``), in table order."""
    return {name: fmt for name, fmt in FORMATS.items() if command in fmt.commands}


def open_writer(fmt: str, target: str | TextIO, schema: pa.Schema) -> Any:
    """The writer of a row format (``FORMATS``) to ``target``."""
    writer = FORMATS[fmt].writer
    if writer is None:
        raise ValueError(f"{fmt} is not a row format")
    return writer(target, schema)


# ---------------------------------------------------------------------------- --with-events


def events_column(
    kind: pa.DataType,
    matches: Sequence[Match],
    refs: Sequence[Sequence[tuple[Any, int]]],
    times: dict[str, TimeType],
    restrictions: dict[str, tuple[str, ...] | None] | None = None,
) -> pa.Array:
    """The ``events`` column of ``ceql run --with-events``: for each match, its reported
    events (``refs[i]``: (chunk, row) of each, in position order; a chunk has the typed
    ``table``, the input ``lines`` and ``source_of``) with position, input file and line, event
    type and attributes (times as the input gave them; ``SELECT x[a, b]`` leaves the other
    attributes of x's events null)."""
    event_type = kind.value_type
    flat = [ref for each in refs for ref in each]
    offsets = np.zeros(len(refs) + 1, dtype=np.int32)
    np.cumsum([len(each) for each in refs], out=offsets[1:])
    if not flat:
        empty = pa.StructArray.from_arrays([pa.array([], f.type) for f in event_type], fields=list(event_type))
        return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), empty, type=kind)
    taken, lines, sources = _gather(flat)
    positions = [p for m in matches for p in m.positions]
    arrays = []
    for f in event_type:
        if f.name == "position":
            arrays.append(pa.array(positions, pa.int64()))
        elif f.name == "source":
            arrays.append(pa.array(sources, pa.string()))
        elif f.name == "row":
            arrays.append(pa.array(lines, pa.int64()))
        elif f.name in times:
            arrays.append(times[f.name].from_ns(taken.column(f.name).combine_chunks()))
        else:
            arrays.append(taken.column(f.name).combine_chunks().cast(f.type))
    values = pa.StructArray.from_arrays(arrays, fields=list(event_type))
    if restrictions and any(v is not None for v in restrictions.values()):
        values = restricted(values, [(m.positions, m.labels) for m in matches], restrictions)
    return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), values, type=kind)


def _gather(refs: Sequence[tuple[Any, int]]) -> tuple[pa.Table, list, list]:
    """The typed rows, lines and sources of events given as (chunk, row), in that order."""
    groups: dict[int, tuple[Any, list[int], list[int]]] = {}
    for order, (chunk, row) in enumerate(refs):
        groups.setdefault(id(chunk), (chunk, [], []))
        groups[id(chunk)][1].append(row)
        groups[id(chunk)][2].append(order)
    tables, lines, sources, orders = [], [], [], []
    for chunk, rows, order in groups.values():
        tables.append(chunk.table.take(pa.array(rows, pa.int64())))
        lines.extend(int(chunk.lines[r]) for r in rows)
        sources.extend(chunk.source_of(r) for r in rows)
        orders.extend(order)
    taken = pa.concat_tables(tables) if len(tables) > 1 else tables[0]
    if len(tables) > 1 or orders != sorted(orders):
        back = np.argsort(np.array(orders, dtype=np.int64), kind="stable")
        taken = taken.take(pa.array(back))
        lines = [lines[i] for i in back]
        sources = [sources[i] for i in back]
    return taken, lines, sources


def restricted(
    events: pa.StructArray,
    matches: Sequence[tuple[Sequence[int], Any]],
    restrictions: dict[str, tuple[str, ...] | None],
) -> pa.StructArray:
    """The events of matches (flat, match after match; ``matches``: each one's positions and
    labels) with the attributes ``SELECT x[a, b]`` does not report for x's events null: an
    event reports the union over its labels (and its event type), or everything if one of them
    names none."""
    if not restrictions or all(v is None for v in restrictions.values()):
        return events
    names = [f.name for f in events.type]
    arrays = events.flatten()
    types = arrays[names.index("event_type")].to_pylist()
    allowed: list[set[str] | None] = []
    index = 0
    for positions, labels in matches:
        for position in positions:
            found = {label for label, where in (labels or {}).items() if where and position in where}
            found.add(types[index])
            covering = [restrictions[label] for label in found if label in restrictions]
            if not covering or any(a is None for a in covering):
                allowed.append(None)
            else:
                allowed.append({a for attributes in covering for a in attributes})
            index += 1
    keep_always = {"position", "source", "row", "event_type"}
    out = []
    for f, array in zip(events.type, arrays):
        if f.name in keep_always:
            out.append(array)
            continue
        mask = pa.array([a is not None and f.name not in a for a in allowed], pa.bool_())
        out.append(pc.if_else(mask, pa.nulls(len(array), array.type), array))
    return pa.StructArray.from_arrays(out, fields=list(events.type))


class EventRef:
    """An input event a match refers to: where it came from and how to read its values."""

    __slots__ = ("table", "index", "source", "row")

    def __init__(self, table: pa.Table, index: int, source: str, row: int) -> None:
        self.table, self.index, self.source, self.row = table, index, source, row

    def values(self) -> dict[str, Any]:
        row = {name: self.table.column(name)[self.index].as_py() for name in self.table.column_names}
        return {k: v for k, v in row.items() if v is not None}


class CoreTextWriter:
    """CORE++'s output: ``[start,end], ((id: T attributes: [v ...]) ... )`` per complex event,
    where T is the event type's number in declaration order and start/end are the window's
    measure (attribute values for WITHIN n [attr], times for time windows, else positions)."""

    def __init__(self, stream: TextIO, schema: Schema, tag_queries: bool) -> None:
        self.with_events = True
        self.tag_queries = tag_queries
        self.count = 0
        self.stream = stream
        self.schema = schema
        self.type_ids = {name: i for i, name in enumerate(schema.event_types)}
        self.window: dict[str, tuple[str, str | None]] = {}

    def set_window(self, query: str, kind: str | None, attribute: str | None) -> None:
        self.window[query] = (kind or "events", attribute)

    def write(self, query: str, match: Match, events: list[EventRef] | None) -> None:
        events = events or []
        values = [e.values() if e is not None else {} for e in events]
        kind, attribute = self.window.get(query, ("events", None))
        if not match.positions:
            start = end = match.trigger
        elif kind == "attribute" and attribute:
            start, end = values[0].get(attribute), values[-1].get(attribute)
        elif kind == "time":
            start, end = (self._time(v) for v in (values[0], values[-1]))
        else:
            start, end = match.positions[0], match.positions[-1]
        parts = []
        for value in values:
            decl = self.schema.event_types[value["event_type"]]
            shown = " ".join(_core_value(value.get(a.name), a.type) for a in decl.attributes)
            parts.append(f"(id: {self.type_ids[decl.name]} attributes: [{shown} ])")
        prefix = f"{query}: " if self.tag_queries else ""
        self.stream.write(f"{prefix}[{start},{end}], ({' '.join(parts)} )\n")
        self.count += 1

    def _time(self, value: dict[str, Any]) -> Any:
        decl = self.schema.event_types[value["event_type"]]
        return value.get(decl.time_attribute or "")

    def close(self) -> None:
        self.stream.flush()


def _core_value(value: Any, kind: str) -> str:
    if value is None:
        return ""
    if kind == "double":
        return f"{value:f}"
    if kind == "boolean":
        return "true" if value else "false"
    return str(value)
