"""The live runs of one evaluator: per partition key, the tECS node of every run class, moved
along the determinized automaton event by event.

Two stores share one interface (``advance``, ``consume``, ``compact``, ``roots``):

- ``PlainRuns`` (no registers): a class is a determinized state; only the states an event's
  symbol changes are touched.
- ``RegisterRuns``: a class is a determinized state and a tuple of register values (runs with
  the same state and registers have the same future, so their complex events share a node).
  A transition runs the register program of its label set, which may disable it; a class
  reaching a final state reports only if the registers' gate holds. When an equality links the
  events (a common value that every labelled transition must match), the classes of a state are
  kept in buckets by that value, and an event visits only its own bucket and the unset one.

Partitions (PARTITION BY) have one store each, created on demand and dropped when they hold no
live run; CONSUME BY ANY across partitions is applied lazily when a partition is next visited.
"""

from __future__ import annotations

from typing import Any

from ceql.compile.plan import Plan
from ceql.compile.registers import UNSET, Registers
from ceql.errors import LimitError
from ceql.runtime import nodes
from ceql.runtime.nodes import HAS_EMPTY, MAX_FIRST

BOTTOM = nodes.BOTTOM
_output = nodes.output
_union = nodes.union
COMPACT_MIN = 50_000  # nodes created before the first pruning pass
DEFAULT_MAX_CLASSES = 2_000_000  # live run classes per partition key


class LimitExceeded(LimitError):
    """A run-time bound was exceeded (the message names the bound and how to raise it)."""


class _Store:
    """What both stores share: partitions, consumption bookkeeping, counters."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.det = plan.det
        self.init = plan.det.initial
        self.partitioned = bool(plan.partition_groups)
        self.partitions: dict[Any, Any] = {}
        self.consumed_at = -1
        self.partition_consumed: dict[Any, int] = {}
        self.created = 0
        self.compact_at = COMPACT_MIN

    def portable(self, registers: Any) -> Any:
        """A class's register value as saved (see Registers.portable)."""
        return self.plan.registers.portable(registers) if self.plan.registers is not None else registers

    def restore(self, registers: Any) -> Any:
        if self.plan.registers is None or registers is None:
            return registers
        return self.plan.registers.restore(registers) if isinstance(registers, tuple) else None

    def valid_registers(self, registers: Any) -> bool:
        """Whether a saved class's register value has the shape this store uses."""
        width = len(self.plan.registers) if self.plan.registers is not None else 0
        return isinstance(registers, tuple) and len(registers) == width

    def window_limit(self, m: Any) -> Any:
        """Complex events whose first event's measure is at most this can never be in the
        window again (None: no such bound). Only when measures never decrease: with a measure
        that may decrease, a later, smaller last event can put any complex event back in it."""
        plan = self.plan
        if plan.window is None or not plan.monotone:
            return None
        return nodes.window_limit(m, plan.window)


class PlainRuns(_Store):
    """Run classes without registers: ``partitions[key] = {det state: node}``."""

    def initial_active(self) -> dict:
        return {self.init: BOTTOM}

    def advance(
        self, key: Any, symbol: int, pos: int, m: Any, data: Any, values: Any = None, mask: int = 0
    ) -> list[tuple] | None:
        """Move one partition's runs over one event; return the final nodes reached (or None).
        Only the states the symbol changes are touched."""
        det = self.det
        partitions = self.partitions
        active = partitions.get(key)
        if active is None:
            active = {self.init: BOTTOM}
        elif self.partitioned and self.partition_consumed.get(key, -1) < self.consumed_at:
            # Another partition produced output since: drop this one's partial matches too.
            active = {state: BOTTOM for state, node in active.items() if node[HAS_EMPTY]}
        limit = self.window_limit(m)
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
                    if limit is not None and not node[HAS_EMPTY] and node[MAX_FIRST] <= limit:
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
        if self.partitioned:
            if len(new) == 1 and new.get(self.init) is BOTTOM:
                partitions.pop(key, None)
                self.partition_consumed.pop(key, None)
            else:
                partitions[key] = new
                self.partition_consumed[key] = self.consumed_at
        else:
            partitions[key] = new
        final = det.final
        finals = [new[state] for state in entered if final[state]]
        return finals or None

    def consume(self, key: Any) -> None:
        """Drop every partial match of a partition; runs that reported nothing survive."""
        active = self.partitions.get(key)
        if active is None:
            return
        kept = {state: BOTTOM for state, node in active.items() if node[HAS_EMPTY]}
        if self.partitioned and len(kept) == 1 and kept.get(self.init) is BOTTOM:
            self.partitions.pop(key, None)
            self.partition_consumed.pop(key, None)
        else:
            self.partitions[key] = kept

    def roots(self) -> list[tuple]:
        return [node for active in self.partitions.values() for node in active.values()]

    def classes(self, active: dict, key: Any = None):
        """(state, registers, node) of every class of one partition (for saving)."""
        for state, node in active.items():
            yield state, (), node

    def from_classes(self, classes: list[tuple]) -> dict:
        active: dict = {}
        for state, _, node in classes:
            active[state] = node if state not in active else _union(active[state], node)
        return active

    def compact(self, limit: Any) -> None:
        for key in list(self.partitions):
            active = self.partitions[key]
            states = list(active)
            pruned = nodes.prune([active[s] for s in states], limit)
            kept = {s: node for s, node in zip(states, pruned) if node is not None}
            if not kept:
                kept = {self.init: BOTTOM}
            if self.partitioned and len(kept) == 1 and kept.get(self.init) is BOTTOM:
                del self.partitions[key]
                self.partition_consumed.pop(key, None)
            else:
                self.partitions[key] = kept


class RegisterRuns(_Store):
    """Run classes with registers: ``partitions[key] = {det state: {bucket: {registers: node}}}``
    (one bucket, None, unless an equality index is in use)."""

    def __init__(self, plan: Plan, max_classes: int = DEFAULT_MAX_CLASSES) -> None:
        super().__init__(plan)
        registers: Registers = plan.registers  # type: ignore[assignment]
        self.registers = registers
        self.initial_registers = registers.initial
        key = registers.key
        self.key_slot = key[0] if key is not None else None
        self.key_attributes: dict[str, int] = key[1] if key is not None else {}
        self._index: dict[tuple[int, int], Any] = {}  # (state, symbol) -> attribute index or -1
        self.max_classes = max_classes
        self.live = 0
        # Classes whose complex events have all left the window are dropped (a window on a
        # measure that never decreases, runs that end on a reported event).
        self.by_age = plan.window is not None and plan.monotone and not plan.silent_reads

    def _bucket(self, registers: tuple) -> Any:
        return registers[self.key_slot] if self.key_slot is not None else None

    def initial_active(self) -> dict:
        nu = self.initial_registers
        return {self.init: {self._bucket(nu): {nu: BOTTOM}}}

    def _index_attribute(self, state: int, symbol: int, moves: tuple) -> int:
        """The attribute whose value selects the classes an event moves (-1: all move)."""
        found = self._index.get((state, symbol))
        if found is not None:
            return found
        found = -1
        if self.key_slot is not None:
            stays = not self.det.final[state] and any(
                labels is None and target == state for labels, target in moves
            )
            attribute = None
            if stays:
                for labels, target in moves:
                    if labels is None:
                        if target != state:
                            attribute = None
                            break
                        continue
                    hits = [self.key_attributes[label] for label in labels if label in self.key_attributes]
                    if not hits:
                        attribute = None
                        break
                    attribute = hits[0]
            if attribute is not None:
                found = attribute
        self._index[(state, symbol)] = found
        return found

    def advance(
        self, key: Any, symbol: int, pos: int, m: Any, data: Any, values: tuple, mask: int
    ) -> list[tuple] | None:
        """Move one partition's classes over one event (in place: nothing else holds the
        structure; enumerations only hold the immutable nodes). Returns the final nodes whose
        registers pass the gate, or None."""
        det = self.det
        registers = self.registers
        active = self.partitions.get(key)
        if active is None:
            active = self.initial_active()
        elif self.partitioned and self.partition_consumed.get(key, -1) < self.consumed_at:
            active = self._consumed(active)
        limit = self.window_limit(m)
        touched = det.touching(symbol)
        states = [s for s in touched if s in active] if len(touched) < len(active) else [
            s for s in active if s in touched
        ]
        key_slot = self.key_slot
        cache = det.cache
        # First take out every class that moves (reading before writing: a state may receive
        # runs from another one processed before it), then add the arrivals.
        work = []
        for state in states:
            moves = cache.get((state, symbol))
            if moves is None:
                moves = det.step(state, symbol)
            buckets = active[state]
            attribute = self._index_attribute(state, symbol, moves)
            if attribute >= 0:
                # Only the classes whose common value is the event's (or unset) can move; the
                # others stay where they are.
                value = values[attribute]
                selected = []
                for bucket_key in (value, UNSET) if value is not None else (UNSET,):
                    bucket = buckets.get(bucket_key)
                    if bucket:
                        selected.extend(bucket.items())
                stay = True
            else:
                selected = [item for bucket in buckets.values() for item in bucket.items()]
                # A final state re-entered without reporting (a NOT read) reports again: only a
                # non-final state can be left as it is.
                stay = not det.final[state] and any(labels is None and target == state for labels, target in moves)
                if not stay:
                    del active[state]
                    self.live -= len(selected)
            if self.by_age:
                # Classes whose every complex event has left the window: drop them now, before
                # arrivals (an arrival may have the same state and registers).
                alive = []
                for nu, node in selected:
                    if not node[HAS_EMPTY] and node[MAX_FIRST] <= limit:
                        if stay:
                            self._remove(active, state, nu)
                    else:
                        alive.append((nu, node))
                selected = alive
            work.append((state, moves, selected, stay))
        entered: list[tuple[int, tuple]] = []
        created = 0
        for state, moves, selected, stay in work:
            for nu, node in selected:
                expired = limit is not None and not node[HAS_EMPTY] and node[MAX_FIRST] <= limit
                for labels, target in moves:
                    if labels is None:
                        if target == state and stay:
                            continue  # the class stays as it is
                        target_nu, target_node = nu, node
                    else:
                        reporting = nodes_reports(labels)
                        if expired and reporting:
                            continue  # a new last event would put every CE out of the window
                        program = registers.step(labels)
                        target_nu = nu if program is None else program(nu, values, mask, symbol)
                        if target_nu is None:
                            continue
                        if reporting:
                            target_node = _output(pos, labels, node, m, data)
                            created += 1
                        else:
                            target_node = node
                    by_bucket = active.get(target)
                    if by_bucket is None:
                        by_bucket = active[target] = {}
                    bucket_key = target_nu[key_slot] if key_slot is not None else None
                    bucket = by_bucket.get(bucket_key)
                    if bucket is None:
                        bucket = by_bucket[bucket_key] = {}
                    previous = bucket.get(target_nu)
                    if previous is None:
                        bucket[target_nu] = target_node
                        self.live += 1
                    else:
                        bucket[target_nu] = _union(previous, target_node)
                        created += 1
                    entered.append((target, target_nu))
        self.created += created
        if self.live > self.max_classes:
            self._check_size()
        if self.partitioned:
            if self._only_initial(active):
                self.partitions.pop(key, None)
                self.partition_consumed.pop(key, None)
            else:
                self.partitions[key] = active
                self.partition_consumed[key] = self.consumed_at
        else:
            self.partitions[key] = active
        if not entered:
            return None
        final = det.final
        finals = []
        seen = set()
        for target, nu in entered:
            if not final[target] or (target, nu) in seen:
                continue
            seen.add((target, nu))
            if registers.gate(nu):
                bucket_key = nu[key_slot] if key_slot is not None else None
                finals.append(active[target][bucket_key][nu])
        return finals or None

    def _remove(self, active: dict, state: int, nu: tuple) -> None:
        bucket_key = nu[self.key_slot] if self.key_slot is not None else None
        by_bucket = active.get(state)
        if by_bucket is None:
            return
        bucket = by_bucket.get(bucket_key)
        if bucket is None or nu not in bucket:
            return
        del bucket[nu]
        self.live -= 1
        if not bucket:
            del by_bucket[bucket_key]
            if not by_bucket:
                del active[state]

    def _only_initial(self, active: dict) -> bool:
        if len(active) != 1 or self.init not in active:
            return False
        buckets = active[self.init]
        if len(buckets) != 1:
            return False
        (bucket,) = buckets.values()
        return len(bucket) == 1 and bucket.get(self.initial_registers) is BOTTOM

    def _check_size(self) -> None:
        self.live = sum(len(b) for part in self.partitions.values() for bs in part.values() for b in bs.values())
        if self.live > self.max_classes:
            raise LimitExceeded(
                f"more than {self.max_classes:,} live partial-match classes (distinct states and register "
                "values): the query's conditions keep too many partial matches apart. Add or shorten a "
                "WITHIN window, or raise the bound with max_classes= (API) / --max-classes (CLI)",
                "max_classes",
                self.max_classes,
            )

    def _consumed(self, active: dict) -> dict:
        out: dict = {}
        for state, buckets in active.items():
            for bucket_key, bucket in buckets.items():
                for nu, node in bucket.items():
                    if node[HAS_EMPTY]:
                        out.setdefault(state, {}).setdefault(bucket_key, {})[nu] = BOTTOM
        return out

    def consume(self, key: Any) -> None:
        active = self.partitions.get(key)
        if active is None:
            return
        kept = self._consumed(active)
        if not kept:
            kept = self.initial_active()
        if self.partitioned and self._only_initial(kept):
            self.partitions.pop(key, None)
            self.partition_consumed.pop(key, None)
        else:
            self.partitions[key] = kept

    def roots(self) -> list[tuple]:
        return [
            node
            for active in self.partitions.values()
            for buckets in active.values()
            for bucket in buckets.values()
            for node in bucket.values()
        ]

    def classes(self, active: dict, key: Any = None):
        for state, buckets in active.items():
            for bucket in buckets.values():
                for nu, node in bucket.items():
                    yield state, nu, node

    def from_classes(self, classes: list[tuple]) -> dict:
        active: dict = {}
        for state, nu, node in classes:
            bucket = active.setdefault(state, {}).setdefault(self._bucket(nu), {})
            bucket[nu] = node if nu not in bucket else _union(bucket[nu], node)
        return active

    def compact(self, limit: Any) -> None:
        live = 0
        for key in list(self.partitions):
            active = self.partitions[key]
            items = [
                (state, bucket_key, nu, node)
                for state, buckets in active.items()
                for bucket_key, bucket in buckets.items()
                for nu, node in bucket.items()
            ]
            pruned = nodes.prune([item[3] for item in items], limit)
            kept: dict = {}
            for (state, bucket_key, nu, _), node in zip(items, pruned):
                if node is not None:
                    kept.setdefault(state, {}).setdefault(bucket_key, {})[nu] = node
                    live += 1
            if not kept:
                kept = self.initial_active()
            if self.partitioned and self._only_initial(kept):
                del self.partitions[key]
                self.partition_consumed.pop(key, None)
            else:
                self.partitions[key] = kept
        self.live = live


def nodes_reports(labels: tuple[str, ...]) -> bool:
    """Whether an interned label tuple has a public label (the event is reported)."""
    for label in labels:
        if label[0] != "\x00":
            return True
    return False
