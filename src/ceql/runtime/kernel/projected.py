"""Whether a PROJECT may drop an event the kernel's checks keep in the enumerated complex event.

With checks per complex event (conditions across events, PARTITION BY over labels, UNLESS's
right side), the automaton marks the events the checks read under the compiler's own labels,
so they stay in the enumerated complex event even where a ``PROJECT`` drops every public label
they carry. The kernel's window measures the enumerated complex event, while WITHIN measures the
reported (projected) one (docs/semantics.md, section 5): where such an event lies outside the
span of the kept ones, the kernel would drop complex events the reference keeps (and the
projected one may end long before its trigger: no finite looser window bounds them).

Where no event a check reads loses all its labels under a PROJECT, every marked event keeps a
public label (events no check reads are not marked at all, and the events a ``NOT(E FILTER
c)`` or UNLESS's right side reads lie between kept events), so the enumerated and the reported
complex event have the same events and the kernel's window is exact. ``drops_events`` decides
this on the formula, conservatively (a label named by any condition counts as read, and a
``NOT(E FILTER c)`` under a PROJECT as dropping its event).
"""

from __future__ import annotations

from ceql.lang import ast
from ceql.lang.scopes import cond_labels
from ceql.lang.visit import formula_children, walk

#: One step between an event and the root: a label added (AS), a renaming or a projection.
_Step = tuple[str, object]


def drops_events(formula: ast.Formula, partition_labels: tuple[ast.Attr, ...] = ()) -> bool:
    """Whether some event a check reads (a condition's or key's label, or every event under a
    condition or key that reads the complex event as a whole: ``COUNT(*)``, a bare attribute)
    ends with no label under a ``PROJECT``, or a ``NOT(E FILTER c)`` under a PROJECT reads one.
    Events no check reads are not marked, so PROJECT dropping them is harmless."""
    read = {key.label for key in partition_labels if key.label is not None}
    whole = any(key.label is None for key in partition_labels)
    for node in walk(formula, formulas_only=True):
        if isinstance(node, (ast.Filter, ast.NotEvent)) and node.cond is not None:
            read |= cond_labels(node.cond)
        elif isinstance(node, ast.PartitionBy):
            read |= {key.label for key in node.keys if key.label is not None}
    stack: list[tuple[ast.Node, tuple[_Step, ...], bool]] = [(formula, (), whole)]
    while stack:
        node, path, star = stack.pop()
        projected = any(kind == "project" for kind, _ in path)
        if isinstance(node, ast.EventType):
            if projected and not _labels_at_root(node, path) and (star or _carried(node, path) & read):
                return True
            continue
        if isinstance(node, ast.NotEvent):
            # The event it reads with a condition is marked under the compiler's labels only.
            if projected and node.cond is not None:
                return True
            continue
        if isinstance(node, ast.Unless):
            # The right side reports nothing; the events it reads lie in the left side's span.
            # With conditions there, the left side's events are all marked (its span).
            checked = any(isinstance(n, (ast.Filter, ast.PartitionBy, ast.NotEvent)) for n in walk(node.right, formulas_only=True))
            stack.append((node.left, path, star or checked))
            continue
        if isinstance(node, ast.Label):
            step: _Step | None = ("add", node.label)
        elif isinstance(node, ast.Rename):
            step = ("rename", dict(node.mapping))
        elif isinstance(node, ast.Project):
            step = ("project", frozenset(node.labels))
        else:
            step = None
        if isinstance(node, ast.Filter):
            star = star or _reads_whole(node.cond)
        elif isinstance(node, ast.PartitionBy):
            star = star or any(key.label is None for key in node.keys)
        inner = path + (step,) if step is not None else path
        stack.extend((child, inner, star) for child in formula_children(node))
    return False


def _reads_whole(cond: ast.Node) -> bool:
    """Whether a condition reads every event of the complex event it filters (``COUNT(*)``,
    an aggregate or attribute without a label)."""
    return any(isinstance(n, (ast.Attr, ast.Aggregate)) and n.label is None for n in walk(cond))


def _carried(atom: ast.EventType, path: tuple[_Step, ...]) -> frozenset[str]:
    """Every label an event read by ``atom`` carries somewhere between the atom and the root
    (its type, AS labels, renaming targets): the labels a condition may read it under."""
    labels = {atom.name}
    for kind, value in path:
        if kind == "add":
            labels.add(value)  # type: ignore[arg-type]
        elif kind == "rename":
            labels.update(value.values())  # type: ignore[union-attr]
    return frozenset(labels)


def _labels_at_root(atom: ast.EventType, path: tuple[_Step, ...]) -> frozenset[str]:
    """The labels an event read by ``atom`` carries at the root: its type label (none for an
    event of a named stream, conservatively), then each step from the innermost out."""
    labels = frozenset() if atom.stream is not None else frozenset({atom.name})
    for kind, value in reversed(path):
        if kind == "add":
            labels = labels | {value}
        elif kind == "rename":
            labels = frozenset(value.get(label, label) for label in labels)  # type: ignore[union-attr]
        else:
            labels = labels & value  # type: ignore[operator]
    return labels
