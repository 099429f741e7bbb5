"""Conditions, expressions, aggregates and measures, evaluated literally (docs/semantics.md).

Values are Python values: integer arithmetic is exact (``/`` on two integers truncates toward
zero, ``%`` is the truncated remainder, with the sign of the dividend); a missing attribute,
``None``, NaN, a division by zero and an aggregate over no value are *missing*, and a comparison
with a missing value is false.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ceql.lang import ast
from ceql.lang.visit import Visitor, walk


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


def get(event: Mapping[str, Any], name: str) -> Any:
    """An attribute's value, or MISSING (absent, None or NaN)."""
    value = event.get(name)
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return MISSING
    return value


@dataclass(frozen=True)
class Env:
    """What a condition sees: label -> positions of its events (sorted), the support of the
    sub-complex event it filters (for ``COUNT(*)``), and the stream."""

    labels: Mapping[str, tuple[int, ...]]
    support: tuple[int, ...]
    stream: Sequence[Mapping[str, Any]]

    @staticmethod
    def of(pairs, support_pairs, stream) -> Env:
        """From (label, position) pairs; ``support_pairs`` give the support."""
        labels: dict[str, list[int]] = {}
        for label, position in pairs:
            labels.setdefault(label, []).append(position)
        support = tuple(sorted({p for _, p in support_pairs}))
        return Env({k: tuple(sorted(v)) for k, v in labels.items()}, support, stream)

    def events(self, label: str) -> tuple[int, ...]:
        return self.labels.get(label, ())


# --------------------------------------------------------------------------- arithmetic


def arith(op: str, left: Any, right: Any) -> Any:
    """``left op right``; MISSING if either is missing or on a division by zero."""
    if left is MISSING or right is MISSING:
        return MISSING
    if op == "+":
        return left + right
    if op == "-":
        return left - right
    if op == "*":
        return left * right
    if right == 0:
        return MISSING
    integers = isinstance(left, int) and isinstance(right, int)
    if op == "/":
        return _trunc_div(left, right) if integers else left / right
    if integers:
        return left - right * _trunc_div(left, right)
    # fmod as IEEE 754 has it: an infinite dividend gives NaN, a missing value (math.fmod
    # raises ValueError there).
    return MISSING if isinstance(left, float) and math.isinf(left) else math.fmod(left, right)


def _trunc_div(left: int, right: int) -> int:
    quotient = abs(left) // abs(right)
    return -quotient if (left < 0) != (right < 0) else quotient


def compare(op: str, left: Any, right: Any) -> bool:
    """A comparison; false when either side is missing."""
    if left is MISSING or right is MISSING:
        return False
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


# --------------------------------------------------------------------------- aggregates


def aggregate(node: ast.Aggregate, env: Env) -> Any:
    """An aggregate over the events of its label in ``env`` (stream order). COUNT of nothing is
    0; the others are MISSING when there is no value (SUM/AVG/MIN/MAX skip missing values)."""
    if node.label is None:
        return len(env.support)
    positions = env.events(node.label)
    if node.func == "COUNT":
        return len(positions)
    if node.func in ("FIRST", "LAST"):
        if not positions:
            return MISSING
        return get(env.stream[positions[0] if node.func == "FIRST" else positions[-1]], node.attr or "")
    values = [v for v in (get(env.stream[p], node.attr or "") for p in positions) if v is not MISSING]
    if not values:
        return MISSING
    if node.func == "MIN":
        return min(values)
    if node.func == "MAX":
        return max(values)
    total = functools.reduce(lambda a, b: a + b, values)  # in stream order
    return total if node.func == "SUM" else total / len(values)


# --------------------------------------------------------------------------- expressions


class _Value(Visitor):
    """The value of an expression; attributes, aggregates and PREV are read through ``ctx``."""

    pass_name = "the reference's expression evaluation"
    families = (ast.EXPR_NODES,)

    def visit_Attr(self, node: ast.Attr, ctx) -> Any:
        return ctx.attr(node)

    def visit_Literal(self, node: ast.Literal, ctx) -> Any:
        return node.value

    def visit_Neg(self, node: ast.Neg, ctx) -> Any:
        value = self.visit(node.operand, ctx)
        return value if value is MISSING else -value

    def visit_Arith(self, node: ast.Arith, ctx) -> Any:
        return arith(node.op, self.visit(node.left, ctx), self.visit(node.right, ctx))

    def visit_Aggregate(self, node: ast.Aggregate, ctx) -> Any:
        return ctx.aggregate(node)

    def visit_Prev(self, node: ast.Prev, ctx) -> Any:
        return ctx.prev(node)


_VALUE = _Value()


class _OneEvent:
    """Bare attributes of one event (inside ``x[...]``)."""

    def __init__(self, event: Mapping[str, Any]) -> None:
        self.event = event

    def attr(self, node: ast.Attr) -> Any:
        return get(self.event, node.name)

    def aggregate(self, node: ast.Aggregate) -> Any:
        raise TypeError("an aggregate inside a one-event predicate")

    prev = aggregate


class _Assignment:
    """A comparison's labels bound to one event each (universal reading), aggregates over the
    environment, and PREV's previous event."""

    def __init__(self, env: Env, bound: Mapping[str, int], previous: int | None) -> None:
        self.env = env
        self.bound = bound
        self.previous = previous

    def attr(self, node: ast.Attr) -> Any:
        return get(self.env.stream[self.bound[node.label or ""]], node.name)

    def aggregate(self, node: ast.Aggregate) -> Any:
        return aggregate(node, self.env)

    def prev(self, node: ast.Prev) -> Any:
        assert self.previous is not None
        return get(self.env.stream[self.previous], node.attr)


def value(expr: ast.Expr, event: Mapping[str, Any]) -> Any:
    """The value of a one-event expression (bare attributes)."""
    return _VALUE.visit(expr, _OneEvent(event))


# --------------------------------------------------------------------------- one-event predicates


class _Pred(Visitor):
    pass_name = "the reference's predicate evaluation"
    families = (ast.PRED_NODES,)

    def visit_And(self, pred: ast.And, event) -> bool:
        return all(self.visit(p, event) for p in pred.parts)

    def visit_Or(self, pred: ast.Or, event) -> bool:
        return any(self.visit(p, event) for p in pred.parts)

    def visit_Not(self, pred: ast.Not, event) -> bool:
        return not self.visit(pred.operand, event)

    def visit_Compare(self, pred: ast.Compare, event) -> bool:
        return compare(pred.op, value(pred.left, event), value(pred.right, event))

    def visit_Like(self, pred: ast.Like, event) -> bool:
        tested = value(pred.operand, event)
        return tested is not MISSING and _like(pred.pattern, tested)

    def visit_InSet(self, pred: ast.InSet, event) -> bool:
        tested = value(pred.operand, event)
        if tested is MISSING:
            return False
        inside = any(tested == v and isinstance(v, bool) == isinstance(tested, bool) for v in pred.values)
        return inside != pred.negated

    def visit_InInterval(self, pred: ast.InInterval, event) -> bool:
        tested = value(pred.operand, event)
        if tested is MISSING:
            return False
        inside = (pred.low is None or tested >= pred.low) and (pred.high is None or tested <= pred.high)
        return inside != pred.negated

    def visit_InRange(self, pred: ast.InRange, event) -> bool:
        tested, low, high = (value(e, event) for e in (pred.operand, pred.low, pred.high))
        if MISSING in (tested, low, high):
            return False
        return low <= tested <= high


_PRED = _Pred()


def eval_pred(pred: ast.Pred, event: Mapping[str, Any]) -> bool:
    """Evaluate a one-event predicate. An atomic test on a missing value is false."""
    return _PRED.visit(pred, event)


@functools.lru_cache(maxsize=4096)
def _like(pattern: str, text: str) -> bool:
    """Full match of an RE2 regular expression (pyarrow's engine, as in the column-wise path)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    result = pc.match_substring_regex(pa.array([text], pa.string()), f"^(?:{pattern})$")
    return bool(result[0].as_py())


# --------------------------------------------------------------------------- FILTER conditions


class _Holds(Visitor):
    pass_name = "the reference's condition evaluation"
    families = (ast.COND_NODES,)

    def visit_And(self, cond: ast.And, env: Env) -> bool:
        return all(self.visit(p, env) for p in cond.parts)

    def visit_Or(self, cond: ast.Or, env: Env) -> bool:
        return any(self.visit(p, env) for p in cond.parts)

    def visit_Not(self, cond: ast.Not, env: Env) -> bool:
        return not self.visit(cond.operand, env)

    def visit_LabelCond(self, cond: ast.LabelCond, env: Env) -> bool:
        return all(eval_pred(cond.pred, env.stream[p]) for p in env.events(cond.label))

    def visit_Compare(self, cond: ast.Compare, env: Env) -> bool:
        """Universal over the events of the labels whose attributes it reads (x.a); with
        PREV(x.a), over every event of x after the first, paired with the one before it."""
        nodes = list(walk(cond))
        prev_label = next((n.label for n in nodes if isinstance(n, ast.Prev)), None)
        labels = sorted({n.label for n in nodes if isinstance(n, ast.Attr) and n.label} - {prev_label})
        choices: list[list[tuple[int | None, int]]] = [[(None, p) for p in env.events(label)] for label in labels]
        if prev_label is not None:
            events = env.events(prev_label)
            choices.append(list(zip(events, events[1:])))
            labels.append(prev_label)
        for combination in itertools.product(*choices):
            bound = {label: current for label, (_, current) in zip(labels, combination)}
            previous = combination[-1][0] if prev_label is not None else None
            ctx = _Assignment(env, bound, previous)
            if not compare(cond.op, _VALUE.visit(cond.left, ctx), _VALUE.visit(cond.right, ctx)):
                return False
        return True


_HOLDS = _Holds()


def holds(cond: ast.Cond, env: Env) -> bool:
    """Whether a FILTER condition holds in ``env``."""
    return _HOLDS.visit(cond, env)


# --------------------------------------------------------------------------- measures


class _WholeComplexEvent:
    """A measure's view of the whole complex event: ``x.a`` is the list of values in stream
    order when x may label several events, else the value (or missing)."""

    def __init__(self, env: Env, multiplicity: Mapping[str, str]) -> None:
        self.env = env
        self.multiplicity = multiplicity

    def attr(self, node: ast.Attr) -> Any:
        label = node.label or ""
        values = tuple(get(self.env.stream[p], node.name) for p in self.env.events(label))
        if self.multiplicity.get(label) == "many":
            return tuple(None if v is MISSING else v for v in values)
        return values[0] if values else MISSING

    def aggregate(self, node: ast.Aggregate) -> Any:
        return aggregate(node, self.env)

    def prev(self, node: ast.Prev) -> Any:
        raise TypeError("PREV in a measure")


def measure(expr: ast.Expr, env: Env, multiplicity: Mapping[str, str]) -> Any:
    """The value of a SELECT expression over a whole complex event (None when missing)."""
    result = _VALUE.visit(expr, _WholeComplexEvent(env, multiplicity))
    return None if result is MISSING else result
