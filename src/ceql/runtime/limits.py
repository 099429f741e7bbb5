"""Bounds on output size: the match limit, and warnings for queries whose output can explode.

A query such as ``SELECT * FROM S WHERE A+`` reports, at every A, every subset of the earlier
A events: 2^n complex events after n events. That is the semantics, not a bug, but a user
should hear about it before a run fills the disk. ``growth_warnings`` estimates, from the
formula alone, how the number of complex events per trigger grows with the number n of events
read, and says so when it is exponential, or polynomial of degree 2 or more, and nothing in
the query bounds it (a window, LIMIT, or a selection strategy that keeps few complex events).

The estimate is an upper bound on the growth rate: filters can make a flagged query harmless
on real data, and constant factors (several labellings of the same events) are ignored.
``limit_matches`` enforces a hard limit on the number of matches at run time.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TypeVar

from ceql.errors import LimitError
from ceql.lang import ast
from ceql.lang.analysis import CheckedQuery
from ceql.lang.printer import print_formula

#: ``ceql run --max-matches``'s default: generous (about 1-2 GB of JSON Lines) but finite.
DEFAULT_MAX_MATCHES = 10_000_000
#: Live tECS nodes (stored partial matches, all partitions) an evaluator may hold: about 0.7 GB
#: on the compiled kernel and 2 GB on the Python evaluator at the bound (docs/limits.md).
DEFAULT_MAX_NODES = 10_000_000


def too_many_nodes(live: int, limit: int) -> LimitError:
    """The error for an evaluator whose stored partial matches outgrew ``max_nodes``."""
    return LimitError(
        f"the partial matches in progress outgrew the bound max_nodes ({live:,} stored nodes, at most "
        f"{limit:,}): the query keeps every partial match that a later event could complete, and no "
        "window expires them. Add or shorten a WITHIN window, or raise the bound with max_nodes= (API) / "
        "--max-nodes (CLI; 0: no bound)",
        "max_nodes",
        limit,
    )
#: Per-trigger bound (2^(w-1) or w^d for a window of w events) above which a window does not
#: silence a growth warning.
WINDOW_BOUND = 1_000_000

T = TypeVar("T")
EXPONENTIAL = math.inf
#: Strategies that keep few complex events per trigger (one support, or intervals only).
_BOUNDING_STRATEGIES = ("ANY", "NEXT", "LAST", "STRICT")


def limit_matches(matches: Iterable[T], limit: int | None, option: str = "max_matches") -> Iterator[T]:
    """Yield at most ``limit`` matches; on the next one raise LimitError naming ``option``
    (``None`` or 0: no limit)."""
    if not limit:
        yield from matches
        return
    count = 0
    for match in matches:
        if count == limit:
            raise too_many_matches(limit, option)
        count += 1
        yield match


def too_many_matches(limit: int, option: str = "max_matches", detail: str = "") -> LimitError:
    """The error for a run that found more than ``limit`` matches (``option`` as the user
    spells it: ``max_matches`` in Python, ``--max-matches`` on the command line)."""
    off = f"{option}=None" if not option.startswith("-") else f"{option} 0"
    how = f"{option}=N" if not option.startswith("-") else f"{option} N"
    message = (
        f"more than {limit:,} matches: stopped at the limit {option} ({limit}){detail}; "
        f"raise it with {how}, or turn it off with {off}"
    )
    return LimitError(message, "max_matches", limit)


# --------------------------------------------------------------------------- growth estimate


@dataclass(frozen=True)
class _Growth:
    """Complex events per trigger grow as n**degree (EXPONENTIAL: as 2**n)."""

    degree: float
    events: bool  # whether the complex events can contain events (NOT(...) alone cannot)
    causes: tuple[ast.Node, ...] = ()  # the operators behind the growth

    def __add__(self, other: _Growth) -> _Growth:
        return _Growth(self.degree + other.degree, self.events or other.events, self.causes + other.causes)


def growth_warnings(checked: CheckedQuery) -> list[str]:
    """Warnings (one line each) when the number of complex events a query reports can grow
    exponentially, or as n**2 or faster, with the number n of events read, and nothing in the
    query bounds it. Empty for safe queries."""
    query = checked.query
    strategy = query.effective_strategy
    if strategy in _BOUNDING_STRATEGIES or query.limit is not None:
        return []
    # Under MAX a Kleene iteration keeps only its maximal supports, so it does not explode.
    growth = _estimate(query.formula, exponential_kleene=strategy != "MAX")
    within = query.within
    where = _where(checked.text)
    if growth.degree == EXPONENTIAL:
        if within is not None and within.kind == "events" and within.value - 1 <= math.log2(WINDOW_BOUND):
            return []
        bound = (
            f"; the window WITHIN {within.value} EVENTS allows up to 2^{within.value - 1} per trigger"
            if within is not None and within.kind == "events"
            else "; the window bounds n by the number of events inside it"
            if within is not None
            else " (no window or LIMIT bounds it)"
        )
        return [
            f"{where(node)}: {_describe(node)} can report every subset of the earlier matching events: "
            f"up to 2^n complex events per trigger after n events{bound}. Consider a window "
            "(WITHIN), LIMIT, a strategy (SELECT NEXT, LAST, MAX or ANY) or a contiguous iteration (:+)"
            for node in _unique(growth.causes)
            if isinstance(node, (ast.Iteration, ast.Repeat))
        ]
    degree = int(growth.degree)
    if (
        degree < 2
        or within is not None
        and (within.kind != "events" or degree * math.log10(max(within.value, 1)) <= math.log10(WINDOW_BOUND))
    ):
        return []
    operators = ", ".join(f"{_describe(node)} at {where(node)}" for node in _unique(growth.causes)[:6])
    return [
        f"the number of complex events per trigger can grow as n^{degree} with the number n of events "
        f"read (from {operators}); a window (WITHIN) or LIMIT bounds it"
    ]


def _estimate(formula: ast.Formula, exponential_kleene: bool) -> _Growth:
    """Post-order walk without recursion (formulas can be long chains)."""
    results: dict[int, _Growth] = {}
    stack: list[tuple[ast.Node, bool]] = [(formula, False)]
    while stack:
        node, ready = stack.pop()
        kids = () if isinstance(node, ast.NotEvent) else ast.children(node)
        if not ready:
            stack.append((node, True))
            stack.extend((kid, False) for kid in kids)
            continue
        results[id(node)] = _combine(node, [results[id(kid)] for kid in kids], exponential_kleene)
    return results[id(formula)]


def _combine(node: ast.Node, kids: list[_Growth], exponential_kleene: bool) -> _Growth:
    """The growth of ``node`` from its children's (see the module docstring)."""
    if isinstance(node, ast.EventType):
        return _Growth(0, True)
    if isinstance(node, ast.NotEvent):
        return _Growth(0, False)
    if isinstance(node, ast.Sequence):
        # ``;`` leaves every split point free (one more factor n per ``;``); ``:`` fixes it.
        total = _total(kids)
        extra = 0 if node.contiguous else len(kids) - 1
        return _Growth(total.degree + extra, total.events, total.causes + ((node,) if extra else ()))
    if isinstance(node, ast.AllOf):
        total = _total(kids)
        return _Growth(total.degree + len(kids) - 1, total.events, total.causes + (node,))
    if isinstance(node, ast.Union_):
        return max(kids, key=lambda g: g.degree)
    if isinstance(node, ast.Conjunction):
        return min(kids, key=lambda g: g.degree)
    if isinstance(node, ast.Unless):
        return kids[0]
    if isinstance(node, ast.Iteration):
        return _iterate(node, kids[0], node.contiguous, exponential_kleene)
    if isinstance(node, ast.Repeat):
        body = kids[0]
        if node.high is None:
            return _iterate(node, body, node.contiguous, exponential_kleene)
        copies = max(node.high, 1)
        extra = 0 if node.contiguous else copies - 1
        causes = body.causes + ((node,) if extra else ())
        return _Growth(body.degree * copies + extra, body.events, causes)
    if not kids:
        return _Growth(0, True)
    # Labels, filters, PARTITION BY, START, renaming, projection: no more than their body.
    return max(kids, key=lambda g: g.degree)


def _iterate(node: ast.Node, body: _Growth, contiguous: bool, exponential_kleene: bool) -> _Growth:
    if not body.events:
        return body
    if contiguous and body.degree == 0:
        return _Growth(1, True, body.causes)  # one complex event per start
    if exponential_kleene:
        return _Growth(EXPONENTIAL, True, body.causes + (node,))
    return _Growth(body.degree + 1, True, body.causes + (node,))


def _total(kids: list[_Growth]) -> _Growth:
    total = _Growth(0, False)
    for kid in kids:
        total = total + kid
    return total


def _unique(nodes: tuple[ast.Node, ...]) -> list[ast.Node]:
    seen: dict[int, ast.Node] = {}
    for node in nodes:
        seen.setdefault(id(node), node)
    return sorted(seen.values(), key=lambda n: n.pos)


def _describe(node: ast.Node) -> str:
    text = print_formula(node)
    if len(text) > 40:
        text = text[:37] + "..."
    if isinstance(node, ast.AllOf):
        return f"ALL in {text}"
    if isinstance(node, ast.Sequence):
        return f"the sequence {text}"
    if isinstance(node, ast.Iteration):
        return f"the iteration {text}"
    return f"the repetition {text}"


def _where(text: str):
    def where(node: ast.Node) -> str:
        if node.pos < 0:
            return "in the query"
        line = text.count("\n", 0, node.pos) + 1
        column = node.pos - (text.rfind("\n", 0, node.pos) + 1) + 1
        return f"line {line}, column {column}"

    return where
