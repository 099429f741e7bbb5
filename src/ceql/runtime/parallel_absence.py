"""NOT FOLLOWED BY split by key across workers (``compile.plan.split_keys``).

Each worker runs ``SplitAbsence``, the one-core ``KernelAbsence`` over the sub-stream of its
keys (every event at its position in the whole stream). A key's complex events, their
cancellations and deadlines are all in its sub-stream; only where a deadline passes depends on
the whole stream: at the first event at or past it of a type the query names (with ``n EVENTS``,
the event at that position). So each worker also reads, per piece of the input, the window
measures of those events of the whole piece (the *clock*, found once per piece when it is
prepared) and reports a complex event at the same trigger as one core.

Many keys' complex events may fall due at one event, so a trigger no longer belongs to one
worker. One core orders those of one trigger by (partition key value, deadline, the complex
event's events: docs/semantics.md 5.2). Each worker therefore labels its matches with a rank:
the key's value (PARTITION BY, a key of one attribute), or, for the equality form (a one-event
f, no partition), 0 and a tie, the position of f's event, after the deadline. The merge
(``parallel_merge.merge``) sorts by (trigger, rank, deadline, tie), stably: the one-core order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import pyarrow as pa

from ceql.compile.plan import Plan, split_keys
from ceql.runtime.arrow import MatchColumns
from ceql.runtime.kernel.absence import KernelAbsence, absence_unsupported, own_plan
from ceql.runtime.kernel.engine import KernelMatches
from ceql.runtime.kernel.output import Projection


def absence_split(plan: Plan) -> tuple[dict[str, tuple[str, ...]] | None, str]:
    """How workers split a NOT FOLLOWED BY plan: (event type -> key attributes, how), or
    (None, why it runs on one core)."""
    reason = absence_unsupported(plan)
    if reason is not None:
        return None, f"the compiled kernel does not evaluate {reason}"
    routing = split_keys(plan)
    if routing is None:
        return None, (
            "NOT FOLLOWED BY splits only by a PARTITION BY or an equality linking g to a one-event f, "
            "with the strategy ALL, no LIMIT and no CONSUME BY (compile.plan.split_keys)"
        )
    if plan.partition_groups:
        # One core orders the matches due at one event by key value: the merge compares one
        # value per match (a key of one attribute in one key list).
        if len(plan.partition_groups) != 1 or len(plan.partition_groups[0]) != 1:
            return None, (
                "NOT FOLLOWED BY with a key of several attributes or key lists: one core orders the "
                "matches due at one event by key, which the workers' merge compares as one value"
            )
        keys = ", ".join(plan.partition_groups[0])
        return routing, f"by the partition key [{keys}]: each worker waits for the deadlines of its keys"
    if Projection.from_plan(own_plan(plan)).merges:
        return None, (
            "NOT FOLLOWED BY split by an equality with a projection other than *: one core merges equal "
            "projections of different keys due at one event"
        )
    keys = ", ".join(f"{name}.{'/'.join(attributes)}" for name, attributes in routing.items())
    return routing, f"by the equality's values ({keys}): each worker waits for the deadlines of its values"


class SplitAbsence(KernelAbsence):
    """One worker's NOT FOLLOWED BY (see the module docstring): its sub-stream, the clock of
    the whole stream, and a rank per match for the merge."""

    def __init__(self, plan: Plan) -> None:
        super().__init__(plan)
        self._values: np.ndarray = np.zeros(0)  # own key code -> the key's value (one attribute)

    def process_part(
        self,
        table: pa.Table | None,
        positions: np.ndarray | None,
        clock: Callable[[], tuple[np.ndarray, np.ndarray]],
        end: int,
        types: np.ndarray | None = None,
    ) -> Iterator[KernelMatches]:
        """This worker's rows of a group of pieces (``table`` at ``positions``; None: none;
        ``types``: their type indexes in the cancelling plan's, when known), then the complex
        events whose deadline the group's clock passes (``clock()``: the positions and window
        measures of the events of the whole group that pass deadlines); ``end``: the position
        after the group."""
        self._flush()
        if table is not None and table.num_rows:
            assert positions is not None
            self.step(table, positions, types)
        self.position = end
        yield from self.pass_clock(*clock())

    def columns(self, chunk: KernelMatches) -> MatchColumns:
        """As one core, with the merge's rank and tie per match (module docstring)."""
        out = super().columns(chunk)
        n = len(out)
        if self.own.keys is not None:
            local = chunk.partition if out.partition is None else out.partition
            if len(local) != n:  # (a projection merged: its partition codes are reported)
                raise AssertionError("NOT FOLLOWED BY split: a merged projection without partition codes")
            keys = self.own.keys.keys
            if len(self._values) != len(keys):  # (codes only grow: new keys at the end)
                self._values = np.asarray([key[0] for key in keys])
            out.rank = self._values[local]
            out.tie = np.zeros(n, dtype=np.int64)
        else:  # the equality form, projection *: one row per complex event, f of one event
            assert n == len(chunk)
            out.rank = np.zeros(n, dtype=np.int64)
            out.tie = chunk.positions[chunk.offsets[:-1]]
        return out


def clock_of(types: np.ndarray, measures: np.ndarray, missing: np.ndarray, first: int) -> tuple[np.ndarray, np.ndarray]:
    """A piece's clock (positions and window measures of the events that pass deadlines: of a
    type the query names, with a measure), from the cancelling plan's types of its rows."""
    rows = np.flatnonzero(~missing & (types >= 0))
    return rows.astype(np.int64) + first, measures[rows]


def merged_finish(outputs: list[list[MatchColumns]]) -> list[MatchColumns]:
    """The workers' matches at the end of the input, merged (one trigger: the end)."""
    from ceql.runtime.parallel_merge import merge

    parts = [columns for output in outputs for columns in output if len(columns)]
    return [merge(parts)] if parts else []


__all__ = ["SplitAbsence", "absence_split", "clock_of", "merged_finish"]
