"""Tokenizer for the SQL of ``MATCH_RECOGNIZE`` queries.

SQL's lexical rules: keywords and unquoted identifiers are case-insensitive; identifiers may be
quoted with double quotes (standard SQL) or back-quotes (Flink), then they are taken exactly
and are never keywords; strings are single-quoted with ``''`` for a quote; ``--`` and
``/* */`` are comments. Row patterns add ``{-``, ``-}``, ``|``, ``^`` and ``$``.
"""

from __future__ import annotations

from ceql.errors import QuerySyntaxError
from ceql.lang import scanner

#: Words that cannot be bare identifiers (quote them to use them as names). Words with a meaning
#: only in one place (PATTERN, DEFINE, SKIP, FIRST, LAST, PREV, ...) are not reserved.
RESERVED = frozenset(
    """
    SELECT FROM WHERE MATCH_RECOGNIZE PARTITION ORDER BY MEASURES AS AND OR NOT IS NULL TRUE FALSE
    CASE WHEN THEN ELSE END CAST IN BETWEEN LIKE GROUP HAVING JOIN ON UNION LIMIT DISTINCT
    INTERVAL
    """.split()
)

# Longest first, so that '<=' wins over '<', '{-' over '{', '||' over '|'.
_OPERATORS = "{- -} <= >= <> != || ( ) { } , . ; + - * / % ? < > = | ^ $".split()
_QUOTES = {
    "string": scanner.STRING,
    "dquote": scanner.Quote('"', "QIDENT", "quoted identifier"),  # standard SQL
    "bquote": scanner.Quote("`", "QIDENT", "quoted identifier"),  # Flink
}
# The float rule is the language's own; the rest is the scanner's (ceql.lang.scanner).
_TOKEN_RE = scanner.token_regex(r"\d+\.\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+", _QUOTES, _OPERATORS)


def tokenize(text: str) -> list[Token]:
    """Split ``text`` into tokens ending with EOF; QuerySyntaxError on a lone surrogate, a bad
    character, an unterminated string, quoted identifier or comment, or an integer beyond 64
    bits (the scanner shared with CEQL, ``ceql.lang.scanner``)."""
    return scanner.scan(text, _TOKEN_RE, _QUOTES, Token, QuerySyntaxError)  # type: ignore[return-value]


class Token(scanner.Token):
    """A SQL token (``ceql.lang.scanner.Token``): its messages call RESERVED words keywords."""

    __slots__ = ()
    KEYWORDS = RESERVED
