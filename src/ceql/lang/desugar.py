"""Quantifiers as sugar: rewrite ``?``, ``*``, ``{n}``, ``{n,m}``, ``{n,}`` into core formulas.

The rewrite (docs/semantics.md, "Quantifiers"), with ``;`` replaced by ``:`` and ``+`` by ``:+``
when the quantifier is written as an element of a ``:`` chain:

- ``f{n}`` = ``f ; f ; ... ; f`` (n copies; labels accumulate as under ``+``);
- ``f{n,m}`` = ``f{n} OR f{n+1} OR ... OR f{m}``;
- ``f{n,}`` = ``f{n-1} ; f+`` (at least n), and ``f*`` = ``f{0,}``, ``f?`` = ``f{0,1}``;
- an *optional* part (one that may match nothing: ``f?``, ``f*``, ``f{0,m}``, also under
  ``AS``, ``FILTER``, ``PARTITION BY``, a renaming, a projection, in an ``OR``, an iteration's
  body) is written out inside its sequence: ``g ; f? ; h`` = ``(g ; h) OR (g ; f ; h)``; the
  alternative without it drops its wrappers too;
- where there is no sequence to drop it from (the whole query, an iteration, either side of
  UNLESS, START), an optional formula stands for its non-empty alternatives; it cannot be an
  operand of AND or ALL (that would need an empty complex event).

A formula that can match no event at all is an error, and so is an expansion larger than
``MAX_EXPANDED_SIZE`` formula nodes.
"""

from __future__ import annotations

import dataclasses
import itertools
from math import prod

from ceql.errors import QueryError
from ceql.lang import ast
from ceql.lang.visit import Visitor, formula_children

#: The largest desugared formula (in formula nodes, copies counted) a query may expand to.
MAX_EXPANDED_SIZE = 20_000

#: A desugared formula: its non-empty alternatives (None if it has none) and whether it may also
#: match nothing.
Result = tuple["ast.Formula | None", bool]


def desugar(formula: ast.Formula, text: str | None = None) -> ast.Formula:
    """The core formula of ``formula`` (no Repeat node left). Raises QueryError (with the
    position in ``text``) when a quantifier is misplaced, matches nothing or expands too much."""
    core, _ = _Desugar(text).visit(formula)
    if core is None:
        raise QueryError("the query can match no event", text, max(formula.pos, 0))
    return core


def has_quantifiers(formula: ast.Formula) -> bool:
    """Whether the formula uses ``?``, ``*`` or ``{n,m}``."""
    stack = [formula]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Repeat):
            return True
        stack.extend(formula_children(node))
    return False


class _Desugar(Visitor):
    pass_name = "the quantifier rewrite"
    families = (ast.FORMULA_NODES,)

    def __init__(self, text: str | None) -> None:
        self.text = text
        self.sizes: dict[int, tuple[ast.Formula, int]] = {}

    def fail(self, message: str, node: ast.Node) -> QueryError:
        return QueryError(message, self.text, max(node.pos, 0))

    def size(self, node: ast.Formula) -> int:
        """Formula nodes in the tree, shared sub-trees counted once per use."""
        hit = self.sizes.get(id(node))
        if hit is None:
            hit = (node, 1 + sum(self.size(child) for child in formula_children(node)))
            self.sizes[id(node)] = hit
        return hit[1]

    def check_size(self, estimate: int, node: ast.Node) -> None:
        if estimate > MAX_EXPANDED_SIZE:
            raise self.fail(
                f"quantifiers expand this formula to about {estimate} operators (at most {MAX_EXPANDED_SIZE}); "
                "use smaller bounds or fewer optional parts",
                node,
            )

    def required(self, node: ast.Formula, where: str) -> ast.Formula:
        """The non-empty alternatives of an operand that cannot match nothing."""
        core, nullable = self.visit(node)
        if core is None:
            raise self.fail(f"{where} can match no event", node)
        return core

    # ------------------------------------------------------------------ atoms and wrappers

    def visit_EventType(self, node: ast.EventType) -> Result:
        return node, False

    def visit_NotEvent(self, node: ast.NotEvent) -> Result:
        return node, False

    def _wrapper(self, node) -> Result:
        core, nullable = self.visit(node.body)
        if core is None:
            return None, nullable
        return (node if core is node.body else dataclasses.replace(node, body=core)), nullable

    visit_Label = visit_Filter = visit_PartitionBy = visit_Rename = visit_Project = _wrapper

    def visit_Start(self, node: ast.Start) -> Result:
        core = self.required(node.body, "the formula inside START(...)")
        return (node if core is node.body else dataclasses.replace(node, body=core)), False

    def visit_Iteration(self, node: ast.Iteration) -> Result:
        core, nullable = self.visit(node.body)
        if core is None:
            raise self.fail("the body of this iteration can match no event", node)
        return (node if core is node.body else dataclasses.replace(node, body=core)), nullable

    def visit_Unless(self, node: ast.Unless) -> Result:
        left, nullable = self.visit(node.left)
        right, right_nullable = self.visit(node.right)
        if right_nullable:
            raise self.fail("the right side of UNLESS cannot be optional (?, * or {0,m})", node.right)
        if right is None:
            raise self.fail("the right side of UNLESS can match no event", node.right)
        if left is None:
            return None, nullable
        if left is node.left and right is node.right:
            return node, nullable
        return dataclasses.replace(node, left=left, right=right), nullable

    def _product(self, node) -> Result:
        parts = []
        for part in node.parts:
            core, nullable = self.visit(part)
            if nullable or core is None:
                word = "AND" if isinstance(node, ast.Conjunction) else "ALL"
                raise self.fail(f"an optional formula (?, * or {{0,m}}) cannot be an operand of {word}", part)
            parts.append(core)
        if all(a is b for a, b in zip(parts, node.parts)):
            return node, False
        return dataclasses.replace(node, parts=tuple(parts)), False

    visit_Conjunction = visit_AllOf = _product

    def visit_Union_(self, node: ast.Union_) -> Result:
        cores: list[ast.Formula] = []
        nullable = False
        changed = False
        for part in node.parts:
            core, part_nullable = self.visit(part)
            nullable |= part_nullable
            changed |= core is not part
            if isinstance(core, ast.Union_) and core is not part:
                cores.extend(core.parts)
            elif core is not None:
                cores.append(core)
        if not changed:
            return node, nullable
        return _union(cores, node), nullable

    # ------------------------------------------------------------------ sequences and quantifiers

    def visit_Sequence(self, node: ast.Sequence) -> Result:
        results = [self.visit(part) for part in node.parts]
        if all(core is part and not nullable for (core, nullable), part in zip(results, node.parts)):
            return node, False
        return self.sequence(results, node.contiguous, node)

    def sequence(self, results: list[Result], contiguous: bool, node: ast.Node) -> Result:
        """The alternatives of a sequence whose parts may be optional (each optional part is
        either kept, as its non-empty alternatives, or dropped)."""
        choices = []
        for core, nullable in results:
            options: list[ast.Formula | None] = [] if core is None else [core]
            if nullable:
                options.append(None)
            if not options:
                return None, False  # a part that matches nothing: so does the sequence
            choices.append(options)
        count = prod(len(options) for options in choices)
        self.check_size(count * sum(self.size(core) for core, _ in results if core is not None), node)
        alternatives: list[ast.Formula] = []
        nullable = False
        for chosen in itertools.product(*choices):
            parts: list[ast.Formula] = []
            for core in chosen:
                if core is None:
                    continue
                if isinstance(core, ast.Sequence) and core.contiguous == contiguous:
                    parts.extend(core.parts)  # same operator: associative
                else:
                    parts.append(core)
            if not parts:
                nullable = True
            elif len(parts) == 1:
                alternatives.append(parts[0])
            else:
                alternatives.append(ast.Sequence(tuple(parts), contiguous, pos=node.pos))
        return (_union(alternatives, node) if alternatives else None), nullable

    def visit_Repeat(self, node: ast.Repeat) -> Result:
        low, high = node.low, node.high
        if low < 0 or (high is not None and (high < low or high < 1)):
            raise self.fail(f"invalid quantifier bounds {{{low},{'' if high is None else high}}}", node)
        body = self.visit(node.body)
        core, body_nullable = body
        if core is None:
            raise self.fail("the repeated formula can match no event", node)
        unit = self.size(core)
        if high is None:
            copies = max(low, 1)
            self.check_size(copies * unit + 1, node)
            tail = (ast.Iteration(core, node.contiguous, pos=node.pos), body_nullable)
            if low <= 1:
                return tail[0], low == 0 or body_nullable
            return self.sequence([body] * (low - 1) + [tail], node.contiguous, node)
        first = max(low, 1)
        self.check_size((high * (high + 1) - (first - 1) * first) // 2 * unit, node)
        alternatives: list[ast.Formula] = []
        nullable = low == 0
        for count in range(first, high + 1):
            alternative, alternative_nullable = (
                body if count == 1 else self.sequence([body] * count, node.contiguous, node)
            )
            nullable |= alternative_nullable
            if isinstance(alternative, ast.Union_) and count > 1:
                alternatives.extend(alternative.parts)
            elif alternative is not None:
                alternatives.append(alternative)
        return _union(alternatives, node), nullable


def _union(parts: list[ast.Formula], node: ast.Node) -> ast.Formula:
    return parts[0] if len(parts) == 1 else ast.Union_(tuple(parts), pos=node.pos)
