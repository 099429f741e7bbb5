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
        held: list[tuple[Chunk, np.ndarray]] = []
        for chunk in chunks:
            times = time_column(chunk.table, self.time_attributes)
            times = np.where(np.isnan(times), self.max_seen, times)  # untimed events keep their place
            late = np.nonzero(times < self.released)[0]
            if len(late):
                released = self.released
                chunk = self._reject(
                    chunk,
                    late,
                    lambda i, times=times, released=released: (
                        f"late: time {times[i]:.0f} is older than events already released ({released:.0f}); "
                        f"allowed lateness is {self.lateness} ns"
                    ),
                )
                if chunk is None:
                    continue
                times = np.delete(times, late)
            held.append((chunk, times))
            self.max_seen = max(self.max_seen, float(times.max()) if len(times) else self.max_seen)
            ready = self._release(held, self.max_seen - self.lateness)
            if ready is not None:
                yield ready
        final = self._release(held, np.inf)
        if final is not None:
            yield final

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
