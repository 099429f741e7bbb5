"""The kept values: the attribute values that measures and conditions read, for the events that
may still be part of a reported complex event.

The kernel's tECS holds positions only. Each batch's columns are kept as they are (numpy views
of the typed Arrow columns, no copy) as one *segment*; matches read their events' values back
by position (``rows`` then ``take``). When the batch segments grow past twice the size left by
the last pruning, the values of the events some tECS node in use refers to are copied into one
compact segment and the batch segments are dropped (``prune``), so memory stays bounded like
the tECS (by the window, or the live runs) at amortised constant work per event.

Per attribute, values are stored raw: int64 or float64 values with a validity mask, booleans, or
strings (an Arrow array in a batch segment, an object array once compacted). An attribute that
some event types declare int and others double is stored as double; ``as_int`` marks the events
whose type declares it int, whose values are ints again (exact ``/`` and ``%``), as on the
Python path.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

#: State keys of the kept values inside the kernel's exported state (one place: runner.py's
#: JSON wrapper and the state validation read them through ``export`` / ``load``).
STATE_PREFIX = "kept."

_NUMPY = {"int": np.int64, "double": np.float64, "boolean": np.bool_, "string": object}


@dataclass
class Raw:
    """One attribute's values for a run of events (see the module docstring)."""

    storage: str  # int | double | string | boolean
    data: np.ndarray | pa.Array  # strings: an Arrow array in batch segments
    valid: np.ndarray  # bool
    as_int: np.ndarray | None = None  # bool, double storage with int-declaring types only

    def take(self, index: np.ndarray) -> Raw:
        if isinstance(self.data, (pa.Array, pa.ChunkedArray)):
            data = self.data.take(pa.array(index, pa.int64())).to_numpy(zero_copy_only=False)
            data = np.asarray(data, dtype=object)
        else:
            data = self.data[index]
        return Raw(self.storage, data, self.valid[index], self.as_int[index] if self.as_int is not None else None)


def _put(out: Raw, where, part: Raw) -> None:
    """``out[where] = part`` for every array of a Raw (``out`` owns numpy arrays)."""
    data = part.data
    if isinstance(data, (pa.Array, pa.ChunkedArray)):
        data = np.asarray(data.to_numpy(zero_copy_only=False), dtype=object)
    out.data[where] = data
    out.valid[where] = part.valid
    if out.as_int is not None:
        out.as_int[where] = part.as_int if part.as_int is not None else False


def _owned(raw: Raw, capacity: int, used: int | None = None) -> Raw:
    """A copy of ``raw``'s first ``used`` rows (all) in numpy arrays of ``capacity`` rows."""
    used = len(raw.valid) if used is None else used
    out = _empty(raw.storage, raw.as_int is not None, capacity)
    _put(out, slice(0, used), Raw(raw.storage, raw.data[:used], raw.valid[:used],
                                  raw.as_int[:used] if raw.as_int is not None else None))
    return out


def _empty(storage: str, mixed: bool, size: int = 0) -> Raw:
    data = np.zeros(size, dtype=_NUMPY[storage]) if storage != "string" else np.full(size, None, dtype=object)
    return Raw(storage, data, np.zeros(size, dtype=bool), np.zeros(size, dtype=bool) if mixed else None)


def read_column(table: pa.Table, name: str, storage: str, int_rows: np.ndarray | None) -> Raw:
    """Every row's value of column ``name`` of a typed table (``int_rows``: whether each row's
    event type declares the attribute int; None when no type does)."""
    n = table.num_rows
    if name not in table.column_names:
        return _empty(storage, int_rows is not None, n)
    column = table.column(name)
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    if storage == "string":
        return Raw(storage, column, column.is_valid().to_numpy(zero_copy_only=False))
    if column.null_count:
        valid = column.is_valid().to_numpy(zero_copy_only=False)
        column = pc.fill_null(column, {"int": 0, "double": 0.0, "boolean": False}[storage])
    else:
        valid = np.ones(n, dtype=bool)
    # Without nulls a numeric column converts without a copy.
    data = column.to_numpy(zero_copy_only=False).astype(_NUMPY[storage], copy=False)
    as_int = None
    if int_rows is not None:
        with np.errstate(invalid="ignore"):
            as_int = int_rows & valid & np.isfinite(data) & (np.floor(data) == data)
    return Raw(storage, data, valid, as_int)


@dataclass
class _Segment:
    """Values of a run of positions: a batch or a tail of small batches (``positions`` None:
    row = position - first, every position from first to last), or the compacted survivors of
    earlier ones (``positions`` sorted)."""

    first: int
    last: int
    columns: dict[str, Raw]
    positions: np.ndarray | None = None

    @property
    def size(self) -> int:
        return len(self.positions) if self.positions is not None else self.last - self.first + 1

    def rows(self, positions: np.ndarray) -> np.ndarray:
        if self.positions is None:
            return positions - self.first
        return np.searchsorted(self.positions, positions)


SMALL_BATCH = 4096  # rows: smaller batches are copied into one growing tail segment


class KeptValues:
    """Values of ``attributes`` per stream position, for the events that may still be needed."""

    def __init__(self, storages: dict[str, str], int_types: dict[str, frozenset[int]]) -> None:
        self.storages = dict(storages)  # attribute -> storage kind
        self.int_types = int_types  # attribute -> type indexes declaring it int (double storage)
        self.segments: list[_Segment] = []
        self._firsts = np.zeros(0, dtype=np.int64)
        self._tail = False  # whether the last segment is a growing tail (owned arrays)
        self.batch_rows = 0  # rows in batch segments (what pruning would compact)
        self.compact_rows = 0  # rows in the compacted segment

    def __len__(self) -> int:
        return self.batch_rows + self.compact_rows

    def append(
        self,
        table: pa.Table,
        first: int,
        types: np.ndarray,
        derived: dict[str, Raw] | None = None,
        positions: np.ndarray | None = None,
    ) -> None:
        """Keep the values of a typed table whose rows are positions ``first, first + 1, ...``
        (after every kept one); ``types``: each row's event type index; ``derived``: values
        that are not columns of the table, one per row. ``positions``: the rows' positions when
        they are not consecutive (increasing; a worker's share of the keys, runtime/parallel.py)."""
        n = table.num_rows
        if n == 0:
            return
        columns = {}
        for name, storage in self.storages.items():
            if derived and name in derived:
                columns[name] = derived[name]
                continue
            ints = self.int_types.get(name)
            int_rows = np.isin(types, np.fromiter(ints, dtype=np.int64)) if ints else None
            columns[name] = read_column(table, name, storage, int_rows)
        self.batch_rows += n
        if positions is not None:  # a sparse segment: rows found by search
            positions = np.asarray(positions, dtype=np.int64)
            self._tail = False
            self.segments.append(_Segment(int(positions[0]), int(positions[-1]), columns, positions))
            self._firsts = np.append(self._firsts, int(positions[0]))
            return
        last = self.segments[-1] if self.segments else None
        if n < SMALL_BATCH and last is not None and self._tail and last.last + 1 == first:
            self._extend_tail(last, columns, n)
            return
        if n < SMALL_BATCH:
            columns = {name: _owned(raw, max(n, 64)) for name, raw in columns.items()}
            self._tail = True
        else:
            self._tail = False
        self.segments.append(_Segment(first, first + n - 1, columns))
        self._firsts = np.append(self._firsts, first)

    def _extend_tail(self, tail: _Segment, columns: dict[str, Raw], n: int) -> None:
        size = tail.size
        for name, raw in columns.items():
            kept = tail.columns[name]
            if size + n > len(kept.valid):
                kept = tail.columns[name] = _owned(kept, 2 * (size + n), size)
            _put(kept, slice(size, size + n), raw)
        tail.last += n

    def locate(self, positions: np.ndarray) -> list[tuple[int, np.ndarray, np.ndarray]]:
        """For ``positions`` (every one kept): (segment, which of the positions, their rows)."""
        if len(self.segments) == 1:
            return [(0, np.arange(len(positions)), self.segments[0].rows(positions))]
        if not self.segments:
            if len(positions):
                raise RuntimeError("a match refers to an event whose values were not kept")  # pragma: no cover
            return []
        if not len(positions):  # matches of no reported event (e.g. NOT(...) alone)
            return []
        which = np.searchsorted(self._firsts, positions, side="right") - 1
        if which[0] == which[-1] and (len(which) < 2 or np.all(which == which[0])):
            s = int(which[0])
            return [(s, np.arange(len(positions)), self.segments[s].rows(positions))]
        out = []
        for s in np.unique(which).tolist():
            chosen = np.flatnonzero(which == s)
            out.append((s, chosen, self.segments[s].rows(positions[chosen])))
        return out

    def gather(self, name: str, located: list[tuple[int, np.ndarray, np.ndarray]], count: int) -> Raw:
        """Attribute ``name`` at the positions ``locate`` found (``count`` of them)."""
        if len(located) == 1 and len(located[0][1]) == count:
            segment, _, rows = located[0]
            return self.segments[segment].columns[name].take(rows)
        out = _empty(self.storages[name], name in self.int_types, count)
        for segment, chosen, rows in located:
            _put(out, chosen, self.segments[segment].columns[name].take(rows))
        return out

    def should_prune(self) -> bool:
        return self.batch_rows > max(PRUNE_MIN, 2 * self.compact_rows)

    def prune(self, live: np.ndarray) -> None:
        """Keep only the events at ``live`` positions (any order, repeats allowed), in one
        compacted segment. Work: the live positions and the kept rows (no sort)."""
        if not self.segments:
            return
        sizes = np.array([s.size for s in self.segments], dtype=np.int64)
        offsets = np.zeros(len(sizes) + 1, dtype=np.int64)
        np.cumsum(sizes, out=offsets[1:])
        live = np.asarray(live, dtype=np.int64)
        which = np.searchsorted(self._firsts, live, side="right") - 1
        live, which = live[which >= 0], which[which >= 0]
        rows = live - self._firsts[which]  # dense segments: the row is the offset
        # The compacted segment (always the first) and sparse ones are searched.
        sparse = [s for s, segment in enumerate(self.segments) if segment.positions is not None]
        for s in sparse:
            old = which == s
            rows[old] = np.searchsorted(self.segments[s].positions, live[old])
        ok = rows < sizes[which]
        for s in sparse:
            old = ok & (which == s)
            ok[old] = self.segments[s].positions[rows[old]] == live[old]
        mark = np.zeros(int(offsets[-1]), dtype=bool)
        mark[offsets[which[ok]] + rows[ok]] = True
        kept = np.flatnonzero(mark)
        count = len(kept)
        bounds = np.searchsorted(kept, offsets)
        positions = np.empty(count, dtype=np.int64)
        columns = {name: _empty(storage, name in self.int_types, count) for name, storage in self.storages.items()}
        for s, segment in enumerate(self.segments):
            lo, hi = int(bounds[s]), int(bounds[s + 1])
            if lo == hi:
                continue
            rows = kept[lo:hi] - offsets[s]
            positions[lo:hi] = segment.positions[rows] if segment.positions is not None else rows + segment.first
            for name in self.storages:
                _put(columns[name], slice(lo, hi), segment.columns[name].take(rows))
        self.segments = [_Segment(int(positions[0]), int(positions[-1]), columns, positions)] if count else []
        self._firsts = np.array([s.first for s in self.segments], dtype=np.int64)
        self._tail = False
        self.batch_rows = 0
        self.compact_rows = count

    # ------------------------------------------------------------------ state

    def export(self, live: np.ndarray) -> dict:
        """The values of the events at ``live`` positions, as plain arrays and lists (keys start
        with ``STATE_PREFIX``)."""
        self.prune(live)
        segment = self.segments[0] if self.segments else None
        n = self.compact_rows
        positions = segment.positions if segment is not None else np.zeros(0, dtype=np.int64)
        out: dict = {f"{STATE_PREFIX}positions": np.array(positions, dtype=np.int64)}
        for name, storage in self.storages.items():
            key = f"{STATE_PREFIX}{name}"
            raw = segment.columns[name] if segment is not None else _empty(storage, name in self.int_types, 0)
            if storage == "string":
                out[f"{key}.data"] = [v if ok else None for v, ok in zip(list(raw.data), raw.valid.tolist())]
            else:
                out[f"{key}.data"] = np.array(raw.data[:n])
            out[f"{key}.valid"] = np.array(raw.valid[:n], dtype=bool)
            if raw.as_int is not None:
                out[f"{key}.as_int"] = np.array(raw.as_int[:n], dtype=bool)
        return out

    def load(self, state: dict) -> None:
        """Restore what ``export`` gave (missing keys: nothing kept)."""
        positions = np.asarray(state.get(f"{STATE_PREFIX}positions", []), dtype=np.int64)
        n = len(positions)
        if n and np.any(np.diff(positions) <= 0):
            raise ValueError("malformed kernel state: kept positions must increase")
        columns = {}
        for name, storage in self.storages.items():
            key = f"{STATE_PREFIX}{name}"
            data = state.get(f"{key}.data", [])
            valid = np.asarray(state.get(f"{key}.valid", []), dtype=bool)
            if len(data) != n or len(valid) != n:
                raise ValueError(f"malformed kernel state: kept values of {name} do not match the positions")
            if storage == "string":
                if not all(v is None or isinstance(v, str) for v in data):
                    raise ValueError(f"malformed kernel state: kept values of {name} must be strings")
                array = np.empty(n, dtype=object)
                array[:] = list(data)
            else:
                array = np.asarray(data, dtype=_NUMPY[storage])
            as_int = None
            if name in self.int_types:
                as_int = np.asarray(state.get(f"{key}.as_int", np.zeros(n, bool)), dtype=bool)
                if len(as_int) != n:
                    raise ValueError(f"malformed kernel state: kept values of {name} do not match the positions")
            columns[name] = Raw(storage, array, valid, as_int)
        self.segments = [_Segment(int(positions[0]), int(positions[-1]), columns, positions)] if n else []
        self._firsts = np.array([s.first for s in self.segments], dtype=np.int64)
        self._tail = False
        self.batch_rows = 0
        self.compact_rows = n

    def kept_positions(self) -> np.ndarray:
        """Every kept position (for checks)."""
        parts = [
            s.positions if s.positions is not None else np.arange(s.first, s.last + 1, dtype=np.int64)
            for s in self.segments
        ]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


PRUNE_MIN = 1 << 18  # rows of batch segments before the first pruning
