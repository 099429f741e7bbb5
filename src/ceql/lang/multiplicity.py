"""Label multiplicity: may a complex event hold several events under a label?

``"many"`` under ``+`` (and so ``*``, ``{n,m}`` with m > 1 once rewritten), for a label used
twice in a sequence, across ALL/AND, ...; ``"one"`` otherwise. Computed on the core formula
(quantifiers rewritten). A measure ``x.a`` is a list for a "many" label.
"""

from __future__ import annotations

from ceql.lang import ast
from ceql.lang.visit import Visitor, walk

_ZERO, _ONE, _MANY = 0, 1, 2


class _Multiplicity(Visitor):
    """For a core formula: (label -> at most how many events (0, 1, 2 = many) a complex event
    may hold under it, at most how many events the complex event has)."""

    pass_name = "the label multiplicity analysis"
    families = (ast.CORE_FORMULA_NODES,)

    def visit_EventType(self, node: ast.EventType):
        return {node.name: _ONE}, _ONE

    def visit_NotEvent(self, node: ast.NotEvent):
        return {}, _ZERO

    def visit_Label(self, node: ast.Label):
        counts, size = self.visit(node.body)
        return {**counts, node.label: size}, size  # the label covers every event of the body

    def visit_Iteration(self, node: ast.Iteration):
        counts, size = self.visit(node.body)
        return {k: (_MANY if v else _ZERO) for k, v in counts.items()}, (_MANY if size else _ZERO)

    def _body(self, node):
        return self.visit(node.body)

    visit_Filter = visit_PartitionBy = visit_Start = _body

    def _sum(self, node):
        counts: dict[str, int] = {}
        size = _ZERO
        for part in node.parts:
            part_counts, part_size = self.visit(part)
            size = min(_MANY, size + part_size)
            for label, count in part_counts.items():
                counts[label] = min(_MANY, counts.get(label, 0) + count)
        return counts, size

    visit_Sequence = visit_AllOf = _sum

    def visit_Conjunction(self, node: ast.Conjunction):
        counts, size = self._sum(node)
        size = min(self.visit(p)[1] for p in node.parts)  # one support for all parts
        return {k: min(v, size) for k, v in counts.items()}, size

    def visit_Union_(self, node: ast.Union_):
        counts: dict[str, int] = {}
        size = _ZERO
        for part in node.parts:
            part_counts, part_size = self.visit(part)
            size = max(size, part_size)
            for label, count in part_counts.items():
                counts[label] = max(counts.get(label, 0), count)
        return counts, size

    def visit_Unless(self, node: ast.Unless):
        return self.visit(node.left)

    def visit_Rename(self, node: ast.Rename):
        counts, size = self.visit(node.body)
        mapping = dict(node.mapping)
        out: dict[str, int] = {}
        for label, count in counts.items():
            target = mapping.get(label, label)
            out[target] = min(_MANY, out.get(target, 0) + count)
        return out, size

    def visit_Project(self, node: ast.Project):
        counts, _ = self.visit(node.body)
        kept = {k: v for k, v in counts.items() if k in node.labels}
        return kept, min(_MANY, sum(kept.values()))


def label_multiplicity(formula: ast.Formula) -> dict[str, str]:
    """Label -> "one" or "many", for the labels of the formula and of its UNLESS right sides."""
    out: dict[str, str] = {}
    visitor = _Multiplicity()
    roots = [formula] + [n.right for n in walk(formula, formulas_only=True) if isinstance(n, ast.Unless)]
    for root in reversed(roots):  # the reported complex events' own answer wins
        counts, _ = visitor.visit(root)
        out.update({label: "many" if count == _MANY else "one" for label, count in counts.items()})
    return out
