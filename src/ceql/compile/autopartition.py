"""Turn an equality that links every event of a pattern into a partition key.

``(SELL AS x; BUY AS y) FILTER x.volume = y.volume`` only reports complex events whose events
share one volume, so it can be evaluated per volume, like ``PARTITION BY [volume]``, which
never enumerates the pairs with different volumes. This is exact only when nothing in the
query looks at events outside the complex event or depends on adjacency: no ``:``, ``:+``,
``NOT(...)``, ``UNLESS`` or STRICT (PARTITION BY makes those relative to the sub-stream), no
CONSUME BY PARTITION (it would become per key), and every event of the pattern must be covered
by the linked labels, each of which must occur in every complex event (a universal comparison
with an empty label holds vacuously). The condition itself is still checked, and matches report
no partition.
"""

from __future__ import annotations

from ceql.lang import ast
from ceql.lang.analysis import CheckedQuery


def partition_attribute(checked: CheckedQuery) -> str | None:
    """The attribute to partition by, or None when the rewrite could change the result."""
    query = checked.query
    if query.partition_by or query.effective_strategy == "STRICT" or query.effective_consume == "PARTITION":
        return None
    formula = query.formula
    conjuncts: list[ast.Cond] = []
    while isinstance(formula, ast.Filter):
        cond = formula.cond
        conjuncts.extend(cond.parts if isinstance(cond, ast.And) else [cond])
        formula = formula.body
    if not conjuncts or not _plain(formula):
        return None
    links: dict[str, list[tuple[str, str]]] = {}
    for cond in conjuncts:
        if (
            isinstance(cond, ast.Compare)
            and cond.op == "="
            and isinstance(cond.left, ast.Attr)
            and isinstance(cond.right, ast.Attr)
            and cond.left.label
            and cond.right.label
            and cond.left.name == cond.right.name
            and cond.left.label != cond.right.label
        ):
            links.setdefault(cond.left.name, []).append((cond.left.label, cond.right.label))
    always = mandatory_labels(formula)
    for attribute, edges in sorted(links.items()):
        labels = _component(edges)
        # Universal comparisons hold vacuously when a label is empty: every linked label must
        # be in every complex event for the equality to tie all the events together.
        if labels is None or not labels <= always or not _covers(formula, labels):
            continue
        if all(checked.schema.event_types[t].attribute(attribute) is not None for t in checked.used_types):
            return attribute
    return None


def mandatory_labels(formula: ast.Formula) -> set[str]:
    """Labels that every complex event of the formula has at least one event of."""
    if isinstance(formula, ast.EventType):
        return {formula.name}
    if isinstance(formula, ast.NotEvent):
        return set()
    if isinstance(formula, ast.Label):
        inner = mandatory_labels(formula.body)
        return inner | {formula.label} if _reports(formula.body) else inner
    if isinstance(formula, ast.Union_):
        parts = [mandatory_labels(p) for p in formula.parts]
        return set.intersection(*parts)
    if isinstance(formula, (ast.Filter, ast.Iteration)):
        return mandatory_labels(formula.body)
    if isinstance(formula, ast.Unless):
        return mandatory_labels(formula.left)
    out: set[str] = set()
    for part in ast.children(formula):
        out |= mandatory_labels(part)
    return out


def _reports(formula: ast.Formula) -> bool:
    """Whether every complex event of the formula has at least one event."""
    if isinstance(formula, ast.EventType):
        return True
    if isinstance(formula, ast.NotEvent):
        return False
    if isinstance(formula, (ast.Label, ast.Filter, ast.Iteration)):
        return _reports(formula.body)
    if isinstance(formula, ast.Union_):
        return all(_reports(p) for p in formula.parts)
    if isinstance(formula, ast.Unless):
        return _reports(formula.left)
    return any(_reports(p) for p in ast.children(formula))


def _plain(formula: ast.Formula) -> bool:
    """No adjacency, NOT or UNLESS anywhere."""
    stack = [formula]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.NotEvent, ast.Unless)):
            return False
        if isinstance(node, (ast.Sequence, ast.Iteration)) and node.contiguous:
            return False
        stack.extend(ast.children(node))
    return True


def _component(edges: list[tuple[str, str]]) -> set[str] | None:
    """The labels of the edges if they form one connected component, else None."""
    labels = {label for edge in edges for label in edge}
    start = next(iter(labels))
    seen, frontier = {start}, [start]
    while frontier:
        current = frontier.pop()
        for a, b in edges:
            for other in (b,) if a == current else (a,) if b == current else ():
                if other not in seen:
                    seen.add(other)
                    frontier.append(other)
    return labels if seen == labels else None


def _covers(formula: ast.Formula, labels: set[str]) -> bool:
    """Whether every event a complex event can report carries one of ``labels``."""
    stack: list[tuple[ast.Formula, bool]] = [(formula, False)]
    while stack:
        node, covered = stack.pop()
        if isinstance(node, ast.Label):
            stack.append((node.body, covered or node.label in labels))
        elif isinstance(node, ast.EventType):
            if not covered and node.name not in labels:
                return False
        else:
            stack.extend((child, covered) for child in ast.children(node))
    return True
