"""What happens to rejected input rows: fail, skip (counted) or dead-letter (written out).

Every reader reports each rejected row as a ``RowError`` to one sink: the ``ErrorPolicy`` of a
local run, or a ``RejectList`` on a Spark worker (whose rows the driver then hands to the same
policy rules), so that both engines reject the same rows for the same reasons.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Protocol, TextIO

from ceql.errors import EventError

POLICIES = ("fail", "skip", "dead-letter")


@dataclass(frozen=True)
class RowError:
    """A rejected input row: where it is, why, and its content as text.

    ``line`` is 1-based, as editors show it: the line of a CSV or JSON Lines file, or the row of
    a Parquet file (``unit`` is then "row"); None when the whole file could not be read."""

    source: str
    line: int | None
    reason: str
    text: str | None = None
    unit: str = "line"

    def record(self) -> dict:
        """The dead-letter record of this row."""
        record: dict = {"source": self.source, "line": self.line, "reason": self.reason}
        if self.text is not None:
            record["input"] = self.text
        return record


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
    """Applies the --on-error policy; ``rejected`` counts every row that was not processed."""

    def __init__(self, mode: str = "fail", dead_letter: TextIO | None = None) -> None:
        if mode not in POLICIES:
            raise ValueError(f"unknown error policy {mode!r} (one of {', '.join(POLICIES)})")
        if mode == "dead-letter" and dead_letter is None:
            raise ValueError("the dead-letter policy needs a file to write rejected rows to")
        self.mode = mode
        self.dead_letter = dead_letter
        self.rejected = 0
        self.reasons: dict[str, int] = {}

    def reject(self, error: RowError) -> None:
        """Record a rejected row (raise EventError under the fail policy)."""
        if self.mode == "fail":
            raise EventError(error.reason, source=error.source, line=error.line, unit=error.unit)
        self.rejected += 1
        kind = classify(error.reason)
        self.reasons[kind] = self.reasons.get(kind, 0) + 1
        if self.dead_letter is not None:
            self.dead_letter.write(json.dumps(error.record()) + "\n")

    def summary(self) -> str:
        if not self.rejected:
            return "0 rejected"
        detail = ", ".join(f"{count} {reason}" for reason, count in sorted(self.reasons.items()))
        return f"{self.rejected} rejected ({detail})"
