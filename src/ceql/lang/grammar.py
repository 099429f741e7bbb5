"""The one precedence table of CEQL, read by the parser and by the printer.

Formula operators, loosest first: ``FILTER`` and ``PARTITION BY`` (a condition or key list
extends as far as it can), ``OR``, ``UNLESS``, ``ALL``, ``AND``, ``:``, ``;``, then the postfix
operators (``AS``, ``+``, ``:+``, ``?``, ``*``, ``{n,m}``, renaming ``[A -> B]``), then atoms
(event types, parenthesised formulas, ``NOT(...)``, ``START(...)``, ``PROJECT[...](...)``).
Conditions: ``OR`` < ``AND`` < ``NOT`` < atoms. Arithmetic: ``+ -`` < ``* / %`` < unary minus.

Also here: the function names (recognised by the ``(`` that follows them, so they are not
reserved words) and the time units of ``WITHIN``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ceql.lang import ast

# --------------------------------------------------------------------------- formulas

#: Formula precedence levels; a higher level binds tighter.
FILTER, OR, UNLESS, ALL, AND, COLON, SEMI, POSTFIX, ATOM = range(1, 10)


@dataclass(frozen=True)
class Infix:
    """A binary formula operator: its token, whether the token is a keyword, its level, and
    whether it is n-ary (``A ; B ; C`` is one node) or left-associative binary (UNLESS)."""

    token: str
    keyword: bool
    level: int
    nary: bool


#: Binary formula operators, loosest first. The parser descends through them in this order.
INFIX = (
    Infix("OR", True, OR, True),
    Infix("UNLESS", True, UNLESS, False),
    Infix("ALL", True, ALL, True),
    Infix("AND", True, AND, True),
    Infix(":", False, COLON, True),
    Infix(";", False, SEMI, True),
)
INFIX_BY_LEVEL = {op.level: op for op in INFIX}

_LEVEL_OF_CLASS: dict[type, int] = {
    ast.Filter: FILTER,
    ast.PartitionBy: FILTER,
    ast.Union_: OR,
    ast.Unless: UNLESS,
    ast.AllOf: ALL,
    ast.Conjunction: AND,
    ast.Label: POSTFIX,
    ast.Iteration: POSTFIX,
    ast.Repeat: POSTFIX,
    ast.Rename: POSTFIX,
    ast.EventType: ATOM,
    ast.NotEvent: ATOM,
    ast.Start: ATOM,
    ast.Project: ATOM,
}


def formula_level(node: ast.Formula) -> int:
    """The precedence level of a formula node (how tightly its operator binds)."""
    if isinstance(node, ast.Sequence):
        return COLON if node.contiguous else SEMI
    try:
        return _LEVEL_OF_CLASS[type(node)]
    except KeyError:
        raise TypeError(f"grammar: no precedence for formula node {type(node).__name__}") from None


def infix_token(node: ast.Formula) -> str:
    """The token of an n-ary or binary formula node (``;``, ``:``, ``OR``, ...)."""
    return INFIX_BY_LEVEL[formula_level(node)].token


# --------------------------------------------------------------------------- conditions

COND_OR, COND_AND, COND_NOT, COND_ATOM = range(1, 5)


def cond_level(node: ast.Node) -> int:
    """The precedence level of a condition or predicate node."""
    if isinstance(node, ast.Or):
        return COND_OR
    if isinstance(node, ast.And):
        return COND_AND
    if isinstance(node, ast.Not):
        return COND_NOT
    return COND_ATOM


# --------------------------------------------------------------------------- arithmetic

EXPR_ADD, EXPR_MUL, EXPR_UNARY, EXPR_ATOM = range(1, 5)
#: Binary arithmetic operators and their levels (all left-associative).
ARITH_LEVEL = {"+": EXPR_ADD, "-": EXPR_ADD, "*": EXPR_MUL, "/": EXPR_MUL, "%": EXPR_MUL}


def expr_level(node: ast.Expr) -> int:
    """The precedence level of an expression node."""
    if isinstance(node, ast.Arith):
        return ARITH_LEVEL[node.op]
    if isinstance(node, ast.Neg):
        return EXPR_UNARY
    if isinstance(node, ast.Literal) and node.kind is None and _is_negative_number(node.value):
        return EXPR_UNARY  # prints with a leading minus
    return EXPR_ATOM


def _is_negative_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and str(value).startswith("-")


#: Comparison operators as written -> canonical operator.
COMPARISONS = {"=": "=", "==": "=", "!=": "!=", "<>": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}

# --------------------------------------------------------------------------- functions

#: Aggregates over the events of a label; recognised by the ``(`` that follows.
#: ``COUNT(x)`` / ``COUNT(*)``; ``SUM|AVG|MIN|MAX(x.a)``; ``FIRST|LAST(x).a``.
AGGREGATES = ast.AGGREGATES
#: Every function name (aggregates and ``PREV(x.a)``).
FUNCTIONS = frozenset(AGGREGATES) | {"PREV"}
#: Time literals, recognised by the quoted text that follows them (not reserved words):
#: ``TIMESTAMP '2024-03-01T09:00:00Z'`` and ``INTERVAL '10' MINUTE``.
TIME_LITERALS = ("TIMESTAMP", "INTERVAL")
#: Formula-level prefix operators, recognised by what follows them (``START(``, ``PROJECT[``).
FORMULA_PREFIXES = {"START": "(", "PROJECT": "["}

# --------------------------------------------------------------------------- time units

#: WITHIN time units, longest first: (plural, singular, nanoseconds). Units must be written in
#: this order (``1 HOUR 30 MINUTES``), each at most once.
TIME_UNITS = (
    ("DAYS", "DAY", 86_400 * 10**9),
    ("HOURS", "HOUR", 3_600 * 10**9),
    ("MINUTES", "MINUTE", 60 * 10**9),
    ("SECONDS", "SECOND", 10**9),
    ("MILLISECONDS", "MILLISECOND", 10**6),
    ("MICROSECONDS", "MICROSECOND", 10**3),
    ("NANOSECONDS", "NANOSECOND", 1),
)
#: Any spelling of a unit (upper case) -> its plural form.
TIME_UNIT_NAMES = {name: plural for plural, singular, _ in TIME_UNITS for name in (plural, singular)}
TIME_UNIT_NS = {plural: ns for plural, _, ns in TIME_UNITS}

# --------------------------------------------------------------------------- limits

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
