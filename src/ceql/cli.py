"""The ``ceql`` command line.

ceql check   --declaration DECL --query QUERY        parse and analyse a query
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from ceql.errors import CeqlError, QueryError

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
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ceql",
        description="Complex event recognition with CEQL queries over event streams.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    check = sub.add_parser(
        "check",
        help="parse and analyse a query against declarations",
        description="Parse a query, check it against the declarations, and print its canonical "
        "form and analysis (event types, labels and where they are defined, conditions). "
        "Exit status 2 on any error.",
    )
    check.add_argument(
        "--declaration",
        "-d",
        action="append",
        required=True,
        metavar="FILE",
        help="declaration file (CREATE STREAM ... or DECLARE EVENT ...); repeat for several",
    )
    check.add_argument(
        "--query", "-q", required=True, metavar="FILE_OR_TEXT", help="query file or query text"
    )
    check.set_defaults(func=cmd_check)
    return parser


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


if __name__ == "__main__":
    sys.exit(main())
