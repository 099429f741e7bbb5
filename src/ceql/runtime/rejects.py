"""What happens to rejected input rows: fail, skip (counted) or dead-letter (written out).

Every reader reports each rejected row as a ``RowError`` to one sink: the ``ErrorPolicy`` of a
local run or of the Python API (``Query.run(..., on_error=...)``), or a ``RejectList`` on a
Spark worker (whose rows the driver then hands to the same policy rules), so that every path
rejects the same rows for the same reasons, counts them alike and writes the same records.
(``ceql.io.errors`` re-exports these names for the file readers.)
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, TextIO

from ceql.errors import EventError

POLICIES = ("fail", "skip", "dead-letter")


@dataclass(frozen=True)
class RowError:
    """A rejected input row: where it is, why, and its content as text.

    ``line`` is 1-based, as editors show it: the line of a CSV or JSON Lines file, or the row of
    a Parquet file (``unit`` is then "row"); None when the whole file could not be read. Rows
    of the Python API have ``unit`` "index": ``line`` is then the 0-based index of the event in
    the input, as ``EventError`` names it. ``text`` is the row as the input gave it (None when
    nothing of it could be read)."""

    source: str
    line: int | None
    reason: str
    text: str | None = None
    unit: str = "line"

    def record(self) -> dict:
        """The dead-letter record of this row: source, line (``row`` for the Python API's
        0-based index), reason, input (always present; null when nothing could be read)."""
        where = "row" if self.unit == "index" else "line"
        return {"source": self.source, where: self.line, "reason": self.reason, "input": self.text}


class RejectSink(Protocol):
    """Where readers send rejected rows."""

    def reject(self, error: RowError) -> None: ...


class RejectList:
    """A sink that keeps the rejected rows (Spark workers return them as data)."""

    def __init__(self) -> None:
        self.errors: list[RowError] = []

    def reject(self, error: RowError) -> None:
        self.errors.append(error)


#: Reason prefix -> the category counted in the summary line.
CATEGORIES = (
    ("unknown event type", "unknown event type"),
    ("event has no", "unknown event type"),
    ("event_type", "unknown event type"),
    ("missing field", "missing field"),
    ("out of order", "out of order"),
    ("late", "late"),
    ("invalid JSON", "invalid JSON"),
    ("a JSON object", "invalid JSON"),
    ("not valid UTF-8", "bad text encoding"),
    ("the header", "bad header"),
    ("line is longer", "line too long"),
    ("malformed", "wrong field count"),
    ("cannot read", "unreadable file"),
)


def classify(reason: str) -> str:
    """A short category for the summary line."""
    for prefix, kind in CATEGORIES:
        if reason.startswith(prefix):
            return kind
    if " fields where the header has " in reason:
        return "wrong field count"
    return "bad value" if reason.startswith("column ") else "other"


class ErrorPolicy:
    """Applies an on-error policy; ``rejected`` counts every row that was not processed and
    ``reasons`` counts them by category.

    ``dead_letter`` receives the record of each rejected row (``RowError.record``): a text
    stream gets it as one JSON line, a callable gets the dict. With ``ordered=True`` records
    are held until ``flush()``, which writes them in input order (file, then line), so that a
    row rejected late (out of order) still comes before the rows after it."""

    def __init__(
        self,
        mode: str = "fail",
        dead_letter: TextIO | Callable[[dict], Any] | None = None,
        ordered: bool = False,
    ) -> None:
        if mode not in POLICIES:
            raise ValueError(f"unknown error policy {mode!r} (one of {', '.join(POLICIES)})")
        if mode == "dead-letter" and dead_letter is None:
            raise ValueError("the dead-letter policy needs a file (or a function) to write rejected rows to")
        self.mode = mode
        self.dead_letter = dead_letter
        self.rejected = 0
        self.reasons: dict[str, int] = {}
        self.ordered = ordered
        self._held: list[RowError] = []
        self._sources: dict[str, int] = {}  # source -> the order in which sources were seen

    def reject(self, error: RowError) -> None:
        """Record a rejected row (raise EventError under the fail policy)."""
        if self.mode == "fail":
            if error.unit == "index":  # the Python API: the event's 0-based index
                raise EventError(error.reason, error.line)
            raise EventError(error.reason, source=error.source, line=error.line, unit=error.unit)
        self.rejected += 1
        kind = classify(error.reason)
        self.reasons[kind] = self.reasons.get(kind, 0) + 1
        if self.dead_letter is None:
            return
        if self.ordered:
            self._sources.setdefault(error.source, len(self._sources))
            self._held.append(error)
        else:
            self._write(error)

    def source_order(self, sources: list[str]) -> None:
        """The order of the inputs (held records are flushed file by file in this order)."""
        for source in sources:
            self._sources.setdefault(source, len(self._sources))

    def flush(self) -> None:
        """Write the held records, in input order."""
        held, self._held = self._held, []
        held.sort(key=lambda e: (self._sources.get(e.source, 0), e.line if e.line is not None else -1))
        for error in held:
            self._write(error)

    def _write(self, error: RowError) -> None:
        record = error.record()
        sink = self.dead_letter
        if callable(sink):
            sink(record)
        else:
            sink.write(json.dumps(record, ensure_ascii=False) + "\n")  # type: ignore[union-attr]

    def summary(self) -> str:
        if not self.rejected:
            return "0 rejected"
        detail = ", ".join(f"{count} {reason}" for reason, count in sorted(self.reasons.items()))
        return f"{self.rejected} rejected ({detail})"
