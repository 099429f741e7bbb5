"""The lexical layer shared by CEQL (``ceql.lang.lexer``) and SQL (``ceql.sql.lexer``).

The two grammars stay separate; what they share is here, so that a text is scanned, and an error
reported, the same way by both: tokens with their offset, quoted text (a doubled quote stands
for one quote), numbers within 64 bits, comments, and Unicode checks (a lone surrogate, from
Python's ``'\\ud800'`` or a command-line byte that is not UTF-8, is a syntax error at its line and
column, never an encoding error later), and a parser's place in its tokens (``TokenCursor``).
Each language gives its float rule, quote characters and operators (``token_regex``) and its
Token class (for the keywords its messages name).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from ceql.errors import QuerySyntaxError

INT64_MAX = 2**63 - 1
_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass(frozen=True, slots=True)
class Token:
    """One token: its kind (IDENT, QIDENT, INT, FLOAT, STRING, OP, EOF), value, offset and text."""

    kind: str
    value: object
    offset: int
    text: str  # the source text of the token

    #: Words a language reserves: messages call them keywords (a subclass sets this).
    KEYWORDS = frozenset()  # type: ignore[var-annotated]

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
        if self.kind == "IDENT" and self.upper in self.KEYWORDS:
            return f"keyword {self.upper}"
        return f"'{self.text}'"


@dataclass(frozen=True)
class Quote:
    """A quoting character of a language: the token kind it makes and what it is called."""

    char: str
    kind: str  # STRING or QIDENT
    what: str  # "string", "quoted identifier", ...


#: Strings, the same in both languages: single quotes, ``''`` for a quote.
STRING = Quote("'", "STRING", "string")


def token_regex(float_rule: str, quotes: Mapping[str, Quote], operators: Sequence[str]) -> re.Pattern[str]:
    """A language's token regex for ``scan``: whitespace, ``--`` and ``/* */`` comments,
    ``float_rule``, integers, identifiers, a group per quote character (named by the keys of
    ``quotes``) and ``operators``, tried in their order (so list the longest first)."""
    groups = [
        r"(?P<ws>\s+)",
        r"(?P<line_comment>--[^\n]*)",
        r"(?P<block_comment>/\*)",
        f"(?P<float>{float_rule})",  # before int, so that 1.5 is one token
        r"(?P<int>\d+)",
        r"(?P<ident>[A-Za-z_][A-Za-z0-9_]*)",
        *(f"(?P<{name}>{re.escape(quote.char)})" for name, quote in quotes.items()),
        "(?P<op>" + "|".join(re.escape(op) for op in operators) + ")",
    ]
    return re.compile("|".join(groups))


def check_unicode(text: str, error_class: type[QuerySyntaxError] = QuerySyntaxError) -> None:
    """``error_class`` at the first lone surrogate of ``text``. The excerpt shows U+FFFD in its
    place, so that the message itself can be printed and encoded."""
    found = _SURROGATE.search(text)
    if found is not None:
        shown = _SURROGATE.sub("\ufffd", text)
        raise error_class(
            f"{found.group()!r} is not valid Unicode text (a lone surrogate)", shown, found.start()
        )


def scan(
    text: str,
    token_re: re.Pattern[str],
    quotes: Mapping[str, Quote],
    token_class: type[Token] = Token,
    error_class: type[QuerySyntaxError] = QuerySyntaxError,
    hint: Callable[[str], str] | None = None,
) -> list[Token]:
    """Split ``text`` into tokens ending with EOF; ``error_class`` on a lone surrogate, a
    character that starts no token, an unterminated string, quoted identifier or comment, an
    empty quoted identifier, or a number beyond 64 bits. ``hint`` of a character that starts
    no token is added to that message (a language's word on why it was probably written)."""
    check_unicode(text, error_class)
    tokens: list[Token] = []
    pos = 0
    length = len(text)
    while pos < length:
        match = token_re.match(text, pos)
        if match is None:
            extra = hint(text[pos]) if hint is not None else ""
            raise error_class(f"unexpected character {text[pos]!r}{extra}", text, pos)
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
        if kind in quotes:
            quote = quotes[kind]
            value, pos = read_quoted(text, pos, quote.char, start, quote.what, error_class)
            if quote.kind == "QIDENT" and not value:
                raise error_class(f"empty {quote.what}", text, start)
            tokens.append(token_class(quote.kind, value, start, text[start:pos]))
        elif kind == "int":
            digits = match.group()
            # 2**63 itself is kept: the parsers accept it only after a minus sign.
            if len(digits.lstrip("0")) > 19 or int(digits) > 2**63:
                raise error_class(f"integer {digits} is out of range (at most {INT64_MAX})", text, start)
            tokens.append(token_class("INT", int(digits), start, digits))
        elif kind == "float":
            number = float(match.group())
            if math.isinf(number):
                raise error_class(f"number {match.group()} is out of range", text, start)
            tokens.append(token_class("FLOAT", number, start, match.group()))
        elif kind == "ident":
            tokens.append(token_class("IDENT", match.group(), start, match.group()))
        else:
            tokens.append(token_class("OP", match.group(), start, match.group()))
    tokens.append(token_class("EOF", None, length, ""))
    return tokens


def read_quoted(
    text: str, pos: int, quote: str, start: int, what: str, error_class: type[QuerySyntaxError] = QuerySyntaxError
) -> tuple[str, int]:
    """Read from ``pos`` up to the closing ``quote``; a doubled quote stands for one quote
    character. Returns the value and the offset after the closing quote."""
    parts: list[str] = []
    while True:
        end = text.find(quote, pos)
        if end == -1:
            raise error_class(f"unterminated {what} (missing closing {quote})", text, start)
        parts.append(text[pos:end])
        if end + 1 < len(text) and text[end + 1] == quote:
            parts.append(quote)
            pos = end + 2
            continue
        return "".join(parts), end + 1


class TokenCursor:
    """A recursive-descent parser's place in its tokens, and the token tests and errors both
    languages' parsers share (each adds its grammar; ``hint`` may add a word to an error)."""

    def __init__(self, text: str, tokens: list[Token], max_tokens: int) -> None:
        if len(tokens) > max_tokens:
            raise QuerySyntaxError(f"query too large ({len(tokens)} tokens; at most {max_tokens})", text, 0)
        self.text = text
        self.tokens = tokens
        self.i = 0
        self.depth = 0  # nesting, bounded by each parser's enter()

    @property
    def tok(self) -> Token:
        return self.tokens[self.i]

    def peek(self, k: int = 1) -> Token:
        return self.tokens[min(self.i + k, len(self.tokens) - 1)]

    def advance(self) -> Token:
        tok = self.tokens[self.i]
        if tok.kind != "EOF":
            self.i += 1
        return tok

    def error(self, expected: str, tok: Token | None = None) -> QuerySyntaxError:
        """``expected ..., found ...`` at ``tok`` (the current token by default)."""
        tok = tok or self.tok
        message = f"expected {expected}, found {tok.describe()}{self.hint(expected, tok)}"
        return QuerySyntaxError(message, self.text, tok.offset, expected)

    def hint(self, expected: str, tok: Token) -> str:
        """What to add to an error's message (a language's parser says more): nothing here."""
        return ""

    def is_kw(self, *words: str, tok: Token | None = None) -> bool:
        tok = tok or self.tok
        return tok.kind == "IDENT" and tok.upper in words

    def is_op(self, *ops: str, tok: Token | None = None) -> bool:
        tok = tok or self.tok
        return tok.kind == "OP" and tok.value in ops

    def expect_kw(self, *words: str) -> Token:
        if not self.is_kw(*words):
            raise self.error(" or ".join(words))
        return self.advance()

    def expect_op(self, op: str, expected: str | None = None) -> Token:
        if not self.is_op(op):
            raise self.error(expected or f"'{op}'")
        return self.advance()

    def is_name(self, tok: Token | None = None) -> bool:
        """A name: quoted, or an identifier that is not one of its language's keywords."""
        tok = tok or self.tok
        return tok.kind == "QIDENT" or (tok.kind == "IDENT" and tok.upper not in tok.KEYWORDS)
