"""NEXT and LAST with work per event that does not grow with the live partial matches.

Two runs with the same determinized state and register values (a *bundle*) have the same
future, and the NEXT (LAST) order of their complex events is kept by any common continuation
(Foundations, Theorem 6). Without a window one complex event per bundle suffices: the best one.
With a window the first event's measure decides how long a complex event stays usable, so a
bundle keeps its *frontier*: members with distinct starts (the first event's measure), start
ascending, each better than every member that starts later (a member beaten by a later one
can never be reported: the later one is better and leaves the window after it). For NEXT the
earliest start is the best, so every start stays; for LAST mostly the newest survives.

Per event only the bundles of the states the event's symbol changes are moved, and a bundle
moves as a whole, without touching its members: a move makes a *view* that shares the
members and adds the event to a chain of pending events (a persistent linked list, newest
first); a member's complex event is its node followed by the chain's events after the point
it joined. Members are materialised only when reported, compared, or copied into another
bundle. Expired members are skipped by a per-view offset (``lo``), so each is passed once.
When several bundles arrive at one (state, registers), the members of the smaller ones are
inserted into the largest (copy on write when another view shares it): a new start is an
append at the back (LAST pops the members it beats); equal starts keep the better complex
event (equal supports: the union of both, which differ in labels only). Arrivals of one bundle
by a reporting and a silent move keep the reporting one (a common extension wins for NEXT and
LAST alike), without looking at members.

The output at a trigger is, over the bundles that reached a final state (registers passing the
gate), the best member in the window: the first of each bundle's frontier whose start is in
the window, then the best of those (ties: complex events with equal supports, all reported).

Comparisons read supports from the latest position down: LAST stops at the first difference;
NEXT decides on the first positions when they differ (always, between members of one
bundle), else on the smallest position in the symmetric difference. Everything is plain
tuples, lists and ints (the chain, members ``(start, first, node, join)``, offsets), so the
kernel can keep the same structures in arrays.
"""

from __future__ import annotations

from bisect import bisect_left
from typing import Any

from ceql.compile.plan import Plan
from ceql.runtime import nodes
from ceql.runtime.nodes import CHILD, HAS_EMPTY, LEFT, MEASURE, POS, window_limit
from ceql.runtime.runs import DEFAULT_MAX_CLASSES, LimitExceeded, _Store, nodes_reports

BOTTOM = nodes.BOTTOM
_output = nodes.output
_union = nodes.union
# A chain cell: (position, label sets (equal supports, several labels), measure, data, next).
C_POS, C_VARIANTS, C_MEASURE, C_DATA, C_NEXT = 0, 1, 2, 3, 4
# A member: (start measure or None, first position or None, node, chain cell it joined at).
M_START, M_FIRST, M_NODE, M_JOIN = 0, 1, 2, 3


class _Members:
    """The members of one or more bundles (shared by views until one of them writes)."""

    __slots__ = ("keys", "members", "views", "version", "absorbed")

    def __init__(self, keys: list, members: list) -> None:
        self.keys = keys  # the members' starts (sort keys; all None without a window)
        self.members = members
        self.views = 0  # bundles reading these members
        self.version = 0  # changes when a member other than the last appended one changes
        # id(source store) -> (source store, its members taken in, its version and the chain
        # they were read through then): members of another store inserted here by a
        # reporting move (see RankedRuns._join)
        self.absorbed: dict[int, tuple] | None = None


class _Bundle:
    """The runs of one (state, registers): the members from ``lo`` on, followed by ``chain``,
    and (``empty``) the empty complex event (a run that reported nothing yet)."""

    __slots__ = ("store", "lo", "chain", "empty")

    def __init__(self, store: _Members, lo: int, chain: tuple | None, empty: bool) -> None:
        self.store = store
        self.lo = lo
        self.chain = chain
        self.empty = empty
        store.views += 1

    def size(self) -> int:
        return len(self.store.members) - self.lo


def materialize(member: tuple, chain: tuple | None) -> tuple:
    """The member's node with the chain's events after its join point added."""
    node = member[M_NODE]
    join = member[M_JOIN]
    cells = []
    cell = chain
    while cell is not join:
        cells.append(cell)
        cell = cell[C_NEXT]
    for cell in reversed(cells):
        node = _extend(node, cell)
    return node


def _extend(node: tuple, cell: tuple) -> tuple:
    pos, variants, m, data = cell[C_POS], cell[C_VARIANTS], cell[C_MEASURE], cell[C_DATA]
    out = _output(pos, variants[0], node, m, data)
    for labels in variants[1:]:
        out = _union(out, _output(pos, labels, node, m, data))
    return out


def _descending(member: tuple, chain: tuple | None):
    """The member's positions from the latest down, with the node each one is read from (None
    on the chain): equal nodes have equal remainders."""
    cell = chain
    join = member[M_JOIN]
    while cell is not join:
        yield cell[C_POS], None
        cell = cell[C_NEXT]
    node = member[M_NODE]
    while True:
        size = len(node)
        if size == 3:
            return
        if size == 5:
            node = node[LEFT]  # equal supports below a union: any side spells it
            continue
        yield node[POS], node
        node = node[CHILD]


def compare(a: tuple, chain_a: tuple | None, b: tuple, chain_b: tuple | None, last: bool) -> int:
    """1 if a's support is better (LAST: the largest descending sequence; NEXT: the smallest
    ascending one with +inf appended), -1 if b's is, 0 if they are equal."""
    if not last:
        first_a, first_b = a[M_FIRST], b[M_FIRST]
        if first_a != first_b:
            return 1 if first_a < first_b else -1
    walk_a, walk_b = _descending(a, chain_a), _descending(b, chain_b)
    item_a, item_b = next(walk_a, None), next(walk_b, None)
    smallest = 0  # NEXT: the side holding the smallest difference seen so far
    while item_a is not None or item_b is not None:
        if item_a is not None and item_b is not None:
            if item_a[1] is not None and item_a[1] is item_b[1]:
                break  # the same node: the same positions from here down
            pos_a, pos_b = item_a[0], item_b[0]
            if pos_a == pos_b:
                item_a, item_b = next(walk_a, None), next(walk_b, None)
                continue
            side = 1 if pos_a > pos_b else -1
        else:
            side = 1 if item_a is not None else -1
        if last:
            return side
        smallest = side
        if side == 1:
            item_a = next(walk_a, None)
        else:
            item_b = next(walk_b, None)
    return smallest


class RankedRuns(_Store):
    """``partitions[key]`` maps a determinized state to ``{registers: _Bundle}``."""

    def __init__(self, plan: Plan, max_classes: int = DEFAULT_MAX_CLASSES) -> None:
        super().__init__(plan)
        self.registers = plan.registers
        self.initial_registers = plan.registers.initial if plan.registers is not None else ()
        self.last = plan.strategy == "LAST"
        # With a window (over a measure that never decreases, runs ending on a reported event:
        # the evaluator's condition) a member's start decides how long it is usable.
        self.windowed = plan.window is not None
        # Without a window nor consumption one complex event per bundle: the empty one (a run
        # that reported nothing) is worse than any other; consumption keeps it apart (it is
        # what survives an output).
        self.single = not self.windowed and plan.consume == "NONE"
        self.max_classes = max_classes
        self.live = 0  # members in stores (shared stores counted once; recounted when large)

    # ------------------------------------------------------------------ structure

    def _bundle(self, members: list, chain: tuple | None, empty: bool) -> _Bundle:
        self.live += len(members)
        return _Bundle(_Members([m[M_START] for m in members], members), 0, chain, empty)

    def initial_active(self) -> dict:
        return {self.init: {self.initial_registers: self._bundle([], None, True)}}

    def _release(self, bundle: _Bundle) -> None:
        store = bundle.store
        store.views -= 1
        if store.views == 0:
            self.live -= len(store.members)

    @staticmethod
    def _expire(bundle: _Bundle, limit: Any) -> None:
        """Skip the members whose every complex event has left the window."""
        if limit is None:
            return
        keys = bundle.store.keys
        lo = bundle.lo
        while lo < len(keys) and keys[lo] <= limit:
            lo += 1
        bundle.lo = lo

    def _own(self, bundle: _Bundle) -> None:
        """Make the bundle's members its own (copy on write), dropping the skipped ones."""
        store = bundle.store
        if store.views == 1 and (bundle.lo < 64 or 2 * bundle.lo < len(store.members)):
            return
        members = store.members[bundle.lo :]
        keys = store.keys[bundle.lo :]
        self._release(bundle)
        fresh = _Members(keys, members)
        fresh.views = 1
        fresh.absorbed = dict(store.absorbed) if store.absorbed else None
        self.live += len(members)
        bundle.store = fresh
        bundle.lo = 0

    def _insert(self, bundle: _Bundle, member: tuple) -> None:
        """Add a member (its join point: the bundle's chain head) to an owned bundle."""
        store = bundle.store
        keys, members = store.keys, store.members
        key = member[M_START]
        chain = bundle.chain
        last = self.last
        if key is None:
            index = len(keys) if not keys else 0  # no window: one member per bundle
        else:
            index = bisect_left(keys, key, bundle.lo)
        if index < len(keys) and keys[index] == key:
            present = members[index]
            order = compare(member, chain, present, chain, last)
            if order < 0:
                return
            node = member[M_NODE]
            if order == 0:  # equal supports (the complex events differ in labels): both
                node = _union(materialize(present, chain), node)
                self.created += 1
            member = (key, member[M_FIRST], node, chain)
            store.version += 1
            if order == 0 or not last or key is None:
                members[index] = member
                return
            # A better member at this start may beat earlier ones (LAST): insert it anew.
            del keys[index], members[index]
            self.live -= 1
        if last and key is not None:
            if index < len(keys) and compare(members[index], chain, member, chain, True) > 0:
                return  # a later start is better: this member can never be reported
            while index > bundle.lo and compare(member, chain, members[index - 1], chain, True) > 0:
                index -= 1
                del keys[index], members[index]
                store.version += 1
                self.live -= 1
        if index < len(keys):
            store.version += 1
        keys.insert(index, key)
        members.insert(index, member)
        self.live += 1

    # ------------------------------------------------------------------ one event

    def advance(
        self, key: Any, symbol: int, pos: int, m: Any, data: Any, values: tuple = (), mask: int = 0
    ) -> list[tuple] | None:
        det = self.det
        active = self.partitions.get(key)
        if active is None:
            active = self.initial_active()
        elif self.partitioned and self.partition_consumed.get(key, -1) < self.consumed_at:
            active = self._consumed(active)
        limit = self.window_limit(m) if self.windowed else None
        touched = det.touching(symbol)
        states = [s for s in touched if s in active] if len(touched) < len(active) else [
            s for s in active if s in touched
        ]
        cache = det.cache
        final = det.final
        registers = self.registers
        # arrivals[(target, registers)][id(origin)] = [origin, reported label sets, stays]
        arrivals: dict[tuple, dict[int, list]] = {}
        taken: list[_Bundle] = []
        for state in states:
            moves = cache.get((state, symbol))
            if moves is None:
                moves = det.step(state, symbol)
            stays = not final[state]
            for nu, bundle in active.pop(state).items():
                taken.append(bundle)
                self._expire(bundle, limit)
                if not bundle.empty and bundle.lo >= len(bundle.store.members):
                    continue  # nothing left in the window
                for labels, target in moves:
                    if labels is None:
                        target_nu = nu
                    elif registers is not None:
                        program = registers.step(labels)
                        target_nu = nu if program is None else program(nu, values, mask, symbol)
                        if target_nu is None:
                            continue
                    else:
                        target_nu = nu
                    by_origin = arrivals.setdefault((target, target_nu), {})
                    entry = by_origin.get(id(bundle))
                    if entry is None:
                        entry = by_origin[id(bundle)] = [bundle, [], False]
                    if labels is not None and nodes_reports(labels):
                        entry[1].append(labels)
                    elif labels is None and target == state and stays:
                        entry[2] = True  # the bundle may stay as it is
        # Bundles that go nowhere are released first (their members are then no longer
        # shared). A bundle is reused as it is (in place) at one target: where it stays, else
        # at its only one; everywhere else it is read through a new view, made before any
        # bundle writes its members (a write then sees the sharing and copies).
        where: dict[int, tuple | None] = {}
        for target_key, by_origin in arrivals.items():
            for origin_id, entry in by_origin.items():
                if origin_id not in where:
                    where[origin_id] = target_key
                elif entry[2]:
                    where[origin_id] = target_key  # it stays here
                elif where[origin_id] is not None and not arrivals[where[origin_id]][origin_id][2]:
                    where[origin_id] = None  # several targets, none where it stays
        for bundle in taken:
            if id(bundle) not in where:
                self._release(bundle)
        resolved: list[tuple] = []
        for target_key, by_origin in arrivals.items():
            target, target_nu = target_key
            by_nu = active.get(target)
            if by_nu is None:
                by_nu = active[target] = {}
            views = []  # (bundle, chain, reported, empty, in place)
            for origin_id, (origin, reported, _) in by_origin.items():
                chain: Any = origin.chain
                if reported:
                    # The reporting moves beat the silent ones member by member (a common
                    # extension is better for NEXT and LAST), so those are dropped unseen.
                    chain = (pos, tuple(dict.fromkeys(reported)), m, data, origin.chain)
                if where.get(origin_id) == target_key:
                    views.append([origin, chain, bool(reported), origin.empty, True])
                else:
                    views.append([_Bundle(origin.store, origin.lo, chain, origin.empty), chain, bool(reported), origin.empty, False])
            untouched = by_nu.get(target_nu)
            if untouched is not None:
                # A bundle of a state the event does not change: it stays, the arrivals join it.
                views.append([untouched, untouched.chain, False, untouched.empty, True])
            only = next(iter(by_origin.values()))
            # A bundle that only stays where it is reports nothing again.
            moved = not (len(by_origin) == 1 and untouched is None and only[2] and not only[1])
            resolved.append((target, target_nu, views, moved))
        for bundle in taken:
            if id(bundle) in where and where[id(bundle)] is None:
                self._release(bundle)  # read through views only
        entered: list[tuple] = []
        for target, target_nu, views, moved in resolved:
            bundle = self._join(views, pos, m)
            active[target][target_nu] = bundle
            if final[target] and moved:
                entered.append((target_nu, bundle))
        if self.live > self.max_classes:
            self._check_size()
        self._store(key, active)
        if not entered:
            return None
        return self._best(entered, m)

    def _join(self, views: list, pos: int, m: Any) -> _Bundle:
        """One bundle from the views arriving at one (state, registers): the one whose
        members are its own and most numerous takes the others' members in."""
        for view in views:
            bundle, chain, reported = view[0], view[1], view[2]
            if view[4]:
                bundle.chain = chain
            if reported:
                bundle.empty = False
        views.sort(key=lambda v: (v[0].store.views == 1, v[0].size()), reverse=True)
        base = views[0][0]
        if views[0][2] and views[0][3]:
            self._add_first(base, base.chain, pos, m)
        base_reported = views[0][2]
        for other, other_chain, other_reported, other_empty, _ in views[1:]:
            if other.size():
                self._own(base)
                source = other.store
                begin = other.lo
                absorbed = base.store.absorbed
                record = absorbed.get(id(source)) if absorbed is not None else None
                before = other_chain[C_NEXT] if other_reported else None
                if (
                    record is not None
                    and record[0] is source
                    and record[2] == source.version
                    and record[3] is before
                    and other_reported
                    and (base_reported or not self.last)
                ):
                    # These members came in before by a reporting move, unchanged since (same
                    # members, same chain): each copy here holds them plus that event (and
                    # later ones), which beats them plus this event alone (NEXT: an earlier
                    # extra event; LAST: the same, when both copies get this event). Only the
                    # newer members can count.
                    begin = max(begin, record[1])
                for member in source.members[begin:]:
                    node = materialize(member, other_chain)
                    self.created += 1
                    self._insert(base, (member[M_START], member[M_FIRST], node, base.chain))
                if other_reported:
                    if base.store.absorbed is None:
                        base.store.absorbed = {}
                    base.store.absorbed[id(source)] = (source, len(source.members), source.version, before)
            if other_empty:
                if other_reported:
                    self._add_first(base, other_chain, pos, m)
                else:
                    base.empty = True
            self._release(other)
        if base.empty and self.single and base.size():
            base.empty = False  # one complex event per bundle: a non-empty one is better
        return base

    def _add_first(self, base: _Bundle, cell: tuple, pos: int, m: Any) -> None:
        """The empty complex event extended by the event of ``cell``: a new member."""
        self._own(base)
        self.created += 1
        self._insert(base, (m if self.windowed else None, pos, _extend(BOTTOM, cell), base.chain))

    def _best(self, entered: list[tuple], m: Any) -> list[tuple] | None:
        """The nodes of the best complex events in the window among the final bundles."""
        registers = self.registers
        window = self.plan.window
        best: list[tuple] = []  # (member, chain)
        empty = False  # the empty complex event is a candidate (best only if nothing else is)
        for nu, bundle in entered:
            if registers is not None and not registers.gate(nu):
                continue
            empty = empty or bundle.empty
            members = bundle.store.members
            chain = bundle.chain
            found = None
            for index in range(bundle.lo, len(members)):
                member = members[index]
                if window is None:
                    found = member
                    break
                if chain is not None and chain is not member[M_JOIN]:
                    last_m = chain[C_MEASURE]
                else:
                    last_m = _top(member[M_NODE])
                if member[M_START] > window_limit(last_m, window):
                    found = member
                    break
            if found is None:
                continue
            if not best:
                best = [(found, chain)]
                continue
            order = compare(found, chain, best[0][0], best[0][1], self.last)
            if order > 0:
                best = [(found, chain)]
            elif order == 0:
                best.append((found, chain))
        if not best:
            return [BOTTOM] if empty else None
        self.created += len(best)
        return [materialize(member, chain) for member, chain in best]

    def _store(self, key: Any, active: dict) -> None:
        if self.partitioned:
            if self._only_initial(active):
                self.partitions.pop(key, None)
                self.partition_consumed.pop(key, None)
                return
            self.partition_consumed[key] = self.consumed_at
        self.partitions[key] = active

    def _only_initial(self, active: dict) -> bool:
        if len(active) != 1 or self.init not in active:
            return False
        by_nu = active[self.init]
        if len(by_nu) != 1 or self.initial_registers not in by_nu:
            return False
        bundle = by_nu[self.initial_registers]
        return bundle.empty and not bundle.size()

    def _check_size(self) -> None:
        stores = {
            id(bundle.store): bundle.store
            for active in self.partitions.values()
            for by_nu in active.values()
            for bundle in by_nu.values()
        }
        self.live = sum(len(store.members) for store in stores.values())
        if self.live > self.max_classes:
            raise LimitExceeded(
                f"more than {self.max_classes:,} live classes for NEXT/LAST; add or shorten a WITHIN "
                "window, or raise the bound with max_classes= (API) / --max-classes (CLI)",
                "max_classes",
                self.max_classes,
            )

    # ------------------------------------------------------------------ consumption

    def _consumed(self, active: dict) -> dict:
        """Every partial match dropped; runs that reported nothing survive (empty)."""
        out: dict = {}
        for state, by_nu in active.items():
            for nu, bundle in by_nu.items():
                if bundle.empty:
                    out.setdefault(state, {})[nu] = self._bundle([], None, True)
        # Nothing kept is possible only under START (the initial class always has the empty
        # complex event otherwise): the anchored stream then has no runs left.
        return out

    def consume(self, key: Any) -> None:
        active = self.partitions.get(key)
        if active is not None:
            self._store(key, self._consumed(active))

    # ------------------------------------------------------------------ saving and inspection

    def _members(self, active: dict):
        """(state, registers, member, materialized node) of every live complex event (the
        empty one as a member without positions)."""
        for state, by_nu in active.items():
            for nu, bundle in by_nu.items():
                if bundle.empty:
                    yield state, nu, None, BOTTOM
                members = bundle.store.members
                for index in range(bundle.lo, len(members)):
                    member = members[index]
                    yield state, nu, member, materialize(member, bundle.chain)

    def roots(self) -> list[tuple]:
        return [node for active in self.partitions.values() for _, _, _, node in self._members(active)]

    def portable(self, registers: Any) -> Any:
        rank, nu, start, last = registers
        return (rank, super().portable(nu), start, last)

    def restore(self, registers: Any) -> Any:
        if not (isinstance(registers, tuple) and len(registers) == 4):
            return None
        rank, nu, start, last = registers
        nu = super().restore(nu)
        return None if nu is None else (rank, nu, start, last)

    def valid_registers(self, registers: Any) -> bool:
        return (
            isinstance(registers, tuple)
            and len(registers) == 4
            and isinstance(registers[0], int)
            and super().valid_registers(registers[1])
        )

    def classes(self, active: dict, key: Any = None):
        """(state, (rank, registers, start, last), node) per complex event kept: ranks number
        them best first (equal supports share one), as the saved format has them."""
        items = [
            (state, nu, (_start(node) if self.windowed else None, _first(node), node, None), node)
            for state, nu, _, node in self._members(active)
        ]
        order = sorted(range(len(items)), key=_ranking(items, self.last))
        rank = -1
        previous = None
        for index in order:
            state, nu, member, node = items[index]
            if previous is None or _order(member, previous, self.last) != 0:
                rank += 1
            previous = member
            last = _top(node) if self.windowed and member[M_START] is not None else None
            yield state, (rank, nu, member[M_START], last), node

    def from_classes(self, classes: list[tuple]) -> dict:
        active: dict = {}
        for state, (_, nu, _, _), node in classes:
            by_nu = active.setdefault(state, {})
            bundle = by_nu.get(nu)
            if bundle is None:
                bundle = by_nu[nu] = self._bundle([], None, False)
            if node[HAS_EMPTY]:
                bundle.empty = True
            if len(node) != 3:
                self._insert(bundle, (_start(node) if self.windowed else None, _first(node), node, None))
        for by_nu in active.values():
            for bundle in by_nu.values():
                if bundle.empty and self.single and bundle.size():
                    bundle.empty = False
        return active

    def compact(self, limit: Any) -> None:
        """Drop the expired members of bundles that no event moved lately."""
        for active in self.partitions.values():
            for by_nu in active.values():
                for bundle in by_nu.values():
                    self._expire(bundle, limit)
                    if bundle.lo and bundle.store.views == 1:
                        self._own(bundle)


def _order(a: tuple, b: tuple, last: bool) -> int:
    """The comparison of two complex events given as members (the empty one has no first)."""
    if a[M_FIRST] is None or b[M_FIRST] is None:
        return (a[M_FIRST] is not None) - (b[M_FIRST] is not None)
    return compare(a, None, b, None, last)


def _start(node: tuple) -> Any:
    """The measure of the first event of a node's complex events (equal supports)."""
    return _earliest(node, MEASURE)


def _top(node: tuple) -> Any:
    """The measure of the latest event of a node's complex events (equal supports)."""
    while len(node) == 5:
        node = node[LEFT]
    return node[MEASURE] if len(node) == 8 else None


def _first(node: tuple) -> int | None:
    """The first position of a node's complex events (equal supports), None if empty."""
    return _earliest(node, POS)


def _earliest(node: tuple, field: int) -> Any:
    """``field`` of the earliest event of a node's complex events (their supports are equal,
    so any branch of a union tells): the last one on the way down, None if empty."""
    found = None
    while True:
        size = len(node)
        if size == 3:
            return found
        if size == 5:
            node = node[LEFT]
            continue
        found = node[field]
        node = node[CHILD]


def _ranking(items: list[tuple], last: bool):
    """A sort key putting members best first (by the support comparison)."""
    from functools import cmp_to_key

    return cmp_to_key(lambda i, j: -_order(items[i][2], items[j][2], last))
