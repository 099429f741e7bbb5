"""Formula rewrites for selection strategies.

STRICT keeps the complex events whose support is an interval of the (sub-)stream. For formulas
built from event types, AS, unary FILTER, OR, ``;``, ``:``, ``+``, ``:+``, AND and the left side
of UNLESS, this equals the formula with every ``;`` made ``:`` and every ``+`` made ``:+``
(SO-CEL Proposition 18), which keeps constant work per event. NOT(...) and ALL break the
rewrite (NOT reads events outside the support; ALL unions possibly interleaved supports), so
for them the evaluator checks the interval condition on each complex event instead.
"""

from __future__ import annotations

import dataclasses

from ceql.lang import ast
from ceql.lang.visit import Visitor, formula_children


def strict_rewritable(formula: ast.Formula) -> bool:
    """Whether STRICT can be compiled into contiguous operators for this formula."""
    stack = [formula]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.NotEvent, ast.AllOf, ast.Project)):
            return False
        if isinstance(node, ast.Unless):
            stack.append(node.left)  # the right side is not reported: no constraint on it
            continue
        stack.extend(formula_children(node))
    return True


def rewrite_strict(formula: ast.Formula) -> ast.Formula:
    """STRICT(formula) as a formula with contiguous operators, when ``strict_rewritable``;
    otherwise the formula unchanged (the evaluator then filters complex events)."""
    if not strict_rewritable(formula):
        return formula
    return _Strict().visit(formula)


class _Strict(Visitor):
    """SO-CEL Proposition 18: ``;`` becomes ``:`` and ``+`` becomes ``:+`` everywhere but inside
    the right side of UNLESS (which reports nothing)."""

    pass_name = "the STRICT rewrite"
    families = (ast.CORE_FORMULA_NODES,)

    def visit_Sequence(self, node: ast.Sequence) -> ast.Formula:
        return dataclasses.replace(node, parts=tuple(self.visit(p) for p in node.parts), contiguous=True)

    def visit_Iteration(self, node: ast.Iteration) -> ast.Formula:
        return dataclasses.replace(node, body=self.visit(node.body), contiguous=True)

    def _body(self, node):
        return dataclasses.replace(node, body=self.visit(node.body))

    visit_Label = visit_Filter = visit_PartitionBy = visit_Start = visit_Rename = _body

    def _parts(self, node):
        return dataclasses.replace(node, parts=tuple(self.visit(p) for p in node.parts))

    visit_Union_ = visit_Conjunction = _parts

    def visit_Unless(self, node: ast.Unless) -> ast.Formula:
        return dataclasses.replace(node, left=self.visit(node.left))

    def _unchanged(self, node):
        return node

    # (ALL, NOT and PROJECT make the formula not rewritable; they are never reached.)
    visit_EventType = visit_NotEvent = visit_AllOf = visit_Project = _unchanged
