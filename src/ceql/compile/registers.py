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
    """Register slots: their initial values and which site instance resets them."""

    initial: list = field(default_factory=list)

    def take(self, initial: Any = UNSET) -> int:
        self.initial.append(initial)
        return len(self.initial) - 1


@dataclass(frozen=True)
class Role:
    """The events one label contributes to an atom of one site."""

    label: str  # as written in the query
    event_label: str  # carried by the transitions: private copy (own) or the label (free)
    own: bool


class Atom:
    """Base class. ``roles`` are the labels quantified over; ``update`` folds an event in."""

    roles: tuple[Role, ...] = ()
    monotone = True  # true -> false only, as events are added

    def allocate(self, layout: Layout, instance: list[int]) -> None:
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

    def _slot(self, layout: Layout, instance: list[int], role_or_own: bool, initial: Any = UNSET) -> int:
        slot = layout.take(initial)
        if role_or_own:
            instance.append(slot)
        return slot


class ConstAtom(Atom):
    """A comparison of constants."""

    def __init__(self, truth: bool) -> None:
        self.truth = truth

    def allocate(self, layout: Layout, instance: list[int]) -> None:
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

    def allocate(self, layout: Layout, instance: list[int]) -> None:
        self.slot = self._slot(layout, instance, self.roles[0].own, True)

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

    def allocate(self, layout: Layout, instance: list[int]) -> None:
        self.slots = tuple(self._slot(layout, instance, role.own) for role in self.roles)

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
            elif isinstance(current, str) != isinstance(value, str):
                v[slot] = POISON
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
    labels that every instance has): a missing value or a second value breaks it."""

    def __init__(self, members: list[tuple[Role, Callable]]) -> None:
        self.members = members
        self.roles = tuple(dict.fromkeys(role for role, _ in members))

    def allocate(self, layout: Layout, instance: list[int]) -> None:
        self.slot = self._slot(layout, instance, any(role.own for role in self.roles))

    def update(self, v, present, values, mask) -> None:
        current = v[self.slot]
        if current is POISON:
            return
        for role, fn in self.members:
            if role.event_label not in present:
                continue
            value = fn(values)
            if _bad(value):
                current = POISON
                break
            if current is UNSET:
                current = value
            elif value != current or isinstance(value, str) != isinstance(current, str):
                current = POISON
                break
        v[self.slot] = current

    def value(self, v: list) -> bool:
        return v[self.slot] is not POISON


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

    def allocate(self, layout: Layout, instance: list[int]) -> None:
        self.slots = {role.label: self._slot(layout, instance, role.own, ()) for role in self.roles}

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

    def allocate(self, layout: Layout, instance: list[int]) -> None:
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
        self.own = role.own if role is not None else True

    def allocate(self, layout: Layout, instance: list[int]) -> None:
        func = self.node.func
        initial: Any = 0 if func == "COUNT" else UNSET
        self.slot = layout.take(initial)
        if self.own:
            instance.append(self.slot)
        if func == "AVG":
            self.count_slot = layout.take(0)
            if self.own:
                instance.append(self.count_slot)

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
    end_label: str | None  # \x00N:end when f may have several instances (inside an iteration)
    top: bool  # f is the whole complex event: decided at the gate
    single_free: frozenset[str] = frozenset()  # free labels with at most one event per CE
    conjunctive: bool = False  # an AND of monotone atoms: decided as events arrive
    where: str = ""  # how it is decided (for explain)
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
    """The register layout and the per-label-set programs of a query's sites."""

    def __init__(self, sites: list[Site], attributes: list[str], key: tuple[int, str] | None = None) -> None:
        self.sites = sites
        self.attributes = attributes  # the event values a program reads, in this order
        layout = Layout()
        for site in sites:
            instance: list[int] = []
            for atom in site.atoms:
                atom.allocate(layout, instance)
            for register in site.aggregates:
                register.allocate(layout, instance)
            site.started_slot = layout.take(False)
            instance.append(site.started_slot)
            site.instance_slots = instance
            site.armed_slot = layout.take(False)
            site.pending_slot = layout.take(())
            for label in site.free_roles:
                site.free_count_slots[label] = layout.take(0)
        self.initial = tuple(layout.initial)
        self._instance_initial = {
            site.index: [(slot, layout.initial[slot]) for slot in site.instance_slots] for site in sites
        }
        self._programs: dict[tuple, Callable | None] = {}
        self.by_label: dict[str, list[Site]] = {}
        for site in sites:
            for label in site.event_labels:
                self.by_label.setdefault(label, []).append(site)
        self.gated = [site for site in sites if site.top or not site.conjunctive]
        # The equality index: (slot of a GroupAtom, attribute index) per label it constrains.
        self.key = key

    def __len__(self) -> int:
        return len(self.initial)

    def step(self, labels: tuple[str, ...]) -> Callable | None:
        """The register program of transitions reporting ``labels`` (None: nothing to do)."""
        found = self._programs.get(labels, False)
        if found is not False:
            return found  # type: ignore[return-value]
        found = self._compile(labels)
        self._programs[labels] = found
        return found

    def _compile(self, labels: tuple[str, ...]) -> Callable | None:
        present = frozenset(labels)
        sites = []
        for site in self.sites:
            if present & site.event_labels:
                sites.append(site)
        if not sites:
            return None
        actions = [self._site_action(site, present) for site in sites]

        def program(v: tuple, values: tuple, mask: int) -> tuple | None:
            registers = list(v)
            for action in actions:
                if not action(registers, values, mask):
                    return None
            return tuple(registers)

        return program

    def _site_action(self, site: Site, present: frozenset[str]) -> Callable:
        own_event = any(role.event_label in present for role in site.own_roles.values()) or (
            site.star_label is not None and site.star_label in present
        )
        free_present = [label for label, role in site.free_roles.items() if role.event_label in present]
        atoms = [atom for atom in site.atoms if any(role.event_label in present for role in atom.roles)]
        if site.star_label is not None and site.star_label in present:
            atoms = [a for a in site.atoms if a in atoms or _reads_star(a, site.star_label)]
        aggregates = [r for r in site.aggregates if r.event_label in present]
        ending = site.end_label is not None and site.end_label in present
        instance_initial = self._instance_initial[site.index]
        started, armed, pending = site.started_slot, site.armed_slot, site.pending_slot
        free_counts = [site.free_count_slots[label] for label in free_present]
        conjunctive = site.conjunctive

        def action(v: list, values: tuple, mask: int) -> bool:
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
                if not self._end(site, v, instance_initial, armed, pending):
                    return False
            return True

        return action

    def _end(self, site: Site, v: list, instance_initial: list, armed: int, pending: int) -> bool:
        """An instance of the site's formula ends: decide it now if everything it reads is
        known, else keep its registers for the gate; then reset them for the next instance."""
        if site.conjunctive:
            if not site.truth(v):
                return False
            if site.free_roles:
                v[armed] = True
        elif self._complete(site, v):
            if not site.truth(v):
                return False
        else:
            snapshot = tuple(v[slot] for slot, _ in instance_initial)
            v[pending] = v[pending] + (snapshot,)
        if site.conjunctive and site.free_roles:
            # Free comparisons keep their own-side summaries across instances (universal
            # over the union of the instances), so only the purely own atoms reset.
            for slot, initial in instance_initial:
                if slot not in self._merged_slots(site):
                    v[slot] = initial
        else:
            for slot, initial in instance_initial:
                v[slot] = initial
        return True

    def _merged_slots(self, site: Site) -> set[int]:
        merged = getattr(site, "_merged", None)
        if merged is None:
            merged = set()
            for atom in site.atoms:
                if any(not role.own for role in atom.roles):
                    for slot in _atom_slots(atom):
                        merged.add(slot)
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
        registers = None
        for site in self.gated:
            if site.top:
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
            saved = [registers[slot] for slot in site.instance_slots]
            for snapshot in snapshots:
                for slot, value in zip(site.instance_slots, snapshot):
                    registers[slot] = value
                if not site.truth(registers):
                    return False
            for slot, value in zip(site.instance_slots, saved):
                registers[slot] = value
        return True


def _reads_star(atom: Atom, star_label: str) -> bool:
    return any(role.event_label == star_label for role in atom.roles)


def _atom_slots(atom: Atom) -> Iterable[int]:
    if hasattr(atom, "slot"):
        yield atom.slot
    if hasattr(atom, "slots"):
        slots = atom.slots
        yield from slots.values() if isinstance(slots, dict) else slots
