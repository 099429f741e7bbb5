"""``WHERE f NOT FOLLOWED BY g ... WITHIN w``: complex events reported at their deadline.

A complex event C of f is due at ``d(C) = m(first event of C) + w`` (m: the window's measure:
position, time or attribute). It is reported when the deadline passes -- at the first event
whose measure is at or past d(C), when the caller advances time past it, or at the end of the
input -- unless g has matched after C before (docs/semantics.md, 5.2).

Two sets of runs share each event. The evaluator's own runs (f's plan) find the complex events of
f as usual; instead of being reported they wait here, one by one, in a queue ordered by deadline.
The runs of ``(f AS mark) ; g`` (``plan.absence``, with its own ingest: g may read other
columns and predicates) find every complex event of f that g follows within the window, with
g's conditions reading f's labels; the marked part is the complex event of f it cancels. At each
event, in this order: the deadlines the event passes are reported (trigger: this event), then the
cancelling runs move (a g ending here cancels what is still waiting), then f's runs move (new
complex events start waiting; their deadline is after this event, as they are in the window).

Among the complex events reported at one trigger (per partition key), CONSUME BY, the selection
strategy, the projection, the measures and LIMIT apply as for any trigger; ``Match.deadline`` is
d(C).
"""

from __future__ import annotations

import base64
import heapq
import operator
from collections.abc import Iterator, Sequence
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from ceql.errors import EventError
from ceql.lang.ast import ABSENCE_MARK
from ceql.match import EMPTY, FrozenMap, Match, partition_order
from ceql.runtime import nodes
from ceql.runtime.ingest import Ingest
from ceql.runtime.runs import PlainRuns, RegisterRuns

if TYPE_CHECKING:
    from ceql.runtime.evaluator import Evaluator

#: An event of a waiting complex event: (position, labels, data, measure).
Event = tuple
STATE_FORMAT = "ceql-absence-state"
STATE_VERSION = 2  # (1: not sealed; refused)


class Waiting:
    """One complex event of f waiting for its deadline."""

    __slots__ = ("deadline", "first", "key", "events", "identity")

    def __init__(self, deadline: Any, key: Any, events: tuple[Event, ...], identity: tuple) -> None:
        self.deadline = deadline
        self.first = events[0][0]
        self.key = key
        self.events = events
        self.identity = identity


def identity_of(events: tuple[Event, ...] | list, marked_only: bool = False) -> tuple:
    """A complex event's identity: (position, public labels) of its events. With
    ``marked_only``, the events of a ``(f AS mark) ; g`` complex event that f contributed."""
    out = []
    public = _PUBLIC
    for event in events:
        labels = event[1]
        if marked_only and ABSENCE_MARK not in labels:
            continue
        found = public.get(labels)
        if found is None:
            if len(public) > 4096:  # (many queries in one process: stay small)
                public.clear()
            found = public[labels] = tuple(sorted(label for label in labels if label[0] != "\x00"))
        out.append((event[0], found))
    return tuple(out)


#: The public labels of a label set (sorted), per label set met (a query has few).
_PUBLIC: dict = {}


def complex_events(root: tuple, window: Any) -> Iterator[tuple[Event, ...]]:
    """Every non-empty complex event of ``root`` within the window, as (position, labels,
    data, measure) events in increasing position order (the last event fixes the window)."""
    stack: list[tuple] = [(root, (), None)]
    while stack:
        node, later, limit = stack.pop()
        while True:
            size = len(node)
            if size == nodes.BOTTOM_SIZE:
                if later and (limit is None or later[0][3] > limit):
                    yield later
                break
            if limit is not None and node[nodes.MAX_FIRST] <= limit and not node[nodes.HAS_EMPTY]:
                break  # every complex event below starts out of the window
            if size == nodes.UNION_SIZE:
                stack.append((node[nodes.RIGHT], later, limit))
                node = node[nodes.LEFT]
                continue
            measure = node[nodes.MEASURE]
            if limit is None and window is not None:
                limit = measure - window
            later = ((node[nodes.POS], node[nodes.LABELS], node[nodes.DATA], measure), *later)
            node = node[nodes.CHILD]


def as_node(events: tuple[Event, ...]) -> tuple:
    """A tECS node holding exactly this complex event."""
    node = nodes.BOTTOM
    for pos, labels, data, measure in events:
        node = nodes.output(pos, labels, node, measure, data)
    return node


class Absence:
    """The waiting complex events of one evaluator, and the runs that cancel them."""

    def __init__(self, evaluator: Evaluator) -> None:
        plan = evaluator.plan
        cancel = plan.absence
        assert cancel is not None
        self.evaluator = evaluator
        self.plan = plan
        self.cancel_plan = cancel
        self.ingest = Ingest(cancel, keep_all=True)
        self.runs = RegisterRuns(cancel, evaluator.max_classes) if cancel.registers is not None else PlainRuns(cancel)
        self.window = plan.window
        self.waiting: dict[tuple, Waiting] = {}
        self.queue: list[tuple] = []  # (deadline, sequence, identity), a heap
        self.sequence = 0
        query = plan.checked.query
        self.consume = plan.consume
        self.consume_all = plan.consume == "ANY" or (plan.consume == "PARTITION" and not query.partition_by)
        self.last_any = -1  # CONSUME BY: the last trigger that reported, overall and per key
        self.last_by_key: dict[Any, int] = {}

    # ------------------------------------------------------------------ the three moves

    def due(self, measure: Any) -> list[Waiting]:
        """The waiting complex events whose deadline ``measure`` reaches (removed)."""
        out = []
        queue = self.queue
        while queue and queue[0][0] <= measure:
            _, _, identity = heapq.heappop(queue)
            item = self.waiting.pop(identity, None)
            if item is not None:
                out.append(item)
        return out

    def cancel(self, finals: list[tuple]) -> None:
        """Complex events of ``(f AS mark) ; g`` just completed: f's parts stop waiting."""
        window = self.cancel_plan.window
        for root in finals:
            for events in complex_events(root, window):
                self.waiting.pop(identity_of(events, marked_only=True), None)

    def wait(self, finals: list[tuple], key: Any) -> None:
        """Complex events of f just completed: they wait for their deadline."""
        bound = self._consumed(key)
        for root in finals:
            for events in complex_events(root, self.window):
                if events[0][0] <= bound:
                    continue  # consumed: it could never be reported
                identity = identity_of(events)
                if identity in self.waiting:
                    continue  # the same complex event by another derivation
                deadline = events[0][3] + self.window
                if deadline > INT64_MAX:
                    raise deadline_error(events[0][3], self.window, events[0][0])
                self.waiting[identity] = Waiting(deadline, key, events, identity)
                heapq.heappush(self.queue, (deadline, self.sequence, identity))
                self.sequence += 1

    def _consumed(self, key: Any) -> int:
        if self.consume == "NONE":
            return -1
        if self.consume_all:
            return self.last_any
        return self.last_by_key.get(key, -1)

    # ------------------------------------------------------------------ reporting

    def report(self, items: list[Waiting], trigger: int, detailed: bool = False) -> list:
        """Matches of complex events whose deadline passed, at ``trigger``: per partition key,
        CONSUME BY, the strategy, projection, measures and LIMIT, as for any trigger."""
        if not items:
            return []
        groups = self._groups(items)
        if not detailed and self._plain():
            return self._plain_matches(groups, trigger)
        out: list = []
        reported: list[Any] = []
        for key, group in groups.items():
            bound = self._consumed(key)
            group = [item for item in group if item.first > bound]
            produced: list = []
            seen: set = set()
            for item in self._select(group):
                for found in self.evaluator.output.matches([as_node(item.events)], trigger, key, detailed):
                    plain = found[0] if detailed else found
                    match = Match(*plain._values()[:5], item.deadline)
                    if match in seen:
                        continue
                    seen.add(match)
                    produced.append((match, found[1]) if detailed else match)
            if self.plan.limit is not None:
                produced = produced[: self.plan.limit]
            if produced:
                reported.append(key)
            out.extend(produced)
        # Complex events reported at one trigger do not consume each other.
        if reported and self.consume != "NONE":
            self.last_any = trigger
            for key in reported:
                self.last_by_key[key] = trigger
                self.evaluator._consume(key, trigger)
        return out

    def _groups(self, items: list[Waiting]) -> dict[Any, list[Waiting]]:
        """The complex events due at one trigger per partition key, in the order of
        docs/semantics.md 5.2: keys by value (``partition_order``), then by deadline, then by
        their events (position and public labels, in order). A key found from an equality
        (``auto_partition``) is no partition: its complex events form one group."""
        keyed = self.evaluator.output.partition_reported
        if len(items) == 1:  # (push's common case)
            return {items[0].key if keyed else None: items}
        groups: dict[Any, list[Waiting]] = {}
        for item in items:
            groups.setdefault(item.key if keyed else None, []).append(item)
        for group in groups.values():
            if len(group) > 1:
                group.sort(key=_ITEM_ORDER)
        if len(groups) > 1:
            try:  # (keys of numbers or of strings compare as they are, as partition_order does)
                ordered = sorted(groups)
            except TypeError:
                ordered = sorted(groups, key=partition_order)
            groups = {key: groups[key] for key in ordered}
        return groups

    def _plain(self) -> bool:
        """Whether every due complex event is reported as it is: strategy ALL, SELECT *, no
        CONSUME BY, LIMIT, measures, STRICT or repeats (``Output.fast``). Each waiting complex
        event is one identity, so its match is distinct without a check (``push``'s common case)."""
        plain = self.__dict__.get("_plain_flag")
        if plain is None:
            plan = self.plan
            plain = self._plain_flag = (
                self.consume == "NONE" and plan.strategy == "ALL" and self.evaluator.output.fast
            )
        return plain

    def _plain_matches(self, groups: dict[Any, list[Waiting]], trigger: int) -> list[Match]:
        """``report`` when ``_plain``: each due complex event's match straight from its events
        (what ``Output.matches`` gives for its tECS node, without building one)."""
        output = self.evaluator.output
        cache = output._projection_cache
        reported_partition = output.partition_reported
        out: list[Match] = []
        for key, group in groups.items():
            partition = key if reported_partition else None
            for item in group:
                positions = []
                labels: dict[str, list[int]] = {}
                for event in item.events:
                    found = cache.get(event[1])
                    if found is None:
                        found = output._projection(event[1])
                    if found[0]:
                        positions.append(event[0])
                    for label in found[1]:
                        labels.setdefault(label, []).append(event[0])
                if not labels:
                    frozen = EMPTY
                elif len(labels) == 1:
                    ((label, seen),) = labels.items()
                    frozen = FrozenMap.of_sorted(((label, tuple(seen)),))
                else:
                    frozen = FrozenMap({label: tuple(seen) for label, seen in labels.items()})
                out.append(Match(trigger, tuple(positions), frozen, partition, EMPTY, item.deadline))
        return out

    def _select(self, group: list[Waiting]) -> list[Waiting]:
        """The selection strategy among the complex events of one trigger and key."""
        plan = self.plan
        if plan.strict_filter:  # STRICT that could not be compiled: support an interval of the sub-stream
            group = [item for item in group if _consecutive([event[2][2] for event in item.events])]
        strategy = plan.strategy
        if len(group) <= 1 or strategy in ("ALL", "STRICT"):
            return group
        if strategy == "ANY":
            return group[-1:]
        supports = [frozenset(event[0] for event in item.events) for item in group]
        if strategy == "MAX":
            return [item for item, s in zip(group, supports) if not any(s < other for other in supports)]
        best = supports[0]
        for support in supports[1:]:
            if _better(support, best, strategy):
                best = support
        return [item for item, s in zip(group, supports) if s == best]

    # ------------------------------------------------------------------ time passing

    def advance(self, time: Any, trigger: int, detailed: bool = False) -> list:
        """The caller says that no event before ``time`` will come: report what is due."""
        return self.report(self.due(time), trigger, detailed)

    def next_deadline(self) -> Any:
        """The earliest deadline still waited for, or None."""
        queue = self.queue
        while queue and queue[0][2] not in self.waiting:
            heapq.heappop(queue)  # cancelled meanwhile
        return queue[0][0] if queue else None

    def finish(self, trigger: int, detailed: bool = False) -> list:
        """The end of the input: every waiting complex event is reported."""
        items = list(self.waiting.values())
        self.waiting.clear()
        self.queue.clear()
        return self.report(items, trigger, detailed)

    def compact(self) -> None:
        """Drop the cancelling runs' structure that the window has left behind."""
        plan = self.cancel_plan
        runs = self.runs
        if not plan.monotone or plan.silent_reads:
            runs.compact_at = runs.created + max(runs.compact_at, runs.created)
            return
        now = self.evaluator.position - 1 if plan.window_kind == "events" else self.ingest.last_time
        if now is None:
            return
        runs.compact(now - plan.window)
        runs.created = 0
        runs.compact_at = max(50_000, 2 * nodes.count_nodes(runs.roots()))

    # ------------------------------------------------------------------ a batch

    def run(self, table: pa.Table, positions: np.ndarray | None, payload: Any, detailed: bool) -> Iterator:
        """One batch through both sets of runs, in stream order (see the module docstring)."""
        evaluator = self.evaluator
        base = evaluator.position
        cancelling = self.ingest.prepare(table, base, positions)
        own = evaluator.ingest.prepare(table, base, positions, payload)
        evaluator.position = own.end
        runs, runs2 = evaluator.runs, self.runs
        registers, registers2 = self.plan.registers is not None, self.cancel_plan.registers is not None
        index = {pos: k for k, pos in enumerate(own.positions)}
        for k, pos in enumerate(cancelling.positions):
            deadline_measure = cancelling.deadline_measures[k]
            if deadline_measure is not None and self.queue and self.queue[0][0] <= deadline_measure:
                yield from self.report(self.due(deadline_measure), pos, detailed)
            if cancelling.relevant[k]:
                finals, _ = _advance_row(runs2, cancelling, k, pos, registers2)
                if finals is not None:
                    self.cancel(finals)
            j = index.get(pos)
            if j is None:
                continue
            finals, key = _advance_row(runs, own, j, pos, registers)
            if finals is not None:
                self.wait(finals, key)
        if runs2.created > runs2.compact_at:
            self.compact()

    def step(self, pos: int, deadline_measure: Any, cancelling: tuple | None, own: tuple | None) -> list:
        """One event (``push``): ``cancelling`` and ``own`` are (key, symbol, measure, data,
        values, mask) for each set of runs, or None when the event cannot move them."""
        out = []
        if deadline_measure is not None and self.queue and self.queue[0][0] <= deadline_measure:
            out = self.report(self.due(deadline_measure), pos)
        if cancelling is not None:
            key, symbol, m, data, values, mask = cancelling
            if self.cancel_plan.registers is not None:
                finals = self.runs.advance(key, symbol, pos, m, data, values, mask)
            else:
                finals = self.runs.advance(key, symbol, pos, m, data)
            if finals is not None:
                self.cancel(finals)
        if own is not None:
            key, symbol, m, data, values, mask = own
            runs = self.evaluator.runs
            if self.plan.registers is not None:
                finals = runs.advance(key, symbol, pos, m, data, values, mask)
            else:
                finals = runs.advance(key, symbol, pos, m, data)
            if finals is not None:
                self.wait(finals, key)
        if self.runs.created > self.runs.compact_at:
            self.compact()
        return out

    # ------------------------------------------------------------------ state

    def export_state(self) -> bytes:
        """The whole state, sealed like every evaluator state (``state.seal``): the
        evaluator's runs, the cancelling runs (each a sealed state) and what waits."""
        from ceql.runtime.state import _encode, export_state, fingerprint, seal

        evaluator = self.evaluator
        body = {
            "own": base64.b64encode(export_state(evaluator)).decode("ascii"),
            "cancelling": base64.b64encode(export_state(self._proxy())).decode("ascii"),
            "waiting": [
                [
                    _encode(item.deadline),
                    _encode(item.key),
                    [[e[0], list(e[1]), _encode(e[2]), _encode(e[3])] for e in item.events],
                ]
                for item in sorted(self.waiting.values(), key=lambda item: (item.deadline, item.first))
            ],
            "last_any": self.last_any,
            "last_by_key": [[_encode(k), v] for k, v in self.last_by_key.items()],
        }
        return seal(STATE_FORMAT, STATE_VERSION, fingerprint(self.plan.checked), body)

    def import_state(self, blob: bytes) -> None:
        """Load a state made by ``export_state`` for the same query. The envelope is checked
        (format, version, query, size, digest; decompression bounded) and then every field
        against the query: positions (ints, increasing, below the stream position), labels
        (the query's), event values, measures, deadlines (the first event's measure plus the
        window, not yet passed), keys and consumed markers; at most ``max_nodes`` waiting
        events. StateError otherwise, and then nothing of the evaluator changes."""
        from ceql.runtime.state import StateError, fingerprint, import_state, unseal

        body = unseal(blob, STATE_FORMAT, STATE_VERSION, fingerprint(self.plan.checked))
        if not isinstance(body, dict) or set(body) != {"own", "cancelling", "waiting", "last_any", "last_by_key"}:
            raise StateError("saved NOT FOLLOWED BY state has missing or unknown fields")
        inner = []
        for name in ("own", "cancelling"):
            text = body[name]
            try:
                if not isinstance(text, str):
                    raise ValueError
                inner.append(base64.b64decode(text.encode("ascii"), validate=True))
            except (ValueError, UnicodeEncodeError):
                raise StateError(f"saved NOT FOLLOWED BY state has a malformed {name!r} state") from None
        evaluator = self.evaluator
        before = _snapshot(evaluator, self)
        try:
            import_state(evaluator, inner[0])
            proxy = self._proxy()
            import_state(proxy, inner[1])
            if proxy.position != evaluator.position:
                raise StateError("saved NOT FOLLOWED BY state has two different stream positions")
            waiting, last_any, last_by_key = self._load_waiting(body)
        except BaseException:
            _restore(evaluator, self, before)
            raise
        self.waiting = waiting
        self.queue = [(item.deadline, k, identity) for k, (identity, item) in enumerate(waiting.items())]
        heapq.heapify(self.queue)
        self.sequence = len(self.queue)
        self.last_any = last_any
        self.last_by_key = last_by_key

    def _load_waiting(self, body: dict) -> tuple[dict[tuple, Waiting], int, dict]:
        """The waiting complex events of a state body, each field checked (``import_state``)."""
        from ceql.runtime.state import (
            INT64,
            StateError,
            _check_data,
            _decode,
            _int,
            check_key,
            check_labels,
            check_measure,
            label_vocabulary,
        )

        evaluator = self.evaluator
        plan = self.plan
        position = evaluator.position
        entries = body["waiting"]
        if not isinstance(entries, list):
            raise StateError("saved NOT FOLLOWED BY state has a malformed waiting list")
        if len(entries) > evaluator.max_nodes:  # (before anything is decoded)
            raise StateError(
                f"saved NOT FOLLOWED BY state has {len(entries):,} waiting complex events, more than max_nodes "
                f"({evaluator.max_nodes:,})"
            )
        vocabulary = label_vocabulary(plan)
        width = len(plan.value_attributes)
        keep_values = bool(evaluator.ingest.keep_values)
        needs_local = evaluator.ingest.needs_local
        events_window = plan.window_kind == "events"
        last = self.ingest.last_time  # the latest time of an event the query names (or advanced to)
        window = self.window
        budget = evaluator.max_nodes
        waiting: dict[tuple, Waiting] = {}
        for entry in entries:
            if not isinstance(entry, list) or len(entry) != 3 or not isinstance(entry[2], list) or not entry[2]:
                raise StateError("saved NOT FOLLOWED BY state has a malformed waiting complex event")
            raw_deadline, raw_key, raw_events = entry
            budget -= len(raw_events)
            if budget < 0:
                raise StateError(f"saved NOT FOLLOWED BY state holds more waiting events than max_nodes ({evaluator.max_nodes:,})")
            loaded = []
            previous, local = -1, -1
            for raw in raw_events:
                if not isinstance(raw, list) or len(raw) != 4:
                    raise StateError("saved NOT FOLLOWED BY state has a malformed waiting event")
                pos = _int(raw[0], "waiting event position", 0, position)
                if pos <= previous:
                    raise StateError("saved NOT FOLLOWED BY state has waiting event positions that do not increase")
                previous = pos
                labels = check_labels(raw[1], vocabulary)
                data = _decode(raw[2])
                local = _check_data(data, keep_values, width, needs_local, local)
                measure = check_measure(plan, _decode(raw[3]), pos)
                loaded.append((pos, labels, data, measure))
            first = loaded[0][3]
            deadline = _decode(raw_deadline)
            if (
                not isinstance(deadline, int)
                or isinstance(deadline, bool)
                or not isinstance(first, int)
                or deadline != first + window
                or not -INT64 <= deadline < INT64
            ):
                raise StateError(
                    "saved NOT FOLLOWED BY state has a deadline that is not its first event's measure plus the window: "
                    f"{str(deadline)[:40]}"
                )
            passed = deadline < position if events_window else (last is None or deadline <= last or first > last)
            if passed:
                raise StateError("saved NOT FOLLOWED BY state has a complex event waiting past its deadline")
            key = check_key(plan, _decode(raw_key))
            identity = identity_of(loaded)
            if identity in waiting:
                raise StateError("saved NOT FOLLOWED BY state has a complex event waiting twice")
            waiting[identity] = Waiting(deadline, key, tuple(loaded), identity)
        last_any = _int(body["last_any"], "consumed marker", -1, position)
        pairs = body["last_by_key"]
        if not isinstance(pairs, list) or len(pairs) > evaluator.max_nodes:
            raise StateError("saved NOT FOLLOWED BY state has malformed consumed markers")
        last_by_key = {}
        for pair in pairs:
            if not isinstance(pair, list) or len(pair) != 2:
                raise StateError("saved NOT FOLLOWED BY state has malformed consumed markers")
            last_by_key[check_key(plan, _decode(pair[0]))] = _int(pair[1], "consumed marker", -1, position)
        if plan.consume == "NONE" and (last_any != -1 or last_by_key):
            raise StateError("saved NOT FOLLOWED BY state has consumed markers, but the query consumes nothing")
        return waiting, last_any, last_by_key

    def _proxy(self) -> Any:
        """The cancelling runs seen as an evaluator, for the state module."""
        evaluator = self.evaluator
        proxy = SimpleNamespace(
            plan=self.cancel_plan,
            runs=self.runs,
            ingest=self.ingest,
            position=evaluator.position,
            max_nodes=evaluator.max_nodes,  # a loaded state is bounded as the evaluator's own
        )
        return proxy


def deadline_triggers(plan: Any, types: Sequence[str], measures: Sequence[Any], deadlines: Sequence[int]) -> list[int]:
    """Where each deadline passes in the whole stream, given the type and the window measure
    (the time, or the window attribute's value; unused with ``n EVENTS``) of every event: the
    first event at or past it (with ``n EVENTS`` the event at that position; otherwise an event
    of a type the query names), or the end of the input. The merge of a split evaluation
    (``compile.plan.split_keys``) sets the triggers of NOT FOLLOWED BY's matches with it."""
    n = len(types)
    if plan.window_kind == "events":
        return [d if d < n else n for d in deadlines]
    named = set(plan.absence.checked.used_types)
    rows = [p for p in range(n) if types[p] in named and measures[p] is not None]
    clock = np.array([measures[p] for p in rows], dtype=np.int64)
    at = np.searchsorted(clock, np.asarray(list(deadlines), dtype=np.int64), side="left").tolist()
    return [rows[a] if a < len(rows) else n for a in at]


def is_absence_state(blob: bytes) -> bool:
    """Whether a saved state is a NOT FOLLOWED BY query's (reads its header only)."""
    from ceql.runtime.state import read_header

    header = read_header(blob)
    return header is not None and header.get("format") == STATE_FORMAT


def _snapshot(evaluator: Evaluator, absence: Absence) -> tuple:
    """What loading a state changes (``state.import_state``), to restore on failure."""
    return tuple(
        (runs.partitions, runs.consumed_at, runs.partition_consumed, ingest.last_time, ingest.local_counts)
        for runs, ingest in ((evaluator.runs, evaluator.ingest), (absence.runs, absence.ingest))
    ) + (evaluator.position,)


def _restore(evaluator: Evaluator, absence: Absence, before: tuple) -> None:
    for (runs, ingest), saved in zip(((evaluator.runs, evaluator.ingest), (absence.runs, absence.ingest)), before):
        runs.partitions, runs.consumed_at, runs.partition_consumed, ingest.last_time, ingest.local_counts = saved
    evaluator.position = before[2]


INT64_MAX = (1 << 63) - 1


def deadline_error(measure: Any, window: Any, position: int) -> EventError:
    """A complex event whose deadline (its first event's measure plus the window) is beyond
    int64, the type of deadlines in every output: refused at its first event."""
    return EventError(
        f"NOT FOLLOWED BY: the deadline of this event, its time {measure} plus the window {window}, is beyond the "
        "int64 range of deadlines (docs/limits.md)",
        position,
    )


#: The order of the complex events of one key due at one trigger: deadline, then events.
_ITEM_ORDER = operator.attrgetter("deadline", "identity")


def _consecutive(indexes: list) -> bool:
    return all(b == a + 1 for a, b in zip(indexes, indexes[1:]))


def _better(a: frozenset, b: frozenset, strategy: str) -> bool:
    """Whether support a is strictly better than b for NEXT (earliest) or LAST (latest)."""
    if a == b:
        return False
    diff = a ^ b
    pivot = min(diff) if strategy == "NEXT" else max(diff)
    return pivot in a


def _advance_row(runs: Any, prepared: Any, k: int, pos: int, registers: bool) -> tuple[Any, Any]:
    """Advance ``runs`` by row ``k`` of a prepared batch (the event at ``pos``): the final nodes
    it reaches (None if none, or if the row lacks the partition key) and the row's key."""
    key = prepared.keys[k] if prepared.keys is not None else None
    if prepared.keys is not None and key is None:
        return None, None
    m = prepared.measures[k] if prepared.measures is not None else pos
    data = prepared.data[k] if prepared.data is not None else None
    if registers:
        return runs.advance(key, prepared.symbols[k], pos, m, data, prepared.values[k], prepared.masks[k]), key
    return runs.advance(key, prepared.symbols[k], pos, m, data), key
