"""The streaming evaluator: constant work per relevant event, lazy enumeration of matches.

Per batch, ``Ingest`` computes one symbol per event (predicates evaluated column-wise) and drops
the events whose symbol only makes every state skip; the loop moves the live run classes
(``runs``) over each remaining event; when final states are reached, ``Output`` enumerates their
complex events (output-linear delay) and applies strategy, projection, measures and LIMIT.
State is plain data (``state.py``); with a window over a non-decreasing measure, expired
structure is periodically pruned, so memory is bounded by the window.
"""

from __future__ import annotations

import copy
import gc
import logging
import os
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import pyarrow as pa

from ceql.compile.plan import Plan
from ceql.errors import EventError, UsageError
from ceql.log import logger
from ceql.match import Match
from ceql.runtime import nodes
from ceql.runtime.absence import Absence
from ceql.runtime.backend import (  # noqa: F401
    KERNEL_MIN_ROWS,
    Backend,
    KernelBackend,
    PythonBackend,
    choose,
    supported,
)
from ceql.runtime.bad_rows import time_text
from ceql.runtime.batches import BatchBuilder, builder_for
from ceql.runtime.ingest import Ingest, Prepared
from ceql.runtime.limits import DEFAULT_MAX_NODES, too_many_nodes
from ceql.runtime.output import Output
from ceql.runtime.ranked import RankedRuns
from ceql.runtime.runs import COMPACT_MIN, DEFAULT_MAX_CLASSES, PlainRuns, RegisterRuns
from ceql.runtime.single import EventStep
from ceql.runtime.state import StateError, export_state, import_state, is_keyed, keyed_seal, keyed_unseal


class Evaluator:
    """Incremental evaluation of one query: ``push(event)``, ``push_batch(batch)``, ``process``.

    Options: ``engine`` ("auto": the compiled kernel for the queries it supports on large
    inputs of any form, else Python, decided in ``backend.choose``; "python"; "compiled"); ``type_labels`` also reports event-type
    labels in ``Match.labels``; ``max_classes`` bounds the live partial-match classes per
    partition (conditions across events keep runs with different register values apart);
    ``max_nodes`` bounds the stored partial matches (live tECS nodes, all partitions);
    ``max_states`` and ``max_work`` bound the lazily determinized automaton (docs/limits.md);
    ``on_error`` ("fail", "skip" or "dead-letter") says what happens to bad input rows, and
    ``dead_letter`` (a path, a text stream or a function of the record) receives the records of
    the rows rejected under "dead-letter" (docs/input.md, "Bad rows"); ``errors`` counts them."""

    def __init__(
        self,
        plan: Plan,
        *,
        engine: str = "auto",
        type_labels: bool = False,
        max_classes: int = DEFAULT_MAX_CLASSES,
        max_nodes: int = DEFAULT_MAX_NODES,
        max_states: int | None = None,
        max_work: int | None = None,
        on_error: str = "fail",
        dead_letter: Any = None,
    ) -> None:
        if engine not in ENGINES:
            raise ValueError(f"engine must be one of {', '.join(ENGINES)}, not {engine!r}")
        self.plan = plan
        # Bounds of the (shared) lazily determinized automaton: states, and transitions computed.
        for det in [plan.det] + [u.det for u in (plan.registers.tracked if plan.registers is not None else ())]:
            if max_states is not None:
                det.max_states = max_states
            if max_work is not None:
                det.max_work = max_work
        self.position = 0  # number of events seen
        self.ingest = Ingest(plan)
        # NEXT/LAST keep one complex event per class; with a window the class includes the first
        # event's measure, so classes must expire with it (a window on a non-decreasing measure
        # and runs that end on a reported event); otherwise the best support is found on the
        # tECS at each trigger.
        ranked = (
            plan.strategy in ("NEXT", "LAST")
            and plan.absence is None  # (the strategy applies among the complex events due at once)
            and not plan.strict_filter
            and (plan.window is None or (plan.monotone and not plan.silent_reads))
        )
        if ranked:
            self.runs = RankedRuns(plan, max_classes)
        elif plan.registers is not None:
            self.runs = RegisterRuns(plan, max_classes)
        else:
            self.runs = PlainRuns(plan)
        self.output = Output(plan, type_labels=type_labels, ranked=ranked)
        self.type_labels = type_labels
        self.max_classes = max_classes
        self.max_nodes = max_nodes
        # The compiled kernel (runtime/kernel) runs the plans it supports: always with
        # engine="compiled", and with "auto" as backend.choose decides (large inputs of any
        # form, where the JIT's start-up pays off). CEQL_KERNEL=0/1 overrides "auto".
        forced = os.environ.get("CEQL_KERNEL")
        if engine == "auto" and forced in ("0", "1"):
            engine = "compiled" if forced == "1" else "python"
        self.engine = engine
        self._kernel = None
        if engine == "compiled" and not type_labels and supported(plan):
            self._kernel = _kernel_for(plan, max_nodes)
        # This evaluator's typing of its input (a copy of the plan's catalog records how this
        # input gives times: outputs show them so), and its bad-row policy.
        self.builder = own_builder(plan)
        self.ingest.show_time = time_text(plan, self.builder.catalog)
        self._schema: Any = None
        self._policies: dict[str, Any] = {}
        self._dead_letter = dead_letter
        self.on_error = on_error
        self.errors = self._policy(on_error)
        self._step: EventStep | None = None  # push()'s per-event path, made on first use
        self._finished = False  # finish() was called: no more events
        # NOT FOLLOWED BY: complex events wait for their deadline (runtime/absence.py).
        self.absence = Absence(self) if plan.absence is not None else None

    # ------------------------------------------------------------------ public API

    def push(self, event: dict, *, on_error: str | None = None) -> list[Match]:
        """Process one event (a dict with ``event_type``); return the matches it triggers.
        ``on_error`` overrides the evaluator's bad-row policy for this event. Under "fail" a
        dict takes a per-event path (``single.py``): no Arrow batch is built."""
        if self._finished:
            raise _after_finish("push")
        step = self._step
        if step is None or on_error is not None or type(event) is not dict or self.on_error != "fail":
            if (on_error or self.on_error) != "fail" or not isinstance(event, Mapping):
                return list(self.process([event], on_error=on_error))
            if step is None:
                step = self._step = EventStep(self)
        found = step.push(event)
        return self._shown(found) if found else found

    def push_batch(self, batch: Any, *, on_error: str | None = None) -> list[Match]:
        """Process a batch (dicts, a pandas DataFrame or Arrow data); return its matches."""
        if self._finished:
            raise _after_finish("push_batch")
        return list(self.process(batch, on_error=on_error))

    def process(self, events: Any, *, on_error: str | None = None) -> Iterator[Match]:
        """Process events lazily: matches are produced as the iterator is consumed. Consume it
        fully before pushing more events."""
        if self._finished:
            raise _after_finish("process")
        backend, tables = choose(self, events, self._typing(on_error), arrow=False)
        self._log_engine(self._kernel)
        for table in tables:
            yield from backend.matches(table)

    def arrow(self, events: Any, *, name: str = "query", on_error: str | None = None) -> pa.Table:
        """Matches over ``events`` as one Arrow table of the output schema (docs/guide.md,
        "Output"); ``name`` fills the ``query`` column. The compiled kernel builds it without a
        Python object per match when it supports the query."""
        from ceql.runtime.arrow import record_batch

        backend, tables = choose(self, events, self._typing(on_error), arrow=True)
        self._log_engine(self._kernel)
        batches = []
        for table in tables:
            batches.extend(backend.record_batches(table, self.output_schema(name)))
        schema = self.output_schema(name)
        if self.absence is not None:  # the whole input: what is still due (NOT FOLLOWED BY)
            batches.extend(record_batch(schema, columns) for columns in self._finish_columns(schema))
        return pa.Table.from_batches(batches, schema=schema.arrow)

    def _finish_columns(self, schema: Any) -> list:
        """``finish``'s matches as MatchColumns: on the kernel, its chunks' columns as they
        are (no Match object per complex event still due)."""
        from ceql.runtime.arrow import from_matches

        if self._kernel is not None and not self._finished:
            self._finished = True
            kernel = self._kernel
            return [kernel.columns(chunk) for chunk in kernel.finish()]
        found = self.finish()
        return [from_matches(found, schema)] if found else []

    def columns(self, events: Any, batch: int = 50_000, finish: bool = False) -> Iterator[Any]:
        """Matches over ``events`` as ``MatchColumns`` (``runtime/arrow.py``; raw measures: times
        in nanoseconds), at most ``batch`` of them at a time on the Python path: for writers.
        ``finish``: ``events`` end the input (also the matches ``finish`` reports)."""

        backend, tables = choose(self, events, self._typing(None), arrow=False)
        self._log_engine(self._kernel)
        if isinstance(backend, PythonBackend):
            backend.batch = batch
        for table in tables:
            yield from backend.columns(table)
        if self.absence is not None and finish:  # the end of the input (NOT FOLLOWED BY)
            yield from self._finish_columns(self.output_schema())

    @property
    def backend(self) -> Backend:
        """The engine path this evaluator is on now (``backend.py``)."""
        return KernelBackend(self, self._kernel) if self._kernel is not None else PythonBackend(self)

    def _start_kernel(self) -> None:
        """Move onto the compiled kernel (a fresh evaluator, or one whose Python path holds
        no partial match): the kernel continues at this stream position and last time."""
        kernel = _kernel_for(self.plan, self.max_nodes)
        if kernel is None:
            return
        if self.position:
            kernel.position = self.position
            last = self.ingest.last_time
            kernel.last_time = int(last) if last is not None else None
        self._kernel = kernel

    def output_schema(self, name: str = "query") -> Any:
        """The output schema of this evaluator's matches (``compile/output_schema.py``): fixed
        once its input has shown how it gives the times the output shows."""
        from ceql.compile.output_schema import output_schema

        schema = self._schema
        if schema is None:
            kinds = self.builder.catalog.time_inputs
            schema = output_schema(self.plan, type_labels=self.type_labels, time_kinds=kinds)
            if all(m.time.kind in kinds.values() for m in schema.time_measures):
                self._schema = schema
        return schema if schema.name == name else schema.with_name(name)

    def _policy(self, mode: str) -> Any:
        """The ErrorPolicy of a mode (one per mode, so that counts add up across calls)."""
        policy = self._policies.get(mode)
        if policy is None:
            from ceql.runtime.rejects import ErrorPolicy

            sink = self._dead_letter if mode == "dead-letter" else None
            policy = self._policies[mode] = ErrorPolicy(mode, sink)
        return policy

    def _last_time(self) -> int | None:
        """The latest time accepted so far (nanoseconds), on either path."""
        if self._kernel is not None:
            return self._kernel.last_time
        last = self.ingest.last_time
        return int(last) if last is not None else None

    def _log_engine(self, kernel: Any) -> None:
        """Say once on the ``ceql`` logger which path this evaluator runs, and why; the kernel
        writes times in its errors as this evaluator's input gives them."""
        if kernel is not None:
            kernel.show_time = self.ingest.show_time
        if self.position or not logger.isEnabledFor(logging.INFO):
            return
        if kernel is not None:
            logger.info("engine: the compiled kernel")
            return
        from ceql.runtime.kernel import unsupported

        reason = unsupported(self.plan)
        if reason is not None:
            why = f"the compiled kernel does not evaluate {reason}"
        elif self.engine == "python" or self.type_labels:
            why = "engine='python' or type_labels=True"
        else:
            why = "engine='auto' keeps small inputs on the Python evaluator while the kernel would not pay off"
        logger.info("engine: the Python evaluator (%s)", why)

    def _typing(self, on_error: str | None) -> Any:
        """The batch builder for a bad-row policy: fail raises at the first bad row, the others
        hand bad rows to the policy (``runtime/bad_rows.py``)."""
        mode = on_error or self.on_error
        if mode == "fail":
            return self.builder
        policy = self._policy(mode)
        key = ("builder", mode)
        builder = self._policies.get(key)
        if builder is None:
            from ceql.runtime.bad_rows import PolicyBuilder

            builder = PolicyBuilder(self.builder.catalog, policy, self.plan, self.builder.notices, self._last_time)
            self._policies[key] = builder
        self.errors = policy
        return builder

    def process_table(
        self, table: pa.Table, *, positions: np.ndarray | None = None, payload: Any = None
    ) -> Iterator[tuple[Match, list]]:
        """The public entry for runners that cut the stream (Spark): process an Arrow table,
        optionally with the stream position of every row (increasing: the events of one
        partition of a larger stream, or a shard of it). Yields (match, payloads): ``payload``
        is a list (one item per row) or a function of the row index, and a match's payloads are
        those of its reported events. Runs on the Python evaluator."""
        self._python_path()
        try:
            typed = self.builder.from_table(table, self.position if positions is None else 0)
        except EventError as exc:  # name the row by its stream position, as everywhere else
            if positions is not None and exc.row is not None and 0 <= exc.row < len(positions):
                raise EventError(exc.reason, int(positions[exc.row]), exc.source, exc.line, exc.unit) from None
            raise
        if positions is None:
            return self._run(typed, payload=payload, detailed=True)
        return self._run(typed, positions=positions, payload=payload, detailed=True)

    def process_with_payload(self, table: pa.Table, payload: Any) -> Iterator[tuple[Match, list]]:
        """Like ``process`` for one Arrow table, also giving, for each match, the payload items
        of its events (``payload``: a list, one item per row, or a function of the row index)."""
        self._python_path()
        return self._run(self.builder.from_table(table), payload=payload, detailed=True)

    def next_deadline(self) -> Any:
        """The earliest deadline a ``NOT FOLLOWED BY`` complex event waits for (None if none):
        when to advance time next (a stream runner sets a timer there)."""
        if self.absence is None:
            return None
        if self._kernel is not None:  # NOT FOLLOWED BY on the kernel (kernel/absence.py)
            return self._kernel.next_deadline()
        return self.absence.next_deadline()

    def advance(self, time: Any, detailed: bool = False) -> list:
        """Tell the evaluator that no event earlier than ``time`` will come (a heartbeat, or
        a watermark): the matches of ``NOT FOLLOWED BY`` queries whose deadline it reaches are
        returned (trigger: the position of the next event). ``time`` is int nanoseconds since
        1970, an ISO-8601 string or a datetime; with a time window, a later event earlier than
        ``time`` is out of order. For a window over positions (EVENTS) it changes nothing."""
        if self._finished:
            raise _after_finish("advance")
        ns = _time_ns(time)  # checked on every query, so that a bad time is never accepted
        if self.plan.window_kind not in ("time", "attribute") or not self.plan.ordered_time:
            return []
        matches: list = []
        if self.absence is not None and self._kernel is not None:  # NOT FOLLOWED BY on the kernel
            found = self._kernel_rows(self._kernel.advance(ns))
            if self._kernel.last_time is None or self._kernel.last_time < ns:
                self._kernel.last_time = ns
            return found
        if self.absence is not None:
            matches = self.absence.advance(ns, self.position, detailed)
            ingests = [self.ingest, self.absence.ingest]
        else:
            ingests = [self.ingest]
        for ingest in ingests:
            if ingest.last_time is None or ingest.last_time < ns:
                ingest.last_time = ns
        if self._kernel is not None and (self._kernel.last_time is None or self._kernel.last_time < ns):
            self._kernel.last_time = ns
        return matches if detailed else self._shown(matches)

    def finish(self, detailed: bool = False) -> list:
        """The end of the input: the matches still due (``NOT FOLLOWED BY`` queries report every
        complex event still waiting for its deadline, at the position after the last event).
        ``Query.run`` calls it; call it after pushing the last event of a finite input. After
        it the evaluator takes no more events (``UsageError``); calling it again returns []."""
        if self._finished:
            return []
        self._finished = True
        if self.absence is None:
            return []
        if self._kernel is not None:  # NOT FOLLOWED BY on the kernel
            return self._kernel_rows(self._kernel.finish())
        found = self.absence.finish(self.position, detailed)
        return found if detailed else self._shown(found)

    def _kernel_rows(self, chunks: list) -> list[Match]:
        """NOT FOLLOWED BY on the kernel: reported chunks as Match objects."""
        from ceql.runtime.arrow import MatchRows

        kernel = self._kernel
        schema = self.output_schema()
        return [m for chunk in chunks for m in MatchRows(kernel.columns(chunk), schema, kernel.reports_partition)]

    def run(self, events: Any) -> Iterator[Match]:
        """Every match over ``events`` taken as the whole input: ``process``, then ``finish``."""
        yield from self.process(events)
        yield from self.finish()

    def _shown(self, matches: list) -> list:
        """Matches with their time measures as the input gave the times (``_shown``)."""
        if matches:
            schema = self.output_schema()
            if schema.time_measures:
                return list(_shown(iter(matches), schema))
        return matches

    def export_state(self, *, key: bytes | str | None = None) -> bytes:
        """The dynamic state as bytes (versioned JSON, see ``state.py``). With ``key`` (at least
        16 bytes; a str is UTF-8) the state is also sealed with an HMAC-SHA256 of it, for states
        that cross a trust boundary: ``import_state(blob, key=...)`` then refuses any change."""
        if self._kernel is not None:
            blob = self._kernel.export_json()
        elif self.absence is not None:
            blob = self.absence.export_state()
        else:
            blob = export_state(self)
        return blob if key is None else keyed_seal(blob, key)

    def import_state(self, blob: bytes, *, key: bytes | str | None = None) -> None:
        """Restore a state saved by ``export_state`` (same query, any process). With ``key``,
        only a state sealed with that key is loaded; without it, a keyed state is refused too
        (its seal would go unchecked)."""
        if key is not None:
            blob = keyed_unseal(blob, key)
        elif is_keyed(blob):
            raise StateError("the saved state is sealed with a key: give it (import_state(blob, key=...))")
        _import(self, blob)

    def _python_path(self) -> None:
        """Payload and position-aware processing run on the Python path only."""
        if self._kernel is not None:
            if self._kernel.position:
                raise RuntimeError("this evaluator already runs on the compiled kernel")
            self._kernel = None

    def __getstate__(self) -> dict:
        return {
            "query": self.plan.checked.text,
            "schema": self.plan.checked.schema,
            "options": {
                "type_labels": self.type_labels,
                "max_classes": self.max_classes,
                "max_nodes": self.max_nodes,
                "engine": self.engine,
            },
            "state": self.export_state(),
        }

    def __setstate__(self, value: dict) -> None:
        from ceql.compile.plan import build_plan
        from ceql.lang import analyze, parse_query

        checked = analyze(parse_query(value["query"]), value["schema"], value["query"])
        fresh = Evaluator(build_plan(checked), **value.get("options", {}))
        self.__dict__.update(fresh.__dict__)
        _import(self, value["state"])

    @property
    def partitions(self) -> dict:
        """The live run classes per partition key (empty when nothing is in progress)."""
        return self.runs.partitions

    def is_idle(self) -> bool:
        """Whether no partial match is in progress (the state holds nothing worth saving)."""
        if self.absence is not None and self._kernel is not None:
            return self._kernel.is_idle()
        if self.absence is not None and (self.absence.waiting or self.absence.runs.partitions):
            return False
        return not self.runs.partitions or all(
            node is nodes.BOTTOM for node in self.runs.roots()
        ) and len(self.runs.roots()) <= 1

    def live_nodes(self) -> int:
        """The number of tECS nodes reachable from the live state (a memory measure)."""
        if self._kernel is not None:
            return self._kernel.kernel.live_nodes()
        return nodes.count_nodes(self.runs.roots())

    # ------------------------------------------------------------------ the loop

    def _run(
        self,
        table: pa.Table,
        positions: np.ndarray | None = None,
        payload: Any = None,
        detailed: bool = False,
    ) -> Iterator:
        if self.absence is not None:
            prepared = None
            loop = self.absence.run(table, positions, payload, detailed)
        else:
            prepared = self.ingest.prepare(table, self.position, positions, payload)
            self.position = prepared.end
            loop = self._loop(prepared, detailed)
        # The tECS is acyclic and freed by reference counting; the cycle collector would only
        # rescan millions of live nodes. It stays off while the evaluator works and is restored
        # whenever control goes back to the caller.
        collecting = gc.isenabled()
        gc.disable()
        try:
            for item in loop:
                if collecting:
                    gc.enable()
                    yield item
                    gc.disable()
                else:
                    yield item
        finally:
            if collecting:
                gc.enable()
        if self.runs.created > self.runs.compact_at:
            self._compact()

    def _loop(self, prepared: Prepared, detailed: bool) -> Iterator:
        runs = self.runs
        output = self.output
        consume = self.plan.consume != "NONE"
        keys, measures, data = prepared.keys, prepared.measures, prepared.data
        values, masks = prepared.values, prepared.masks
        advance = runs.advance
        for k, pos in enumerate(prepared.positions):
            key = keys[k] if keys is not None else None
            if keys is not None and key is None:
                continue
            m = measures[k] if measures is not None else pos
            event_data = data[k] if data is not None else None
            if masks is not None:
                finals = advance(key, prepared.symbols[k], pos, m, event_data, values[k], masks[k])
            else:
                finals = advance(key, prepared.symbols[k], pos, m, event_data)
            if finals is None:
                continue
            produced = False
            for match in output.matches(finals, pos, key, detailed):
                produced = True
                yield match
            if produced and consume:
                self._consume(key, pos)

    def _consume(self, key: Any, pos: int) -> None:
        """CONSUME BY ANY / PARTITION after output at ``pos``: every partial match is dropped;
        runs that reported nothing yet survive."""
        runs = self.runs
        runs.consume(key)
        if self.plan.consume == "ANY":
            runs.consumed_at = pos
            if key in runs.partition_consumed:
                runs.partition_consumed[key] = pos

    def _compact(self) -> None:
        """Drop structure that no future complex event can use (window over a monotone measure)."""
        plan = self.plan
        runs = self.runs
        if plan.window is None or not plan.monotone or plan.silent_reads:
            # (A run that ends by reading without reporting keeps an old complex event valid:
            # its window is that of its own events, whatever the trigger.) Nothing expires, so
            # the stored nodes are counted against max_nodes (at doubling intervals: amortised
            # constant work per node).
            live = self.live_nodes()
            if live > self.max_nodes:
                raise too_many_nodes(live, self.max_nodes)
            runs.created = 0
            runs.compact_at = max(COMPACT_MIN, live)
            return
        if plan.window_kind == "events":
            now = self.position - 1  # the last position seen
        else:
            now = self.ingest.last_time
            if now is None:
                runs.compact_at = runs.created + COMPACT_MIN
                return
        runs.compact(nodes.window_limit(now, plan.window))
        live = self.live_nodes()
        if live > self.max_nodes:
            raise too_many_nodes(live, self.max_nodes)
        runs.created = 0
        runs.compact_at = max(COMPACT_MIN, 2 * live)


ENGINES = ("auto", "python", "compiled")


def own_builder(plan: Plan) -> BatchBuilder:
    """A batch builder of the plan's columns over a copy of its catalog, so that how this
    evaluator's input gives times is recorded apart from other runs of the same query (input
    warnings are still given once per query)."""
    catalog = copy.copy(plan.catalog)
    catalog.time_inputs = {}
    builder = BatchBuilder(catalog)
    builder.notices = builder_for(plan).notices
    return builder


def _shown(matches: Iterator[Match], schema: Any) -> Iterator[Match]:
    """Matches with their time measures shown as the input gave the times (the Python path
    computes them in nanoseconds)."""
    times = schema.time_measures
    for match in matches:
        trigger, positions, labels, partition, measures, deadline = match._values()
        values = dict(measures)
        for measure in times:
            values[measure.name] = measure.python(values.get(measure.name))
        yield Match(trigger, positions, labels, partition, values, deadline)


def _kernel_for(plan: Plan, max_nodes: int = DEFAULT_MAX_NODES) -> Any:
    """The compiled kernel for this plan, or None when it stays on the Python path."""
    from ceql.runtime import kernel

    if kernel.unsupported(plan) is not None:
        return None
    if plan.absence is not None:  # NOT FOLLOWED BY: two kernels and the waiting arrays
        from ceql.runtime.kernel.absence import KernelAbsence

        return KernelAbsence(plan, max_nodes=max_nodes)
    return kernel.PlanKernel(plan, max_nodes=max_nodes)


def _import(evaluator: Evaluator, blob: bytes) -> None:
    """Load a state saved by the Python path or by the kernel, into the matching path."""
    from ceql.runtime import kernel
    from ceql.runtime.absence import is_absence_state

    if evaluator.absence is not None:
        from ceql.runtime.kernel.absence import is_kernel_absence_state

        if is_kernel_absence_state(blob):  # saved on the kernel: it goes on there
            _import_on_kernel(evaluator, blob)
            return
        if not is_absence_state(blob):
            raise StateError("not a saved state of this NOT FOLLOWED BY query")
        evaluator._kernel = None  # a Python-path state continues on the Python path
        evaluator.absence.import_state(blob)
        return
    if kernel.is_kernel_state(blob):
        _import_on_kernel(evaluator, blob)
        return
    evaluator._kernel = None  # a Python-path state continues on the Python path
    import_state(evaluator, blob)


def _import_on_kernel(evaluator: Evaluator, blob: bytes) -> None:
    """Load a state the kernel saved: the evaluator goes on on the kernel (StateError if the
    kernel cannot run this query)."""
    if evaluator._kernel is None:
        evaluator._kernel = _kernel_for(evaluator.plan, evaluator.max_nodes)
    if evaluator._kernel is None:
        raise StateError("the saved state was made by the compiled kernel, which cannot run this query")
    evaluator._kernel.import_json(blob)


def _time_ns(time: Any) -> int:
    """A time given to ``advance`` as int nanoseconds (the input's rules for a primary_time);
    UsageError for anything else: an int beyond int64, bytes, a bool."""
    from ceql.runtime.conversion import INT64_MAX, INT64_MIN, Target, convert

    if type(time) is int:
        if not INT64_MIN <= time <= INT64_MAX:
            raise UsageError(f"advance() needs a time within int64 nanoseconds (years 1677 to 2262), not {time}")
        return time
    if isinstance(time, (bytes, bytearray, memoryview, bool)):
        raise UsageError(f"advance() needs a time (int nanoseconds, ISO-8601 text or a datetime), not {time!r}")
    converted = convert([time], Target("primary_time"))
    if converted.codes[0] != 0 or converted.missing[0]:
        reason = converted.reason(0) if converted.codes[0] != 0 else "no time given"
        raise UsageError(f"advance() needs a time: {reason}")
    return int(converted.values[0].as_py())


def _after_finish(call: str) -> UsageError:
    return UsageError(
        f"{call}() after finish(): this evaluator has reported the end of its input; "
        "make a new one (query.evaluator()) for another stream"
    )
