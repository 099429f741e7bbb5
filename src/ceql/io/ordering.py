"""Put events in time order (or reject them) when the declarations have a primary_time.

- no quarantine: an event earlier than one already read is bad input ("out of order");
- ``CREATE QUARANTINE { FIXED_TIME d ... }`` (or BOUNDED_TIME d): events are held back and
  released in (time, arrival) order once the largest time seen is d past them; an event older
  than what was already released is bad input ("late");
- ``--sort``: the whole input is sorted by time first (it must fit in memory).
An event whose type has no primary_time keeps its place behind the latest event seen before it.
Times are int64 nanoseconds, compared exactly; a rejection shows them as the input gave them
(``times``: how the input gives each time column) and carries the row's values as its input
text. Stream positions are indexes in the resulting order; each chunk keeps the input line of
every event so that outputs can point back to it. The same code orders events on Spark (in one
task), so both engines reject the same events.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ceql.compile.catalog import EVENT_TYPE
from ceql.compile.output_schema import declared_unit, time_type
from ceql.io.errors import RejectSink, RowError
from ceql.io.formats.base import row_text
from ceql.io.readers import Chunk
from ceql.lang.schema import Schema

NO_TIME = -(2**63)  # the time before any other (no event seen yet)


def event_times(table: pa.Table, time_columns: dict[str, str]) -> tuple[np.ndarray, np.ndarray]:
    """The primary_time of every row as int64 ns, and which rows have one (an event type may
    lack a primary_time, or name as its time a column that is a plain int elsewhere)."""
    n = table.num_rows
    times = np.zeros(n, dtype=np.int64)
    has = np.zeros(n, dtype=bool)
    by_column: dict[str, list[str]] = {}
    for type_name, column in time_columns.items():
        by_column.setdefault(column, []).append(type_name)
    types = table.column(EVENT_TYPE)
    for column, type_names in by_column.items():
        values = table.column(column)
        rows = pc.and_(pc.is_in(types, value_set=pa.array(type_names, pa.string())), pc.is_valid(values))
        mask = np.asarray(pc.fill_null(rows, False).to_numpy(zero_copy_only=False), dtype=bool)
        numbers = pc.fill_null(values, 0).to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
        times[mask] = numbers[mask]
        has |= mask
    return times, has


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
    lines = np.array([int(chunks[c].lines[r]) for c, r in picks], dtype=np.int64)
    sources = np.array([chunks[c].source_of(r) for c, r in picks], dtype=object)
    return Chunk(table.take(pa.array(take)), str(sources[0]), lines, sources)


class Orderer:
    """Applies the ordering rules to a sequence of chunks; rejected events go to ``policy``."""

    def __init__(
        self, schema: Schema, policy: RejectSink, sort: bool = False, times: Mapping[str, str] | None = None
    ) -> None:
        self.policy = policy
        self.schema = schema
        self.times = times if times is not None else {}  # time column -> how the input gives it
        self.time_columns = {
            name: decl.time_attribute for name, decl in schema.event_types.items() if decl.time_attribute
        }
        self.lateness = schema.allowed_lateness_ns()
        bounded = [q.span_ns for q in schema.quarantines if q.kind == "BOUNDED_TIME" and q.span_ns]
        if self.lateness is None and bounded:
            self.lateness = max(bounded)
        self.sort = sort
        self.max_seen = NO_TIME  # the largest time seen
        self.released = NO_TIME  # the time of the last event released (quarantine)

    @property
    def reorders(self) -> bool:
        """Whether events may leave in another order than they came."""
        return bool(self.time_columns) and (self.sort or self.lateness is not None)

    def order(self, chunks: Iterator[Chunk]) -> Iterator[Chunk]:
        if not self.time_columns:
            yield from chunks
        elif self.sort:
            yield from self._sorted(chunks)
        elif self.lateness is None:
            yield from self._strict(chunks)
        else:
            yield from self._quarantine(chunks)

    def shown(self, event_type: str, ns: int) -> Any:
        """A time of an event type's primary_time column, as the input gives that column."""
        column = self.time_columns.get(event_type, "")
        return time_type(self.times.get(column), declared_unit(self.schema, column)).text(ns)

    def _text(self, chunk: Chunk, index: int) -> str:
        table = chunk.table
        return self.text({name: table.column(name)[index].as_py() for name in table.column_names})

    def text(self, values: Mapping[str, Any]) -> str:
        """A rejected event's values (a typed row) as the input text of its dead-letter record:
        JSON of its non-null values, its time as the input gave it."""
        shown = dict(values)
        column = self.time_columns.get(str(values.get(EVENT_TYPE)))
        if column is not None and shown.get(column) is not None:
            shown[column] = self.shown(str(values[EVENT_TYPE]), int(shown[column]))
        return row_text(shown)

    def _reject(self, chunk: Chunk, indexes: np.ndarray, reason) -> Chunk | None:
        for index in indexes:
            self.policy.reject(
                RowError(
                    chunk.source_of(int(index)),
                    int(chunk.lines[index]),
                    reason(int(index)),
                    self._text(chunk, int(index)),
                )
            )
        keep = np.setdiff1d(np.arange(chunk.table.num_rows), indexes)
        if len(keep) == 0:
            return None
        sources = chunk.sources[keep] if chunk.sources is not None else None
        return Chunk(chunk.table.take(pa.array(keep)), chunk.source, chunk.lines[keep], sources)

    def _strict(self, chunks: Iterator[Chunk]) -> Iterator[Chunk]:
        for chunk in chunks:
            times, has = event_times(chunk.table, self.time_columns)
            known = np.where(has, times, NO_TIME)
            running = np.maximum.accumulate(np.concatenate([[self.max_seen], known]))
            previous = running[:-1]
            bad = np.nonzero(has & (times < previous))[0]
            self.max_seen = int(running[-1])
            if len(bad):
                types = chunk.table.column(EVENT_TYPE)
                chunk = self._reject(
                    chunk,
                    bad,
                    lambda i, times=times, previous=previous, types=types: (
                        f"out of order: time {self.shown(types[i].as_py(), int(times[i]))} after "
                        f"{self.shown(types[i].as_py(), int(previous[i]))} (declare CREATE "
                        "QUARANTINE to reorder late events, or use --sort)"
                    ),
                )
            if chunk is not None:
                yield chunk

    def _quarantine(self, chunks: Iterator[Chunk]) -> Iterator[Chunk]:
        """Hold events back and release them in (time, arrival) order once the largest time
        seen is the allowed lateness past them; an event older than one already released is
        late. Exact event by event (a heap), whatever the chunking."""
        lateness = int(self.lateness or 0)
        heap: list[tuple[int, int, int, int]] = []
        chunks_by_id: dict[int, Chunk] = {}
        sequence = 0
        for chunk_id, chunk in enumerate(chunks):
            chunks_by_id[chunk_id] = chunk
            times, has = event_times(chunk.table, self.time_columns)
            released: list[tuple[int, int]] = []
            late: list[tuple[int, int, int]] = []
            for index, (time, timed) in enumerate(zip(times.tolist(), has.tolist())):
                if not timed:  # no time: keeps its place behind the latest event seen
                    time = self.max_seen
                if time < self.released:
                    late.append((index, time, self.released))
                    continue
                heapq.heappush(heap, (time, sequence, chunk_id, index))
                sequence += 1
                if time > self.max_seen:
                    self.max_seen = time
                watermark = self.max_seen - lateness
                while heap and heap[0][0] <= watermark:
                    time_out, _, source_id, row = heapq.heappop(heap)
                    self.released = time_out
                    released.append((source_id, row))
            for index, time, before in late:
                event_type = chunk.table.column(EVENT_TYPE)[index].as_py()
                self.policy.reject(
                    RowError(
                        chunk.source_of(index),
                        int(chunk.lines[index]),
                        f"late: time {self.shown(event_type, time)} is older than events already "
                        f"released ({self.shown(event_type, before)}); the allowed lateness is {lateness} ns",
                        self._text(chunk, index),
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

    def _sorted(self, chunks: Iterator[Chunk]) -> Iterator[Chunk]:
        """All events, stably sorted by time (events without one right behind the latest time
        seen before them)."""
        held = list(chunks)
        if not held:
            return
        timed = [event_times(chunk.table, self.time_columns) for chunk in held]
        times = np.concatenate([t for t, _ in timed])
        has = np.concatenate([h for _, h in timed])
        running = np.maximum.accumulate(np.where(has, times, NO_TIME))
        keys = np.where(has, times, running)
        order = np.argsort(keys, kind="stable")
        table = pa.concat_tables([c.table for c in held])
        lines = np.concatenate([c.lines for c in held])
        sources = np.concatenate(
            [
                c.sources if c.sources is not None else np.full(c.table.num_rows, c.source, dtype=object)
                for c in held
            ]
        )
        yield Chunk(table.take(pa.array(order)), str(sources[order[0]]), lines[order], sources[order])
