"""The brute-force reference evaluator: the semantics of docs/semantics.md, literally.

This is the oracle the engine is tested against, so it favours obviousness over speed: it
computes ``[[f]](i, j)`` for every formula node and pair of positions (memoised, formulas.py),
then applies the query clauses in the order the semantics gives: PARTITION BY (sub-streams, or
a filter over label attributes), WITHIN, CONSUME BY, the selection strategy, the projection and
the measures, LIMIT. Use it on small streams (a few dozen events).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator, Mapping
from fractions import Fraction
from typing import Any

from ceql.compile.output_schema import measures_of, time_types
from ceql.lang import ast
from ceql.lang.analysis import CheckedQuery
from ceql.match import Match
from ceql.reference.conditions import MISSING, Env, measure
from ceql.reference.formulas import FormulaEvaluator, ce_max, ce_min, common_value, support
from ceql.reference.inputs import rows, time_kinds

__all__ = ["run"]


def run(query: Any, events: Any, *, type_labels: bool = False) -> list[Match]:
    """Evaluate ``query`` over ``events`` by brute force; return the matches in trigger order.

    ``query`` is a CheckedQuery or any object with a ``checked`` attribute holding one (such as
    the engine's compiled query). ``events`` are what ``Query.run`` accepts: dicts with an
    ``event_type`` key, a pandas DataFrame, or Arrow tables / record batches. With
    ``type_labels=True``, ``Match.labels`` also lists the events under their event type names.
    """
    checked: CheckedQuery = query if isinstance(query, CheckedQuery) else query.checked
    if isinstance(events, Iterator):
        events = list(events)
    reference = _Reference(checked, rows(events, checked.schema), type_labels)
    # Times in measures are shown as the input gives them, as the engine's outputs do.
    times = time_types(checked.schema, time_kinds(events, checked.schema))
    reference.shown = {m.name: m for m in measures_of(checked, times) if m.time is not None}
    return reference.run()


class _Reference:
    def __init__(self, checked: CheckedQuery, stream: list[dict[str, Any]], type_labels: bool) -> None:
        self.checked = checked
        self.query = checked.query
        self.stream = stream
        self.type_labels = type_labels
        self.shown: dict[str, Any] = {}  # time measures -> how their nanoseconds are shown

    # ------------------------------------------------------------------ top level

    def run(self) -> list[Match]:
        substreams = self.partition()
        # candidates[j] = [(partition key, CEs in global positions, deadlines)] triggered at j
        candidates: dict[int, list[tuple[tuple | None, list[frozenset], list]]] = {}
        for key, positions in substreams.items():
            local_stream = [self.stream[p] for p in positions]
            evaluator = FormulaEvaluator(local_stream)
            for local_j, global_j in enumerate(positions):
                mapped = [
                    frozenset((label, positions[p]) for label, p in ce)
                    for ce in self.reported(evaluator, self.checked.formula, local_j, local_stream)
                ]
                if self.checked.absence is None:
                    candidates[global_j] = [(key, mapped, [None] * len(mapped))]
                    continue
                for ce in mapped:  # NOT FOLLOWED BY: reported at the deadline, if not cancelled
                    if not ce or not self.in_window(ce):
                        continue
                    deadline = self.measure(int(ce_min(ce))) + self.query.within.value
                    trigger = self.deadline_trigger(global_j, deadline)
                    if not self.cancelled(ce, evaluator, positions, local_stream, local_j, trigger):
                        found = next((c for c in candidates.setdefault(trigger, []) if c[0] == key), None)
                        if found is None:
                            found = (key, [], [])
                            candidates[trigger].append(found)
                        if ce not in found[1]:
                            found[1].append(ce)
                            found[2].append(deadline)
        matches: list[Match] = []
        last_output_any = -1
        last_output_by_key: dict[Any, int] = {}
        consume = self.query.effective_consume
        for j in range(len(self.stream) + 1):  # (absences may come due at the end of the input)
            # (Several keys share a trigger only when deadlines pass: what one trigger reports
            # does not consume the rest of that trigger's complex events.)
            reported = []
            for key, ces, deadlines in sorted(candidates.get(j, []), key=lambda c: _sortable_key(c[0])):
                due = dict(zip(ces, deadlines))
                ces = [ce for ce in ces if self.in_window(ce)]
                if consume == "ANY" or (consume == "PARTITION" and not self.query.partition_by):
                    ces = [ce for ce in ces if ce_min(ce) > last_output_any]
                elif consume == "PARTITION":
                    ces = [ce for ce in ces if ce_min(ce) > last_output_by_key.get(key, -1)]
                ces = self.select(ces, substreams[key])
                if self.checked.absence is not None:  # (5.2: by deadline, then by their events)
                    ces = sorted(ces, key=lambda ce: (due[ce], _events_order(ce)))
                output = self.project(ces, j, key, due)
                if output:
                    reported.append(key)
                matches.extend(output)
            if reported:
                last_output_any = j
                for key in reported:
                    last_output_by_key[key] = j
        return matches

    def reported(self, evaluator: FormulaEvaluator, formula, local_j: int, local_stream) -> set[frozenset]:
        """The CEs of ``formula`` reported at a local position, PARTITION BY over labels applied."""
        ces = evaluator.reported(formula, local_j)
        if self.query.partition_labels:
            ces = {ce for ce in ces if common_value(ce, self.query.partition_labels, local_stream) is not MISSING}
        return ces

    # ------------------------------------------------------------------ NOT FOLLOWED BY

    def measure(self, position: int) -> Any:
        """The window measure of an event: its position, its time or the window attribute."""
        within = self.query.within
        if within.kind == "events":
            return position
        event = self.stream[position]
        if within.kind == "attribute":
            return event[within.attribute]
        return event[self.checked.time_attribute(event["event_type"])]

    def deadline_trigger(self, after: int, deadline: Any) -> int:
        """The position where a deadline passes: the first event after ``after`` whose measure
        is at or past it (for a time or attribute window, an event of a type the query names on
        either side), or the end of the input."""
        types = set(self.checked.absence.used_types)
        for position in range(after + 1, len(self.stream)):
            if self.query.within.kind != "events" and self.stream[position]["event_type"] not in types:
                continue
            if self.measure(position) >= deadline:
                return position
        return len(self.stream)

    def cancelled(self, ce: frozenset, evaluator, positions, local_stream, local_j: int, trigger: int) -> bool:
        """Whether ``(f AS mark) ; g`` has a complex event made of ``ce`` and one of g whose
        evaluation ends before the deadline passes (in ce's sub-stream)."""
        mark = ast.ABSENCE_MARK
        formula = self.checked.absence.formula
        for local_k in range(local_j + 1, len(positions)):
            if positions[local_k] >= trigger:
                break
            for found in self.reported(evaluator, formula, local_k, local_stream):
                marked = {p for label, p in found if label == mark}
                part = frozenset((label, positions[p]) for label, p in found if p in marked and label != mark)
                if part == ce:
                    return True
        return False

    def partition(self) -> dict[tuple | None, list[int]]:
        """Sub-stream key -> its global positions, in order (one sub-stream if unpartitioned)."""
        groups = self.query.partition_by
        if not groups:
            return {None: list(range(len(self.stream)))}
        substreams: dict[tuple | None, list[int]] = {}
        for position, event in enumerate(self.stream):
            key = partition_key(event, groups, self.checked)
            if key is not None:
                substreams.setdefault(key, []).append(position)
        return substreams

    def in_window(self, ce: frozenset) -> bool:
        within = self.query.within
        if within is None or not ce:
            return True
        first, last = self.stream[int(ce_min(ce))], self.stream[int(ce_max(ce))]
        if within.kind == "events":
            return ce_max(ce) - ce_min(ce) < within.value
        if within.kind == "attribute":
            return _less_apart(first.get(within.attribute), last.get(within.attribute), within.value)
        time = self.checked.time_attribute
        return _less_apart(first.get(time(first["event_type"])), last.get(time(last["event_type"])), within.value)

    def select(self, ces: list[frozenset], substream: list[int]) -> list[frozenset]:
        strategy = self.query.effective_strategy
        if strategy == "ALL" or not ces:
            return ces
        supports = {ce: support(ce) for ce in ces}
        if strategy == "ANY":
            return [min(ces, key=lambda ce: sorted(ce))]
        if strategy in ("NEXT", "LAST"):
            best = functools.reduce(lambda a, b: b if _better(b, a, strategy) else a, supports.values())
            return [ce for ce in ces if supports[ce] == best]
        if strategy == "MAX":
            all_supports = set(supports.values())
            return [ce for ce in ces if not any(supports[ce] < other for other in all_supports)]
        # STRICT: the support is an interval of the (sub-)stream.
        index = {p: i for i, p in enumerate(substream)}
        kept = []
        for ce in ces:
            local = sorted(index[p] for p in supports[ce])
            if not local or local[-1] - local[0] + 1 == len(local):
                kept.append(ce)
        return kept

    def project(self, ces: list[frozenset], trigger: int, key: tuple | None, due: dict | None = None) -> list[Match]:
        """SELECT: the kept events and labels, the measures over the whole CE; duplicates
        (same projected CE and measure values) are reported once; then LIMIT."""
        projection = self.query.projection
        reported = None if self.type_labels else self.checked.as_labels
        kept = {item.label for item in projection.items} if projection.kind == "list" else None
        seen: dict[Match, None] = {}
        for ce in ces:
            measures = self.measures(ce)
            if projection.kind == "none":
                positions: tuple[int, ...] = ()
                labels: dict[str, tuple[int, ...]] = {}
            else:
                chosen = [(label, p) for label, p in ce if kept is None or label in kept]
                positions = tuple(sorted({p for _, p in chosen}))
                grouped: dict[str, list[int]] = {}
                for label, p in chosen:
                    if reported is None or label in reported:
                        grouped.setdefault(label, []).append(p)
                labels = {k: tuple(sorted(v)) for k, v in grouped.items()}
            deadline = due.get(ce) if due else None
            seen.setdefault(Match(trigger, positions, labels, key, measures, deadline), None)
        # (NOT FOLLOWED BY: in the order of its complex events, 5.2; a projection's repeat
        # keeps the place of its first complex event)
        output = list(seen) if self.checked.absence is not None else sorted(seen)
        if self.query.limit is not None:
            output = output[: self.query.limit]
        return output

    def measures(self, ce: frozenset) -> dict[str, Any]:
        items = self.query.projection.measures
        if not items:
            return {}
        env = Env.of(ce, ce, self.stream)
        multiplicity = self.checked.label_multiplicity
        values = {item.name: measure(item.expr, env, multiplicity) for item in items}
        for name, shown in self.shown.items():
            values[name] = shown.python(values[name])
        return values


def partition_key(event: Mapping[str, Any], groups, checked: CheckedQuery) -> tuple | None:
    """The PARTITION BY key of an event: the values of the first attribute list its type has."""
    decl = checked.schema.event_types[event["event_type"]]
    for group in groups:
        if all(decl.attribute(a) is not None for a in group):
            values = tuple(event.get(a) for a in group)
            if any(v is None for v in values):
                return None
            return values
    return None


def _better(a: frozenset, b: frozenset, strategy: str) -> bool:
    """Whether support a is strictly better than b for NEXT (earliest) or LAST (latest)."""
    if a == b:
        return False
    diff = a ^ b
    pivot = min(diff) if strategy == "NEXT" else max(diff)
    return pivot in a


def _less_apart(first: Any, last: Any, window: int) -> bool:
    """``last - first < window`` over the reals (no rounding, no overflow); false when a value
    is missing (None or NaN), as every comparison with a missing value (section 3.2)."""
    if first is None or last is None or first != first or last != last:
        return False
    if isinstance(first, float) and math.isinf(first) or isinstance(last, float) and math.isinf(last):
        difference = last - first  # inf - inf is NaN: false
        return difference < window
    return Fraction(last) - Fraction(first) < window


def _sortable_key(key: tuple | None) -> tuple:
    """Keys by value (docs/semantics.md 5.2): numbers (booleans as 0/1), then strings."""
    if key is None:
        return ()
    return tuple((1, int(v)) if isinstance(v, bool) else (1, v) if isinstance(v, (int, float)) else (2, str(v)) for v in key)


def _events_order(ce: frozenset) -> tuple:
    """A complex event as its events in order, each (position, its public labels sorted): the
    order of NOT FOLLOWED BY's matches of one deadline (a prefix first)."""
    labels: dict[int, list[str]] = {}
    for label, position in ce:
        names = labels.setdefault(position, [])
        if not label.startswith("\x00"):
            names.append(label)
    return tuple((position, tuple(sorted(names))) for position, names in sorted(labels.items()))
