"""What every command that reads files and writes results shares: the run module.

``ceql run`` (both engines: ``cli.py``, ``spark/cli.py``) and ``ceql sql`` (``sql/cli.py``) take
their query and declaration texts, their read options, their output format and their guarded
output path from here, so each rule is written once: a query file that is not UTF-8 is one
message; an output never replaces an input, a link to one, a special file or (without
``--overwrite``) an existing file; results are written under a temporary name and renamed into
place only when the run succeeds (``io/outputs.py``). The command modules import this module,
never each other.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import stat
import sys
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, TextIO

from ceql.errors import CeqlError, QueryError

# --------------------------------------------------------------------------- query and declarations


def read_text_or_file(value: str, what: str, path_like: bool | None = None) -> tuple[str, str]:
    """``value`` is a path to an existing file, ``-`` (standard input) or the text itself;
    return (text, source name).

    ``path_like`` says whether a value that names no file is a mistyped path (an error) rather
    than text; by default a short one-line value with a path separator or a query file's
    extension is taken for a path. A folder or a special file is refused by name.
    """
    if value == "-":
        return sys.stdin.read(), "<stdin>"
    if os.path.isfile(value):
        return read_utf8(value, what), value
    if "\n" not in value and len(value) < 4096 and os.path.exists(value):
        kind = "a folder" if os.path.isdir(value) else "not a regular file"
        raise CeqlError(f"{what} file {value}: is {kind}; give a file or the {what} text")
    if path_like is None:
        path_like = (
            "\n" not in value
            and len(value) < 256
            and (os.sep in value or value.endswith((".txt", ".core", ".ceql")))
        )
    if path_like:
        raise CeqlError(f"{what} file not found: {value}")
    return value, f"<{what} text>"


def read_utf8(path: str, what: str) -> str:
    """A query or declaration file's text; bytes that are not UTF-8 are one clear error."""
    with open(path, "rb") as handle:
        data = handle.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise CeqlError(f"{what} file {path}: line {line}: byte {exc.start} is not UTF-8 text") from None


def load_schema(paths: Sequence[str]):
    """The declarations of ``--declaration`` files (CeqlError naming the files on a bad one)."""
    from ceql import declare

    texts = []
    for path in paths:
        if not os.path.isfile(path):
            raise CeqlError(f"declaration file not found: {path}")
        texts.append(read_utf8(path, "declaration"))
    try:
        return declare(*texts)
    except QueryError as exc:
        raise CeqlError(f"in declaration {', '.join(paths)}: {exc}") from None


def compile_queries(specs: Sequence[str], schema) -> list[tuple[str, Any]]:
    """(name, compiled query) of each ``--query``: a file's name without its extension, or
    ``q<number>`` for a query given as text."""
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


def evaluation_schema(schema):
    """The declarations with every primary_time in nanoseconds: the readers of ``ceql run``
    type times once (to int64 nanoseconds), so the evaluators must not scale them again."""
    import dataclasses

    from ceql.lang.schema import Schema

    types = {}
    for name, decl in schema.event_types.items():
        attributes = tuple(
            dataclasses.replace(a, unit=None) if a.type == "primary_time" else a for a in decl.attributes
        )
        types[name] = dataclasses.replace(decl, attributes=attributes)
    return Schema(types, dict(schema.streams), list(schema.quarantines))


def run_catalog(schema, queries):
    """The catalog of a run: every declared column; the ones the queries read are required."""
    from ceql.compile.catalog import Catalog

    required = {name for _, query in queries for name in query.plan.catalog.columns}
    return Catalog.of_schema(schema, required)


def restrictions(query) -> dict:
    """The SELECT items: label -> the attributes written ``label[a, b]`` (None: all)."""
    projection = query.checked.query.projection
    if projection is None or projection.kind != "list":
        return {}
    return {item.label: tuple(item.attributes) if item.attributes else None for item in projection.items}


# --------------------------------------------------------------------------- reading


def warnings_to_stderr(command: str = "run"):
    """Input warnings (each once) printed on standard error."""
    from ceql.runtime.batches import Notices

    return Notices(lambda message: print(f"ceql {command}: warning: {message}", file=sys.stderr))


def read_options(args: argparse.Namespace):
    """The readers' limits from the command line (``--max-line-bytes``)."""
    from ceql.io.formats import ReadOptions

    if args.max_line_bytes < 1:
        raise CeqlError("--max-line-bytes must be at least 1")
    return ReadOptions(max_line_bytes=args.max_line_bytes)


def add_read_options(parser: argparse.ArgumentParser) -> None:
    """The readers' options, the same on every command that reads event files."""
    from ceql.io.formats import ReadOptions

    parser.add_argument(
        "--max-line-bytes",
        type=int,
        default=ReadOptions().max_line_bytes,
        metavar="N",
        help="a CSV or JSON Lines line longer than this is a rejected row (default 16 MiB)",
    )


def check_input(path: str) -> None:
    """An input path must exist and not be a folder (a FIFO or standard input is read as a
    stream); CeqlError otherwise, with the same words on every command."""
    if path == "-":
        return
    if not os.path.exists(path):
        raise CeqlError(f"input not found: {path}")
    if os.path.isdir(path):
        raise CeqlError(f"input is a directory: {path} (give files or a glob such as {path}/*.csv)")
    mode = os.stat(path).st_mode
    if not (stat.S_ISREG(mode) or stat.S_ISFIFO(mode) or stat.S_ISCHR(mode)):
        raise CeqlError(f"input {path}: is not a regular file, a FIFO or a device")


# --------------------------------------------------------------------------- output formats


def output_format(args: argparse.Namespace, command: str = "run") -> str:
    """The output format: ``--format``, else the one the ``--output`` name's extension names
    among the command's formats (``io/writers.FORMATS``), else JSON Lines."""
    from ceql.io.writers import formats_for

    if args.format:
        return args.format
    name = (args.output or "").rstrip("/").lower()
    for fmt in formats_for(command).values():
        if fmt.extension and name.endswith("." + fmt.extension):
            return fmt.name
    return "jsonl"


# --------------------------------------------------------------------------- guarded outputs


def check_run_outputs(
    args: argparse.Namespace, inputs: Sequence[str], folder: bool, queries: Iterable[str] | None = None
) -> None:
    """Refuse --output / --dead-letter paths that could destroy an input, the declaration, the
    query file or each other, or replace existing results without --overwrite (every command)."""
    from ceql.io.outputs import Target, check_outputs, protected_paths

    targets = [
        Target(option, path, folder)
        for option, path in (("--output", args.output), ("--dead-letter", getattr(args, "dead_letter", None)))
        if path
    ]
    declarations = getattr(args, "declaration", None) or []
    check_outputs(
        targets,
        protected_paths(inputs, declarations, args.query if queries is None else queries),
        args.overwrite,
    )


def add_output_options(parser: argparse.ArgumentParser, command: str, help_format: str) -> None:
    """--output, --format (the command's formats from the registry) and --overwrite."""
    from ceql.io.writers import formats_for

    parser.add_argument("--output", "-o", metavar="FILE", help="output file (default: standard output)")
    parser.add_argument("--format", "-f", choices=list(formats_for(command)), help=help_format)
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="replace an existing output file or folder (never an input, the declaration or the query)",
    )


def write_table(table, path: str | None, fmt: str, overwrite: bool) -> None:
    """Write one result table in a row format to a file (through a temporary file renamed into
    place on success: ``Outputs``) or to standard output. The path must have been checked
    (``check_run_outputs``)."""
    from ceql.io.outputs import STDOUT, Outputs
    from ceql.io.writers import FORMATS, open_writer

    to_stdout = not path or path == STDOUT
    if to_stdout and FORMATS[fmt].binary:
        raise CeqlError(f"--format {fmt} needs --output FILE")
    with Outputs(overwrite) as outputs:
        target: str | TextIO = sys.stdout if to_stdout else outputs.file(path)
        writer = open_writer(fmt, target, table.schema)
        try:
            for batch in table.to_batches():
                writer.write(batch)
        finally:
            writer.close()
        outputs.commit()


@contextlib.contextmanager
def cleanup_on_sigterm() -> Iterator[None]:
    """Turn SIGTERM (``kill``) and SIGHUP (the terminal closed) into SystemExit while running,
    so temporary outputs are removed on the way out (SIGINT is KeyboardInterrupt already); the
    previous handlers are restored afterwards."""
    import signal

    def terminate(signum, frame):
        raise SystemExit(128 + signum)

    wanted = [signal.SIGTERM] + ([signal.SIGHUP] if hasattr(signal, "SIGHUP") else [])
    previous = {}
    try:
        for number in wanted:
            previous[number] = signal.signal(number, terminate)
    except ValueError:  # not the main thread (ceql.cli.main called from a thread): leave it
        yield
        return
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def too_many(limit: int, to_stdout: bool = False):
    """The LimitError of ``--max-matches`` (standard output shows the first ones)."""
    from ceql.runtime.limits import too_many_matches

    where = f"; the first {limit:,} were written to standard output" if to_stdout else "; no output was written"
    return too_many_matches(limit, "--max-matches", where)


__all__ = [
    "add_output_options",
    "add_read_options",
    "check_input",
    "check_run_outputs",
    "cleanup_on_sigterm",
    "compile_queries",
    "evaluation_schema",
    "load_schema",
    "output_format",
    "read_options",
    "read_text_or_file",
    "read_utf8",
    "restrictions",
    "run_catalog",
    "too_many",
    "warnings_to_stderr",
    "write_table",
]


def add_spark_options(parser: argparse.ArgumentParser) -> None:
    """``--master`` and ``--conf`` of ``--engine spark`` (``ceql run``, ``ceql sql``)."""
    parser.add_argument(
        "--master",
        default=None,
        help="Spark master URL for --engine spark (default: CEQL_SPARK_MASTER, else local[*])",
    )
    parser.add_argument(
        "--conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a Spark setting for --engine spark, repeat for several (e.g. spark.sql.shuffle.partitions=200; "
        "its default is CEQL_SHUFFLE_PARTITIONS, else 8; the driver's memory CEQL_DRIVER_MEMORY, else 2g); "
        "CEQL_SPARK_VERBOSE=1 shows Spark's own traces of failed tasks",
    )
