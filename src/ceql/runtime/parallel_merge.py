"""The workers' outputs merged by trigger position, in bounded pieces.

Each worker's complex events come in trigger order, and a trigger belongs to one worker (its
event went to that worker), so the one-core order is a stable merge by trigger. ``merge``
merges parts (in worker threads for whole batches, ``ParallelKernel.arrow``); ``KWayMerge``
does it lazily over the workers' streams of chunks, holding at most what the workers' bounded
queues hold (``ParallelKernel.matches`` and ``ceql run``).
"""

from __future__ import annotations

import bisect
import queue
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from ceql.runtime.arrow import MatchColumns

#: What a worker's stream ends with.
END = object()


def before(columns: MatchColumns, bound: int) -> tuple[MatchColumns | None, MatchColumns | None]:
    """``columns`` split into its complex events triggered at ``bound`` or before, and the rest
    (None for an empty side; no copy: views of the arrays)."""
    cut = int(np.searchsorted(columns.trigger, bound, side="right"))
    if cut == 0:
        return None, columns
    if cut == len(columns):
        return columns, None
    return _rows(columns, 0, cut), _rows(columns, cut, len(columns))


def from_trigger(columns: MatchColumns, first: int) -> MatchColumns | None:
    """The complex events of ``columns`` triggered at ``first`` or later (None: none)."""
    cut = int(np.searchsorted(columns.trigger, first, side="left"))
    if cut == len(columns):
        return None
    return columns if cut == 0 else _rows(columns, cut, len(columns))


def _rows(columns: MatchColumns, lo: int, hi: int) -> MatchColumns:
    """Complex events ``lo:hi`` (views; the offsets keep pointing into the whole arrays)."""
    labels = {name: (offsets[lo : hi + 1], values) for name, (offsets, values) in columns.labels.items()}
    partition = columns.partition[lo:hi] if columns.partition is not None else None
    measures = {name: values[lo:hi] for name, values in columns.measures.items()}
    deadline = columns.deadline[lo:hi] if columns.deadline is not None else None
    out = MatchColumns(
        columns.trigger[lo:hi],
        columns.offsets[lo : hi + 1],
        columns.positions,
        labels,
        partition,
        columns.keys,
        measures,
        deadline,
    )
    return _with_order(out, columns, slice(lo, hi))


def _with_order(out: MatchColumns, source: MatchColumns, rows: slice | np.ndarray) -> MatchColumns:
    """``out`` with the ``rows`` of ``source``'s order within a trigger (NOT FOLLOWED BY's
    ``rank`` and ``tie``, ``parallel_absence.py``), when it has one."""
    if source.rank is not None:
        assert source.tie is not None
        out.rank = source.rank[rows]
        out.tie = source.tie[rows]
    return out


def merge(parts: Sequence[MatchColumns]) -> MatchColumns:
    """One MatchColumns of ``parts`` (each in trigger order, a trigger in one part only), in
    trigger order. Partition codes are renumbered over the keys the parts use."""
    if len(parts) == 1:
        return _compact(parts[0])
    trigger = np.concatenate([p.trigger for p in parts])
    offsets, positions = _stack([(p.offsets, p.positions) for p in parts])
    labels = {name: _stack([p.labels[name] for p in parts]) for name in parts[0].labels}
    partition, keys = _keys(parts)
    measures = {name: _concat([p.measures[name] for p in parts]) for name in parts[0].measures}
    deadline = np.concatenate([p.deadline for p in parts]) if parts[0].deadline is not None else None
    merged = MatchColumns(trigger, offsets, positions, labels, partition, keys, measures, deadline)
    if parts[0].rank is None:
        return _take(merged, np.argsort(trigger, kind="stable"))
    # NOT FOLLOWED BY: several workers' matches may share a trigger; one core orders them by
    # (key rank, deadline, tie), a worker's in its own order (lexsort is stable). A rank is
    # a key's value (numbers, or strings): a part without matches has no type to add.
    ranks = [p.rank for p in parts if p.rank is not None and len(p.rank)]
    rank = np.concatenate(ranks) if ranks else np.zeros(0, dtype=np.int64)
    tie = np.concatenate([p.tie for p in parts if p.tie is not None])
    merged.rank, merged.tie = rank, tie
    return _take(merged, np.lexsort((tie, deadline, rank, trigger)))


def _concat(values: list) -> Any:
    """One measure's raw values of several parts (Arrow arrays, numpy arrays or lists)."""
    if all(isinstance(v, pa.Array) for v in values) and len({v.type for v in values}) == 1:
        return pa.concat_arrays(values)
    if all(isinstance(v, np.ndarray) for v in values):
        return np.concatenate(values)
    out: list = []
    for v in values:
        out.extend(v.to_pylist() if isinstance(v, pa.Array) else list(v))
    return out


def _pick(values: Any, rows: np.ndarray) -> Any:
    if isinstance(values, pa.Array):
        return values.take(pa.array(rows))
    if isinstance(values, np.ndarray):
        return values[rows]
    return [values[i] for i in rows.tolist()]


def _compact(part: MatchColumns) -> MatchColumns:
    """A part whose offsets start at 0 (a view cut by ``before`` may not)."""
    if part.offsets[0] == 0 and not any(o[0] for o, _ in part.labels.values()):
        return part
    offsets, positions = _stack([(part.offsets, part.positions)])
    labels = {name: _stack([pair]) for name, pair in part.labels.items()}
    out = MatchColumns(part.trigger, offsets, positions, labels, part.partition, part.keys, part.measures, part.deadline)
    return _with_order(out, part, slice(None))


def _keys(parts: Sequence[MatchColumns]) -> tuple[np.ndarray | None, Sequence | None]:
    """The parts' partition codes over the chain of their key lists (each worker has its own
    codes; parts of one worker share its list, which only grows), and that chain. No key is
    copied: a code is shifted by the start of its list (``ChainedKeys``)."""
    if parts[0].partition is None:
        return None, None
    lists: list[Sequence] = []
    starts: list[int] = []
    start_of: dict[int, int] = {}  # id of a key list -> its start in the chain
    codes = []
    for p in parts:
        assert p.keys is not None
        start = start_of.get(id(p.keys))
        if start is None:
            start = start_of[id(p.keys)] = starts[-1] + len(lists[-1]) if lists else 0
            lists.append(p.keys)
            starts.append(start)
        codes.append(np.where(p.partition >= 0, p.partition + start, -1))
    return np.concatenate(codes), ChainedKeys(lists, starts)


class ChainedKeys(Sequence):
    """Key lists one after another, read by code (``starts``: each list's first code)."""

    def __init__(self, lists: list[Sequence], starts: list[int]) -> None:
        self.lists = lists
        self.starts = starts

    def __len__(self) -> int:
        return self.starts[-1] + len(self.lists[-1]) if self.lists else 0

    def __getitem__(self, code: Any) -> Any:
        if not isinstance(code, (int, np.integer)):
            raise TypeError("ChainedKeys is read by one code")
        code = int(code)
        if code < 0:
            code += len(self)
        i = bisect.bisect_right(self.starts, code) - 1
        return self.lists[i][code - self.starts[i]]


def _stack(pairs: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """Concatenated (offsets, values) list columns (offsets need not start at 0)."""
    shifts = np.cumsum([0] + [int(o[-1] - o[0]) for o, _ in pairs[:-1]])
    offsets = np.concatenate([np.zeros(1, np.int64)] + [o[1:] - o[0] + s for (o, _), s in zip(pairs, shifts)])
    return offsets, np.concatenate([values[o[0] : o[-1]] for o, values in pairs])


def _take_list(offsets: np.ndarray, values: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    counts = np.diff(offsets)[rows]
    out = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(counts, out=out[1:])
    flat = np.repeat(offsets[:-1][rows] - out[:-1], counts) + np.arange(int(out[-1]), dtype=np.int64)
    return out, values[flat]


def _take(columns: MatchColumns, rows: np.ndarray) -> MatchColumns:
    offsets, positions = _take_list(columns.offsets, columns.positions, rows)
    labels = {name: _take_list(o, v, rows) for name, (o, v) in columns.labels.items()}
    partition = columns.partition[rows] if columns.partition is not None else None
    measures = {name: _pick(values, rows) for name, values in columns.measures.items()}
    deadline = columns.deadline[rows] if columns.deadline is not None else None
    out = MatchColumns(columns.trigger[rows], offsets, positions, labels, partition, columns.keys, measures, deadline)
    return _with_order(out, columns, rows)


class KWayMerge:
    """The workers' streams (each a queue of MatchColumns in trigger order, then ``END`` or an
    exception) merged by trigger, lazily.

    A worker's last chunk ends at trigger t: it has given every complex event triggered
    before t. So every complex event triggered at or before the smallest such t over the
    workers still running is final (a trigger's events all come from the worker that owns its
    event) and is handed out. The merge then waits only on the worker with that smallest t, so
    it never waits on a worker that is itself waiting for room in its queue.

    An error a worker raises (``starts``: the first positions of the batch's pieces) ends the
    run as on one core, which evaluates a piece's events before it reports any of its complex
    events: the others' complex events triggered before the piece of the error are handed
    out first, then the error of the earliest row is raised."""

    def __init__(self, streams: Sequence[queue.Queue], starts: Sequence[int] | None = None) -> None:
        self.streams = list(streams)
        self.starts = list(starts) if starts else None

    def __iter__(self) -> Iterator[MatchColumns]:
        count = len(self.streams)
        pending: list[list[MatchColumns]] = [[] for _ in range(count)]
        frontier = [-1] * count
        running = set(range(count))
        failed: BaseException | None = None
        limit: int | None = None  # with an error: the first trigger not handed out
        while True:
            waiting = min(running, key=lambda w: frontier[w]) if running else None
            bound = frontier[waiting] if waiting is not None else None
            if limit is not None:
                bound = limit - 1 if bound is None else min(bound, limit - 1)
            ready: list[MatchColumns] = []
            for w in range(count):
                kept = []
                for part in pending[w]:
                    done, rest = (part, None) if bound is None else before(part, bound)
                    if done is not None:
                        ready.append(done)
                    if rest is not None:
                        kept.append(rest)
                pending[w] = kept
            if ready:
                yield merge(ready)
            if waiting is None:
                if failed is not None:
                    raise failed
                return
            item = self.streams[waiting].get()
            if item is END:
                running.discard(waiting)
            elif isinstance(item, BaseException):
                if self.starts is None:
                    raise item
                running.discard(waiting)  # (it gave every complex event before its error)
                if failed is None or error_row(item) < error_row(failed):
                    failed = item
                at = self._piece_start(item)
                limit = at if limit is None else min(limit, at)
            elif len(item):
                pending[waiting].append(item)
                frontier[waiting] = int(item.trigger[-1])

    def _piece_start(self, error: BaseException) -> int:
        """The first position of the piece of ``error``'s row (an error without a row: of the
        batch)."""
        assert self.starts is not None
        row = error_row(error)
        at = int(np.searchsorted(np.asarray(self.starts), row, side="right")) - 1
        return self.starts[max(at, 0)]


def error_row(error: BaseException) -> int:
    """The row an error names (-1: none; such an error comes first)."""
    row = getattr(error, "row", None)
    return row if isinstance(row, int) else -1
