"""Complex event automata with label sets (UCEA), built per formula operator.

Every formula node becomes a *machine*: initial states, final states, and for each state its
transitions ``(guard, labels, target)``. A transition with an empty label set reads an event
without reporting it; a non-empty set reports the event under those labels. The constructions
follow the SO-CEL paper (appendix C.1, with the errata fixes of the notes: the ``:+`` self-loop
on the dummy state, labelled first transitions after ``:``), plus products for AND and ALL and
the corrected UNLESS construction, all epsilon-free.

``moves(state, symbol)`` gives the transitions of a state: symbolically (``symbol`` None:
guards as written, for ``explain`` and static analysis) or for one concrete event symbol
``(type name, predicate mask)`` (only the transitions it enables, with TRUE guards). Both modes
share one implementation per operator, so they cannot disagree.

States are plain ints for the base constructions. Products (AND, ALL, UNLESS) use tuples whose
first item is the product's tag; a machine owns the ints in ``[lo, hi)`` and the tuples tagged
with them, so sub-machines never share states. Transitions are computed on demand (a machine
may have exponentially many reachable states in theory); the determinizer caches them.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable

from ceql.compile import guards
from ceql.compile.guards import Guard
from ceql.errors import UnsupportedQueryError

State = object
Transition = tuple  # (Guard, frozenset[str], State)
EMPTY_LABELS: frozenset[str] = frozenset()
_TOP = "done"  # an ALL component that has finished
_MAX_UNLESS_GUARDS = 6  # symbolic UNLESS moves split on at most 2^6 guard combinations


class Counter:
    """Allocates state numbers; sub-machines built in sequence get contiguous ranges."""

    def __init__(self) -> None:
        self.next = 0

    def take(self) -> int:
        self.next += 1
        return self.next - 1


class Machine:
    """Base class: subclasses define ``initial``, ``final`` and ``transitions``."""

    lo: int
    hi: int

    def owns(self, state: State) -> bool:
        key = state[0] if isinstance(state, tuple) else state
        return self.lo <= key < self.hi  # type: ignore[operator]

    def initial(self) -> tuple:
        raise NotImplementedError

    def final(self, state: State) -> bool:
        raise NotImplementedError

    def moves(self, state: State, symbol: tuple | None = None) -> tuple:
        raise NotImplementedError

    def kind(self) -> str:
        return type(self).__name__


class OneEvent(Machine):
    """Skip any events, then read one event satisfying ``guard``, reported under ``labels``."""

    def __init__(self, counter: Counter, guard: Guard, labels: frozenset) -> None:
        self.lo = counter.take()
        self.end = counter.take()
        self.hi = counter.next
        self.guard = guard
        self.labels = labels

    def initial(self) -> tuple:
        return (self.lo,)

    def final(self, state: State) -> bool:
        return state == self.end

    def moves(self, state: State, symbol: tuple | None = None) -> tuple:
        if state != self.lo:
            return ()
        return _select(((guards.TRUE, EMPTY_LABELS, self.lo), (self.guard, self.labels, self.end)), symbol)


def atom(counter: Counter, type_name: str) -> OneEvent:
    """``E``: skip any events, then report one event of type E (labelled E)."""
    return OneEvent(counter, guards.type_is(type_name), frozenset({type_name}))


def not_atom(counter: Counter, matched: Guard) -> OneEvent:
    """``NOT(a)``: skip any events, then read (without reporting) one event that is not ``a``."""
    return OneEvent(counter, guards.negation(matched), EMPTY_LABELS)


class Wrapper(Machine):
    """A machine over the states of one child, with transformed transitions."""

    def __init__(self, child: Machine) -> None:
        self.child = child
        self.lo, self.hi = child.lo, child.hi

    def initial(self) -> tuple:
        return self.child.initial()

    def final(self, state: State) -> bool:
        return self.child.final(state)


class LabelWith(Wrapper):
    """``f AS x``: every reported event is also labelled x."""

    def __init__(self, child: Machine, label: str) -> None:
        super().__init__(child)
        self.label = label

    def moves(self, state: State, symbol: tuple | None = None) -> tuple:
        return tuple(
            (g, labels | {self.label} if labels else labels, t)
            for g, labels, t in self.child.moves(state, symbol)
        )


class MarkEnds(Wrapper):
    """Adds a label to the transitions that end a match of the child (its last reported event),
    so that a complex event can be cut into the iterations of an enclosing ``+``."""

    def __init__(self, child: Machine, label: str) -> None:
        super().__init__(child)
        self.label = label

    def moves(self, state: State, symbol: tuple | None = None) -> tuple:
        return tuple(
            (g, labels | {self.label} if labels and self.child.final(t) else labels, t)
            for g, labels, t in self.child.moves(state, symbol)
        )


class Restrict(Wrapper):
    """``f FILTER x[p] AND ...`` (unary, universal): every event labelled x must satisfy p."""

    def __init__(self, child: Machine, required: dict[str, frozenset[int]]) -> None:
        super().__init__(child)
        self.required = required

    def moves(self, state: State, symbol: tuple | None = None) -> tuple:
        out = []
        for g, labels, t in self.child.moves(state, symbol):
            extra = set()
            for label in labels:
                extra |= self.required.get(label, frozenset())
            if extra:
                if symbol is not None:
                    mask = symbol[1]
                    if not all((mask >> pid) & 1 for pid in extra):
                        continue
                else:
                    g = g | frozenset(("P", pid) for pid in extra)
            out.append((g, labels, t))
        return tuple(out)


class Union(Machine):
    """``f OR g``: disjoint union."""

    def __init__(self, parts: list[Machine]) -> None:
        self.parts = parts
        self.lo, self.hi = parts[0].lo, parts[-1].hi

    def owner(self, state: State) -> Machine:
        for part in self.parts:
            if part.owns(state):
                return part
        raise KeyError(state)

    def initial(self) -> tuple:
        return tuple(s for part in self.parts for s in part.initial())

    def final(self, state: State) -> bool:
        return self.owner(state).final(state)

    def moves(self, state: State, symbol: tuple | None = None) -> tuple:
        return self.owner(state).moves(state, symbol)


class Sequence(Machine):
    """``f ; g`` (contiguous False) or ``f : g`` (contiguous True)."""

    def __init__(self, counter: Counter, left: Machine, right: Machine, contiguous: bool) -> None:
        self.left, self.right, self.contiguous = left, right, contiguous
        self.lo = left.lo
        self.dummy = counter.take() if contiguous else None
        self.hi = counter.next

    def initial(self) -> tuple:
        return self.left.initial()

    def final(self, state: State) -> bool:
        return self.right.owns(state) and self.right.final(state)

    def moves(self, state: State, symbol: tuple | None = None) -> tuple:
        if self.left.owns(state):
            out = list(self.left.moves(state, symbol))
            for g, labels, t in tuple(out):
                if not self.left.final(t):
                    continue
                if not self.contiguous:
                    out.extend((g, labels, i) for i in self.right.initial())
                elif labels:
                    out.append((g, labels, self.dummy))
            return tuple(out)
        if state == self.dummy:
            # The right side starts right here, with a reported event (no gap).
            return tuple(
                (g, labels, t)
                for i in self.right.initial()
                for g, labels, t in self.right.moves(i, symbol)
                if labels
            )
        return self.right.moves(state, symbol)


class Iteration(Machine):
    """``f+`` (contiguous False) or ``f:+`` (contiguous True)."""

    def __init__(self, counter: Counter, body: Machine, contiguous: bool) -> None:
        self.body, self.contiguous = body, contiguous
        self.lo = body.lo
        self.dummy = counter.take() if contiguous else None
        self.hi = counter.next

    def initial(self) -> tuple:
        return self.body.initial()

    def final(self, state: State) -> bool:
        return state != self.dummy and self.body.final(state)

    def moves(self, state: State, symbol: tuple | None = None) -> tuple:
        if state == self.dummy:
            first = [
                (g, labels, t)
                for i in self.body.initial()
                for g, labels, t in self.body.moves(i, symbol)
                if labels
            ]
            # A one-event body that ends right away may iterate again at once (errata fix).
            loops = [(g, labels, self.dummy) for g, labels, t in first if self.body.final(t)]
            return tuple(first + loops)
        out = list(self.body.moves(state, symbol))
        for g, labels, t in tuple(out):
            if not self.body.final(t):
                continue
            if not self.contiguous:
                out.extend((g, labels, i) for i in self.body.initial())
            elif labels:
                out.append((g, labels, self.dummy))
        return tuple(out)


class Tagged(Machine):
    """A machine over two sub-machines whose states are tuples starting with its own tag."""

    def __init__(self, counter: Counter, left: Machine, right: Machine) -> None:
        self.left, self.right = left, right
        self.lo = left.lo
        self.tag = counter.take()
        self.hi = counter.next

    def owns(self, state: State) -> bool:
        return isinstance(state, tuple) and state[0] == self.tag


class Product(Tagged):
    """Common part of AND and ALL: states are (tag, left state, right state)."""

    def initial(self) -> tuple:
        return tuple((self.tag, a, b) for a in self.left.initial() for b in self.right.initial())


class Conjunction(Product):
    """``f AND g``: both match, reporting exactly the same events."""

    def final(self, state: State) -> bool:
        return self.left.final(state[1]) and self.right.final(state[2])

    def moves(self, state: State, symbol: tuple | None = None) -> tuple:
        out = []
        for g1, l1, t1 in self.left.moves(state[1], symbol):
            for g2, l2, t2 in self.right.moves(state[2], symbol):
                if bool(l1) != bool(l2):
                    continue
                g = guards.conjoin(g1, g2)
                if g is not None:
                    out.append((g, l1 | l2, (self.tag, t1, t2)))
        return tuple(out)


class AllOf(Product):
    """``f ALL g``: both match from the same start, in any order, possibly overlapping; the
    complex event is reported when the later of the two ends."""

    def _moves(self, machine: Machine, state: State, symbol: tuple | None) -> Iterable[tuple]:
        if state == _TOP:
            yield (guards.TRUE, EMPTY_LABELS, _TOP)
            return
        for g, labels, t in machine.moves(state, symbol):
            yield (g, labels, t)
            if machine.final(t):
                yield (g, labels, _TOP)

    def final(self, state: State) -> bool:
        a, b = state[1], state[2]
        if a == _TOP and b == _TOP:
            return False
        return (a == _TOP or self.left.final(a)) and (b == _TOP or self.right.final(b))

    def moves(self, state: State, symbol: tuple | None = None) -> tuple:
        out = []
        right_moves = list(self._moves(self.right, state[2], symbol))
        for g1, l1, t1 in self._moves(self.left, state[1], symbol):
            for g2, l2, t2 in right_moves:
                if t1 == _TOP and t2 == _TOP:
                    continue
                g = guards.conjoin(g1, g2)
                if g is not None:
                    out.append((g, l1 | l2, (self.tag, t1, t2)))
        return tuple(out)


class Unless(Tagged):
    """``f UNLESS g``: f's runs, killed when g has a match between f's first reported event and
    one that f reports later. States are (tag, f state, g subset or None, hit): the subset tracks
    g's runs started at f's first reported event (None before it); ``hit`` records that g has
    already matched, so that f may no longer report events (but may still finish unreported)."""

    def initial(self) -> tuple:
        return tuple((self.tag, a, None, False) for a in self.left.initial())

    def final(self, state: State) -> bool:
        return self.left.final(state[1])

    def _right_successors(
        self, subset: Iterable[State], symbol: tuple | None
    ) -> list[tuple[Guard, frozenset]]:
        """g's successor subset: for a concrete symbol the one subset; symbolically, one case per
        combination of the guards of g's transitions: (guard of the case, successor subset)."""
        moves = [(g, t) for s in subset for g, _, t in self.right.moves(s, symbol)]
        if symbol is not None:
            return [(guards.TRUE, frozenset(t for _, t in moves))]
        distinct = sorted({g for g, _ in moves if g}, key=repr)
        always = frozenset(t for g, t in moves if not g)
        if len(distinct) > _MAX_UNLESS_GUARDS:
            raise UnsupportedQueryError(
                f"the right side of UNLESS is too complex ({len(distinct)} distinct guards; "
                f"at most {_MAX_UNLESS_GUARDS})"
            )
        cases = []
        for truth in itertools.product((True, False), repeat=len(distinct)):
            guard: Guard | None = guards.TRUE
            for g, value in zip(distinct, truth):
                guard = guards.conjoin(guard, g if value else guards.negation(g))
                if guard is None:
                    break
            if guard is None:
                continue
            chosen = {g for g, value in zip(distinct, truth) if value}
            targets = always | frozenset(t for g, t in moves if g in chosen)
            cases.append((guard, targets))
        return cases

    def moves(self, state: State, symbol: tuple | None = None) -> tuple:
        _, a, subset, hit = state
        out = []
        for g1, labels, t1 in self.left.moves(a, symbol):
            if subset is None and not labels:
                out.append((g1, labels, (self.tag, t1, None, False)))
                continue
            if hit:
                if not labels:
                    out.append((g1, labels, (self.tag, t1, frozenset(), True)))
                continue
            source = self.right.initial() if subset is None else subset
            for case_guard, targets in self._right_successors(source, symbol):
                g = guards.conjoin(g1, case_guard)
                if g is None:
                    continue
                matched = any(self.right.final(t) for t in targets)
                if matched and labels:
                    continue  # g matched within the span that f is reporting
                if matched:
                    out.append((g, labels, (self.tag, t1, frozenset(), True)))
                else:
                    out.append((g, labels, (self.tag, t1, targets, False)))
        return tuple(out)


def _select(transitions: tuple, symbol: tuple | None) -> tuple:
    """All transitions (symbolic) or those a concrete symbol enables, with TRUE guards."""
    if symbol is None:
        return transitions
    type_name, mask = symbol
    return tuple((guards.TRUE, labels, t) for g, labels, t in transitions if guards.holds(g, type_name, mask))


def reachable_states(machine: Machine, limit: int) -> list[State] | None:
    """All states reachable from the initial ones (ignoring guards), or None past ``limit``
    states (or ``10 * limit`` transitions)."""
    seen = dict.fromkeys(machine.initial())
    frontier = list(seen)
    budget = 10 * limit
    while frontier:
        state = frontier.pop()
        try:
            moves = machine.moves(state)
        except UnsupportedQueryError:
            return None
        budget -= len(moves)
        if budget < 0:
            return None
        for _, _, target in moves:
            if target not in seen:
                seen[target] = None
                if len(seen) > limit:
                    return None
                frontier.append(target)
    return list(seen)
