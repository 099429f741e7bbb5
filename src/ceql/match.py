"""The result type shared by the engine and the reference evaluator."""

from __future__ import annotations

from typing import Any, NamedTuple


class Match(NamedTuple):
    """One reported complex event (an immutable value).

    Attributes:
        trigger: position of the event whose arrival reported this complex event.
        positions: positions of the reported events, sorted (after projection).
        labels: AS label -> sorted positions of the events it labels (labels kept by projection).
        partition: the PARTITION BY key of the complex event, or None.
    """

    trigger: int
    positions: tuple[int, ...]
    labels: dict[str, tuple[int, ...]] = {}
    partition: tuple | None = None

    def key(self) -> tuple[Any, ...]:
        """A hashable, totally ordered identity of the match."""
        return (self.trigger, self.positions, tuple(sorted(self.labels.items())), _sortable(self.partition))

    def __hash__(self) -> int:  # labels is a dict: hash a canonical form instead
        return hash(self.key())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Match):
            return NotImplemented
        return self.key() == other.key()

    def __ne__(self, other: object) -> bool:
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    def __lt__(self, other: Match) -> bool:  # type: ignore[override]
        return self.key() < other.key()

    def to_dict(self) -> dict[str, Any]:
        """The JSON Lines form of the match (DESIGN 6.1)."""
        out: dict[str, Any] = {
            "trigger": self.trigger,
            "positions": list(self.positions),
            "labels": {k: list(v) for k, v in sorted(self.labels.items())},
        }
        if self.partition is not None:
            out["partition"] = list(self.partition)
        return out


def _sortable(partition: tuple | None) -> tuple:
    if partition is None:
        return ()
    return tuple((type(v).__name__, str(v)) for v in partition)
