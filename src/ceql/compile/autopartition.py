"""Turn equalities that link every event of a pattern into a partition key.

``(T AS x ; R AS y) FILTER x.id = y.tweet`` only reports complex events whose T event carries in
``id`` the value its R event carries in ``tweet``, so it can be evaluated per value, routing T
events by ``id`` and R events by ``tweet``: no run ever meets an event of another value, and the
equality itself need not be checked. The same holds for ``PARTITION BY [x.id, y.tweet]`` (the
clause over label attributes). This is exact only when nothing in the query looks at events
outside the complex event or depends on adjacency: no ``:``, ``:+``, ``NOT(...)``, ``UNLESS``,
START, projection or STRICT (a sub-stream would change them), no CONSUME BY PARTITION (it would
become per key); every linked label must occur in every complex event (a universal comparison
with an empty label holds vacuously), every event the pattern reports must carry a linked
label, and each event type must play roles with one attribute only (so that it has one key).
"""

from __future__ import annotations

import dataclasses

from ceql.compile.compiler import defined_labels, mandatory_labels
from ceql.lang import ast
from ceql.lang.analysis import CheckedQuery
from ceql.lang.visit import formula_children, walk


@dataclasses.dataclass(frozen=True)
class AutoPartition:
    """The routing: event type -> the attribute that is its key; and the formula without the
    conditions the routing makes true."""

    attributes: dict[str, str]
    formula: ast.Formula
    linked: tuple[str, ...]  # the conditions replaced, as text (for explain)


def partition_attribute(checked: CheckedQuery) -> str | None:
    """The single attribute name of the routing, when every type is keyed by the same one."""
    found = auto_partition(checked, getattr(checked, "formula", None) or checked.query.formula)
    if found is None:
        return None
    names = set(found.attributes.values())
    return names.pop() if len(names) == 1 else None


def auto_partition(checked: CheckedQuery, formula: ast.Formula) -> AutoPartition | None:
    """The routing that makes the linking equalities redundant, or None when it could change
    the result."""
    query = checked.query
    if query.partition_by or query.effective_strategy == "STRICT" or query.effective_consume == "PARTITION":
        return None
    # Peel the top-level FILTERs (their equality conjuncts are candidates) and PART-BYs.
    conjuncts: list[ast.Cond] = []
    parts_by: list[tuple[ast.Attr, ...]] = []
    body = formula
    while isinstance(body, (ast.Filter, ast.PartitionBy)):
        if isinstance(body, ast.Filter):
            cond = body.cond
            conjuncts.extend(cond.parts if isinstance(cond, ast.And) else [cond])
        else:
            parts_by.append(body.keys)
        body = body.body
    if query.partition_labels:
        parts_by.append(query.partition_labels)
    if not _plain(body):
        return None
    edges: list[tuple[tuple[str, str], tuple[str, str]]] = []
    linking: list[ast.Cond] = []
    for cond in conjuncts:
        if (
            isinstance(cond, ast.Compare)
            and cond.op == "="
            and isinstance(cond.left, ast.Attr)
            and isinstance(cond.right, ast.Attr)
            and cond.left.label
            and cond.right.label
            and cond.left.label != cond.right.label
        ):
            edges.append(((cond.left.label, cond.left.name), (cond.right.label, cond.right.name)))
            linking.append(cond)
    fixed: list = []  # the PART-BY edges: the routing must make them all true (they are dropped)
    for keys in parts_by:
        if any(key.label is None for key in keys):
            return None  # a plain attribute inside a formula: not a routing
        first = (keys[0].label, keys[0].name)
        for key in keys:
            fixed.append((first, (key.label, key.name)))
    edges.extend(fixed)
    if not edges:
        return None
    found = _routing(checked, body, edges)  # (None where the edges are not one connected set)
    if found is not None:
        rest = [c for c in conjuncts if not any(c is link for link in linking)]
        return _routed(body, found, rest, edges)
    # Several attributes per label (``x.id = y.id AND x.p = y.p``): route by one class of equal
    # values that links every event (the first that does, in the query's order); the other
    # equalities stay conditions, checked as before.
    for chosen in _classes(edges):
        inside = [edge for edge in edges if edge[0] in chosen]
        if not all(edge in inside for edge in fixed):
            continue
        found = _routing(checked, body, inside)
        if found is not None:
            made_true = [c for c, edge in zip(linking, edges) if edge in inside]
            rest = [c for c in conjuncts if not any(c is link for link in made_true)]
            return _routed(body, found, rest, inside)
    return None


def _routing(checked: CheckedQuery, body: ast.Formula, edges: list) -> dict[str, str] | None:
    """Event type -> key attribute routing by ``edges`` (one connected set of roles), or None
    when that could change the result."""
    roles = _component(edges)
    if roles is None:
        return None
    labels = {label for label, _ in roles}
    if not labels <= mandatory_labels(body) or not _covers(body, labels):
        return None
    # Each event type gets one attribute: the one of every role it can play.
    label_types = checked.label_types
    attributes: dict[str, str] = {}
    for label, attribute in roles:
        for type_name in label_types.get(label, ()):
            if attributes.setdefault(type_name, attribute) != attribute:
                return None
    reported = _reported_types(body)
    if not reported <= attributes.keys():
        return None
    schema = checked.schema
    for type_name, attribute in attributes.items():
        if schema.event_types[type_name].attribute(attribute) is None:
            return None
    return attributes


def _routed(body: ast.Formula, attributes: dict[str, str], rest: list, edges: list) -> AutoPartition:
    """The routed formula: the top-level FILTERs less the equalities the routing makes true
    (``rest`` is what stays), PART-BYs gone."""
    routed = body
    if rest:
        routed = ast.Filter(body, rest[0] if len(rest) == 1 else ast.And(tuple(rest)))
    linked = tuple(f"{a[0]}.{a[1]} = {b[0]}.{b[1]}" for a, b in edges)
    return AutoPartition(attributes, routed, linked)


def _classes(edges: list) -> list[set]:
    """The classes of (label, attribute) roles the equalities make equal, in order of first
    appearance."""
    classes: list[set] = []
    for a, b in edges:
        touching = [c for c in classes if a in c or b in c]
        merged = set().union(*touching) | {a, b}
        classes = [c for c in classes if not any(c is t for t in touching)] + [merged]
    order = {role: i for i, role in enumerate(role for edge in edges for role in edge)}
    return sorted(classes, key=lambda c: min(order[role] for role in c))


def _plain(formula: ast.Formula) -> bool:
    """No adjacency, NOT, UNLESS, START, projection or renaming anywhere."""
    for node in walk(formula, formulas_only=True):
        if isinstance(node, (ast.NotEvent, ast.Unless, ast.Start, ast.Project, ast.Rename, ast.PartitionBy)):
            return False
        if isinstance(node, (ast.Sequence, ast.Iteration)) and node.contiguous:
            return False
    return True


def _component(edges: list) -> set | None:
    """The roles (label, attribute) of the edges if they form one connected component."""
    roles = {role for edge in edges for role in edge}
    labels = {label for label, _ in roles}
    start = next(iter(labels))
    seen, frontier = {start}, [start]
    while frontier:
        current = frontier.pop()
        for (a, _), (b, _) in edges:
            for other in (b,) if a == current else (a,) if b == current else ():
                if other not in seen:
                    seen.add(other)
                    frontier.append(other)
    return roles if seen == labels else None


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
            stack.extend((child, covered) for child in formula_children(node))
    return True


def _reported_types(formula: ast.Formula) -> set[str]:
    """The event types whose events the formula may report."""
    types = {node.name for node in walk(formula, formulas_only=True) if isinstance(node, ast.EventType)}
    return defined_labels(formula) & types


def absence_routing(checked: CheckedQuery) -> ast.Formula | None:
    """For NOT FOLLOWED BY's cancelling query ``(f AS mark) ; (g FILTER c)``: the formula
    ``((f AS mark) ; g) FILTER c`` when that one routes per value (``auto_partition``), else
    None. The two are equal when the labels of f and g are apart: c reads g's labels, which
    only g's events carry, and f's labels as free labels, read from the whole complex event
    either way. So the recipe's ``Payment AS p FILTER p.order = o.id`` evaluates per order."""
    formula = checked.formula
    if not (isinstance(formula, ast.Sequence) and not formula.contiguous and len(formula.parts) == 2):
        return None
    marked, absent = formula.parts
    if not isinstance(absent, ast.Filter):
        return None
    if defined_labels(marked) & defined_labels(absent.body):
        return None
    hoisted = ast.Filter(ast.Sequence((marked, absent.body), pos=formula.pos), absent.cond)
    return hoisted if auto_partition(checked, hoisted) is not None else None
