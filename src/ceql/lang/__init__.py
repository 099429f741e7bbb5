"""The CEQL language front end: tokenizer, parser, syntax tree, printer, schema and analysis."""

from ceql.lang.analysis import CheckedQuery, analyze, describe
from ceql.lang.parser import parse_query
from ceql.lang.printer import print_query
from ceql.lang.schema import Schema, parse_declarations

__all__ = [
    "CheckedQuery",
    "Schema",
    "analyze",
    "describe",
    "parse_declarations",
    "parse_query",
    "print_query",
]
