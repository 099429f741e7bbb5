"""CONSUME BY with checks per complex event, without a Python call per trigger (issue 40).

With CONSUME BY, an output at trigger ``t`` drops every partial match that has read an event
(of the whole stream with ``ANY``, of ``t``'s sub-stream with ``PARTITION``); runs that have
read nothing yet survive, so the complex events found later are exactly those the same pattern
finds *without* CONSUME BY whose first event comes after ``t``. When the per-complex-event
checks (postfilter.py) decide which complex events a trigger outputs, the kernel used to stop
at every trigger to ask Python before consuming. Instead, when the pattern has few candidates
(``postfilter.few_candidates``: enumerating them all costs what the twin query costs), the
kernel runs without CONSUME BY and ``Consumed`` applies it afterwards, column-wise: a complex
event that passes the checks is kept iff its first event comes after the last consumption of
its scope, and a trigger that keeps one consumes its scope. The state is one position per
scope (the whole stream, or each partition code), saved in the kernel state's consumed fields.
NOT FOLLOWED BY on the kernel (absence.py) consumes with the same ``Consumed`` (``keep``): the
complex events due at one trigger may be of several partitions, so the scope is per row.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ceql.compile.plan import Plan
from ceql.runtime.kernel.postfilter import few_candidates

NEVER = -1  # no consumption yet: every position is after it


def emulated(plan: Plan, checked: bool) -> bool:
    """Whether CONSUME BY runs after the kernel (see the module docstring): the checks decide
    the output, and the pattern without CONSUME BY enumerates few candidates."""
    return checked and plan.consume != "NONE" and few_candidates(plan.formula, plan) is not None


class Consumed:
    """The last consumption position per scope, and the filter that applies it."""

    def __init__(self, per_partition: bool) -> None:
        self.per_partition = per_partition  # CONSUME BY PARTITION: one scope per partition code
        self.last = np.full(16, NEVER, dtype=np.int64)

    def apply(self, trigger: np.ndarray, partition: np.ndarray, offsets: np.ndarray, positions: np.ndarray,
              keep: np.ndarray) -> np.ndarray:  # fmt: skip
        """``keep`` (the checks' verdict; complex events in trigger order, a trigger's all in one
        chunk) restricted to the complex events that start after their scope's last
        consumption; the scopes' consumption positions move on."""
        offsets = np.asarray(offsets, dtype=np.int64)
        starts = offsets[:-1]
        # (A complex event without events, NOT's, starts after any consumption.)
        first = np.full(len(starts), np.iinfo(np.int64).max, dtype=np.int64)
        events = offsets[1:] > starts
        first[events] = np.asarray(positions, dtype=np.int64)[starts[events]]
        return self.keep(trigger, partition, first, keep)

    def keep(self, trigger: np.ndarray, partition: np.ndarray, first: np.ndarray, keep: np.ndarray | None = None) -> np.ndarray:
        """``keep`` (all kept when None) restricted to the complex events (rows in trigger order,
        a trigger's all in one call) whose ``first`` position comes after their scope's last
        consumption; each trigger that keeps a row consumes the scopes of the rows it keeps
        (several partitions at one trigger: NOT FOLLOWED BY's deadlines)."""
        n = len(trigger)
        out = np.ones(n, dtype=np.bool_) if keep is None else np.ascontiguousarray(keep, dtype=np.bool_).copy()
        if not n:
            return out
        scope = np.ascontiguousarray(partition, dtype=np.int64) if self.per_partition else np.zeros(n, np.int64)
        top = int(scope.max()) + 1
        if top > len(self.last):
            grown = np.full(max(top, 2 * len(self.last)), NEVER, dtype=np.int64)
            grown[: len(self.last)] = self.last
            self.last = grown
        _consume(np.ascontiguousarray(trigger, dtype=np.int64), scope, np.ascontiguousarray(first, dtype=np.int64), out, self.last)
        return out

    def markers(self) -> tuple[np.ndarray, np.ndarray]:
        """(The scopes consumed so far, their last consumption positions), by scope."""
        codes = np.flatnonzero(self.last != NEVER).astype(np.int64)
        return codes, self.last[codes]

    def export(self, codes: np.ndarray) -> tuple[int, np.ndarray]:
        """(The whole stream's last consumption, that of each partition code in ``codes``.)
        Partitions without live runs need none: all they find later starts after it."""
        if not self.per_partition:
            return int(self.last[0]), np.full(len(codes), NEVER, dtype=np.int64)
        codes = np.asarray(codes, dtype=np.int64)
        inside = codes < len(self.last)
        values = np.full(len(codes), NEVER, dtype=np.int64)
        values[inside] = self.last[codes[inside]]
        return int(values.max()) if len(values) else NEVER, values

    def load(self, consumed_at: int, codes: np.ndarray, values: np.ndarray) -> None:
        """Restore what ``export`` gave (``codes``: the live partitions' codes)."""
        codes = np.asarray(codes, dtype=np.int64)
        size = max(16, int(codes.max()) + 1 if len(codes) else 0)
        self.last = np.full(size, NEVER, dtype=np.int64)
        if self.per_partition:
            self.last[codes] = np.asarray(values, dtype=np.int64)
        else:
            self.last[0] = consumed_at


def clear_markers(kernel) -> None:
    """Reset a ``KernelEvaluator``'s own consumption markers after a state load (it runs
    without CONSUME BY, and a marker above a partition's would drop that partition's runs)."""
    from ceql.runtime.kernel import compiled as k

    kernel.st[k.S_CONSUMED_AT] = NEVER
    kernel.slot_info[:, k.P_CONSUMED] = NEVER


@njit(cache=True, nogil=True)
def _consume(trigger, scope, first, keep, last):  # pragma: no cover - compiled
    """Per trigger (consecutive rows): drop the kept rows that start at or before their
    scope's last consumption; then each scope of a row left is consumed at the trigger (after
    the trigger's rows are all judged: one trigger does not consume against itself)."""
    n = len(trigger)
    i = 0
    while i < n:
        j = i
        while j < n and trigger[j] == trigger[i]:
            if keep[j] and first[j] <= last[scope[j]]:
                keep[j] = False
            j += 1
        for r in range(i, j):
            if keep[r]:
                last[scope[r]] = trigger[i]
        i = j
