"""From the final nodes of one trigger to matches: enumerate the complex events (window
pruning, output-linear delay), drop repeats of one complex event, check STRICT, select by the
strategy, project, compute measures, and apply LIMIT -- in the order docs/semantics.md gives."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from typing import Any

from ceql.compile.plan import Plan
from ceql.match import Match
from ceql.runtime import nodes
from ceql.runtime.nodes import PATH_DATA, PATH_LABELS, PATH_POS, PATH_REST
from ceql.runtime.selection import MaxSelection, best_support, paths_with_support


class Output:
    """Turns the final nodes reached at a trigger into matches, for one plan."""

    def __init__(self, plan: Plan, type_labels: bool = False, ranked: bool = False) -> None:
        self.plan = plan
        # With ranked runs (NEXT/LAST), the final nodes already hold only the best support.
        self.ranked = ranked
        self.type_labels = type_labels
        self.reported_labels = plan.as_labels | (
            frozenset(plan.checked.label_types) if type_labels else frozenset()
        )
        self._projection_cache: dict[tuple, tuple[bool, tuple[str, ...]]] = {}
        projection = plan.projection
        self.fast = (
            (plan.strategy == "ALL" or ranked)
            and not plan.strict_filter
            and not plan.repeats
            and plan.measures is None
            and (projection is None or projection.kind == "star")
            and plan.limit is None
        )
        self.partition_reported = bool(plan.partition_groups) and not plan.auto_partition
        self._max: MaxSelection | None = None

    def matches(self, finals: list[tuple], trigger: int, key: Any, detailed: bool = False) -> Iterator:
        partition = key if self.partition_reported else None
        if self.fast and not detailed:
            return self._fast(finals, trigger, partition)
        return self._general(finals, trigger, partition, detailed)

    def _paths(self, finals: list[tuple]) -> Iterator:
        window = self.plan.window
        newest_first = self.plan.strategy == "ANY"
        for root in reversed(finals) if newest_first else finals:
            yield from nodes.enumerate_paths(root, window, newest_first)

    def _fast(self, finals: list[tuple], trigger: int, partition: Any) -> Iterator[Match]:
        """ALL, SELECT *, no LIMIT, no measures, one run per complex event."""
        window = self.plan.window
        enumerate_paths = nodes.enumerate_paths
        if not self.reported_labels:
            for root in finals:
                for path in enumerate_paths(root, window):
                    positions = []
                    append = positions.append
                    while path is not None:
                        append(path[PATH_POS])
                        path = path[PATH_REST]
                    yield Match(trigger, tuple(positions), {}, partition)
        else:
            make = self._match
            for root in finals:
                for path in enumerate_paths(root, window):
                    yield make(path, trigger, partition)

    def _general(self, finals: list[tuple], trigger: int, partition: Any, detailed: bool) -> Iterator:
        plan = self.plan
        paths: Iterable = self._paths(finals)
        if plan.repeats:
            # With measures, event-type labels decide what a measure reads (PROJECT may drop
            # one): complex events that differ only there are told apart by their values.
            paths = _distinct(paths, None if plan.measures is not None else self.reported_labels)
        if plan.strict_filter:
            paths = (p for p in paths if _is_interval(p))
        strategy = plan.strategy
        simple = not plan.strict_filter and not plan.repeats
        if self.ranked:
            pass
        elif strategy == "ANY":
            paths = itertools.islice(paths, 1)
        elif strategy in ("NEXT", "LAST") and simple:
            # The best support straight from the tECS, then only the CEs with that support.
            support = best_support(finals, strategy, plan.window)
            paths = paths_with_support(finals, support, plan.window) if support is not None else ()
        elif strategy == "MAX" and simple:
            if self._max is None:
                self._max = MaxSelection(plan.window)  # its memo is kept across triggers
            paths = self._max.select(finals)
        elif strategy in ("NEXT", "LAST", "MAX"):
            paths = _select(list(paths), strategy)
        projection = plan.projection
        dedupe = (projection is not None and projection.kind != "star") or plan.measures is not None
        seen: set | None = set() if dedupe else None
        limit = plan.limit
        count = 0
        for path in paths:
            match = self._match(path, trigger, partition)
            if seen is not None:
                if match in seen:
                    continue
                seen.add(match)
            yield (match, _payloads(path, match.positions)) if detailed else match
            count += 1
            if limit is not None and count >= limit:
                break

    def _projection(self, labels: tuple) -> tuple[bool, tuple[str, ...]]:
        found = self._projection_cache.get(labels)
        if found is None:
            public = frozenset(label for label in labels if label[0] != "\x00")
            projection = self.plan.projection
            reported = self.reported_labels
            if projection is None or projection.kind == "star":
                found = (bool(public), tuple(sorted(public & reported)))
            elif projection.kind == "none":
                found = (False, ())
            else:
                kept = {item.label for item in projection.items}
                found = (bool(public & kept), tuple(sorted(public & kept & reported)))
            self._projection_cache[labels] = found
        return found

    def _match(self, path: tuple | None, trigger: int, partition: Any) -> Match:
        positions = []
        labels: dict[str, list[int]] = {}
        cache = self._projection_cache
        append = positions.append
        measures = self.plan.measures
        events = [] if measures is not None else None
        while path is not None:
            pos, event_labels, data, path = path
            found = cache.get(event_labels)
            if found is None:
                found = self._projection(event_labels)
            if events is not None:
                events.append((event_labels, data[0]))
            if found[0]:
                append(pos)
            for label in found[1]:
                seen = labels.get(label)
                if seen is None:
                    labels[label] = [pos]
                else:
                    seen.append(pos)
        frozen = {label: tuple(seen) for label, seen in labels.items()}
        values = measures.compute(events) if measures is not None else None
        return Match(trigger, tuple(positions), frozen, partition, values or {})


def _distinct(paths: Iterable, reported: frozenset[str] | None) -> Iterator:
    """Each complex event once (its positions and reported labels), whichever derivations
    reach it: private labels and labels not reported (event types) do not count (``None``:
    every public label counts)."""
    seen = set()
    for path in paths:
        identity = []
        node = path
        while node is not None:
            public = [label for label in node[PATH_LABELS] if label[0] != "\x00"]
            if public:
                identity.append(
                    (node[PATH_POS], tuple(label for label in public if reported is None or label in reported))
                )
            node = node[PATH_REST]
        identity = tuple(identity)
        if identity in seen:
            continue
        seen.add(identity)
        yield path


def _payloads(path: tuple | None, positions: tuple[int, ...]) -> list:
    """The payload items of the events at ``positions`` (ascending) along a CE path."""
    wanted = set(positions)
    out = []
    while path is not None:
        if path[PATH_POS] in wanted:
            data = path[PATH_DATA]  # (values, payload, local index)
            out.append(data[1] if data is not None else None)
        path = path[PATH_REST]
    return out


def _support(path: tuple | None) -> list[int]:
    out = []
    while path is not None:
        out.append(path[PATH_POS])
        path = path[PATH_REST]
    return out


def _is_interval(path: tuple | None) -> bool:
    """Whether the CE's positions are consecutive in its (sub-)stream (local indexes)."""
    local = []
    while path is not None:
        local.append(path[PATH_DATA][2])  # the event's index in its (sub-)stream
        path = path[PATH_REST]
    return not local or local[-1] - local[0] + 1 == len(local)


def _select(paths: list, strategy: str) -> list:
    """NEXT / LAST / MAX among the complex events of one trigger (by their supports)."""
    if not paths:
        return paths
    supports = [frozenset(_support(p)) for p in paths]
    if strategy == "MAX":
        distinct = set(supports)
        return [p for p, s in zip(paths, supports) if not any(s < other for other in distinct)]
    best = supports[0]
    for support in supports[1:]:
        if support != best:
            diff = support ^ best
            pivot = min(diff) if strategy == "NEXT" else max(diff)
            if pivot in support:
                best = support
    return [p for p, s in zip(paths, supports) if s == best]
