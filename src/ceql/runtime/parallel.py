"""Every core of one machine: the compiled kernel over key groups or time shards, in threads.

``Query.run(events, workers=N)`` (``ceql run --workers N``) evaluates a plan the kernel supports
with N kernels, one per thread. numba's compiled loop runs without the GIL (``nogil=True``), and
so does most of the per-batch Arrow and numpy work, so the threads use N cores. Each worker owns a
whole PlanKernel over its own copy of the plan (symbols, lazily determinized automaton, key
codes): no mutable state is shared between threads.

Nothing per event runs on the calling thread. The input is cut into pieces (the one-core run's
batches: zero-copy slices of Arrow input); per batch of pieces:

1. **prepare** (a job per piece, spread over the workers): type the piece (the one-core
   typing), find its event types, window measures and time-order facts, and for a keyed plan
   the worker of each event (``parallel_keys.split_rows``: a hash of its key, of any type, then a
   counting sort of the rows by worker: the piece is split once, column-wise).
2. the calling thread combines the pieces' facts (O(1) per piece): the first piece with an
   input error (typing, missing time, time order) ends the run there, after the matches of the
   pieces before it, as on one core; a piece with an error is checked again on this thread
   only to raise the one-core error itself.
3. **evaluate** (a job per worker): a keyed plan's worker takes its events of the batch's
   pieces (slices: a piece's rows were put in worker order when it was prepared; event_type
   rebuilt from the type indexes) and runs them at their stream positions in one kernel call
   (NOT FOLLOWED BY: piece by piece where a deadline may overflow); a sharded
   plan's worker runs its run of rows (see below). Each worker projects its complex events (``PlanKernel.columns``) and, for
   ``arrow``, builds the record batches.
4. the output, merged by trigger (a trigger belongs to one worker; its complex events come in
   the kernel's order, so the result is the one-core result in the same order): ``arrow``
   merges each batch in the workers (each a range of triggers) and concatenates; ``matches``
   and ``ceql run`` merge lazily (``parallel_merge.KWayMerge``) from bounded queues, one chunk
   per worker, so a lazy run holds about one core's output at a time.

How a plan splits (``plan_split`` says, or why not):

- **keys** (``PARTITION BY``, keys of any types, CONSUME BY NONE or PARTITION): every event goes
  to the worker its key hashes to, so each sub-stream is wholly in one worker, which sees its
  events at their positions in the whole stream. Its complex events are exactly those of the
  one-core run.
- **keys, NOT FOLLOWED BY** (``parallel_absence.py``): by the key of ``compile.plan.split_keys``
  (a PARTITION BY of one attribute, or the equality linking g to a one-event f); each worker
  waits for its keys' deadlines, which pass at the events of the whole piece (its *clock*, found
  when the piece is prepared). Matches due at one event come from several workers: the merge
  orders them as one core does (``parallel_merge.merge``, by each match's rank), and at the end
  of the input (``finish``) every worker reports what still waits.
- **shards** (no partition, a ``WITHIN`` window on a non-decreasing measure, CONSUME BY NONE, no
  START): each batch is cut into N runs of rows; the worker of a later run first reads the
  events of the window before it (the overlap) and reports only the complex events it triggers
  in its own run. A complex event lies within the window of its trigger, so the overlap holds
  every event it can use. The worker of the first run carries its state from the batch before.
  A run whose window reaches back past the batch's start joins the run before it (a window
  longer than the batch: the carrying worker alone).

Only the stateless ``run`` path uses workers: an ``Evaluator`` (push, saved state) runs on one
core. Inputs under ``MIN_ROWS`` events, plans without a split, and options the kernel does not
take (``engine="python"``, ``type_labels``) run on one core too; ``use_workers`` says so once
(``warnings`` and the ``ceql`` logger) when workers were asked for a plan or options that
cannot use them.

Ctrl-C and SIGTERM (``ceql run`` turns it into SystemExit) reach the calling thread, which only
waits on queues and events: the run ends at once, and the workers stop at their next chunk.
"""

from __future__ import annotations

import itertools
import logging
import os
import queue
import threading
import time
import warnings
import weakref
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
import pyarrow as pa

from ceql.compile.plan import Plan, build_plan
from ceql.errors import EventError
from ceql.match import Match
from ceql.runtime.arrow import MatchColumns, MatchRows, record_batch
from ceql.runtime.batches import DEFAULT_BATCH, BatchBuilder, iter_tables
from ceql.runtime.kernel.absence import INT64_MAX, own_plan
from ceql.runtime.kernel.compiled import C_ANCHORED, MISSING
from ceql.runtime.kernel.engine import COMPACT_MIN, MAX_CHUNK_MATCHES
from ceql.runtime.kernel.runner import PlanKernel, unsupported
from ceql.runtime.parallel_absence import SplitAbsence, absence_split, clock_of, merged_finish
from ceql.runtime.parallel_keys import split_rows
from ceql.runtime.parallel_merge import END, KWayMerge, before, error_row, from_trigger, merge

#: Inputs with fewer events run on one core (threads do not pay off on small inputs).
MIN_ROWS = 100_000
#: ``ceql run``: workers start when the first chunk read has at least this many events.
CHUNK_MIN_ROWS = 20_000
#: Pieces of the one-core batch size per worker in one batch: larger batches amortise the
#: per-batch synchronisation, merge and kernel call (a keyed worker runs its rows of a whole
#: batch in one call, ``ParallelKernel._groups``).
PIECES_PER_WORKER = 8

#: Node rows a worker's kernel keeps in use before compacting, at least (one core: COMPACT_MIN).
WORKER_COMPACT_MIN = 4096

logger = logging.getLogger("ceql")


class _Cancelled(Exception):
    """The run ended (an error, Ctrl-C, the caller stopped iterating): a worker gives up."""


def cores() -> int:
    """The cores this process may run on (the default worker count of ``ceql run``)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - platforms without affinity
        return max(1, os.cpu_count() or 1)


def plan_split(plan: Plan) -> tuple[str | None, str]:
    """How workers split this plan: ("keys" or "shards", how), or (None, why it runs on one
    core)."""
    if plan.absence is not None:  # by key, the deadlines passing at the whole stream's events
        routing, how = absence_split(plan)
        return ("keys" if routing is not None else None), how
    reason = unsupported(plan)
    if reason is not None:
        return None, f"the compiled kernel does not evaluate {reason}"
    runner = PlanKernel(plan)
    kernel_plan = runner.plan
    consume = kernel_plan.consume
    if runner.partitioned:
        if consume not in ("NONE", "PARTITION"):
            return None, f"CONSUME BY {consume} across partitions needs the whole stream in order"
        keys = ", ".join("[" + ", ".join(group) + "]" for group in kernel_plan.partition_groups)
        return "keys", f"by the partition key {keys}: each worker evaluates the sub-streams of its keys"
    within = kernel_plan.checked.query.within
    if bool(runner.kernel.cfg[C_ANCHORED]):
        return None, "START anchors matches at the stream's start: a shard cannot start afresh"
    if consume != "NONE":
        return None, f"CONSUME BY {consume} needs the whole stream in order"
    if within is None:
        return None, "no PARTITION BY and no WITHIN window: a complex event may span the whole stream"
    if not kernel_plan.monotone:
        return None, "the WITHIN attribute does not grow with the stream: no shard holds a whole window"
    return "shards", "by runs of events: each worker reads the window before its run, then reports its run's triggers"


def split_of(plan: Plan) -> str | None:
    """How workers split this plan: "keys", "shards", or None (it runs on one core)."""
    return plan_split(plan)[0]


def rows_of(events: Any) -> int | None:
    """The number of events of an Arrow or pandas input (None for other inputs)."""
    rows = getattr(events, "num_rows", None)
    if rows is None and type(events).__module__.startswith("pandas"):
        rows = len(events)
    return rows


def use_workers(plan: Plan, events: Any, workers: int | None, options: dict) -> bool:
    """Whether ``Query.run`` evaluates ``events`` with several workers. Workers asked for a
    plan or options that cannot use them say why, once per run (small inputs run on one core
    by design and say nothing)."""
    if workers is None or workers <= 1:
        return False
    why = None
    if options.get("engine", "auto") == "python":
        why = 'engine="python" runs on one core'
    elif options.get("type_labels"):
        why = "type_labels runs on the Python path, on one core"
    elif os.environ.get("CEQL_KERNEL") == "0":
        why = "CEQL_KERNEL=0 turns the compiled kernel off"
    else:
        split, reason = plan_split(plan)
        if split is None:
            why = reason
    if why is not None:
        say_one_core(workers, why)
        return False
    rows = rows_of(events)
    return rows is not None and rows >= MIN_ROWS


def say_one_core(workers: int, why: str, stacklevel: int = 4) -> None:
    """Tell the caller that the workers it asked for are not used, and why (``stacklevel``:
    the caller's frame, for the warning's location)."""
    message = f"workers={workers} not used, the query runs on one core: {why}"
    logger.info(message)
    warnings.warn(message, RuntimeWarning, stacklevel=stacklevel)


# ---------------------------------------------------------------------- threads


class _Result:
    """What a job gives, once done (its value, or the exception it raised)."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.ok = True
        self.value: Any = None

    def get(self) -> Any:
        self.done.wait()  # interruptible (Ctrl-C, SIGTERM as SystemExit) on POSIX
        if not self.ok:
            raise self.value
        return self.value


class _Pool:
    """N threads, each running the jobs given to it in order. ``cancel`` ends the run: jobs not
    started are skipped, running ones stop at their next chunk."""

    def __init__(self, count: int) -> None:
        self.cancel = threading.Event()
        self.jobs: list[queue.SimpleQueue] = [queue.SimpleQueue() for _ in range(count)]
        self.cpu = [0.0] * count  # CPU seconds of each thread's jobs (benchmarks/workers.py)
        for w in range(count):
            thread = threading.Thread(target=self._loop, args=(w,), daemon=True, name=f"ceql-worker-{w}")
            thread.start()

    def _loop(self, w: int) -> None:
        jobs = self.jobs[w]
        while True:
            item = jobs.get()
            if item is None:
                return
            job, result = item
            started = time.thread_time()
            try:
                if self.cancel.is_set():
                    raise _Cancelled
                result.value = job()
            except BaseException as error:  # noqa: BLE001 - handed to the calling thread
                result.ok, result.value = False, error
            self.cpu[w] += time.thread_time() - started
            result.done.set()

    def submit(self, w: int, job: Callable[[], Any]) -> _Result:
        result = _Result()
        self.jobs[w].put((job, result))
        return result

    def put(self, channel: queue.Queue, item: Any) -> None:
        """Hand ``item`` to the calling thread, waiting for room (bounded), unless cancelled."""
        while True:
            try:
                channel.put(item, timeout=0.05)
                return
            except queue.Full:
                if self.cancel.is_set():
                    raise _Cancelled from None

    def stop(self) -> None:
        self.cancel.set()
        for jobs in self.jobs:
            jobs.put(None)


def _stop(pool: _Pool) -> None:
    pool.stop()


# ---------------------------------------------------------------------- pieces


@dataclass
class _Piece:
    """One piece of the input, prepared by a worker."""

    first: int  # stream position of its first row
    rows: int
    table: pa.Table | None = None  # typed
    error: BaseException | None = None  # typing failed (the first bad row)
    types: np.ndarray | None = None
    measures: np.ndarray | None = None  # window measures (time and attribute windows)
    missing: np.ndarray | None = None
    reached: np.ndarray | None = None  # shards: running maximum of the measures (MISSING: none)
    owners: np.ndarray | None = None  # keys: the rows, grouped by worker (ascending in each)
    bounds: np.ndarray | None = None  # keys: worker w's rows are owners[bounds[w]:bounds[w + 1]]
    grouped: pa.Table | None = None  # keys: the rows in ``owners``' order, without event_type
    grouped_types: np.ndarray | None = None  # keys: their type indexes
    suspect: bool = False  # a missing time or a time out of order inside the piece
    first_time: int | None = None  # time-ordered plans: the piece's first and last times
    last_time: int | None = None
    own_last_time: int | None = None  # NOT FOLLOWED BY: the last time of f's types
    late: bool = False  # NOT FOLLOWED BY: a deadline may lie beyond int64 (an error, per piece)
    clock_pos: np.ndarray | None = None  # NOT FOLLOWED BY: where deadlines may pass (positions
    clock_m: np.ndarray | None = None  # and window measures of the piece's events)


class _Clock:
    """NOT FOLLOWED BY: the clock of a group of pieces (the positions and window measures of
    the events that pass deadlines), concatenated once, by the first worker that reads it, and
    shared: every worker reads the whole clock, and a copy per worker was work per event per
    worker."""

    def __init__(self, group: list[_Piece]) -> None:
        self.group = group
        self.lock = threading.Lock()
        self.arrays: tuple[np.ndarray, np.ndarray] | None = None

    def get(self) -> tuple[np.ndarray, np.ndarray]:
        """(positions, window measures) of the group's clock."""
        with self.lock:
            if self.arrays is None:
                pieces = self.group
                if len(pieces) == 1:
                    self.arrays = (pieces[0].clock_pos, pieces[0].clock_m)  # type: ignore[assignment]
                else:
                    self.arrays = (
                        np.concatenate([piece.clock_pos for piece in pieces]),  # type: ignore[misc]
                        np.concatenate([piece.clock_m for piece in pieces]),  # type: ignore[misc]
                    )
            return self.arrays


def _pandas_piece(frame: Any, builder: BatchBuilder, first: int) -> pa.Table:
    """A slice of a pandas input typed as ``iter_tables`` types it (rows named in the input)."""
    try:
        return next(iter_tables(frame, builder, max(1, len(frame))))
    except EventError as error:
        raise EventError(error.reason, None if error.row is None else first + error.row) from None


# ---------------------------------------------------------------------- the runner


class ParallelKernel:
    """A plan evaluated by ``workers`` compiled kernels in threads (see the module docstring).

    ``batch_size``: events per batch (default: ``PIECES_PER_WORKER`` one-core batches per
    worker); pieces are the one-core batch size or ``batch_size`` if smaller, or ``piece``
    (tests make them small, several pieces to a batch)."""

    def __init__(
        self,
        plan: Plan,
        workers: int,
        batch_size: int | None = None,
        evaluator: Any = None,
        piece: int | None = None,
    ) -> None:
        split, why = plan_split(plan)
        if split is None:
            raise ValueError(f"this plan runs on one core: {why}")
        self.split = split
        self.plan = plan
        self.count = workers
        self.batch_size = batch_size or PIECES_PER_WORKER * workers * DEFAULT_BATCH
        self.piece = piece or min(DEFAULT_BATCH, self.batch_size)
        self.absence = plan.absence  # (``ceql run`` asks for ``finish`` at the end when set)
        self.kernels: list[Any] = []
        for _ in range(workers):
            runner: Any = PlanKernel(_copy(plan)) if plan.absence is None else SplitAbsence(_copy(plan))
            pairs = [(runner.plan, plan)] if plan.absence is None else [(runner.own.plan, plan), (runner.cancelling.plan, plan.absence)]
            for mine, given in pairs:
                mine.det.max_states = given.det.max_states
                mine.det.max_work = given.det.max_work
            # Keys: a 1/N of one core's node pool before the first compaction (a worker holds a
            # 1/N of the keys' state): N pools of one core's size were the keyed workers' largest
            # page faults (16 x 4 MB). (Not shards: a shard's live state is one core's, and
            # compacting it more often mapped more pools than it saved.)
            if split == "keys":
                for kernel in [runner.kernel] if plan.absence is None else [runner.own.kernel, runner.cancelling.kernel]:
                    kernel.compact_min = kernel.compact_at = max(WORKER_COMPACT_MIN, COMPACT_MIN // workers)
            self.kernels.append(runner)
        # Per piece: its measures and time-order facts (read only by the workers); the
        # calling thread checks a suspect piece again, to raise the one-core error. NOT
        # FOLLOWED BY: the cancelling plan's (its types are every type the query names), and
        # f's, which one core checks first.
        copied = _copy(plan)
        self.own_checker: PlanKernel | None = None
        if plan.absence is not None:
            assert copied.absence is not None
            self.checker = PlanKernel(copied.absence)
            self.own_checker = PlanKernel(own_plan(copied))
            names = list(self.own_checker.plan.type_names)
            self.own_types = np.array([names.index(t) if t in names else -1 for t in self.checker.plan.type_names] + [-1])
            self.own_timed = np.flatnonzero(np.isin(self.own_types[:-1], self.own_checker._time_types))
            # The workers' cancelling kernels index types their own way (-1: none; the last item)
            theirs = list(self.kernels[0].cancelling.plan.type_names)
            self.cancel_types = np.array([theirs.index(t) if t in theirs else -1 for t in self.checker.plan.type_names] + [-1])
        else:
            self.checker = PlanKernel(copied)
        self.own_last: int | None = None  # NOT FOLLOWED BY: the last time of f's types so far
        # Per type index (the last item: -1, no type), whether its events are timed (lookup
        # tables: numpy's isin took 1-3 ms a piece, a tenth of typing it).
        count = len(self.checker.plan.type_names)
        self.timed_types = np.zeros(count + 1, dtype=bool)
        self.timed_types[self.checker._time_types] = True
        self.own_timed_types = np.zeros(count + 1, dtype=bool)
        if plan.absence is not None:
            self.own_timed_types[self.own_timed] = True
        kernel_plan = self.checker.plan
        self.window_kind = kernel_plan.window_kind
        self.ordered_time = bool(kernel_plan.ordered_time)
        within = kernel_plan.checked.query.within
        self.window = None if within is None else int(within.value)
        self.type_names = pa.array(kernel_plan.type_names, pa.string())
        self.key_groups = self.checker.keys.groups if self.checker.keys is not None else []
        if plan.absence is not None:  # the routing of compile.plan.split_keys
            routing, _ = absence_split(plan)
            assert routing is not None
            index = {name: i for i, name in enumerate(kernel_plan.type_names)}
            grouped: dict[tuple[str, ...], list[int]] = {}
            for name, attributes in routing.items():
                grouped.setdefault(attributes, []).append(index[name])
            self.key_groups = [(attributes, np.array(members, dtype=np.int64)) for attributes, members in grouped.items()]
        self.carry = 0  # shards: the worker whose state reaches the end of the last batch
        self.reached = int(MISSING)  # shards: the largest window measure of the batches so far
        self.last_time: int | None = None  # the time of the last time-ordered event so far
        # Input typing and the output schema: the evaluator's (Query.run, ceql run), else the
        # one-core PlanKernel's.
        self.evaluator = evaluator
        self.builder = evaluator.builder if evaluator is not None else self.checker.builder
        self.reports_partition = self.kernels[0].reports_partition
        self.position = 0  # events given to ``columns`` so far
        self._pool: _Pool | None = None
        self.thread_cpu: list[float] = []  # after a run: each worker's CPU seconds

    # ------------------------------------------------------------------ outputs

    def schema(self, name: str = "query") -> Any:
        """The output schema (fixed once the input has shown how it gives times)."""
        if self.evaluator is not None:
            return self.evaluator.output_schema(name)
        if self.absence is not None:  # (the whole plan's: the checker's is the cancelling plan's)
            from ceql.compile.output_schema import output_schema

            return output_schema(self.plan, time_kinds=self.builder.catalog.time_inputs, name=name)
        return self.checker.output_schema(name=name)

    def arrow(self, events: Any, name: str = "query", max_matches: int | None = None) -> pa.Table:
        """The matches as one Arrow table of the output schema, as on one core (LimitError as
        soon as there are more than ``max_matches``)."""
        from ceql.runtime.limits import too_many_matches

        batches: list[pa.RecordBatch] = []
        found = 0
        pool = _Pool(self.count)
        try:
            schema = self.schema(name)
            ends = ([record_batch(schema, c) for c in self._finished(pool)] for _ in range(1))
            for part in itertools.chain(self._run(pool, self._pieces(events), collect=name), ends):
                batches.extend(part)
                found += sum(b.num_rows for b in part)
                if max_matches and found > max_matches:
                    raise too_many_matches(max_matches)
        finally:
            self.thread_cpu = list(pool.cpu)
            pool.stop()
        return pa.Table.from_batches(batches, schema=self.schema(name).arrow)

    def matches(self, events: Any) -> Iterator[Match]:
        """The matches as Match objects, lazily, in trigger order."""
        pool = _Pool(self.count)
        try:
            ends = (c for _ in range(1) for c in self._finished(pool))  # NOT FOLLOWED BY: at the end
            for columns in itertools.chain(self._run(pool, self._pieces(events)), ends):
                schema = self.schema() if self.evaluator is not None else None  # as PlanKernel.matches
                yield from MatchRows(columns, schema, self.reports_partition)
        finally:
            self.thread_cpu = list(pool.cpu)
            pool.stop()

    def columns(self, table: pa.Table, batch: int = 0) -> Iterator[MatchColumns]:
        """The matches of the next typed table of a stream as MatchColumns (``ceql run``'s
        chunks, as ``Evaluator.columns``): the stream goes on across calls, in threads that
        ``close`` stops."""
        if self._pool is None:
            self._pool = _Pool(self.count)
            self._finalizer = weakref.finalize(self, _stop, self._pool)
        pieces = [
            (table.slice(start, self.piece), self.position + start, True)
            for start in range(0, table.num_rows, self.piece)
        ]
        self.position += table.num_rows
        yield from self._run(self._pool, iter(pieces))

    def finish(self, detailed: bool = False) -> list[Match]:
        """``ceql run`` at the end of the input (as ``Evaluator.finish``): NOT FOLLOWED BY's
        complex events still waiting, at the position after the last event."""
        if detailed:
            raise ValueError("workers do not report events with matches (--with-events runs on one core)")
        if self._pool is None:
            return []
        schema = self.schema() if self.evaluator is not None else None
        return [match for columns in self._finished(self._pool) for match in MatchRows(columns, schema, self.reports_partition)]

    def _finished(self, pool: _Pool) -> list[MatchColumns]:
        """NOT FOLLOWED BY, the input ended: every worker's complex events still waiting,
        merged (none for other plans)."""
        if self.absence is None:
            return []
        jobs = [pool.submit(w, partial(_finish_job, self.kernels[w])) for w in range(self.count)]
        return merged_finish(_gather(jobs))

    def close(self) -> None:
        """Stop the threads ``columns`` started."""
        if self._pool is not None:
            self._finalizer()
            self._pool = None

    # ------------------------------------------------------------------ input pieces

    def _pieces(self, events: Any) -> Iterator[tuple[Any, int, bool]]:
        """(raw piece, its first row, whether it is typed already): zero-copy slices of Arrow
        input and of pandas frames (typed by the workers), else typed tables."""
        if isinstance(events, pa.RecordBatch):
            events = pa.Table.from_batches([events])
        if isinstance(events, pa.Table):
            first = 0
            for piece in events.to_batches(max_chunksize=self.piece):
                yield pa.Table.from_batches([piece]), first, False
                first += piece.num_rows
            return
        if type(events).__module__.startswith("pandas") and hasattr(events, "iloc"):
            for start in range(0, len(events), self.piece):
                yield events.iloc[start : start + self.piece], start, False
            return
        first = 0
        for table in iter_tables(events, self.builder, self.piece):  # rows: typed here
            yield table, first, True
            first += table.num_rows

    def _prepare(self, raw: Any, first: int, typed: bool) -> _Piece:
        """Type one piece and find what the calling thread and the evaluation need (a job)."""
        rows = raw.num_rows if isinstance(raw, pa.Table) else len(raw)
        piece = _Piece(first, rows)
        try:
            if typed:
                table = raw
            elif isinstance(raw, pa.Table):
                table = self.builder.from_table(raw, first, self.builder.notices)
            else:
                table = _pandas_piece(raw, self.builder, first)
        except Exception as error:  # the one-core run raises it after the pieces before
            piece.error = error
            return piece
        piece.table = table
        types = self.checker._type_indexes(table)  # (this thread typed it: no string match)
        piece.types = types
        if self.window_kind not in (None, "events"):
            measures, missing = self.checker._measures(table, types, first)
            piece.measures, piece.missing = measures, missing
            if self.split == "shards":
                piece.reached = np.maximum.accumulate(np.where(missing, MISSING, measures))
            if self.ordered_time:
                timed = self.timed_types[types]
                values = measures[timed]
                piece.suspect = bool(missing[timed].any()) or bool(len(values) > 1 and (np.diff(values) < 0).any())
                if len(values):
                    piece.first_time, piece.last_time = int(values[0]), int(values[-1])
                if self.absence is not None:
                    own = values[self.own_timed_types[types[timed]]]
                    piece.own_last_time = int(own[-1]) if len(own) else None
            if self.absence is not None:
                piece.clock_pos, piece.clock_m = clock_of(types, measures, missing, first)
                assert self.window is not None
                piece.late = bool(len(piece.clock_m)) and int(piece.clock_m.max()) > INT64_MAX - self.window
        elif self.absence is not None:  # n EVENTS: every event passes deadlines
            piece.clock_pos = piece.clock_m = np.arange(first, first + rows, dtype=np.int64)
        if self.split == "keys":
            owners, piece.bounds = split_rows(table, types, self.key_groups, self.count)
            # Grouped by worker here, once (a worker's rows of the piece are then slices): a
            # take per worker from the whole batch read every cache line of it in every worker.
            piece.owners = owners
            piece.grouped = table.drop_columns("event_type").take(pa.array(owners))
            piece.grouped_types = types[owners]
            piece.table = None  # (the grouped copy replaces it)
        return piece

    def _valid(self, prepared: list[_Piece]) -> tuple[list[_Piece], BaseException | None]:
        """The pieces before the first input error, and that error (the one-core run's: the
        first piece with one raises it, typing first, then missing times, then time order)."""
        for i, piece in enumerate(prepared):
            if piece.error is not None:
                return prepared[:i], piece.error
            if not self.ordered_time:
                continue
            late = self.last_time is not None and piece.first_time is not None and piece.first_time < self.last_time
            if piece.suspect or late:
                try:  # the one-core check raises the one-core error (rare: the run ends here)
                    self._recheck(piece)
                except EventError as error:
                    return prepared[:i], error
            if piece.last_time is not None:
                self.last_time = piece.last_time
            if piece.own_last_time is not None:
                self.own_last = piece.own_last_time
        return prepared, None

    def _recheck(self, piece: _Piece) -> None:
        """The one-core time-order check of a suspect piece (NOT FOLLOWED BY: f's kernel checks
        its types first, then the cancelling kernel every type the query names)."""
        assert piece.types is not None and piece.measures is not None and piece.missing is not None
        if self.own_checker is not None:
            self.own_checker.last_time = self.own_last
            own_types = self.own_types[piece.types]
            self.own_checker._check_order(own_types, piece.measures, piece.missing, piece.first)
        self.checker.last_time = self.last_time
        self.checker._check_order(piece.types, piece.measures, piece.missing, piece.first)

    # ------------------------------------------------------------------ the pipeline

    def _run(
        self, pool: _Pool, pieces: Iterator[tuple[Any, int, bool]], collect: str | None = None
    ) -> Iterator[Any]:
        """Per batch: prepare its pieces, evaluate, and give the output (``collect``: the
        query name; lists of record batches per batch; else MatchColumns, lazily)."""
        w = 0

        def submit_batch() -> list[_Result] | BaseException | None:
            nonlocal w
            jobs: list[_Result] = []
            rows = 0
            while rows < self.batch_size:
                try:
                    raw, first, typed = next(pieces)
                except StopIteration:
                    break
                except Exception as error:  # reading failed: after the pieces before it
                    return jobs + [_failed(error)]
                jobs.append(pool.submit(w, partial(self._prepare, raw, first, typed)))
                w = (w + 1) % self.count
                rows += raw.num_rows if isinstance(raw, pa.Table) else len(raw)
            return jobs or None

        try:
            upcoming = submit_batch()
            while upcoming is not None:
                prepared = [job.get() for job in upcoming]  # type: ignore[union-attr]
                valid, error = self._valid(prepared)
                outputs = self._evaluate(pool, valid, collect) if valid else None
                upcoming = submit_batch() if error is None else None  # read on while they work
                if outputs is not None:
                    yield from outputs
                if error is not None:
                    raise error
        except BaseException:  # an error, Ctrl-C, or the caller stopped: the workers stop too
            pool.cancel.set()
            if pool is self._pool:
                self.close()
            raise

    def _evaluate(self, pool: _Pool, valid: list[_Piece], collect: str | None) -> Iterator[Any]:
        """Submit one batch's evaluation; returns the iterator of its output."""
        if self.split == "keys":
            return self._keys(pool, valid, collect)
        return self._shards(pool, valid, collect)

    # ------------------------------------------------------------------ keys

    def _keys(self, pool: _Pool, valid: list[_Piece], collect: str | None) -> Iterator[Any]:
        channels: list[queue.Queue] = [queue.Queue(maxsize=1) for _ in range(self.count)]
        groups = self._groups(valid)
        if self.absence is None:
            job: Callable[..., list] = partial(self._keys_job, groups=groups)
        else:
            job = partial(self._absence_job, clocks=[_Clock(group) for group in groups], groups=groups)
        jobs = [pool.submit(w, partial(job, pool, w, valid, None if collect else channels[w])) for w in range(self.count)]
        if collect is None:
            return _streamed(KWayMerge(channels, [piece.first for piece in valid]), jobs)
        return self._merged(pool, jobs, valid[0].first, valid[-1].first + valid[-1].rows, collect)

    def _groups(self, valid: list[_Piece]) -> list[list[_Piece]]:
        """A keyed batch's pieces in groups, each a worker's kernel call: the whole batch in one
        call (each call, its output chunks and their merge are Python work under the GIL: on 16
        cores, a call per group of N pieces and output chunks of 1/N of one core's used less CPU
        but took 1.1-1.7x the wall time of one call per batch, in one run of
        benchmarks/device_scaling.sh). NOT FOLLOWED BY: piece by piece where a deadline may lie
        beyond int64 (that error comes after the complex events due in the pieces before it,
        as on one core)."""
        if self.absence is not None and any(piece.late for piece in valid):
            return [[piece] for piece in valid]
        return [valid]

    def _keys_job(
        self, pool: _Pool, w: int, valid: list[_Piece], channel: queue.Queue | None, groups: list[list[_Piece]]
    ) -> list:
        """Worker ``w``'s events of the batch, at their stream positions, a kernel call per
        group of pieces (``_groups``: the whole batch), each group taken just before its call."""
        parts = (self._batch_share(w, group) for group in groups)
        return self._emit(pool, self.kernels[w], (part for part in parts if part[0] is not None), None, channel, None)

    def _absence_job(
        self,
        pool: _Pool,
        w: int,
        valid: list[_Piece],
        channel: queue.Queue | None,
        clocks: list[_Clock],
        groups: list[list[_Piece]],
    ) -> list:
        """NOT FOLLOWED BY: worker ``w``'s events of each group of pieces (or none), then the
        deadlines the group's clock passes (``SplitAbsence.process_part``), a call per group."""
        return self._emit(pool, self.kernels[w], self._absence_parts(w, groups, clocks), None, channel, None)

    def _absence_parts(self, w: int, groups: list[list[_Piece]], clocks: list[_Clock]) -> Iterator[tuple]:
        """``SplitAbsence.process_part``'s arguments per group, each taken just before its call."""
        for group, clock in zip(groups, clocks):
            table, positions, types = self._batch_share(w, group)
            kinds = None if types is None else self.cancel_types[types]
            yield table, positions, clock.get, group[-1].first + group[-1].rows, kinds

    def _batch_share(self, w: int, valid: list[_Piece]) -> tuple[pa.Table | None, np.ndarray | None, np.ndarray | None]:
        """Worker ``w``'s rows of a group of pieces as one table (slices of the pieces' grouped
        rows, no copy), with their stream positions and type indexes (None: it has none). Its
        event_type column is rebuilt from the rows' type indexes as a dictionary column (the
        kernel, given the types, reads it only in rare cases; taking the strings cost as much as
        every other column): an unknown type is null."""
        tables, positions, types = [], [], []
        for piece in valid:
            assert piece.grouped is not None and piece.owners is not None and piece.bounds is not None
            assert piece.grouped_types is not None
            lo, hi = int(piece.bounds[w]), int(piece.bounds[w + 1])
            if hi > lo:
                tables.append(piece.grouped.slice(lo, hi - lo))
                positions.append(piece.owners[lo:hi] + piece.first)
                types.append(piece.grouped_types[lo:hi])  # (the kernel need not find them again)
        if not tables:
            return None, None, None
        kinds = np.concatenate(types)
        unknown = kinds < 0
        codes = pa.array(kinds.astype(np.int32), mask=unknown if unknown.any() else None)
        names = pa.DictionaryArray.from_arrays(codes, self.type_names, safe=False)  # (indexes < len)
        table = pa.concat_tables(tables)
        table = table.add_column(0, "event_type", names)  # (first, as typed tables have it)
        return table, np.concatenate(positions), kinds

    def _merged(self, pool: _Pool, jobs: list[_Result], lo: int, hi: int, name: str) -> Iterator[list]:
        """The keyed batch's outputs merged by trigger in the workers (each a range of
        triggers), as lists of record batches."""
        outputs = _gather(jobs)
        schema = self.schema(name)
        cuts = [lo + (hi - lo) * i // self.count for i in range(self.count + 1)]
        merges = [
            pool.submit(w, partial(_merge_range, outputs, cuts[w], cuts[w + 1], schema)) for w in range(self.count)
        ]
        for job in merges:
            yield job.get()

    # ------------------------------------------------------------------ shards

    def _shards(self, pool: _Pool, valid: list[_Piece], collect: str | None) -> Iterator[Any]:
        table = pa.concat_tables([p.table for p in valid])
        base, n = valid[0].first, table.num_rows
        cuts = [n * i // self.count for i in range(self.count + 1)]
        starts = self._overlaps(cuts, base, valid)
        runs = [(0, 0, cuts[1])]  # (first row read, first row reported, end)
        for shard in range(1, self.count):
            start = starts[shard]
            if start is None:  # its window reaches into the batch before: the run before goes on
                runs[-1] = (runs[-1][0], runs[-1][1], cuts[shard + 1])
            else:
                runs.append((start, cuts[shard], cuts[shard + 1]))
        carry = self.carry
        order = [carry] + [w for w in range(self.count) if w != carry]
        schema = self.schema(collect) if collect is not None else None
        jobs, channels = [], []
        for i, (start, own, end) in enumerate(runs):
            w = order[i]
            channel: queue.Queue | None = queue.Queue(maxsize=1) if collect is None else None
            channels.append(channel)
            piece = table.slice(start, end - start)
            if i == 0:
                job = partial(self._emit, pool, self.kernels[w], _tables(piece), None, channel, schema)
            else:
                job = partial(self._fresh, pool, self.kernels[w], piece, base + start, base + own, channel, schema)
            jobs.append(pool.submit(w, job))
        self.carry = order[len(runs) - 1]
        for piece in valid:  # the largest measure so far (time and attribute windows)
            if piece.reached is not None and len(piece.reached):
                self.reached = max(self.reached, int(piece.reached[-1]))
        if collect is None:
            return _streamed(_chain(channels), jobs)
        return _collected(jobs)

    def _overlaps(self, cuts: list[int], base: int, valid: list[_Piece] | None) -> list[int | None]:
        """Per shard, the first row its worker reads (the window before the shard's first row;
        rows of the batch), or None when that window reaches into the batch before."""
        window = self.window
        assert window is not None
        starts: list[int | None] = [0]
        for cut in cuts[1:-1]:
            if self.window_kind == "events":  # the measure is the position
                start = cut - 1 - window
            else:
                start = _window_start(valid or [], base, cut, window, self.reached)
            starts.append(start if start is not None and start > 0 else None)
        return starts

    def _fresh(
        self,
        pool: _Pool,
        runner: PlanKernel,
        table: pa.Table,
        position: int,
        own: int,
        channel: queue.Queue | None,
        schema: Any,
    ) -> list:
        """A worker starting over at ``position``; it reports the triggers from ``own`` on."""
        runner.kernel._reset()
        if runner.kept is not None:
            runner.kept.load({})  # nothing kept: the run starts over
        runner.position = position
        runner.last_time = None
        return self._emit(pool, runner, _tables(table), own, channel, schema)

    # ------------------------------------------------------------------ output of one worker

    def _emit(
        self,
        pool: _Pool,
        runner: PlanKernel,
        parts: Iterable[tuple],
        own: int | None,
        channel: queue.Queue | None,
        schema: Any,
    ) -> list:
        """One worker's matches of consecutive tables (each with its rows' positions, or None:
        the next ones, and its rows' event types, or None; NOT FOLLOWED BY: the arguments of
        ``SplitAbsence.process_part``), from trigger ``own`` on: put into ``channel`` one chunk
        at a time, or returned as MatchColumns (``schema``: as record batches)."""
        out: list = []
        kernel = runner.kernel
        if channel is not None:  # a lazy run: smaller chunks, so N workers hold one core's
            kernel.max_chunk = max(1024, MAX_CHUNK_MATCHES // (2 * self.count))
        else:  # one core's chunks: fewer chunks to build and merge under the GIL (_groups)
            kernel.max_chunk = MAX_CHUNK_MATCHES
        try:
            for part in parts:
                chunks = runner.process_table(*part) if self.absence is None else runner.process_part(*part)
                out.extend(self._emit_table(pool, runner, chunks, own, channel, schema))
        except BaseException as error:
            if channel is not None and not isinstance(error, _Cancelled):
                pool.put(channel, error)
            raise
        if channel is not None:
            pool.put(channel, END)
        return out

    def _emit_table(
        self,
        pool: _Pool,
        runner: PlanKernel,
        chunks: Iterator[Any],
        own: int | None,
        channel: queue.Queue | None,
        schema: Any,
    ) -> Iterator[Any]:
        """The output of one table's complex events ``chunks`` (see ``_emit``)."""
        for chunk in chunks:
            if pool.cancel.is_set():
                raise _Cancelled
            if own is not None and (not len(chunk) or chunk.trigger[-1] < own):
                continue  # the overlap's own triggers: the shard before reports them
            found: MatchColumns | None = runner.columns(chunk)
            if own is not None and found is not None:
                found = from_trigger(found, own)
            if found is None or not len(found):
                continue
            if channel is not None:
                pool.put(channel, found)
            else:
                yield record_batch(schema, found) if schema is not None else found


def _tables(table: pa.Table) -> list[tuple[pa.Table, None, None]]:
    """A shard's rows as the tables of its chunks (the pieces it spans), at the next positions."""
    return [(pa.Table.from_batches([batch]), None, None) for batch in table.to_batches() if batch.num_rows]


def _finish_job(runner: SplitAbsence) -> list[MatchColumns]:
    """A worker's NOT FOLLOWED BY complex events still waiting at the end of the input (a job)."""
    return [runner.columns(chunk) for chunk in runner.finish()]


def _failed(error: BaseException) -> _Result:
    result = _Result()
    result.ok, result.value = False, error
    result.done.set()
    return result


def _gather(jobs: list[_Result]) -> list:
    """The jobs' values; an error: the first in stream order (by its row) is raised."""
    values, error = [], None
    for job in jobs:
        try:
            values.append(job.get())
        except _Cancelled:
            continue
        except Exception as raised:  # the first in stream order wins (Ctrl-C, SIGTERM: at once)
            if error is None or error_row(raised) < error_row(error):
                error = raised
    if error is not None:
        raise error
    return values


def _streamed(merged: Iterator[MatchColumns], jobs: list[_Result]) -> Iterator[MatchColumns]:
    """A batch's merged chunks, then the jobs' end (their errors reach the caller through the
    channels)."""
    yield from merged
    for job in jobs:
        job.done.wait()


def _collected(jobs: list[_Result]) -> Iterator[list]:
    """The shards' record batches, shard after shard, once they are done."""
    yield [batch for output in _gather(jobs) for batch in output]


def _chain(channels: list[queue.Queue | None]) -> Iterator[MatchColumns]:
    """The shards' chunks, shard after shard (their triggers follow each other)."""
    for channel in channels:
        assert channel is not None
        while True:
            item = channel.get()
            if item is END:
                break
            if isinstance(item, BaseException):
                raise item
            yield item


def _merge_range(outputs: list[list[MatchColumns]], lo: int, hi: int, schema: Any) -> list[pa.RecordBatch]:
    """The complex events triggered in ``[lo, hi)`` of every worker's output, merged, as
    record batches (a job)."""
    parts = []
    for output in outputs:
        for columns in output:
            if not len(columns) or columns.trigger[-1] < lo or columns.trigger[0] >= hi:
                continue
            _, rest = before(columns, lo - 1)
            if rest is not None:
                mine, _ = before(rest, hi - 1)
                if mine is not None:
                    parts.append(mine)
    if not parts:
        return []
    merged = merge(parts)
    return [record_batch(schema, merged)]


def _window_start(valid: list[_Piece], base: int, cut: int, window: int, before: int) -> int | None:
    """The first row of the batch within the window before row ``cut`` (measures: the
    pieces' running maxima; ``before``: the largest measure of the batches before), or None
    when no event before the cut has a measure."""
    piece_of = 0
    while valid[piece_of].first - base + valid[piece_of].rows < cut:
        piece_of += 1
    prefix = [before]  # rows without a measure at the batch's start follow the batches before
    for piece in valid[: piece_of + 1]:
        reached = piece.reached
        prefix.append(max(prefix[-1], int(reached[-1])) if reached is not None and len(reached) else prefix[-1])
    holder = valid[piece_of]
    assert holder.reached is not None
    latest = max(prefix[piece_of], int(holder.reached[cut - 1 - (holder.first - base)]))
    if latest == MISSING:
        return None
    target = max(latest - window, MISSING)
    for i in range(piece_of + 1):
        if prefix[i + 1] >= target:  # the first piece reaching the target holds the start
            piece = valid[i]
            assert piece.reached is not None
            local = np.maximum(piece.reached, prefix[i])
            return piece.first - base + int(np.searchsorted(local, target, side="left"))
    return None  # pragma: no cover - the piece of the cut reaches ``latest``


def _copy(plan: Plan) -> Plan:
    """An independent plan of the same query (its own symbols and automaton)."""
    return build_plan(plan.checked)
