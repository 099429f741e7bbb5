"""One traversal of the syntax tree, and visitors that fail loudly on nodes they do not know.

Every node class's *child slots* (the dataclass fields that hold nodes or tuples of nodes) are
derived once from its type hints, so a new node class or field is traversed without touching
this module. ``walk`` and ``transform`` are iterative where it matters and never skip a child.

A ``Visitor`` dispatches on the node's class to ``visit_<ClassName>``; a missing method raises
``UnhandledNode`` naming the pass and the node, instead of silently doing nothing. A visitor
declares the node families it must cover (``families``); ``missing_methods`` lists the gaps and
the test suite checks that every visitor covers its families.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Callable, Iterator
from functools import cache
from typing import Any, ClassVar

from ceql.lang import ast


class UnhandledNode(TypeError):
    """A pass met a node class it has no rule for (a bug in ceql, not in the query)."""


# --------------------------------------------------------------------------- child slots


def _leaf_types(hint: Any) -> Iterator[Any]:
    args = typing.get_args(hint)
    if not args:
        yield hint
        return
    for arg in args:
        if arg is not Ellipsis:
            yield from _leaf_types(arg)


def _is_node_type(hint: Any) -> bool:
    return any(isinstance(leaf, type) and issubclass(leaf, ast.Node) for leaf in _leaf_types(hint))


def _is_formula_type(hint: Any) -> bool:
    return any(isinstance(leaf, type) and leaf in ast.FORMULA_NODES for leaf in _leaf_types(hint))


@cache
def child_slots(cls: type) -> tuple[str, ...]:
    """The fields of a node class that hold nodes (or tuples of nodes), in declaration order."""
    hints = typing.get_type_hints(cls, vars(ast))
    return tuple(f.name for f in dataclasses.fields(cls) if f.name != "pos" and _is_node_type(hints[f.name]))


@cache
def formula_slots(cls: type) -> tuple[str, ...]:
    """The fields of a node class that hold sub-formulas (conditions and expressions excluded)."""
    hints = typing.get_type_hints(cls, vars(ast))
    return tuple(name for name in child_slots(cls) if _is_formula_type(hints[name]))


def _values(node: ast.Node, slots: tuple[str, ...]) -> Iterator[ast.Node]:
    for name in slots:
        value = getattr(node, name)
        if isinstance(value, tuple):
            yield from (item for item in value if isinstance(item, ast.Node))
        elif isinstance(value, ast.Node):
            yield value


def children(node: ast.Node) -> tuple[ast.Node, ...]:
    """Every direct child node (formulas, conditions, expressions), in field order."""
    return tuple(_values(node, child_slots(type(node))))


def formula_children(node: ast.Node) -> tuple[ast.Node, ...]:
    """The direct sub-formulas of a formula node (conditions are not included)."""
    return tuple(_values(node, formula_slots(type(node))))


# --------------------------------------------------------------------------- traversals


def walk(root: ast.Node, formulas_only: bool = False) -> Iterator[ast.Node]:
    """Every node under ``root`` (itself included), pre-order, iteratively."""
    step = formula_children if formulas_only else children
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(step(node)))


def walk_depth(root: ast.Node) -> Iterator[tuple[ast.Node, int]]:
    """``(node, depth)`` for every node under ``root`` (the root has depth 1), iteratively."""
    stack = [(root, 1)]
    while stack:
        node, depth = stack.pop()
        yield node, depth
        stack.extend((child, depth + 1) for child in reversed(children(node)))


def transform(root: ast.Node, rewrite: Callable[[ast.Node], ast.Node]) -> ast.Node:
    """Rebuild the tree bottom-up: every node is passed to ``rewrite`` after its children were.

    A node whose children are unchanged is passed as is (positions are kept); ``rewrite``
    returns the node itself to keep it."""
    done: dict[int, ast.Node] = {}
    stack: list[tuple[ast.Node, bool]] = [(root, False)]
    while stack:
        node, expanded = stack.pop()
        if id(node) in done:
            continue
        if not expanded:
            stack.append((node, True))
            stack.extend((child, False) for child in children(node) if id(child) not in done)
            continue
        changes = {}
        for name in child_slots(type(node)):
            value = getattr(node, name)
            if isinstance(value, tuple):
                new = tuple(done.get(id(item), item) if isinstance(item, ast.Node) else item for item in value)
                if any(a is not b for a, b in zip(new, value)):
                    changes[name] = new
            elif isinstance(value, ast.Node):
                new_value = done[id(value)]
                if new_value is not value:
                    changes[name] = new_value
        rebuilt = dataclasses.replace(node, **changes) if changes else node  # keeps pos
        done[id(node)] = rewrite(rebuilt)
    return done[id(root)]


# --------------------------------------------------------------------------- visitors


class Visitor:
    """Base class of passes over the tree: ``visit(node, ...)`` calls ``visit_<ClassName>``.

    Subclasses set ``pass_name`` (used in error messages) and ``families`` (tuples of node
    classes they must handle, e.g. ``(ast.FORMULA_NODES,)``)."""

    pass_name: ClassVar[str] = "a pass over the query"
    families: ClassVar[tuple[tuple[type, ...], ...]] = ()
    registry: ClassVar[list[type[Visitor]]] = []

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        Visitor.registry.append(cls)

    def visit(self, node: ast.Node, *args: Any, **kwargs: Any) -> Any:
        """Dispatch to ``visit_<ClassName>``; raise UnhandledNode if there is none."""
        return _method(type(self), type(node))(self, node, *args, **kwargs)

    @classmethod
    def missing_methods(cls) -> list[str]:
        """The node classes of ``families`` this visitor has no method for."""
        return [
            node_cls.__name__
            for family in cls.families
            for node_cls in family
            if getattr(cls, "visit_" + node_cls.__name__, None) is None
        ]


@cache
def _method(visitor_cls: type[Visitor], node_cls: type) -> Callable[..., Any]:
    method = getattr(visitor_cls, "visit_" + node_cls.__name__, None)
    if method is None:
        raise UnhandledNode(
            f"{visitor_cls.pass_name} ({visitor_cls.__name__}) has no rule for {node_cls.__name__} nodes"
        )
    return method


__all__ = [
    "UnhandledNode",
    "Visitor",
    "child_slots",
    "children",
    "formula_children",
    "formula_slots",
    "transform",
    "walk",
    "walk_depth",
]
