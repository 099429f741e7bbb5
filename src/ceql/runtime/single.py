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
from ceql.runtime.batches import builder_for
from ceql.runtime.ingest import out_of_order
from ceql.runtime.rowtype import RowTyper

if TYPE_CHECKING:
    from ceql.runtime.evaluator import Evaluator


def _shared(plan: Any) -> tuple[RowTyper, ScalarPredicates]:
    """The row typer and the scalar predicates of a plan (made once, kept on the plan)."""
    found = getattr(plan, "_single", None)
    if found is None:
        found = (RowTyper(builder_for(plan)), ScalarPredicates(plan.compiled.predicates))
        plan._single = found
    return found


class EventStep:
    """Evaluates one event dict at a time for one evaluator (see the module docstring)."""

    def __init__(self, evaluator: Evaluator) -> None:
        plan = evaluator.plan
        self.evaluator = evaluator
        self.plan = plan
        self.typer, predicates = _shared(plan)
        catalog = plan.catalog
        self.type_index = {name: i for i, name in enumerate(plan.type_names)}
        self.predicates = {
            name: predicates.for_type(
                name, frozenset(c for c, column in catalog.columns.items() if name in column.declared)
            )
            for name in plan.type_names
        }
        self.symbol_ids = plan.symbols.ids
        self.window_kind = plan.window_kind
        self.time_attributes = plan.time_attributes
        self.ordered_time = plan.ordered_time
        names = set(plan.time_attributes.values())
        self.one_time_name = names.pop() if len(names) == 1 else None
        self.partition_types = plan.partition_types
        self.partitioned = bool(plan.partition_groups)
        self.needs_local = plan.strict_filter
        self.has_registers = plan.registers is not None
        mixed = catalog.int_types
        self.value_attributes = [(name, mixed.get(name)) for name in plan.value_attributes]
        self.keep_values = plan.registers is not None or plan.measures is not None
        self.consume = plan.consume != "NONE"
        self._irrelevant: list[bool] = []

    # ------------------------------------------------------------------ shared steps

    def _symbol(self, type_name: str, values: dict) -> tuple[int, int]:
        """The event's symbol id and predicate mask."""
        constant, live = self.predicates[type_name]
        mask = constant
        for bit, holds in live:
            if holds(values):
                mask |= bit
        key = (self.type_index[type_name], mask)
        symbol = self.symbol_ids.get(key)
        if symbol is None:
            symbol = self.plan.symbols.symbol(*key)
        return symbol, mask

    def _is_irrelevant(self, symbol: int) -> bool:
        known = self._irrelevant
        if symbol >= len(known):
            det = self.plan.det
            known.extend(det.irrelevant(s) for s in range(len(known), symbol + 1))
        return known[symbol]

    # ------------------------------------------------------------------ the Python path

    def push(self, event: Any) -> list[Match]:
        """One event on the path the evaluator is on; the matches it triggers."""
        if self.evaluator._kernel is not None:
            return self._push_kernel(event)
        evaluator = self.evaluator
        type_name, values = self.typer.type(event)
        symbol, mask = self._symbol(type_name, values)
        pos = evaluator.position
        ingest = evaluator.ingest
        measure: Any = pos
        kind = self.window_kind
        if kind is not None and kind != "events":
            attribute = self.time_attributes.get(type_name)
            # (As the batch path reads it: with one time attribute name, every event's value
            # of it; with several, each used type's own.)
            source = self.one_time_name or attribute
            measure = values.get(source) if source is not None else None
            if self.ordered_time and attribute is not None:
                self._check_order(ingest, measure, pos)
        evaluator.position = pos + 1
        if not self.needs_local and self._is_irrelevant(symbol):
            return []
        key = None
        if self.partitioned:
            group = self.partition_types.get(type_name)
            if group is not None:
                key = tuple(values.get(a) for a in group)
                for value in key:
                    if value is None or value != value:
                        key = None
                        break
        row = None
        if self.keep_values:
            row = tuple(
                int(v) if integral and type_name in integral and type(v) is float and v.is_integer() else v
                for v, integral in ((values.get(name), integral) for name, integral in self.value_attributes)
            )
        data = None
        if row is not None or self.needs_local:
            local = None
            if self.needs_local:
                counts = ingest.local_counts
                local = counts.get(key, 0)
                counts[key] = local + 1
            data = (row, None, local)
        if self.partitioned and key is None:
            return []
        runs = evaluator.runs
        if self.has_registers:
            finals = runs.advance(key, symbol, pos, measure, data, row, mask)
        else:
            finals = runs.advance(key, symbol, pos, measure, data)
        matches: list[Match] = []
        if finals is not None:
            matches.extend(evaluator.output.matches(finals, pos, key))
            if matches and self.consume:
                evaluator._consume(key, pos)
        if runs.created > runs.compact_at:
            evaluator._compact()
        return matches

    def _check_order(self, ingest: Any, value: Any, pos: int) -> None:
        """Time windows need events in non-decreasing time order (the batch path's rules)."""
        if value is None:
            raise EventError("missing time value (the query's window needs it)", pos)
        if value != value:
            raise EventError("time value is NaN (the query's window needs it)", pos)
        last = ingest.last_time
        if last is not None and value < last:
            raise out_of_order(pos, value, last)
        ingest.last_time = value

    # ------------------------------------------------------------------ the compiled kernel

    def _push_kernel(self, event: Any) -> list[Match]:
        from ceql.runtime.kernel.compiled import MAX_MEASURE, MIN_MEASURE, MISSING
        from ceql.runtime.kernel.output import project, to_matches

        runner = self.evaluator._kernel
        type_name, values = self.typer.type(event)
        symbol = self._symbol(type_name, values)[0]
        pos = runner.position
        kind = self.window_kind
        measure = 0
        if kind == "events":
            measure = pos
        elif kind is not None:
            attribute = self.time_attributes.get(type_name)
            value = values.get(attribute) if attribute is not None else None
            measure = MISSING if value is None else int(value)
            if measure != MISSING and not MIN_MEASURE <= measure <= MAX_MEASURE:
                raise EventError(f"window value {measure} outside the kernel's range [-2**62, 2**62]", pos)
            if self.ordered_time and attribute is not None:
                if measure == MISSING:
                    raise EventError("missing time value (the query's window needs it)", pos)
                last = runner.last_time
                if last is not None and measure < last:
                    raise out_of_order(pos, measure, last)
                runner.last_time = measure
        runner.position = pos + 1
        if self._is_irrelevant(symbol):
            return []
        code = 0
        if self.partitioned:
            group = self.partition_types.get(type_name)
            if group is None:
                return []
            key = []
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
            code = runner.keys._code(tuple(key))
        chunks = runner.kernel.process_one(symbol, pos, measure, code)
        if not chunks:
            return []
        keys = runner.keys.keys if runner.reports_partition and runner.keys is not None else None
        return [m for chunk in chunks for m in to_matches(project(chunk, runner.projection), keys)]
