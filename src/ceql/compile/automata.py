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

import bisect
import itertools
from collections.abc import Iterable

from ceql.compile import guards
from ceql.compile.guards import Guard
from ceql.errors import UnsupportedQueryError

State = object
Transition = tuple  # (Guard, frozenset[str], State)
EMPTY_LABELS: frozenset[str] = frozenset()


def reports(labels: frozenset[str]) -> bool:
    """Whether a transition reports its event: it carries a public label (private labels,
    which start with NUL, only tell the register programs about the derivation)."""
    for label in labels:
        if label[0] != "\x00":
            return True
    return False
_TOP = "done"  # an ALL component that has finished
_MAX_UNLESS_GUARDS = 6  # symbolic UNLESS moves split on at most 2^6 guard combinations
#: The transitions a product (AND, ALL) may build for one state, partial combinations included:
#: checked while building, so that n operands of k moves each stop long before k^n tuples fill
#: the memory (docs/limits.md).
MAX_PRODUCT_MOVES = 200_000


class ProductTooLarge(UnsupportedQueryError):
    """One state of a product (AND, ALL) has too many transitions to build."""


def _product_budget(spent: int, machine: Machine) -> None:
    if spent > MAX_PRODUCT_MOVES:
        raise ProductTooLarge(
            f"a state of the {'ALL' if isinstance(machine, AllOf) else 'AND'} of {len(machine.parts)} operands "
            f"has more than {MAX_PRODUCT_MOVES:,} transitions (every combination of its operands' moves)"
        )


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

    def valid(self, state: State) -> bool:
        """Whether ``state`` is a state of this machine (checks saved states before use)."""
        raise NotImplementedError

    def may_move(self, state: State) -> bool:
        """Whether ``state`` may have transitions (cheap; may say True for a state that has
        none, never False for one that has some)."""
        return bool(self.moves(state))


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

    def valid(self, state: State) -> bool:
        return type(state) is int and state in (self.lo, self.end)

    def may_move(self, state: State) -> bool:
        return state == self.lo

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


class NotWithRegisters(OneEvent):
    """``NOT(E FILTER c)`` where c reads other labels: an event of another type is read at
    once; an E event is read under private labels whose register program lets the read happen
    only if c does not hold (the condition is decided on registers, not on the event alone)."""

    def __init__(self, counter: Counter, type_guard: Guard, labels: frozenset) -> None:
        super().__init__(counter, type_guard, labels)

    def moves(self, state: State, symbol: tuple | None = None) -> tuple:
        if state != self.lo:
            return ()
        transitions = (
            (guards.TRUE, EMPTY_LABELS, self.lo),
            (guards.negation(self.guard), EMPTY_LABELS, self.end),
            (self.guard, self.labels, self.end),
        )
        return _select(transitions, symbol)


class Wrapper(Machine):
    """A machine over the states of one child, with transformed transitions."""

    def __init__(self, child: Machine) -> None:
        self.child = child
        self.lo, self.hi = child.lo, child.hi

    def initial(self) -> tuple:
        return self.child.initial()

    def final(self, state: State) -> bool:
        return self.child.final(state)

    def valid(self, state: State) -> bool:
        return self.child.valid(state)

    def may_move(self, state: State) -> bool:
        return self.child.may_move(state)


class LabelWith(Wrapper):
    """``f AS x``: every reported event is also labelled x."""

    def __init__(self, child: Machine, label: str) -> None:
        super().__init__(child)
        self.label = label

    def moves(self, state: State, symbol: tuple | None = None) -> tuple:
        return tuple(
            (g, labels | {self.label} if reports(labels) else labels, t)
            for g, labels, t in self.child.moves(state, symbol)
        )


class MarkEnds(Wrapper):
    """Adds a private label to every transition that ends a match of the child (it enters a
    final state; final states have no moves), reported or not, so that register programs can
    tell where each instance of a sub-formula ends."""

    def __init__(self, child: Machine, label: str) -> None:
        super().__init__(child)
        self.label = label

    def moves(self, state: State, symbol: tuple | None = None) -> tuple:
        return tuple(
            (g, labels | {self.label} if self.child.final(t) else labels, t)
            for g, labels, t in self.child.moves(state, symbol)
        )


class ScopeLabels(Wrapper):
    """Private copies of some labels (``x`` -> ``\\x00N:x``), plus ``\\x00N:*`` on every reported
    event when ``star`` is given: the events of this sub-formula that a condition reads."""

    def __init__(self, child: Machine, copies: dict[str, str], star: str | None) -> None:
        super().__init__(child)
        self.copies = copies
        self.star = star

    def moves(self, state: State, symbol: tuple | None = None) -> tuple:
        out = []
        for g, labels, t in self.child.moves(state, symbol):
            if reports(labels):
                extra = {self.copies[label] for label in labels if label in self.copies}
                if self.star is not None:
                    extra.add(self.star)
                if extra:
                    labels = labels | extra
            out.append((g, labels, t))
        return tuple(out)


class Rename(Wrapper):
    """``f[A -> B]``: events labelled A lose A and are labelled B (SO-CEL renaming)."""

    def __init__(self, child: Machine, mapping: dict[str, str]) -> None:
        super().__init__(child)
        self.mapping = mapping

    def moves(self, state: State, symbol: tuple | None = None) -> tuple:
        out = []
        for g, labels, t in self.child.moves(state, symbol):
            if labels & self.mapping.keys():
                labels = frozenset(self.mapping.get(label, label) for label in labels)
            out.append((g, labels, t))
        return tuple(out)


class Project(Wrapper):
    """``PROJECT[x, y](f)`` (SO-CEL+'s projection): only the labels x and y stay; an event
    left without public labels is read but not reported (private labels are kept)."""

    def __init__(self, child: Machine, kept: frozenset[str]) -> None:
        super().__init__(child)
        self.kept = kept

    def moves(self, state: State, symbol: tuple | None = None) -> tuple:
        return tuple(
            (g, frozenset(label for label in labels if label in self.kept or label[0] == "\x00"), t)
            for g, labels, t in self.child.moves(state, symbol)
        )


class Start(Machine):
    """``START(f)``: f's runs that report the first event of the interval they are evaluated on
    (a new initial state without the skip loop, left only by reporting transitions)."""

    def __init__(self, counter: Counter, child: Machine) -> None:
        self.child = child
        self.lo = child.lo
        self.begin = counter.take()
        self.hi = counter.next

    def initial(self) -> tuple:
        return (self.begin,)

    def final(self, state: State) -> bool:
        return state != self.begin and self.child.final(state)

    def valid(self, state: State) -> bool:
        return state == self.begin or self.child.valid(state)

    def moves(self, state: State, symbol: tuple | None = None) -> tuple:
        if state == self.begin:
            return tuple(
                (g, labels, t)
                for i in self.child.initial()
                for g, labels, t in self.child.moves(i, symbol)
                if reports(labels)
            )
        return self.child.moves(state, symbol)


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


def _key(state: State) -> int:
    return state[0] if isinstance(state, tuple) else state  # type: ignore[return-value]


class _Parts:
    """Finds which of several machines (built one after the other, so their state ranges are
    contiguous and increasing) owns a state, in logarithmic time."""

    def __init__(self, parts: list[Machine]) -> None:
        self.parts = parts
        self.starts = [part.lo for part in parts]

    def index(self, state: State) -> int:
        return bisect.bisect_right(self.starts, _key(state)) - 1

    def find(self, state: State) -> Machine | None:
        """The part owning ``state``, or None for a value that no part could own."""
        key = state[0] if isinstance(state, tuple) and state else state
        if type(key) is not int:
            return None
        index = bisect.bisect_right(self.starts, key) - 1
        return self.parts[index] if index >= 0 else None


class Union(Machine):
    """``f OR g OR ...``: disjoint union."""

    def __init__(self, parts: list[Machine]) -> None:
        self.parts = parts
        self.lo, self.hi = parts[0].lo, parts[-1].hi
        self._parts = _Parts(parts)

    def owner(self, state: State) -> Machine:
        return self.parts[self._parts.index(state)]

    def initial(self) -> tuple:
        return tuple(s for part in self.parts for s in part.initial())

    def final(self, state: State) -> bool:
        return self.owner(state).final(state)

    def moves(self, state: State, symbol: tuple | None = None) -> tuple:
        return self.owner(state).moves(state, symbol)

    def valid(self, state: State) -> bool:
        part = self._parts.find(state)
        return part is not None and part.valid(state)

    def may_move(self, state: State) -> bool:
        return self.owner(state).may_move(state)


class Sequence(Machine):
    """``f1 ; f2 ; ...`` (contiguous False) or ``f1 : f2 : ...`` (contiguous True), n-ary so that
    long chains need no recursion. A contiguous chain has a dummy state between parts i and i+1:
    entered by a reported last event of part i, left by a reported first event of part i+1."""

    def __init__(self, counter: Counter, parts: list[Machine], contiguous: bool) -> None:
        self.parts = parts
        self.contiguous = contiguous
        self.lo = parts[0].lo
        self.dummies = [counter.take() for _ in parts[1:]] if contiguous else []
        self.hi = counter.next
        self._parts = _Parts(parts)
        self._dummy_index = {d: i for i, d in enumerate(self.dummies)}

    def initial(self) -> tuple:
        return self.parts[0].initial()

    def valid(self, state: State) -> bool:
        if type(state) is int and state in self._dummy_index:
            return True
        part = self._parts.find(state)
        return part is not None and part.valid(state)

    def final(self, state: State) -> bool:
        last = self.parts[-1]
        return state not in self._dummy_index and last.owns(state) and last.final(state)

    def moves(self, state: State, symbol: tuple | None = None) -> tuple:
        dummy = self._dummy_index.get(state) if isinstance(state, int) else None
        if dummy is not None:
            # Part dummy + 1 starts right here, with a reported event (no gap).
            index = dummy + 1
            part = self.parts[index]
            out = [
                (g, labels, t)
                for i in part.initial()
                for g, labels, t in part.moves(i, symbol)
                if reports(labels)
            ]
        else:
            index = self._parts.index(state)
            part = self.parts[index]
            out = list(part.moves(state, symbol))
        if index + 1 < len(self.parts):
            following = self.parts[index + 1]
            for g, labels, t in tuple(out):
                if not part.final(t):
                    continue
                if not self.contiguous:
                    out.extend((g, labels, i) for i in following.initial())
                elif reports(labels):
                    out.append((g, labels, self.dummies[index]))
        return tuple(out)


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

    def valid(self, state: State) -> bool:
        return (self.dummy is not None and state == self.dummy) or self.body.valid(state)

    def moves(self, state: State, symbol: tuple | None = None) -> tuple:
        if state == self.dummy:
            first = [
                (g, labels, t)
                for i in self.body.initial()
                for g, labels, t in self.body.moves(i, symbol)
                if reports(labels)
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
            elif reports(labels):
                out.append((g, labels, self.dummy))
        return tuple(out)


class Tagged(Machine):
    """A machine over sub-machines whose states are tuples starting with its own tag."""

    def __init__(self, counter: Counter, parts: list[Machine]) -> None:
        self.parts = parts
        self.lo = parts[0].lo
        self.tag = counter.take()
        self.hi = counter.next

    @property
    def left(self) -> Machine:
        return self.parts[0]

    @property
    def right(self) -> Machine:
        return self.parts[1]

    def owns(self, state: State) -> bool:
        return isinstance(state, tuple) and state[0] == self.tag


class Product(Tagged):
    """Common part of AND and ALL (n-ary): states are (tag, state of part 1, ..., part n)."""

    def initial(self) -> tuple:
        return tuple((self.tag, *combo) for combo in itertools.product(*(p.initial() for p in self.parts)))

    def valid(self, state: State) -> bool:
        if not isinstance(state, tuple) or len(state) != len(self.parts) + 1 or state[0] != self.tag:
            return False
        return all(self._valid_component(part, s) for part, s in zip(self.parts, state[1:]))

    def _valid_component(self, part: Machine, state: State) -> bool:
        return part.valid(state)

    def may_move(self, state: State) -> bool:
        return all(c == _TOP or part.may_move(c) for part, c in zip(self.parts, state[1:]))


class Conjunction(Product):
    """``f AND g AND ...``: all match, reporting exactly the same events."""

    def final(self, state: State) -> bool:
        return all(part.final(s) for part, s in zip(self.parts, state[1:]))

    def moves(self, state: State, symbol: tuple | None = None) -> tuple:
        partial: list[tuple] = [(guards.TRUE, EMPTY_LABELS, (), None)]
        spent = 0
        for part, component in zip(self.parts, state[1:]):
            extended = []
            part_moves = part.moves(component, symbol)
            spent += len(partial) * len(part_moves)
            _product_budget(spent, self)
            for g, labels, targets, reporting in partial:
                for g2, l2, t2 in part_moves:
                    r2 = reports(l2)
                    if reporting is not None and r2 != reporting:
                        continue  # all parts report the event, or none does
                    both = guards.conjoin(g, g2)
                    if both is not None:
                        extended.append((both, labels | l2, targets + (t2,), r2))
            partial = extended
            if not partial:
                return ()
        return tuple((g, labels, (self.tag, *targets)) for g, labels, targets, _ in partial)


class AllOf(Product):
    """``f ALL g ALL ...``: all match from the same start, in any order, possibly overlapping;
    the complex event is reported when the last of them ends. A part that has ended is _TOP."""

    @staticmethod
    def _moves(machine: Machine, state: State, symbol: tuple | None) -> list[tuple]:
        if state == _TOP:
            return [(guards.TRUE, EMPTY_LABELS, _TOP)]
        out = []
        for g, labels, t in machine.moves(state, symbol):
            out.append((g, labels, t))
            if machine.final(t):
                out.append((g, labels, _TOP))
        return out

    def _valid_component(self, part: Machine, state: State) -> bool:
        return state == _TOP or part.valid(state)

    def final(self, state: State) -> bool:
        components = state[1:]
        if all(c == _TOP for c in components):
            return False
        return all(c == _TOP or part.final(c) for part, c in zip(self.parts, components))

    def moves(self, state: State, symbol: tuple | None = None) -> tuple:
        partial: list[tuple] = [(guards.TRUE, EMPTY_LABELS, ())]
        spent = 0
        for part, component in zip(self.parts, state[1:]):
            extended = []
            part_moves = self._moves(part, component, symbol)
            spent += len(partial) * len(part_moves)
            _product_budget(spent, self)
            for g, labels, targets in partial:
                for g2, l2, t2 in part_moves:
                    both = guards.conjoin(g, g2)
                    if both is not None:
                        extended.append((both, labels | l2, targets + (t2,)))
            partial = extended
        return tuple(
            (g, labels, (self.tag, *targets))
            for g, labels, targets in partial
            if not all(t == _TOP for t in targets)
        )


class Unless(Tagged):
    """``f UNLESS g``: f's runs, killed when g has a match between f's first reported event and
    one that f reports later. States are (tag, f state, g subset or None, hit): the subset tracks
    g's runs started at f's first reported event (None before it); ``hit`` records that g has
    already matched, so that f may no longer report events (but may still finish unreported)."""

    def __init__(self, counter: Counter, left: Machine, right: Machine) -> None:
        super().__init__(counter, [left, right])

    def initial(self) -> tuple:
        return tuple((self.tag, a, None, False) for a in self.left.initial())

    def valid(self, state: State) -> bool:
        if not isinstance(state, tuple) or len(state) != 4 or state[0] != self.tag:
            return False
        _, a, subset, hit = state
        if not isinstance(hit, bool) or not self.left.valid(a):
            return False
        if subset is None:
            return not hit
        return isinstance(subset, frozenset) and all(self.right.valid(s) for s in subset)

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
            reporting = reports(labels)
            if subset is None and not reporting:
                out.append((g1, labels, (self.tag, t1, None, False)))
                continue
            if hit:
                if not reporting:
                    out.append((g1, labels, (self.tag, t1, frozenset(), True)))
                continue
            source = self.right.initial() if subset is None else subset
            for case_guard, targets in self._right_successors(source, symbol):
                g = guards.conjoin(g1, case_guard)
                if g is None:
                    continue
                matched = any(self.right.final(t) for t in targets)
                if matched and reporting:
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


class UnlessTracked(Machine):
    """``f UNLESS g`` when g's conditions need registers: g is tracked by the register
    programs, not in the state. States are (tag, f state, tracking). The first reported event
    of f starts tracking (labels ``start`` and ``tick``); while tracking, every event of a type
    g reads carries ``tick`` (its program moves g's runs and records g's matches), every event f
    reports carries ``rep`` (it is refused once g has matched), and the transition that ends f
    carries ``end`` (g's matches that still wait for f's labels are decided there)."""

    def __init__(
        self, counter: Counter, left: Machine, labels: dict[str, str], right_types: frozenset[str] | None
    ) -> None:
        self.left = left
        self.lo = left.lo
        self.tag = counter.take()
        self.hi = counter.next
        self.start = labels["start"]
        self.tick = labels["tick"]
        self.rep = labels["rep"]
        self.end = labels["end"]
        self.right_types = right_types  # None: every event type (g reads with NOT)

    def owns(self, state: State) -> bool:
        return isinstance(state, tuple) and state[0] == self.tag

    def initial(self) -> tuple:
        return tuple((self.tag, a, False) for a in self.left.initial())

    def final(self, state: State) -> bool:
        return self.left.final(state[1])

    def valid(self, state: State) -> bool:
        return (
            isinstance(state, tuple)
            and len(state) == 3
            and state[0] == self.tag
            and isinstance(state[2], bool)
            and self.left.valid(state[1])
        )

    def may_move(self, state: State) -> bool:
        return self.left.may_move(state[1])

    def _ticks(self, symbol: tuple | None) -> bool:
        return symbol is None or self.right_types is None or symbol[0] in self.right_types

    def moves(self, state: State, symbol: tuple | None = None) -> tuple:
        _, a, tracking = state
        out = []
        ticks = self._ticks(symbol)
        for g, labels, t in self.left.moves(a, symbol):
            reporting = reports(labels)
            extra = set()
            if tracking:
                if ticks:
                    extra.add(self.tick)
                if reporting:
                    extra.add(self.rep)
            elif reporting:
                extra |= {self.start, self.tick, self.rep}
            if self.left.final(t):
                extra.add(self.end)
            out.append((g, labels | extra if extra else labels, (self.tag, t, tracking or reporting)))
        return tuple(out)
