"""KernelEvaluator: the compiled evaluation loop behind a plain-array interface.

Input per batch: one symbol id, stream position, window measure (int64) and partition key code
per event, for the events that matter (the caller drops irrelevant ones). Output: the complex
events as flat arrays (KernelMatches). The compiled loop (``compiled.run``) returns to Python
whenever it needs something: a transition of the lazily determinized automaton, more room in an
array, or an emptied output buffer; Python provides it and the loop resumes at the same event.

The state (tECS nodes, active determinized states per partition, CONSUME bookkeeping) is numpy
arrays and can be exported and imported as arrays.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from ceql.compile.determinize import DetAutomaton
from ceql.errors import LimitError
from ceql.runtime.kernel import compiled as k
from ceql.runtime.kernel.tables import TransitionTable

COMPACT_MIN = 65_536  # node rows in use before the first compaction
MAX_CHUNK_MATCHES = 1 << 18  # output chunk size (complex events) before the buffer is handed out
#: ANY / LIMIT with checks: a trigger's first pause (C_LAZY); triggers with fewer complex events
#: never pause, so the common case costs what the full enumeration costs.
LAZY_BATCH = 64
#: Ranked NEXT / LAST: the first pause (or earlier, once a trigger has spent
#: compiled.RANK_STEPS: the first that passes then ends a costly trigger soon). A pause costs
#: a call of the checks (about 0.3 ms), a cheap candidate a few steps: 8 cost more than 64.
RANKED_BATCH = 64
#: The pool's bound (rows of 48 bytes): MAX's antichains, a ranked trigger's walks.
MAX_POOL_ROWS = 1 << 22
#: Initial array sizes; every array grows on demand (tests shrink them to exercise growth).
INITIAL = {
    "nodes": 4096,
    "slots": 16,
    "row": 4,
    "scratch": 16,
    "stack": 64,
    "path": 64,
    "matches": 1024,
    "positions": 4096,
}
_CONSUME = {"NONE": k.CONSUME_NONE, "ANY": k.CONSUME_ANY, "PARTITION": k.CONSUME_PARTITION}
STATE_VERSION = 1
_ARGS = ["C", "W"]  # the arrays numba gets: contiguous and writable (np.require)


@dataclass
class KernelMatches:
    """Complex events as flat arrays, in trigger order.

    Match ``i`` was triggered at position ``trigger[i]`` in the partition with key code
    ``partition[i]``; its events are ``positions[offsets[i]:offsets[i+1]]`` (ascending), with
    label-set ids ``labels[...]`` at the same indexes (indexes into ``label_sets``; None when the
    evaluator was built without labels). No projection is applied yet."""

    trigger: np.ndarray
    partition: np.ndarray
    offsets: np.ndarray
    positions: np.ndarray
    labels: np.ndarray | None
    label_sets: list[tuple[str, ...]]
    measures: dict | None = None  # measure name -> columns.MeasureColumn (set by PlanKernel)

    def __len__(self) -> int:
        return len(self.trigger)

    @staticmethod
    def concat(chunks: list[KernelMatches], label_sets: list[tuple[str, ...]], labels: bool) -> KernelMatches:
        """One KernelMatches from consecutive chunks."""
        if not chunks:
            empty = np.zeros(0, dtype=np.int64)
            return KernelMatches(
                empty, empty, np.zeros(1, np.int64), empty, empty if labels else None, label_sets
            )
        if len(chunks) == 1:
            return chunks[0]
        shifts = np.cumsum([0] + [len(c.positions) for c in chunks[:-1]])
        offsets = np.concatenate(
            [chunks[0].offsets[:1]] + [c.offsets[1:] + s for c, s in zip(chunks, shifts)]
        )
        return KernelMatches(
            np.concatenate([c.trigger for c in chunks]),
            np.concatenate([c.partition for c in chunks]),
            offsets,
            np.concatenate([c.positions for c in chunks]),
            np.concatenate([c.labels for c in chunks]) if labels else None,  # type: ignore[misc]
            label_sets,
        )


class KernelEvaluator:
    """Incremental evaluation of a plan without cross-event conditions, in compiled code.

    Args:
        det: the lazily determinized automaton (shared with the plan; transitions are asked for
            when first needed).
        window: WITHIN size in measure units (events, nanoseconds or attribute units), or None.
        monotone: measures never decrease (events, time, primary_time attributes): expired
            structure is pruned. Otherwise the window only filters the enumeration.
        consume: "NONE", "ANY" or "PARTITION".
        strategy: "ALL" or "ANY" (one complex event per trigger).
        limit: LIMIT n per trigger, or None.
        partitioned: PARTITION BY (key codes >= 0; -1 means the event has no key and is skipped).
            Unpartitioned evaluators take code 0 for every event.
        whole_triggers: never split the complex events of one trigger over two output chunks
            (when a projection may make some of them equal, duplicates are removed per chunk).
        labels: also output each event's label-set id.
        anchored: runs may all die (START): a sub-stream left without runs stays so.
        check: with CONSUME BY, a function given each trigger's complex events (a
            KernelMatches) that says which to keep (a bool array); consumption applies only if
            some are kept. The kept ones are the ones output.
        max_nodes: the stored nodes (live after a compaction) may not exceed this (LimitError;
            None: no bound).
        select: NEXT / LAST / MAX chosen over the tECS (only the chosen complex events out).
        ranked: with select NEXT / LAST, output every complex event instead, best support
            first, for ``more`` to stop at the first that passes the checks.
        more: a trigger's complex events so far (paused every so many) -> which to keep and
            whether they are enough (the rest of the trigger is then not enumerated).
    """

    def __init__(
        self,
        det: DetAutomaton,
        *,
        window: int | None = None,
        monotone: bool = True,
        consume: str = "NONE",
        strategy: str = "ALL",
        limit: int | None = None,
        partitioned: bool = False,
        whole_triggers: bool = False,
        labels: bool = True,
        anchored: bool = False,
        check: Callable[[KernelMatches], np.ndarray] | None = None,
        max_nodes: int | None = None,
        select: str | None = None,
        more: Callable[[KernelMatches], tuple[np.ndarray, bool]] | None = None,
        perm: bool = True,
        ranked: bool = False,
    ) -> None:
        if strategy not in ("ALL", "ANY"):
            raise ValueError(f"the kernel evaluates strategies ALL and ANY, not {strategy}")
        if window is not None and not 0 <= window < k.MAX_WINDOW:
            raise ValueError(f"window {window} out of the kernel's range [0, 2**61)")
        self.det = det
        self.tables = TransitionTable(det)
        self.partitioned = partitioned
        self.labels = labels
        self.cfg = np.zeros(k.C_SIZE, dtype=np.int64)
        self.cfg[k.C_WINDOW] = -1 if window is None else window
        self.cfg[k.C_MONOTONE] = int(monotone)
        self.cfg[k.C_PARTITIONED] = int(partitioned)
        self.cfg[k.C_CONSUME] = _CONSUME[consume]
        self.cfg[k.C_ANY] = int(strategy == "ANY")
        self.cfg[k.C_LIMIT] = -1 if limit is None else limit
        self.cfg[k.C_INIT] = det.initial
        self.cfg[k.C_LABELS] = int(self.labels)
        self.cfg[k.C_ANCHORED] = int(anchored)
        self.check = check
        self.cfg[k.C_CHECK] = int(check is not None and consume != "NONE")
        self.whole_triggers = whole_triggers
        self.max_nodes = max_nodes
        # NEXT / LAST: each trigger's best support is chosen over the tECS (compiled._choose);
        # MAX: its maximal supports (compiled._choose_max, in ``pool``).
        if select not in (None, "NEXT", "LAST", "MAX"):
            raise ValueError(f"the kernel chooses NEXT, LAST or MAX over its tECS, not {select}")
        # ANY / LIMIT with checks: a trigger's complex events are enumerated LAZY_BATCH at a
        # time, doubling; ``more`` keeps those that pass and says whether they are enough.
        self.more = more
        if more is not None and consume == "NONE":
            self.cfg[k.C_LAZY] = RANKED_BATCH if ranked else LAZY_BATCH
        self.sel = np.zeros(k.SEL_SIZE, dtype=np.int64)
        self.sel[k.SEL_MODE] = {None: 0, "NEXT": k.SELECT_NEXT, "LAST": k.SELECT_LAST, "MAX": k.SELECT_MAX}[select]
        if ranked and select not in ("NEXT", "LAST"):
            raise ValueError(f"the kernel ranks complex events for NEXT or LAST, not {select}")
        # Ranked (NEXT / LAST with checks): a trigger's candidates best support first
        # (compiled._rank_enumerate; its walks in ``pool``), checked as they come by ``more``.
        self.sel[k.SEL_RANK] = int(ranked)
        self.pool = np.zeros((1024 if select == "MAX" or ranked else 1, k.POOL_FIELDS), dtype=np.int64)
        self.sel[k.SEL_EPOCH] = 1
        # A node's best over all its paths is kept for good unless an event may lack its
        # window measure (a missing value is in no window, which the nodes' bounds ignore).
        self.sel[k.SEL_PERM] = int(perm)
        self.memo = np.zeros((1, k.MEMO_FIELDS), dtype=np.int64)
        # Complex events per output chunk (runtime/parallel.py lowers it for N workers' queues).
        self.max_chunk = MAX_CHUNK_MATCHES
        self._first = np.array([[det.initial, 0]], dtype=np.int64)
        self._one: tuple[np.ndarray, ...] | None = None  # process_one's input arrays
        # Node rows in use before the first compaction, when not COMPACT_MIN (runtime/parallel.py:
        # N workers' kernels, each with a share of the stream, take a 1/N of it).
        self.compact_min: int | None = None
        self._reset()

    def _reset(self) -> None:
        self.sel[k.SEL_EPOCH] += 1  # fresh nodes: the bests kept for good are of other ones
        self.st = np.zeros(k.S_SIZE, dtype=np.int64)
        self.st[k.S_NOW] = k.MISSING
        self.st[k.S_CONSUMED_AT] = -1
        size = INITIAL
        self.nodes = np.zeros((max(2, size["nodes"]), k.NODE_FIELDS), dtype=np.int64)
        self.nodes[0, k.MF] = k.INT64_MIN
        self.nodes[0, k.MINF] = k.INT64_MAX
        self.nodes[0, k.KH] = (k.BOTTOM_KIND << 1) | 1
        self.st[k.S_NODES] = 1
        slots = size["slots"] if self.partitioned else 1
        self.slot_of = np.full(slots, -1, dtype=np.int64)
        self.act = np.zeros((slots, size["row"], 2), dtype=np.int64)
        self.slot_info = np.zeros((slots, k.P_FIELDS), dtype=np.int64)
        self.slot_info[:, k.P_CODE] = -1
        self.free = np.zeros(slots, dtype=np.int64)
        if not self.partitioned:  # one sub-stream, code 0, alive from the start
            self.slot_of[0] = 0
            self.slot_info[0] = (1, -1, 0)
            self.act[0, 0] = (self.cfg[k.C_INIT], 0)
            self.st[k.S_SLOTS] = 1
        self.new = np.zeros((size["scratch"], 3), dtype=np.int64)
        self.finals = np.zeros(size["scratch"], dtype=np.int64)
        self.stack = np.zeros((max(2, size["stack"]), 5), dtype=np.int64)  # one row is kept free
        self.path = np.zeros(size["path"], dtype=np.int64)
        self.out_m = np.zeros((3, size["matches"] + 1), dtype=np.int64)
        self.out_pos = np.zeros(size["positions"], dtype=np.int64)
        self.out_lab = np.zeros(size["positions"] if self.labels else 1, dtype=np.int64)
        self.compact_at = self._compact_min()
        self.compactions = 0

    # ------------------------------------------------------------------ public API

    @property
    def label_sets(self) -> list[tuple[str, ...]]:
        """Label sets by id (the ids in KernelMatches.labels)."""
        return self.tables.label_sets

    def process(self, *batch: np.ndarray | None) -> KernelMatches:
        """Process a batch of events (``process_chunks``'s arguments: symbols, positions,
        measures, then optionally key codes and missing); return the complex events it
        triggers (all at once)."""
        chunks = list(self.process_chunks(*batch))  # type: ignore[arg-type]
        return KernelMatches.concat(chunks, self.label_sets, self.labels)

    def process_chunks(
        self,
        symbols: np.ndarray,
        positions: np.ndarray,
        measures: np.ndarray,
        key_codes: np.ndarray | None = None,
        missing: np.ndarray | None = None,
    ) -> Iterator[KernelMatches]:
        """Process a batch of events, yielding its complex events in chunks of bounded size.

        ``symbols``, ``positions`` (increasing) and ``measures`` (any int64) have one entry per
        event; ``missing`` flags the events without a window measure (default: the measures equal
        to MISSING); ``key_codes`` too when partitioned (dense codes >= 0 that stay the same for
        a key across batches, -1 for events without a key). Consume the iterator fully before
        the next call."""
        n = len(symbols)
        # One array type for numba (contiguous, writable), so that it compiles one version.
        symbols = np.require(symbols, np.int64, _ARGS)
        positions = np.require(positions, np.int64, _ARGS)
        measures = np.require(measures, np.int64, _ARGS)
        miss = np.ascontiguousarray(measures == k.MISSING if missing is None else missing, dtype=np.bool_)
        if key_codes is None:
            if self.partitioned:
                raise ValueError("a partitioned evaluator needs key codes")
            codes = np.zeros(n, dtype=np.int64)
        else:
            codes = np.require(key_codes, np.int64, _ARGS)
            if n and codes.max() >= len(self.slot_of):
                self.slot_of = _grow1(self.slot_of, int(codes.max()) + 1, -1)
        if n:
            top = int(symbols.max()) + 1
            if top > self.tables.table.shape[1]:
                self.tables.ensure(len(self.det.subsets), top)
        index = 0
        while True:
            self._fit_memo()
            status, index, a, b = k.run(
                symbols, measures, miss, codes, positions, index, n, self.cfg, self.st, self.nodes,
                self.tables.table, self.tables.flat, self.tables.final, self.slot_of, self.act,
                self.slot_info, self.free, self.new, self.finals, self.stack, self.path, self.out_m,
                self.out_pos, self.out_lab, self._first, self.memo, self.sel, self.pool,
            )  # fmt: skip
            if status == k.DONE:
                break
            if status == k.NEED_TRANSITION:
                self.tables.fill(int(a), int(b))
            elif status == k.NEED_NODES:
                self._make_room(int(a))
            elif status == k.NEED_SCRATCH:
                self.new = _grow_rows(self.new, int(a))
                self.finals = _grow1(self.finals, int(a), 0)
            elif status == k.NEED_ROW:
                rows = _size(self.act.shape[1], int(a))
                act = np.zeros((self.act.shape[0], rows, 2), dtype=np.int64)
                act[:, : self.act.shape[1]] = self.act
                self.act = act
            elif status == k.NEED_SLOTS:
                self._grow_slots()
            elif status == k.NEED_STACK:
                self.stack = _grow_rows(self.stack, 2 * len(self.stack))
            elif status == k.NEED_PATH:
                self.path = _grow1(self.path, 2 * len(self.path), 0)
            elif status == k.OUTPUT_FULL:
                chunk = self._output_full()
                if chunk is not None:
                    yield chunk
            elif status == k.NEED_CHECK:
                self._check_trigger()
            elif status == k.NEED_MORE:
                self._more()
            elif status == k.NEED_POOL:  # (MAX: the trigger's choice starts again)
                self._grow_pool()
            else:  # pragma: no cover - the loop returns only the statuses above
                raise RuntimeError(f"kernel status {status}")
        chunk = self._take_output(int(self.st[k.S_NMATCH]))
        if chunk is not None:
            yield chunk
        if self.st[k.S_NODES] > self.compact_at:
            self.compact()

    def process_one(
        self, symbol: int, position: int, measure: int, key_code: int = 0, missing: bool = False
    ) -> list[KernelMatches]:
        """One event (``Evaluator.push``): the loop of ``process_chunks`` on cached arrays of
        length one, so that the common case (nothing to grow, no output) costs one call of the
        compiled loop. Anything else falls back to ``process_chunks`` on the same arrays: an
        event the loop stopped before is not applied yet, and an enumeration resumes."""
        one = self._one
        if one is None:
            one = self._one = (*(np.zeros(1, dtype=np.int64) for _ in range(4)), np.zeros(1, dtype=np.bool_))
        symbols, positions, measures, codes, miss = one
        symbols[0] = symbol
        positions[0] = position
        measures[0] = measure
        codes[0] = key_code
        miss[0] = missing
        if key_code < len(self.slot_of) and symbol < self.tables.table.shape[1]:
            self._fit_memo()
            status = k.run(
                symbols, measures, miss, codes, positions, 0, 1, self.cfg, self.st, self.nodes,
                self.tables.table, self.tables.flat, self.tables.final, self.slot_of, self.act,
                self.slot_info, self.free, self.new, self.finals, self.stack, self.path, self.out_m,
                self.out_pos, self.out_lab, self._first, self.memo, self.sel, self.pool,
            )[0]  # fmt: skip
            if status == k.DONE:
                chunk = self._take_output(int(self.st[k.S_NMATCH])) if self.st[k.S_NMATCH] else None
                if self.st[k.S_NODES] > self.compact_at:
                    self.compact()
                return [chunk] if chunk is not None else []
        return list(self.process_chunks(symbols, positions, measures, codes if self.partitioned else None, miss))

    def _grow_pool(self) -> None:
        """Twice the pool, kept (a ranked trigger's walks go on from it); bounded, since its
        rows grow with the candidates a ranked trigger enumerates."""
        rows = 2 * len(self.pool)
        if rows > MAX_POOL_ROWS:
            raise LimitError(
                f"more than {MAX_POOL_ROWS:,} cells of candidates for one trigger of NEXT/LAST/MAX over the "
                "tECS (every candidate failed the checks so far); add or shorten a WITHIN window",
                "max_pool",
                MAX_POOL_ROWS,
            )
        pool = np.zeros((rows, k.POOL_FIELDS), dtype=np.int64)
        pool[: len(self.pool)] = self.pool
        self.pool = pool

    def _fit_memo(self) -> None:
        """With NEXT / LAST, a memo row per node row (grown with the nodes; its generations
        tell stale rows apart, so a fresh or copied array is valid as it is)."""
        if self.sel[k.SEL_MODE] and len(self.memo) < len(self.nodes):
            memo = np.zeros((len(self.nodes), k.MEMO_FIELDS), dtype=np.int64)
            memo[: len(self.memo)] = self.memo
            self.memo = memo

    def live_nodes(self) -> int:
        """Node rows in use after a compaction (a memory measure)."""
        self.compact()
        return int(self.st[k.S_NODES]) - 1

    def live_partitions(self) -> int:
        """Partitions holding a live run."""
        return int(np.count_nonzero(self.slot_info[: self.st[k.S_SLOTS], k.P_CODE] >= 0))

    def compact(self) -> None:
        """Copy the live tECS (pruned by the window) into fresh arrays; drop dead partitions."""
        if self.st[k.S_ENUM]:
            raise RuntimeError("cannot compact while a trigger is being enumerated")
        now = int(self.st[k.S_NOW])
        prune = int(self.cfg[k.C_WINDOW]) >= 0 and bool(self.cfg[k.C_MONOTONE]) and now != k.MISSING
        self.tables.ensure_silent()
        n = int(self.st[k.S_NODES])
        limits = np.empty(n, dtype=np.int64)
        size = k.compact_mark(
            self.nodes,
            self.st,
            self.cfg,
            self.act,
            self.slot_info,
            self.tables.silent,
            prune,
            now if prune else 0,
            limits,
        )
        # Room up to the next compaction (issue 34): growing by doubling from 2 * size to the
        # next compaction point copied the live tECS several times per cycle.
        # (The arrays reach that size before every compaction anyway: the peak is unchanged.)
        rows = max(INITIAL["nodes"], 2, max(self._compact_min(), 2 * size + 2) + 1024)
        out = np.empty((rows, k.NODE_FIELDS), dtype=np.int64)
        k.compact_build(
            self.nodes, self.st, self.cfg, self.act, self.slot_of, self.slot_info, self.free, limits,
            np.empty(n, dtype=np.int64), out,
        )  # fmt: skip
        self.nodes = out
        self.sel[k.SEL_EPOCH] += 1  # node rows renumbered: the bests kept for good are stale
        live = int(self.st[k.S_NODES]) - 1
        self.compact_at = max(self._compact_min(), 2 * live + 2)
        self.compactions += 1
        if self.max_nodes is not None and live > self.max_nodes:
            from ceql.runtime.limits import too_many_nodes

            raise too_many_nodes(live, self.max_nodes)

    def live_positions(self) -> np.ndarray:
        """The positions of the events some node in use refers to (a superset of those a future
        complex event may report: nodes made since the last compaction may be dead)."""
        n = int(self.st[k.S_NODES])
        rows = self.nodes[1:n]
        kinds = rows[:, k.KH] >> 1
        # (An event without a window measure is an output node of its own kind.)
        return rows[(kinds == k.OUTPUT_KIND) | (kinds == k.GONE_KIND), k.POS]

    # ------------------------------------------------------------------ growth and output

    def _compact_min(self) -> int:
        """Node rows in use before a compaction, at least (COMPACT_MIN, read when asked:
        kernel/warm.py lowers it while it compiles)."""
        return COMPACT_MIN if self.compact_min is None else self.compact_min

    def _make_room(self, need: int) -> None:
        used = int(self.st[k.S_NODES])
        if used > self.compact_at:
            self.compact()
            used = int(self.st[k.S_NODES])
        if used + need > len(self.nodes):
            self.nodes = _grow_rows(self.nodes, used + need)

    def _grow_slots(self) -> None:
        size = 2 * self.act.shape[0]
        act = np.zeros((size,) + self.act.shape[1:], dtype=np.int64)
        act[: self.act.shape[0]] = self.act
        self.act = act
        info = np.zeros((size, k.P_FIELDS), dtype=np.int64)
        info[:, k.P_CODE] = -1
        info[: len(self.slot_info)] = self.slot_info
        self.slot_info = info
        self.free = _grow1(self.free, size, 0)

    def _output_full(self) -> KernelMatches | None:
        """The output buffer is full: hand out what is complete, or grow it."""
        nm = int(self.st[k.S_NMATCH])
        take = int(self.st[k.S_TFIRST]) if self.whole_triggers else nm
        capacity = self.out_m.shape[1] - 1
        if capacity < self.max_chunk or take == 0:
            out_m = np.empty((3, 2 * capacity + 1), dtype=np.int64)
            out_m[:, : nm + 1] = self.out_m[:, : nm + 1]
            self.out_m = out_m
            self.out_pos = _grow1(self.out_pos, max(2 * len(self.out_pos), 8 * capacity), 0)
            if self.labels:
                self.out_lab = _grow1(self.out_lab, len(self.out_pos), 0)
            return None
        return self._take_output(take)

    def _trigger_chunk(self) -> KernelMatches:
        """The current trigger's complex events so far (the last ones of the output buffer)."""
        lo, hi = int(self.st[k.S_TFIRST]), int(self.st[k.S_NMATCH])
        ends = self.out_m[k.O_END, lo : hi + 1]
        first, last = int(ends[0]), int(ends[-1])
        return KernelMatches(
            self.out_m[k.O_TRIGGER, lo:hi].copy(),
            self.out_m[k.O_CODE, lo:hi].copy() if self.partitioned else np.zeros(hi - lo, dtype=np.int64),
            ends - first,
            self.out_pos[first:last].copy(),
            self.out_lab[first:last].copy() if self.labels else None,
            self.label_sets,
        )

    def _keep_trigger(self, chunk: KernelMatches, keep: np.ndarray) -> None:
        """Leave only the ``keep`` ones of the current trigger's complex events (``chunk``)."""
        if keep.all():
            return
        lo = int(self.st[k.S_TFIRST])
        first = int(self.out_m[k.O_END, lo])
        counts = np.diff(chunk.offsets)
        events = np.repeat(keep, counts)
        kept = int(keep.sum())
        total = int(counts[keep].sum())
        self.out_pos[first : first + total] = chunk.positions[events]
        if self.labels:
            self.out_lab[first : first + total] = chunk.labels[events]  # type: ignore[index]
        self.out_m[k.O_TRIGGER, lo : lo + kept] = chunk.trigger[keep]
        self.out_m[k.O_CODE, lo : lo + kept] = chunk.partition[keep]
        self.out_m[k.O_END, lo + 1 : lo + kept + 1] = first + np.cumsum(counts[keep])
        self.st[k.S_NMATCH] = lo + kept
        self.st[k.S_NPOS] = first + total
        self.st[k.S_TCOUNT] = kept

    def _check_trigger(self) -> None:
        """Keep only the current trigger's complex events that ``check`` accepts (they are the
        last ones of the output buffer); the kernel then consumes if some are left."""
        chunk = self._trigger_chunk()
        self._keep_trigger(chunk, np.asarray(self.check(chunk), dtype=bool))  # type: ignore[misc]

    def _more(self) -> None:
        """A trigger's enumeration paused (C_LAZY): keep what passes; end the trigger when that
        is enough, else go on for twice as many."""
        chunk = self._trigger_chunk()
        keep, enough = self.more(chunk)  # type: ignore[misc]
        self._keep_trigger(chunk, np.asarray(keep, dtype=bool))
        self.sel[k.SEL_CHECKED] = self.st[k.S_TCOUNT]  # (ranked: what is out is checked)
        if enough:
            self.st[k.S_SP] = 0
            self.st[k.S_FINAL] = self.st[k.S_NFINALS]
        else:
            self.st[k.S_STOP] = int(self.st[k.S_TCOUNT]) + 2 * int(self.st[k.S_STOP])

    def process_one_lists(
        self, symbol: int, position: int, measure: int, key_code: int = 0, missing: bool = False
    ) -> list[tuple[int, int, list[int], list[int] | None]]:
        """``process_one`` with its complex events as Python lists, (trigger, partition code,
        positions, label-set ids) each: for a caller that reads a few per event (NOT FOLLOWED
        BY's push, kernel/absence.py) without building arrays."""
        out: list[tuple[int, int, list[int], list[int] | None]] = []
        one = self._one
        if one is None:
            one = self._one = (*(np.zeros(1, dtype=np.int64) for _ in range(4)), np.zeros(1, dtype=np.bool_))
        symbols, positions, measures, codes, miss = one
        symbols[0], positions[0], measures[0], codes[0], miss[0] = symbol, position, measure, key_code, missing
        st = self.st
        if not st[k.S_NMATCH] and key_code < len(self.slot_of) and symbol < self.tables.table.shape[1]:
            self._fit_memo()
            status = k.run(
                symbols, measures, miss, codes, positions, 0, 1, self.cfg, st, self.nodes,
                self.tables.table, self.tables.flat, self.tables.final, self.slot_of, self.act,
                self.slot_info, self.free, self.new, self.finals, self.stack, self.path, self.out_m,
                self.out_pos, self.out_lab, self._first, self.memo, self.sel, self.pool,
            )[0]  # fmt: skip
            if status == k.DONE:
                n = int(st[k.S_NMATCH])
                if n:  # read the buffer as lists, then empty it (what _take_output does)
                    npos = int(st[k.S_NPOS])
                    ends = self.out_m[k.O_END, : n + 1].tolist()
                    triggers = self.out_m[k.O_TRIGGER, :n].tolist()
                    parts = self.out_m[k.O_CODE, :n].tolist() if self.partitioned else [0] * n
                    pos = self.out_pos[:npos].tolist()
                    lab = self.out_lab[:npos].tolist() if self.labels else None
                    for i in range(n):
                        a, b = ends[i], ends[i + 1]
                        out.append((triggers[i], parts[i], pos[a:b], lab[a:b] if lab is not None else None))
                    self.out_m[k.O_END, 0] = 0
                    st[k.S_NMATCH] = 0
                    st[k.S_NPOS] = 0
                    st[k.S_TFIRST] = 0
                if st[k.S_NODES] > self.compact_at:
                    self.compact()
                return out
        for chunk in self.process_chunks(symbols, positions, measures, codes if self.partitioned else None, miss):
            ends = chunk.offsets.tolist()
            pos = chunk.positions.tolist()
            lab = chunk.labels.tolist() if chunk.labels is not None else None
            for i, (t, c) in enumerate(zip(chunk.trigger.tolist(), chunk.partition.tolist())):
                out.append((t, c, pos[ends[i] : ends[i + 1]], lab[ends[i] : ends[i + 1]] if lab is not None else None))
        return out

    def _take_output(self, take: int) -> KernelMatches | None:
        """Remove the first ``take`` complex events from the buffer as a KernelMatches. Large
        outputs keep the buffer's arrays (views, no copy) and the buffer gets new ones."""
        if take == 0:
            return None
        nm = int(self.st[k.S_NMATCH])
        npos = int(self.st[k.S_NPOS])
        cut = int(self.out_m[k.O_END, take])
        rest = nm - take
        out_m, out_pos, out_lab = self.out_m, self.out_pos, self.out_lab
        give_away = cut >= 1 << 16
        if give_away:
            self.out_m = np.empty_like(out_m)
            self.out_pos = np.empty_like(out_pos)
            self.out_lab = np.empty_like(out_lab)
        chunk = KernelMatches(
            out_m[k.O_TRIGGER, :take] if give_away else out_m[k.O_TRIGGER, :take].copy(),
            _codes(out_m, take, give_away) if self.partitioned else np.broadcast_to(np.int64(0), (take,)),
            out_m[k.O_END, : take + 1] if give_away else out_m[k.O_END, : take + 1].copy(),
            out_pos[:cut] if give_away else out_pos[:cut].copy(),
            (out_lab[:cut] if give_away else out_lab[:cut].copy()) if self.labels else None,
            self.label_sets,
        )
        self.out_m[:2, :rest] = out_m[:2, take:nm]
        self.out_m[k.O_END, : rest + 1] = out_m[k.O_END, take : nm + 1] - cut
        self.out_pos[: npos - cut] = out_pos[cut:npos]
        if self.labels:
            self.out_lab[: npos - cut] = out_lab[cut:npos]
        self.st[k.S_NMATCH] = rest
        self.st[k.S_NPOS] = npos - cut
        self.st[k.S_TFIRST] = max(0, int(self.st[k.S_TFIRST]) - take)
        return chunk

    # ------------------------------------------------------------------ state as arrays

    def export_state(self) -> dict:
        """The dynamic state as numpy arrays (after a compaction), plus ``det_states``: the
        machine-state subsets of the determinized states it uses (plain Python data, to map
        them into another process's automaton) and ``label_sets`` (tuples of label names).
        Restore with ``import_state`` on an evaluator of the same query."""
        self.compact()
        n = int(self.st[k.S_NODES])
        nodes = self.nodes[:n]
        slots = np.nonzero(self.slot_info[: self.st[k.S_SLOTS], k.P_CODE] >= 0)[0]
        counts = self.slot_info[slots, k.P_COUNT]
        entries = (
            np.concatenate([self.act[s, :c] for s, c in zip(slots, counts)])
            if len(slots)
            else np.zeros((0, 2), np.int64)
        )
        used = sorted({int(s) for s in entries[:, 0]})
        return {
            "version": np.array([STATE_VERSION]),
            "consumed_at": np.array([self.st[k.S_CONSUMED_AT]]),
            "now": np.array([self.st[k.S_NOW]]),
            "partition_code": self.slot_info[slots, k.P_CODE].copy(),
            "partition_consumed": self.slot_info[slots, k.P_CONSUMED].copy(),
            "partition_offsets": np.concatenate([[0], np.cumsum(counts)]).astype(np.int64),
            "entry_state": entries[:, 0].copy(),
            "entry_node": entries[:, 1].copy(),
            "node_kind": (nodes[:, k.KH] >> 1).copy(),
            "node_has_empty": (nodes[:, k.KH] & 1).astype(bool),
            "node_position": nodes[:, k.POS].copy(),
            "node_label_set": nodes[:, k.LAB].copy(),
            "node_left": nodes[:, k.A].copy(),
            "node_right": nodes[:, k.B].copy(),
            "node_max_first": nodes[:, k.MF].copy(),
            "node_min_first": nodes[:, k.MINF].copy(),
            "node_measure": nodes[:, k.M].copy(),
            "det_state_ids": np.array(used, dtype=np.int64),
            "det_states": [self.det.subsets[s] for s in used],
            "label_sets": list(self.label_sets),
        }

    def import_state(self, state: dict) -> None:
        """Load a state made by ``export_state`` (same query, any process)."""
        if int(state["version"][0]) != STATE_VERSION:
            raise ValueError("unknown kernel state version")
        kind = np.asarray(state["node_kind"], dtype=np.int64)
        n = len(kind)
        left = np.asarray(state["node_left"], dtype=np.int64)
        right = np.asarray(state["node_right"], dtype=np.int64)
        rows = np.arange(n)
        if (
            n == 0
            or kind[0] != k.BOTTOM_KIND
            or np.any(left[1:] >= rows[1:])
            or np.any(right[1:] >= rows[1:])
        ):
            raise ValueError("malformed kernel state: nodes must follow BOTTOM, children before parents")
        state_map = {
            int(old): self.det.intern(subset)
            for old, subset in zip(state["det_state_ids"], state["det_states"])
        }
        label_map = np.array(
            [self.tables.label_id(tuple(ls)) for ls in state["label_sets"]] or [0], dtype=np.int64
        )
        self._reset()
        nodes = np.zeros((max(INITIAL["nodes"], 2 * n), k.NODE_FIELDS), dtype=np.int64)
        nodes[:n, k.MF] = state["node_max_first"]
        nodes[:n, k.MINF] = state["node_min_first"]
        nodes[:n, k.KH] = (kind << 1) | np.asarray(state["node_has_empty"], dtype=np.int64)
        nodes[:n, k.POS] = state["node_position"]
        outputs = kind == k.OUTPUT_KIND
        labels = np.asarray(state["node_label_set"], dtype=np.int64)
        nodes[:n, k.LAB] = np.where(outputs, label_map[np.where(outputs, labels, 0)], 0)
        nodes[:n, k.A] = left
        nodes[:n, k.B] = right
        nodes[:n, k.M] = state["node_measure"]
        self.nodes = nodes
        self.sel[k.SEL_EPOCH] += 1  # (the bests kept for good were of other nodes)
        self.st[k.S_NODES] = n
        self.st[k.S_CONSUMED_AT] = int(state["consumed_at"][0])
        self.st[k.S_NOW] = int(state["now"][0])
        codes = np.asarray(state["partition_code"], dtype=np.int64)
        offsets = np.asarray(state["partition_offsets"], dtype=np.int64)
        entry_state = np.array([state_map[int(s)] for s in state["entry_state"]], dtype=np.int64)
        entry_node = np.asarray(state["entry_node"], dtype=np.int64)
        if len(entry_node) and (entry_node.min() < 0 or entry_node.max() >= n):
            raise ValueError("malformed kernel state: an entry refers to a missing node")
        self.tables.ensure(len(self.det.subsets), self.tables.table.shape[1])
        width = max(INITIAL["row"], int(np.diff(offsets).max()) if len(codes) else 0)
        slots = max(len(codes), 1 if not self.partitioned else INITIAL["slots"])
        self.act = np.zeros((slots, width, 2), dtype=np.int64)
        self.slot_info = np.zeros((slots, k.P_FIELDS), dtype=np.int64)
        self.slot_info[:, k.P_CODE] = -1
        self.free = np.zeros(slots, dtype=np.int64)
        self.slot_of = np.full(
            max(len(self.slot_of), int(codes.max()) + 1 if len(codes) else 0), -1, dtype=np.int64
        )
        for slot, code in enumerate(codes):
            lo, hi = int(offsets[slot]), int(offsets[slot + 1])
            self.act[slot, : hi - lo, 0] = entry_state[lo:hi]
            self.act[slot, : hi - lo, 1] = entry_node[lo:hi]
            self.slot_info[slot] = (hi - lo, int(state["partition_consumed"][slot]), int(code))
            self.slot_of[int(code)] = slot
        self.st[k.S_SLOTS] = len(codes)
        if not self.partitioned and len(codes) == 0:
            raise ValueError("malformed kernel state: an unpartitioned evaluator has one partition")
        self.compact_at = max(self._compact_min(), 2 * n)


def _codes(out_m: np.ndarray, take: int, give_away: bool) -> np.ndarray:
    return out_m[k.O_CODE, :take] if give_away else out_m[k.O_CODE, :take].copy()


def _size(current: int, needed: int) -> int:
    size = max(current, 1)
    while size < needed:
        size *= 2
    return size


def _grow1(array: np.ndarray, needed: int, fill: int) -> np.ndarray:
    if needed <= len(array):
        return array
    out = np.full(_size(len(array), needed), fill, dtype=array.dtype)
    out[: len(array)] = array
    return out


def _grow_rows(array: np.ndarray, needed: int) -> np.ndarray:
    if needed <= len(array):
        return array
    # Rows past the old end are written before they are read (no need to clear them).
    out = np.empty((_size(len(array), needed),) + array.shape[1:], dtype=array.dtype)
    out[: len(array)] = array
    return out
