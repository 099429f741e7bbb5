"""The ``ceql`` command line.

ceql check   --declaration DECL --query QUERY        parse and analyse a query
ceql sql     QUERY --input NAME=FILE                   SQL MATCH_RECOGNIZE over files (src/ceql/sql/cli.py)
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Sequence

from ceql import __version__
from ceql.compile.determinize import DEFAULT_MAX_STATES, DEFAULT_MAX_WORK
from ceql.errors import CeqlError, QueryError
from ceql.io.run import (
    add_spark_options,
    check_run_outputs,
    cleanup_on_sigterm,
    evaluation_schema,
    output_format,
    read_options,
    read_text_or_file,
    run_catalog,
    warnings_to_stderr,
)
from ceql.io.run import compile_queries as _compile_queries
from ceql.io.run import load_schema as _schema
from ceql.io.run import restrictions as _restrictions
from ceql.runtime.limits import DEFAULT_MAX_MATCHES, DEFAULT_MAX_NODES
from ceql.runtime.runs import DEFAULT_MAX_CLASSES
from ceql.sql import cli as sql_cli

EXIT_USER_ERROR = 2


def cmd_check(args: argparse.Namespace) -> int:
    from ceql import check
    from ceql.lang import describe, print_query
    from ceql.runtime.limits import growth_warnings

    schema = _schema(args.declaration)
    text, source = read_text_or_file(args.query, "query")
    try:
        checked = check(text, schema)
    except QueryError as exc:
        raise CeqlError(f"in query {source}: {exc}") from None
    print(print_query(checked.query))
    print()
    print(describe(checked))
    warnings = list(checked.warnings) + growth_warnings(checked)
    if warnings:
        print("warnings:")
        for warning in warnings:
            print(f"  {warning}")
    return 0


def cmd_explain(args: argparse.Namespace) -> int:
    schema = _schema(args.declaration)
    ((_, query),) = _compile_queries([args.query], schema)
    if args.svg:
        import shutil
        import subprocess

        from ceql.io.outputs import Outputs, Target, check_outputs, protected_paths

        check_outputs(
            [Target("--svg", args.svg)], protected_paths([], args.declaration, [args.query]), args.overwrite
        )
        if shutil.which("dot") is None:
            raise CeqlError(
                "--svg needs Graphviz's dot program (apt-get install graphviz); use --dot instead"
            )
        with Outputs(args.overwrite) as outputs:
            temp = outputs.file(args.svg)
            subprocess.run(["dot", "-Tsvg", "-o", temp], input=query.explain(dot=True), text=True, check=True)
            outputs.commit()
        print(f"wrote {args.svg}", file=sys.stderr)
        return 0
    print(query.explain(dot=args.dot))
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    with cleanup_on_sigterm():
        return _run(args)


def _too_many(args: argparse.Namespace, to_stdout: bool):
    from ceql.io.run import too_many

    return too_many(args.max_matches, to_stdout)


def _run(args: argparse.Namespace) -> int:
    import time

    from ceql.io.errors import ErrorPolicy
    from ceql.io.ordering import Orderer
    from ceql.io.outputs import STDOUT, Outputs
    from ceql.io.progress import run_progress
    from ceql.io.readers import EventReader, resolve_inputs
    from ceql.io.writers import FORMATS, CoreTextWriter

    if args.engine == "spark":
        from ceql.spark.cli import run_spark

        return run_spark(args)
    schema = _schema(args.declaration)
    queries = _compile_queries(args.query, evaluation_schema(schema))
    paths = resolve_inputs(args.input)
    to_stdout = not args.output or args.output == STDOUT
    fmt = output_format(args)
    if FORMATS[fmt].binary and to_stdout:
        raise CeqlError(f"--format {fmt} needs --output FILE")
    if args.on_error == "dead-letter" and not args.dead_letter:
        raise CeqlError("--on-error dead-letter needs --dead-letter FILE")
    check_run_outputs(args, paths, folder=False)
    with Outputs(args.overwrite) as outputs, contextlib.ExitStack() as files:
        dead_letter = (
            files.enter_context(open(outputs.file(args.dead_letter), "w", encoding="utf-8"))
            if args.dead_letter
            else None
        )
        # Records of rejected rows are held and written in input order (a row found out of
        # order is rejected after later rows were parsed).
        policy = ErrorPolicy(args.on_error, dead_letter, ordered=True)
        policy.source_order(["<stdin>" if p == "-" else p for p in paths])
        # The run's catalog learns, while reading, how the input gives times: outputs show
        # them so (compile/output_schema.py).
        catalog = run_catalog(schema, queries)
        output = None
        binary = FORMATS[fmt].binary  # written to a path by its writer (Parquet), not a stream
        if not binary:
            output = (
                sys.stdout
                if to_stdout
                else files.enter_context(open(outputs.file(args.output), "w", encoding="utf-8"))
            )
        if fmt == "core":
            writer = CoreTextWriter(output, schema, len(queries) > 1)
            for name, query in queries:
                within = query.checked.query.within
                writer.set_window(name, within.kind if within else None, within.attribute if within else None)
            sink = _CoreSink(writer, queries)
        else:
            target = outputs.file(args.output) if binary else output
            sink = _RowSink(fmt, target, queries, catalog, args.with_events)
        reader = EventReader(catalog, policy, warnings_to_stderr(), read_options(args))
        orderer = Orderer(schema, policy, sort=args.sort, times=catalog.time_inputs)
        chunks = orderer.order(reader.read(paths, args.input_format))
        evaluators = [(name, query.evaluator(**_engine_options(args))) for name, query in queries]
        progress = run_progress(paths, quiet=args.quiet)  # io/progress.py: bar or heartbeat
        started = time.perf_counter()
        accepted = 0
        limit = args.max_matches or None
        for chunk in chunks:
            if accepted == 0 and args.workers != 1 and not args.with_events and fmt != "core":
                evaluators = _parallel(evaluators, queries, args, chunk.table.num_rows)
            policy.flush()
            for name, evaluator in evaluators:
                for batch in sink.batches(name, evaluator, chunk):
                    if limit is not None and sink.written + batch.num_rows > limit:
                        if limit > sink.written:  # standard output shows the first ones
                            sink.write(name, batch.slice(0, limit - sink.written))
                        sink.close()
                        raise _too_many(args, to_stdout)
                    sink.write(name, batch)
            accepted += chunk.table.num_rows
            if progress is not None:
                progress.tick(sink.written, events=accepted + policy.rejected)
        for name, evaluator in evaluators:  # the end of the input: NOT FOLLOWED BY's last matches
            for batch in sink.finished(name, evaluator):
                if limit is not None and sink.written + batch.num_rows > limit:
                    if limit > sink.written:
                        sink.write(name, batch.slice(0, limit - sink.written))
                    sink.close()
                    raise _too_many(args, to_stdout)
                sink.write(name, batch)
        for _, evaluator in evaluators:
            if hasattr(evaluator, "close"):
                evaluator.close()  # --workers: stop the threads
        policy.flush()
        sink.close()
        files.close()
        outputs.commit()
        if progress is not None:
            progress.close(sink.written)
        elapsed = time.perf_counter() - started
        if not args.quiet:
            total = accepted + policy.rejected
            counts = sink.counts
            per_query = (
                "" if len(counts) == 1 else " (" + ", ".join(f"{k}: {v}" for k, v in counts.items()) + ")"
            )
            rate = f", {accepted / elapsed:,.0f} events/s" if elapsed > 0 else ""
            print(
                f"ceql run: {total} events read, {policy.summary()}, {sink.written} matches{per_query}, "
                f"{elapsed:.2f} s{rate}",
                file=sys.stderr,
            )
    return 0


def _parallel(evaluators: list, queries: list, args: argparse.Namespace, rows: int) -> list:
    """--workers: one query whose plan splits, a first chunk of at least CHUNK_MIN_ROWS events
    and the compiled kernel run on several cores (runtime/parallel.py); else unchanged."""
    from ceql.runtime import parallel

    workers = args.workers or parallel.cores()
    if workers <= 1 or len(queries) != 1 or args.evaluator == "python" or rows < parallel.CHUNK_MIN_ROWS:
        return evaluators
    name, query = queries[0]
    split, why = parallel.plan_split(query.plan)
    if split is None:
        parallel.logger.info(f"--workers {workers}: the query runs on one core: {why}")
        if args.workers > 1:  # asked for: say why not, once
            print(f"ceql run: --workers {args.workers} not used, the query runs on one core: {why}", file=sys.stderr)
        return evaluators
    return [(name, parallel.ParallelKernel(query.plan, workers, evaluator=evaluators[0][1]))]


#: Matches gathered from the Python evaluator before they are written as one batch.
_BATCH_MATCHES = 50_000


class _RowSink:
    """The local engine's JSON Lines or Parquet output: each query's matches as record batches
    of the run's schema (fixed at the first batch, once the input has shown how it gives
    times), written by ``io/writers.py``."""

    def __init__(self, fmt: str, target, queries: list, catalog, with_events: bool) -> None:
        self.fmt = fmt
        self.target = target
        self.queries = dict(queries)
        self.catalog = catalog
        self.with_events = with_events
        self.restrictions = {name: _restrictions(query) for name, query in queries}
        self.run = None
        self.writer = None
        self.written = 0
        self.counts = {name: 0 for name, _ in queries}

    def _open(self) -> None:
        from ceql.io.writers import open_writer, run_schema

        self.run = run_schema(list(self.queries.items()), self.catalog, self.with_events)
        self.writer = open_writer(self.fmt, self.target, self.run.arrow)

    def batches(self, name: str, evaluator, chunk):
        """The record batches (the query's own schema) of the matches one chunk triggers."""
        import itertools

        from ceql.io.writers import events_column
        from ceql.runtime.arrow import from_matches, record_batch

        if self.run is None:
            self._open()
        schema = self.run.schemas[name]
        if not self.with_events:
            for columns in evaluator.columns(chunk.table, _BATCH_MATCHES):
                yield record_batch(schema, columns)
            return
        # Each event's payload is (its chunk, its row): a match may hold events of earlier chunks.
        found = evaluator.process_with_payload(chunk.table, lambda row, chunk=chunk: (chunk, row))
        kind = schema.arrow.field("events").type
        while True:
            pairs = list(itertools.islice(found, _BATCH_MATCHES))
            if not pairs:
                return
            matches = [match for match, _ in pairs]
            events = events_column(
                kind, matches, [refs for _, refs in pairs], self.run.times, self.restrictions[name]
            )
            yield record_batch(schema, from_matches(matches, schema), events=events)

    def finished(self, name: str, evaluator):
        """The record batch of the matches still due at the end of the input (``NOT FOLLOWED
        BY``: ``Evaluator.finish``); none for other queries."""
        from ceql.io.writers import events_column
        from ceql.runtime.arrow import from_matches, record_batch

        if getattr(evaluator, "absence", None) is None:  # (--workers: no NOT FOLLOWED BY)
            return
        if self.run is None:
            self._open()
        schema = self.run.schemas[name]
        found = evaluator.finish(detailed=self.with_events)
        if not found:
            return
        if not self.with_events:
            yield record_batch(schema, from_matches(found, schema))
            return
        matches = [match for match, _ in found]
        kind = schema.arrow.field("events").type
        events = events_column(kind, matches, [refs for _, refs in found], self.run.times, self.restrictions[name])
        yield record_batch(schema, from_matches(matches, schema), events=events)

    def write(self, name: str, batch) -> None:
        if self.writer is None:
            self._open()
        self.writer.write(self.run.rows(batch))
        self.written += batch.num_rows
        self.counts[name] += batch.num_rows

    def close(self) -> None:
        if self.writer is None:
            self._open()
        self.writer.close()


class _CoreSink:
    """CORE++'s text output, match by match."""

    def __init__(self, writer, queries: list) -> None:
        self.writer = writer
        self.written = 0
        self.counts = {name: 0 for name, _ in queries}

    def batches(self, name: str, evaluator, chunk):
        from ceql.io.writers import EventRef

        def payload(i, chunk=chunk):
            return EventRef(chunk.table, i, chunk.source_of(i), int(chunk.lines[i]))

        for match, events in evaluator.process_with_payload(chunk.table, payload):
            yield _OneMatch(match, events)

    def finished(self, name: str, evaluator):
        """The matches still due at the end of the input (``NOT FOLLOWED BY``)."""
        if getattr(evaluator, "absence", None) is None:
            return
        for match, events in evaluator.finish(detailed=True):
            yield _OneMatch(match, events)

    def write(self, name: str, item) -> None:
        self.writer.write(name, item.match, item.events)
        self.written += 1
        self.counts[name] += 1

    def close(self) -> None:
        self.writer.close()


class _OneMatch:
    """One match of the CORE text output (a batch of one row)."""

    num_rows = 1

    def __init__(self, match, events) -> None:
        self.match, self.events = match, events

    def slice(self, start: int, length: int):
        return self




def build_parser() -> argparse.ArgumentParser:
    from ceql.io.formats import input_formats
    from ceql.io.run import add_read_options
    from ceql.io.writers import formats_for

    parser = argparse.ArgumentParser(
        prog="ceql",
        description="Complex event recognition with CEQL queries over event streams.",
    )
    parser.add_argument("--version", action="version", version=f"ceql {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    check = sub.add_parser(
        "check",
        help="parse and analyse a query against declarations",
        description="Parse a query, check it against the declarations, and print its canonical "
        "form and analysis (event types, labels and where they are defined, conditions). "
        "Exit status 2 on any error.",
    )
    _common(check)
    check.add_argument(
        "--query", "-q", required=True, metavar="FILE_OR_TEXT", help="query file or query text"
    )
    check.set_defaults(func=cmd_check)
    sql_cli.register(sub, check)  # ceql sql, ceql check --sql (MATCH_RECOGNIZE, src/ceql/sql/cli.py)

    run = sub.add_parser(
        "run",
        help="find the complex events of queries in event files",
        description="Evaluate one or more queries over events read from CSV (CORE's format: a header whose "
        "first column is event_type), JSON Lines or Parquet, in one pass, and write one record per "
        "complex event. Positions are 0-based indexes of the accepted events in stream order. Exit "
        "status 2 on a bad query, declaration or (with --on-error fail) input row.",
    )
    _common(run)
    run.add_argument(
        "--query",
        "-q",
        action="append",
        required=True,
        metavar="FILE_OR_TEXT",
        help="query file or query text; repeat to run several queries in one pass",
    )
    run.add_argument(
        "--input",
        "-i",
        action="append",
        required=True,
        metavar="EVENTS",
        help="event file, glob, or - for stdin; repeat for several (read in order)",
    )
    run.add_argument(
        "--input-format",
        choices=input_formats(),
        help="input format (default: from the file extension)",
    )
    add_read_options(run)
    run.add_argument("--output", "-o", metavar="FILE", help="output file (default: standard output)")
    run.add_argument(
        "--format",
        "-f",
        choices=list(formats_for("run")),
        help="jsonl (default), parquet, or core (CORE++'s text format)",
    )
    run.add_argument(
        "--with-events", action="store_true", help="include each reported event's attributes and input row"
    )
    run.add_argument(
        "--on-error",
        choices=["fail", "skip", "dead-letter"],
        default="fail",
        help="bad input rows: fail (default, exit 2), skip (counted), dead-letter (written out)",
    )
    run.add_argument(
        "--dead-letter", metavar="FILE", help="where --on-error dead-letter writes rejected rows"
    )
    run.add_argument(
        "--sort",
        action="store_true",
        help="sort the input by primary_time first (the input must fit in memory)",
    )
    run.add_argument(
        "--overwrite",
        action="store_true",
        help="replace an existing output file or folder (never an input, the declaration or the query)",
    )
    run.add_argument(
        "--max-matches",
        type=_count,
        default=DEFAULT_MAX_MATCHES,
        metavar="N",
        help=f"stop with an error after N matches (default {DEFAULT_MAX_MATCHES:,}; 0: no limit)",
    )
    bounds = run.add_argument_group("bounds of the local engine (docs/limits.md; 0: no limit)")
    bounds.add_argument(
        "--max-classes",
        type=_count,
        default=DEFAULT_MAX_CLASSES,
        metavar="N",
        help=f"live partial-match classes per partition key (default {DEFAULT_MAX_CLASSES:,})",
    )
    bounds.add_argument(
        "--max-nodes",
        type=_count,
        default=DEFAULT_MAX_NODES,
        metavar="N",
        help=f"stored partial-match nodes, all partitions together (default {DEFAULT_MAX_NODES:,})",
    )
    bounds.add_argument(
        "--max-states",
        type=_count,
        default=DEFAULT_MAX_STATES,
        metavar="N",
        help=f"states of the lazily determinized automaton (default {DEFAULT_MAX_STATES:,})",
    )
    bounds.add_argument(
        "--max-work",
        type=_count,
        default=DEFAULT_MAX_WORK,
        metavar="N",
        help=f"transitions computed while determinizing (default {DEFAULT_MAX_WORK:,})",
    )
    bounds.add_argument(
        "--evaluator",
        choices=["auto", "python", "compiled"],
        default="auto",
        help="auto (default): the compiled kernel for large inputs of the queries it evaluates; "
        "python: always the Python evaluator; compiled: the kernel from the first event "
        "(falls back to Python for queries it does not evaluate; `ceql explain` says which)",
    )
    run.add_argument(
        "--workers",
        type=_count,
        default=0,
        metavar="N",
        help="cores of the local engine (default 0: all of this machine's); one query whose plan splits "
        "by key or time runs on N threads (docs/kernel.md)",
    )
    run.add_argument("--quiet", action="store_true", help="no progress bar and no summary line")
    run.add_argument(
        "--engine",
        choices=["local", "spark"],
        default="local",
        help="evaluate in this process (default) or on Spark",
    )
    add_spark_options(run)
    run.set_defaults(func=cmd_run)

    explain = sub.add_parser(
        "explain",
        help="show how a query is evaluated (predicates, plan, automaton)",
        description="Print the normalised query, its predicates, the evaluation plan and the automaton "
        "as text, or the automaton in Graphviz DOT (--dot) or rendered as SVG (--svg, needs Graphviz).",
    )
    _common(explain)
    explain.add_argument(
        "--query", "-q", required=True, metavar="FILE_OR_TEXT", help="query file or query text"
    )
    explain.add_argument("--dot", action="store_true", help="print the automaton as Graphviz DOT")
    explain.add_argument("--svg", metavar="FILE", help="render the automaton to an SVG file (needs Graphviz)")
    explain.add_argument("--overwrite", action="store_true", help="replace an existing --svg file")
    explain.set_defaults(func=cmd_explain)
    return parser


def _engine_options(args: argparse.Namespace) -> dict:
    """The evaluator options of ``ceql run`` (a bound of 0 is no bound)."""
    unbounded = sys.maxsize
    return {
        "engine": args.evaluator,
        "max_classes": args.max_classes or unbounded,
        "max_nodes": args.max_nodes or unbounded,
        "max_states": args.max_states or unbounded,
        "max_work": args.max_work or unbounded,
    }


def _count(text: str) -> int:
    """argparse type: a whole number >= 0."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 (no limit) or more, not {value}")
    return value


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--declaration",
        "-d",
        action="append",
        required=True,
        metavar="FILE",
        help="declaration file (CREATE STREAM ... or DECLARE EVENT ...); repeat for several",
    )


class _SignalLog:
    """Which signals arrived during the run, noted by the interpreter itself (a wakeup fd), so
    that an interrupt is recognised even when a library swallows its KeyboardInterrupt: Py4J,
    Spark's bridge to the JVM, turns a Ctrl-C during a call into Py4JError (or a network error
    on the next call)."""

    def __enter__(self) -> _SignalLog:
        import logging
        import signal

        self.seen = False
        self.fds: tuple[int, int] | None = None
        try:
            read, write = os.pipe()
        except OSError:
            return self
        for fd in (read, write):
            os.set_blocking(fd, False)
        try:
            self.previous = signal.set_wakeup_fd(write, warn_on_full_buffer=False)
        except ValueError:  # not the main thread: no signals to see
            os.close(read)
            os.close(write)
            return self
        self.fds = (read, write)
        logging.getLogger().addFilter(self)
        return self

    def interrupted(self) -> bool:
        import signal

        if self.fds is not None and not self.seen:
            try:
                self.seen = signal.SIGINT in os.read(self.fds[0], 4096)
            except OSError:
                pass
        return self.seen

    def filter(self, record) -> bool:
        """Py4J logs (with a traceback) the calls an interrupt broke: not shown after Ctrl-C."""
        message = str(record.msg)
        broken = message.endswith("while sending command.") or message.endswith("while shutting down connection")
        return not (broken and self.interrupted())

    def __exit__(self, *exc_info) -> None:
        import logging
        import signal

        if self.fds is not None:
            logging.getLogger().removeFilter(self)
            signal.set_wakeup_fd(self.previous)
            for fd in self.fds:
                os.close(fd)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``ceql`` command; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    with _SignalLog() as signals:
        try:
            return _main(args, signals)
        except Exception:
            if signals.interrupted():  # Ctrl-C during a Spark call (Py4JError, or what follows)
                _stop_spark_gateway()
                print("ceql: interrupted", file=sys.stderr)
                return 130
            raise


def _stop_spark_gateway() -> None:
    """After an interrupt broke the bridge to Spark's JVM, end that JVM (it would otherwise
    outlive this process while it shuts down, or hang there)."""
    for name in ("pyspark.core.context", "pyspark.context"):
        context = getattr(sys.modules.get(name), "SparkContext", None)
        process = getattr(getattr(context, "_gateway", None), "proc", None)
        if process is not None and process.poll() is None:
            process.kill()
            process.wait()
            return


def _main(args: argparse.Namespace, signals: _SignalLog | None = None) -> int:
    try:
        return args.func(args)
    except CeqlError as exc:
        if signals is not None and signals.interrupted():  # a Spark failure Ctrl-C caused
            _stop_spark_gateway()
            print("ceql: interrupted", file=sys.stderr)
            return 130
        print(f"ceql {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        print("ceql: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. piped into head: stop quietly
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except OSError as exc:  # a full disk, a file that vanished: the cause, not a traceback
        print(f"ceql {args.command}: error: {_os_error(exc)}", file=sys.stderr)
        return EXIT_USER_ERROR


def _os_error(exc: OSError) -> str:
    """An operating system error in words (temporary outputs are already removed)."""
    import errno

    what = exc.strerror or str(exc)
    if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
        what += " (the disk or quota is full; no output was written)"
    return f"{exc.filename}: {what}" if exc.filename else what


if __name__ == "__main__":
    sys.exit(main())
