"""Event symbols and the lazily I/O-determinized automaton.

A symbol is (event type, bit mask of the predicates that hold); symbols get small ids. The
determinized automaton's states are sets of machine states, interned as ints; its transitions
are computed the first time a (state, symbol) pair is seen and cached, grouped by the label set
they report (I/O-determinism: one target per label set), so each complex event has one run.
"""

from __future__ import annotations

import numpy as np

from ceql.compile import automata
from ceql.errors import UnsupportedQueryError

MAX_RELEVANCE_STATES = 5_000
DEFAULT_MAX_STATES = 100_000  # determinized states (each is a set of automaton states)
DEFAULT_MAX_WORK = 20_000_000  # automaton transitions computed while determinizing


class AutomatonTooLarge(UnsupportedQueryError):
    """The lazily determinized automaton grew past its bound while events were read."""


class SymbolTable:
    """Maps (type index, predicate mask) pairs to dense symbol ids."""

    def __init__(self, type_names: list[str]) -> None:
        self.type_names = list(type_names)
        self.ids: dict[tuple[int, int], int] = {}
        self.entries: list[tuple[str, int]] = []

    def symbol(self, type_index: int, mask: int) -> int:
        key = (type_index, mask)
        found = self.ids.get(key)
        if found is None:
            found = len(self.entries)
            self.ids[key] = found
            self.entries.append((self.type_names[type_index], mask))
        return found

    def ids_for(self, type_index: np.ndarray, masks: np.ndarray) -> np.ndarray:
        """Symbol ids for whole columns of type indexes and masks (vectorized)."""
        if len(type_index) == 0:
            return np.zeros(0, dtype=np.int64)
        import pandas as pd

        bits = int(masks.max()).bit_length() if len(masks) else 0
        if bits <= 56:
            # One integer key per event, factorized with a hash table (linear, no sort).
            keys = (type_index.astype(np.uint64) << np.uint64(bits)) | masks.astype(np.uint64)
            codes, uniques = pd.factorize(keys)
            local = np.array(
                [self.symbol(int(k) >> bits, int(k) & ((1 << bits) - 1)) for k in uniques], dtype=np.int64
            )
            return local[codes]
        pairs = np.stack([type_index.astype(np.uint64), masks.astype(np.uint64)], axis=1)
        unique, inverse = np.unique(pairs, axis=0, return_inverse=True)
        local = np.array([self.symbol(int(t), int(m)) for t, m in unique], dtype=np.int64)
        return local[inverse.reshape(-1)]


class DetAutomaton:
    """The I/O-determinization of a machine, built on demand."""

    def __init__(
        self, machine: automata.Machine, symbols: SymbolTable, max_states: int = DEFAULT_MAX_STATES
    ) -> None:
        self.machine = machine
        self.max_states = max_states
        self.max_work = DEFAULT_MAX_WORK
        self.work = 0  # automaton transitions computed so far (a bound on determinization cost)
        self.symbols = symbols
        self._transitions: dict = {}
        self._enabled: dict = {}
        self._dead: dict = {}
        self._final: dict = {}
        self.subsets: list[frozenset] = []
        self.ids: dict[frozenset, int] = {}
        self.final: list[bool] = []
        # A canonical sort key per state (its machine states, sorted): with ANY or LIMIT, the
        # order in which the runs of one event move, so that which complex events come first
        # within a trigger does not depend on the order states happened to be interned in (a
        # restored state interns them afresh).
        self.rank: list[tuple] = []
        self.cache: dict[tuple[int, int], tuple] = {}
        # Label sets as sorted tuples: tuples of strings are not tracked by the cycle collector,
        # and neither, in the end, are the tECS nodes holding them (a large saving on big states).
        self._labels: dict[frozenset, tuple] = {}
        self._irrelevant: dict[int, bool] = {}
        self._state_moves: dict[tuple, bool] = {}
        self._touching: dict[int, list] = {}
        self._reachable: list | None | bool = False  # False: not computed yet
        self.initial = self.intern(frozenset(machine.initial()))

    def transitions_of(self, state) -> tuple:
        """The symbolic transitions of a machine state (cached)."""
        found = self._transitions.get(state)
        if found is None:
            found = self.machine.moves(state)
            self._transitions[state] = found
        return found

    def enabled(self, state, symbol: int) -> tuple:
        """The transitions of a machine state that a symbol enables, dead ends removed (cached)."""
        key = (state, symbol)
        found = self._enabled.get(key)
        if found is None:
            try:
                moves = self.machine.moves(state, self.symbols.entries[symbol])
            except automata.ProductTooLarge as exc:  # checked while the product was built
                raise AutomatonTooLarge(
                    f"the determinized automaton grew past its bounds: {exc.message}; the bound is fixed "
                    f"({automata.MAX_PRODUCT_MOVES:,} per state, docs/limits.md). Use fewer operands, or "
                    "split the query"
                ) from None
            self.work += len(moves) + 1
            if self.work > self.max_work:
                raise AutomatonTooLarge(self._too_large())
            found = tuple((labels, target) for _, labels, target in moves if not self.is_dead(target))
            self._enabled[key] = found
        return found

    def is_final_state(self, state) -> bool:
        found = self._final.get(state)
        if found is None:
            found = self.machine.final(state)
            self._final[state] = found
        return found

    def is_dead(self, state) -> bool:
        """A state that is not final and has no transitions: runs there can never report."""
        found = self._dead.get(state)
        if found is None:
            found = not self.is_final_state(state) and not self._has_moves(state)
            self._dead[state] = found
        return found

    def _has_moves(self, state) -> bool:
        try:
            return self.machine.may_move(state)
        except UnsupportedQueryError:
            return True

    def intern(self, subset: frozenset) -> int:
        found = self.ids.get(subset)
        if found is None:
            found = len(self.subsets)
            if found >= self.max_states:
                raise AutomatonTooLarge(self._too_large())
            self.ids[subset] = found
            self.subsets.append(subset)
            self.rank.append(_canonical(subset))
            self.final.append(any(self.is_final_state(s) for s in subset))
        return found

    def _too_large(self) -> str:
        sizes = sorted((len(subset) for subset in self.subsets), reverse=True)[:1]
        causes = sorted({type(m).__name__ for m in _machines(self.machine)} & {"AllOf", "Conjunction", "Unless"})
        names = {"AllOf": "ALL", "Conjunction": "AND", "Unless": "UNLESS"}
        because = (
            f"; the {', '.join(names[c] for c in causes)} in the query track combinations of partial matches"
            if causes
            else ""
        )
        return (
            f"the determinized automaton grew past its bounds ({len(self.subsets):,} states of at most "
            f"{self.max_states:,}, {self.work:,} transitions computed of at most {self.max_work:,}; the "
            f"largest state holds {sizes[0] if sizes else 0} automaton states){because}. Add or shorten a "
            "WITHIN window, simplify the pattern, or raise the bounds with max_states= / max_work= (API) "
            "or --max-states / --max-work (CLI)"
        )

    def step(self, det_state: int, symbol: int) -> tuple:
        """Transitions of a determinized state on a symbol: ((labels or None, target), ...)."""
        key = (det_state, symbol)
        found = self.cache.get(key)
        if found is not None:
            return found
        buckets: dict[frozenset, set] = {}
        for state in self.subsets[det_state]:
            for labels, target in self.enabled(state, symbol):
                buckets.setdefault(labels, set()).add(target)
        out = []
        for labels, targets in buckets.items():
            interned = self._labels.setdefault(labels, tuple(sorted(labels))) if labels else None
            out.append((interned, self.intern(frozenset(targets))))
        # Reporting transitions first: the evaluator builds their nodes before unions.
        out.sort(key=lambda item: item[0] is None)
        found = tuple(out)
        self.cache[key] = found
        return found

    def _moves(self, state, symbol: int) -> bool:
        """Whether a machine state does anything but skip on this symbol (a state without
        transitions counts as moving: its runs end)."""
        key = (state, symbol)
        found = self._state_moves.get(key)
        if found is None:
            found = not self._has_moves(state) or set(self.enabled(state, symbol)) != {
                (automata.EMPTY_LABELS, state)
            }
            self._state_moves[key] = found
        return found

    def touching(self, symbol: int) -> set[int]:
        """The determinized states that this symbol changes (all others just skip it)."""
        entry = self._touching.get(symbol)
        if entry is None:
            entry = [0, set()]
            self._touching[symbol] = entry
        count = len(self.subsets)
        if entry[0] < count:
            for det_state in range(entry[0], count):
                if any(self._moves(state, symbol) for state in self.subsets[det_state]):
                    entry[1].add(det_state)
            entry[0] = count
        return entry[1]

    def reachable(self) -> list | None:
        if self._reachable is False:
            self._reachable = automata.reachable_states(self.machine, MAX_RELEVANCE_STATES)
        return self._reachable  # type: ignore[return-value]

    def irrelevant(self, symbol: int) -> bool:
        """Whether every reachable state just skips events with this symbol, so that processing
        the event changes nothing that can matter later (states without transitions, such as a
        reached final state, are ignored: their runs end at the next event either way)."""
        found = self._irrelevant.get(symbol)
        if found is not None:
            return found
        states = self.reachable()
        result = states is not None
        if result:
            for state in states:
                if not self._has_moves(state):
                    continue  # runs there influence nothing after this event either way
                if set(self.enabled(state, symbol)) != {(automata.EMPTY_LABELS, state)}:
                    result = False
                    break
        self._irrelevant[symbol] = result
        return result


def _machines(machine: automata.Machine):
    """Every machine of a composed machine (iteratively)."""
    stack = [machine]
    while stack:
        item = stack.pop()
        yield item
        for attribute in ("child", "body"):
            child = getattr(item, attribute, None)
            if isinstance(child, automata.Machine):
                stack.append(child)
        stack.extend(getattr(item, "parts", ()))


def _canonical(subset: frozenset) -> tuple:
    """The subset's machine states in a fixed order, comparable with any other subset's (the
    machine states of one query may mix types: each by its repr)."""
    return tuple(sorted(map(repr, subset)))
