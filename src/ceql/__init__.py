"""ceql: complex event recognition for Python, with CEQL queries.

    import ceql
    schema = ceql.declare(declaration_text)     # CREATE STREAM ... or DECLARE EVENT ...
    query = ceql.compile(query_text, schema)    # raises ceql.QueryError: line, column, expected
    for match in query.run(events):             # dicts, a pandas DataFrame or Arrow data
        print(match.trigger, match.positions, match.labels)
    evaluator = query.evaluator()               # incremental: evaluator.push(event) -> matches

``ceql.check`` parses and analyses a query without compiling it. ``ceql.reference.run`` is the
brute-force evaluator of the semantics (docs/semantics.md) that the tests use as an oracle; it is
exponential, not the way to run queries. The same queries run on Spark with ``ceql.spark``
(extra ``ceql[spark]``) and from the shell with the ``ceql`` command. ``ceql.sql(text, t=table)``
runs SQL row pattern recognition (``SELECT ... FROM t MATCH_RECOGNIZE (...)``, docs/sql.md).
"""

from __future__ import annotations

from ceql import log as _log  # noqa: F401 - the "ceql" logger and its NullHandler
from ceql import reference, sql  # sql: MATCH_RECOGNIZE (a module you can call: ceql.sql(text, t=table))
from ceql.api import Query, compile
from ceql.errors import (
    CeqlError,
    DeclarationError,
    EventError,
    QueryError,
    QuerySyntaxError,
    UnsupportedQueryError,
)
from ceql.lang import CheckedQuery, Schema, analyze, parse_declarations, parse_query, print_query
from ceql.match import Match

__version__ = "0.1.0"


def declare(*texts: str) -> Schema:
    """Parse one or more declaration texts (CREATE STREAM / DECLARE EVENT ...) into a Schema."""
    schema = Schema()
    for text in texts:
        schema = schema.merge(parse_declarations(text))
    schema.validate()
    return schema


def parse(text: str):
    """Parse a query into its syntax tree (no schema checks)."""
    return parse_query(text)


def check(text: str, schema: Schema) -> CheckedQuery:
    """Parse and analyse a query against a schema; raise QueryError if it is invalid."""
    return analyze(parse_query(text), schema, text)


__all__ = [
    "CeqlError",
    "Query",
    "compile",
    "CheckedQuery",
    "DeclarationError",
    "EventError",
    "Match",
    "QueryError",
    "QuerySyntaxError",
    "Schema",
    "UnsupportedQueryError",
    "check",
    "declare",
    "parse",
    "print_query",
    "reference",
    "sql",
]
