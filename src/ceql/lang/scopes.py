"""Which labels a formula defines, and which labels a condition reads from outside (free labels).

These static facts decide where a condition's labels come from (docs/semantics.md, "Free labels
in conditions"): a condition on ``f FILTER c`` reads the labels that ``f`` defines from the
sub-complex event the filter sees; every other label it names is *free* and is read from the
complex event at the nearest enclosing *scope* that defines it:

- the body of an iteration ``g+`` / ``g:+`` that defines it (one iteration's complex event:
  ``+`` re-chooses the labels its body defines);
- the body of a renaming ``g[A -> B]`` or a projection ``PROJECT[..](g)`` that defines it (the
  complex event before the labels change);
- the right side of ``UNLESS`` that defines it (the right side's own complex event), then the
  left side (the left side's complex event);
- otherwise the whole complex event the query reports (before SELECT's projection).
"""

from __future__ import annotations

from ceql.lang import ast
from ceql.lang.visit import Visitor, walk


class LabelIndex(Visitor):
    """The labels a formula's complex events may carry (an over-approximation: some CEs may
    lack some of them), memoised per node of one tree. The right side of UNLESS reports
    nothing, so it defines nothing."""

    pass_name = "the label definition analysis"
    families = (ast.FORMULA_NODES,)

    def __init__(self) -> None:
        self.memo: dict[int, tuple[ast.Formula, frozenset[str]]] = {}

    def defined(self, node: ast.Formula) -> frozenset[str]:
        """The labels the complex events of ``node`` may carry."""
        hit = self.memo.get(id(node))
        if hit is None:
            hit = (node, self.visit(node))  # the node is kept so that its id stays unique
            self.memo[id(node)] = hit
        return hit[1]

    def visit_EventType(self, node: ast.EventType) -> frozenset[str]:
        return frozenset({node.name})

    def visit_NotEvent(self, node: ast.NotEvent) -> frozenset[str]:
        return frozenset()

    def visit_Label(self, node: ast.Label) -> frozenset[str]:
        return self.defined(node.body) | {node.label}

    def _body(self, node) -> frozenset[str]:
        return self.defined(node.body)

    visit_Iteration = visit_Filter = visit_PartitionBy = visit_Repeat = visit_Start = _body

    def _parts(self, node) -> frozenset[str]:
        return frozenset().union(*(self.defined(p) for p in node.parts))

    visit_Sequence = visit_Union_ = visit_Conjunction = visit_AllOf = _parts

    def visit_Unless(self, node: ast.Unless) -> frozenset[str]:
        return self.defined(node.left)

    def visit_Rename(self, node: ast.Rename) -> frozenset[str]:
        mapping = dict(node.mapping)
        return frozenset(mapping.get(label, label) for label in self.defined(node.body))

    def visit_Project(self, node: ast.Project) -> frozenset[str]:
        return self.defined(node.body) & frozenset(node.labels)


def defined_labels(node: ast.Formula) -> frozenset[str]:
    """The labels (event type names, AS labels, renaming targets) that the complex events of
    ``node`` may carry. (Use one LabelIndex to ask about many nodes of one tree.)"""
    return LabelIndex().defined(node)


def labels_anywhere(formula: ast.Formula) -> frozenset[str]:
    """Every label the formula defines somewhere (inside UNLESS right sides and projected or
    renamed parts too): the labels a condition may name. Event types inside NOT(...) are not
    labels (NOT reports no event)."""
    out: set[str] = set()
    skip: set[int] = set()
    for node in walk(formula, formulas_only=True):
        if isinstance(node, ast.NotEvent):
            skip.add(id(node.atom))
        elif isinstance(node, ast.EventType) and id(node) not in skip:
            out.add(node.name)
        elif isinstance(node, ast.Label):
            out.add(node.label)
        elif isinstance(node, ast.Rename):
            out.update(target for _, target in node.mapping)
    return frozenset(out)


def cond_labels(cond: ast.Node) -> frozenset[str]:
    """The labels a condition (or expression) names: in ``x[...]``, ``x.a``, aggregates, PREV."""
    out: set[str] = set()
    for node in walk(cond):
        if isinstance(node, ast.LabelCond):
            out.add(node.label)
        elif isinstance(node, ast.Attr) and node.label is not None:
            out.add(node.label)
        elif isinstance(node, (ast.Aggregate, ast.Prev)) and node.label is not None:
            out.add(node.label)
    return frozenset(out)


def own_labels(node: ast.Filter | ast.NotEvent, index: LabelIndex | None = None) -> frozenset[str]:
    """The labels a condition reads from the sub-complex event it filters."""
    if isinstance(node, ast.NotEvent):
        return frozenset({node.atom.name})
    return (index or LabelIndex()).defined(node.body)


def free_labels(node: ast.Filter | ast.NotEvent, index: LabelIndex | None = None) -> frozenset[str]:
    """The labels the condition of a FILTER (or of NOT(E FILTER ...)) names but its formula does
    not define: they are read from an enclosing scope (see the module docstring)."""
    if node.cond is None:
        return frozenset()
    return cond_labels(node.cond) - own_labels(node, index)


#: Formula node classes that are scopes for free labels, and the child that is the scope.
SCOPE_BODIES = (ast.Iteration, ast.Rename, ast.Project)
