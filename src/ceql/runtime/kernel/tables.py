"""The lazily determinized automaton as arrays the compiled loop can index.

``table[state, symbol]`` is UNKNOWN until the kernel meets the pair; it then returns to Python,
which asks the determinized automaton (``det.step``) and writes the transitions into ``flat``:
at offset o, ``flat[o]`` is the number of moves, followed by (label-set id or -1, target) pairs,
reporting moves first (the order ``det.step`` gives). A state that only skips the symbol gets
SKIPS (its runs keep their nodes). Arrays grow when new states or symbols appear.

``silent[state]`` tells compaction whether runs in a state may report their complex events
without reporting another event first (by skipping events into a final state, as after
``A; NOT(B)``): their complex events cannot be pruned by the current time alone.
"""

from __future__ import annotations

import numpy as np

from ceql.compile.determinize import DetAutomaton
from ceql.errors import UnsupportedQueryError
from ceql.runtime.kernel.compiled import SKIPS, UNKNOWN

SILENT_SEARCH_LIMIT = 10_000  # machine states explored per determinized state (then: silent)


class TransitionTable:
    """Transitions of one determinized automaton, filled on demand."""

    def __init__(self, det: DetAutomaton) -> None:
        self.det = det
        self.table = np.full((16, 16), UNKNOWN, dtype=np.int32)
        self.flat = np.zeros(1024, dtype=np.int64)
        self.used = 0
        self.final = np.zeros(16, dtype=np.int8)
        self.silent = np.zeros(0, dtype=np.int8)
        self._silent_known = 0
        self.label_sets: list[tuple[str, ...]] = []
        self._label_ids: dict[tuple[str, ...], int] = {}
        self.ensure(len(det.subsets), len(det.symbols.entries))

    def label_id(self, labels: tuple[str, ...]) -> int:
        """The id of a label set (sorted tuple of labels), interned."""
        found = self._label_ids.get(labels)
        if found is None:
            found = len(self.label_sets)
            self._label_ids[labels] = found
            self.label_sets.append(labels)
        return found

    def ensure(self, states: int, symbols: int) -> None:
        """Make room for ``states`` determinized states and ``symbols`` symbols."""
        rows, cols = self.table.shape
        if states > rows or symbols > cols:
            new_rows = max(rows, _grown(rows, states))
            new_cols = max(cols, _grown(cols, symbols))
            table = np.full((new_rows, new_cols), UNKNOWN, dtype=np.int32)
            table[:rows, :cols] = self.table
            self.table = table
        if states > len(self.final):
            final = np.zeros(self.table.shape[0], dtype=np.int8)
            final[: len(self.final)] = self.final
            self.final = final
        known = self.det.final
        self.final[: len(known)] = known

    def fill(self, state: int, symbol: int) -> None:
        """Compute the transitions of ``state`` on ``symbol`` (may create new states)."""
        det = self.det
        self.ensure(len(det.subsets), symbol + 1)
        if state not in det.touching(symbol):
            self.table[state, symbol] = SKIPS
            return
        moves = det.step(state, symbol)
        need = 1 + 2 * len(moves)
        if self.used + need > len(self.flat):
            flat = np.zeros(_grown(len(self.flat), self.used + need), dtype=np.int64)
            flat[: self.used] = self.flat[: self.used]
            self.flat = flat
        offset = self.used
        self.flat[offset] = len(moves)
        for k, (labels, target) in enumerate(moves):
            self.flat[offset + 1 + 2 * k] = -1 if labels is None else self.label_id(labels)
            self.flat[offset + 2 + 2 * k] = target
        self.used += need
        self.ensure(len(det.subsets), symbol + 1)  # targets may be new states
        self.table[state, symbol] = offset

    def ensure_silent(self) -> None:
        """``silent`` for every known state (sized like ``final``)."""
        if len(self.silent) < len(self.final):
            silent = np.zeros(len(self.final), dtype=np.int8)
            silent[: len(self.silent)] = self.silent
            self.silent = silent
        count = len(self.det.subsets)
        for state in range(self._silent_known, count):
            self.silent[state] = _may_report_silently(self.det, state)
        self._silent_known = count


def _may_report_silently(det: DetAutomaton, state: int) -> bool:
    """Whether some machine state of ``state`` reaches a final state by one or more transitions
    that report nothing (guards ignored, so the answer errs towards True)."""
    seen: set = set()
    stack = list(det.subsets[state])
    while stack:
        machine_state = stack.pop()
        try:
            moves = det.transitions_of(machine_state)
        except UnsupportedQueryError:
            return True
        for _, labels, target in moves:
            if labels:
                continue
            if det.is_final_state(target):
                return True
            if target not in seen:
                if len(seen) >= SILENT_SEARCH_LIMIT:
                    return True
                seen.add(target)
                stack.append(target)
    return False


def _grown(current: int, needed: int) -> int:
    size = max(current, 1)
    while size < needed:
        size *= 2
    return size
