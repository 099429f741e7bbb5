"""Tokenizer shared by the query and declaration parsers.

Keywords are case-insensitive; identifiers may be back-quoted (then they are never keywords);
strings are single-quoted with ``''`` as the escape for a quote; ``--`` and ``/* */`` are comments.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from ceql.errors import QuerySyntaxError
from ceql.lang.scanner import no_surrogate as _no_surrogate  # shared with SQL (ceql.lang.scanner)
from ceql.lang.scanner import read_quoted as _read_quoted

#: Words that cannot be used as bare identifiers in queries (back-quote them instead).
KEYWORDS = frozenset(
    """
    SELECT FROM WHERE PARTITION BY WITHIN CONSUME LIMIT AS OR AND NOT FILTER ALL ANY NEXT LAST
    MAX STRICT NONE IN RANGE LIKE UNLESS EVENTS HOUR HOURS MINUTE MINUTES SECOND SECONDS TRUE FALSE
    """.split()
)

# Longest operators first so that ':+' wins over ':', '->' over '-' and '..' over '.'.
_OPERATORS = [
    ":+",
    "->",
    "..",
    "<=",
    ">=",
    "==",
    "!=",
    "<>",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    ",",
    ";",
    ":",
    "+",
    "-",
    "*",
    "/",
    "%",
    "?",
    "<",
    ">",
    "=",
    ".",
]

_TOKEN_RE = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<line_comment>--[^\n]*)
  | (?P<block_comment>/\*)
  | (?P<float>\d+\.\d+(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+)
  | (?P<int>\d+)
  | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<qident>`)
  | (?P<string>')
  | (?P<op>"""
    + "|".join(re.escape(op) for op in _OPERATORS)
    + r""")
    """,
    re.VERBOSE,
)


@dataclass(frozen=True, slots=True)
class Token:
    """One token: its kind, its value and where it starts in the text."""

    kind: str  # IDENT, QIDENT, INT, FLOAT, STRING, OP, EOF
    value: object
    offset: int
    text: str  # the source text of the token

    @property
    def upper(self) -> str:
        """The identifier in upper case ('' for non-identifiers): how keywords are matched."""
        return self.text.upper() if self.kind == "IDENT" else ""

    def describe(self) -> str:
        """A short human description for error messages."""
        if self.kind == "EOF":
            return "end of input"
        if self.kind == "STRING":
            return f"string '{self.value}'"
        if self.kind == "IDENT" and self.upper in KEYWORDS:
            return f"keyword {self.upper}"
        return f"'{self.text}'"


def tokenize(text: str, error_class: type[QuerySyntaxError] = QuerySyntaxError) -> list[Token]:
    """Split ``text`` into tokens, ending with an EOF token.

    Raises ``error_class`` (a QuerySyntaxError by default) on characters that start no token,
    unterminated strings, back-quoted identifiers or comments.
    """
    tokens: list[Token] = []
    pos = 0
    length = len(text)
    while pos < length:
        match = _TOKEN_RE.match(text, pos)
        if match is None:
            raise error_class(f"unexpected character {text[pos]!r}{_char_hint(text[pos])}", text, pos)
        kind = match.lastgroup
        start = pos
        pos = match.end()
        if kind in ("ws", "line_comment"):
            continue
        if kind == "block_comment":
            end = text.find("*/", pos)
            if end == -1:
                raise error_class("unterminated comment (missing */)", text, start)
            pos = end + 2
            continue
        if kind == "string":
            value, pos = _read_quoted(text, pos, "'", start, "string", error_class)
            _no_surrogate(text, start, pos, error_class)
            tokens.append(Token("STRING", value, start, text[start:pos]))
        elif kind == "qident":
            value, pos = _read_quoted(text, pos, "`", start, "back-quoted identifier", error_class)
            _no_surrogate(text, start, pos, error_class)
            if not value:
                raise error_class("empty back-quoted identifier", text, start)
            tokens.append(Token("QIDENT", value, start, text[start:pos]))
        elif kind == "int":
            digits = match.group()
            # 2**63 itself is allowed here: the parser accepts it only after a minus sign.
            if len(digits.lstrip("0")) > 19 or int(digits) > 2**63:
                raise error_class(
                    f"integer {digits} is out of range (at most {2**63 - 1})", text, start
                )
            tokens.append(Token("INT", int(digits), start, digits))
        elif kind == "float":
            number = float(match.group())
            if math.isinf(number):
                raise error_class(f"number {match.group()} is out of range", text, start)
            tokens.append(Token("FLOAT", number, start, match.group()))
        elif kind == "ident":
            tokens.append(Token("IDENT", match.group(), start, match.group()))
        else:
            tokens.append(Token("OP", match.group(), start, match.group()))
    tokens.append(Token("EOF", None, length, ""))
    return tokens


def _char_hint(char: str) -> str:
    """Why a character that starts no token was probably written: double quotes are SQL's
    (and Python's) habit for strings or names."""
    if char == '"':
        return " (strings take single quotes: 'text'; back-quote a name: `name`)"
    return ""
