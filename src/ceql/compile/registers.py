"""Registers: conditions across events decided as the events arrive.

A *site* is a condition that cannot be decided on one event: a FILTER condition naming several
labels, aggregates or PREV, a ``PARTITION BY`` inside a formula or over label attributes. The
compiler gives each site ``N`` private labels on the transitions of its filtered formula f:
``\\x00N:x`` on f's events labelled x (for each label x of f the condition names),
``\\x00N:*`` on every event f reports, and ``\\x00N:end`` on the transition that ends an
instance of f (only when f sits inside an iteration, which makes several instances). Labels the
condition names but f does not define are *free* and read from the whole complex event.

The evaluator keeps, per run class, a tuple of register values ``v``. Each site's condition is a
Boolean combination of *atoms*; every atom folds the events it quantifies over into a small
summary (the largest ``x.v``, the common value of an equality, a count ...) and tells its truth
so far. Universal comparisons only ever go from true to false as events are added, so a run is
dropped as soon as one is violated; other conditions (aggregates, NOT) are decided when the
instance ends, or, when they name free labels, when the complex event is reported (``gate``).

``Registers.step(labels)`` compiles, once per label set of a transition, a function
``(v, values, mask) -> v' | None`` (None: the transition is disabled); ``gate(v)`` decides what
is left when a run reaches a final state.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ceql.compile.values import MISSING, arith, compare, compile_expr, expression_nodes
from ceql.lang import ast

UNSET = None


class _Poison:
    """A summary that some pair can no longer satisfy (a null, NaN, two different values)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "POISON"

    def __reduce__(self):
        return "POISON"


POISON = _Poison()
TRUE_OR_FALSE = frozenset((True, False))
ONLY_FALSE = frozenset((False,))
ONLY_TRUE = frozenset((True,))


def private(site: int, name: str) -> str:
    """The private label of site ``site``: a label copy (``x``), ``*`` or ``end``."""
    return f"\x00{site}:{name}"


def is_private(label: str) -> bool:
    return label.startswith("\x00")


def _bad(value: Any) -> bool:
    return value is MISSING or value is None or (isinstance(value, float) and value != value)


# ---------------------------------------------------------------------------------- layout


@dataclass
class Layout:
    """Register slots and their initial values."""

    initial: list = field(default_factory=list)

    def take(self, initial: Any = UNSET) -> int:
        self.initial.append(initial)
        return len(self.initial) - 1


@dataclass(frozen=True)
class Role:
    """The events one label contributes to an atom of one site.

    ``own``: the label is defined by the filtered formula (read per instance of the site);
    otherwise it is free and read at its *home*: the nearest enclosing scope that defines it
    (``home`` = that scope's number, one instance per iteration when it repeats) or the whole
    complex event (``home`` None)."""

    label: str  # as written in the query
    event_label: str  # carried by the transitions: a private copy, or the label itself
    own: bool
    home: int | None = None


class Allocator:
    """Takes slots for one site and records which instance resets each: the site's own
    instance, a repeated enclosing scope, or none (the whole complex event)."""

    def __init__(
        self,
        layout: Layout,
        instance: list[int],
        homes: dict[int, list[int]],
        local_homes: frozenset[int] = frozenset(),
    ) -> None:
        self.layout = layout
        self.instance = instance
        self.homes = homes  # repeated scope -> the slots its end resets
        self.local_homes = local_homes  # scopes inside an UNLESS right side (per run of it)
        self.taken: list[tuple[int, tuple]] = []  # (slot, group) in allocation order

    def group(self, role: Role | None) -> tuple:
        if role is None or role.own:
            return ("site",)
        if role.home is not None and role.home in self.homes:
            return ("home", role.home)
        if role.home is not None and role.home in self.local_homes:
            return ("local", role.home)
        return ("root",)

    def take(self, role: Role | None, initial: Any = UNSET) -> int:
        return self.take_in(self.group(role), initial)

    def take_in(self, group: tuple, initial: Any = UNSET) -> int:
        slot = self.layout.take(initial)
        self.taken.append((slot, group))
        if group[0] == "site":
            self.instance.append(slot)
        elif group[0] == "home":
            self.homes[group[1]].append(slot)
        return slot


class Atom:
    """Base class. ``roles`` are the labels quantified over; ``update`` folds an event in."""

    roles: tuple[Role, ...] = ()
    monotone = True  # true -> false only, as events are added

    def allocate(self, alloc: Allocator) -> None:
        raise NotImplementedError

    def update(self, v: list, present: frozenset[str], values: tuple, mask: int) -> None:
        raise NotImplementedError

    def value(self, v: list) -> bool:
        raise NotImplementedError

    def future(self, v: list) -> frozenset:
        """The truth values the atom may still take (monotone atoms: once false, false)."""
        if self.monotone:
            return TRUE_OR_FALSE if self.value(v) else ONLY_FALSE
        return TRUE_OR_FALSE



class ConstAtom(Atom):
    """A comparison of constants."""

    def __init__(self, truth: bool) -> None:
        self.truth = truth

    def allocate(self, alloc: Allocator) -> None:
        pass

    def update(self, v, present, values, mask) -> None:
        pass

    def value(self, v: list) -> bool:
        return self.truth

    def future(self, v: list) -> frozenset:
        return ONLY_TRUE if self.truth else ONLY_FALSE


class AllAtom(Atom):
    """``x[p]`` or a comparison naming one label: every x event satisfies predicate ``pid``."""

    def __init__(self, role: Role, pid: int) -> None:
        self.roles = (role,)
        self.bit = 1 << pid

    def allocate(self, alloc: Allocator) -> None:
        self.slot = alloc.take(self.roles[0], True)

    def update(self, v, present, values, mask) -> None:
        if self.roles[0].event_label in present and not mask & self.bit:
            v[self.slot] = False

    def value(self, v: list) -> bool:
        return v[self.slot]


class PairAtom(Atom):
    """``f(x) op g(y)`` for every pair of an x event and a y event, with summaries: the
    largest/smallest side value for an order, the common value for ``=``, the value sets for
    ``!=``; POISON once some pair must fail (a missing or NaN value, two different values)."""

    def __init__(self, op: str, left: Role, left_fn, right: Role, right_fn) -> None:
        self.op = op
        self.roles = (left, right)
        self.fns = (left_fn, right_fn)
        if op in ("<", "<="):
            self.kinds = ("max", "min")
        elif op in (">", ">="):
            self.kinds = ("min", "max")
        elif op == "=":
            self.kinds = ("common", "common")
        else:
            self.kinds = ("set", "set")

    def allocate(self, alloc: Allocator) -> None:
        self.slots = tuple(alloc.take(role) for role in self.roles)

    def update(self, v, present, values, mask) -> None:
        for side in (0, 1):
            if self.roles[side].event_label not in present:
                continue
            slot = self.slots[side]
            current = v[slot]
            if current is POISON:
                continue
            value = self.fns[side](values)
            if _bad(value):
                v[slot] = POISON
                continue
            kind = self.kinds[side]
            if current is UNSET:
                v[slot] = frozenset((value,)) if kind == "set" else value
            elif isinstance(next(iter(current)) if kind == "set" else current, str) != isinstance(value, str):
                v[slot] = POISON  # (a set's kind is its members': a second string is no mix)
            elif kind == "max":
                if value > current:
                    v[slot] = value
            elif kind == "min":
                if value < current:
                    v[slot] = value
            elif kind == "common":
                if value != current:
                    v[slot] = POISON
            elif value not in current:
                v[slot] = current | {value}

    def value(self, v: list) -> bool:
        left, right = v[self.slots[0]], v[self.slots[1]]
        if left is UNSET or right is UNSET:
            return True  # universal over an empty set of pairs
        if left is POISON or right is POISON:
            return False
        if self.op == "!=":
            if any(isinstance(a, str) for a in left) != any(isinstance(b, str) for b in right):
                return True
            return left.isdisjoint(right)
        return compare(self.op, left, right)


class GroupAtom(Atom):
    """One common value over every designated event (PARTITION BY, or equalities between
    labels that every instance has): a missing value or a second value breaks it. Events read
    at different homes keep their common value in different slots (each reset with its home);
    the atom holds while every slot is unbroken and the values that are set agree."""

    def __init__(self, members: list[tuple[Role, Callable]]) -> None:
        self.members = members
        self.roles = tuple(dict.fromkeys(role for role, _ in members))

    def allocate(self, alloc: Allocator) -> None:
        by_group: dict[tuple, int] = {}
        self.member_slots = []
        for role, fn in self.members:
            group = alloc.group(role)
            if group not in by_group:
                by_group[group] = alloc.take_in(group)
            self.member_slots.append((role.event_label, fn, by_group[group]))
        self.slot_list = tuple(by_group.values())
        # The slot the equality index reads (the site's own, when there is one).
        self.slot = by_group.get(("site",), self.slot_list[0])

    def update(self, v, present, values, mask) -> None:
        for event_label, fn, slot in self.member_slots:
            if event_label not in present:
                continue
            current = v[slot]
            if current is POISON:
                continue
            value = fn(values)
            if _bad(value):
                v[slot] = POISON
            elif current is UNSET:
                v[slot] = value
            elif value != current or isinstance(value, str) != isinstance(current, str):
                v[slot] = POISON

    def value(self, v: list) -> bool:
        seen = UNSET
        for slot in self.slot_list:
            current = v[slot]
            if current is POISON:
                return False
            if current is UNSET:
                continue
            if seen is UNSET:
                seen = current
            elif current != seen or isinstance(current, str) != isinstance(seen, str):
                return False
        return True


class ValuesAtom(Atom):
    """The general case: stores, per label, the values of the attributes the comparison reads
    (distinct values; the ordered history for the label of a PREV) and evaluates the
    comparison by brute force, with aggregates read from the site's aggregate registers. Exact
    for any comparison; the price is that runs with different stored values stay apart."""

    def __init__(
        self,
        compare_node: ast.Compare,
        roles: dict[str, Role],
        attribute_index: dict[str, int],
        registers: dict[ast.Aggregate, AggregateRegister],
    ) -> None:
        self.node = compare_node
        self.roles = tuple(roles.values())
        self.index = attribute_index
        self.registers = registers
        nodes = expression_nodes(compare_node)
        self.universal = sorted({n.label for n in nodes if isinstance(n, ast.Attr) and n.label})
        prevs = sorted({n.label for n in nodes if isinstance(n, ast.Prev)})
        self.prev_label = prevs[0] if prevs else None
        self.monotone = not registers
        needed: dict[str, list[str]] = {label: [] for label in roles}
        for n in nodes:
            if isinstance(n, ast.Attr) and n.label in needed and n.name not in needed[n.label]:
                needed[n.label].append(n.name)
            elif isinstance(n, ast.Prev) and n.attr not in needed[n.label]:
                needed[n.label].append(n.attr)
        self.needed = {label: tuple(attrs) for label, attrs in needed.items()}
        self.left = compile_expr(compare_node.left, self._resolve)
        self.right = compile_expr(compare_node.right, self._resolve)

    def _resolve(self, node: ast.Node) -> Callable:
        if isinstance(node, ast.Attr):
            label, position = node.label, self.needed[node.label].index(node.name)
            return lambda env: env[0][label][position]
        if isinstance(node, ast.Prev):
            label, position = node.label, self.needed[node.label].index(node.attr)
            return lambda env: env[1][label][position]
        register = self.registers[node]
        return lambda env: register.read(env[2])

    def allocate(self, alloc: Allocator) -> None:
        self.slots = {role.label: alloc.take(role, ()) for role in self.roles}

    def update(self, v, present, values, mask) -> None:
        for role in self.roles:
            if role.event_label not in present:
                continue
            item = tuple(values[self.index[a]] for a in self.needed[role.label])
            slot = self.slots[role.label]
            stored = v[slot]
            if role.label == self.prev_label:
                v[slot] = stored + (item,)
            elif item not in stored:
                v[slot] = tuple(sorted(set(stored) | {item}, key=repr))

    def value(self, v: list) -> bool:
        prev_label = self.prev_label
        others = [label for label in self.universal if label != prev_label]
        choices = [v[self.slots[label]] for label in others]
        if any(not choice for choice in choices):
            return True  # universal over an empty set of combinations
        if prev_label is not None:
            history = v[self.slots[prev_label]]
            steps = [(history[k], history[k - 1]) for k in range(1, len(history))]
        else:
            steps = [(None, None)]
        op = self.node.op
        for current, previous in steps:
            for combination in itertools.product(*choices):
                now = dict(zip(others, combination))
                before = {}
                if prev_label is not None:
                    now[prev_label] = current
                    before[prev_label] = previous
                env = (now, before, v)
                if not compare(op, self.left(env), self.right(env)):
                    return False
        return True


def aggregate_value(node: ast.Aggregate, events: tuple, attrs: tuple[str, ...]) -> Any:
    """An aggregate over stored events (tuples of ``attrs`` values, in stream order)."""
    if node.func == "COUNT":
        return len(events)
    position = attrs.index(node.attr)
    if node.func == "FIRST":
        return events[0][position] if events else None
    if node.func == "LAST":
        return events[-1][position] if events else None
    present = [e[position] for e in events if not _bad(e[position])]
    if not present:
        return None
    if node.func == "SUM":
        total = present[0]
        for value in present[1:]:
            total = arith("+", total, value)
        return total
    if node.func == "AVG":
        total = present[0]
        for value in present[1:]:
            total = arith("+", total, value)
        return total / len(present)
    if node.func == "MIN":
        return min(present)
    return max(present)


class AggregateAtom(Atom):
    """A comparison of aggregates and constants (``COUNT(b) >= 3``, ``AVG(b.p) > MAX(s.p)``),
    from incremental aggregate registers; decided when the instance ends."""

    monotone = False

    def __init__(self, compare_node: ast.Compare, registers: dict[ast.Aggregate, AggregateRegister]) -> None:
        self.node = compare_node
        self.registers = registers
        self.roles = tuple(dict.fromkeys(r.role for r in registers.values() if r.role is not None))
        self.left = compile_expr(compare_node.left, self._resolve)
        self.right = compile_expr(compare_node.right, self._resolve)
        self.bound = _count_bound(compare_node)

    def _resolve(self, node: ast.Node) -> Callable:
        register = self.registers[node]
        return lambda v: register.read(v)

    def allocate(self, alloc: Allocator) -> None:
        pass  # the aggregate registers are allocated by the site

    def update(self, v, present, values, mask) -> None:
        pass  # the site updates its aggregate registers once per event

    def value(self, v: list) -> bool:
        return compare(self.node.op, self.left(v), self.right(v))

    def future(self, v: list) -> frozenset:
        if self.bound is None:
            return TRUE_OR_FALSE
        aggregate, op, constant = self.bound
        current = self.registers[aggregate].read(v)
        if current is None or current is MISSING:
            return TRUE_OR_FALSE
        # COUNT and MAX only grow, MIN only shrinks.
        growing = aggregate.func in ("COUNT", "MAX")
        holds = compare(op, current, constant)
        if op in ("<", "<=") and growing or op in (">", ">=") and not growing:
            return TRUE_OR_FALSE if holds else ONLY_FALSE
        if op in (">", ">=") and growing or op in ("<", "<=") and not growing:
            return ONLY_TRUE if holds else TRUE_OR_FALSE
        return TRUE_OR_FALSE


def _count_bound(node: ast.Compare) -> tuple | None:
    """``AGG op constant`` (or mirrored) for COUNT / MIN / MAX, normalised to AGG on the left."""
    mirror = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "=": "=", "!=": "!="}
    left, right, op = node.left, node.right, node.op
    if isinstance(right, ast.Aggregate) and isinstance(left, ast.Literal):
        left, right, op = right, left, mirror[op]
    if (
        isinstance(left, ast.Aggregate)
        and left.func in ("COUNT", "MIN", "MAX")
        and isinstance(right, ast.Literal)
        and not isinstance(right.value, (str, bool))
    ):
        return (left, op, right.value)
    return None


class AggregateRegister:
    """One incremental aggregate of a site: COUNT, SUM, AVG (sum and count), MIN, MAX, FIRST,
    LAST over the events of a role (COUNT(*): every event of the filtered formula)."""

    def __init__(self, node: ast.Aggregate, role: Role | None, event_label: str, attribute: int | None) -> None:
        self.node = node
        self.role = role
        self.event_label = event_label
        self.attribute = attribute

    def allocate(self, alloc: Allocator) -> None:
        func = self.node.func
        initial: Any = 0 if func == "COUNT" else UNSET
        self.slot = alloc.take(self.role, initial)
        if func == "AVG":
            self.count_slot = alloc.take(self.role, 0)

    def update(self, v: list, values: tuple) -> None:
        func = self.node.func
        slot = self.slot
        if func == "COUNT":
            v[slot] += 1
            return
        value = values[self.attribute]
        current = v[slot]
        if func == "FIRST":
            if current is UNSET:
                v[slot] = (value,)
            return
        if func == "LAST":
            v[slot] = (value,)
            return
        if _bad(value):
            return
        if func in ("SUM", "AVG"):
            v[slot] = value if current is UNSET else arith("+", current, value)
            if func == "AVG":
                v[self.count_slot] += 1
        elif func == "MIN":
            if current is UNSET or value < current:
                v[slot] = value
        elif current is UNSET or value > current:
            v[slot] = value

    def read(self, v: list) -> Any:
        value = v[self.slot]
        func = self.node.func
        if func == "COUNT":
            return value
        if value is UNSET:
            return None
        if func in ("FIRST", "LAST"):
            return value[0]
        if func == "AVG":
            return value / v[self.count_slot]
        return value


# ---------------------------------------------------------------------------------- sites


@dataclass(frozen=True)
class Home:
    """A scope that repeats (an iteration's body, or a scope inside an iteration): free labels
    read there are summarised per instance, reset when the instance ends."""

    index: int
    end_label: str
    depth: int  # nesting depth (outer scopes are smaller)


@dataclass
class Tracked:
    """An UNLESS whose right side g needs registers (automata.UnlessTracked): the registers
    hold the set of g's runs, each a determinized state of g and the values of g's own slots."""

    index: int
    labels: dict[str, str]  # start, tick, rep, end
    sites: list  # g's sites
    frames: frozenset[int]  # scopes inside g (their slots are g's, per run)
    machine: Any = None  # g's automaton
    det: Any = None  # g's determinized automaton (set by the plan, with the query's symbols)
    left_frame: int = -1  # the scope of f (labels g reads from f's complex event)
    # Allocated by Registers:
    local: tuple[int, ...] = ()
    local_initial: tuple = ()
    configs_slot: int = -1
    hit_slot: int = -1
    tentative_slot: int = -1
    confirmed_slot: int = -1
    # Matches of g, found within f, that read labels defined outside the UNLESS which may still
    # get events after f ends: decided when those are complete (the end of their scope's
    # instance, or the gate). Entries (g's local values, values of scopes that ended since).
    deferred_slot: int = -1
    outside: tuple = ()  # (site, label) of the labels g reads from outside the UNLESS
    outside_homes: tuple[int, ...] = ()  # their repeated scopes, innermost first
    outside_root: bool = False  # some is read from the whole complex event


@dataclass
class Site:
    """One condition decided on registers (see the module docstring)."""

    index: int
    text: str  # the condition as written, for explain
    atoms: list[Atom]
    tree: Any  # ("atom", i) | ("and", parts) | ("or", parts) | ("not", part)
    aggregates: list[AggregateRegister]
    own_roles: dict[str, Role]
    free_roles: dict[str, Role]
    star_label: str | None  # \x00N:* when some atom or aggregate reads every event of f
    end_label: str | None  # \x00N:end when an instance's end must be known
    top: bool  # one instance in every derivation: decided at the gate
    single_free: frozenset[str] = frozenset()  # free labels with at most one event per CE
    conjunctive: bool = False  # an AND of monotone atoms: decided as events arrive
    where: str = ""  # how it is decided (for explain)
    #: The condition as written (ast.Cond) for a FILTER site, ``NOT (cond)`` for the read of
    #: an event by ``NOT(E FILTER cond)``, the keys (tuple of ast.Attr) for a PARTITION BY site
    #: (engines that check whole complex events read it, runtime/kernel/postfilter.py).
    source: Any = None
    # Allocated by Registers:
    instance_slots: list[int] = field(default_factory=list)
    started_slot: int = -1
    armed_slot: int = -1
    pending_slot: int = -1
    free_count_slots: dict[str, int] = field(default_factory=dict)

    @property
    def event_labels(self) -> set[str]:
        labels = {role.event_label for role in self.own_roles.values()}
        labels |= {role.event_label for role in self.free_roles.values()}
        if self.star_label:
            labels.add(self.star_label)
        if self.end_label:
            labels.add(self.end_label)
        return labels

    @property
    def root_free(self) -> bool:
        """Whether some free label is read from the whole complex event."""
        return any(role.home is None for role in self.free_roles.values())

    def truth(self, v: list) -> bool:
        return _evaluate(self.tree, self.atoms, v)

    def possible(self, v: list) -> frozenset:
        return _possible(self.tree, self.atoms, v)


def _evaluate(tree: Any, atoms: list[Atom], v: list) -> bool:
    kind = tree[0]
    if kind == "atom":
        return atoms[tree[1]].value(v)
    if kind == "and":
        return all(_evaluate(part, atoms, v) for part in tree[1])
    if kind == "or":
        return any(_evaluate(part, atoms, v) for part in tree[1])
    return not _evaluate(tree[1], atoms, v)


def _possible(tree: Any, atoms: list[Atom], v: list) -> frozenset:
    kind = tree[0]
    if kind == "atom":
        return atoms[tree[1]].future(v)
    if kind == "not":
        return frozenset(not value for value in _possible(tree[1], atoms, v))
    parts = [_possible(part, atoms, v) for part in tree[1]]
    if kind == "and":
        can_true = all(True in p for p in parts)
        can_false = any(False in p for p in parts)
    else:
        can_true = any(True in p for p in parts)
        can_false = all(False in p for p in parts)
    return frozenset(value for value, ok in ((True, can_true), (False, can_false)) if ok)


class Registers:
    """The register layout and the per-label-set programs of a query's sites.

    Decision points: an event of a site's own labels may rule it out early; the end of a site's
    instance decides it when every free label it reads is complete, else keeps a snapshot of
    its registers (``pending``); the end of a repeated home adds that home's values to the
    snapshots that read it and decides those whose last home it is; the gate decides the rest
    when a run reaches a final state."""

    def __init__(
        self,
        sites: list[Site],
        attributes: list[str],
        homes: list[Home] | None = None,
        tracked: list[Tracked] | None = None,
    ) -> None:
        self.attributes = attributes  # the event values a program reads, in this order
        self.homes = {home.index: home for home in homes or ()}
        self.tracked = list(tracked or ())
        inside = {id(site) for u in self.tracked for site in u.sites}
        local_homes = frozenset(frame for u in self.tracked for frame in u.frames)
        layout = Layout()
        home_slots: dict[int, list[int]] = {index: [] for index in self.homes}
        taken: dict[int, list[tuple[int, tuple]]] = {}
        for site in sites:
            instance: list[int] = []
            alloc = Allocator(layout, instance, home_slots, local_homes)
            for atom in site.atoms:
                atom.allocate(alloc)
            for register in site.aggregates:
                register.allocate(alloc)
            site.started_slot = alloc.take_in(("site",), False)
            site.instance_slots = instance
            site.armed_slot = alloc.take_in(("own",), False)
            site.pending_slot = alloc.take_in(("own",), ())
            for label, role in site.free_roles.items():
                site.free_count_slots[label] = alloc.take(role, 0)
            taken[id(site)] = alloc.taken
        for u in self.tracked:
            # g's own slots: everything its sites take but the summaries of labels read outside g.
            u.local = tuple(
                slot
                for site in u.sites
                for slot, group in taken[id(site)]
                if group[0] in ("site", "own", "local") or (group[0] == "home" and group[1] in u.frames)
            )
            u.local_initial = tuple(layout.initial[slot] for slot in u.local)
            u.configs_slot = layout.take(frozenset())
            u.hit_slot = layout.take(False)
            u.tentative_slot = layout.take(())
            u.confirmed_slot = layout.take(())
            u.deferred_slot = layout.take(())
            from_f = f"\x00H{u.left_frame}:"
            outside = [
                (site, label, role)
                for site in u.sites
                for label, role in site.free_roles.items()
                if role.home not in u.frames and role.event_label != from_f + label
            ]
            u.outside = tuple((site, label) for site, label, _ in outside)
            u.outside_homes = tuple(
                sorted({role.home for _, _, role in outside if role.home in self.homes}, key=lambda h: -self.homes[h].depth)
            )
            u.outside_root = any(role.home not in self.homes for _, _, role in outside)
        self.sites = [site for site in sites if id(site) not in inside]  # the outer sites
        self.all_sites = sites
        self.initial = tuple(layout.initial)
        self._instance_initial = {
            site.index: [(slot, layout.initial[slot]) for slot in site.instance_slots] for site in sites
        }
        # Outer label sets also update the summaries that g's conditions read from outside.
        self._outer_sites = sites
        self._home_initial = {
            index: [(slot, layout.initial[slot]) for slot in slots] for index, slots in home_slots.items()
        }
        self._inside_programs: dict[tuple, Callable | None] = {}
        self._home_slots = {index: set(slots) for index, slots in home_slots.items()}
        # Sites whose snapshots read a home, and the last home each snapshot waits for.
        self._site_homes = {
            site.index: sorted(
                {role.home for role in site.free_roles.values() if role.home in self.homes},
                key=lambda h: -self.homes[h].depth,
            )
            for site in sites
        }
        self._programs: dict[tuple, Callable | None] = {}
        self.gated = [site for site in self.sites if site.top or not site.conjunctive]
        self.key: tuple | None = None  # the first equality index key (set by the compiler)
        self.keys: tuple = ()  # every equality index key (set by the compiler)

    def __len__(self) -> int:
        return len(self.initial)

    def portable(self, v: tuple) -> tuple:
        """Register values with g's runs written by their automaton states (determinized state
        numbers are private to a process), for saving."""
        if not self.tracked:
            return v
        out = list(v)
        for u in self.tracked:
            out[u.configs_slot] = frozenset(
                (frozenset(u.det.subsets[state]), local) for state, local in v[u.configs_slot]
            )
        return tuple(out)

    def restore(self, v: tuple) -> tuple | None:
        """The inverse of ``portable``; None if a saved run of g is impossible."""
        if not self.tracked:
            return v
        out = list(v)
        for u in self.tracked:
            configs = v[u.configs_slot]
            if not isinstance(configs, frozenset):
                return None
            restored = set()
            for item in configs:
                if not (isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], frozenset)):
                    return None
                subset, local = item
                if not subset or not all(u.machine.valid(state) for state in subset):
                    return None
                if not isinstance(local, tuple) or len(local) != len(u.local):
                    return None
                restored.add((u.det.intern(subset), local))
            out[u.configs_slot] = frozenset(restored)
        return tuple(out)

    def step(self, labels: tuple[str, ...]) -> Callable | None:
        """The register program of transitions reporting ``labels`` (None: nothing to do)."""
        found = self._programs.get(labels, False)
        if found is not False:
            return found  # type: ignore[return-value]
        found = self._compile(labels)
        self._programs[labels] = found
        return found

    def _actions(self, labels: tuple[str, ...], sites: list[Site], tracked: bool) -> list[Callable]:
        present = frozenset(labels)
        actions = [self._site_action(site, present) for site in sites if present & site.event_labels]
        ending = [
            home for home in sorted(self.homes.values(), key=lambda h: -h.depth) if home.end_label in present
        ]
        if tracked:
            # Before the scopes that end here are reset: a match of g decided at f's end
            # reads the values of f's instance that this event ends.
            for u in self.tracked:
                actions += self._tracked_actions(u, present)
        actions += [self._home_action(home) for home in ending]
        return actions

    def _compile(self, labels: tuple[str, ...]) -> Callable | None:
        actions = self._actions(labels, self._outer_sites, True)
        if not actions:
            return None

        def program(v: tuple, values: tuple, mask: int, symbol: int = -1) -> tuple | None:
            registers = list(v)
            for action in actions:
                if not action(registers, values, mask, symbol):
                    return None
            return tuple(registers)

        return program

    def step_inside(self, u: Tracked, labels: tuple[str, ...]) -> Callable | None:
        """The program of g's transitions reporting ``labels`` (on a full register list)."""
        key = (u.index, labels)
        found = self._inside_programs.get(key, False)
        if found is not False:
            return found  # type: ignore[return-value]
        actions = self._actions(labels, u.sites, False)
        found = None
        if actions:

            def found(v: list, values: tuple, mask: int, symbol: int) -> bool:
                for action in actions:
                    if not action(v, values, mask, symbol):
                        return False
                return True

        self._inside_programs[key] = found
        return found

    def _tracked_actions(self, u: Tracked, present: frozenset[str]) -> list[Callable]:
        """start: g's runs begin at f's first reported event; tick: they read the event (a
        match of g is a hit, or waits for f's labels); rep: f may not report after a hit;
        end: f ends, g's waiting matches are decided."""
        out: list[Callable] = []
        labels = u.labels
        if labels["start"] in present:

            def start(v: list, values: tuple, mask: int, symbol: int) -> bool:
                v[u.configs_slot] = frozenset({(u.det.initial, u.local_initial)})
                v[u.hit_slot] = False
                v[u.tentative_slot] = ()
                v[u.confirmed_slot] = ()
                return True

            out.append(start)
        if labels["tick"] in present:
            out.append(lambda v, values, mask, symbol: self._tick(u, v, values, mask, symbol))
        if labels["rep"] in present:

            def rep(v: list, values: tuple, mask: int, symbol: int) -> bool:
                if v[u.hit_slot]:
                    return False
                if v[u.tentative_slot]:
                    v[u.confirmed_slot] = v[u.confirmed_slot] + v[u.tentative_slot]
                    v[u.tentative_slot] = ()
                return True

            out.append(rep)
        if labels["end"] in present:

            def end(v: list, values: tuple, mask: int, symbol: int) -> bool:
                deferred = []
                for local in v[u.confirmed_slot]:
                    if self._waits_outside(u, v, local):
                        deferred.append((local, ()))
                    elif self._match_holds(u, v, local):
                        return False
                if deferred:
                    v[u.deferred_slot] = v[u.deferred_slot] + tuple(deferred)
                v[u.configs_slot] = frozenset()
                v[u.hit_slot] = False
                v[u.tentative_slot] = ()
                v[u.confirmed_slot] = ()
                return True

            out.append(end)
        return out

    def _with_local(self, u: Tracked, v: list, local: tuple) -> list:
        full = list(v)
        for slot, value in zip(u.local, local):
            full[slot] = value
        return full

    def _match_holds(self, u: Tracked, v: list | tuple, local: tuple, folded: tuple = ()) -> bool:
        """Whether a match of g (its local values; ``folded``: values of scopes that have ended
        since) satisfies g's conditions, read on the registers ``v``."""
        full = self._with_local(u, v, local)
        for slot, value in folded:
            full[slot] = value
        for site in u.sites:
            # A condition decided as events arrive may read labels that got events since.
            if site.conjunctive and not site.top and (full[site.started_slot] or full[site.armed_slot]):
                if not site.truth(full):
                    return False
        return self._gate_sites(u.sites, full)

    @staticmethod
    def _takes_part(site: Site, full: list) -> bool:
        """Whether a site of g is part of the match (its formula was read)."""
        return bool(site.top or full[site.pending_slot] or full[site.started_slot] or full[site.armed_slot])

    def _waits_outside(self, u: Tracked, v: list, local: tuple) -> bool:
        """Whether a match of g reads a label defined outside the UNLESS that may still get
        events (it is then decided later: ``_deferred``)."""
        if not u.outside:
            return False
        full = self._with_local(u, v, local)
        for site, label in u.outside:
            if not self._takes_part(site, full):
                continue
            if label not in site.single_free or full[site.free_count_slots[label]] == 0:
                return True
        return False

    def _deferred(self, v: list | tuple, home: int | None) -> bool:
        """Decide the deferred matches of g whose labels are complete: at the end of an
        instance of the scope ``home`` (its values are folded into the matches that read it),
        or at the gate (None). False if one holds (the complex event is excluded)."""
        for u in self.tracked:
            entries = v[u.deferred_slot]
            if not entries:
                continue
            if home is None:
                for local, folded in entries:
                    if self._match_holds(u, v, local, folded):
                        return False
                continue
            if home not in u.outside_homes:
                continue
            slots = self._home_initial[home]
            last = u.outside_homes[-1] == home and not u.outside_root
            kept = []
            for local, folded in entries:
                if slots and not any(slot == slots[0][0] for slot, _ in folded):
                    # The first instance of the scope that ends after the match is its own.
                    folded = folded + tuple((slot, v[slot]) for slot, _ in slots)
                if last:
                    if self._match_holds(u, v, local, folded):
                        return False
                else:
                    kept.append((local, folded))
            v[u.deferred_slot] = tuple(kept)  # type: ignore[index]
        return True

    def _tick(self, u: Tracked, v: list, values: tuple, mask: int, symbol: int) -> bool:
        det = u.det
        configs = v[u.configs_slot]
        if not configs:
            return True
        moved = set()
        for state, local in configs:
            moves = det.cache.get((state, symbol))
            if moves is None:
                moves = det.step(state, symbol)
            for labels, target in moves:
                if labels is None:
                    next_local = local
                else:
                    program = self.step_inside(u, labels)
                    if program is None:
                        next_local = local
                    else:
                        full = self._with_local(u, v, local)
                        if not program(full, values, mask, symbol):
                            continue
                        next_local = tuple(full[slot] for slot in u.local)
                if det.final[target]:
                    if self._conditional(u, v, next_local):
                        v[u.tentative_slot] = v[u.tentative_slot] + (next_local,)
                    elif self._match_holds(u, v, next_local):
                        v[u.hit_slot] = True
                moved.add((target, next_local))
        v[u.configs_slot] = frozenset(moved)
        return True

    def _conditional(self, u: Tracked, v: list, local: tuple) -> bool:
        """Whether a match of g still depends on labels of f that may get more events."""
        full = self._with_local(u, v, local)
        for site in u.sites:
            outside = [label for label, role in site.free_roles.items() if role.home not in u.frames]
            if not outside:
                continue
            if not self._takes_part(site, full):
                continue
            for label in outside:
                if label not in site.single_free or full[site.free_count_slots[label]] == 0:
                    return True
        return False

    def _site_action(self, site: Site, present: frozenset[str]) -> Callable:
        own_event = any(role.event_label in present for role in site.own_roles.values()) or (
            site.star_label is not None and site.star_label in present
        )
        free_present = [label for label, role in site.free_roles.items() if role.event_label in present]
        atoms = [
            atom
            for atom in site.atoms
            if any(role.event_label in present for role in atom.roles)
            or (site.star_label is not None and site.star_label in present and _reads_star(atom, site.star_label))
        ]
        aggregates = [r for r in site.aggregates if r.event_label in present]
        ending = site.end_label is not None and site.end_label in present
        started, armed = site.started_slot, site.armed_slot
        free_counts = [site.free_count_slots[label] for label in free_present]
        conjunctive = site.conjunctive
        instance_initial = self._instance_initial[site.index]

        def action(v: list, values: tuple, mask: int, symbol: int = -1) -> bool:
            for atom in atoms:
                atom.update(v, present, values, mask)
            for register in aggregates:
                register.update(v, values)
            for slot in free_counts:
                v[slot] += 1
            if own_event:
                v[started] = True
            # Early decisions: only once the site is known to be part of this derivation.
            if v[started] or v[armed]:
                if conjunctive:
                    for atom in atoms:
                        if not atom.value(v):
                            return False
                elif True not in site.possible(v):
                    return False
            if ending:
                return self._end(site, v, instance_initial)
            return True

        return action

    def _end(self, site: Site, v: list, instance_initial: list) -> bool:
        """An instance of the site's formula ends: decide it now if everything it reads is
        known, else keep a snapshot of its registers; then reset them for the next instance."""
        if site.conjunctive:
            if not site.truth(v):
                return False
            if site.free_roles:
                v[site.armed_slot] = True
            merged = self._merged_slots(site)
            for slot, initial in instance_initial:
                if slot not in merged:
                    v[slot] = initial
            return True
        if self._complete(site, v):
            if not site.truth(v):
                return False
        else:
            snapshot = tuple((slot, v[slot]) for slot, _ in instance_initial)
            v[site.pending_slot] = v[site.pending_slot] + (snapshot,)
        for slot, initial in instance_initial:
            v[slot] = initial
        return True

    def _home_action(self, home: Home) -> Callable:
        """A repeated home's instance ends: its values join the snapshots that read it; the
        snapshots it is the last home of are decided; its slots reset."""
        dependent = [site for site in self.sites if home.index in self._site_homes[site.index]]
        initial = self._home_initial[home.index]
        slots = [slot for slot, _ in initial]

        deferring = any(home.index in u.outside_homes for u in self.tracked)

        def action(v: list, values: tuple, mask: int, symbol: int = -1) -> bool:
            if deferring and not self._deferred(v, home.index):
                return False
            for site in dependent:
                snapshots = v[site.pending_slot]
                if snapshots:
                    homes = self._site_homes[site.index]
                    last = homes[-1] == home.index and not site.root_free
                    kept = []
                    for snapshot in snapshots:
                        folded = snapshot + tuple((slot, v[slot]) for slot in slots)
                        if last:
                            if not self._decide(site, v, folded):
                                return False
                        else:
                            kept.append(folded)
                    v[site.pending_slot] = tuple(kept)
                if site.conjunctive:
                    v[site.armed_slot] = False
            for slot, value in initial:
                v[slot] = value
            return True

        return action

    def _decide(self, site: Site, v: list, snapshot: tuple) -> bool:
        saved = [(slot, v[slot]) for slot, _ in snapshot]
        for slot, value in snapshot:
            v[slot] = value
        try:
            return site.truth(v)
        finally:
            for slot, value in saved:
                v[slot] = value

    def _merged_slots(self, site: Site) -> set[int]:
        """Slots of atoms that read a free label: universal over the union of the site's
        instances, so they are not reset with the instance."""
        merged = getattr(site, "_merged", None)
        if merged is None:
            merged = set()
            for atom in site.atoms:
                if any(not role.own for role in atom.roles):
                    merged.update(_atom_slots(atom))
            site._merged = merged  # type: ignore[attr-defined]
        return merged

    def _complete(self, site: Site, v: list) -> bool:
        """Whether every free label the site reads can get no more events in this CE."""
        for label in site.free_roles:
            if label not in site.single_free or v[site.free_count_slots[label]] == 0:
                return False
        return True

    def gate(self, v: tuple) -> bool:
        """Whether a run that reaches a final state may report (decides what is left)."""
        return self._gate_sites(self.gated, v) and (not self.tracked or self._deferred(v, None))

    def _gate_sites(self, sites: list[Site], v: tuple | list) -> bool:
        registers = None
        for site in sites:
            if site.conjunctive and not site.top:
                continue
            if site.top and not site.end_label:
                if registers is None:
                    registers = list(v)
                if not site.truth(registers):
                    return False
                continue
            snapshots = v[site.pending_slot]
            if not snapshots:
                continue
            if registers is None:
                registers = list(v)
            for snapshot in snapshots:
                if not self._decide(site, registers, snapshot):
                    return False
        return True


def _reads_star(atom: Atom, star_label: str) -> bool:
    return any(role.event_label == star_label for role in atom.roles)


def _atom_slots(atom: Atom) -> Iterable[int]:
    if hasattr(atom, "slot_list"):
        yield from atom.slot_list
        return
    if hasattr(atom, "slot"):
        yield atom.slot
    if hasattr(atom, "slots"):
        slots = atom.slots
        yield from slots.values() if isinstance(slots, dict) else slots
