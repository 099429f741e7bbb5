"""Values in conditions across events and in measures: exact arithmetic and comparisons.

The semantics (docs/semantics.md): integers are exact (Python ints, never floats); ``/`` on two
integers truncates toward zero and ``%`` is the truncated remainder (the sign of the dividend);
a missing value (an absent attribute, a null) or a division by zero makes the expression
missing, and a comparison with a missing value or NaN is false.

Expressions are compiled once into closures over an *environment*: a function that resolves an
attribute reference (``x.a``) or an aggregate to its value.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import Any

from ceql.lang import ast


class _Missing:
    """The value of an expression over a missing value (a singleton, falsy, never equal)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"

    def __bool__(self) -> bool:
        return False

    def __reduce__(self):
        return "MISSING"


MISSING = _Missing()

#: The comparison operators on Python values (no check for missing values or kinds).
COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "=": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


def trunc_div(left: int, right: int) -> int:
    """Integer division truncating toward zero (exact for any size)."""
    quotient = abs(left) // abs(right)
    return quotient if (left >= 0) == (right >= 0) else -quotient


def arith(op: str, left: Any, right: Any) -> Any:
    """``left op right`` with the semantics above."""
    if left is MISSING or right is MISSING or left is None or right is None:
        return MISSING
    if op == "+":
        return left + right
    if op == "-":
        return left - right
    if op == "*":
        return left * right
    if right == 0:
        return MISSING
    ints = isinstance(left, int) and isinstance(right, int)
    if op == "/":
        return trunc_div(left, right) if ints else left / right
    if ints:
        return left - right * trunc_div(left, right)
    return fmod(left, right)


def fmod(left: float, right: float) -> float:
    """``math.fmod`` as IEEE 754 (and numpy, the kernel) has it: an infinite dividend gives
    NaN, where ``math.fmod`` raises ValueError."""
    return math.nan if isinstance(left, float) and math.isinf(left) else math.fmod(left, right)


def compare(op: str, left: Any, right: Any) -> bool:
    """``left op right``; false when either side is missing or NaN, or the kinds differ."""
    if left is MISSING or right is MISSING or left is None or right is None:
        return False
    if isinstance(left, float) and left != left or isinstance(right, float) and right != right:
        return False
    if isinstance(left, str) != isinstance(right, str):
        return op == "!="  # a string and a number are never equal, and have no order
    return COMPARE[op](left, right)


def comparator(op: str) -> Callable[[Any, Any], bool]:
    """A fast two-argument comparison with the semantics of ``compare``."""

    def check(left: Any, right: Any) -> bool:
        return compare(op, left, right)

    return check


Resolver = Callable[[ast.Node], Callable[[Any], Any]]


def compile_expr(expr: ast.Expr, resolve: Resolver) -> Callable[[Any], Any]:
    """A closure ``env -> value`` for ``expr``. ``resolve(node)`` gives, for an attribute
    reference, an aggregate or PREV, the closure reading its value from the environment."""
    if isinstance(expr, ast.Literal):
        constant = expr.value
        return lambda env: constant
    if isinstance(expr, (ast.Attr, ast.Aggregate, ast.Prev)):
        return resolve(expr)
    if isinstance(expr, ast.Neg):
        inner = compile_expr(expr.operand, resolve)

        def negate(env: Any) -> Any:
            value = inner(env)
            return MISSING if value is MISSING or value is None else -value

        return negate
    if isinstance(expr, ast.Arith):
        left = compile_expr(expr.left, resolve)
        right = compile_expr(expr.right, resolve)
        op = expr.op
        return lambda env: arith(op, left(env), right(env))
    raise TypeError(f"unknown expression node {type(expr).__name__}")


def expression_nodes(expr: ast.Node) -> list[ast.Node]:
    """The leaves of an expression that read data: Attr, Aggregate and Prev nodes."""
    out: list[ast.Node] = []
    stack: list[ast.Node] = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Attr, ast.Aggregate, ast.Prev)):
            out.append(node)
        elif isinstance(node, (ast.Arith, ast.Compare)):
            stack.extend((node.left, node.right))
        elif isinstance(node, ast.Neg):
            stack.append(node.operand)
        elif isinstance(node, ast.Literal):
            continue
        else:
            raise TypeError(f"unknown expression node {type(node).__name__}")
    return out


def universal_labels(expr: ast.Node) -> set[str]:
    """Labels read outside aggregates (``x.a``): a comparison holds for every combination of
    one event per such label."""
    return {node.label for node in expression_nodes(expr) if isinstance(node, ast.Attr) and node.label}
