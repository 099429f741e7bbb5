"""Row pattern to matcher program (the instructions of ``ceql.sql.vm``).

The program is laid out so that depth-first search with backtracking meets the candidate
matches in the order of preference: a greedy quantifier's SPLIT tries one more iteration first,
a reluctant one stopping first, alternation and PERMUTE their alternatives left to right. Bounded
quantifiers are written out (``{2,4}`` is two copies and two optional ones); unbounded ones loop
over one copy. An iteration beyond the minimum of a quantifier whose body can match no row is
bracketed by ITER_BEGIN/ITER_END, which reject it if it mapped no row (as the reference does).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from ceql.sql import ast, vm


@dataclass
class Program:
    instructions: np.ndarray  # int64[n, 4]
    slots: int  # ITER_BEGIN/ITER_END slots
    nullable: bool  # the pattern can match no row
    first: frozenset[str]  # variables that can map the first row of a match

    def describe(self) -> list[str]:
        names = {
            vm.P_MATCH: "MATCH",
            vm.P_SPLIT: "SPLIT",
            vm.P_JUMP: "JUMP",
            vm.P_START: "START (^)",
            vm.P_END: "END ($)",
            vm.P_EXCL_IN: "EXCLUDE {-",
            vm.P_EXCL_OUT: "EXCLUDE -}",
            vm.P_ITER_BEGIN: "ITER_BEGIN",
            vm.P_ITER_END: "ITER_END",
            vm.P_DONE: "DONE",
        }
        return [f"{i:3}  {names[int(op)]} {a} {b}".rstrip() for i, (op, a, b, _) in enumerate(self.instructions)]


def nullable(node: ast.Pattern) -> bool:
    """Whether the pattern can match no row at all."""
    if isinstance(node, ast.PVar):
        return False
    if isinstance(node, (ast.PEmpty, ast.PAnchor)):
        return True
    if isinstance(node, (ast.PConcat, ast.PPermute)):
        return all(nullable(p) for p in node.items)
    if isinstance(node, ast.PAlt):
        return any(nullable(p) for p in node.items)
    if isinstance(node, ast.PExclude):
        return nullable(node.body)
    if isinstance(node, ast.PQuant):
        return node.low == 0 or nullable(node.body)
    raise TypeError(node)


def first_variables(node: ast.Pattern) -> frozenset[str]:
    """The variables that can map the first row a pattern maps."""
    if isinstance(node, ast.PVar):
        return frozenset([node.name.key])
    if isinstance(node, (ast.PEmpty, ast.PAnchor)):
        return frozenset()
    if isinstance(node, (ast.PConcat, ast.PPermute)):
        out: set[str] = set()
        items = node.items
        if isinstance(node, ast.PPermute):  # any item may come first
            for item in items:
                out |= first_variables(item)
            return frozenset(out)
        for item in items:
            out |= first_variables(item)
            if not nullable(item):
                break
        return frozenset(out)
    if isinstance(node, ast.PAlt):
        out = set()
        for item in node.items:
            out |= first_variables(item)
        return frozenset(out)
    if isinstance(node, (ast.PExclude, ast.PQuant)):
        return first_variables(node.body)
    raise TypeError(node)


def compile_pattern(pattern: ast.Pattern, variables: list[str]) -> Program:
    """The matcher program of ``pattern`` (variables numbered as in ``variables``)."""
    builder = _Builder({v: i for i, v in enumerate(variables)})
    pattern = simplify(pattern)
    builder.emit_pattern(pattern)
    builder.add(vm.P_DONE)
    _mark_iterations(builder.code)
    return Program(
        np.array(builder.code, dtype=np.int64).reshape(-1, 4),
        builder.slots,
        nullable(pattern),
        first_variables(pattern),
    )


def _mark_iterations(code: list[list[int]]) -> None:
    """Field 3 of each instruction: 1 + the slot of the innermost ITER_BEGIN/ITER_END bracket
    around it (the ITER_END included), 0 outside every bracket; the matcher remembers failed
    states inside a bracket only once its iteration has mapped a row. Brackets are contiguous
    and nested (``checked_body``)."""
    open_slots: list[int] = []
    for instruction in code:
        op, slot = instruction[0], instruction[1]
        if op == vm.P_ITER_BEGIN:
            instruction[3] = open_slots[-1] + 1 if open_slots else 0
            open_slots.append(slot)
            continue
        instruction[3] = open_slots[-1] + 1 if open_slots else 0
        if op == vm.P_ITER_END:
            open_slots.pop()


# ?, *, + as (low, high): the quantifiers whose nestings collapse into one
_SIMPLE = {(0, 1), (0, None), (1, None)}


def simplify(node: ast.Pattern) -> ast.Pattern:
    """``node`` with nested ?, * and + of the same greediness collapsed: ``(A*)*`` is ``A*``,
    ``(A+)?`` is ``A*``, ``(A+)+`` is ``A+``. They match the same rows in the same order of
    preference (an extra iteration of the outer quantifier only continues what the inner one
    would have), but the nested form needs ITER_BEGIN/ITER_END (its body can map no row), which
    rules out remembering failed states, and it reaches every match in exponentially many ways."""
    if isinstance(node, ast.PQuant):
        body = simplify(node.body)
        if (
            isinstance(body, ast.PQuant)
            and body.greedy == node.greedy
            and (node.low, node.high) in _SIMPLE
            and (body.low, body.high) in _SIMPLE
        ):
            high = None if node.high is None or body.high is None else 1
            return ast.PQuant(node.pos, body.body, node.low * body.low, high, node.greedy)
        return node if body is node.body else ast.PQuant(node.pos, body, node.low, node.high, node.greedy)
    if isinstance(node, (ast.PConcat, ast.PAlt, ast.PPermute)):
        items = tuple(simplify(item) for item in node.items)
        return type(node)(node.pos, items)
    if isinstance(node, ast.PExclude):
        return ast.PExclude(node.pos, simplify(node.body))
    return node


class _Builder:
    def __init__(self, index: dict[str, int]) -> None:
        self.index = index
        self.code: list[list[int]] = []
        self.slots = 0

    def add(self, op: int, a: int = 0, b: int = 0) -> int:
        self.code.append([op, a, b, 0])
        return len(self.code) - 1

    def patch(self, at: int, a: int, b: int = 0) -> None:
        self.code[at][1] = a
        self.code[at][2] = b

    def emit_pattern(self, node: ast.Pattern) -> None:
        if isinstance(node, ast.PVar):
            self.add(vm.P_MATCH, self.index[node.name.key])
        elif isinstance(node, ast.PEmpty):
            pass
        elif isinstance(node, ast.PAnchor):
            self.add(vm.P_START if node.kind == "^" else vm.P_END)
        elif isinstance(node, ast.PConcat):
            for item in node.items:
                self.emit_pattern(item)
        elif isinstance(node, ast.PAlt):
            self.alternation([[item] for item in node.items])
        elif isinstance(node, ast.PPermute):
            self.alternation([list(order) for order in itertools.permutations(node.items)])
        elif isinstance(node, ast.PExclude):
            self.add(vm.P_EXCL_IN)
            self.emit_pattern(node.body)
            self.add(vm.P_EXCL_OUT)
        elif isinstance(node, ast.PQuant):
            self.quantified(node)
        else:  # pragma: no cover
            raise TypeError(node)

    def alternation(self, branches: list[list[ast.Pattern]]) -> None:
        jumps = []
        for branch in branches[:-1]:
            split = self.add(vm.P_SPLIT)
            for item in branch:
                self.emit_pattern(item)
            jumps.append(self.add(vm.P_JUMP))
            self.patch(split, split + 1, len(self.code))
        for item in branches[-1]:
            self.emit_pattern(item)
        for jump in jumps:
            self.patch(jump, len(self.code))

    def checked_body(self, body: ast.Pattern, check: bool) -> None:
        """One iteration beyond the minimum: it must map a row when the body could map none."""
        if check:
            slot = self.slots
            self.slots += 1
            self.add(vm.P_ITER_BEGIN, slot)
            self.emit_pattern(body)
            self.add(vm.P_ITER_END, slot)
        else:
            self.emit_pattern(body)

    def quantified(self, node: ast.PQuant) -> None:
        check = nullable(node.body)
        for _ in range(node.low):
            self.emit_pattern(node.body)
        if node.high is not None:
            splits = []
            for _ in range(node.high - node.low):
                splits.append(self.add(vm.P_SPLIT))
                self.checked_body(node.body, check)
            end = len(self.code)
            for split in splits:
                if node.greedy:
                    self.patch(split, split + 1, end)
                else:
                    self.patch(split, end, split + 1)
            return
        loop = self.add(vm.P_SPLIT)
        self.checked_body(node.body, check)
        self.add(vm.P_JUMP, loop)
        end = len(self.code)
        if node.greedy:
            self.patch(loop, loop + 1, end)
        else:
            self.patch(loop, end, loop + 1)
