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
import sys

import pyarrow as pa

from ceql.errors import CeqlError, EventError, QueryError

FORMATS = ("jsonl", "csv", "parquet")


def register(sub, check: argparse.ArgumentParser) -> None:
    """Add ``ceql sql`` to the command's subparsers and ``--sql`` to ``ceql check``."""
    parser = sub.add_parser(
        "sql",
        help="run a SQL MATCH_RECOGNIZE query over CSV, JSON Lines or Parquet files",
        description="Run SELECT ... FROM t MATCH_RECOGNIZE (...) over input files (docs/sql.md) and write "
        "the result table. Exit status 2 on a bad query or input.",
    )
    parser.add_argument("query", metavar="QUERY", help="the SQL text, or a file holding it")
    _inputs(parser)
    parser.add_argument("--output", "-o", metavar="FILE", help="output file (default: standard output)")
    parser.add_argument("--format", "-f", choices=FORMATS, help="jsonl (default), csv or parquet")
    parser.add_argument("--explain", action="store_true", help="print the plan instead of running the query")
    # --engine spark: the same query on Spark (ceql.spark.sql), with ceql run's Spark options.
    parser.add_argument(
        "--engine", choices=["local", "spark"], default="local", help="evaluate in this process (default) or on Spark"
    )
    from ceql.cli import add_spark_options

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
    parser.add_argument(
        "--input",
        "-i",
        action="append",
        default=[],
        metavar="NAME=FILE",
        help="an input table: CSV with a header, JSON Lines or Parquet (by extension); repeat for several",
    )


def cmd_sql(args: argparse.Namespace) -> int:
    import ceql

    text, source = _query(args.query)
    if getattr(args, "engine", "local") == "spark" and not args.explain:
        from ceql.spark.cli import run_sql

        try:
            result = run_sql(text, _paths(text, args.input), args)
        except QueryError as exc:
            raise CeqlError(f"in query {source}: {exc}") from None
        write(result, args.output, args.format)
        return 0
    tables = _tables(text, args.input)
    try:
        if args.explain:
            print(ceql.sql.explain(text, next(iter(tables.values()))))
            return 0
        result = ceql.sql.run(text, tables)
    except QueryError as exc:
        raise CeqlError(f"in query {source}: {exc}") from None
    except EventError as exc:
        raise CeqlError(str(exc)) from None
    write(result, args.output, args.format)
    return 0


def cmd_check_sql(args: argparse.Namespace) -> int:
    import ceql

    text, source = _query(args.sql)
    tables = _tables(text, args.input)
    try:
        print(ceql.sql.explain(text, next(iter(tables.values()))))
    except QueryError as exc:
        raise CeqlError(f"in query {source}: {exc}") from None
    return 0


def _query(value: str) -> tuple[str, str]:
    if os.path.isfile(value):
        with open(value, encoding="utf-8") as handle:
            return handle.read(), value
    return value, "<query text>"


def _tables(text: str, specs: list[str]) -> dict[str, pa.Table]:
    return {name: read_table(path) for name, path in _paths(text, specs).items()}


def _paths(text: str, specs: list[str]) -> dict[str, str]:
    """The input files by table name (``--input NAME=FILE``, or ``FILE`` for the query's table)."""
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
    tables = {}
    for spec in specs:
        key, _, path = spec.rpartition("=") if "=" in spec and not os.path.exists(spec) else ("", "", spec)
        tables[key or name] = path
    return tables


def read_table(path: str) -> pa.Table:
    """A CSV (header), JSON Lines or Parquet file as an Arrow table (by its extension)."""
    if not os.path.isfile(path):
        raise CeqlError(f"input file not found: {path}")
    lower = path.lower()
    try:
        if lower.endswith(".parquet"):
            import pyarrow.parquet as pq

            return pq.read_table(path)
        if lower.endswith((".jsonl", ".json", ".ndjson")):
            import pyarrow.json as pj

            return pj.read_json(path)
        if lower.endswith((".csv", ".txt")):
            import pyarrow.csv as pcsv

            return pcsv.read_csv(path)
    except pa.ArrowInvalid as exc:
        raise CeqlError(f"{path}: {exc}") from None
    raise CeqlError(f"{path}: unknown input format (use .csv, .jsonl or .parquet)")


def write(table: pa.Table, path: str | None, fmt: str | None) -> None:
    """The result as JSON Lines or Parquet (ceql's writers: the output contract of docs/guide.md,
    "Output") or CSV, to a file or standard output."""
    from ceql.io.writers import open_writer

    if fmt is None:
        lower = (path or "").lower()
        fmt = "parquet" if lower.endswith(".parquet") else ("csv" if lower.endswith(".csv") else "jsonl")
    if fmt == "csv":
        import pyarrow.csv as pcsv

        pcsv.write_csv(table, path or sys.stdout.buffer)
        return
    if fmt == "parquet" and not path:
        raise CeqlError("--format parquet needs --output FILE")
    writer = open_writer(fmt, path or sys.stdout, table.schema)
    try:
        for batch in table.to_batches():
            writer.write(batch)
    finally:
        writer.close()
