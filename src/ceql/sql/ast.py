"""Syntax tree of a ``SELECT ... FROM t MATCH_RECOGNIZE (...)`` query.

Every node keeps ``pos``, the offset in the query text where it starts, so that the analysis can
report errors with a line and a column. Names keep the spelling of the text; ``Name.key`` is
the name as SQL compares it (unquoted names fold to upper case, quoted ones are exact).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Name:
    """An identifier: its text, whether it was quoted, and where it is."""

    text: str
    quoted: bool
    pos: int

    @property
    def key(self) -> str:
        """How SQL compares names: an unquoted name is folded to upper case."""
        return self.text if self.quoted else self.text.upper()


# ---------------------------------------------------------------------------- expressions


@dataclass(frozen=True)
class Expr:
    pos: int


@dataclass(frozen=True)
class Literal(Expr):
    """A constant. ``kind``: int, double, decimal (a ``decimal.Decimal``), string, bool, null."""

    value: object
    kind: str


@dataclass(frozen=True)
class TimestampLiteral(Expr):
    """``TIMESTAMP '2024-01-02 03:04:05.123'``: nanoseconds since the epoch (UTC wall time);
    ``zoned`` when the text names its zone (``Z``, ``+02:00``): a timestamp with a time zone."""

    text: str
    nanos: int
    zoned: bool = False


@dataclass(frozen=True)
class IntervalLiteral(Expr):
    """``INTERVAL '10' SECOND`` (also ``'1:30' MINUTE TO SECOND``): a span in nanoseconds."""

    text: str
    nanos: int


@dataclass(frozen=True)
class Column(Expr):
    """``price`` or ``A.price``: a column, optionally qualified by a pattern variable."""

    var: Name | None
    name: Name


@dataclass(frozen=True)
class Star(Expr):
    """``*`` or ``A.*`` (only as the argument of COUNT)."""

    var: Name | None


@dataclass(frozen=True)
class Unary(Expr):
    """``-x``, ``+x`` or ``NOT x``."""

    op: str
    operand: Expr


@dataclass(frozen=True)
class Binary(Expr):
    """Arithmetic (``+ - * / %``), ``||``, comparisons (``= <> < <= > >=``), ``AND``, ``OR``."""

    op: str
    left: Expr
    right: Expr


@dataclass(frozen=True)
class IsNull(Expr):
    operand: Expr
    negated: bool


@dataclass(frozen=True)
class Case(Expr):
    """``CASE [operand] WHEN w THEN t ... [ELSE e] END`` (a simple CASE compares ``operand = w``)."""

    operand: Expr | None
    whens: tuple[tuple[Expr, Expr], ...]
    otherwise: Expr | None


@dataclass(frozen=True)
class Cast(Expr):
    """``CAST(x AS type)``; ``type`` is normalised (BIGINT, DOUBLE, VARCHAR, BOOLEAN, TIMESTAMP,
    ``DECIMAL(p,s)``)."""

    operand: Expr
    type: str
    type_pos: int


@dataclass(frozen=True)
class Navigation(Expr):
    """``PREV``/``NEXT`` (physical, default offset 1) and ``FIRST``/``LAST`` (logical, default
    offset 0) with their semantics keyword (``RUNNING``/``FINAL``, None if not written)."""

    func: str
    arg: Expr
    offset: int
    semantics: str | None


@dataclass(frozen=True)
class Aggregate(Expr):
    """``COUNT/SUM/AVG/MIN/MAX(arg)`` (also BOOL_AND, BOOL_OR, EVERY, COUNT_IF, ARBITRARY,
    ANY_VALUE, ARRAY_AGG, and ``MAX_BY/MIN_BY(arg, key)``) with ``RUNNING``/``FINAL`` (None if
    not written)."""

    func: str
    arg: Expr
    semantics: str | None
    key: Expr | None = None  # MAX_BY/MIN_BY: the key that picks the row


@dataclass(frozen=True)
class Classifier(Expr):
    """``CLASSIFIER()`` or ``CLASSIFIER(v)``."""

    var: Name | None


@dataclass(frozen=True)
class MatchNumber(Expr):
    """``MATCH_NUMBER()``."""


@dataclass(frozen=True)
class Function(Expr):
    """A scalar function call: ``ABS``, ``COALESCE``, ``LOWER``, ``UPPER``, ``CHAR_LENGTH``."""

    name: str
    args: tuple[Expr, ...]


# ---------------------------------------------------------------------------- row patterns


@dataclass(frozen=True)
class Pattern:
    pos: int


@dataclass(frozen=True)
class PVar(Pattern):
    name: Name


@dataclass(frozen=True)
class PEmpty(Pattern):
    """``()``: matches no row."""


@dataclass(frozen=True)
class PAnchor(Pattern):
    """``^`` (partition start) or ``$`` (partition end)."""

    kind: str


@dataclass(frozen=True)
class PItems(Pattern):
    """A pattern of several patterns (the three kinds below)."""

    items: tuple[Pattern, ...]


@dataclass(frozen=True)
class PConcat(PItems):
    """``a b c``: one after the other."""


@dataclass(frozen=True)
class PAlt(PItems):
    """``a | b``: the first that matches, in order of preference."""


@dataclass(frozen=True)
class PQuant(Pattern):
    """``body`` repeated ``low`` to ``high`` times (``high`` None: no bound)."""

    body: Pattern
    low: int
    high: int | None
    greedy: bool


@dataclass(frozen=True)
class PPermute(PItems):
    """``PERMUTE(a, b)``: every order, in lexicographical order of preference."""


@dataclass(frozen=True)
class PExclude(Pattern):
    """``{- body -}``: matched as usual, left out of ALL ROWS PER MATCH's output."""

    body: Pattern


# ---------------------------------------------------------------------------- clauses


@dataclass(frozen=True)
class SortKey:
    column: Name
    descending: bool
    nulls_first: bool


@dataclass(frozen=True)
class Measure:
    expr: Expr
    name: Name


@dataclass(frozen=True)
class Skip:
    """AFTER MATCH SKIP: ``PAST LAST ROW``, ``TO NEXT ROW``, ``TO FIRST v``, ``TO LAST v``."""

    kind: str  # PAST_LAST, NEXT_ROW, FIRST, LAST
    var: Name | None = None
    pos: int = -1


@dataclass(frozen=True)
class MatchRecognize:
    partition_by: tuple[Name, ...]
    order_by: tuple[SortKey, ...]
    measures: tuple[Measure, ...]
    rows_per_match: str  # ONE, ALL
    empty: str  # SHOW, OMIT, UNMATCHED (ALL ROWS PER MATCH only)
    skip: Skip
    pattern: Pattern
    within: IntervalLiteral | None
    subsets: tuple[tuple[Name, tuple[Name, ...]], ...]
    defines: tuple[tuple[Name, Expr], ...]
    pos: int = -1


@dataclass(frozen=True)
class SelectItem:
    """``*``, ``alias.*`` (``star``; ``expr`` None) or an expression with an optional name."""

    expr: Expr | None
    name: Name | None
    star: Name | None = None
    pos: int = -1


@dataclass(frozen=True)
class Query:
    select: tuple[SelectItem, ...]
    table: Name
    match: MatchRecognize
    alias: Name | None
    where: Expr | None
    text: str = field(default="", compare=False, repr=False)
