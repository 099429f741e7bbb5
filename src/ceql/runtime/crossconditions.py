"""Checking cross-event conditions (``x.price < y.price``) on enumerated complex events.

A condition holds when it holds for every combination of one event per label it names
(vacuously when a label has no event). Values are the attributes stored with each reported
event; missing values and divisions by zero make the comparison false, as everywhere else.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from typing import Any

from ceql.compile.compiler import CrossCondition
from ceql.lang import ast

_MISSING = object()


def compile_condition(condition: CrossCondition, attribute_index: dict[str, int]) -> Callable[[list], bool]:
    """A function of a CE's reported events [(labels, values), ...] -> whether the condition holds."""
    labels = condition.labels
    scope = condition.scope_label
    compare = condition.compare

    def check(events: list) -> bool:
        choices = []
        for label in labels:
            chosen = [
                values for event_labels, values in events if label in event_labels and scope in event_labels
            ]
            if not chosen:
                return True
            choices.append(chosen)
        for combination in itertools.product(*choices):
            env = dict(zip(labels, combination))
            if not _compare(compare, env, attribute_index):
                return False
        return True

    return check


def _compare(node: ast.Compare, env: dict[str, Any], index: dict[str, int]) -> bool:
    left = _value(node.left, env, index)
    right = _value(node.right, env, index)
    if left is _MISSING or right is _MISSING:
        return False
    if isinstance(left, float) and math.isnan(left) or isinstance(right, float) and math.isnan(right):
        return False
    op = node.op
    if op == "=":
        return left == right
    if op == "!=":
        return left != right
    if op == "<":
        return left < right
    if op == "<=":
        return left <= right
    if op == ">":
        return left > right
    return left >= right


def _value(expr: ast.Expr, env: dict[str, Any], index: dict[str, int]) -> Any:
    if isinstance(expr, ast.Attr):
        value = env[expr.label][index[expr.name]]
        return _MISSING if value is None else value
    if isinstance(expr, ast.Literal):
        return expr.value
    if isinstance(expr, ast.Neg):
        value = _value(expr.operand, env, index)
        return value if value is _MISSING else -value
    left = _value(expr.left, env, index)
    right = _value(expr.right, env, index)
    if left is _MISSING or right is _MISSING:
        return _MISSING
    if expr.op == "+":
        return left + right
    if expr.op == "-":
        return left - right
    if expr.op == "*":
        return left * right
    if right == 0:
        return _MISSING
    if expr.op == "/":
        return left / right
    if isinstance(left, int) and isinstance(right, int):
        return (
            left - right * int(left / right)
            if max(abs(left), abs(right)) >= 2**53
            else int(math.fmod(left, right))
        )
    return math.fmod(left, right)
