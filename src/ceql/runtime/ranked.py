"""NEXT and LAST with work per event independent of the stream (Foundations, Theorem 6).

Two runs in the same class (determinized state, register values, and -- with a window -- the
window measure of their first event) have the same future, and the NEXT (LAST) order of their
complex events is kept by any common continuation. So one complex event per class suffices:
the best one. Classes are kept in a ranked list of groups, best first; the complex events of one
group have equal supports (they differ in labels only). Per event the groups are moved in rank
order -- NEXT: each group's reporting moves, then its silent ones; LAST: every group's
reporting moves, then every group's silent ones -- and a class reached by a better group keeps
that group's complex event. The output at a position is the first group that reaches a final
state (whose registers pass the gate): exactly the complex events with the best support.

Per event the work is linear in the number of live classes, which does not grow with the
stream (with a window, it is bounded by the distinct first events in the window).
"""

from __future__ import annotations

from typing import Any

from ceql.compile.plan import Plan
from ceql.runtime import nodes
from ceql.runtime.nodes import HAS_EMPTY, window_limit
from ceql.runtime.runs import DEFAULT_MAX_CLASSES, LimitExceeded, _Store, nodes_reports

BOTTOM = nodes.BOTTOM
_output = nodes.output
_union = nodes.union


class RankedRuns(_Store):
    """``partitions[key]`` is a list of groups, best first; a group is a list of classes
    ``[state, registers, first measure, last reported measure, node]``."""

    def __init__(self, plan: Plan, max_classes: int = DEFAULT_MAX_CLASSES) -> None:
        super().__init__(plan)
        self.registers = plan.registers
        self.initial_registers = plan.registers.initial if plan.registers is not None else ()
        self.last = plan.strategy == "LAST"
        # With a window, the first event's measure is part of a class (it decides, with the last
        # reported event, whether a complex event is in the window). When a run can reach a
        # final state by reading without reporting (NOT, projection), the last reported
        # event's measure is part of it too, and classes are not dropped by age.
        self.windowed = plan.window is not None
        self.silent_ends = plan.silent_reads
        self.prune = plan.window is not None and plan.monotone and not plan.silent_reads
        self.max_classes = max_classes

    def initial_active(self) -> list:
        return [[[self.init, self.initial_registers, None, None, BOTTOM]]]

    def advance(
        self, key: Any, symbol: int, pos: int, m: Any, data: Any, values: tuple = (), mask: int = 0
    ) -> list[tuple] | None:
        det = self.det
        order = self.partitions.get(key)
        if order is None:
            order = self.initial_active()
        elif self.partitioned and self.partition_consumed.get(key, -1) < self.consumed_at:
            order = self._consumed(order)
        limit = self.window_limit(m) if self.prune else None
        touched = det.touching(symbol)
        cache = det.cache
        registers = self.registers
        assigned: dict[tuple, tuple[int, list]] = {}  # class identity -> (group number, class)
        new_order: list[list] = []
        entered_final: list[list] = []
        final = det.final

        def moves_of(state: int) -> tuple:
            if state not in touched:
                return ((None, state),)
            found = cache.get((state, symbol))
            return found if found is not None else det.step(state, symbol)

        def move(group: list, reporting: bool, number: int, out: list) -> None:
            for state, nu, start, last, node in group:
                if limit is not None and start is not None and start <= limit:
                    continue  # every complex event of this class has left the window
                for labels, target in moves_of(state):
                    if labels is None:
                        if reporting:
                            continue
                        target_nu, target_node, target_start, target_last = nu, node, start, last
                    else:
                        reports = nodes_reports(labels)
                        if reports != reporting:
                            continue
                        if registers is not None:
                            program = registers.step(labels)
                            target_nu = nu if program is None else program(nu, values, mask, symbol)
                            if target_nu is None:
                                continue
                        else:
                            target_nu = nu
                        if reports:
                            target_node = _output(pos, labels, node, m, data)
                            target_start = start if start is not None else (m if self.windowed else None)
                            target_last = m if self.windowed else None
                        else:
                            target_node, target_start, target_last = node, start, last
                    if self.silent_ends:
                        identity = (target, target_nu, target_start, target_last)
                    else:
                        identity = (target, target_nu, target_start)
                    found = assigned.get(identity)
                    if found is None:
                        entry = [target, target_nu, target_start, target_last, target_node]
                        assigned[identity] = (number, entry)
                        out.append(entry)
                        if final[target]:
                            entered_final.append(entry)
                    elif found[0] == number:
                        found[1][4] = _union(found[1][4], target_node)  # equal supports
                    # else: a better group reached this class first

        if self.last:
            passes = [(group, True) for group in order] + [(group, False) for group in order]
        else:
            passes = [(group, reporting) for group in order for reporting in (True, False)]
        for number, (group, reporting) in enumerate(passes):
            out: list = []
            move(group, reporting, number, out)
            if out:
                new_order.append(out)
        if sum(len(g) for g in new_order) > self.max_classes:
            raise LimitExceeded(
                f"more than {self.max_classes:,} live classes for NEXT/LAST in one partition; add or "
                "shorten a WITHIN window, or raise the bound with max_classes= (API) / --max-classes (CLI)",
                "max_classes",
                self.max_classes,
            )
        self._store(key, new_order)
        if not entered_final:
            return None
        finals_set = {id(entry) for entry in entered_final}
        window = self.plan.window
        for group in new_order:
            chosen = [
                entry[4]
                for entry in group
                if id(entry) in finals_set
                and (entry[2] is None or window is None or entry[2] > window_limit(entry[3], window))
                and (registers is None or registers.gate(entry[1]))
            ]
            if chosen:
                return chosen
        return None

    def _store(self, key: Any, order: list) -> None:
        if self.partitioned:
            if self._only_initial(order):
                self.partitions.pop(key, None)
                self.partition_consumed.pop(key, None)
                return
            self.partition_consumed[key] = self.consumed_at
        self.partitions[key] = order

    def _only_initial(self, order: list) -> bool:
        return (
            len(order) == 1
            and len(order[0]) == 1
            and order[0][0][0] == self.init
            and order[0][0][1] == self.initial_registers
            and order[0][0][4] is BOTTOM
        )

    def _consumed(self, order: list) -> list:
        kept = [[[s, nu, None, None, BOTTOM] for s, nu, _, _, node in group if node[HAS_EMPTY]] for group in order]
        # Nothing kept is possible only under START (the initial class always has the empty
        # complex event otherwise): the anchored stream then has no runs left.
        return [group for group in kept if group]

    def consume(self, key: Any) -> None:
        order = self.partitions.get(key)
        if order is not None:
            self._store(key, self._consumed(order))

    def roots(self) -> list[tuple]:
        return [entry[4] for order in self.partitions.values() for group in order for entry in group]

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

    def classes(self, active: list, key: Any = None):
        for rank, group in enumerate(active):
            for state, nu, start, last, node in group:
                yield state, (rank, nu, start, last), node

    def from_classes(self, classes: list[tuple]) -> list:
        groups: dict[int, list] = {}
        for state, (rank, nu, start, last), node in classes:
            groups.setdefault(rank, []).append([state, nu, start, last, node])
        return [groups[rank] for rank in sorted(groups)]

    def compact(self, limit: Any) -> None:
        """Classes are dropped as they leave the window; nothing else to free."""
