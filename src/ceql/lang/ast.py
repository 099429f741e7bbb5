"""The typed syntax tree of CEQL queries.

Nodes are frozen dataclasses. Every node records where it starts in the query text (``pos``),
which is excluded from equality so that ``parse(print(q)) == q`` compares structure only.
Associative operators (``;``, ``:``, ``OR``, ``AND``, ``ALL`` and boolean connectives) are n-ary:
a nested node of the same kind can only come from explicit parentheses.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union, get_args


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
    """A number, string or boolean constant; or a time: ``TIMESTAMP '2024-03-01T09:00:00Z'``
    (``kind`` "timestamp") or ``INTERVAL '10' MINUTE`` (``kind`` "interval"), whose ``value``
    is int nanoseconds (since 1970-01-01T00:00:00Z for a timestamp)."""

    value: int | float | str | bool
    kind: str | None = None


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


@dataclass(frozen=True)
class Aggregate(Node):
    """An aggregate over the events of a label (DESIGN 3.2).

    ``func`` is one of ``COUNT SUM AVG MIN MAX FIRST LAST``. ``COUNT(x)`` has ``attr`` None;
    ``COUNT(*)`` has ``label`` None too (it counts every event of the complex event in scope).
    ``FIRST(x).a`` / ``LAST(x).a`` are the value of ``a`` on the first / last x event in stream
    order. In a FILTER the events are those of the sub-complex event the filter sees (free labels:
    of the whole complex event); in SELECT, those of the whole complex event.
    """

    func: str
    label: str | None
    attr: str | None = None


@dataclass(frozen=True)
class Prev(Node):
    """``PREV(x.a)``: the value of ``a`` on the previous event of x (in stream order). A condition
    that mentions it holds iff it holds for every x event after the first (DESIGN 3.2)."""

    label: str
    attr: str


AGGREGATES = ("COUNT", "SUM", "AVG", "MIN", "MAX", "FIRST", "LAST")

Expr = Union[Attr, Literal, Neg, Arith, Aggregate, Prev]

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
    """Boolean negation: of a one-event predicate (inside ``x[...]``) or of a whole FILTER
    condition (``NOT (x.v = y.v)``: true unless every pair is equal; DESIGN 3.4)."""

    operand: Pred | Cond


@dataclass(frozen=True)
class And(Node):
    """Conjunction of predicates or conditions."""

    parts: tuple[Pred | Cond, ...]


@dataclass(frozen=True)
class Or(Node):
    """Disjunction of predicates or conditions."""

    parts: tuple[Pred | Cond, ...]


@dataclass(frozen=True)
class LabelCond(Node):
    """``x[pred]`` in a FILTER: every event labelled x satisfies pred."""

    label: str
    pred: Pred
    stream: str | None = None


Pred = Union[Compare, Like, InSet, InInterval, InRange, Not, And, Or]
#: A FILTER condition: LabelCond, a Compare over labelled attributes, aggregates and PREV
#: (``x.a < y.b``, ``COUNT(b) >= 3``), and And, Or, Not of those.
Cond = Union[LabelCond, Compare, And, Or, Not]

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

    parts: tuple[Formula, ...]
    contiguous: bool = False


@dataclass(frozen=True)
class Union_(Node):
    """``f1 OR f2 OR ...``."""

    parts: tuple[Formula, ...]


@dataclass(frozen=True)
class Conjunction(Node):
    """``f1 AND f2 AND ...``: all match with the same support."""

    parts: tuple[Formula, ...]


@dataclass(frozen=True)
class AllOf(Node):
    """``f1 ALL f2 ALL ...``: all match, in any order, possibly overlapping."""

    parts: tuple[Formula, ...]


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
class PartitionBy(Node):
    """``(f PARTITION BY [a, ...])`` or ``(f PARTITION BY [x.a, y.b, ...])`` inside a formula
    (DESIGN 3.3): the complex events of f whose designated values are all one common value.
    A key without a label (``Attr.label`` None) designates that attribute on every event of f."""

    body: Formula
    keys: tuple[Attr, ...]


@dataclass(frozen=True)
class Repeat(Node):
    """Quantifiers (DESIGN 3.2), defined by rewriting: ``f{n}`` (low = high = n), ``f{n,m}``,
    ``f{n,}`` (high None), ``f?`` (0, 1) and ``f*`` (0, None). ``contiguous``: written in a
    ``:`` chain, so copies are joined by ``:`` and the open-ended tail is ``:+``."""

    body: Formula
    low: int
    high: int | None
    contiguous: bool = False


@dataclass(frozen=True)
class Start(Node):
    """``START(f)`` (SO-CEL+): the complex events of f that begin at the first position of the
    interval f is evaluated on."""

    body: Formula


@dataclass(frozen=True)
class Rename(Node):
    """``f[A -> B, ...]`` (SO-CEL renaming): events labelled A lose A and are labelled B."""

    body: Formula
    mapping: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Project(Node):
    """``PROJECT[x, y](f)`` (SO-CEL+'s projection): only the events labelled x or y stay in f's
    complex events, and only those labels."""

    body: Formula
    labels: tuple[str, ...]


@dataclass(frozen=True)
class NotEvent(Node):
    """``NOT(E [FILTER cond])``: one event that does not match, not reported."""

    atom: EventType
    cond: Cond | None = None


Formula = Union[
    EventType,
    Label,
    Iteration,
    Sequence,
    Union_,
    Conjunction,
    AllOf,
    Unless,
    Filter,
    NotEvent,
    PartitionBy,
    Repeat,
    Start,
    Rename,
    Project,
]

# --------------------------------------------------------------------------- query


@dataclass(frozen=True)
class ProjectionItem(Node):
    """One item of the SELECT list: a label, optionally restricted to some attributes."""

    label: str
    attributes: tuple[str, ...] | None = None
    stream: str | None = None


@dataclass(frozen=True)
class Measure(Node):
    """A SELECT item that is an expression (DESIGN 3.2): ``expr [AS name]``. ``name`` is the
    written name, or the canonical text of the expression when none was written."""

    expr: Expr
    name: str


@dataclass(frozen=True)
class Projection(Node):
    """``*`` (kind 'star'), ``NONE`` (kind 'none') or a list of label items (kind 'list'), plus
    the measures. A SELECT list with measures but no label item is kind 'star'."""

    kind: str
    items: tuple[ProjectionItem, ...] = ()
    measures: tuple[Measure, ...] = ()


@dataclass(frozen=True)
class Within(Node):
    """The window: kind 'events' (value = n), 'time' (value = nanoseconds, an int) or
    'attribute' (value in the attribute's units)."""

    kind: str
    value: int
    attribute: str | None = None


STRATEGIES = ("ALL", "ANY", "NEXT", "LAST", "MAX", "STRICT")
#: The private label that marks the events of f in ``(f AS mark) ; g``, the query that finds
#: which complex events of ``f NOT FOLLOWED BY g`` are cancelled (NUL: never reported).
ABSENCE_MARK = "\x00absent"
CONSUME_POLICIES = ("ANY", "PARTITION", "NONE")


@dataclass(frozen=True)
class Query(Node):
    """A whole CEQL query. Clauses that were not written are None (or empty)."""

    projection: Projection
    formula: Formula
    strategy: str | None = None
    streams: tuple[str, ...] = ()
    partition_by: tuple[tuple[str, ...], ...] = ()
    #: ``PARTITION BY [x.a, y.b, ...]`` (DESIGN 3.3): a filter on the whole complex event.
    partition_labels: tuple[Attr, ...] = ()
    within: Within | None = None
    consume: str | None = None
    limit: int | None = None
    limit_pos: int = field(default=-1, compare=False, repr=False)
    streams_pos: tuple[int, ...] = field(default=(), compare=False, repr=False)
    partition_pos: int = field(default=-1, compare=False, repr=False)
    #: ``WHERE f NOT FOLLOWED BY g``: g, what must not follow f's complex events before the
    #: window's deadline (docs/semantics.md, section 5.2); None without it.
    absent: Formula | None = None

    @property
    def effective_strategy(self) -> str:
        """The selection strategy in force (ALL when none was written)."""
        return self.strategy or "ALL"

    @property
    def effective_consume(self) -> str:
        """The consumption policy in force (NONE when none was written)."""
        return self.consume or "NONE"


# --------------------------------------------------------------------------- node families

#: Every formula node class (``Repeat`` is removed by desugaring, see desugar.py).
FORMULA_NODES: tuple[type, ...] = get_args(Formula)  # one list of the formula classes
#: The formula node classes left after desugaring (what the evaluators see).
CORE_FORMULA_NODES: tuple[type, ...] = tuple(c for c in FORMULA_NODES if c is not Repeat)
#: FILTER condition node classes.
COND_NODES: tuple[type, ...] = (LabelCond, Compare, And, Or, Not)
#: One-event predicate node classes (inside ``x[...]``).
PRED_NODES: tuple[type, ...] = (Compare, Like, InSet, InInterval, InRange, Not, And, Or)
#: Expression node classes.
EXPR_NODES: tuple[type, ...] = (Attr, Literal, Neg, Arith, Aggregate, Prev)


def children(node: Node) -> tuple[Node, ...]:
    """The direct sub-formulas of a formula node (conditions are not included).

    Kept for the compiler; new code uses ``ceql.lang.visit.formula_children``."""
    from ceql.lang.visit import formula_children

    return formula_children(node)


def attributes(node: Node):
    """Every Attr inside an expression or comparison, aggregates and PREV excluded (they carry
    their label and attribute as names, not as Attr nodes)."""
    from ceql.lang.visit import walk

    return (item for item in walk(node) if isinstance(item, Attr))
