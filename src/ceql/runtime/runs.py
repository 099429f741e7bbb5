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
from ceql.compile.values import MISSING
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
        # Where the first complex events of a trigger are the result (ANY, LIMIT), runs move in
        # determinize.rank's canonical order, not in the states' interning order, which a
        # restored state does not reproduce.
        self.canonical = plan.strategy == "ANY" or plan.limit is not None
        self.partitions: dict[Any, Any] = {}
        self.consumed_at = -1
        self.partition_consumed: dict[Any, int] = {}
        self.created = 0
        self.compact_at = COMPACT_MIN
        # The window that bounds where complex events may start (``window_limit``), or None.
        self._bounding = plan.window if plan.window is not None and plan.monotone else None

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
        window = self._bounding
        return None if window is None else nodes.window_limit(m, window)


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
        fresh = active is None
        if fresh:
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
        if self.canonical and len(moving) > 1:
            rank = det.rank
            moving.sort(key=lambda item: rank[item[0]])
        new = active if fresh else dict(active)  # (a fresh dict is no partition's yet)
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
            # (Nothing kept: no run can start any more, as after START's event; the initial
            # state is not brought back, which would anchor START again.)
            kept = {s: node for s, node in zip(states, pruned) if node is not None}
            if self.partitioned and len(kept) == 1 and kept.get(self.init) is BOTTOM:
                del self.partitions[key]
                self.partition_consumed.pop(key, None)
            else:
                self.partitions[key] = kept


class _Classes:
    """The run classes of one determinized state: ``nodes`` maps register values to the class's
    tECS node; ``indexes`` (built when an event first needs one) map, for a tuple of equality
    keys, the classes' values of those keys to the classes holding them."""

    __slots__ = ("nodes", "indexes")

    def __init__(self, nodes: dict | None = None) -> None:
        self.nodes: dict = {} if nodes is None else nodes
        self.indexes: dict[tuple[int, ...], dict] | None = None


def _bad_key(value: Any) -> bool:
    """A value no class can share (a missing value, NaN): the move it keys is impossible."""
    return value is None or value is MISSING or (isinstance(value, float) and value != value)


class RegisterRuns(_Store):
    """Run classes with registers: ``partitions[key] = {det state: _Classes}``.

    The equality index (the PART-BY paper's hash index per transition, Theorem 10): a common
    value (PART-BY, or equalities between labels) is a register slot that every transition
    reporting one of its labels must match. For one (state, symbol), the keys that every
    labelled move constrains select the classes that can move: those whose values are, key by
    key, the event's value (in the attribute of the move's label) or still unset. The others
    cannot take a labelled move, so they stay (the state's silent move loops on it) or die (it
    has none); either way they are not visited, and the work per event is the classes it
    extends, whatever the number of live classes (nested PART-BY, several keys at once)."""

    def __init__(self, plan: Plan, max_classes: int = DEFAULT_MAX_CLASSES) -> None:
        super().__init__(plan)
        registers: Registers = plan.registers  # type: ignore[assignment]
        self.registers = registers
        self.initial_registers = registers.initial
        keys = getattr(registers, "keys", None) or ((registers.key,) if registers.key is not None else ())
        self.key_slots: tuple[int, ...] = tuple(key[0] for key in keys)
        self.key_attributes: tuple[dict[str, int], ...] = tuple(key[1] for key in keys)
        # (state, symbol) -> None (every class moves) or (key numbers, the attribute of each
        # labelled move per key, whether unselected classes stay)
        self._plans: dict[tuple[int, int], Any] = {}
        self.max_classes = max_classes
        self.live = 0
        # Classes whose complex events have all left the window are dropped (a window on a
        # measure that never decreases, runs that end on a reported event).
        self.by_age = plan.window is not None and plan.monotone and not plan.silent_reads

    def initial_active(self) -> dict:
        return {self.init: _Classes({self.initial_registers: BOTTOM})}

    def _plan(self, state: int, symbol: int, moves: tuple) -> Any:
        """How the index selects the classes of ``state`` that ``symbol`` moves (None: all)."""
        key = (state, symbol)
        if key in self._plans:
            return self._plans[key]
        found = None
        if self.key_slots:
            silent = [target for labels, target in moves if labels is None]
            labelled = [labels for labels, _ in moves if labels is not None]
            # Unselected classes must be left as they are (a silent loop on a state that is not
            # final: a final state re-entered silently reports again) or die (no silent move).
            stays = bool(silent) and all(target == state for target in silent) and not self.det.final[state]
            if stays or not silent:
                per_move = []
                for labels in labelled:
                    per_key = []
                    for attributes in self.key_attributes:
                        hit = next((attributes[label] for label in labels if label in attributes), None)
                        per_key.append(hit)
                    per_move.append(per_key)
                numbers = tuple(
                    number
                    for number in range(len(self.key_slots))
                    if per_move and all(per_key[number] is not None for per_key in per_move)
                )
                if numbers:
                    attributes = tuple(tuple(per_key[n] for n in numbers) for per_key in per_move)
                    found = (numbers, tuple(dict.fromkeys(attributes)), stays)
        self._plans[key] = found
        return found

    def _index(self, classes: _Classes, numbers: tuple[int, ...]) -> dict:
        """The index of ``classes`` by the values of the keys ``numbers`` (built once, then kept
        up to date as classes come and go)."""
        indexes = classes.indexes
        if indexes is None:
            indexes = classes.indexes = {}
        index = indexes.get(numbers)
        if index is None:
            index = indexes[numbers] = {}
            slots = [self.key_slots[n] for n in numbers]
            for nu in classes.nodes:
                index.setdefault(tuple([nu[slot] for slot in slots]), {})[nu] = None
        return index

    def _add(self, classes: _Classes, nu: tuple, node: tuple) -> None:
        classes.nodes[nu] = node
        self.live += 1
        if classes.indexes:
            slots = self.key_slots
            for numbers, index in classes.indexes.items():
                index.setdefault(tuple([nu[slots[n]] for n in numbers]), {})[nu] = None

    def _discard(self, classes: _Classes, nu: tuple) -> None:
        del classes.nodes[nu]
        self.live -= 1
        if classes.indexes:
            slots = self.key_slots
            for numbers, index in classes.indexes.items():
                values = tuple([nu[slots[n]] for n in numbers])
                bucket = index[values]
                del bucket[nu]
                if not bucket:
                    del index[values]

    def _select(self, classes: _Classes, plan: tuple, values: tuple) -> list[tuple]:
        """The classes some labelled move may extend: per key, the event's value or unset."""
        numbers, per_move, _ = plan
        index = self._index(classes, numbers)
        wanted: list[tuple] = []
        for attributes in per_move:
            choices: list[tuple] = [()]
            for attribute in attributes:
                value = values[attribute]
                if _bad_key(value):
                    choices = []
                    break
                choices = [c + (value,) for c in choices] + [c + (UNSET,) for c in choices]
            for choice in choices:
                if choice not in wanted:
                    wanted.append(choice)
        nodes = classes.nodes
        selected = []
        for choice in wanted:
            bucket = index.get(choice)
            if bucket:
                selected.extend((nu, nodes[nu]) for nu in bucket)
        return selected

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
        if self.canonical and len(states) > 1:
            states.sort(key=det.rank.__getitem__)
        cache = det.cache
        # First take out every class that moves (reading before writing: a state may receive
        # runs from another one processed before it), then add the arrivals.
        work = []
        for state in states:
            moves = cache.get((state, symbol))
            if moves is None:
                moves = det.step(state, symbol)
            classes = active[state]
            plan = self._plan(state, symbol, moves)
            if plan is not None:
                # Only the classes whose values the event can extend move; the others stay
                # where they are, or die with the state when it has no silent move.
                selected = self._select(classes, plan, values)
                stay = plan[2]
            else:
                selected = list(classes.nodes.items())
                # A final state re-entered without reporting (a NOT read) reports again: only a
                # non-final state can be left as it is.
                stay = not det.final[state] and any(labels is None and target == state for labels, target in moves)
            if not stay:
                del active[state]
                self.live -= len(classes.nodes)
            if self.by_age:
                # Classes whose every complex event has left the window: drop them now, before
                # arrivals (an arrival may have the same state and registers).
                alive = []
                for nu, node in selected:
                    if not node[HAS_EMPTY] and node[MAX_FIRST] <= limit:
                        if stay:
                            self._discard(classes, nu)
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
                    classes = active.get(target)
                    if classes is None:
                        classes = active[target] = _Classes()
                    previous = classes.nodes.get(target_nu)
                    if previous is None:
                        if classes.indexes:
                            self._add(classes, target_nu, target_node)
                        else:
                            classes.nodes[target_nu] = target_node
                            self.live += 1
                    else:
                        classes.nodes[target_nu] = _union(previous, target_node)
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
                finals.append(active[target].nodes[nu])
        return finals or None

    def _only_initial(self, active: dict) -> bool:
        if len(active) != 1 or self.init not in active:
            return False
        nodes = active[self.init].nodes
        return len(nodes) == 1 and nodes.get(self.initial_registers) is BOTTOM

    def _check_size(self) -> None:
        self.live = sum(len(classes.nodes) for part in self.partitions.values() for classes in part.values())
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
        for state, classes in active.items():
            kept = {nu: BOTTOM for nu, node in classes.nodes.items() if node[HAS_EMPTY]}
            if kept:
                out[state] = _Classes(kept)
        return out

    def consume(self, key: Any) -> None:
        active = self.partitions.get(key)
        if active is None:
            return
        # (Nothing kept: no run can start any more, as after START's event; bringing the
        # initial state back would anchor START again.)
        kept = self._consumed(active)
        if self.partitioned and self._only_initial(kept):
            self.partitions.pop(key, None)
            self.partition_consumed.pop(key, None)
        else:
            self.partitions[key] = kept

    def _recount(self) -> None:
        self.live = sum(len(classes.nodes) for part in self.partitions.values() for classes in part.values())

    def roots(self) -> list[tuple]:
        return [node for active in self.partitions.values() for classes in active.values() for node in classes.nodes.values()]

    def classes(self, active: dict, key: Any = None):
        for state, classes in active.items():
            for nu, node in classes.nodes.items():
                yield state, nu, node

    def from_classes(self, classes: list[tuple]) -> dict:
        active: dict = {}
        for state, nu, node in classes:
            nodes = active.setdefault(state, _Classes()).nodes
            nodes[nu] = node if nu not in nodes else _union(nodes[nu], node)
        return active

    def compact(self, limit: Any) -> None:
        for key in list(self.partitions):
            active = self.partitions[key]
            items = [(state, nu, node) for state, classes in active.items() for nu, node in classes.nodes.items()]
            pruned = nodes.prune([item[2] for item in items], limit)
            kept: dict = {}
            for (state, nu, _), node in zip(items, pruned):
                if node is not None:
                    kept.setdefault(state, _Classes()).nodes[nu] = node
            if self.partitioned and self._only_initial(kept):
                del self.partitions[key]
                self.partition_consumed.pop(key, None)
            else:
                self.partitions[key] = kept
        self._recount()


def nodes_reports(labels: tuple[str, ...]) -> bool:
    """Whether an interned label tuple has a public label (the event is reported)."""
    for label in labels:
        if label[0] != "\x00":
            return True
    return False
