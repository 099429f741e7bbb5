"""Whether a PROJECT may drop an event the kernel's checks keep in the enumerated complex event.

With checks per complex event (conditions across events, PARTITION BY over labels, UNLESS's
right side), the automaton marks the events the checks read under the compiler's own labels,
so they stay in the enumerated complex event even where a ``PROJECT`` drops every public label
they carry. The kernel's window measures the enumerated complex event, while WITHIN measures the
reported (projected) one (docs/semantics.md, section 5): where such an event lies outside the
span of the kept ones, the kernel would drop complex events the reference keeps (and the
projected one may end long before its trigger: no finite looser window bounds them).

Where no event under a PROJECT loses all its labels, every marked event keeps a public label
(the events a check reads, and the events a ``NOT(E FILTER c)`` or UNLESS's right side reads
lie between kept events), so the enumerated and the reported complex event have the same
events and the kernel's window is exact. ``drops_events`` decides this on the formula.
"""

from __future__ import annotations

from ceql.lang import ast
from ceql.lang.visit import formula_children

#: One step between an event and the root: a label added (AS), a renaming or a projection.
_Step = tuple[str, object]


def drops_events(formula: ast.Formula) -> bool:
    """Whether some event a complex event of ``formula`` may hold (or a ``NOT(E FILTER c)``
    may read) under a ``PROJECT`` ends with no label at the root: PROJECT drops it."""
    stack: list[tuple[ast.Node, tuple[_Step, ...]]] = [(formula, ())]
    while stack:
        node, path = stack.pop()
        projected = any(kind == "project" for kind, _ in path)
        if isinstance(node, ast.EventType):
            if projected and not _labels_at_root(node, path):
                return True
            continue
        if isinstance(node, ast.NotEvent):
            # The event it reads with a condition is marked under the compiler's labels only.
            if projected and node.cond is not None:
                return True
            continue
        if isinstance(node, ast.Unless):
            # The right side reports nothing; the events it reads lie in the left side's span.
            stack.append((node.left, path))
            continue
        if isinstance(node, ast.Label):
            step: _Step | None = ("add", node.label)
        elif isinstance(node, ast.Rename):
            step = ("rename", dict(node.mapping))
        elif isinstance(node, ast.Project):
            step = ("project", frozenset(node.labels))
        else:
            step = None
        inner = path + (step,) if step is not None else path
        stack.extend((child, inner) for child in formula_children(node))
    return False


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
