"""The streaming evaluator: constant work per relevant event, lazy enumeration of matches.

Per batch of events, predicates are evaluated column-wise into one symbol per event; events
whose symbol only makes every reachable state skip are dropped before the Python loop. For each
remaining event the evaluator moves every active determinized state along its cached transitions,
building tECS nodes (runtime/nodes.py); when a final state is reached, the complex events of its
node are enumerated (lazily, with output-linear delay), filtered by cross-event conditions,
selected by the strategy, projected and limited.

State is plain data (dicts of ints to tuples), one map per PARTITION BY key, created on demand
and dropped when it holds no live run. With a window over a non-decreasing measure, structure
that can no longer contribute is periodically pruned, so memory is bounded by the window.
"""

from __future__ import annotations

import gc
import itertools
import os
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ceql.compile.strategies import strict_rewritable
from ceql.errors import EventError
from ceql.match import Match
from ceql.runtime import nodes
from ceql.runtime.batches import iter_tables
from ceql.runtime.crossconditions import compile_condition
from ceql.runtime.plan import Plan
from ceql.runtime.selection import best_support, maximal_supports, paths_with_support

BOTTOM = nodes.BOTTOM
_output = nodes.output
_union = nodes.union
COMPACT_MIN = 50_000  # nodes created before the first pruning pass


class Evaluator:
    """Incremental evaluation of one query: ``push(event)``, ``push_batch(batch)``, ``process``."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.position = 0  # number of events seen
        self.partitions: dict[Any, dict[int, tuple]] = {}
        self.local_counts: dict[Any, int] = {}  # events seen per partition (sub-stream indexes)
        self.last_time: float | None = None
        # CONSUME BY ANY across partitions: the last position that produced output, and per
        # partition the value it had when that partition was last brought up to date.
        self.consumed_at = -1
        self.partition_consumed: dict[Any, int] = {}
        self.created = 0
        self.compact_at = COMPACT_MIN
        self.matches_reported = 0
        det = plan.det
        self._init = det.initial
        self._cross = [
            compile_condition(c, {a: i for i, a in enumerate(plan.cross_attributes)})
            for c in plan.compiled.cross
        ]
        self._strict_filter = plan.strategy == "STRICT" and not strict_rewritable(plan.checked.query.formula)
        self._needs_local = self._strict_filter
        self._payload: list | None = None  # per-row payload of the table being processed
        projection = plan.projection
        self._fast_output = (
            plan.strategy == "ALL"
            and not self._cross
            and not self._strict_filter
            and (projection is None or projection.kind == "star")
            and plan.limit is None
        )
        self._projection_cache: dict[tuple, tuple[bool, tuple[str, ...]]] = {}
        self._irrelevant = np.zeros(0, dtype=bool)
        self._type_index = {name: i for i, name in enumerate(plan.type_names)}
        self._type_array = pa.array(plan.type_names, pa.string())
        # CEQL_KERNEL=1: plans the compiled kernel supports run there (see runtime/kernel).
        self._kernel = _kernel_for(plan) if os.environ.get("CEQL_KERNEL", "") == "1" else None

    # ------------------------------------------------------------------ public API

    def push(self, event: dict) -> list[Match]:
        """Process one event (a dict with ``event_type``); return the matches it triggers."""
        return list(self.process([event]))

    def push_batch(self, batch: Any) -> list[Match]:
        """Process a batch (dicts, a pandas DataFrame or Arrow data); return its matches."""
        return list(self.process(batch))

    def process(self, events: Any) -> Iterator[Match]:
        """Process events lazily: matches are produced as the iterator is consumed. Consume it
        fully before pushing more events."""
        if self._kernel is not None:
            yield from self._kernel.matches(events)
            return
        for table in iter_tables(events, self.plan.builder):
            yield from self._process_table(table)

    def process_at(self, table: pa.Table, positions: np.ndarray, payload: Any = None) -> Iterator[tuple]:
        """Process an Arrow table whose events have the given stream positions (increasing; the
        events of one partition of a larger stream, or a shard of it). Yields (match, payloads)."""
        self._python_path()
        self._payload = payload
        try:
            yield from self._process_table(
                self.plan.builder.from_table(table),
                detailed=True,
                positions=np.asarray(positions, dtype=np.int64),
            )
        finally:
            self._payload = None

    def process_with_payload(self, table: pa.Table, payload: Any) -> Iterator[tuple[Match, list]]:
        """Like ``process`` for one Arrow table, also giving, for each match, the payload items
        of the events at its positions. ``payload`` is a list (one item per row) or a function
        of the row index, called only for the rows the evaluator keeps."""
        self._python_path()
        self._payload = payload
        try:
            yield from self._process_table(self.plan.builder.from_table(table), detailed=True)
        finally:
            self._payload = None

    def export_state(self) -> bytes:
        """The dynamic state as bytes (plain data); see ``import_state``."""
        return export_state(self)

    def import_state(self, blob: bytes) -> None:
        """Restore a state saved by ``export_state`` (same query, any process)."""
        import_state(self, blob)

    def __getstate__(self) -> dict:
        return {
            "query": self.plan.checked.text,
            "schema": self.plan.checked.schema,
            "state": export_state(self),
        }

    def __setstate__(self, value: dict) -> None:
        from ceql.api import compile as compile_query

        fresh = compile_query(value["query"], value["schema"]).evaluator()
        self.__dict__.update(fresh.__dict__)
        import_state(self, value["state"])

    def _python_path(self) -> None:
        """Payload and position-aware processing run on the Python path only."""
        if self._kernel is not None:
            if self._kernel.position:
                raise RuntimeError("this evaluator already runs on the compiled kernel")
            self._kernel = None

    def live_nodes(self) -> int:
        """The number of tECS nodes reachable from the live state (a memory measure)."""
        if self._kernel is not None:
            return self._kernel.kernel.live_nodes()
        roots = [node for active in self.partitions.values() for node in active.values()]
        return nodes.count_nodes(roots)

    # ------------------------------------------------------------------ per batch

    def _symbols(self, table: pa.Table) -> tuple[np.ndarray, np.ndarray]:
        plan = self.plan
        type_index = pc.index_in(table.column("event_type"), value_set=self._type_array)
        types = type_index.to_numpy(zero_copy_only=False).astype(np.int64)
        masks = np.zeros(table.num_rows, dtype=np.uint64)
        for bit, values in enumerate(plan.compiled.predicates.evaluate(table)):
            masks |= values.astype(np.uint64) << np.uint64(bit)
        symbols = plan.symbols.ids_for(types, masks)
        if len(plan.symbols.entries) > len(self._irrelevant):
            extra = [plan.det.irrelevant(s) for s in range(len(self._irrelevant), len(plan.symbols.entries))]
            self._irrelevant = np.concatenate([self._irrelevant, np.array(extra, dtype=bool)])
        return symbols, masks

    def _measures(self, table: pa.Table, base: int, positions: np.ndarray | None = None) -> np.ndarray | None:
        plan = self.plan
        if plan.window_kind is None:
            return None
        if plan.window_kind == "events":
            if positions is not None:
                return positions.astype(np.float64)
            return np.arange(base, base + table.num_rows, dtype=np.float64)
        names = set(plan.time_attributes.values())
        if len(names) == 1:
            column = table.column(names.pop())
        else:
            types = table.column("event_type")
            column = pa.nulls(table.num_rows, pa.float64())
            for type_name, attribute in plan.time_attributes.items():
                mask = pc.equal(types, type_name)
                column = pc.if_else(mask, pc.cast(table.column(attribute), pa.float64()), column)
        values = pc.cast(column, pa.float64()).to_numpy(zero_copy_only=False)
        return values

    def _check_order(self, table: pa.Table, measures: np.ndarray, base: int) -> None:
        """Time windows need events in non-decreasing primary_time order."""
        used = np.isin(
            table.column("event_type").to_numpy(zero_copy_only=False), list(self.plan.time_attributes)
        )
        values = measures[used]
        rows = np.nonzero(used)[0]
        missing = np.isnan(values)
        if missing.any():
            row = int(rows[np.argmax(missing)])
            raise EventError("missing time value (the query's window needs it)", base + row)
        if len(values) == 0:
            return
        previous = np.concatenate([[self.last_time if self.last_time is not None else -np.inf], values[:-1]])
        bad = values < previous
        if bad.any():
            k = int(np.argmax(bad))
            raise EventError(
                f"out of order: time {values[k]:.0f} after {previous[k]:.0f} (a time window needs events in "
                "time order; sort the input or declare CREATE QUARANTINE to reorder late events)",
                base + int(rows[k]),
            )
        self.last_time = float(values[-1])

    def _partition_keys(self, table: pa.Table, rows: np.ndarray) -> list:
        plan = self.plan
        types = table.column("event_type").take(pa.array(rows)).to_pylist()
        groups: dict[tuple[str, ...], list] = {}
        for group in plan.partition_groups:
            groups[group] = [table.column(a).take(pa.array(rows)).to_pylist() for a in group]
        keys = []
        for k, type_name in enumerate(types):
            group = plan.partition_types.get(type_name)
            if group is None:
                keys.append(None)
                continue
            key = tuple(column[k] for column in groups[group])
            keys.append(None if any(v is None for v in key) else key)
        return keys

    def _row_data(self, table: pa.Table, rows: np.ndarray, masks: np.ndarray) -> list | None:
        """What later checks need of each event: (attribute values, predicate mask) for
        cross-event conditions, and the caller's payload item."""
        cross = payload = None
        if self._cross:
            columns = [table.column(a).take(pa.array(rows)).to_pylist() for a in self.plan.cross_attributes]
            values = list(zip(*columns)) if columns else [()] * len(rows)
            cross = list(zip(values, masks[rows].tolist()))
        if self._payload is not None:
            source = self._payload
            payload = (
                [source(r) for r in rows.tolist()] if callable(source) else [source[r] for r in rows.tolist()]
            )
        if cross is None and payload is None:
            return None
        return [(cross[k] if cross else None, payload[k] if payload else None) for k in range(len(rows))]

    def _process_table(
        self, table: pa.Table, detailed: bool = False, positions: np.ndarray | None = None
    ) -> Iterator:
        plan = self.plan
        n = table.num_rows
        base = self.position
        symbols, masks = self._symbols(table)
        measures = self._measures(table, base, positions)
        if plan.ordered_time and measures is not None:
            self._check_order(table, measures, base)
        if self._needs_local:
            relevant = np.arange(n)  # sub-stream indexes count every event
        else:
            relevant = np.nonzero(~self._irrelevant[symbols])[0]
        partitioned = bool(plan.partition_groups)
        keys = self._partition_keys(table, relevant) if partitioned else None
        row_data = self._row_data(table, relevant, masks)
        symbol_list = symbols[relevant].tolist()
        measure_list = measures[relevant].tolist() if measures is not None else None
        if positions is not None:
            self.position = int(positions[-1]) + 1 if n else self.position
            positions = positions[relevant].tolist()
        else:
            positions = (relevant + base).tolist()
            self.position = base + n
        # The tECS is acyclic and freed by reference counting; the cycle collector would only
        # rescan millions of live nodes. It stays off while the evaluator works and is restored
        # whenever control goes back to the caller.
        collecting = gc.isenabled()
        gc.disable()
        advance = self._advance
        consume = plan.consume != "NONE"
        try:
            for k, pos in enumerate(positions):
                key = keys[k] if partitioned else None
                if partitioned and key is None:
                    continue
                finals = advance(
                    key,
                    symbol_list[k],
                    pos,
                    measure_list[k] if measure_list is not None else pos,
                    row_data[k] if row_data is not None else None,
                )
                if finals is None:
                    continue
                produced = False
                for match in self._matches(finals, pos, key, detailed):
                    produced = True
                    if collecting:
                        gc.enable()
                        yield match
                        gc.disable()
                    else:
                        yield match
                if produced and consume:
                    self._consume(key, pos)
        finally:
            if collecting:
                gc.enable()
        if self.created > self.compact_at:
            self._compact()

    # ------------------------------------------------------------------ per event

    def _advance(self, key: Any, symbol: int, pos: int, m: float, data: Any) -> list[tuple] | None:
        """Move one partition's runs over one event; return the nodes of the final states
        reached (None if none). Constant work: only the states the symbol changes are touched."""
        plan = self.plan
        det = plan.det
        partitions = self.partitions
        active = partitions.get(key)
        if active is None:
            active = {self._init: BOTTOM}
        elif plan.partition_groups and self.partition_consumed.get(key, -1) < self.consumed_at:
            # Another partition produced output since: drop this one's partial matches too.
            active = {state: BOTTOM for state, node in active.items() if node[1]}
        if self._needs_local:
            local = self.local_counts.get(key, 0)
            self.local_counts[key] = local + 1
            data = (local, data)
        elif data is not None:
            data = (None, data)
        window = plan.window
        limit = m - window if (window is not None and plan.monotone) else None
        # States the symbol does not change keep their nodes as they are (a C-level copy);
        # only the touched ones are moved along their transitions.
        touched = det.touching(symbol)
        if len(touched) < len(active):
            moving = [(state, active[state]) for state in touched if state in active]
        else:
            moving = [(state, node) for state, node in active.items() if state in touched]
        new = dict(active)
        for state, _ in moving:
            del new[state]
        entered = []
        created = 0
        cache = det.cache
        for state, node in moving:
            moves = cache.get((state, symbol))
            if moves is None:
                moves = det.step(state, symbol)
            for labels, target in moves:
                if labels is not None:
                    if limit is not None and not node[1] and node[0] <= limit:
                        continue  # every complex event through here would exceed the window
                    target_node = _output(pos, labels, node, m, data)
                    created += 1
                else:
                    target_node = node
                previous = new.get(target)
                if previous is None:
                    new[target] = target_node
                    entered.append(target)
                else:
                    new[target] = _union(previous, target_node)
                    created += 1
        self.created += created
        if plan.partition_groups:
            if len(new) == 1 and new.get(self._init) is BOTTOM:
                partitions.pop(key, None)
                self.local_counts.pop(key, None)
                self.partition_consumed.pop(key, None)
            else:
                partitions[key] = new
                self.partition_consumed[key] = self.consumed_at
        else:
            partitions[key] = new
        final = det.final
        finals = [new[state] for state in entered if final[state]]
        return finals or None

    def _consume(self, key: Any, pos: int) -> None:
        """CONSUME BY ANY / PARTITION after output at ``pos``: every partial match is dropped;
        runs that reported nothing yet survive."""
        active = self.partitions.get(key)
        if active is not None:
            kept = {state: BOTTOM for state, node in active.items() if node[1]}
            if self.plan.partition_groups and len(kept) == 1 and kept.get(self._init) is BOTTOM:
                self.partitions.pop(key, None)
                self.local_counts.pop(key, None)
                self.partition_consumed.pop(key, None)
            else:
                self.partitions[key] = kept
        if self.plan.consume == "ANY":
            self.consumed_at = pos
            if key in self.partition_consumed:
                self.partition_consumed[key] = pos

    # ------------------------------------------------------------------ outputs

    def _paths(self, finals: list[tuple]) -> Iterator[tuple | None]:
        window = self.plan.window
        for root in finals:
            yield from nodes.enumerate_paths(root, window)

    def _matches(self, finals: list[tuple], trigger: int, key: Any, detailed: bool = False) -> Iterator:
        plan = self.plan
        if self._fast_output and not detailed:
            return self._fast_matches(
                finals, trigger, key if plan.partition_groups and not plan.auto_partition else None
            )
        return self._general_matches(finals, trigger, key, detailed)

    def _fast_matches(self, finals: list[tuple], trigger: int, partition: Any) -> Iterator[Match]:
        """ALL, SELECT *, no LIMIT and no complex-event checks: every enumerated CE is a match."""
        window = self.plan.window
        enumerate_paths = nodes.enumerate_paths
        count = 0
        if not self.plan.as_labels:
            for root in finals:
                for path in enumerate_paths(root, window):
                    positions = []
                    append = positions.append
                    while path is not None:
                        append(path[0])
                        path = path[3]
                    count += 1
                    yield Match(trigger, tuple(positions), {}, partition)
        else:
            make = self._match
            for root in finals:
                for path in enumerate_paths(root, window):
                    count += 1
                    yield make(path, trigger, partition)
        self.matches_reported += count

    def _general_matches(self, finals: list[tuple], trigger: int, key: Any, detailed: bool) -> Iterator:
        plan = self.plan
        paths: Iterable = self._paths(finals)
        if self._cross:
            paths = (p for p in paths if self._cross_ok(p))
        if self._strict_filter:
            paths = (p for p in paths if _is_interval(p))
        strategy = plan.strategy
        if strategy == "ANY":
            paths = itertools.islice(paths, 1)
        elif strategy in ("NEXT", "LAST") and not self._cross and not self._strict_filter:
            # The best support straight from the tECS, then only the CEs with that support.
            support = best_support(finals, strategy, plan.window)
            paths = paths_with_support(finals, support, plan.window) if support is not None else ()
        elif strategy == "MAX" and not self._cross and not self._strict_filter:
            paths = itertools.chain.from_iterable(
                paths_with_support(finals, support, plan.window)
                for support in maximal_supports(finals, plan.window)
            )
        elif strategy in ("NEXT", "LAST", "MAX"):
            paths = _select(list(paths), strategy)
        projection = plan.projection
        dedupe = projection is not None and projection.kind != "star"
        seen: set | None = set() if dedupe else None
        limit = plan.limit
        count = 0
        partition = key if plan.partition_groups and not plan.auto_partition else None
        for path in paths:
            match = self._match(path, trigger, partition)
            if seen is not None:
                identity = (match.positions, tuple(sorted(match.labels.items())))
                if identity in seen:
                    continue
                seen.add(identity)
            yield (match, _payloads(path, match.positions)) if detailed else match
            count += 1
            if limit is not None and count >= limit:
                break
        self.matches_reported += count

    def _projection(self, labels: tuple) -> tuple[bool, tuple[str, ...]]:
        found = self._projection_cache.get(labels)
        if found is None:
            key = labels
            labels = frozenset(labels)
            projection = self.plan.projection
            as_labels = self.plan.as_labels
            if projection is None or projection.kind == "star":
                found = (True, tuple(sorted(labels & as_labels)))
            elif projection.kind == "none":
                found = (False, ())
            else:
                kept = {item.label for item in projection.items}
                found = (bool(labels & kept), tuple(sorted(labels & kept & as_labels)))
            self._projection_cache[key] = found
        return found

    def _match(self, path: tuple | None, trigger: int, partition: Any) -> Match:
        positions = []
        labels: dict[str, list[int]] = {}
        cache = self._projection_cache
        append = positions.append
        while path is not None:
            pos, event_labels, _, path = path
            found = cache.get(event_labels)
            if found is None:
                found = self._projection(event_labels)
            if found[0]:
                append(pos)
            for label in found[1]:
                seen = labels.get(label)
                if seen is None:
                    labels[label] = [pos]
                else:
                    seen.append(pos)
        for label, seen in labels.items():
            labels[label] = tuple(seen)  # type: ignore[assignment]
        return Match(trigger, tuple(positions), labels, partition)  # type: ignore[arg-type]

    def _cross_ok(self, path: tuple | None) -> bool:
        events = []
        while path is not None:
            _, labels, data, path = path
            values, mask = data[1][0]
            events.append((labels, values, mask))
        return all(check(events) for check in self._cross)

    # ------------------------------------------------------------------ memory

    def _compact(self) -> None:
        """Drop structure that no future complex event can use (window over a monotone measure)."""
        plan = self.plan
        if plan.window is None or not plan.monotone:
            self.compact_at = self.created + max(COMPACT_MIN, self.created)
            return
        if plan.window_kind == "events":
            now = float(self.position - 1)  # the last position seen
        else:
            now = self.last_time if self.last_time is not None else -np.inf
        limit = now - plan.window
        for key in list(self.partitions):
            active = self.partitions[key]
            states = list(active)
            pruned = nodes.prune([active[s] for s in states], limit)
            kept = {s: node for s, node in zip(states, pruned) if node is not None}
            if self._init not in kept and not kept:
                kept = {self._init: BOTTOM}
            if plan.partition_groups and len(kept) == 1 and kept.get(self._init) is BOTTOM:
                del self.partitions[key]
                self.local_counts.pop(key, None)
                self.partition_consumed.pop(key, None)
            else:
                self.partitions[key] = kept
        live = self.live_nodes()
        self.created = 0
        self.compact_at = max(COMPACT_MIN, 2 * live)


def _kernel_for(plan: Plan) -> Any:
    """The compiled kernel for this plan, or None when it stays on the Python path."""
    from ceql.runtime import kernel

    return kernel.PlanKernel(plan) if kernel.unsupported(plan) is None else None


def _payloads(path: tuple | None, positions: tuple[int, ...]) -> list:
    """The payload items of the events at ``positions`` (ascending) along a CE path."""
    wanted = set(positions)
    out = []
    while path is not None:
        if path[0] in wanted:
            data = path[2]
            out.append(data[1][1] if data is not None and data[1] is not None else None)
        path = path[3]
    return out


def _support(path: tuple | None) -> list[int]:
    out = []
    while path is not None:
        out.append(path[0])
        path = path[3]
    return out


def _is_interval(path: tuple | None) -> bool:
    """Whether the CE's positions are consecutive in its (sub-)stream (local indexes)."""
    local = []
    while path is not None:
        local.append(path[2][0])
        path = path[3]
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


# ---------------------------------------------------------------------- state as plain data


def export_state(evaluator: Evaluator) -> bytes:
    """The evaluator's dynamic state as bytes (pickle of plain data: the tECS flattened into a
    node table, determinized states as sets of machine states). Restore with ``import_state``
    on an evaluator of the same query (possibly in another process)."""
    import pickle

    if evaluator._kernel is not None:
        state = {
            "version": 1,
            "query": evaluator.plan.checked.text,
            "kernel": evaluator._kernel.export_state(),
        }
        return pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL)
    det = evaluator.plan.det
    index: dict[int, int] = {}
    table: list[tuple] = []
    keep: list[tuple] = []

    def flatten(root: tuple) -> int:
        stack = [(root, False)]
        while stack:
            node, expanded = stack.pop()
            if id(node) in index:
                continue
            size = len(node)
            if size == 3:
                entry: tuple = ("B",)
            elif not expanded:
                stack.append((node, True))
                children = (node[3], node[4]) if size == 5 else (node[5],)
                stack.extend((child, False) for child in children if id(child) not in index)
                continue
            elif size == 5:
                entry = ("U", node[0], node[1], node[2], index[id(node[3])], index[id(node[4])])
            else:
                entry = ("O", node[0], node[2], node[3], node[4], index[id(node[5])], node[6], node[7])
            index[id(node)] = len(table)
            table.append(entry)
            keep.append(node)
        return index[id(root)]

    partitions = {
        key: {state: flatten(node) for state, node in active.items()}
        for key, active in evaluator.partitions.items()
    }
    used = {state for active in partitions.values() for state in active}
    state = {
        "version": 1,
        "query": evaluator.plan.checked.text,
        "position": evaluator.position,
        "partitions": partitions,
        "subsets": {state: det.subsets[state] for state in used},
        "nodes": table,
        "local_counts": evaluator.local_counts,
        "last_time": evaluator.last_time,
        "consumed_at": evaluator.consumed_at,
        "partition_consumed": evaluator.partition_consumed,
    }
    return pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL)


def import_state(evaluator: Evaluator, blob: bytes) -> None:
    """Load a state made by ``export_state`` into an evaluator of the same query."""
    import pickle

    state = pickle.loads(blob)
    if state.get("query") != evaluator.plan.checked.text:
        raise ValueError("the saved state belongs to another query")
    if "kernel" in state:
        if evaluator._kernel is None:
            evaluator._kernel = _kernel_for(evaluator.plan)
        if evaluator._kernel is None:
            raise ValueError("the saved state was made by the compiled kernel, which cannot run this query")
        evaluator._kernel.import_state(state["kernel"])
        return
    if evaluator._kernel is not None:
        evaluator._kernel = None  # a Python-path state continues on the Python path
    det = evaluator.plan.det
    remap = {old: det.intern(subset) for old, subset in state["subsets"].items()}
    nodes_by_index: list[tuple] = []
    for entry in state["nodes"]:
        kind = entry[0]
        if kind == "B":
            node = BOTTOM
        elif kind == "U":
            node = (entry[1], entry[2], entry[3], nodes_by_index[entry[4]], nodes_by_index[entry[5]])
        else:
            node = (
                entry[1],
                False,
                entry[2],
                entry[3],
                entry[4],
                nodes_by_index[entry[5]],
                entry[6],
                entry[7],
            )
        nodes_by_index.append(node)
    evaluator.partitions = {
        key: {remap[s]: nodes_by_index[i] for s, i in active.items()}
        for key, active in state["partitions"].items()
    }
    evaluator.position = state["position"]
    evaluator.local_counts = state["local_counts"]
    evaluator.last_time = state["last_time"]
    evaluator.consumed_at = state["consumed_at"]
    evaluator.partition_consumed = state["partition_consumed"]
