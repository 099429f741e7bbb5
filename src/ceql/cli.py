"""The ``ceql`` command line.

ceql check   --declaration DECL --query QUERY        parse and analyse a query
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Iterator, Sequence

from ceql import __version__
from ceql.compile.determinize import DEFAULT_MAX_STATES, DEFAULT_MAX_WORK
from ceql.compile.limits import DEFAULT_MAX_MATCHES
from ceql.errors import CeqlError, QueryError
from ceql.runtime.runs import DEFAULT_MAX_CLASSES

EXIT_USER_ERROR = 2


def read_text_or_file(value: str, what: str) -> tuple[str, str]:
    """``value`` is a path to an existing file or the text itself; return (text, source name)."""
    if value == "-":
        return sys.stdin.read(), "<stdin>"
    if os.path.isfile(value):
        with open(value, encoding="utf-8") as handle:
            return handle.read(), value
    if (
        "\n" not in value
        and len(value) < 256
        and (os.sep in value or value.endswith((".txt", ".core", ".ceql")))
    ):
        raise CeqlError(f"{what} file not found: {value}")
    return value, f"<{what} text>"


def _schema(paths: Sequence[str]):
    from ceql import declare

    texts = []
    for path in paths:
        if not os.path.isfile(path):
            raise CeqlError(f"declaration file not found: {path}")
        with open(path, encoding="utf-8") as handle:
            texts.append(handle.read())
    try:
        return declare(*texts)
    except QueryError as exc:
        raise CeqlError(f"in declaration {', '.join(paths)}: {exc}") from None


def cmd_check(args: argparse.Namespace) -> int:
    from ceql import check
    from ceql.compile.limits import growth_warnings
    from ceql.lang import describe, print_query

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


def _compile_queries(specs: Sequence[str], schema):
    from ceql import compile as compile_query

    compiled = []
    for number, spec in enumerate(specs, start=1):
        text, source = read_text_or_file(spec, "query")
        name = os.path.splitext(os.path.basename(source))[0] if not source.startswith("<") else f"q{number}"
        try:
            compiled.append((name, compile_query(text, schema)))
        except QueryError as exc:
            raise CeqlError(f"in query {source}: {exc}") from None
    return compiled


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
    with _cleanup_on_sigterm():
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    import time

    from ceql.io.errors import ErrorPolicy
    from ceql.io.ordering import Orderer
    from ceql.io.outputs import STDOUT, Outputs
    from ceql.io.readers import EventReader, resolve_inputs
    from ceql.io.writers import CoreTextWriter, EventRef, JsonLinesWriter, ParquetWriter, TimeDisplay

    if args.engine == "spark":
        from ceql.spark.cli import run_spark

        return run_spark(args)
    schema = _schema(args.declaration)
    queries = _compile_queries(args.query, schema)
    paths = resolve_inputs(args.input)
    to_stdout = not args.output or args.output == STDOUT
    fmt = args.format or ("parquet" if args.output and args.output.endswith(".parquet") else "jsonl")
    if fmt == "parquet" and to_stdout:
        raise CeqlError("--format parquet needs --output FILE")
    if args.on_error == "dead-letter" and not args.dead_letter:
        raise CeqlError("--on-error dead-letter needs --dead-letter FILE")
    check_run_outputs(args, paths, folder=False)
    limit = args.max_matches or -1  # -1: never reached
    with Outputs(args.overwrite) as outputs, contextlib.ExitStack() as files:
        dead_letter = (
            files.enter_context(open(outputs.file(args.dead_letter), "w", encoding="utf-8"))
            if args.dead_letter
            else None
        )
        policy = ErrorPolicy(args.on_error, dead_letter)
        # The run's catalog learns, while reading, which times came as timestamps or ISO text:
        # outputs show those as timestamps (TimeDisplay), the others as the integers they were.
        catalog = run_catalog(schema, queries)
        times = TimeDisplay(catalog, {name: dict(query.checked.measure_types) for name, query in queries})
        tag = len(queries) > 1
        if fmt == "parquet":
            writer = ParquetWriter(
                outputs.file(args.output),
                args.with_events,
                tag,
                measures=_measure_types(queries),
                attributes=_attribute_types(schema),
                times=times,
            )
        else:
            output = (
                sys.stdout
                if to_stdout
                else files.enter_context(open(outputs.file(args.output), "w", encoding="utf-8"))
            )
            if fmt == "core":
                writer = CoreTextWriter(output, schema, tag)
                for name, query in queries:
                    within = query.checked.query.within
                    writer.set_window(
                        name, within.kind if within else None, within.attribute if within else None
                    )
            else:
                writer = JsonLinesWriter(output, args.with_events, tag, times)
        for name, query in queries:
            writer.restrict(name, _restrictions(query))
        need_events = writer.with_events
        reader = EventReader(catalog, policy, warnings_to_stderr(), read_options(args))
        chunks = Orderer(schema, policy, sort=args.sort).order(reader.read(paths, args.input_format))
        evaluators = [(name, query.evaluator(**_engine_options(args))) for name, query in queries]
        counts = {name: 0 for name, _ in queries}
        written = 0
        progress = _progress(args, paths)
        started = time.perf_counter()
        accepted = 0
        for chunk in chunks:
            if need_events:

                def payload(i, chunk=chunk):
                    return EventRef(chunk.table, i, chunk.source_of(i), int(chunk.lines[i]))

            for name, evaluator in evaluators:
                if need_events:
                    for match, events in evaluator.process_with_payload(chunk.table, payload):
                        if written == limit:
                            raise _too_many(args, to_stdout)
                        writer.write(name, match, events)
                        written += 1
                        counts[name] += 1
                else:
                    for match in evaluator.process(chunk.table):
                        if written == limit:
                            raise _too_many(args, to_stdout)
                        writer.write(name, match, None)
                        written += 1
                        counts[name] += 1
            accepted += chunk.table.num_rows
            if progress is not None:
                progress.update(chunk.table.num_rows)
                progress.set_postfix(matches=written, refresh=False)
        for name, evaluator in evaluators:  # the end of the input: NOT FOLLOWED BY's last matches
            for item in evaluator.finish(detailed=need_events):
                if written == limit:
                    raise _too_many(args, to_stdout)
                match, events = item if need_events else (item, None)
                writer.write(name, match, events)
                written += 1
                counts[name] += 1
        writer.close()
        files.close()
        outputs.commit()
        if progress is not None:
            progress.close()
        elapsed = time.perf_counter() - started
        if not args.quiet:
            total = accepted + policy.rejected
            per_query = (
                "" if len(counts) == 1 else " (" + ", ".join(f"{k}: {v}" for k, v in counts.items()) + ")"
            )
            rate = f", {accepted / elapsed:,.0f} events/s" if elapsed > 0 else ""
            print(
                f"ceql run: {total} events read, {policy.summary()}, {written} matches{per_query}, "
                f"{elapsed:.2f} s{rate}",
                file=sys.stderr,
            )
    return 0


def run_catalog(schema, queries):
    """The catalog of a run: every declared column; the ones the queries read are required."""
    from ceql.compile.catalog import Catalog

    required = {name for _, query in queries for name in query.plan.catalog.columns}
    return Catalog.of_schema(schema, required)


def warnings_to_stderr():
    """Input warnings (each once) printed on standard error."""
    from ceql.runtime.batches import Notices

    return Notices(lambda message: print(f"ceql run: warning: {message}", file=sys.stderr))


def read_options(args: argparse.Namespace):
    """The readers' limits from the command line."""
    from ceql.io.formats import ReadOptions

    if args.max_line_bytes < 1:
        raise CeqlError("--max-line-bytes must be at least 1")
    return ReadOptions(max_line_bytes=args.max_line_bytes)


def _measure_types(queries: list) -> dict:
    """Measure name -> Arrow type over the queries of a run (a name with two types: text)."""
    import pyarrow as pa

    from ceql.runtime.arrow import measure_type

    out: dict = {}
    for _, query in queries:
        measures = query.plan.measures
        if measures is None:
            continue
        types = getattr(query.checked, "measure_types", {}) or {}
        for name in measures.names:
            kind = measure_type(types.get(name)) or pa.string()
            if out.setdefault(name, kind) != kind:
                out[name] = pa.string()
    return out


def _attribute_types(schema) -> dict:
    """Every declared attribute -> its Arrow type, as the catalog types it on every path."""
    from ceql.compile.catalog import Catalog

    return {name: column.arrow_type for name, column in Catalog.of_schema(schema).columns.items()}


def _restrictions(query) -> dict:
    """The SELECT items: label -> the attributes written ``label[a, b]`` (None: all)."""
    projection = query.checked.query.projection
    if projection is None or projection.kind != "list":
        return {}
    return {item.label: tuple(item.attributes) if item.attributes else None for item in projection.items}


@contextlib.contextmanager
def _cleanup_on_sigterm() -> Iterator[None]:
    """Turn SIGTERM (``kill``) into SystemExit while running, so temporary outputs are removed
    on the way out; the previous handler is restored afterwards."""
    import signal

    def terminate(signum, frame):
        raise SystemExit(128 + signum)

    try:
        previous = signal.signal(signal.SIGTERM, terminate)
    except ValueError:  # not the main thread (ceql.cli.main called from a thread): leave it
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def check_run_outputs(args: argparse.Namespace, inputs: Sequence[str], folder: bool) -> None:
    """Refuse --output / --dead-letter paths that could destroy an input, the declaration, the
    query file or each other, or replace existing results without --overwrite (both engines)."""
    from ceql.io.outputs import Target, check_outputs, protected_paths

    targets = [
        Target(option, path, folder)
        for option, path in (("--output", args.output), ("--dead-letter", args.dead_letter))
        if path
    ]
    check_outputs(targets, protected_paths(inputs, args.declaration, args.query), args.overwrite)


def _too_many(args: argparse.Namespace, to_stdout: bool):
    from ceql.compile.limits import too_many_matches

    where = (
        f"; the first {args.max_matches:,} were written to standard output"
        if to_stdout
        else "; no output was written"
    )
    return too_many_matches(args.max_matches, "--max-matches", where)


def _progress(args: argparse.Namespace, paths: list[str]):
    """A progress bar on stderr for long inputs (not with --quiet, not when stderr is no terminal)."""
    if args.quiet or not sys.stderr.isatty():
        return None
    size = sum(os.path.getsize(p) for p in paths if p != "-")
    if size < 8 << 20:
        return None
    from tqdm import tqdm

    return tqdm(unit=" events", unit_scale=True, file=sys.stderr, desc="ceql run")


def build_parser() -> argparse.ArgumentParser:
    from ceql.io.formats import ReadOptions, input_formats

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
    run.add_argument(
        "--max-line-bytes",
        type=int,
        default=ReadOptions().max_line_bytes,
        metavar="N",
        help="a CSV or JSON Lines line longer than this is a rejected row (default 16 MiB)",
    )
    run.add_argument("--output", "-o", metavar="FILE", help="output file (default: standard output)")
    run.add_argument(
        "--format",
        "-f",
        choices=["jsonl", "parquet", "core"],
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
    run.add_argument("--quiet", action="store_true", help="no progress bar and no summary line")
    run.add_argument(
        "--engine",
        choices=["local", "spark"],
        default="local",
        help="evaluate in this process (default) or on Spark",
    )
    run.add_argument("--master", default=None, help="Spark master URL for --engine spark (default local[*])")
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


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``ceql`` command; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except CeqlError as exc:
        print(f"ceql {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        print("ceql: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. piped into head: stop quietly
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
