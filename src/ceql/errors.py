"""Errors raised by ceql for bad queries, declarations and events.

Every error that a user can cause carries enough context to be fixed without a traceback:
query errors carry the line, the column, an excerpt with a caret and what was expected.
"""

from __future__ import annotations

from collections.abc import Iterable


class CeqlError(Exception):
    """Base class of every error ceql raises on purpose."""


class MissingExtraError(CeqlError, ImportError):
    """A feature needs an optional dependency that is not installed (e.g. ``ceql[spark]``)."""


class QueryError(CeqlError):
    """A query or declaration that ceql rejects.

    Attributes:
        message: what is wrong, in one sentence.
        line, column: 1-based position in the text (None when the error has no position).
        excerpt: the offending line of the text with a caret under the column.
        expected: what would have been accepted there, if known.
    """

    def __init__(
        self,
        message: str,
        text: str | None = None,
        offset: int | None = None,
        expected: str | None = None,
    ) -> None:
        self.message = message
        self.expected = expected
        self.line: int | None = None
        self.column: int | None = None
        self.excerpt: str | None = None
        if text is not None and offset is not None:
            offset = max(0, min(offset, len(text)))
            self.line = text.count("\n", 0, offset) + 1
            line_start = text.rfind("\n", 0, offset) + 1
            line_end = text.find("\n", offset)
            if line_end == -1:
                line_end = len(text)
            self.column = offset - line_start + 1
            source_line = text[line_start:line_end].replace("\t", " ")
            self.excerpt = f"  {source_line}\n  {' ' * (self.column - 1)}^"
        super().__init__(self.__str__())

    def __str__(self) -> str:
        where = f"line {self.line}, column {self.column}: " if self.line is not None else ""
        text = f"{where}{self.message}"
        if self.expected and "expected" not in self.message:
            text += f" (expected {self.expected})"
        if self.excerpt:
            text += "\n" + self.excerpt
        return text


class QuerySyntaxError(QueryError):
    """The text does not follow the CEQL grammar."""


class DeclarationError(QueryError):
    """A stream or event declaration is malformed or inconsistent."""


class UnsupportedQueryError(QueryError):
    """The query is valid CEQL but uses a feature this engine does not evaluate yet."""


class InputWarning(UserWarning):
    """Something in the input that ceql ignores (a column no event type declares, a value in a
    column the row's event type does not declare); each is warned about once."""


class SlowPathWarning(UserWarning):
    """A query runs on the Python evaluator because the compiled kernel cannot evaluate it
    (given once per query; ``Query.explain()`` names the reason)."""


class EventError(CeqlError):
    """An input event that cannot be processed (unknown type, bad value, bad time...).

    Attributes:
        row: 0-based index of the event in its input (None if unknown).
        reason: why the event was rejected.
        source: the file (or other source) the event came from, if known.
        line: 1-based position of the event in its file, if known: its line (CSV, JSON Lines),
            or its row (Parquet; ``unit`` is then "row").
    """

    def __init__(
        self,
        reason: str,
        row: int | None = None,
        source: str | None = None,
        line: int | None = None,
        unit: str = "line",
    ) -> None:
        self.reason = reason
        self.row = row
        self.source = source
        self.line = line
        self.unit = unit
        super().__init__(self.__str__())

    def __str__(self) -> str:
        parts = []
        if self.source:
            parts.append(str(self.source))
        if self.line is not None:
            parts.append(f"{self.unit} {self.line}")
        elif self.row is not None:
            parts.append(f"row {self.row}")
        prefix = ", ".join(parts)
        return f"{prefix}: {self.reason}" if prefix else self.reason


class UsageError(CeqlError, ValueError):
    """An evaluator call ceql refuses: an argument that is not what the call takes (``advance``
    with a time beyond int64 nanoseconds or given as bytes), or a call at the wrong moment (an
    event after ``finish()``). A ValueError too, as such errors were before."""


class LimitError(CeqlError):
    """A bound on work or output size was reached. The message names the bound, its value and
    how to change it (see docs/limits.md).

    Attributes:
        limit: the bound's option name (e.g. ``max_matches``).
        value: its value when the run stopped.
    """

    def __init__(self, message: str, limit: str, value: int) -> None:
        self.limit = limit
        self.value = value
        super().__init__(message)


def did_you_mean(word: str, candidates: Iterable[str], *, upper: bool = False) -> str:
    """`` (did you mean WITHIN?)`` when ``word`` is a likely misspelling of one of the
    ``candidates`` (difflib's close matches; compared in upper case for keywords), else ``""``.
    Appended to a message, it names the fix for a typo such as ``WTIHIN`` or ``PARTITON``."""
    import difflib

    names = [str(c) for c in candidates]
    if upper:
        lookup = {n.upper(): n for n in names}
        found = difflib.get_close_matches(word.upper(), list(lookup), n=1, cutoff=0.6)
        found = [lookup[f] for f in found]
    else:
        found = difflib.get_close_matches(word, names, n=1, cutoff=0.6)
        if not found:  # a name in another case (``buy`` for ``BUY``)
            lookup = {n.lower(): n for n in names}
            found = [lookup[f] for f in difflib.get_close_matches(word.lower(), list(lookup), n=1, cutoff=0.6)]
    if not found or found[0] == word:
        return ""
    return f" (did you mean {found[0]}?)"
