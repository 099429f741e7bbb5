"""``ceql run --engine spark``: read events with Spark, type and order them, find matches, write them.

Input files are read by the same code as the local engine (``ceql.io.formats``), split into
tasks (byte ranges of lines, Parquet row groups), and typed by the same catalog; the events are
put in order (or rejected as out of order or late) by the same ``Orderer``, in one task that
sees only the event types, times and input positions. So ``--engine spark`` and ``--engine
local`` accept and reject exactly the same rows, for the same reasons, with the same line
numbers. Rejected rows fail the run, are counted, or go to the dead-letter output. Accepted
events are evaluated by ``ceql.spark.find`` in the order of the stream; the results are written
by the local engine's writers on the workers (``spark/files.py``), as JSON Lines (the default)
or Parquet folders with the local engine's rows.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from collections.abc import Iterator

import pyarrow as pa

from ceql.compile.catalog import EVENT_TYPE, Catalog
from ceql.errors import CeqlError, EventError
from ceql.io.formats import INPUTS, ReadOptions, Split, detect_format
from ceql.io.formats.base import count_lines, number_splits
from ceql.lang.schema import Schema
from ceql.runtime.batches import Notices
from ceql.spark.bookkeeping import (  # noqa: F401 - ACCEPTED..ORDER are this module's columns too
    ACCEPTED,
    FILE,
    INPUT,
    KIND,
    LINE,
    ORDER,
    REASON,
    REJECTED,
    WARNING,
)

TIME_KIND = "\x00time-kind:"  # a WARNING row that carries a time column's input kind
_BOOKKEEPING = f"`{FILE}` int, `{LINE}` bigint, `{KIND}` int, `{REASON}` string, `{INPUT}` string"


def plan_splits(
    spark,
    paths: list[str],
    catalog: Catalog,
    input_format: str | None,
    options: ReadOptions,
    notices: Notices,
) -> list[Split]:
    """The splits of every input (headers and Parquet schemas are checked here, on the driver);
    the first line of each text split is found by counting lines in parallel."""
    splits: list[Split] = []
    for index, path in enumerate(paths):
        fmt = detect_format(path, input_format)
        parts = fmt.plan(path, index, catalog, options, notices, False)
        if fmt.line_based and len(parts) > 1:
            counts = (
                spark.sparkContext.parallelize([(p.path, p.start, p.end) for p in parts], len(parts))
                .map(lambda task: count_lines(task[0], task[1], task[2], options))
                .collect()
            )
            parts = number_splits(parts, counts)
        splits.extend(parts)
    return splits


def read_events(
    spark,
    paths: list[str],
    schema: Schema,
    input_format: str | None,
    catalog: Catalog | None = None,
    options: ReadOptions | None = None,
    notices: Notices | None = None,
):
    """Every input row as one DataFrame: the typed columns of the catalog, the input file
    (its index among ``paths``) and line, and for rejected rows the reason and the input text;
    ``__kind`` tells accepted rows, rejected rows and warnings apart."""
    catalog = catalog or Catalog.of_schema(schema)
    options = options or ReadOptions()
    notices = notices or Notices()
    splits = plan_splits(spark, paths, catalog, input_format, options, notices)
    formats = [detect_format(split.path, input_format).name for split in splits]
    required = sorted(catalog.required)
    ddl = f"{catalog.spark_ddl()}, {_BOOKKEEPING}"

    def parse(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        worker_catalog = Catalog.of_schema(schema, required)
        for batch in batches:
            for task in batch.column(0).to_pylist():
                split = splits[task]
                worker_notices = Notices()
                read = INPUTS[formats[task]].read_split
                for parsed in read(split, worker_catalog, options, worker_notices):
                    yield from _parsed_batches(parsed, split.file_index, worker_catalog)
                # How the input gave each time column: the driver shows times as they came.
                messages = worker_notices.messages + [
                    f"{TIME_KIND}{name}={kind}" for name, kind in worker_catalog.time_inputs.items()
                ]
                if messages:
                    yield _warning_batch(messages, split.file_index, worker_catalog)

    if not splits:
        return spark.createDataFrame([], ddl)
    tasks = spark.range(0, len(splits), numPartitions=len(splits))
    return tasks.mapInArrow(parse, ddl)


def _parsed_batches(parsed, file_index: int, catalog: Catalog) -> Iterator[pa.RecordBatch]:
    """Accepted rows and rejected rows of a parsed block, in the layout of ``read_events``."""
    n = parsed.table.num_rows
    if n:
        yield from _rows(parsed.table, file_index, parsed.lines, ACCEPTED, None, None)
    if parsed.rejects:
        errors = parsed.rejects
        empty = catalog.arrow_schema().empty_table()
        nulls = pa.table([pa.nulls(len(errors), f.type) for f in empty.schema], schema=empty.schema)
        lines = [e.line for e in errors]
        yield from _rows(
            nulls, file_index, lines, REJECTED, [e.reason for e in errors], [e.text for e in errors]
        )


def _warning_batch(messages: list[str], file_index: int, catalog: Catalog) -> pa.RecordBatch:
    empty = catalog.arrow_schema().empty_table()
    nulls = pa.table([pa.nulls(len(messages), f.type) for f in empty.schema], schema=empty.schema)
    (batch,) = _rows(nulls, file_index, [None] * len(messages), WARNING, messages, None)
    return batch


def _rows(table: pa.Table, file_index: int, lines, kind: int, reasons, texts) -> list[pa.RecordBatch]:
    n = table.num_rows
    full = table.append_column(FILE, pa.array([file_index] * n, pa.int32()))
    full = full.append_column(LINE, pa.array(lines, pa.int64()))
    full = full.append_column(KIND, pa.array([kind] * n, pa.int32()))
    full = full.append_column(REASON, pa.array(reasons if reasons is not None else [None] * n, pa.string()))
    full = full.append_column(INPUT, pa.array(texts if texts is not None else [None] * n, pa.string()))
    return full.combine_chunks().to_batches() or [pa.RecordBatch.from_pylist([], schema=full.schema)]


def order_events(accepted, schema: Schema, sort: bool, time_kinds: dict[str, str] | None = None):
    """Stream order of the accepted events, by the local ``Orderer`` in one task over the event
    types, times and input positions: rows (file, line, order) for the events kept, and (file,
    line, reason) for those rejected as out of order or late (``time_kinds``: how the input
    gives each time column, for the reasons)."""
    from ceql.io.errors import RejectList
    from ceql.io.ordering import Orderer
    from ceql.io.readers import Chunk

    times = sorted({d.time_attribute for d in schema.event_types.values() if d.time_attribute})
    narrow = accepted.select(FILE, LINE, EVENT_TYPE, *times)
    out = f"`{FILE}` int, `{LINE}` bigint, `{ORDER}` bigint, `{REASON}` string"

    def scan(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        rejects = RejectList()
        orderer = Orderer(schema, rejects, sort=sort, times=time_kinds)
        position = 0

        def chunks():
            for batch in batches:
                table = pa.Table.from_batches([batch])
                files = table.column(FILE).to_numpy(zero_copy_only=False)
                yield Chunk(table, "", table.column(LINE).to_numpy(zero_copy_only=False), files.astype(str))

        for chunk in orderer.order(chunks()):
            n = chunk.table.num_rows
            yield pa.RecordBatch.from_arrays(
                [
                    chunk.table.column(FILE).combine_chunks(),
                    chunk.table.column(LINE).combine_chunks(),
                    pa.array(range(position, position + n), pa.int64()),
                    pa.nulls(n, pa.string()),
                ],
                names=[FILE, LINE, ORDER, REASON],
            )
            position += n
            if rejects.errors:
                yield _order_rejects(rejects.errors)
                rejects.errors = []
        if rejects.errors:
            yield _order_rejects(rejects.errors)

    return narrow.repartition(1).sortWithinPartitions(FILE, LINE).mapInArrow(scan, out)


def _order_rejects(errors) -> pa.RecordBatch:
    m = len(errors)
    return pa.RecordBatch.from_arrays(
        [
            pa.array([int(e.source) for e in errors], pa.int32()),
            pa.array([e.line for e in errors], pa.int64()),
            pa.nulls(m, pa.int64()),
            pa.array([e.reason for e in errors], pa.string()),
        ],
        names=[FILE, LINE, ORDER, REASON],
    )


def run_spark(args: argparse.Namespace) -> int:
    """``ceql run --engine spark``: the pipeline, with progress lines on standard error (unless
    ``--quiet``) and a failed Spark job reported as one message naming its cause."""
    from ceql.spark.progress import Progress

    progress = Progress(enabled=not args.quiet)
    with one_message(progress):
        return _pipeline(args, progress)


@contextlib.contextmanager
def one_message(progress=None) -> Iterator[None]:
    """A failed Spark job (the JVM, a task, Py4J) raised as one ``SparkJobError`` naming its
    cause; ceql's own errors and any other exception pass as they are. ``progress`` (a
    ``Progress``) is closed at the end either way."""
    from py4j.protocol import Py4JError
    from pyspark.errors import PySparkException

    from ceql.spark.progress import job_failure

    try:
        yield
    except CeqlError:
        raise
    except (Py4JError, PySparkException) as exc:
        raise job_failure(exc) from None
    finally:
        if progress is not None:
            progress.close()


def _pipeline(args: argparse.Namespace, progress) -> int:
    """The Spark pipeline behind ``ceql run --engine spark``."""
    from pyspark.sql import functions as F

    from ceql.io.outputs import STDOUT, Outputs
    from ceql.io.readers import resolve_inputs
    from ceql.io.run import (
        check_run_outputs,
        compile_queries,
        evaluation_schema,
        load_schema,
        output_format,
        read_options,
        restrictions,
        run_catalog,
        warnings_to_stderr,
    )
    from ceql.io.writers import formats_for, run_schema
    from ceql.spark.batch import explain_plan, plan_batch, prepare_stream
    from ceql.spark.files import write_dead_letters, write_matches
    from ceql.spark.session import session

    schema = load_schema(args.declaration)
    # The readers type times once, to nanoseconds: the evaluators take them so.
    queries = compile_queries(args.query, evaluation_schema(schema))
    paths = resolve_inputs(args.input)
    if "-" in paths:
        raise CeqlError("--engine spark reads files, not standard input")
    if not args.output or args.output == STDOUT:
        raise CeqlError("--engine spark needs --output DIRECTORY (results are written by Spark)")
    fmt = output_format(args)
    if fmt not in formats_for("spark"):
        raise CeqlError(f"--engine spark writes {' or '.join(formats_for('spark'))}")
    if args.on_error == "dead-letter" and not args.dead_letter:
        raise CeqlError("--on-error dead-letter needs --dead-letter DIRECTORY")
    check_run_outputs(args, paths, folder=True)
    started = time.perf_counter()
    if not args.quiet:  # the JVM's start takes a while: say what is happening
        print(f"ceql run: starting Spark ({args.master or os.environ.get('CEQL_SPARK_MASTER', 'local[*]')})", file=sys.stderr)
    # The JVM's start has no stage to report: a line every 20 s until the session is there.
    spark = session(
        args.master,
        progress=False,
        light_jvm=_small(paths),
        start_lines=None if args.quiet else "ceql run",
        **spark_conf(args.conf),
    )
    progress.attach(spark)
    catalog = run_catalog(schema, queries)
    notices = warnings_to_stderr()
    # Executors of a cluster run in their own directories: give them absolute paths.
    absolute = [os.path.abspath(p) for p in paths]
    progress.step("reading the input")
    parsed = read_events(spark, absolute, schema, args.input_format, catalog, read_options(args), notices)
    # Read the input once (kept by the first action, which also counts rows and collects notices).
    parsed = parsed.localCheckpoint(eager=False)
    summary = (
        parsed.groupBy(KIND)
        .agg(
            F.count(F.lit(1)).alias("rows"),
            F.collect_set(F.when(F.col(KIND) == WARNING, F.col(REASON))).alias("messages"),
        )
        .collect()
    )
    rows_of = {row[KIND]: row["rows"] for row in summary}
    for message in sorted(m for row in summary for m in row["messages"]):
        if message.startswith(TIME_KIND):
            name, kind = message[len(TIME_KIND) :].split("=", 1)
            catalog.note_time_input(name, kind)  # integers anywhere win, as locally
        else:
            notices.warn(message, message)
    total = rows_of.get(ACCEPTED, 0) + rows_of.get(REJECTED, 0)
    kinds = dict(catalog.time_inputs)
    accepted = parsed.where(F.col(KIND) == ACCEPTED).drop(KIND, REASON, INPUT)
    rejected = parsed.where(F.col(KIND) == REJECTED).select(FILE, LINE, REASON, INPUT)
    # An event rejected after parsing (out of order, late) carries its typed values: they
    # become the input text of its dead-letter record, as locally.
    values = F.struct(EVENT_TYPE, *[F.col(f"`{c}`") for c in catalog.columns]).alias("__values")
    rejected = rejected.withColumn("__values", F.lit(None).cast(accepted.select(values).schema[0].dataType))
    # The orderer numbers the events it keeps: their positions, with no numbering in find.
    progress.step("ordering the events")
    ordered = order_events(accepted, schema, args.sort, kinds).localCheckpoint(eager=False)
    late_count = ordered.agg(F.count(REASON).alias("late")).collect()[0]["late"]  # also keeps it
    late = ordered.where(F.col(REASON).isNotNull())
    late = late.select(FILE, LINE, REASON).join(accepted.select(FILE, LINE, values), [FILE, LINE], "left")
    rejected = rejected.unionByName(late.withColumn(INPUT, F.lit(None).cast("string")))
    kept = ordered.where(F.col(REASON).isNull()).select(FILE, LINE, ORDER)
    events = accepted.join(kept, [FILE, LINE])
    order_by = [ORDER]
    rejected_count = rows_of.get(REJECTED, 0) + late_count
    if rejected_count and args.on_error == "fail":
        first = rejected.orderBy(FILE, LINE).first()
        path = paths[first[FILE]]
        unit = "row" if detect_format(path, args.input_format).name == "parquet" else "line"
        raise EventError(first[REASON], source=path, line=first[LINE], unit=unit)
    with Outputs(args.overwrite) as outputs:
        if args.dead_letter:
            # Written even when empty, like the local engine's dead-letter file.
            write_dead_letters(rejected, outputs.folder(args.dead_letter), paths, schema, kinds)
        events = events.select(EVENT_TYPE, *catalog.columns, FILE, LINE, *order_by)
        limit = args.max_matches or None
        run = run_schema(queries, catalog, args.with_events)
        jobs = []
        for name, query in queries:
            if not args.quiet:
                print(f"ceql run: {name}: {explain_plan(query)}", file=sys.stderr)
            compiled, prepared, settings = prepare_stream(
                events,
                query,
                id_columns=[EVENT_TYPE, *catalog.columns, FILE, LINE] if args.with_events else [],
                name=name,
                max_matches=limit,
            )
            found = plan_batch(prepared, compiled, settings, order_by=order_by, positions=True, numbered=True)
            jobs.append((found, run.schemas[name], restrictions(query)))
        folder = outputs.folder(args.output)
        progress.step("finding and writing the matches")
        try:
            counts = write_matches(jobs, run, folder, fmt, paths)
        except Exception as exc:
            worker = worker_error(exc)
            if worker is not None and "stopped at the limit" in str(worker):
                raise _too_many(args.max_matches) from None
            if worker is not None:
                raise worker from None
            raise
        if args.max_matches and sum(counts.values()) > args.max_matches:
            raise _too_many(args.max_matches)
        outputs.commit()
    progress.close()  # its last lines before the summary
    elapsed = time.perf_counter() - started
    if not args.quiet:
        per_query = ", ".join(f"{name}: {counts.get(name, 0)}" for name, _ in queries)
        print(
            f"ceql run: {total} events read, {rejected_count} rejected, {sum(counts.values())} matches "
            f"({per_query}), {elapsed:.1f} s, results in {os.path.abspath(args.output)}",
            file=sys.stderr,
        )
    return 0


def worker_error(exc: BaseException) -> CeqlError | None:
    """The ceql error a Spark worker raised (a measure that does not fit its column, a bound
    reached), read from the exception Spark hands back, which carries the worker's traceback as
    text; None when the failure was not ceql's."""
    import re

    found = re.findall(r"^ceql\.errors\.(\w+): (.+)$", str(exc), re.MULTILINE)
    if not found:
        return None
    kind, message = found[-1]
    return CeqlError(f"on a Spark worker: {message.strip()}")


def _too_many(limit: int):
    from ceql.io.run import too_many

    return too_many(limit)



SMALL_INPUT = 64 * 2**20  # bytes: below this, a run's cost is the JVM's start (session.LIGHT_JVM)


def _small(paths: list[str]) -> bool:
    """Whether the input files are small enough that a light driver JVM pays off."""
    total = 0
    for path in paths:
        try:
            total += os.path.getsize(path)
        except OSError:
            return False
    return total < SMALL_INPUT


def spark_conf(pairs: list[str] | None) -> dict[str, str]:
    """``--conf KEY=VALUE`` options as Spark settings."""
    conf: dict[str, str] = {}
    for pair in pairs or []:
        key, equals, value = pair.partition("=")
        if not equals or not key.strip():
            raise CeqlError(f"--conf takes KEY=VALUE (a Spark setting), not {pair!r}")
        conf[key.strip()] = value
    return conf


def run_sql(text: str, paths: dict[str, str], args: argparse.Namespace) -> pa.Table:
    """``ceql sql --engine spark``: the MATCH_RECOGNIZE query over the input files on Spark
    (``ceql.spark.sql``), as one Arrow table in the local engine's result schema. Parquet is
    read by Spark; CSV and JSON Lines by the local readers (the same types as ``--engine
    local``), then handed to Spark. A failed job is one message naming its cause."""
    from ceql.io.run import check_input
    from ceql.spark.progress import Progress
    from ceql.spark.session import session

    light = _small(list(paths.values()))
    # The JVM's start has no stage to report: a line every 20 s while it lasts, as `ceql run`.
    spark = session(args.master, progress=False, light_jvm=light, start_lines="ceql sql", **spark_conf(args.conf))
    progress = Progress(enabled=False, prefix="ceql sql")
    progress.attach(spark)  # Spark's log off while the job runs: the cause is reported below
    # A stage that runs 20 s or more gets a line every 20 s (tasks done and running).
    heartbeat = Progress(prefix="ceql sql", every_job=True, interval=1.0)
    heartbeat.attach(spark)
    with one_message(progress), contextlib.closing(heartbeat):
        import ceql.spark.sql as spark_sql

        frames = {}
        for name, path in paths.items():
            check_input(path)  # (the same checks and messages as --engine local)
            if path.lower().endswith(".parquet"):
                frames[name] = spark.read.parquet(os.path.abspath(path))
            else:  # read by the format registry, as `ceql sql` does locally (io/formats)
                table = detect_format(path, getattr(args, "input_format", None)).read_table(path, ReadOptions())
                frames[name] = spark.createDataFrame(table)
        return spark_sql.run(text, frames).toArrow()
