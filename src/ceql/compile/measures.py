"""Measures: SELECT items that are expressions, computed per reported complex event.

A measure is evaluated over the whole complex event (all its events, not only the projected
labels; docs/semantics.md): ``x.a`` is the value on x's event when x holds at most one event
(None when it holds none), and the tuple of values in stream order when x may hold several;
``COUNT(x)``, ``SUM(x.a)``, ``AVG``, ``MIN``, ``MAX``, ``FIRST(x).a``, ``LAST(x).a`` aggregate
x's events, ``COUNT(*)`` counts every event. Arithmetic follows compile/values.py.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ceql.compile.registers import aggregate_value
from ceql.compile.values import MISSING, compile_expr, expression_nodes
from ceql.errors import UnsupportedQueryError
from ceql.lang import ast


def _read(value: Any) -> Any:
    """A value read from an event: NaN is a missing value (docs/semantics.md section 4)."""
    return None if isinstance(value, float) and value != value else value


class Measures:
    """The compiled measures of a query."""

    def __init__(self, measures: tuple[ast.Measure, ...], many: set[str], attribute: Callable[[str], int]) -> None:
        self.names = tuple(m.name for m in measures)
        self.many = many
        self._fns = [compile_expr(m.expr, self._resolve_factory(attribute)) for m in measures]

    def _resolve_factory(self, attribute: Callable[[str], int]):
        many = self.many

        def resolve(node: ast.Node):
            if isinstance(node, ast.Attr):
                if node.label is None:
                    raise UnsupportedQueryError(f"measure attribute {node.name} needs a label (x.{node.name})")
                label, index = node.label, attribute(node.name)
                if label in many:
                    return lambda env: tuple(_read(values[index]) for values in env.get(label, ()))

                def single(env: dict) -> Any:
                    events = env.get(label)
                    return _read(events[0][index]) if events else None

                return single
            if isinstance(node, ast.Aggregate):
                label = node.label
                attrs: tuple[str, ...] = (node.attr,) if node.attr else ()
                index = attribute(node.attr) if node.attr else None

                def aggregate(env: dict) -> Any:
                    if label is None:
                        events = env["*"]
                    else:
                        events = env.get(label, ())
                    rows = [(values[index],) for values in events] if index is not None else list(events)
                    value = aggregate_value(node, tuple(rows), attrs)
                    return _read(value) if node.func in ("FIRST", "LAST") else value

                return aggregate
            raise UnsupportedQueryError("PREV is only allowed in FILTER conditions")

        return resolve

    @staticmethod
    def needed(measures: tuple[ast.Measure, ...]) -> list[str]:
        """The attributes the measures read."""
        names: list[str] = []
        for measure in measures:
            for node in expression_nodes(measure.expr):
                attr = getattr(node, "name", None) if isinstance(node, ast.Attr) else getattr(node, "attr", None)
                if attr and attr not in names:
                    names.append(attr)
        return names

    def compute(self, events: list[tuple[frozenset, tuple]]) -> dict[str, Any]:
        """Measure name -> value for one complex event, given its events in stream order as
        (labels, values) pairs."""
        env: dict[str, list] = {"*": []}
        for labels, values in events:
            env["*"].append(values)
            for label in labels:
                env.setdefault(label, []).append(values)
        out = {}
        for name, fn in zip(self.names, self._fns):
            value = fn(env)
            out[name] = _present(value)
        return out


def _present(value: Any) -> Any:
    """A measure's value; a missing one is None, and NaN is a missing value (docs/semantics.md
    3.2), also inside the list of a label that holds several events."""
    if value is MISSING or (isinstance(value, float) and value != value):
        return None
    if isinstance(value, tuple):
        return tuple(_present(v) for v in value)
    return value
