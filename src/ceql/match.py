"""The result type shared by the engine and the reference evaluator."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any


class FrozenMap(Mapping):
    """A read-only, hashable mapping (used for ``Match.labels`` and ``Match.measures``).

    Keys are kept in sorted order, so equal maps print, compare and hash alike."""

    __slots__ = ("_items", "_index", "_hash")

    def __init__(self, items: Mapping | Any = ()) -> None:
        pairs = sorted((items.items() if isinstance(items, Mapping) else items), key=lambda kv: kv[0])
        self._items: tuple[tuple[str, Any], ...] = tuple(pairs)
        self._index = dict(self._items)
        self._hash: int | None = None

    @classmethod
    def of_sorted(cls, items: tuple[tuple[str, Any], ...]) -> FrozenMap:
        """A FrozenMap of ``items`` already in key order (no sort: a per-event path's)."""
        made = object.__new__(cls)
        made._items = items
        made._index = dict(items)
        made._hash = None
        return made

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


class Match:
    """One reported complex event (an immutable value).

    Attributes:
        trigger: position of the event whose arrival reported this complex event.
        positions: positions of the reported events, sorted (after projection).
        labels: label -> sorted positions of the events it labels (labels kept by projection
            that label at least one event), a read-only mapping.
        partition: the PARTITION BY key of the complex event (the key's values, in the order
            of the attribute list), or None.
        measures: measure name -> value, a read-only mapping; empty when the query has no
            measures. Values are typed as the ``output="arrow"`` columns: int, float, str,
            bool, None, tuples for labels that may hold several events, and times as the
            input gave them (docs/guide.md, "Output").
        deadline: for ``WHERE f NOT FOLLOWED BY g``, the instant the match was due (the
            window's end: the first event's measure plus the window, in the window's units:
            nanoseconds, positions or the attribute's); None for other queries. The trigger is
            then the first event at or past it (or the end of the input, or of the time the
            caller advanced to: docs/semantics.md, 5.2).

    Matches compare, hash and sort by these six fields. Where the compiled kernel runs the
    query, a Match is a view of one row of the kernel's columnar result: its fields are built
    from that result when first read.
    """

    __slots__ = ("_fields", "_view", "_row")

    def __init__(
        self,
        trigger: int,
        positions: tuple[int, ...],
        labels: Mapping[str, tuple[int, ...]] = EMPTY,
        partition: tuple | None = None,
        measures: Mapping[str, Any] = EMPTY,
        deadline: Any = None,
    ) -> None:
        if type(labels) is not FrozenMap:
            labels = FrozenMap(labels) if labels else EMPTY
        if type(measures) is not FrozenMap:
            measures = FrozenMap(measures) if measures else EMPTY
        self._fields: tuple | None = (trigger, positions, labels, partition, measures, deadline)
        self._view: Any = None
        self._row = 0

    @classmethod
    def view(cls, rows: Any, row: int) -> Match:
        """A Match whose fields are row ``row`` of ``rows`` (an object with ``fields(row)``
        returning the first five fields, and ``trigger(row)``, ``positions(row)``,
        ``partition(row)``), built when first read; ``fields`` may add a sixth, the deadline
        (``NOT FOLLOWED BY``)."""
        match = _new(cls)
        match._fields = None
        match._view = rows
        match._row = row
        return match

    def _values(self) -> tuple:
        fields = self._fields
        if fields is None:
            found = self._view.fields(self._row)  # (five fields, or six with NOT FOLLOWED BY's deadline)
            trigger, positions, labels, partition, measures = found[:5]
            deadline = found[5] if len(found) > 5 else None
            if type(labels) is not FrozenMap:
                labels = FrozenMap(labels) if labels else EMPTY
            if type(measures) is not FrozenMap:
                measures = FrozenMap(measures) if measures else EMPTY
            fields = self._fields = (trigger, positions, labels, partition, measures, deadline)
            self._view = None
        return fields

    @property
    def trigger(self) -> int:
        fields = self._fields
        return fields[0] if fields is not None else self._view.trigger(self._row)

    @property
    def positions(self) -> tuple[int, ...]:
        fields = self._fields
        return fields[1] if fields is not None else self._view.positions(self._row)

    @property
    def labels(self) -> FrozenMap:
        return self._values()[2]

    @property
    def partition(self) -> tuple | None:
        fields = self._fields
        return fields[3] if fields is not None else self._view.partition(self._row)

    @property
    def measures(self) -> FrozenMap:
        return self._values()[4]

    @property
    def deadline(self) -> Any:
        fields = self._fields
        return fields[5] if fields is not None else self._values()[5]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Match):
            return NotImplemented
        return self._values() == other._values()

    def __ne__(self, other: object) -> bool:
        if not isinstance(other, Match):
            return NotImplemented
        return self._values() != other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __reduce__(self):
        return (Match, self._values())

    def __iter__(self) -> Iterator:
        """The six fields, in order (so ``trigger, positions, *_ = match`` works)."""
        return iter(self._values())

    def key(self) -> tuple[Any, ...]:
        """A hashable, totally ordered identity of the match."""
        trigger, positions, labels, partition, measures, deadline = self._values()
        return (
            trigger,
            positions,
            _sort_key(labels._items),
            _sortable(partition),
            _sort_key(measures._items),
            _sortable_scalar(deadline),
        )

    def __lt__(self, other: Match) -> bool:
        return self.key() < other.key()

    def __le__(self, other: Match) -> bool:
        return self.key() <= other.key()

    def __gt__(self, other: Match) -> bool:
        return self.key() > other.key()

    def __ge__(self, other: Match) -> bool:
        return self.key() >= other.key()

    def __repr__(self) -> str:
        trigger, positions, labels, partition, measures, deadline = self._values()
        parts = [f"trigger={trigger}", f"positions={list(positions)}"]
        if labels:
            parts.append("labels={" + ", ".join(f"{k}: {list(v)}" for k, v in labels.items()) + "}")
        if partition is not None:
            parts.append(f"partition={partition!r}")
        if measures:
            parts.append("measures={" + ", ".join(f"{k}: {v!r}" for k, v in measures.items()) + "}")
        if deadline is not None:
            parts.append(f"deadline={deadline!r}")
        return "Match(" + ", ".join(parts) + ")"

    def to_dict(self) -> dict[str, Any]:
        """The match as plain Python data (lists for tuples); the records of the output
        formats are described in docs/guide.md, "Output"."""
        trigger, positions, labels, partition, measures, deadline = self._values()
        out: dict[str, Any] = {
            "trigger": trigger,
            "positions": list(positions),
            "labels": {k: list(v) for k, v in labels.items()},
        }
        if partition is not None:
            out["partition"] = list(partition)
        if measures:
            out["measures"] = {k: _plain(v) for k, v in measures.items()}
        if deadline is not None:
            out["deadline"] = deadline
        return out


_new = object.__new__


def _plain(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    return value


def _hashable(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_hashable(v) for v in value)
    return value


def partition_order(key: Any) -> tuple:
    """The sort key of a partition key (a tuple of values, or None): NOT FOLLOWED BY reports
    the matches due at one trigger key by key in this order (docs/semantics.md, 5.2): numbers
    (booleans as 0/1) by value, then strings by code point; None (no key) first."""
    return _sortable(key)


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
