"""Checking cross-event conditions (``x.price < y.price``) on enumerated complex events.

A FILTER conjunct with a cross-event comparison is checked on each complex event, over the
events its FILTER applies to (those carrying the condition's scope label). Atoms are universal:
``x[p]`` holds when every x-event satisfies p (read from the event's predicate bits), and a
comparison holds when it holds for every combination of one event per label it names
(vacuously when a label has no event). Missing values and divisions by zero make a comparison
false, as everywhere else.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from typing import Any

from ceql.compile.compiler import CrossCondition, compare_labels
from ceql.lang import ast

_MISSING = object()

# An event as the check sees it: (labels, attribute values, predicate bit mask).
Event = tuple


def compile_condition(condition: CrossCondition, attribute_index: dict[str, int]) -> Callable[[list], bool]:
    """A function of a CE's events [(labels, values, mask), ...] -> whether the condition holds."""
    scope = condition.scope_label

    def evaluate(cond: ast.Cond, events: list[Event]) -> bool:
        if isinstance(cond, ast.And):
            return all(evaluate(part, events) for part in cond.parts)
        if isinstance(cond, ast.Or):
            return any(evaluate(part, events) for part in cond.parts)
        pid = condition.unary.get(id(cond))
        if pid is not None:
            label = cond.label if isinstance(cond, ast.LabelCond) else compare_labels(cond)[0]
            return all((mask >> pid) & 1 for labels, _, mask in events if label in labels)
        labels = compare_labels(cond)
        choices = []
        for label in labels:
            chosen = [values for event_labels, values, _ in events if label in event_labels]
            if not chosen:
                return True
            choices.append(chosen)
        for combination in itertools.product(*choices):
            if not _compare(cond, dict(zip(labels, combination)), attribute_index):
                return False
        return True

    group_label = condition.group_label

    def check(events: list[Event]) -> bool:
        if group_label is None:
            return evaluate(condition.cond, [e for e in events if scope in e[0]])
        # Per iteration: each iteration's events end with one carrying the group label.
        group: list[Event] = []
        for event in events:
            if scope in event[0]:
                group.append(event)
            if group_label in event[0]:
                if not evaluate(condition.cond, group):
                    return False
                group = []
        return not group or evaluate(condition.cond, group)

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
