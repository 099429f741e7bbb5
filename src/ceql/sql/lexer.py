"""Tokenizer for the SQL of ``MATCH_RECOGNIZE`` queries.

SQL's lexical rules: keywords and unquoted identifiers are case-insensitive; identifiers may be
quoted with double quotes (standard SQL) or back-quotes (Flink), then they are taken exactly
and are never keywords; strings are single-quoted with ``''`` for a quote; ``--`` and
``/* */`` are comments. Row patterns add ``{-``, ``-}``, ``|``, ``^`` and ``$``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from ceql.errors import QuerySyntaxError

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
_OPERATORS = [
    "{-",
    "-}",
    "<=",
    ">=",
    "<>",
    "!=",
    "||",
    "(",
    ")",
    "{",
    "}",
    ",",
    ".",
    ";",
    "+",
    "-",
    "*",
    "/",
    "%",
    "?",
    "<",
    ">",
    "=",
    "|",
    "^",
    "$",
]

_TOKEN_RE = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<line_comment>--[^\n]*)
  | (?P<block_comment>/\*)
  | (?P<float>\d+\.\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+)
  | (?P<int>\d+)
  | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<dquote>")
  | (?P<bquote>`)
  | (?P<string>')
  | (?P<op>"""
    + "|".join(re.escape(op) for op in _OPERATORS)
    + r""")
    """,
    re.VERBOSE,
)


@dataclass(frozen=True, slots=True)
class Token:
    """One token: its kind (IDENT, QIDENT, INT, FLOAT, STRING, OP, EOF), value and offset."""

    kind: str
    value: object
    offset: int
    text: str

    @property
    def upper(self) -> str:
        """The unquoted identifier in upper case ('' for anything else): keywords match this."""
        return self.text.upper() if self.kind == "IDENT" else ""

    def describe(self) -> str:
        """A short description for error messages."""
        if self.kind == "EOF":
            return "end of input"
        if self.kind == "STRING":
            return f"string '{self.value}'"
        if self.kind == "IDENT" and self.upper in RESERVED:
            return f"keyword {self.upper}"
        return f"'{self.text}'"


def tokenize(text: str) -> list[Token]:
    """Split ``text`` into tokens ending with EOF; QuerySyntaxError on a bad character, an
    unterminated string, quoted identifier or comment, or an integer beyond 64 bits."""
    tokens: list[Token] = []
    pos = 0
    while pos < len(text):
        match = _TOKEN_RE.match(text, pos)
        if match is None:
            raise QuerySyntaxError(f"unexpected character {text[pos]!r}", text, pos)
        kind = match.lastgroup
        start = pos
        pos = match.end()
        if kind in ("ws", "line_comment"):
            continue
        if kind == "block_comment":
            end = text.find("*/", pos)
            if end == -1:
                raise QuerySyntaxError("unterminated comment (missing */)", text, start)
            pos = end + 2
            continue
        if kind == "string":
            value, pos = _quoted(text, pos, "'", start, "string")
            tokens.append(Token("STRING", value, start, text[start:pos]))
        elif kind in ("dquote", "bquote"):
            quote = '"' if kind == "dquote" else "`"
            value, pos = _quoted(text, pos, quote, start, "quoted identifier")
            if not value:
                raise QuerySyntaxError("empty quoted identifier", text, start)
            tokens.append(Token("QIDENT", value, start, text[start:pos]))
        elif kind == "int":
            digits = match.group()
            # 2**63 itself is kept: the parser accepts it only after a minus sign.
            if len(digits.lstrip("0")) > 19 or int(digits) > 2**63:
                raise QuerySyntaxError(f"integer {digits} is out of range (at most {2**63 - 1})", text, start)
            tokens.append(Token("INT", int(digits), start, digits))
        elif kind == "float":
            number = float(match.group())
            if math.isinf(number):
                raise QuerySyntaxError(f"number {match.group()} is out of range", text, start)
            tokens.append(Token("FLOAT", number, start, match.group()))
        elif kind == "ident":
            tokens.append(Token("IDENT", match.group(), start, match.group()))
        else:
            tokens.append(Token("OP", match.group(), start, match.group()))
    tokens.append(Token("EOF", None, len(text), ""))
    return tokens


def _quoted(text: str, pos: int, quote: str, start: int, what: str) -> tuple[str, int]:
    """Read up to the closing ``quote``; a doubled quote stands for one quote character."""
    parts: list[str] = []
    while True:
        end = text.find(quote, pos)
        if end == -1:
            raise QuerySyntaxError(f"unterminated {what} (missing closing {quote})", text, start)
        parts.append(text[pos:end])
        if end + 1 < len(text) and text[end + 1] == quote:
            parts.append(quote)
            pos = end + 2
            continue
        return "".join(parts), end + 1
