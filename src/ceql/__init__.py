"""ceql: complex event recognition for Python, with CEQL queries.

import ceql
schema = ceql.declare(declaration_text)
checked = ceql.check(query_text, schema)      # parse + analyse, or raise ceql.QueryError
matches = ceql.reference.run(checked, events)  # the brute-force oracle
"""

from __future__ import annotations

from ceql import reference
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
]
