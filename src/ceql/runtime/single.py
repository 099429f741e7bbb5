"""``Evaluator.push(event)``: one event through the evaluator without building an Arrow batch.

What a batch gets column-wise (``ingest.py`` on the Python path, ``kernel/runner.py`` on the
compiled kernel), one event gets here with plain Python: the row typed by the catalog
(``rowtype.py``), the predicates as closures compiled once per query
(``ScalarPredicates``), the symbol, the window measure, the partition key and the values the
registers and measures read; then one step of the path the evaluator is on. Both paths keep
their state where the batch path keeps it (positions, last time, local counts, key codes, runs),
so that ``push``, ``push_batch`` and ``run`` can be mixed, and states saved and loaded in
between, with the same matches.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ceql.compile.predicates import ScalarPredicates
from ceql.errors import EventError
from ceql.match import Match
from ceql.runtime.ingest import out_of_order
from ceql.runtime.rowtype import RowTyper

#: Matches of one pushed event converted with plain Python (more: the kernel's array path).
SMALL_OUTPUT = 64

if TYPE_CHECKING:
    from ceql.runtime.evaluator import Evaluator


def _shared(plan: Any) -> ScalarPredicates:
    """The scalar predicates of a plan (made once, kept on the plan)."""
    found = getattr(plan, "_single", None)
    if found is None:
        found = plan._single = ScalarPredicates(plan.compiled.predicates)
    return found


class _TypeFacts:
    """What the per-event path needs to know about one event type of a plan (computed once)."""

    __slots__ = ("index", "constant", "live", "measure_from", "ordered", "measured", "group", "values")

    def __init__(self, plan: Any, name: str, declared: frozenset[str], predicates: ScalarPredicates) -> None:
        self.index = plan.type_names.index(name)
        self.constant, self.live = predicates.for_type(name, declared)
        attribute = plan.time_attributes.get(name)
        # The window measure, as the batch path reads it: with one time attribute name, every
        # event's value of it; with several, each used type's own.
        names = set(plan.time_attributes.values())
        self.measure_from = names.pop() if len(names) == 1 else attribute
        self.ordered = plan.ordered_time and attribute is not None
        self.measured = attribute  # the attribute whose value passes deadlines (NOT FOLLOWED BY)
        self.group = plan.partition_types.get(name)
        mixed = plan.catalog.int_types
        # (name, whether a double is an int again for this type) per value attribute
        self.values = tuple((a, a in mixed and name in mixed[a]) for a in plan.value_attributes)


class _PlanFacts:
    """The per-event facts of one plan: per event type, and the symbols met so far."""

    def __init__(self, plan: Any) -> None:
        self.plan = plan
        predicates = _shared(plan)
        catalog = plan.catalog
        self.types = {
            name: _TypeFacts(
                plan,
                name,
                frozenset(c for c, column in catalog.columns.items() if name in column.declared),
                predicates,
            )
            for name in plan.type_names
        }
        self.symbols: dict[tuple[int, int], tuple[int, bool]] = {}  # (type, mask) -> (symbol, irrelevant)
        self.window_kind = plan.window_kind
        self.partitioned = bool(plan.partition_groups)
        self.needs_local = plan.strict_filter
        self.keep_values = plan.registers is not None or plan.measures is not None

    def symbol(self, facts: _TypeFacts, values: dict) -> tuple[int, bool, int]:
        """The event's symbol id, whether it is irrelevant, and its predicate mask."""
        mask = facts.constant
        for bit, holds in facts.live:
            if holds(values):
                mask |= bit
        key = (facts.index, mask)
        found = self.symbols.get(key)
        if found is None:
            symbol = self.plan.symbols.symbol(*key)
            found = self.symbols[key] = (symbol, self.plan.det.irrelevant(symbol))
        return found[0], found[1], mask

    def measure(self, facts: _TypeFacts, values: dict, pos: int) -> Any:
        if self.window_kind is None or self.window_kind == "events":
            return pos
        source = facts.measure_from
        return values.get(source) if source is not None else None

    def record(self, facts: _TypeFacts, values: dict, counts: dict) -> tuple[Any, Any, Any, bool]:
        """(partition key, node data, value tuple, whether the event belongs to a partition)."""
        key = None
        if self.partitioned:
            group = facts.group
            if group is not None:
                key = tuple([values.get(a) for a in group])
                for value in key:
                    if value is None or value != value:
                        key = None
                        break
        row = None
        if self.keep_values:
            row = tuple(
                [
                    int(v) if integral and type(v) is float and v.is_integer() else v
                    for v, integral in [(values.get(name), integral) for name, integral in facts.values]
                ]
            )
        data = None
        if row is not None or self.needs_local:
            local = None
            if self.needs_local:
                local = counts.get(key, 0)
                counts[key] = local + 1
            data = (row, None, local)
        return key, data, row, not (key is None and self.partitioned)


class EventStep:
    """Evaluates one event dict at a time for one evaluator (see the module docstring)."""

    def __init__(self, evaluator: Evaluator) -> None:
        plan = evaluator.plan
        self.evaluator = evaluator
        self.plan = plan
        # Typed by the evaluator's own builder: its catalog records how this input gives times.
        self.typer = RowTyper(evaluator.builder)
        self.main = _PlanFacts(plan)
        self.types = self.main.types
        self.cancelling = _PlanFacts(plan.absence) if plan.absence is not None else None
        self.window_kind = plan.window_kind
        self.partitioned = bool(plan.partition_groups)
        self.needs_local = plan.strict_filter
        self.has_registers = plan.registers is not None
        self.keep_values = plan.registers is not None or plan.measures is not None
        self.consume = plan.consume != "NONE"
        self._projected: dict = {}  # kernel label-set id -> (position kept, labels reported)
        # The kernel's partition key codes seen by push (its own table may be a numba dict,
        # slow to query from Python one key at a time).
        self._codes: dict[tuple, int] = {}
        self._codes_of: Any = None
        self._shared_records: dict[str, bool] = {}  # event type -> NOT FOLLOWED BY's push records once

    # ------------------------------------------------------------------ the Python path

    def push(self, event: Any) -> list[Match]:
        """One event on the path the evaluator is on; the matches it triggers."""
        evaluator = self.evaluator
        if evaluator._kernel is not None:
            return self._push_kernel(event)
        if self.cancelling is not None:
            return self._push_absence(event)
        type_name, values = self.typer.type(event)
        facts = self.types[type_name]
        symbol, irrelevant, mask = self.main.symbol(facts, values)
        pos = evaluator.position
        measure: Any = pos
        if self.window_kind is not None and self.window_kind != "events":
            source = facts.measure_from
            measure = values.get(source) if source is not None else None
            if facts.ordered:
                self._check_order(evaluator.ingest, measure, pos)
        evaluator.position = pos + 1
        if irrelevant and not self.needs_local:
            return []
        key, data, row, keyed = self.main.record(facts, values, evaluator.ingest.local_counts)
        if not keyed:
            return []
        runs = evaluator.runs
        if self.has_registers:
            finals = runs.advance(key, symbol, pos, measure, data, row, mask)
        else:
            finals = runs.advance(key, symbol, pos, measure, data)
        if finals is None:
            if runs.created > runs.compact_at:
                evaluator._compact()
            return []
        matches = list(evaluator.output.matches(finals, pos, key))
        if matches and self.consume:
            evaluator._consume(key, pos)
        if runs.created > runs.compact_at:
            evaluator._compact()
        return matches

    def _push_absence(self, event: Any) -> list[Match]:
        """NOT FOLLOWED BY: the event's records for both sets of runs, then one step of
        ``absence.Absence`` (deadlines passed, cancellations, complex events that start waiting)."""
        evaluator = self.evaluator
        absence = evaluator.absence
        cancelling = self.cancelling
        assert absence is not None and cancelling is not None
        type_name, values = self.typer.type(event)
        facts, facts2 = self.types[type_name], cancelling.types[type_name]
        pos = evaluator.position
        measure2 = cancelling.measure(facts2, values, pos)
        measure = self.main.measure(facts, values, pos)
        # (_check_order inline when the time is in order: one call less per event each.)
        if facts2.ordered:
            ingest = absence.ingest
            last = ingest.last_time
            if measure2 is None or measure2 != measure2 or (last is not None and measure2 < last):
                self._check_order(ingest, measure2, pos)
            ingest.last_time = measure2
        if facts.ordered:
            ingest = evaluator.ingest
            last = ingest.last_time
            if measure is None or measure != measure or (last is not None and measure < last):
                self._check_order(ingest, measure, pos)
            ingest.last_time = measure
        symbol2, irrelevant2, mask2 = cancelling.symbol(facts2, values)
        symbol, irrelevant, mask = self.main.symbol(facts, values)
        evaluator.position = pos + 1
        if self.window_kind == "events":
            deadline_measure = pos
        else:
            deadline_measure = values.get(facts2.measured) if facts2.measured is not None else None
        moves2 = None
        record = None
        if not irrelevant2 or cancelling.needs_local:
            record = cancelling.record(facts2, values, absence.ingest.local_counts)
            key2, data2, row2, keyed2 = record
            if keyed2 and not irrelevant2:
                moves2 = (key2, symbol2, measure2, data2, row2, mask2)
        moves = None
        if not irrelevant or self.needs_local:
            if record is None or not self._same_record(type_name, facts, facts2):
                record = self.main.record(facts, values, evaluator.ingest.local_counts)
            key, data, row, keyed = record
            if keyed and (not irrelevant or self.needs_local):
                moves = (key, symbol, measure, data, row, mask)
        matches = absence.step(pos, deadline_measure, moves2, moves)
        runs = evaluator.runs
        if runs.created > runs.compact_at:
            evaluator._compact()
        return matches

    def _same_record(self, type_name: str, facts: _TypeFacts, facts2: _TypeFacts) -> bool:
        """Whether both sets of runs record this type's events alike (same partition key, no
        values kept, no sub-stream indexes): NOT FOLLOWED BY's push then records it once."""
        found = self._shared_records.get(type_name)
        if found is None:
            main, cancelling = self.main, self.cancelling
            assert cancelling is not None
            found = self._shared_records[type_name] = (
                facts.group == facts2.group
                and main.partitioned == cancelling.partitioned
                and not (main.keep_values or cancelling.keep_values or main.needs_local or cancelling.needs_local)
            )
        return found

    def _check_order(self, ingest: Any, value: Any, pos: int) -> None:
        """Time windows need events in non-decreasing time order (the batch path's rules)."""
        if value is None:
            raise EventError("missing time value (the query's window needs it)", pos)
        if value != value:
            raise EventError("time value is NaN (the query's window needs it)", pos)
        last = ingest.last_time
        if last is not None and value < last:
            raise out_of_order(pos, value, last, ingest.show_time)
        ingest.last_time = value

    # ------------------------------------------------------------------ the compiled kernel

    def _push_kernel(self, event: Any) -> list[Match]:
        runner = self.evaluator._kernel
        if getattr(runner, "is_absence", False):  # NOT FOLLOWED BY (kernel/absence.py)
            found = runner.push_event(self, event)
            if found is not None:
                return runner.push_matches(found, self.evaluator.output_schema()) if found else []
            if not runner.position:  # values kept per event: a fresh evaluator pushes on the Python path
                self.evaluator._kernel = None
                return self._push_absence(event)
        if (
            getattr(runner, "is_absence", False)
            or runner.kept is not None
            or runner.checked
            or runner.measures is not None
            or getattr(runner, "join", None) is not None
            or getattr(runner, "chain", None) is not None
        ):
            # The kernel keeps event values for checks and measures per complex event
            # (kernel/runner.py), or evaluates the plan as a hash join or a column-wise chain
            # (joins.py, contiguous.py) whose state the automaton's per-event loop does not
            # hold: those plans take the batch path, one row at a time.
            return list(self.evaluator.process([event]))
        type_name, values = self.typer.type(event)
        facts = self.types[type_name]
        symbol, irrelevant, _ = self.main.symbol(facts, values)
        pos = runner.position
        kind = self.window_kind
        measure = 0
        missing = False
        if kind == "events":
            measure = pos
        elif kind is not None:
            attribute = self.plan.time_attributes.get(type_name)
            value = values.get(attribute) if attribute is not None else None
            missing = value is None
            measure = 0 if missing else int(value)
            if facts.ordered:
                if missing:
                    raise EventError("missing time value (the query's window needs it)", pos)
                last = runner.last_time
                if last is not None and measure < last:
                    raise out_of_order(pos, measure, last, self.evaluator.ingest.show_time)
                runner.last_time = measure
        runner.position = pos + 1
        if irrelevant:
            return []
        code = 0
        key: list = []
        if self.partitioned:
            group = facts.group
            if group is None:
                return []
            for attribute in group:
                value = values.get(attribute)
                if value is None:
                    return []
                if type(value) is float:
                    if value != value:
                        return []  # NaN is no key
                    if value.is_integer():
                        value = int(value)  # a double equal to an int is that int's key
                key.append(value)
            keys = runner.keys
            if self._codes_of is not keys.codes:  # codes are reassigned when a state is loaded
                self._codes_of = keys.codes
                self._codes = {}
            if keys.cacheable:
                found = self._codes.get(tuple(key))
                if found is None:
                    found = self._codes[tuple(key)] = keys._code(tuple(key))
            else:  # recycled window codes (issue 34): the table is the one truth
                found = keys._code(tuple(key))
            code = found
        chunks = runner.kernel.process_one(symbol, pos, measure, code, missing)
        if not chunks:
            return []
        if len(chunks) > 1 or len(chunks[0]) > SMALL_OUTPUT:
            from ceql.runtime.arrow import MatchRows

            schema = self.evaluator.output_schema()
            return [m for chunk in chunks for m in MatchRows(runner.columns(chunk), schema, runner.reports_partition)]
        # All of one trigger, so of this event's partition: its key is the partition's.
        partition = tuple(key) if runner.reports_partition else None
        found = self._small_matches(chunks[0], runner.projection, partition)
        # LIMIT among the projected matches of the trigger (the kernel's own LIMIT counts
        # complex events before the projection merges them: runner.columns applies it so too).
        return found[: runner.limit] if runner.limit is not None else found

    def _small_matches(self, chunk: Any, projection: Any, partition: Any) -> list[Match]:
        """A few complex events of one trigger as Match objects, with plain Python: what
        ``kernel.output.project`` and ``to_matches`` give (projection, then the first of the
        matches that it makes equal), without their per-call array work."""
        offsets = chunk.offsets.tolist()
        positions = chunk.positions.tolist()
        trigger = int(chunk.trigger[0])
        if chunk.labels is None or not projection.needs_labels_for(chunk.label_sets):
            return [
                Match(trigger, tuple(positions[offsets[i] : offsets[i + 1]]), {}, partition)
                for i in range(len(offsets) - 1)
            ]
        ids = chunk.labels.tolist()
        sets = chunk.label_sets
        events = self._projected
        if events.get("sets") is not sets:
            events.clear()
            events["sets"] = sets
        out: list[Match] = []
        seen: set = set()
        for i in range(len(offsets) - 1):
            kept: list[tuple[int, tuple[str, ...]]] = []
            for j in range(offsets[i], offsets[i + 1]):
                facts = events.get(ids[j])
                if facts is None:
                    facts = events[ids[j]] = projection.event(sets[ids[j]])
                if facts[0]:
                    kept.append((positions[j], facts[1]))
            if projection.merges:
                identity = tuple(kept)
                if identity in seen:
                    continue
                seen.add(identity)
            labels: dict[str, list[int]] = {}
            for position, reported in kept:
                for name in reported:
                    labels.setdefault(name, []).append(position)
            out.append(
                Match(trigger, tuple(p for p, _ in kept), {k: tuple(v) for k, v in labels.items()}, partition)
            )
        return out
