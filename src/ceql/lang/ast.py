"""The typed syntax tree of CEQL queries.

Nodes are frozen dataclasses. Every node records where it starts in the query text (``pos``),
which is excluded from equality so that ``parse(print(q)) == q`` compares structure only.
Associative operators (``;``, ``:``, ``OR``, ``AND``, ``ALL`` and boolean connectives) are n-ary:
a nested node of the same kind can only come from explicit parentheses.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union


@dataclass(frozen=True)
class Node:
    """Base class: ``pos`` is the 0-based offset of the node in the query text (-1 if none)."""

    pos: int = field(default=-1, compare=False, repr=False, kw_only=True)


# --------------------------------------------------------------------------- expressions


@dataclass(frozen=True)
class Attr(Node):
    """An attribute: ``price`` inside ``x[...]`` (label None) or ``x.price`` in a condition."""

    name: str
    label: str | None = None


@dataclass(frozen=True)
class Literal(Node):
    """A number, string or boolean constant."""

    value: int | float | str | bool


@dataclass(frozen=True)
class Neg(Node):
    """Unary minus."""

    operand: Expr


@dataclass(frozen=True)
class Arith(Node):
    """Binary arithmetic: op is one of ``+ - * / %``."""

    op: str
    left: Expr
    right: Expr


Expr = Union[Attr, Literal, Neg, Arith]

# --------------------------------------------------------------------------- predicates / conditions


@dataclass(frozen=True)
class Compare(Node):
    """``left op right`` with op one of ``= != < <= > >=`` (``==`` is ``=``, ``<>`` is ``!=``)."""

    op: str
    left: Expr
    right: Expr


@dataclass(frozen=True)
class Like(Node):
    """``attr LIKE 'regex'``: the whole string value matches the (RE2) regular expression."""

    operand: Expr
    pattern: str


@dataclass(frozen=True)
class InSet(Node):
    """``attr [NOT] IN {v1, v2, ...}``."""

    operand: Expr
    values: tuple[int | float | str | bool, ...]
    negated: bool = False


@dataclass(frozen=True)
class InInterval(Node):
    """``attr [NOT] IN {low..high}`` (either bound may be open); bounds are inclusive."""

    operand: Expr
    low: int | float | None
    high: int | float | None
    negated: bool = False


@dataclass(frozen=True)
class InRange(Node):
    """``expr IN RANGE(low, high)``: ``low <= expr <= high``."""

    operand: Expr
    low: Expr
    high: Expr


@dataclass(frozen=True)
class Not(Node):
    """Boolean negation of a predicate."""

    operand: Pred


@dataclass(frozen=True)
class And(Node):
    """Conjunction of predicates or conditions."""

    parts: tuple


@dataclass(frozen=True)
class Or(Node):
    """Disjunction of predicates or conditions."""

    parts: tuple


@dataclass(frozen=True)
class LabelCond(Node):
    """``x[pred]`` in a FILTER: every event labelled x satisfies pred."""

    label: str
    pred: Pred
    stream: str | None = None


Pred = Union[Compare, Like, InSet, InInterval, InRange, Not, And, Or]
#: A FILTER condition: LabelCond, a cross-event Compare (``x.a < y.b``), And or Or of those.
Cond = Union[LabelCond, Compare, And, Or]

# --------------------------------------------------------------------------- formulas


@dataclass(frozen=True)
class EventType(Node):
    """An event type atom ``E`` or ``S>E``."""

    name: str
    stream: str | None = None


@dataclass(frozen=True)
class Label(Node):
    """``f AS x``: every event of f is also labelled x."""

    body: Formula
    label: str


@dataclass(frozen=True)
class Iteration(Node):
    """``f+`` (contiguous False) or ``f:+`` (contiguous True)."""

    body: Formula
    contiguous: bool = False


@dataclass(frozen=True)
class Sequence(Node):
    """``f1 ; f2 ; ...`` (contiguous False) or ``f1 : f2 : ...`` (contiguous True)."""

    parts: tuple
    contiguous: bool = False


@dataclass(frozen=True)
class Union_(Node):
    """``f1 OR f2 OR ...``."""

    parts: tuple


@dataclass(frozen=True)
class Conjunction(Node):
    """``f1 AND f2 AND ...``: all match with the same support."""

    parts: tuple


@dataclass(frozen=True)
class AllOf(Node):
    """``f1 ALL f2 ALL ...``: all match, in any order, possibly overlapping."""

    parts: tuple


@dataclass(frozen=True)
class Unless(Node):
    """``f UNLESS g``: f matches and g has no match inside f's span."""

    left: Formula
    right: Formula


@dataclass(frozen=True)
class Filter(Node):
    """``f FILTER cond``."""

    body: Formula
    cond: Cond


@dataclass(frozen=True)
class NotEvent(Node):
    """``NOT(E [FILTER cond])``: one event that does not match, not reported."""

    atom: EventType
    cond: Cond | None = None


Formula = Union[EventType, Label, Iteration, Sequence, Union_, Conjunction, AllOf, Unless, Filter, NotEvent]

# --------------------------------------------------------------------------- query


@dataclass(frozen=True)
class ProjectionItem(Node):
    """One item of the SELECT list: a label, optionally restricted to some attributes."""

    label: str
    attributes: tuple[str, ...] | None = None
    stream: str | None = None


@dataclass(frozen=True)
class Projection(Node):
    """``*`` (kind 'star'), ``NONE`` (kind 'none') or a list of items (kind 'list')."""

    kind: str
    items: tuple[ProjectionItem, ...] = ()


@dataclass(frozen=True)
class Within(Node):
    """The window: kind 'events' (value = n), 'time' (value = nanoseconds) or 'attribute'."""

    kind: str
    value: int
    attribute: str | None = None


STRATEGIES = ("ALL", "ANY", "NEXT", "LAST", "MAX", "STRICT")
CONSUME_POLICIES = ("ANY", "PARTITION", "NONE")


@dataclass(frozen=True)
class Query(Node):
    """A whole CEQL query. Clauses that were not written are None (or empty)."""

    projection: Projection
    formula: Formula
    strategy: str | None = None
    streams: tuple[str, ...] = ()
    partition_by: tuple[tuple[str, ...], ...] = ()
    within: Within | None = None
    consume: str | None = None
    limit: int | None = None
    limit_pos: int = field(default=-1, compare=False, repr=False)
    streams_pos: tuple[int, ...] = field(default=(), compare=False, repr=False)
    partition_pos: int = field(default=-1, compare=False, repr=False)

    @property
    def effective_strategy(self) -> str:
        """The selection strategy in force (ALL when none was written)."""
        return self.strategy or "ALL"

    @property
    def effective_consume(self) -> str:
        """The consumption policy in force (NONE when none was written)."""
        return self.consume or "NONE"


def children(node: Node) -> tuple[Node, ...]:
    """The direct sub-formulas of a formula node (conditions are not included)."""
    if isinstance(node, (Label, Iteration, Filter)):
        return (node.body,)
    if isinstance(node, (Sequence, Union_, Conjunction, AllOf)):
        return tuple(node.parts)
    if isinstance(node, Unless):
        return (node.left, node.right)
    if isinstance(node, NotEvent):
        return (node.atom,)
    return ()


def attributes(node: Node):
    """Every Attr inside an expression or comparison (iteratively)."""
    stack: list = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, Attr):
            yield item
        elif isinstance(item, (Compare, Arith)):
            stack.extend((item.left, item.right))
        elif isinstance(item, Neg):
            stack.append(item.operand)
