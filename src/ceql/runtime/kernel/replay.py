"""The Python path's register programs replayed on each derivation the kernel enumerates.

Some conditions across events have no column-wise form (postfilter.py): a right side of
UNLESS of several events (``(A AS a ; C AS c) UNLESS (D AS d ; E AS e FILTER e.n = a.n)``: does
some complex event of the right side lie in the span, with its conditions true?), an UNLESS
with conditions under an iteration, a renaming or a projection, and conditions reading labels of
a repeated scope (``(A AS a ; B AS b FILTER b.v > a.v)+``). The compiler already decides them
for the Python path, as events arrive, by register programs on the transitions' labels
(compile/registers.py): the automaton labels every event a program reads (the tracked UNLESS's
``tick`` on the right side's events of the span, ``rep`` on the left side's, a scope's
``end``...). The kernel runs the same automaton without registers, so each complex event it
enumerates is one derivation: its events in stream order, each with the label set of its
transition. Replaying the programs along it (``step(labels)`` from the initial registers, then
``gate`` at its end) decides exactly what the Python path decides for that derivation's run; a
complex event is kept iff one of its derivations passes (repeats are dropped afterwards).

The replay needs, per event, what the Python path hands the programs: the values of
``plan.value_attributes``, the predicate bits and the symbol. The kept values hold each event's
type index (``TYPE``) and predicate bits (``MASK``); the symbol is interned again from both at
replay time (symbol numbers are private to a process, a saved state may come from another).
The cost is the Python path's per event of each complex event, paid only for the complex events
the kernel enumerates (the window bounds them).
"""

from __future__ import annotations

import numpy as np

from ceql.compile.plan import Plan

#: Kept values: each event's index in ``plan.type_names`` (-1: none).
TYPE = "\x00type"
#: Kept values: each event's predicate bits (uint64 stored as int64).
MASK = "\x00mask"


class Replay:
    """Replays a plan's register programs on the complex events of a frame (columns.Frame)."""

    def __init__(self, plan: Plan) -> None:
        assert plan.registers is not None
        self.plan = plan
        self.registers = plan.registers
        self.values = list(plan.value_attributes)  # the values a program reads, in its order

    def attributes(self, stored: set[str] | None = None) -> list[str]:
        """The event attributes the programs read (``stored``: those the catalog has)."""
        return [name for name in self.values if stored is None or name in stored]

    def holds(self, frame, stored: set[str], todo: np.ndarray | None = None) -> np.ndarray:
        """Per complex event of ``frame``: whether its derivation passes every program and the
        gate. ``stored``: the attributes kept (the others are missing on every event); ``todo``:
        the complex events to decide (the others, already dropped, read false)."""
        n = frame.n
        out = np.zeros(max(n, 0), dtype=bool)
        if n <= 0:
            return out
        registers = self.registers
        types = frame.column(TYPE)
        masks = frame.column(MASK)
        mask_bits = np.asarray(masks.data, dtype=np.int64).view(np.uint64)
        symbols = self.plan.symbols.ids_for(np.asarray(types.data, dtype=np.int64), mask_bits).tolist()
        mask_list = mask_bits.tolist()
        count = frame.events
        columns = [frame.objects(name) if name in stored else [None] * count for name in self.values]
        values = list(zip(*columns)) if columns else [()] * count
        programs = [registers.step(labels) for labels in frame.label_sets]
        ids = frame.label_ids[frame.base : frame.base + count].tolist()
        starts, ends = frame.starts.tolist(), frame.ends.tolist()
        initial = registers.initial
        gate = registers.gate
        for i in range(n) if todo is None else np.flatnonzero(todo).tolist():
            v = initial
            for k in range(starts[i], ends[i]):
                program = programs[ids[k]]
                if program is not None:
                    v = program(v, values[k], mask_list[k], symbols[k])
                    if v is None:
                        break
            else:
                out[i] = gate(v)
        return out
