"""Tokenizer shared by the query and declaration parsers.

Keywords are case-insensitive; identifiers may be back-quoted (then they are never keywords);
strings are single-quoted with ``''`` as the escape for a quote; ``--`` and ``/* */`` are comments.
"""

from __future__ import annotations

from ceql.errors import QuerySyntaxError
from ceql.lang import scanner  # shared with SQL

#: Words that cannot be used as bare identifiers in queries (back-quote them instead).
KEYWORDS = frozenset(
    """
    SELECT FROM WHERE PARTITION BY WITHIN CONSUME LIMIT AS OR AND NOT FILTER ALL ANY NEXT LAST
    MAX STRICT NONE IN RANGE LIKE UNLESS EVENTS HOUR HOURS MINUTE MINUTES SECOND SECONDS TRUE FALSE
    """.split()
)

# Longest operators first so that ':+' wins over ':', '->' over '-' and '..' over '.'.
_OPERATORS = ":+ -> .. <= >= == != <> ( ) [ ] { } , ; : + - * / % ? < > = .".split()
_QUOTES = {"string": scanner.STRING, "qident": scanner.Quote("`", "QIDENT", "back-quoted identifier")}
# The float rule is the language's own; the rest is the scanner's (ceql.lang.scanner).
_TOKEN_RE = scanner.token_regex(r"\d+\.\d+(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+", _QUOTES, _OPERATORS)


def tokenize(text: str, error_class: type[QuerySyntaxError] = QuerySyntaxError) -> list[Token]:
    """Split ``text`` into tokens, ending with an EOF token (the scanner shared with SQL,
    ``ceql.lang.scanner``, with CEQL's token rules and a hint for double quotes).

    Raises ``error_class`` (a QuerySyntaxError by default) on a lone surrogate, characters that
    start no token, unterminated strings, back-quoted identifiers or comments, and numbers
    beyond 64 bits.
    """
    return scanner.scan(text, _TOKEN_RE, _QUOTES, Token, error_class, hint=_char_hint)  # type: ignore[return-value]


def _char_hint(char: str) -> str:
    """Why a character that starts no token was probably written: double quotes are SQL's
    (and Python's) habit for strings or names."""
    if char == '"':
        return " (strings take single quotes: 'text'; back-quote a name: `name`)"
    return ""


class Token(scanner.Token):
    """A CEQL token (``ceql.lang.scanner.Token``): its messages call KEYWORDS keywords."""

    __slots__ = ()
    KEYWORDS = KEYWORDS
