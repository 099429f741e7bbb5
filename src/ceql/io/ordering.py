"""Put events in time order (or reject them) when the declarations have a primary_time.

- no quarantine: an event earlier than one already read is bad input ("out of order");
- ``CREATE QUARANTINE { FIXED_TIME d ... }`` (or BOUNDED_TIME d): events are held back and
  released in (time, arrival) order once the largest time seen is d past them; an event older
  than what was already released is bad input ("late");
- ``--sort``: the whole input is sorted by time first (it must fit in memory).
Stream positions are indexes in the resulting order; each chunk keeps the input row of every
event so that outputs can point back to the input.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ceql.io.errors import ErrorPolicy, RowError
from ceql.io.readers import Chunk
from ceql.lang.schema import Schema


def time_column(table: pa.Table, time_attributes: dict[str, str]) -> np.ndarray:
    """The primary_time of every row (NaN for event types without one)."""
    names = set(time_attributes.values())
    if len(names) == 1:
        (name,) = names
        types = table.column("event_type")
        values = pc.cast(table.column(name), pa.float64())
        if len(time_attributes) < len(set(types.to_pylist())):
            has = pc.is_in(types, value_set=pa.array(list(time_attributes)))
            values = pc.if_else(has, values, None)
        return pc.fill_null(values, np.nan).to_numpy(zero_copy_only=False)
    out = np.full(table.num_rows, np.nan)
    types = np.asarray(table.column("event_type").to_pylist(), dtype=object)
    for type_name, attribute in time_attributes.items():
        mask = types == type_name
        if mask.any():
            column = pc.fill_null(pc.cast(table.column(attribute), pa.float64()), np.nan).to_numpy(
                zero_copy_only=False
            )
            out[mask] = column[mask]
    return out


def _gather(chunks: dict[int, Chunk], picks: list[tuple[int, int]]) -> Chunk | None:
    """One chunk with the given (chunk id, row) events, in that order."""
    if not picks:
        return None
    ids = sorted({c for c, _ in picks})
    offsets, tables, start = {}, [], 0
    for chunk_id in ids:
        offsets[chunk_id] = start
        tables.append(chunks[chunk_id].table)
        start += chunks[chunk_id].table.num_rows
    table = pa.concat_tables(tables) if len(tables) > 1 else tables[0]
    take = [offsets[c] + r for c, r in picks]
    rows = np.array([int(chunks[c].rows[r]) for c, r in picks], dtype=np.int64)
    sources = np.array([chunks[c].source_of(r) for c, r in picks], dtype=object)
    return Chunk(table.take(pa.array(take)), str(sources[0]), rows, sources)


class Orderer:
    """Applies the ordering rules to a sequence of chunks."""

    def __init__(self, schema: Schema, policy: ErrorPolicy, sort: bool = False) -> None:
        self.policy = policy
        self.time_attributes = {
            name: decl.time_attribute for name, decl in schema.event_types.items() if decl.time_attribute
        }
        self.lateness = schema.allowed_lateness_ns()
        bounded = [q.span_ns for q in schema.quarantines if q.kind == "BOUNDED_TIME" and q.span_ns]
        if self.lateness is None and bounded:
            self.lateness = max(bounded)
        self.sort = sort
        self.max_seen = -np.inf
        self.released = -np.inf

    def order(self, chunks: Iterator[Chunk]) -> Iterator[Chunk]:
        if not self.time_attributes:
            yield from chunks
        elif self.sort:
            yield from self._sorted(chunks)
        elif self.lateness is None:
            yield from self._strict(chunks)
        else:
            yield from self._quarantine(chunks)

    def _reject(self, chunk: Chunk, indexes: np.ndarray, reason) -> Chunk | None:
        for index in indexes:
            self.policy.reject(
                RowError(chunk.source_of(int(index)), int(chunk.rows[index]), None, reason(int(index)))
            )
        keep = np.setdiff1d(np.arange(chunk.table.num_rows), indexes)
        if len(keep) == 0:
            return None
        sources = chunk.sources[keep] if chunk.sources is not None else None
        return Chunk(chunk.table.take(pa.array(keep)), chunk.source, chunk.rows[keep], sources)

    def _strict(self, chunks: Iterator[Chunk]) -> Iterator[Chunk]:
        for chunk in chunks:
            times = time_column(chunk.table, self.time_attributes)
            known = np.where(np.isnan(times), -np.inf, times)
            running = np.maximum.accumulate(np.concatenate([[self.max_seen], known]))
            previous = running[:-1]
            bad = np.nonzero(known < previous)[0]
            self.max_seen = running[-1]
            if len(bad):
                chunk = self._reject(
                    chunk,
                    bad,
                    lambda i, times=times, previous=previous: (
                        f"out of order: time {times[i]:.0f} after {previous[i]:.0f} (declare CREATE QUARANTINE "
                        "to reorder late events, or use --sort)"
                    ),
                )
            if chunk is not None:
                yield chunk

    def _quarantine(self, chunks: Iterator[Chunk]) -> Iterator[Chunk]:
        """Hold events back and release them in (time, arrival) order once the largest time
        seen is the allowed lateness past them; an event older than one already released is
        late. Exact event by event (a heap), whatever the chunking."""
        heap: list[tuple[float, int, int, int]] = []
        chunks_by_id: dict[int, Chunk] = {}
        sequence = 0
        for chunk_id, chunk in enumerate(chunks):
            chunks_by_id[chunk_id] = chunk
            times = time_column(chunk.table, self.time_attributes)
            released: list[tuple[int, int]] = []
            late: list[int] = []
            for index, time in enumerate(times.tolist()):
                if time != time:  # no time: keeps its place behind the latest event seen
                    time = self.max_seen if self.max_seen > -np.inf else 0.0
                if time < self.released:
                    late.append(index)
                    continue
                heapq.heappush(heap, (time, sequence, chunk_id, index))
                sequence += 1
                if time > self.max_seen:
                    self.max_seen = time
                watermark = self.max_seen - self.lateness
                while heap and heap[0][0] <= watermark:
                    time_out, _, source_id, row = heapq.heappop(heap)
                    self.released = time_out
                    released.append((source_id, row))
            for index in late:
                self.policy.reject(
                    RowError(
                        chunk.source_of(index),
                        int(chunk.rows[index]),
                        None,
                        f"late: time {times[index]:.0f} is older than events already released ({self.released:.0f}); "
                        f"allowed lateness is {self.lateness} ns",
                    )
                )
            ready = _gather(chunks_by_id, released)
            live = {c for _, _, c, _ in heap} | {chunk_id}
            for old in [c for c in chunks_by_id if c not in live]:
                del chunks_by_id[old]
            if ready is not None:
                yield ready
        rest = []
        while heap:
            time_out, _, source_id, row = heapq.heappop(heap)
            self.released = time_out
            rest.append((source_id, row))
        ready = _gather(chunks_by_id, rest)
        if ready is not None:
            yield ready

    def _release(self, held: list[tuple[Chunk, np.ndarray]], watermark: float) -> Chunk | None:
        if not held:
            return None
        table = pa.concat_tables([c.table for c, _ in held])
        times = np.concatenate([t for _, t in held])
        rows = np.concatenate([c.rows for c, _ in held])
        sources = np.concatenate(
            [
                c.sources if c.sources is not None else np.full(c.table.num_rows, c.source, dtype=object)
                for c, _ in held
            ]
        )
        order = np.argsort(times, kind="stable")  # ties keep arrival order
        cut = int(np.searchsorted(times[order], watermark, side="right"))
        ready, rest = order[:cut], order[cut:]
        held.clear()
        if len(rest):
            held.append((Chunk(table.take(pa.array(rest)), "", rows[rest], sources[rest]), times[rest]))
        if cut == 0:
            return None
        self.released = float(times[ready[-1]])
        return Chunk(table.take(pa.array(ready)), str(sources[ready[0]]), rows[ready], sources[ready])

    def _sorted(self, chunks: Iterator[Chunk]) -> Iterator[Chunk]:
        held = [(chunk, time_column(chunk.table, self.time_attributes)) for chunk in chunks]
        self.lateness = 0
        result = self._release(held, np.inf)
        if result is not None:
            yield result
