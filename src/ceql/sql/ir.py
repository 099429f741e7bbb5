"""The checked form of MATCH_RECOGNIZE expressions: every column reference resolved to an input
column and to the row it is read on.

A value is read on a row found by a *locator*: ``Logical`` (``FIRST``/``LAST`` of the rows
mapped to a variable, a union variable or any variable, with an offset, RUNNING or FINAL),
optionally moved by ``Physical`` (``PREV``/``NEXT``: rows of the partition, inside the match or
not). ``A.price`` is ``At(LAST(A, 0), price)``; ``PREV(price, 2)`` is
``At(Physical(LAST(*, 0), -2), price)``; ``PREV(FIRST(A.price, 1), 2)`` is
``At(Physical(FIRST(A, 1), -2), price)``. What is read on the located row (``At.expr``) is a *row
expression*: columns of that row (``RowCol``), its ``RowClassifier``, constants and operators.
``Agg`` aggregates a row expression over the rows mapped to a variable class.
"""

from __future__ import annotations

from dataclasses import dataclass

from ceql.sql.types import SqlType

#: The class of every primary variable ("the universal row pattern variable").
UNIVERSAL = None


@dataclass(frozen=True)
class Logical:
    func: str  # FIRST or LAST
    cls: str | None  # a variable, a union variable, or UNIVERSAL
    offset: int
    final: bool


@dataclass(frozen=True)
class Physical:
    base: Logical
    delta: int  # -n for PREV(.., n), +n for NEXT(.., n)


Locator = Logical | Physical


@dataclass(frozen=True)
class Node:
    type: SqlType


@dataclass(frozen=True)
class Const(Node):
    value: object  # int, float, str, bool, None; timestamps and intervals as int in type's unit / ns


@dataclass(frozen=True)
class RowCol(Node):
    column: str  # the input column's name


@dataclass(frozen=True)
class RowClassifier(Node):
    pass


@dataclass(frozen=True)
class At(Node):
    locator: Locator
    expr: Node  # a row expression


@dataclass(frozen=True)
class Agg(Node):
    func: str  # COUNT, SUM, AVG, MIN, MAX; ARRAY_AGG, MAX_BY, MIN_BY (ROW_AGGREGATES; MAX_BY, MIN_BY also in DEFINE)
    cls: str | None
    arg: Node | None  # a row expression; None: COUNT(*) / COUNT(A.*)
    final: bool
    key: Node | None = None  # MAX_BY/MIN_BY: the row expression whose largest/smallest value picks the row


#: Aggregates computed from the match's rows after matching (engine: ``rowagg``), not by the
#: matcher's accumulators: a measure may be one of them, or CONCAT_WS of an ARRAY_AGG.
ROW_AGGREGATES = ("ARRAY_AGG", "MAX_BY", "MIN_BY")


@dataclass(frozen=True)
class MatchNo(Node):
    pass


@dataclass(frozen=True)
class Op(Node):
    """``op`` in: neg, abs, + - * / %, = <> < <= > >=, and, or, not, isnull, notnull, coalesce,
    cast (to ``type``), scale (a timestamp or interval times ``args[1]``'s constant factor),
    rescale (a decimal to ``type``'s scale: exact when larger, else rounded half away from zero),
    fit (CAST to DECIMAL(p, s): an error if the value has more than p digits). Decimal + - %
    and comparisons have operands of one scale; * and / of their own scales (``type``'s scale
    is the result's)."""

    op: str
    args: tuple[Node, ...]


@dataclass(frozen=True)
class Case(Node):
    whens: tuple[tuple[Node, Node], ...]
    otherwise: Node | None


#: Functions of doubles (IEEE 754: SQRT(-1) and LN(-1) are NaN, LN(0) is -infinity; never an
#: error): Op(DOUBLE, name, (x,)), POWER of two, ROUND of x and a constant number of digits.
MATH_FUNCTIONS = ("sqrt", "ln", "exp", "floor", "ceil", "round", "sign", "power")
#: String functions of one string and constants: LENGTH (an integer), SUBSTR (start, length).
STRING_FUNCTIONS = ("like", "lower", "upper", "concat", "length", "substr")


def dividend_scale(node: Op) -> int:
    """Decimal ``a / b``: the power of ten that brings a's unscaled value to the scale whose
    integer division by b's unscaled value is the quotient's (result scale - a's + b's)."""
    return node.type.scale - node.args[0].type.scale + node.args[1].type.scale


def row_measure(node: Node) -> bool:
    """Whether a measure is computed from the match's rows after matching (ROW_AGGREGATES)."""
    if isinstance(node, Op) and node.op == "concat_ws":
        node = node.args[1]
    return isinstance(node, Agg) and node.func in ROW_AGGREGATES


def children(node: Node) -> tuple[Node, ...]:
    """The direct sub-expressions of a node."""
    if isinstance(node, At):
        return (node.expr,)
    if isinstance(node, Agg):
        return tuple(x for x in (node.arg, node.key) if x is not None)
    if isinstance(node, Op):
        return node.args
    if isinstance(node, Case):
        out = [x for pair in node.whens for x in pair]
        if node.otherwise is not None:
            out.append(node.otherwise)
        return tuple(out)
    return ()


def walk(node: Node):
    """Every node of the tree, parents first."""
    stack = [node]
    while stack:
        item = stack.pop()
        yield item
        stack.extend(reversed(children(item)))


def describe_locator(loc: Locator) -> str:
    """``LAST(A, 0)``, ``PREV(FIRST(*, 1), 2)``: a locator as text (plans and messages)."""
    if isinstance(loc, Physical):
        func = "PREV" if loc.delta < 0 else "NEXT"
        return f"{func}({describe_locator(loc.base)}, {abs(loc.delta)})"
    sem = "FINAL " if loc.final else ""
    return f"{sem}{loc.func}({loc.cls or '*'}, {loc.offset})"
