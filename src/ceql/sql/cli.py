"""``ceql sql``: run a MATCH_RECOGNIZE query over files; ``ceql check --sql``: show its plan.

    ceql sql QUERY --input NAME=FILE [--input NAME=FILE ...] [--output FILE] [--format F]
    ceql check --sql QUERY --input NAME=FILE

QUERY is the SQL text or a file holding it. Each input is a CSV (with a header), JSON Lines or
Parquet file, named as the query's FROM names it (``--input FILE`` alone takes the name from the
query). The result is written as JSON Lines (default) or Parquet by ceql's writers (the output
contract of docs/guide.md: timestamps as ISO-8601 text in their zone, integers exact, NaN as
"NaN"), or CSV.
"""

from __future__ import annotations

import argparse
import os

import pyarrow as pa

from ceql.errors import CeqlError, EventError, QueryError


def register(sub, check: argparse.ArgumentParser) -> None:
    """Add ``ceql sql`` to the command's subparsers and ``--sql`` to ``ceql check``."""
    from ceql.io.run import add_output_options, add_read_options

    parser = sub.add_parser(
        "sql",
        help="run a SQL MATCH_RECOGNIZE query over CSV, JSON Lines or Parquet files",
        description="Run SELECT ... FROM t MATCH_RECOGNIZE (...) over input files (docs/sql.md) and write "
        "the result table. Exit status 2 on a bad query or input.",
    )
    parser.add_argument("query", metavar="QUERY", help="the SQL text, or a file holding it")
    _inputs(parser)
    add_read_options(parser)
    add_output_options(parser, "sql", "jsonl (default), csv or parquet")
    parser.add_argument("--explain", action="store_true", help="print the plan instead of running the query")
    # --engine spark: the same query on Spark (ceql.spark.sql), with ceql run's Spark options.
    parser.add_argument(
        "--engine", choices=["local", "spark"], default="local", help="evaluate in this process (default) or on Spark"
    )
    from ceql.io.run import add_spark_options

    add_spark_options(parser)
    parser.set_defaults(func=cmd_sql)
    # ceql check --sql QUERY --input NAME=FILE: the same plan, from the check command
    check.add_argument("--sql", metavar="QUERY", help="check a SQL MATCH_RECOGNIZE query (with --input) instead")
    _inputs(check)
    for action in check._actions:  # a SQL check needs no CEQL declaration nor --query
        if "--declaration" in action.option_strings or "--query" in action.option_strings:
            action.required = False
    original = check.get_default("func")

    def check_dispatch(args: argparse.Namespace) -> int:
        if args.sql:
            return cmd_check_sql(args)
        if not args.declaration or not args.query:
            raise CeqlError("check needs --declaration and --query (or --sql for a MATCH_RECOGNIZE query)")
        return original(args)

    check.set_defaults(func=check_dispatch)


def _inputs(parser: argparse.ArgumentParser) -> None:
    from ceql.io.formats import input_formats

    parser.add_argument(
        "--input",
        "-i",
        action="append",
        default=[],
        metavar="NAME=FILE",
        help="an input table: CSV with a header, JSON Lines or Parquet (by extension); repeat for several",
    )
    parser.add_argument(
        "--input-format", choices=input_formats(), help="input format (default: from the file extension)"
    )


def cmd_sql(args: argparse.Namespace) -> int:
    """``ceql sql``: the query over the inputs, written through the guarded output path of
    every command (``io/run.py``: never over an input or the query file, atomically)."""
    import ceql
    from ceql.io.run import check_run_outputs, cleanup_on_sigterm, output_format, read_options, write_table
    from ceql.io.writers import FORMATS

    text, source = _query(args.query)
    specs = _specs(text, args.input)
    fmt = output_format(args, "sql")
    if FORMATS[fmt].binary and not args.explain and (not args.output or args.output == "-"):
        raise CeqlError(f"--format {fmt} needs --output FILE")
    if not args.explain:
        # Refused before anything is read: an output over an input, the query file, a special
        # file, or an existing file without --overwrite.
        queries = [args.query] if source == args.query else []
        check_run_outputs(args, [path for _, path in specs], folder=False, queries=queries)
    if getattr(args, "engine", "local") == "spark" and not args.explain:
        from ceql.spark.cli import run_sql

        try:
            result = run_sql(text, dict(specs), args)
        except QueryError as exc:
            raise CeqlError(f"in query {source}: {exc}") from None
        with cleanup_on_sigterm():
            write_table(result, args.output, fmt, args.overwrite)
        return 0
    tables = {name: read_table(path, args.input_format, read_options(args)) for name, path in specs}
    try:
        if args.explain:
            print(ceql.sql.explain(text, next(iter(tables.values()))))
            return 0
        result = ceql.sql.run(text, tables)
    except QueryError as exc:
        raise CeqlError(f"in query {source}: {exc}") from None
    except EventError as exc:
        raise CeqlError(str(exc)) from None
    with cleanup_on_sigterm():
        write_table(result, args.output, fmt, args.overwrite)
    return 0


def cmd_check_sql(args: argparse.Namespace) -> int:
    import ceql
    from ceql.io.formats import ReadOptions

    text, source = _query(args.sql)
    specs = _specs(text, args.input)
    tables = {name: read_table(path, args.input_format, ReadOptions()) for name, path in specs}
    try:
        print(ceql.sql.explain(text, next(iter(tables.values()))))
    except QueryError as exc:
        raise CeqlError(f"in query {source}: {exc}") from None
    return 0


def _query(value: str) -> tuple[str, str]:
    """The SQL text: a file's (UTF-8, checked), standard input's (``-``), or the value itself.
    A value that names no file is taken for a path only when it has no space and ends in .sql."""
    from ceql.io.run import read_text_or_file

    path_like = "\n" not in value and " " not in value.strip() and value.lower().endswith(".sql")
    return read_text_or_file(value, "query", path_like=path_like)


def _specs(text: str, specs: list[str]) -> list[tuple[str, str]]:
    """(table name, path) of each ``--input``: ``NAME=FILE``, or ``FILE`` for the query's table."""
    from ceql.sql import _needs_outer_engine, outer
    from ceql.sql.parser import parse_sql

    try:
        name = parse_sql(text).table.text
    except QueryError as exc:
        # the SQL around MATCH_RECOGNIZE (ceql.sql.outer): an unnamed --input is the first table named
        named = [c.input_name for c in outer.split(text).clauses if c.input_name] if _needs_outer_engine(text, exc) else []
        if not named:
            raise CeqlError(f"in query: {exc}") from None
        name = named[0]
    if not specs:
        raise CeqlError(f"give the input table {name} with --input {name}=FILE")
    out = []
    for spec in specs:
        key, _, path = spec.rpartition("=") if "=" in spec and not os.path.exists(spec) else ("", "", spec)
        out.append((key or name, path))
    return out


def read_table(path: str, input_format: str | None = None, options=None) -> pa.Table:
    """A CSV (header), JSON Lines or Parquet input as an Arrow table, read by the format
    registry (``io/formats``: the same line rules, limits and messages as ``ceql run``); its
    column types are inferred (a SQL query declares none)."""
    from ceql.io.formats import ReadOptions, detect_format
    from ceql.io.run import check_input

    check_input(path)
    return detect_format(path, input_format).read_table(path, options or ReadOptions())
