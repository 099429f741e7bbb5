"""The CEQL language front end: tokenizer, parser, syntax tree, printer, schema and analysis.

Modules: ``lexer`` (tokens), ``grammar`` (the precedence table, function names, time units),
``parser`` (text -> ast), ``printer`` (ast -> canonical text), ``visit`` (the one traversal and
fail-loud visitors), ``analysis`` (checks and derived facts), ``scopes`` (where a condition's
labels come from), ``desugar`` (quantifiers -> core formulas), ``schema`` (declarations).
"""

from ceql.lang.analysis import CheckedQuery, analyze, describe
from ceql.lang.parser import parse_query
from ceql.lang.printer import print_cond, print_expr, print_formula, print_query
from ceql.lang.schema import Schema, parse_declarations

__all__ = [
    "CheckedQuery",
    "Schema",
    "analyze",
    "describe",
    "parse_declarations",
    "parse_query",
    "print_cond",
    "print_expr",
    "print_formula",
    "print_query",
]
