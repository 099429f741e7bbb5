"""The result type shared by the engine and the reference evaluator."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, NamedTuple


class FrozenMap(Mapping):
    """A read-only, hashable mapping (used for ``Match.labels`` and ``Match.measures``).

    Keys are kept in sorted order, so equal maps print, compare and hash alike."""

    __slots__ = ("_items", "_index", "_hash")

    def __init__(self, items: Mapping | Any = ()) -> None:
        pairs = sorted((items.items() if isinstance(items, Mapping) else items), key=lambda kv: kv[0])
        self._items: tuple[tuple[str, Any], ...] = tuple(pairs)
        self._index = dict(self._items)
        self._hash: int | None = None

    def __getitem__(self, key: str) -> Any:
        return self._index[key]

    def __iter__(self) -> Iterator[str]:
        return (k for k, _ in self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(tuple((k, _hashable(v)) for k, v in self._items))
        return self._hash

    def __eq__(self, other: object) -> bool:
        if isinstance(other, FrozenMap):
            return self._items == other._items
        if isinstance(other, Mapping):
            return self._index == dict(other)
        return NotImplemented

    def __lt__(self, other: FrozenMap) -> bool:
        return _sort_key(self._items) < _sort_key(other._items)

    def __repr__(self) -> str:
        return "{" + ", ".join(f"{k!r}: {v!r}" for k, v in self._items) + "}"

    def __reduce__(self):
        return (FrozenMap, (self._items,))


EMPTY = FrozenMap()


class _MatchFields(NamedTuple):
    trigger: int
    positions: tuple[int, ...]
    labels: FrozenMap = EMPTY
    partition: tuple | None = None
    measures: FrozenMap = EMPTY
    deadline: Any = None


class Match(_MatchFields):
    """One reported complex event (an immutable value).

    Attributes:
        trigger: position of the event whose arrival reported this complex event.
        positions: positions of the reported events, sorted (after projection).
        labels: label -> sorted positions of the events it labels (labels kept by projection),
            a read-only mapping.
        partition: the PARTITION BY key of the complex event, or None.
        measures: measure name -> value (lists for labels that may hold several events), a
            read-only mapping; empty when the query has no measures.
        deadline: for ``WHERE f NOT FOLLOWED BY g``, the instant the match was due (the
            window's end: the first event's measure plus the window, in the window's units:
            nanoseconds, positions or the attribute's); None for other queries. The trigger is
            then the first event at or past it (or the end of the input, or of the time the
            caller advanced to: docs/semantics.md, 5.2).
    """

    __slots__ = ()

    def __new__(
        cls,
        trigger: int,
        positions: tuple[int, ...],
        labels: Mapping[str, tuple[int, ...]] = EMPTY,
        partition: tuple | None = None,
        measures: Mapping[str, Any] = EMPTY,
        deadline: Any = None,
    ) -> Match:
        if type(labels) is not FrozenMap:
            labels = FrozenMap(labels) if labels else EMPTY
        if type(measures) is not FrozenMap:
            measures = FrozenMap(measures) if measures else EMPTY
        return tuple.__new__(cls, (trigger, positions, labels, partition, measures, deadline))

    def key(self) -> tuple[Any, ...]:
        """A hashable, totally ordered identity of the match."""
        return (
            self.trigger,
            self.positions,
            _sort_key(self.labels._items),
            _sortable(self.partition),
            _sort_key(self.measures._items),
            _sortable_scalar(self.deadline),
        )

    def __lt__(self, other: Match) -> bool:  # type: ignore[override]
        return self.key() < other.key()

    def __le__(self, other: Match) -> bool:  # type: ignore[override]
        return self.key() <= other.key()

    def __gt__(self, other: Match) -> bool:  # type: ignore[override]
        return self.key() > other.key()

    def __ge__(self, other: Match) -> bool:  # type: ignore[override]
        return self.key() >= other.key()

    def __repr__(self) -> str:
        parts = [f"trigger={self.trigger}", f"positions={list(self.positions)}"]
        if self.labels:
            parts.append("labels={" + ", ".join(f"{k}: {list(v)}" for k, v in self.labels.items()) + "}")
        if self.partition is not None:
            parts.append(f"partition={self.partition!r}")
        if self.measures:
            parts.append("measures={" + ", ".join(f"{k}: {v!r}" for k, v in self.measures.items()) + "}")
        if self.deadline is not None:
            parts.append(f"deadline={self.deadline!r}")
        return "Match(" + ", ".join(parts) + ")"

    def to_dict(self) -> dict[str, Any]:
        """The JSON Lines form of the match (see docs/cli.md)."""
        out: dict[str, Any] = {
            "trigger": self.trigger,
            "positions": list(self.positions),
            "labels": {k: list(v) for k, v in self.labels.items()},
        }
        if self.partition is not None:
            out["partition"] = list(self.partition)
        if self.measures:
            out["measures"] = {k: _plain(v) for k, v in self.measures.items()}
        if self.deadline is not None:
            out["deadline"] = self.deadline
        return out


def _plain(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    return value


def _hashable(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_hashable(v) for v in value)
    return value


def _sortable(value: Any) -> tuple:
    if value is None:
        return ()
    if isinstance(value, (tuple, list)):
        return tuple(_sortable_scalar(v) for v in value)
    return (_sortable_scalar(value),)


def _sortable_scalar(value: Any) -> tuple:
    if isinstance(value, (tuple, list)):
        return (3, _sortable(value))
    if value is None:
        return (0, "")
    if isinstance(value, bool):
        return (1, int(value))
    if isinstance(value, (int, float)):
        return (1, value)
    return (2, str(value))


def _sort_key(items: tuple[tuple[str, Any], ...]) -> tuple:
    return tuple((k, _sortable(v) if isinstance(v, (tuple, list)) else _sortable_scalar(v)) for k, v in items)
