"""Formula rewrites for selection strategies.

STRICT keeps the complex events whose support is an interval of the (sub-)stream. For formulas
built from event types, AS, unary FILTER, OR, ``;``, ``:``, ``+``, ``:+``, AND and the left side
of UNLESS, this equals the formula with every ``;`` made ``:`` and every ``+`` made ``:+``
(SO-CEL Proposition 18), which keeps constant work per event. NOT(...) and ALL break the
rewrite (NOT reads events outside the support; ALL unions possibly interleaved supports), so
for them the evaluator checks the interval condition on each complex event instead.
"""

from __future__ import annotations

from ceql.lang import ast


def strict_rewritable(formula: ast.Formula) -> bool:
    """Whether STRICT can be compiled into contiguous operators for this formula."""
    stack = [formula]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.NotEvent, ast.AllOf)):
            return False
        if isinstance(node, ast.Unless):
            stack.append(node.left)  # the right side is not reported: no constraint on it
            continue
        stack.extend(ast.children(node))
    return True


def rewrite_strict(formula: ast.Formula) -> ast.Formula:
    """STRICT(formula) as a formula with contiguous operators, when ``strict_rewritable``;
    otherwise the formula unchanged (the evaluator then filters complex events)."""
    if not strict_rewritable(formula):
        return formula
    return _strict(formula)


def _strict(node: ast.Formula) -> ast.Formula:
    if isinstance(node, ast.Sequence):
        return ast.Sequence(tuple(_strict(p) for p in node.parts), True, pos=node.pos)
    if isinstance(node, ast.Iteration):
        return ast.Iteration(_strict(node.body), True, pos=node.pos)
    if isinstance(node, ast.Label):
        return ast.Label(_strict(node.body), node.label, pos=node.pos)
    if isinstance(node, ast.Filter):
        return ast.Filter(_strict(node.body), node.cond, pos=node.pos)
    if isinstance(node, ast.Union_):
        return ast.Union_(tuple(_strict(p) for p in node.parts), pos=node.pos)
    if isinstance(node, ast.Conjunction):
        return ast.Conjunction(tuple(_strict(p) for p in node.parts), pos=node.pos)
    if isinstance(node, ast.Unless):
        return ast.Unless(_strict(node.left), node.right, pos=node.pos)
    return node
