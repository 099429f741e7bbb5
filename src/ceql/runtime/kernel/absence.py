"""``WHERE f NOT FOLLOWED BY g ... WITHIN w`` on the compiled kernel (docs/semantics.md, 5.2).

Two compiled kernels read each batch: one runs f (the query's plan with every complex event
kept: strategy ALL, no CONSUME BY, no LIMIT; those apply among the complex events due at one
trigger), the other ``(f AS mark) ; g`` (``plan.absence``), whose complex events name, by their
marked part, the complex events of f that g cancels. The complex events of f waiting for their
deadline are plain arrays (``Waiting``): an exact identity per complex event (its positions and
public label sets, as an int64 when it has one event, else an interned id), its deadline
``d = m(first event) + w`` (int64), its partition code, and its events.

Per batch, in this order (the Python path's per-event order gives the same result):

1. the new complex events of f start waiting (one per identity);
2. the marked parts of the cancelling complex events stop waiting. A cancelling complex event
   ends at an event k with ``m(k) - m(first) < w``, that is before the deadline passes, and
   after its f part completed: so cancelling all of a batch's at once is exact;
3. every complex event whose deadline this batch passes is reported at its trigger: the first
   event at or past the deadline (with ``n EVENTS``, the event at ``first + n``; otherwise an
   event of a type the query names), found by binary search over the batch's measures.

``advance(time)`` reports the deadlines at or before ``time`` (trigger: the next position),
``finish()`` all of them (trigger: the end of the input). Among the complex events due at one
trigger and partition key the strategy, LIMIT, the projection and the measures apply as for any
trigger, column-wise. The state is the two kernels' states and the waiting arrays, in one
sealed envelope (``runtime/state.py``) with every field checked against the query.
"""

from __future__ import annotations

import base64
import copy
import heapq
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa

from ceql.compile.plan import Plan
from ceql.errors import EventError
from ceql.lang import ast
from ceql.lang.ast import ABSENCE_MARK
from ceql.match import partition_order
from ceql.runtime.absence import deadline_error
from ceql.runtime.arrow import MatchColumns
from ceql.runtime.ingest import out_of_order
from ceql.runtime.kernel.compiled import SELECT_LAST, SELECT_MAX, SELECT_NEXT, select_supports
from ceql.runtime.kernel.consume import Consumed
from ceql.runtime.kernel.engine import KernelMatches
from ceql.runtime.kernel.output import limit_projected, project
from ceql.runtime.kernel.postfilter import first_per_trigger, post_filter
from ceql.runtime.kernel.runner import PlanKernel, unsupported

INT64_MAX = (1 << 63) - 1
#: An identity of one event: position << LABEL_BITS | canonical label-set id.
LABEL_BITS = 20
MAX_SINGLE_POSITION = 1 << (62 - LABEL_BITS)
#: The identity of a complex event of several events that nothing waits for (interned ids are
#: -1, -2, ...; one-event identities are >= 0).
UNKNOWN = -(1 << 62)
FORMAT = "ceql-absence-kernel-state"
VERSION = 1
#: The waiting arrays of a saved state (int64, base64 in the JSON body).
_ARRAYS = ("deadline", "first", "part", "length", "pos", "lab", "recent_pos", "recent_m")
_SELECT = {"NEXT": SELECT_NEXT, "LAST": SELECT_LAST, "MAX": SELECT_MAX}


def own_plan(plan: Plan) -> Plan:
    """The plan of f alone, every complex event kept (strategy, CONSUME BY and LIMIT apply
    among the complex events due at one trigger, not where f completes)."""
    own = copy.copy(plan)
    own.__dict__.pop("_kernel_post_filter", None)  # (postfilter.py caches its decision on the plan)
    own.absence = None
    own.strategy = "ALL"
    own.consume = "NONE"
    own.limit = None
    return own


def cancelling_plan(cancel: Plan) -> Plan:
    """The plan of ``(f AS mark) ; g`` the cancelling kernel runs. When f and g are one event
    each, of types apart, and nothing is checked per complex event, a g event cancels every
    f event still in its window (and sub-stream), which never waits again: CONSUME BY
    PARTITION then drops their runs at once, so the next g enumerates only the f events that
    came since (not every one in the window again, as ``A ; B`` would)."""
    formula = cancel.formula
    while isinstance(formula, ast.Filter):  # (one-event conditions x[p]: no registers, no checks)
        formula = formula.body
    if not (
        isinstance(formula, ast.Sequence)
        and len(formula.parts) == 2
        and cancel.consume == "NONE"
        and cancel.strategy == "ALL"
        and cancel.limit is None
        and cancel.registers is None
        and post_filter(cancel) is None
    ):
        return cancel
    kinds = [_one_event(part) for part in formula.parts]
    if None in kinds or kinds[0] == kinds[1]:
        return cancel
    consuming = copy.copy(cancel)
    consuming.__dict__.pop("_kernel_post_filter", None)
    consuming.consume = "PARTITION"
    return consuming


def _one_event(formula: ast.Formula) -> str | None:
    """The event type of a formula that is one event (labelled or filtered), else None."""
    while isinstance(formula, (ast.Label, ast.Filter)):
        formula = formula.body
    return formula.name if isinstance(formula, ast.EventType) else None


def absence_unsupported(plan: Plan) -> str | None:
    """Why the kernel cannot evaluate this NOT FOLLOWED BY plan, or None if it can."""
    assert plan.absence is not None
    if plan.window_kind is None or plan.window is None:  # (the language refuses it: no deadline)
        return "NOT FOLLOWED BY without a window"
    own = own_plan(plan)
    reason = unsupported(own) or unsupported(plan.absence)
    if reason is not None:
        return f"NOT FOLLOWED BY over {reason}"
    return None


class _OwnKernel(PlanKernel):
    """f's kernel: it also keeps the values of the events of complex events still waiting
    (measures read them when the deadline passes, after the window left them behind)."""

    waiting: Any = None
    #: The cancelling kernel, when its window measures are f's for every type f names
    #: (``KernelAbsence._share``): each batch's measures are read once, by it.
    clock_of: Any = None

    def _measures(self, table: pa.Table, types: np.ndarray, base: int, positions: np.ndarray | None = None) -> tuple:
        # (``KernelAbsence.step`` runs the cancelling kernel first, over the same rows.)
        clock = self.clock_of.clock if self.clock_of is not None else None
        if clock is not None and len(clock[1]) == table.num_rows:
            # (What PlanKernel._measures computes from the one time column, for f's types.)
            timed = np.isin(types, self._time_types)
            return np.where(timed, clock[1], 0), np.where(timed, clock[2], True)
        return super()._measures(table, types, base, positions)

    def _check_order(self, types, measures, missing, base, positions=None) -> None:  # type: ignore[no-untyped-def]
        if self.clock_of is not None and positions is None:
            # The cancelling kernel checked the same times, and more, before: nothing to add.
            self.last_time = self.clock_of.last_time
            return
        super()._check_order(types, measures, missing, base, positions)

    def _prune_kept(self) -> None:
        """Deferred: ``KernelAbsence`` prunes once the batch's complex events wait."""

    def prune_now(self) -> None:
        kept = self.kept
        if kept is not None and kept.should_prune():
            kept.prune(self._in_use())

    def _in_use(self) -> np.ndarray:
        # The plan's own positions in use (the join's entries, a chain's carry or the
        # automaton's nodes), then the complex events waiting for their deadline.
        live = super()._in_use()
        if self.waiting is not None and len(self.waiting.pos):
            live = np.union1d(live, self.waiting.pos)
        return live


class _ClockKernel(PlanKernel):
    """The cancelling kernel: it keeps each batch's event types and window measures, which
    also say where deadlines pass (its plan names every event type of the query)."""

    clock: Any = None

    def _measures(self, table: pa.Table, types: np.ndarray, base: int, positions: np.ndarray | None = None) -> tuple:
        found = super()._measures(table, types, base, positions)
        self.clock = (types, *found)
        return found


class Waiting:
    """The complex events of f waiting for their deadline, as parallel arrays (one row per
    complex event; ``pos``/``lab`` hold the events of every row, ``length`` per row)."""

    def __init__(self) -> None:
        empty = np.zeros(0, dtype=np.int64)
        self.key = empty
        self.deadline = empty
        self.first = empty
        self.part = empty
        self.seq = empty
        self.length = empty
        self.pos = empty
        self.lab = empty
        self.sequence = 0  # rows ever added (the order of rows with equal deadlines)

    def __len__(self) -> int:
        return len(self.key)

    def starts(self) -> np.ndarray:
        out = np.zeros(len(self.length) + 1, dtype=np.int64)
        np.cumsum(self.length, out=out[1:])
        return out

    def append(self, key, deadline, first, part, length, pos, lab) -> None:
        n = len(key)
        self.key = np.concatenate([self.key, key])
        self.deadline = np.concatenate([self.deadline, deadline])
        self.first = np.concatenate([self.first, first])
        self.part = np.concatenate([self.part, part])
        self.seq = np.concatenate([self.seq, np.arange(self.sequence, self.sequence + n, dtype=np.int64)])
        self.sequence += n
        self.length = np.concatenate([self.length, length])
        self.pos = np.concatenate([self.pos, pos])
        self.lab = np.concatenate([self.lab, lab])

    def keep(self, rows: np.ndarray) -> None:
        """Keep only ``rows`` (a bool mask)."""
        events = np.repeat(rows, self.length)
        self.key, self.deadline, self.first = self.key[rows], self.deadline[rows], self.first[rows]
        self.part, self.seq, self.length = self.part[rows], self.seq[rows], self.length[rows]
        self.pos, self.lab = self.pos[events], self.lab[events]


class KernelAbsence:
    """A NOT FOLLOWED BY plan on two compiled kernels (see the module docstring). It offers
    what ``Evaluator`` asks of a ``PlanKernel`` (``process_table``, ``columns``, states) plus
    ``advance``, ``finish`` and ``next_deadline``."""

    is_absence = True
    checked = False

    def __init__(self, plan: Plan, max_nodes: int | None = None) -> None:
        reason = absence_unsupported(plan)
        if reason is not None:
            from ceql.errors import UnsupportedQueryError

            raise UnsupportedQueryError(f"the compiled kernel does not evaluate {reason}")
        assert plan.absence is not None and plan.window is not None
        self.plan = plan
        self.own = _OwnKernel(own_plan(plan), max_nodes, labels=True)
        self.cancelling = _ClockKernel(cancelling_plan(plan.absence), max_nodes, labels=True)
        self.waiting = Waiting()
        self.own.waiting = self.waiting
        self._own_types = self._share()
        self.kernel = self.own.kernel  # (Evaluator.live_nodes)
        self.kept = self.own.kept
        self.measures = self.own.measures
        self.projection = self.own.projection
        self.reports_partition = self.own.reports_partition
        self.window = int(plan.window)
        self.events_window = plan.window_kind == "events"
        self.position = 0
        self.strategy = plan.strategy
        self.limit = plan.limit
        # Matches due at one trigger are grouped (strategy, LIMIT, CONSUME BY) and ordered by
        # the query's partition key only: a key found from an equality is no partition.
        self._keyed = bool(self.reports_partition) and self.own.keys is not None
        # CONSUME BY among the complex events due at one trigger: the last trigger that
        # reported, overall and per partition code (PARTITION with a PARTITION BY; consume.py).
        self.consume = plan.consume
        self.consume_by_key = plan.consume == "PARTITION" and bool(plan.checked.query.partition_by)
        self.last_any = -1
        self.consumed = Consumed(self.consume_by_key)
        self._label_rank: tuple[int, np.ndarray] = (-1, np.zeros(0, dtype=np.int64))
        # Canonical label sets (public labels, the mark removed), shared by both kernels.
        self._canon: dict[tuple[str, ...], int] = {}
        self._canon_of: dict[int, np.ndarray] = {}  # id(kernel) -> label-set id -> canonical id
        self._interned: dict[tuple, int] = {}  # identities of complex events of several events
        self._next_interned = 1
        # Window measures of recent events (a complex event's first event may lie in an earlier
        # batch): positions and measures of the events of the last window, in order.
        self._recent_pos = np.zeros(0, dtype=np.int64)
        self._recent_m = np.zeros(0, dtype=np.int64)
        # push(): complex events that started waiting one event at a time, kept in Python
        # (key -> (deadline, first, partition code, positions, label-set ids)) with a heap of
        # deadlines; a batch, a state or time passing moves them into the arrays first.
        self._tier: dict[int, tuple] = {}
        self._pending_clock: list[tuple[int, int]] = []  # (position, measure) of pushed events
        self._codes_of: Any = None  # push's caches of partition key codes, and what they belong to
        self._own_codes: dict[tuple, int] = {}
        self._cancel_codes: dict[tuple, int] = {}
        self._key_of: dict[int, tuple] = {}  # own key code -> key, for the codes push met
        self._heap: list[tuple[int, int, int]] = []
        # Push's per-event path drives the automaton's loop; a kernel that evaluates its plan
        # as a hash join or a column-wise chain (joins.py, contiguous.py) keeps its state
        # elsewhere, so pushed events take the batch path there (as single.py does).
        self._light = (
            self.kept is None
            and not self.own.checked
            and not self.cancelling.checked
            and self.cancelling.kept is None
            and all(kernel.join is None and kernel.chain is None for kernel in (self.own, self.cancelling))
        )
        self._simple = (
            self._light
            and plan.strategy in ("ALL", "STRICT")
            and plan.limit is None
            and plan.consume == "NONE"
            and not self.projection.merges
        )
        self._sets_seen: dict = {}  # (id of a kernel, label-set id) -> canonical id (push)
        self._shown: dict[int, tuple[bool, tuple[str, ...]]] = {}  # own label-set id -> projection

    def _share(self) -> np.ndarray | None:
        """What f's kernel may take from the cancelling one per batch (one pass over the
        table's types and times, not two): the map from the cancelling plan's type indexes to
        f's (the last entry: -1, a type neither knows), and the window measures when both
        plans read the same time attribute for every type f names. None: nothing shared."""
        own, cancel = self.own.plan, self.cancelling.plan
        index = {name: i for i, name in enumerate(own.type_names)}
        if not set(index) <= set(cancel.type_names):
            return None
        names = set(own.time_attributes.values())
        if (
            own.window_kind == cancel.window_kind
            and own.window_kind in ("time", "attribute")
            and len(names) == 1
            and set(cancel.time_attributes.values()) == names
            and set(own.time_attributes) <= set(cancel.time_attributes)
            and (self.own.post is None or self.own.post.window is None)
            and (self.cancelling.post is None or self.cancelling.post.window is None)
        ):
            self.own.clock_of = self.cancelling
        return np.array([index.get(name, -1) for name in cancel.type_names] + [-1], dtype=np.int64)

    # ------------------------------------------------------------------ what Evaluator reads

    @property
    def last_time(self) -> int | None:
        return self.cancelling.last_time

    @last_time.setter
    def last_time(self, value: int | None) -> None:
        self.own.last_time = value
        self.cancelling.last_time = value

    @property
    def keys(self) -> Any:
        return self.own.keys

    # ------------------------------------------------------------------ a batch

    def process_table(self, table: pa.Table) -> Iterator[KernelMatches]:
        """The matches whose deadline this batch passes, in chunks (``columns`` turns them
        into MatchColumns)."""
        self._flush()
        clock_pos, clock_m = self.step(table)
        yield from self.pass_clock(clock_pos, clock_m)

    def step(
        self, table: pa.Table, positions: np.ndarray | None = None, types: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """A batch's events through both kernels: f's new complex events start waiting, the
        cancelled ones stop. ``positions``: the rows' stream positions when they are not the
        next ones (a worker's share of the keys, runtime/parallel_absence.py); ``types``: their
        type indexes in the cancelling plan's, when known. Returns the batch's clock (the
        positions and window measures of its events that pass deadlines)."""
        base = self.position
        n = table.num_rows
        cancelling = self.cancelling
        # The cancelling kernel first: f's kernel reads its type indexes (and measures).
        if self._own_types is not None:
            if types is None:
                types = cancelling._type_indexes(table)
            cancels = list(cancelling.process_table(table, positions, types))
            found = list(self.own.process_table(table, positions, self._own_types[types]))
        else:
            cancels = list(cancelling.process_table(table, positions))
            found = list(self.own.process_table(table, positions))
        # Measures of the events that pass deadlines: every event (EVENTS), else the events of
        # the types the query names (as the cancelling kernel read them).
        types, measures, missing = cancelling.clock
        at = np.arange(base, base + n, dtype=np.int64) if positions is None else positions.astype(np.int64)
        self.position = base + n if positions is None else (int(at[-1]) + 1 if n else base)
        own = self.own
        new = KernelMatches.concat(found, own.kernel.label_sets, True)
        cancelled = KernelMatches.concat(cancels, cancelling.kernel.label_sets, True)
        if self.events_window:
            clock_pos = clock_m = at
        else:
            rows = np.flatnonzero(~missing & (types >= 0))
            clock_pos, clock_m = at[rows], measures[rows]
        if len(new):
            self._wait(new, clock_pos, clock_m)
        if len(cancelled):
            self._cancel(cancelled)
        self._remember(clock_pos, clock_m)
        return clock_pos, clock_m

    def pass_clock(self, clock_pos: np.ndarray, clock_m: np.ndarray) -> Iterator[KernelMatches]:
        """The waiting complex events whose deadline the clock passes (``clock_pos``,
        ``clock_m``: positions and window measures, in stream order), reported at the first
        event at or past it; then f's kept values no longer needed go."""
        waiting = self.waiting
        if len(waiting) and len(clock_m):
            at = np.searchsorted(clock_m, waiting.deadline, side="left")
            due = at < len(clock_m)
            if due.any():
                triggers = clock_pos[np.minimum(at, len(clock_m) - 1)]
                yield from self._report(due, triggers)
        self.own.prune_now()

    def _wait(self, new: KernelMatches, clock_pos: np.ndarray, clock_m: np.ndarray) -> None:
        """New complex events of f start waiting (each identity once)."""
        offsets = new.offsets
        assert new.labels is not None
        canon = self._canonical(self.own, new.label_sets)[new.labels]
        keys = self._identities(offsets, new.positions, canon, intern=True)
        if self.own.plan.repeats:  # several runs may derive one complex event: each waits once
            unique, rows = np.unique(keys, return_index=True)
            rows = np.sort(rows[~np.isin(unique, self.waiting.key)])
            if not len(rows):
                return
            keys = keys[rows]
        else:  # (each complex event completes once, at its last event: new in this batch)
            rows = np.arange(len(keys))
        first = new.positions[offsets[rows]]
        deadline = self._deadlines(first, clock_pos, clock_m)
        counts = np.diff(offsets)[rows]
        starts = offsets[rows]
        flat = np.repeat(starts - np.r_[0, np.cumsum(counts)[:-1]], counts) + np.arange(int(counts.sum()))
        self.waiting.append(
            keys, deadline, first, new.partition[rows], counts, new.positions[flat], new.labels[flat]
        )

    def _cancel(self, found: KernelMatches) -> None:
        """The marked parts of ``(f AS mark) ; g``'s complex events stop waiting."""
        assert found.labels is not None
        sets = found.label_sets
        marked_of = np.array([ABSENCE_MARK in labels for labels in sets], dtype=bool)
        marked = marked_of[found.labels]
        canon = self._canonical(self.cancelling, sets)[found.labels]
        # The marked events come first in each complex event (g starts after f's last event).
        counts = np.add.reduceat(marked.astype(np.int64), found.offsets[:-1]) if len(found) else np.zeros(0, np.int64)
        offsets = np.r_[0, np.cumsum(counts)].astype(np.int64)
        keep = marked
        keys = self._identities(offsets, found.positions[keep], canon[keep], intern=False)
        gone = np.isin(self.waiting.key, keys)
        if gone.any():
            self._forget(self.waiting.key[gone])
            self.waiting.keep(~gone)

    def _report(self, due: np.ndarray, triggers: np.ndarray) -> Iterator[KernelMatches]:
        """Report the waiting rows ``due`` (a mask) at ``triggers`` (per row) and drop them,
        in the order of docs/semantics.md 5.2: by trigger, partition key, deadline, then the
        complex events' events (``_order``); CONSUME BY first (consume.py: the complex events
        starting after the last trigger that reported, overall or of their key; a trigger
        reports when a row survives, as the strategy and LIMIT keep at least one)."""
        waiting = self.waiting
        rows = np.flatnonzero(due)
        trigger = triggers[rows]
        order, rank = self._order(rows, trigger)
        rows, trigger, rank = rows[order], trigger[order], rank[order]
        self._forget(waiting.key[rows])
        if self.consume != "NONE":
            kept = self.consumed.keep(trigger, waiting.part[rows], waiting.first[rows])
            rows, trigger, rank = rows[kept], trigger[kept], rank[kept]
            if len(trigger):
                self.last_any = int(trigger[-1])
        chunk = self._chunk(rows, trigger, rank)
        waiting.keep(~due)
        if self.consume != "NONE" and not self.consume_by_key and len(waiting):
            live = waiting.first > self.last_any  # (the others could never be reported)
            if not live.all():
                self._forget(waiting.key[~live])
                waiting.keep(live)
        if len(chunk):
            yield chunk

    def _order(self, rows: np.ndarray, trigger: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The order of the waiting ``rows`` due at ``trigger``: (trigger, partition key,
        deadline, events), the events compared in order by (position, public labels), a
        complex event before those it is a prefix of; and each row's key rank (0 unkeyed)."""
        waiting = self.waiting
        n = len(rows)
        rank = np.zeros(n, dtype=np.int64)
        if not n:
            return np.zeros(0, dtype=np.int64), rank
        if self._keyed:
            codes, inverse = np.unique(waiting.part[rows], return_inverse=True)
            keys = self.own.keys.keys
            by_value = sorted(range(len(codes)), key=lambda i: partition_order(keys[int(codes[i])]))
            rank_of = np.empty(len(codes), dtype=np.int64)
            rank_of[by_value] = np.arange(len(codes), dtype=np.int64)
            rank = rank_of[inverse.reshape(-1)]
        length = waiting.length[rows]
        starts = waiting.starts()[rows]
        labels = self._label_ranks()
        columns: list[np.ndarray] = []  # (np.lexsort: the last column is the first key)
        for j in range(int(length.max()) - 1, -1, -1):
            has = length > j
            at = np.where(has, starts + j, 0)
            columns.append(np.where(has, labels[waiting.lab[at]], -1))
            columns.append(np.where(has, waiting.pos[at], -1))
        columns += [waiting.deadline[rows], rank, trigger]
        return np.lexsort(columns), rank

    def _label_ranks(self) -> np.ndarray:
        """f's label-set id -> the rank of its public labels (sorted names) among those met."""
        canon = self._canonical(self.own, self.own.kernel.label_sets)
        size, by_canon = self._label_rank
        if size != len(self._canon):
            ordered = {labels: i for i, labels in enumerate(sorted(self._canon))}
            by_canon = np.zeros(max(len(self._canon), 1), dtype=np.int64)
            for labels, found in self._canon.items():
                by_canon[found] = ordered[labels]
            self._label_rank = (len(self._canon), by_canon)
        return by_canon[canon]

    def _chunk(self, rows: np.ndarray, trigger: np.ndarray, rank: np.ndarray) -> KernelMatches:
        """The waiting ``rows`` as complex events triggered at ``trigger``, the strategy and
        LIMIT applied per trigger and partition key (``rank``), measures computed."""
        waiting = self.waiting
        starts = waiting.starts()
        counts = waiting.length[rows]
        offsets = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum(counts, out=offsets[1:])
        flat = np.repeat(starts[rows] - offsets[:-1], counts) + np.arange(int(offsets[-1]), dtype=np.int64)
        part = waiting.part[rows]
        chunk = KernelMatches(
            trigger, part, offsets, waiting.pos[flat], waiting.lab[flat], self.own.kernel.label_sets
        )
        chunk.deadline = waiting.deadline[rows]  # type: ignore[attr-defined]
        chunk.key_rank = rank  # type: ignore[attr-defined]
        group = _groups(trigger, rank)
        keep = np.ones(len(rows), dtype=bool)
        if self.strategy in _SELECT:
            select_supports(group, offsets, chunk.positions, keep, _SELECT[self.strategy])
        elif self.strategy == "ANY":
            keep = first_per_trigger(group, keep, 1)
        if self.limit is not None and not self.projection.merges:  # (else after the projection: columns)
            keep = first_per_trigger(group, keep, self.limit)
        if not keep.all():
            chunk = _take(chunk, np.flatnonzero(keep))
        if self.measures is not None and len(chunk):
            chunk.measures = self.measures.compute(self.own._frame(chunk))
        return chunk

    def columns(self, chunk: KernelMatches) -> MatchColumns:
        """Reported complex events as MatchColumns: projected (repeats a projection makes are
        dropped per trigger, partition and deadline, as Match objects compare), with the
        partition keys when reported and each match's deadline."""
        deadline = getattr(chunk, "deadline", np.zeros(len(chunk), dtype=np.int64))
        rank = getattr(chunk, "key_rank", np.zeros(len(chunk), dtype=np.int64))
        group = _groups(chunk.trigger, rank, deadline)
        real_trigger = chunk.trigger
        chunk = KernelMatches(group, chunk.partition, chunk.offsets, chunk.positions, chunk.labels, chunk.label_sets, chunk.measures)
        columns = project(chunk, self.projection, chunk.measures)
        firsts = np.r_[0, np.flatnonzero(np.diff(group)) + 1] if len(group) else np.zeros(0, np.int64)
        if self.limit is not None and self.projection.merges and len(group):
            # LIMIT counts the distinct projected matches of a trigger and partition (over
            # every deadline due there), as the Python path's report does.
            groups = columns.trigger
            outer = _groups(real_trigger, rank)[firsts][groups]
            keep = first_per_trigger(outer, np.ones(len(outer), dtype=bool), self.limit)
            columns.trigger = outer
            columns = limit_projected(columns, self.limit)
            columns.trigger = groups[keep]
        columns.deadline = deadline[firsts][columns.trigger] if len(group) else deadline
        columns.trigger = real_trigger[firsts][columns.trigger] if len(group) else real_trigger
        if self.reports_partition and self.own.keys is not None:
            columns.keys = self.own.keys.keys
        else:
            columns.partition = None
        if columns.measures:
            kinds = self.own._raw_measure_types()
            columns.measures = {name: column.raw(kinds.get(name)) for name, column in columns.measures.items()}
        return columns

    # ------------------------------------------------------------------ time passing

    def advance(self, time: int) -> list[KernelMatches]:
        """No event before ``time`` will come: report the deadlines at or before it."""
        self._flush()
        waiting = self.waiting
        if not len(waiting):
            return []
        due = waiting.deadline <= time
        if not due.any():
            return []
        return list(self._report(due, np.full(len(waiting), self.position, dtype=np.int64)))

    def finish(self) -> list[KernelMatches]:
        """The end of the input: everything still waiting, at the position after the last event."""
        self._flush()
        waiting = self.waiting
        if not len(waiting):
            return []
        return list(self._report(np.ones(len(waiting), dtype=bool), np.full(len(waiting), self.position, dtype=np.int64)))

    def next_deadline(self) -> int | None:
        """The earliest deadline still waited for."""
        self._flush()
        return int(self.waiting.deadline.min()) if len(self.waiting) else None

    def is_idle(self) -> bool:
        """Whether nothing waits and no run is live."""
        self._flush()
        return not len(self.waiting) and not self.own.kernel.live_nodes() and not self.cancelling.kernel.live_nodes()

    # ------------------------------------------------------------------ one event (push)

    def push_event(self, step: Any, event: Any) -> list | None:
        """``Evaluator.push`` of one event dict without an Arrow batch (``single.EventStep``
        gives the per-plan facts): the deadlines the event passes, then the cancelling kernel,
        then f's kernel, as ``process_table`` does. None when the plans keep event values
        (measures, checks per complex event): the caller takes the batch path."""
        if not self._light:
            return None
        type_name, values = step.typer.type(event)
        main, other = step.main, step.cancelling
        facts, facts2 = main.types[type_name], other.types[type_name]
        own, cancelling = self.own, self.cancelling
        pos = self.position
        if self.events_window:
            m2, missing2, clock = pos, False, True
            m, missing = pos, False
        else:
            attribute = cancelling.plan.time_attributes.get(type_name)
            value = values.get(attribute) if attribute is not None else None
            missing2 = value is None
            m2 = 0 if missing2 else int(value)
            if attribute is not None:
                if missing2:
                    raise EventError("missing time value (the query's window needs it)", pos)
                last = cancelling.last_time
                if last is not None and m2 < last:
                    raise out_of_order(pos, m2, last)
            clock = not missing2
            timed = type_name in own.plan.time_attributes
            m, missing = (m2, missing2) if timed else (0, True)
        symbol2, irrelevant2, _ = other.symbol(facts2, values)
        symbol, irrelevant, _ = main.symbol(facts, values)
        owner = own.keys.codes if own.keys is not None else cancelling.keys.codes if cancelling.keys is not None else None
        if self._codes_of is not owner:  # (codes are reassigned when a state is loaded)
            self._codes_of = owner
            self._own_codes, self._cancel_codes, self._key_of = {}, {}, {}
        code2 = _code(cancelling, facts2.group, values, self._cancel_codes) if not irrelevant2 else -1
        code = _code(own, facts.group, values, self._own_codes, self._key_of) if not irrelevant else -1
        # Only now does the event count (a bad event above changes nothing).
        self.position = pos + 1
        own.position = cancelling.position = pos + 1
        if clock and not self.events_window:
            cancelling.last_time = m2
            if not missing:
                own.last_time = m
        out: list = []
        if clock and self._due_at(m2):
            out = self._report_push(m2, pos)
        if code2 >= 0:
            found = cancelling.kernel.process_one_lists(symbol2, pos, m2, code2, missing2)
            if found:
                self._cancel_push(found)
        if code >= 0:
            found = own.kernel.process_one_lists(symbol, pos, m, code, missing)
            if found:
                self._wait_push(found, m, pos)
        if clock and not self.events_window:
            self._pending_clock.append((pos, m2))
            if len(self._pending_clock) >= 4096:  # (bounded: the window's events only)
                self._flush_clock()
        return out

    def _due_at(self, measure: int) -> bool:
        heap = self._heap
        while heap and heap[0][2] not in self._tier:
            heapq.heappop(heap)  # (cancelled meanwhile)
        if heap and heap[0][0] <= measure:
            return True
        return bool(len(self.waiting)) and bool((self.waiting.deadline <= measure).any())

    def _canon_push(self, kernel: PlanKernel, label: int, sets: list) -> int:
        found = self._sets_seen.get((id(kernel), label))
        if found is None:
            found = self._sets_seen[(id(kernel), label)] = int(self._canonical(kernel, sets)[label])
        return found

    def _identity_push(self, kernel: PlanKernel, positions: list, labels: list, sets: list) -> int:
        canon = [self._canon_push(kernel, label, sets) for label in labels]
        if len(positions) == 1 and positions[0] < MAX_SINGLE_POSITION and len(self._canon) < (1 << LABEL_BITS):
            return (positions[0] << LABEL_BITS) | canon[0]
        identity = tuple(zip(positions, canon))
        return self._interned.get(identity, UNKNOWN)

    def _wait_push(self, found: list, measure: int, pos: int) -> None:
        """New complex events of f (one event pushed) start waiting in the Python tier."""
        sets = self.own.kernel.label_sets
        for _, part, ps, ls in found:
            assert ls is not None
            key = self._identity_push(self.own, ps, ls, sets)
            if key == UNKNOWN:  # several events: interned
                identity = tuple(zip(ps, [self._canon_push(self.own, label, sets) for label in ls]))
                key = self._interned[identity] = -self._next_interned
                self._next_interned += 1
            if key in self._tier or (len(self.waiting) and (self.waiting.key == key).any()):
                continue  # the same complex event by another run
            first = ps[0]
            if self.events_window:
                start = first
            else:
                start = measure if first == pos else self._measure_of(first)
            if start > INT64_MAX - self.window:
                raise deadline_error(start, self.window, first)
            deadline = start + self.window
            self._tier[key] = (deadline, first, part, ps, ls)
            heapq.heappush(self._heap, (deadline, self.waiting.sequence, key))
            self.waiting.sequence += 1

    def _cancel_push(self, found: list) -> None:
        """Complex events of ``(f AS mark) ; g`` completed at the pushed event."""
        sets = self.cancelling.kernel.label_sets
        for _, _, positions, labels in found:
            ps: list[int] = []
            ls: list[int] = []
            for position, label in zip(positions, labels):
                if ABSENCE_MARK in sets[label]:
                    ps.append(position)
                    ls.append(label)
            key = self._identity_push(self.cancelling, ps, ls, sets)
            if self._tier.pop(key, None) is not None:
                self._forget(np.array([key], dtype=np.int64))
            elif len(self.waiting):
                gone = self.waiting.key == key
                if gone.any():
                    self._forget(self.waiting.key[gone])
                    self.waiting.keep(~gone)

    def _report_push(self, measure: int, trigger: int) -> list:
        """The complex events whose deadline the pushed event passes, at ``trigger``."""
        if not self._simple or len(self.waiting):
            self._flush()
            due = self.waiting.deadline <= measure
            return [(chunk, None) for chunk in self._report(due, np.full(len(self.waiting), trigger, dtype=np.int64))]
        heap, tier = self._heap, self._tier
        items = []
        while heap and heap[0][0] <= measure:
            _, _, key = heapq.heappop(heap)
            item = tier.pop(key, None)
            if item is not None:
                items.append((key, item))
        if not items:
            return []
        self._forget(np.array([key for key, _ in items], dtype=np.int64))
        return [(None, (trigger, items))]

    def push_matches(self, found: list, schema: Any) -> list:
        """Matches of what ``push_event`` reported (Match objects, in the batch path's order)."""
        from ceql.match import Match
        from ceql.runtime.arrow import MatchRows

        out: list = []
        for chunk, simple in found:
            if chunk is not None:
                out.extend(MatchRows(self.columns(chunk), schema, self.reports_partition))
                continue
            trigger, items = simple
            sets = self.own.kernel.label_sets
            shown = self._shown
            keys = self._key_of if self._keyed else None
            if len(items) > 1:  # (the order of _order: partition key, deadline, events)
                ranks = self._label_ranks().tolist()  # (_order's label order)
                try:  # (keys of numbers or of strings compare as they are, as partition_order does)
                    items.sort(key=lambda kv: self._push_order(kv[1], keys, _same, ranks))
                except TypeError:
                    items.sort(key=lambda kv: self._push_order(kv[1], keys, partition_order, ranks))
            for _, (deadline, _, part, ps, ls) in items:
                kept: list[int] = []
                labels: dict[str, list[int]] = {}
                for position, label in zip(ps, ls):
                    facts = shown.get(label)
                    if facts is None:
                        facts = shown[label] = self.projection.event(sets[label])
                    if facts[0]:
                        kept.append(position)
                    for name in facts[1]:
                        labels.setdefault(name, []).append(position)
                partition = None
                if keys is not None:
                    partition = keys.get(part)
                    if partition is None:
                        partition = self.own.keys.keys[part]
                out.append(Match(trigger, tuple(kept), {k: tuple(v) for k, v in labels.items()}, partition, {}, deadline))
        return out

    def _push_order(self, item: tuple, keys: dict | None, order: Any, ranks: list[int]) -> tuple:
        """The sort key of a complex event ``push`` reports (``_order``'s order; ``ranks``:
        ``_label_ranks``, per label-set id)."""
        deadline, _, part, ps, ls = item
        events = tuple(zip(ps, [ranks[label] for label in ls]))
        if keys is None:
            return (), deadline, events
        value = keys.get(part)
        return order(value if value is not None else self.own.keys.keys[part]), deadline, events

    def _measure_of(self, position: int) -> int:
        """The window measure of an earlier event (a complex event's first)."""
        self._flush_clock()
        at = int(np.searchsorted(self._recent_pos, position))
        if at >= len(self._recent_pos) or int(self._recent_pos[at]) != position:
            raise RuntimeError("NOT FOLLOWED BY: the window measure of a complex event's first event is unknown")
        return int(self._recent_m[at])

    def _flush_clock(self) -> None:
        pending = self._pending_clock
        if pending:
            pos = np.array([p for p, _ in pending], dtype=np.int64)
            m = np.array([v for _, v in pending], dtype=np.int64)
            pending.clear()
            self._remember(pos, m)

    def _flush(self) -> None:
        """Move what ``push`` left in Python into the arrays."""
        self._flush_clock()
        tier = self._tier
        if not tier:
            self._heap.clear()
            return
        order = sorted((seq, key) for _, seq, key in self._heap if key in tier)
        rows = [(key, tier[key]) for _, key in order]
        seqs = np.array([seq for seq, _ in order], dtype=np.int64)
        tier.clear()
        self._heap.clear()
        waiting = self.waiting
        keys = np.array([key for key, _ in rows], dtype=np.int64)
        n = len(rows)
        sequence = waiting.sequence
        waiting.append(
            keys,
            np.array([item[0] for _, item in rows], dtype=np.int64),
            np.array([item[1] for _, item in rows], dtype=np.int64),
            np.array([item[2] for _, item in rows], dtype=np.int64),
            np.array([len(item[3]) for _, item in rows], dtype=np.int64),
            np.array([p for _, item in rows for p in item[3]], dtype=np.int64),
            np.array([label for _, item in rows for label in item[4]], dtype=np.int64),
        )
        waiting.seq[len(waiting) - n :] = seqs
        waiting.sequence = sequence

    # ------------------------------------------------------------------ identities and deadlines

    def _canonical(self, kernel: PlanKernel, sets: list[tuple[str, ...]]) -> np.ndarray:
        """Label-set id of ``kernel`` -> canonical id of its public labels (the mark removed)."""
        table = self._canon_of.get(id(kernel))
        if table is None or len(table) < len(sets):
            canon = self._canon
            table = np.array(
                [canon.setdefault(tuple(sorted(x for x in labels if x[0] != "\x00")), len(canon)) for labels in sets]
                or [0],
                dtype=np.int64,
            )
            self._canon_of[id(kernel)] = table
        return table

    def _identities(self, offsets: np.ndarray, positions: np.ndarray, canon: np.ndarray, intern: bool) -> np.ndarray:
        """One int64 per complex event, equal iff the complex events are (positions and public
        labels): the event itself for one event, an interned id (negative) for several."""
        counts = np.diff(offsets)
        n = len(counts)
        starts = offsets[:-1]
        single = counts == 1
        if n and single.all() and len(self._canon) < (1 << LABEL_BITS) and positions.max(initial=0) < MAX_SINGLE_POSITION:
            return (positions << LABEL_BITS) | canon
        out = np.empty(n, dtype=np.int64)
        fits = single & (len(self._canon) < (1 << LABEL_BITS))
        if fits.any():
            p = positions[starts[fits]]
            fits[fits] = p < MAX_SINGLE_POSITION
        rows = np.flatnonzero(fits)
        out[rows] = (positions[starts[rows]] << LABEL_BITS) | canon[starts[rows]]
        pos_list, canon_list, offsets_list = positions.tolist(), canon.tolist(), offsets.tolist()
        interned = self._interned
        for i in np.flatnonzero(~fits).tolist():
            a, b = offsets_list[i], offsets_list[i + 1]
            identity = tuple(zip(pos_list[a:b], canon_list[a:b]))
            found = interned.get(identity)
            if found is None:
                if intern:
                    found = interned[identity] = -self._next_interned
                    self._next_interned += 1
                else:
                    found = UNKNOWN
            out[i] = found
        return out

    def _forget(self, keys: np.ndarray) -> None:
        """Identities of complex events that stop waiting: their interned ids are dropped."""
        if self._interned and (keys < 0).any():
            gone = set(keys[keys < 0].tolist())
            self._interned = {k: v for k, v in self._interned.items() if v not in gone}

    def _deadlines(self, first: np.ndarray, clock_pos: np.ndarray, clock_m: np.ndarray) -> np.ndarray:
        """d = m(first) + w per complex event (int64; beyond it, an EventError)."""
        if self.events_window:
            measures = first
        else:
            pos = np.concatenate([self._recent_pos, clock_pos])
            m = np.concatenate([self._recent_m, clock_m])
            at = np.searchsorted(pos, first)
            ok = (at < len(pos)) & (pos[np.minimum(at, len(pos) - 1)] == first) if len(pos) else np.zeros(len(first), bool)
            if not ok.all():  # (f's events are of the types the query names: never here)
                raise RuntimeError("NOT FOLLOWED BY: the window measure of a complex event's first event is unknown")
            measures = m[at]
        beyond = measures > INT64_MAX - self.window
        if beyond.any():
            row = int(np.argmax(beyond))
            raise deadline_error(int(measures[row]), self.window, int(first[row]))
        return measures + self.window

    def _remember(self, clock_pos: np.ndarray, clock_m: np.ndarray) -> None:
        """Keep the measures of the events a later complex event may start with (the window)."""
        if self.events_window or not len(clock_m):
            return
        pos = np.concatenate([self._recent_pos, clock_pos])
        m = np.concatenate([self._recent_m, clock_m])
        bound = int(m[-1]) - self.window
        if bound > -(1 << 63):
            keep = m > bound
            pos, m = pos[keep], m[keep]
        self._recent_pos, self._recent_m = pos, m


def _code(
    kernel: PlanKernel, group: tuple[str, ...] | None, values: dict, cache: dict | None = None, reverse: dict | None = None
) -> int:
    """The partition key code of a pushed event for ``kernel`` (-1: no key: the event does not
    move its runs), as the batch path codes it: a double equal to an int is that int, NaN and
    missing values are no key."""
    if kernel.keys is None:
        return 0
    if group is None:
        return -1
    key = []
    for attribute in group:
        value = values.get(attribute)
        if value is None:
            return -1
        if type(value) is float:
            if value != value:
                return -1
            if value.is_integer():
                value = int(value)
        key.append(value)
    if not kernel.keys.cacheable:  # recycled window codes (issue 34): never cached
        cache = reverse = None
    found = cache.get(tuple(key)) if cache is not None else None
    if found is None:
        found = kernel.keys._code(tuple(key))
        if cache is not None:
            cache[tuple(key)] = found
            if reverse is not None:
                reverse[found] = tuple(key)
    return found


def _same(key: tuple) -> tuple:
    return key


def _groups(*columns: np.ndarray) -> np.ndarray:
    """Dense ids of the runs of equal rows of ``columns`` (rows sorted so that equal ones are
    consecutive)."""
    n = len(columns[0])
    if not n:
        return np.zeros(0, dtype=np.int64)
    change = np.zeros(n, dtype=bool)
    for column in columns:
        change[1:] |= column[1:] != column[:-1]
    return np.cumsum(change).astype(np.int64)


def _take(chunk: KernelMatches, rows: np.ndarray) -> KernelMatches:
    counts = np.diff(chunk.offsets)[rows]
    offsets = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    flat = np.repeat(chunk.offsets[:-1][rows] - offsets[:-1], counts) + np.arange(int(offsets[-1]), dtype=np.int64)
    out = KernelMatches(
        chunk.trigger[rows],
        chunk.partition[rows],
        offsets,
        chunk.positions[flat],
        chunk.labels[flat] if chunk.labels is not None else None,
        chunk.label_sets,
    )
    out.deadline = chunk.deadline[rows]  # type: ignore[attr-defined]
    out.key_rank = chunk.key_rank[rows]  # type: ignore[attr-defined]
    return out


def is_kernel_absence_state(blob: Any) -> bool:
    """Whether a saved state is a NOT FOLLOWED BY query's, saved on the kernel (header only)."""
    from ceql.runtime.state import read_header

    header = read_header(blob)
    return header is not None and header.get("format") == FORMAT


def _export(runner: KernelAbsence) -> bytes:
    """The whole state, sealed: both kernels' states and the waiting arrays."""
    from ceql.runtime.state import fingerprint, seal

    runner._flush()
    waiting = runner.waiting
    arrays = {
        "deadline": waiting.deadline,
        "first": waiting.first,
        "part": waiting.part,
        "length": waiting.length,
        "pos": waiting.pos,
        "lab": waiting.lab,
        "recent_pos": runner._recent_pos,
        "recent_m": runner._recent_m,
    }
    body: dict = {
        "own": base64.b64encode(runner.own.export_json()).decode("ascii"),
        "cancelling": base64.b64encode(runner.cancelling.export_json()).decode("ascii"),
        "position": runner.position,
    }
    if runner.consume != "NONE":  # CONSUME BY: the last trigger that reported, overall and per key code
        body["last_any"] = runner.last_any
        codes, at = runner.consumed.markers()
        pairs = zip(codes.tolist(), at.tolist()) if runner.consume_by_key else ()  # (else one scope: last_any's)
        body["last_by_key"] = [[code, value] for code, value in pairs]
    for name, array in arrays.items():
        body[name] = base64.b64encode(np.ascontiguousarray(array, dtype="<i8").tobytes()).decode("ascii")
    return seal(FORMAT, VERSION, fingerprint(runner.plan.checked), body)


def _import(runner: KernelAbsence, blob: Any) -> None:
    """Load a state made by ``_export`` for the same query, every field checked against the
    query (StateError otherwise; then nothing of ``runner`` changes)."""
    from ceql.runtime.state import StateError, check_labels, fingerprint, label_vocabulary, unseal

    body = unseal(blob, FORMAT, VERSION, fingerprint(runner.plan.checked))
    fields = {"own", "cancelling", "position", *_ARRAYS}
    if runner.consume != "NONE":
        fields |= {"last_any", "last_by_key"}
    if not isinstance(body, dict) or set(body) != fields:
        raise StateError("saved NOT FOLLOWED BY state lacks a field or has an unknown one")
    bound = (runner.own.max_nodes + 1) * 8  # bytes of one waiting array, at most (checked before decoding)
    arrays: dict[str, np.ndarray] = {}
    for name in _ARRAYS:
        text = body[name]
        if not isinstance(text, str) or len(text) * 3 // 4 > bound + 3:
            raise StateError(f"saved NOT FOLLOWED BY state has a malformed or oversized {name!r}")
        try:
            raw = base64.b64decode(text.encode("ascii"), validate=True)
        except (ValueError, UnicodeEncodeError):
            raise StateError(f"saved NOT FOLLOWED BY state has a malformed {name!r}") from None
        if len(raw) % 8:
            raise StateError(f"saved NOT FOLLOWED BY state has a malformed {name!r}")
        arrays[name] = np.frombuffer(raw, dtype="<i8").astype(np.int64)
    inner = {}
    for name in ("own", "cancelling"):
        text = body[name]
        if not isinstance(text, str):
            raise StateError(f"saved NOT FOLLOWED BY state has a malformed {name!r}")
        try:
            inner[name] = base64.b64decode(text.encode("ascii"), validate=True)
        except (ValueError, UnicodeEncodeError):
            raise StateError(f"saved NOT FOLLOWED BY state has a malformed {name!r}") from None
    fresh = KernelAbsence(runner.plan, runner.own.max_nodes)
    fresh.own.import_json(inner["own"])
    fresh.cancelling.import_json(inner["cancelling"])
    position = body["position"]
    if (
        not isinstance(position, int)
        or isinstance(position, bool)
        or position != fresh.own.position
        or position != fresh.cancelling.position
    ):
        raise StateError("saved NOT FOLLOWED BY state has an impossible stream position")
    fresh.position = position
    own_last, last = fresh.own.last_time, fresh.cancelling.last_time
    if own_last is not None and (last is None or own_last > last):  # (g's types carry the clock too)
        raise StateError("saved NOT FOLLOWED BY state has two inconsistent last times")
    _check_waiting(fresh, arrays, StateError, check_labels, label_vocabulary)
    if fresh.consume != "NONE":
        _load_consumed(fresh, body["last_any"], body["last_by_key"], StateError)
    runner.__dict__.update(fresh.__dict__)
    runner.own.waiting = runner.waiting


def _load_consumed(runner: KernelAbsence, last_any: Any, pairs: Any, error: type) -> None:
    """CONSUME BY's markers of a saved state (``_import``): triggers before the stream
    position, key codes of the query's keys, per key only when it consumes per key."""

    def trigger(value: Any) -> int:
        if not isinstance(value, int) or isinstance(value, bool) or not -1 <= value <= runner.position:
            raise error("saved NOT FOLLOWED BY state has an impossible consumed marker")
        return value

    runner.last_any = trigger(last_any)
    keys = runner.own.keys
    count = keys.count if keys is not None else 0
    if not isinstance(pairs, list) or (pairs and not runner.consume_by_key) or len(pairs) > count:
        raise error("saved NOT FOLLOWED BY state has malformed consumed markers")
    by_key: dict[int, int] = {}
    for pair in pairs:
        if not isinstance(pair, list) or len(pair) != 2:
            raise error("saved NOT FOLLOWED BY state has malformed consumed markers")
        code = pair[0]
        if not isinstance(code, int) or isinstance(code, bool) or not 0 <= code < count or code in by_key:
            raise error("saved NOT FOLLOWED BY state has a consumed marker of an impossible key")
        by_key[code] = trigger(pair[1])
    runner.consumed.load(runner.last_any, np.array(list(by_key), dtype=np.int64), np.array(list(by_key.values()), dtype=np.int64))


def _check_waiting(runner: KernelAbsence, a: dict[str, np.ndarray], error: type, check_labels: Any, vocabulary_of: Any) -> None:
    """The waiting arrays against the query and the loaded kernels (see ``_import``)."""
    position, window = runner.position, runner.window
    rows = len(a["deadline"])
    if rows > runner.own.max_nodes:
        raise error(f"saved NOT FOLLOWED BY state holds more waiting complex events than max_nodes ({runner.own.max_nodes:,})")
    if not (len(a["first"]) == len(a["part"]) == len(a["length"]) == rows):
        raise error("saved NOT FOLLOWED BY state has waiting arrays of different lengths")
    length, pos, lab = a["length"], a["pos"], a["lab"]
    if rows and (length.min() < 1 or int(length.sum()) != len(pos)) or (not rows and len(pos)) or len(lab) != len(pos):
        raise error("saved NOT FOLLOWED BY state has malformed waiting complex events")
    if len(pos) and (pos.min() < 0 or pos.max() >= position):
        raise error("saved NOT FOLLOWED BY state has a waiting event at an impossible position")
    starts = np.zeros(rows + 1, dtype=np.int64)
    np.cumsum(length, out=starts[1:])
    inner = np.ones(len(pos), dtype=bool)
    inner[starts[:-1]] = False
    if len(pos) > 1 and not (np.diff(pos)[inner[1:]] > 0).all():
        raise error("saved NOT FOLLOWED BY state has a waiting complex event whose positions do not increase")
    if rows and not (a["first"] == pos[starts[:-1]]).all():
        raise error("saved NOT FOLLOWED BY state has a first position that is not its complex event's")
    sets = runner.own.kernel.label_sets
    if len(lab) and (lab.min() < 0 or lab.max() >= len(sets)):
        raise error("saved NOT FOLLOWED BY state has a label set this query does not use")
    vocabulary = vocabulary_of(runner.own.plan)
    for used in np.unique(lab).tolist():
        check_labels(list(sets[used]), vocabulary)  # (a label set with a public label)
    keys = runner.own.keys
    count = keys.count if keys is not None else 1
    if rows and (a["part"].min() < 0 or a["part"].max() >= count):
        raise error("saved NOT FOLLOWED BY state has an impossible partition code")
    recent_pos, recent_m = a["recent_pos"], a["recent_m"]
    if len(recent_pos) != len(recent_m) or (runner.events_window and len(recent_pos)):
        raise error("saved NOT FOLLOWED BY state has malformed recent measures")
    last = runner.last_time
    if len(recent_pos) and (
        recent_pos.min() < 0
        or recent_pos.max() >= position
        or (np.diff(recent_pos) <= 0).any()
        or (np.diff(recent_m) < 0).any()
        or last is None
        or recent_m.max() > last
    ):
        raise error("saved NOT FOLLOWED BY state has impossible recent measures")
    deadline, first = a["deadline"], a["first"]
    if runner.events_window:
        measures = first
        passed = deadline < position  # (the event at the deadline's position came)
    else:
        at = np.searchsorted(recent_pos, first)
        known = (at < len(recent_pos)) & (recent_pos[np.minimum(at, max(len(recent_pos) - 1, 0))] == first) if len(recent_pos) else np.zeros(rows, bool)
        if not known.all():
            raise error("saved NOT FOLLOWED BY state has a waiting complex event whose time it does not hold")
        measures = recent_m[at] if rows else first
        passed = deadline <= last if last is not None else np.zeros(rows, bool)
    if rows and ((measures > INT64_MAX - window).any() or not (deadline == measures + window).all()):
        raise error("saved NOT FOLLOWED BY state has a deadline that is not its first event's measure plus the window")
    if rows and passed.any():
        raise error("saved NOT FOLLOWED BY state has a complex event waiting past its deadline")
    if runner.kept is not None and len(pos) and len(np.setdiff1d(pos, runner.kept.kept_positions())):
        raise error("saved NOT FOLLOWED BY state has a waiting event without its kept values")
    # Identities: each waiting complex event once.
    canon = runner._canonical(runner.own, sets)[lab] if len(lab) else lab
    keys_ = runner._identities(starts, pos, canon, intern=True)
    if len(np.unique(keys_)) != rows:
        raise error("saved NOT FOLLOWED BY state has a complex event waiting twice")
    waiting = runner.waiting
    waiting.key, waiting.deadline, waiting.first, waiting.part = keys_, deadline, first, a["part"]
    waiting.length, waiting.pos, waiting.lab = length, pos, lab
    waiting.seq = np.arange(rows, dtype=np.int64)
    waiting.sequence = rows
    runner._recent_pos, runner._recent_m = recent_pos, recent_m


KernelAbsence.export_json = _export  # type: ignore[attr-defined]
KernelAbsence.import_json = _import  # type: ignore[attr-defined]

__all__ = ["FORMAT", "KernelAbsence", "absence_unsupported", "is_kernel_absence_state"]
