"""Every core of one machine: the compiled kernel over key groups or time shards, in threads.

``Query.run(events, workers=N)`` (``ceql run --workers N``) evaluates a plan the kernel supports
with N kernels, one per thread. numba's compiled loop runs without the GIL (``nogil=True``), and
so do most of the per-batch Arrow and numpy work, so the threads use N cores. Each worker owns a
whole PlanKernel over its own copy of the plan (symbols, lazily determinized automaton, key
codes): no mutable state is shared between threads.

Two plans split the stream (``split_of`` says which, and why not):

- **keys** (``PARTITION BY`` on one integer attribute per key group, CONSUME BY NONE or
  PARTITION): every event goes to the worker its key hashes to, so each sub-stream is wholly in
  one worker, which sees its events at their positions in the whole stream. Its complex events
  are exactly those of the one-core run.
- **shards** (no partition, a ``WITHIN`` window on a non-decreasing measure, CONSUME BY NONE, no
  START): each input batch is cut into N runs of rows; the worker of a later run first reads the
  events of the window before it (the overlap) and reports only the complex events it triggers
  in its own run. A complex event lies within the window of its trigger, so the overlap holds
  every event it can use. The worker of the last run carries its state to the next batch. When
  the window reaches past the start of a batch (a window longer than a batch), that batch runs
  on the carrying worker alone.

Per batch, the workers' outputs are merged by trigger position: a trigger belongs to one
worker, whose complex events for it come in the kernel's order, so the result is the one-core
result in the same order. Time-order and window-value errors are checked on the whole batch
first, as the one-core run does, so the same error is raised. The main thread reads and
normalises the next batch while the workers evaluate the current one.

Only the stateless ``run`` path uses workers: an ``Evaluator`` (push, saved state) runs on one
core. Inputs under ``MIN_ROWS`` events, plans without a split, and options the kernel does not
take (``engine="python"``, ``type_labels``) run on one core too.
"""

from __future__ import annotations

import os
import queue
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ceql.compile.plan import Plan, build_plan
from ceql.match import Match
from ceql.runtime.arrow import MatchColumns, MatchRows, record_batch
from ceql.runtime.batches import DEFAULT_BATCH, iter_tables
from ceql.runtime.kernel.compiled import C_ANCHORED, MISSING
from ceql.runtime.kernel.engine import KernelMatches
from ceql.runtime.kernel.runner import PlanKernel, unsupported

#: Events per input batch: larger than one core's (DEFAULT_BATCH) so that each worker's share
#: amortises the per-batch work (measured: 4x cuts the workers' extra CPU time by about half).
BATCH = 4 * DEFAULT_BATCH
#: Inputs with fewer events run on one core (threads do not pay off on small inputs).
MIN_ROWS = 100_000
#: ``ceql run``: workers start when the first chunk read has at least this many events.
CHUNK_MIN_ROWS = 20_000
_GOLDEN = np.uint64(11400714819323198485)  # Fibonacci hashing of integer keys


def cores() -> int:
    """The cores this process may run on (the default worker count of ``ceql run``)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - platforms without affinity
        return max(1, os.cpu_count() or 1)


def split_of(plan: Plan) -> str | None:
    """How workers split this plan: "keys", "shards", or None (it runs on one core)."""
    if unsupported(plan) is not None or plan.absence is not None:  # (NOT FOLLOWED BY: one core)
        return None
    runner = PlanKernel(plan)
    if runner.post is not None or runner.kept is not None or runner.measures is not None:
        return None  # per-match checks and measures read kept values by stream position
    kernel_plan = runner.plan
    consume = kernel_plan.consume
    if runner.partitioned:
        if consume not in ("NONE", "PARTITION"):
            return None
        catalog = kernel_plan.catalog
        for group in kernel_plan.partition_groups:
            if len(group) != 1 or not pa.types.is_integer(catalog.arrow_types.get(group[0], pa.null())):
                return None
        return "keys"
    within = kernel_plan.checked.query.within
    anchored = bool(runner.kernel.cfg[C_ANCHORED])  # START: a fresh shard would differ
    if within is None or not kernel_plan.monotone or consume != "NONE" or anchored:
        return None
    return "shards"


def rows_of(events: Any) -> int | None:
    """The number of events of an Arrow or pandas input (None for other inputs)."""
    rows = getattr(events, "num_rows", None)
    if rows is None and type(events).__module__.startswith("pandas"):
        rows = len(events)
    return rows


def use_workers(plan: Plan, events: Any, workers: int | None, options: dict) -> bool:
    """Whether ``Query.run`` evaluates ``events`` with several workers."""
    if workers is None or workers <= 1:
        return False
    if options.get("engine", "auto") == "python" or options.get("type_labels"):
        return False
    if os.environ.get("CEQL_KERNEL") == "0":
        return False
    rows = rows_of(events)
    return rows is not None and rows >= MIN_ROWS and split_of(plan) is not None


class _Worker:
    """One thread running the jobs given to it in order (one PlanKernel's batches)."""

    def __init__(self) -> None:
        self.jobs: queue.SimpleQueue = queue.SimpleQueue()
        self.cpu = 0.0  # CPU seconds of this thread's jobs (benchmarks/workers.py reports it)
        self.thread = threading.Thread(target=self._loop, daemon=True, name="ceql-worker")
        self.thread.start()

    def _loop(self) -> None:
        while True:
            item = self.jobs.get()
            if item is None:
                return
            job, box, done = item
            started = time.thread_time()
            try:
                box.append((True, job()))
            except BaseException as error:  # noqa: BLE001 - handed to the main thread
                box.append((False, error))
            self.cpu += time.thread_time() - started
            done.set()

    def submit(self, job: Callable[[], Any]) -> Callable[[], Any]:
        box: list = []
        done = threading.Event()
        self.jobs.put((job, box, done))

        def result() -> Any:
            done.wait()
            ok, value = box[0]
            if not ok:
                raise value
            return value

        return result

    def stop(self) -> None:
        self.jobs.put(None)


class ParallelKernel:
    """A plan evaluated by ``workers`` compiled kernels in threads (see the module docstring)."""

    def __init__(self, plan: Plan, workers: int, batch_size: int = BATCH, evaluator: Any = None) -> None:
        split = split_of(plan)
        if split is None:
            raise ValueError("this plan runs on one core")
        self.split = split
        self.plan = plan
        self.count = workers
        self.batch_size = batch_size  # events per input batch (tests make it small)
        self.kernels = [PlanKernel(_copy(plan)) for _ in range(workers)]
        for runner in self.kernels:
            runner.plan.det.max_states = plan.det.max_states
            runner.plan.det.max_work = plan.det.max_work
        # The whole-batch checks of the one-core run (window values, time order).
        self.checker = PlanKernel(_copy(plan))
        kernel_plan = self.checker.plan
        self.window_kind = kernel_plan.window_kind
        within = kernel_plan.checked.query.within
        self.window = None if within is None else int(within.value)
        self.type_names = pa.array(kernel_plan.type_names, pa.string())
        self.carry = 0  # shards: the worker whose state reaches the end of the last batch
        # Input typing and the output schema: the evaluator's (Query.run, ceql run), else the
        # one-core PlanKernel's.
        self.evaluator = evaluator
        self.builder = evaluator.builder if evaluator is not None else self.checker.builder
        self.reports_partition = self.kernels[0].reports_partition
        self.position = 0  # events given to ``process`` so far
        self._threads: list[_Worker] | None = None
        self.thread_cpu: list[float] = []  # after ``arrow``/``matches``: each worker's CPU seconds

    # ------------------------------------------------------------------ outputs

    def schema(self, name: str = "query") -> Any:
        """The output schema (fixed once the input has shown how it gives times)."""
        if self.evaluator is not None:
            return self.evaluator.output_schema(name)
        return self.checker.output_schema(name=name)

    def arrow(self, events: Any, name: str = "query") -> pa.Table:
        """The matches as one Arrow table of the output schema, as on one core."""
        batches = [record_batch(self.schema(name), columns) for part in self._run(events) for columns in part]
        if not batches:
            return pa.Table.from_batches([], schema=self.schema(name).arrow)
        return pa.Table.from_batches(batches, schema=self.schema(name).arrow)

    def matches(self, events: Any) -> Iterator[Match]:
        """The matches as Match objects, lazily, in trigger order."""
        for part in self._run(events):
            schema = self.schema() if self.evaluator is not None else None  # as PlanKernel.matches
            for columns in part:
                yield from MatchRows(columns, schema, self.reports_partition)

    def columns(self, table: pa.Table, batch: int = 0) -> Iterator[MatchColumns]:
        """The matches of the next table of a stream as MatchColumns (``ceql run``'s chunks,
        as ``Evaluator.columns``): the stream goes on across calls, in threads that ``close``
        stops."""
        if self._threads is None:
            self._threads = [_Worker() for _ in range(self.count)]
            self._finalizer = weakref.finalize(self, _stop, self._threads)
        for part in iter_tables(table, self.builder, self.batch_size):
            merged = self._submit(self._threads, part, self.position)()
            self.position += part.num_rows
            yield from merged

    def close(self) -> None:
        """Stop the threads ``columns`` started."""
        if self._threads is not None:
            self._finalizer()
            self._threads = None

    # ------------------------------------------------------------------ batches

    def _run(self, events: Any) -> Iterator[list[MatchColumns]]:
        workers = [_Worker() for _ in range(self.count)]
        try:
            tables = iter_tables(events, self.builder, self.batch_size)
            pending: Callable[[], list[MatchColumns]] | None = None
            base = 0
            while True:
                try:
                    table = next(tables)
                except StopIteration:
                    break
                except Exception:
                    if pending is not None:  # the one-core run reports the earlier batch first
                        yield pending()
                    raise
                submitted = self._submit(workers, table, base)
                base += table.num_rows
                if pending is not None:
                    yield pending()
                pending = submitted
            if pending is not None:
                yield pending()
        finally:
            self.thread_cpu = [worker.cpu for worker in workers]
            _stop(workers)

    def _submit(self, workers: list[_Worker], table: pa.Table, base: int) -> Callable[[], list[MatchColumns]]:
        """Give one batch to the workers; returns a function giving its merged output."""
        try:
            measures = self._check(table, base)
        except Exception as error:  # raised once the earlier batch is out, as on one core
            failure = error

            def failed() -> list[MatchColumns]:
                raise failure

            return failed
        if self.split == "keys":
            shares = self._shares(table)
            results = [
                workers[w].submit(partial(self._keys_job, w, table, base, shares)) for w in range(self.count)
            ]
        else:
            results = self._submit_shards(workers, table, base, measures)

        def merged() -> list[MatchColumns]:
            outputs = []
            error: BaseException | None = None
            for result in results:
                try:
                    outputs.append(result())
                except BaseException as raised:  # noqa: BLE001 - the first in stream order wins
                    if error is None or _row(raised) < _row(error):
                        error = raised
            if error is not None:
                raise error
            parts = [columns for output in outputs for columns in output]
            if self.split == "shards" or len(parts) <= 1:
                return parts  # the shards' triggers follow each other
            return [_merge(parts)]  # the key groups' interleave

        return merged

    def _check(self, table: pa.Table, base: int) -> np.ndarray | None:
        """The window measures of the whole batch (None for events windows), after the
        one-core run's checks: window values in range, time order."""
        if self.window_kind in (None, "events"):
            return None
        checker = self.checker
        types = self._types(table)
        measures, missing = checker._measures(table, types, base)
        if checker.plan.ordered_time:
            checker._check_order(types, measures, missing, base)
        # Events without a measure are MISSING here: the shard cuts skip them (a measure equal
        # to MISSING itself only keeps the batch on one worker).
        return np.where(missing, MISSING, measures)

    def _types(self, table: pa.Table) -> np.ndarray:
        types = pc.index_in(table.column("event_type"), value_set=self.type_names)
        return np.asarray(pc.fill_null(types, -1).to_numpy(zero_copy_only=False), dtype=np.int64)

    # ------------------------------------------------------------------ keys

    def _shares(self, table: pa.Table) -> np.ndarray:
        """The worker of each row: a hash of its partition key (-1 rows: no key)."""
        groups = self.checker.plan.partition_groups
        n = table.num_rows
        if len(groups) == 1:
            keys = _ints(table.column(groups[0][0]))
        else:
            types = self._types(table)
            keys = np.zeros(n, dtype=np.int64)
            names = self.checker.plan.type_names
            for group in groups:
                members = [names.index(t) for t, g in self.checker.plan.partition_types.items() if g == group]
                rows = np.isin(types, members)
                keys[rows] = _ints(table.column(group[0]))[rows]
        mixed = keys.view(np.uint64) * _GOLDEN
        return ((mixed >> np.uint64(32)) % np.uint64(self.count)).astype(np.int64)

    def _keys_job(self, w: int, table: pa.Table, base: int, shares: np.ndarray) -> list:
        rows = np.flatnonzero(shares == w)
        if not len(rows):
            return []
        sub = table.take(pa.array(rows)) if len(rows) < table.num_rows else table
        return self._emit(self.kernels[w], sub.combine_chunks(), rows + base, None)

    # ------------------------------------------------------------------ shards

    def _submit_shards(
        self, workers: list[_Worker], table: pa.Table, base: int, measures: np.ndarray | None
    ) -> list[Callable[[], list]]:
        n = table.num_rows
        cuts = [n * i // self.count for i in range(self.count + 1)]
        starts = self._overlaps(cuts, base, measures)
        carry = self.carry
        if starts is None:  # the window reaches past the batch: the carrying worker alone
            return [workers[carry].submit(partial(self._emit, self.kernels[carry], table, None, None))]
        results = []
        order = [carry] + [w for w in range(self.count) if w != carry]
        for shard, w in enumerate(order):
            lo, hi = cuts[shard], cuts[shard + 1]
            if shard == 0:
                results.append(
                    workers[w].submit(partial(self._emit, self.kernels[w], table.slice(0, hi), None, None))
                )
            else:
                start = starts[shard]
                piece = table.slice(start, hi - start)
                results.append(
                    workers[w].submit(partial(self._fresh, self.kernels[w], piece, base + start, base + lo))
                )
        self.carry = order[-1]
        return results

    def _overlaps(self, cuts: list[int], base: int, measures: np.ndarray | None) -> list[int] | None:
        """Per shard, the first row its worker reads (the window before the shard's first row),
        or None when some shard's window reaches into an earlier batch."""
        window = self.window
        assert window is not None
        starts = [0]
        if measures is None:  # an events window: the measure is the position
            for cut in cuts[1:-1]:
                start = cut - 1 - window
                if start <= 0:
                    return None
                starts.append(start)
            return starts
        reached = np.maximum.accumulate(measures) if len(measures) else measures
        for cut in cuts[1:-1]:
            if cut == 0:
                return None
            latest = int(reached[cut - 1])  # no trigger of the shard is earlier than this
            if latest == MISSING:
                return None
            start = int(np.searchsorted(reached, max(latest - window, MISSING), side="left"))
            if start <= 0:
                return None
            starts.append(start)
        return starts

    def _fresh(self, runner: PlanKernel, table: pa.Table, position: int, own: int) -> list:
        """A worker starting over at ``position``; it reports the triggers from ``own`` on."""
        runner.kernel._reset()
        runner.position = position
        runner.last_time = None
        return self._emit(runner, table, None, own)

    # ------------------------------------------------------------------ output of one worker

    def _emit(
        self, runner: PlanKernel, table: pa.Table, positions: np.ndarray | None, own: int | None
    ) -> list:
        """One worker's matches of a table, as MatchColumns (from trigger ``own`` on)."""
        out: list = []
        for chunk in runner.process_table(table, positions):
            if own is not None:
                chunk = _from_trigger(chunk, own)
                if not len(chunk):
                    continue
            columns = runner.columns(chunk)
            if len(columns):
                out.append(columns)
        return out


def _stop(workers: list[_Worker]) -> None:
    for worker in workers:
        worker.stop()


def _copy(plan: Plan) -> Plan:
    """An independent plan of the same query (its own symbols and automaton)."""
    return build_plan(plan.checked)


def _ints(column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """An integer key column as int64 (nulls: 0; such events have no key and are skipped by
    whichever worker gets them)."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    if column.type != pa.int64():
        column = pc.cast(column, pa.int64())
    if column.null_count:
        column = pc.fill_null(column, 0)
    return np.asarray(column.to_numpy(zero_copy_only=False), dtype=np.int64)


def _row(error: BaseException) -> int:
    row = getattr(error, "row", None)
    return row if isinstance(row, int) else -1


def _from_trigger(chunk: KernelMatches, first: int) -> KernelMatches:
    """The complex events of ``chunk`` triggered at ``first`` or later."""
    i = int(np.searchsorted(chunk.trigger, first, side="left"))
    if i == 0:
        return chunk
    lo = int(chunk.offsets[i])
    return KernelMatches(
        chunk.trigger[i:],
        chunk.partition[i:],
        chunk.offsets[i:] - lo,
        chunk.positions[lo:],
        chunk.labels[lo:] if chunk.labels is not None else None,
        chunk.label_sets,
    )


def _merge(parts: list[MatchColumns]) -> MatchColumns:
    """One MatchColumns from the workers' parts, in trigger order (a trigger's matches all
    come from one part, in order, so a stable sort keeps them as they are). Partition codes
    are made distinct across workers."""
    trigger = np.concatenate([p.trigger for p in parts])
    offsets, positions = _stack([(p.offsets, p.positions) for p in parts])
    labels = {name: _stack([p.labels[name] for p in parts]) for name in parts[0].labels}
    partition = keys = None
    if parts[0].partition is not None:
        codes, keys, shift = [], [], 0
        seen: dict[int, int] = {}
        for p in parts:
            # Workers own their key lists; several chunks of one worker share one list.
            start = seen.get(id(p.keys))
            if start is None:
                start = seen[id(p.keys)] = shift
                keys.extend(p.keys or ())
                shift += len(p.keys or ())
            codes.append(np.where(p.partition >= 0, p.partition + start, -1))
        partition = np.concatenate(codes)
    merged = MatchColumns(trigger, offsets, positions, labels, partition, keys)
    return _take(merged, np.argsort(trigger, kind="stable"))


def _stack(pairs: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """Concatenated (offsets, values) list columns."""
    shifts = np.cumsum([0] + [len(values) for _, values in pairs[:-1]])
    offsets = np.concatenate([pairs[0][0][:1]] + [o[1:] - o[0] + s for (o, _), s in zip(pairs, shifts)])
    offsets = offsets - offsets[0]
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
    return MatchColumns(columns.trigger[rows], offsets, positions, labels, partition, columns.keys)
