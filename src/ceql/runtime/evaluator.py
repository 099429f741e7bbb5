"""The streaming evaluator: constant work per relevant event, lazy enumeration of matches.

Per batch, ``Ingest`` computes one symbol per event (predicates evaluated column-wise) and drops
the events whose symbol only makes every state skip; the loop moves the live run classes
(``runs``) over each remaining event; when final states are reached, ``Output`` enumerates their
complex events (output-linear delay) and applies strategy, projection, measures and LIMIT.
State is plain data (``state.py``); with a window over a non-decreasing measure, expired
structure is periodically pruned, so memory is bounded by the window.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import pyarrow as pa

from ceql.compile.plan import Plan
from ceql.match import Match
from ceql.runtime import nodes
from ceql.runtime.absence import Absence
from ceql.runtime.batches import builder_for, iter_tables
from ceql.runtime.ingest import Ingest, Prepared
from ceql.runtime.output import Output
from ceql.runtime.ranked import RankedRuns
from ceql.runtime.runs import COMPACT_MIN, DEFAULT_MAX_CLASSES, PlainRuns, RegisterRuns
from ceql.runtime.single import EventStep
from ceql.runtime.state import StateError, export_state, import_state


class Evaluator:
    """Incremental evaluation of one query: ``push(event)``, ``push_batch(batch)``, ``process``.

    Options: ``engine`` ("auto": the compiled kernel for large Arrow/pandas inputs of queries
    it supports, else Python; "python"; "compiled"); ``type_labels`` also reports event-type
    labels in ``Match.labels``; ``max_classes`` bounds the live partial-match classes per
    partition (conditions across events keep runs with different register values apart);
    ``max_states`` and ``max_work`` bound the lazily determinized automaton (docs/limits.md)."""

    def __init__(
        self,
        plan: Plan,
        *,
        engine: str = "auto",
        type_labels: bool = False,
        max_classes: int = DEFAULT_MAX_CLASSES,
        max_states: int | None = None,
        max_work: int | None = None,
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
        # The compiled kernel (runtime/kernel) runs the plans it supports: always with
        # engine="compiled", and with "auto" when the first input is a large Arrow or pandas
        # table (the JIT's start-up pays off). CEQL_KERNEL=0/1 overrides "auto".
        forced = os.environ.get("CEQL_KERNEL")
        if engine == "auto" and forced in ("0", "1"):
            engine = "compiled" if forced == "1" else "python"
        self.engine = engine
        self._kernel = _kernel_for(plan) if engine == "compiled" and not type_labels else None
        self._step: EventStep | None = None  # push()'s per-event path, made on first use
        # NOT FOLLOWED BY: complex events wait for their deadline (runtime/absence.py).
        self.absence = Absence(self) if plan.absence is not None else None

    # ------------------------------------------------------------------ public API

    def push(self, event: dict) -> list[Match]:
        """Process one event (a dict with ``event_type``); return the matches it triggers.
        The event takes a per-event path (``single.py``): no Arrow batch is built."""
        if type(event) is not dict and not isinstance(event, Mapping):
            return list(self.process([event]))
        step = self._step
        if step is None:
            step = self._step = EventStep(self)
        return step.push(event)

    def push_batch(self, batch: Any) -> list[Match]:
        """Process a batch (dicts, a pandas DataFrame or Arrow data); return its matches."""
        return list(self.process(batch))

    def process(self, events: Any) -> Iterator[Match]:
        """Process events lazily: matches are produced as the iterator is consumed. Consume it
        fully before pushing more events."""
        if self._kernel is None and self.engine == "auto" and self.position == 0 and _large(events):
            if not self.type_labels:
                self._kernel = _kernel_for(self.plan)
        if self._kernel is not None:
            yield from self._kernel.matches(events)
            return
        for table in iter_tables(events, builder_for(self.plan)):
            yield from self._run(table)

    def arrow(self, events: Any) -> pa.Table:
        """Matches over ``events`` as one Arrow table (docs/api.md: trigger, positions, one
        column per reported label, partition, one typed column per measure). The compiled
        kernel builds it without a Python object per match when it supports the query."""
        if self._kernel is None and self.engine != "python" and self.position == 0 and not self.type_labels:
            self._kernel = _kernel_for(self.plan)
        if self._kernel is not None:
            return self._kernel.arrow(events)
        from ceql.runtime.arrow import matches_table

        return matches_table(self.plan, self.run(events), type_labels=self.type_labels)

    def process_table(
        self, table: pa.Table, *, positions: np.ndarray | None = None, payload: Any = None
    ) -> Iterator[tuple[Match, list]]:
        """The public entry for runners that cut the stream (Spark): process an Arrow table,
        optionally with the stream position of every row (increasing: the events of one
        partition of a larger stream, or a shard of it). Yields (match, payloads): ``payload``
        is a list (one item per row) or a function of the row index, and a match's payloads are
        those of its reported events. Runs on the Python evaluator."""
        self._python_path()
        if positions is None:
            return self._run(builder_for(self.plan).from_table(table), payload=payload, detailed=True)
        return self._run(builder_for(self.plan).from_table(table), positions=positions, payload=payload, detailed=True)

    def process_with_payload(self, table: pa.Table, payload: Any) -> Iterator[tuple[Match, list]]:
        """Like ``process`` for one Arrow table, also giving, for each match, the payload items
        of its events (``payload``: a list, one item per row, or a function of the row index)."""
        self._python_path()
        return self._run(builder_for(self.plan).from_table(table), payload=payload, detailed=True)

    def next_deadline(self) -> Any:
        """The earliest deadline a ``NOT FOLLOWED BY`` complex event waits for (None if none):
        when to advance time next (a stream runner sets a timer there)."""
        if self.absence is None:
            return None
        return self.absence.next_deadline()

    def advance(self, time: Any, detailed: bool = False) -> list:
        """Tell the evaluator that no event earlier than ``time`` will come (a heartbeat, or
        a watermark): the matches of ``NOT FOLLOWED BY`` queries whose deadline it reaches are
        returned (trigger: the position of the next event). ``time`` is int nanoseconds since
        1970, an ISO-8601 string or a datetime; with a time window, a later event earlier than
        ``time`` is out of order. For a window over positions (EVENTS) it changes nothing."""
        if self.plan.window_kind not in ("time", "attribute") or not self.plan.ordered_time:
            return []
        ns = _time_ns(time)
        matches: list = []
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
        return matches

    def finish(self, detailed: bool = False) -> list:
        """The end of the input: the matches still due (``NOT FOLLOWED BY`` queries report every
        complex event still waiting for its deadline, at the position after the last event).
        ``Query.run`` calls it; call it after pushing the last event of a finite input."""
        if self.absence is None:
            return []
        return self.absence.finish(self.position, detailed)

    def run(self, events: Any) -> Iterator[Match]:
        """Every match over ``events`` taken as the whole input: ``process``, then ``finish``."""
        yield from self.process(events)
        yield from self.finish()

    def export_state(self) -> bytes:
        """The dynamic state as bytes (versioned JSON, see ``state.py``)."""
        if self._kernel is not None:
            return self._kernel.export_json()
        if self.absence is not None:
            return self.absence.export_state()
        return export_state(self)

    def import_state(self, blob: bytes) -> None:
        """Restore a state saved by ``export_state`` (same query, any process)."""
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
            "options": {"type_labels": self.type_labels, "max_classes": self.max_classes, "engine": self.engine},
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
            # its window is that of its own events, whatever the trigger.)
            runs.compact_at = runs.created + max(COMPACT_MIN, runs.created)
            return
        if plan.window_kind == "events":
            now = self.position - 1  # the last position seen
        else:
            now = self.ingest.last_time
            if now is None:
                runs.compact_at = runs.created + COMPACT_MIN
                return
        runs.compact(now - plan.window)
        live = self.live_nodes()
        runs.created = 0
        runs.compact_at = max(COMPACT_MIN, 2 * live)


ENGINES = ("auto", "python", "compiled")
KERNEL_MIN_ROWS = 20_000  # "auto" starts the compiled kernel on inputs at least this large


def _large(events: Any) -> bool:
    rows = getattr(events, "num_rows", None)
    if rows is None and type(events).__module__.startswith("pandas"):
        rows = len(events)
    return rows is not None and rows >= KERNEL_MIN_ROWS


def _kernel_for(plan: Plan) -> Any:
    """The compiled kernel for this plan, or None when it stays on the Python path."""
    from ceql.runtime import kernel

    return kernel.PlanKernel(plan) if kernel.unsupported(plan) is None else None


def _import(evaluator: Evaluator, blob: bytes) -> None:
    """Load a state saved by the Python path or by the kernel, into the matching path."""
    from ceql.runtime import kernel
    from ceql.runtime.absence import is_absence_state

    if evaluator.absence is not None:
        if not is_absence_state(blob):
            raise StateError("not a saved state of this NOT FOLLOWED BY query")
        evaluator.absence.import_state(blob)
        return
    if kernel.is_kernel_state(blob):
        if evaluator._kernel is None:
            evaluator._kernel = _kernel_for(evaluator.plan)
        if evaluator._kernel is None:
            raise ValueError("the saved state was made by the compiled kernel, which cannot run this query")
        evaluator._kernel.import_json(blob)
        return
    evaluator._kernel = None  # a Python-path state continues on the Python path
    import_state(evaluator, blob)


def _time_ns(time: Any) -> int:
    """A time given to ``advance`` as int nanoseconds (the input's rules for a primary_time)."""
    if type(time) is int:
        return time
    from ceql.compile.conversion import Target, convert

    converted = convert([time], Target("primary_time"))
    if converted.codes[0] != 0 or converted.missing[0]:
        reason = converted.reason(0) if converted.codes[0] != 0 else "no time given"
        raise ValueError(f"advance() needs a time: {reason}")
    return int(converted.values[0].as_py())
