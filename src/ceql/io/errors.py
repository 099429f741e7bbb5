"""What happens to rejected input rows: fail, skip (counted) or dead-letter (written out)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TextIO

from ceql.errors import EventError

POLICIES = ("fail", "skip", "dead-letter")


@dataclass(frozen=True)
class RowError:
    """A rejected input row: where it is, why, and its content as text."""

    source: str
    row: int
    column: str | None
    reason: str
    text: str | None = None


def classify(reason: str) -> str:
    """A short category for the summary line."""
    for prefix, kind in (
        ("unknown event type", "unknown event type"),
        ("missing field", "missing field"),
        ("extra field", "extra field"),
        ("out of order", "out of order"),
        ("late", "late"),
        ("invalid JSON", "invalid JSON"),
        ("a JSON object", "invalid JSON"),
    ):
        if reason.startswith(prefix):
            return kind
    return "unparsable value" if "cannot read" in reason else "other"


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
            raise EventError(error.reason, error.row, error.source)
        self.rejected += 1
        kind = classify(error.reason)
        self.reasons[kind] = self.reasons.get(kind, 0) + 1
        if self.dead_letter is not None:
            record = {"source": error.source, "row": error.row, "reason": error.reason}
            if error.text is not None:
                record["input"] = error.text
            self.dead_letter.write(json.dumps(record) + "\n")

    def summary(self) -> str:
        if not self.rejected:
            return "0 rejected"
        detail = ", ".join(f"{count} {reason}" for reason, count in sorted(self.reasons.items()))
        return f"{self.rejected} rejected ({detail})"
