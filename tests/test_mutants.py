"""Regression tests for the two mutants of issue 13 that survived the whole suite, and for the
mutants of the mutation run (docs/testing.md) that matter.

Each test states its expected complex events by hand (read off docs/semantics.md), checks the
reference against them, then the engine on both paths; so it fails when the engine evaluates a
cross-event ``<`` as ``<=`` (compile/values.py, compile/registers.py), or evaluates a
per-iteration condition once over the whole iteration (the instance registers not reset at
the end of an iteration, compile/registers.py).
"""

from __future__ import annotations

import pytest

import ceql
from tests.strategies import TEST_DECLARATION

SCHEMA = ceql.declare(TEST_DECLARATION)


def events_of(spec: str) -> list[dict]:
    """``"A1 B2 C2.5 D"``: one event per token, type then v (C's v is a double), id 0, t = position."""
    out = []
    for k, token in enumerate(spec.split()):
        kind, value = token[0], token[1:]
        v: object = None if not value else float(value) if kind == "C" else int(value)
        out.append({"event_type": kind, "id": 0, "v": v, "s": "a", "t": k})
    return out


def supports(matches) -> list[tuple[int, tuple[int, ...]]]:
    return sorted((m.trigger, m.positions) for m in matches)


def assert_exact(text: str, spec: str, expected: list[tuple[int, tuple[int, ...]]]) -> None:
    events = events_of(spec)
    query = ceql.compile(text, SCHEMA)
    assert supports(ceql.reference.run(query, events)) == expected, "the reference disagrees with the hand result"
    for engine in ("python", "compiled"):
        got = list(query.run(events, engine=engine))
        assert supports(got) == expected, (engine, text)
        assert len(got) == len(set(got)), (engine, text)


# ------------------------------------------------------------------ mutant 1: < read as <=

STRICT_LESS = [
    # A pair of labels (decided on the largest x.v / smallest y.v summaries).
    ("SELECT * WHERE (A AS x ; B AS y) FILTER x.v < y.v", "A1 B1 B2", [(2, (0, 2))]),
    # The same with arithmetic on one side, and mirrored.
    ("SELECT * WHERE (A AS x ; B AS y) FILTER x.v + 1 < y.v", "A1 B2 B3", [(2, (0, 2))]),
    ("SELECT * WHERE (A AS x ; B AS y) FILTER y.v > x.v", "A1 B1 B2", [(2, (0, 2))]),
    # Under +: every y must exceed x; y = {1, 2} with x = 1 fails.
    (
        "SELECT * WHERE (A AS x ; B+ AS y) FILTER x.v < y.v",
        "A1 B2 B1 B3",
        [(1, (0, 1)), (3, (0, 1, 3)), (3, (0, 3))],
    ),
    # A general comparison (both labels on one side), decided on stored values.
    ("SELECT * WHERE (A AS x ; B AS y) FILTER x.v - y.v < 0", "A1 B1 B2", [(2, (0, 2))]),
    # Doubles against ints.
    ("SELECT * WHERE (C AS x ; B AS y) FILTER x.v < y.v", "C1.5 B1 B2", [(2, (0, 2))]),
    # An aggregate bound decided on the run, and one against a label.
    ("SELECT * WHERE (A AS x ; B+ AS y ; C AS z) FILTER COUNT(y) < 2", "A B B C", [(3, (0, 1, 3)), (3, (0, 2, 3))]),
    ("SELECT * WHERE (A+ AS x ; B AS y) FILTER SUM(x.v) < y.v", "A1 A1 B2", [(2, (0, 2)), (2, (1, 2))]),
    # PREV: strictly increasing runs only.
    ("SELECT * WHERE (A+ AS x ; B AS y) FILTER PREV(x.v) < x.v", "A1 A1 A2 B", [(3, (0, 2, 3)), (3, (0, 3)), (3, (1, 2, 3)), (3, (1, 3)), (3, (2, 3))]),
    # A free label read from the whole complex event (the condition sits inside the iteration).
    ("SELECT * WHERE A AS x ; (B AS y FILTER x.v < y.v)+", "A1 B1 B2", [(2, (0, 2))]),
    # The right side of UNLESS reading the left side's label.
    ("SELECT * WHERE (A AS x ; B AS y) UNLESS (C AS z FILTER z.v < x.v)", "A2 C2 B0 C1 B0", [(2, (0, 2))]),
]


@pytest.mark.parametrize("text, spec, expected", STRICT_LESS)
def test_strict_less_than_across_events_is_strict(text, spec, expected) -> None:
    assert_exact(text, spec, expected)


# ------------------------------------------------------------------ mutant 2: once over the iteration

PER_ITERATION = [
    # Each iteration has b < c; over the whole iteration 3 < 2 fails.
    (
        "SELECT * WHERE A AS a ; ((B AS b ; C AS c) FILTER b.v < c.v)+ ; D",
        "A B1 C2 B3 C4 D",
        [(5, (0, 1, 2, 3, 4, 5)), (5, (0, 1, 2, 5)), (5, (0, 1, 4, 5)), (5, (0, 3, 4, 5))],
    ),
    # An equality per iteration: 1 = 1 then 2 = 2, while not one common value overall.
    (
        "SELECT * WHERE ((B AS b ; C AS c) FILTER b.v = c.v)+ ; D",
        "B1 C1 B2 C2 D",
        [(4, (0, 1, 2, 3, 4)), (4, (0, 1, 4)), (4, (2, 3, 4))],
    ),
    # NOT per iteration is stricter than NOT over the union: iteration (B1, C1) is all equal.
    (
        "SELECT * WHERE ((B AS b ; C AS c) FILTER NOT (b.v = c.v))+ ; D",
        "B1 C1 B2 C3 D",
        [(4, (0, 3, 4)), (4, (2, 3, 4))],
    ),
    # An aggregate per iteration: each iteration has exactly one B.
    (
        "SELECT * WHERE ((B AS b ; C) FILTER COUNT(b) = 1)+ ; D",
        "B C B C D",
        [(4, (0, 1, 2, 3, 4)), (4, (0, 1, 4)), (4, (0, 3, 4)), (4, (2, 3, 4))],
    ),
    # PREV inside an iteration looks at that iteration's events only: 3 one-iteration runs
    # ending at the first C, 6 ending at the second (b strictly increasing), 3 x 3 with two.
    (
        "SELECT * WHERE ((B+ AS b ; C) FILTER PREV(b.v) < b.v)+ ; D",
        "B2 B3 C B1 B2 C D",
        [
            (6, (0, 1, 2, 3, 4, 5, 6)), (6, (0, 1, 2, 3, 5, 6)), (6, (0, 1, 2, 4, 5, 6)), (6, (0, 1, 2, 6)),
            (6, (0, 1, 5, 6)), (6, (0, 2, 3, 4, 5, 6)), (6, (0, 2, 3, 5, 6)), (6, (0, 2, 4, 5, 6)), (6, (0, 2, 6)),
            (6, (0, 5, 6)),
            (6, (1, 2, 3, 4, 5, 6)), (6, (1, 2, 3, 5, 6)), (6, (1, 2, 4, 5, 6)), (6, (1, 2, 6)), (6, (1, 5, 6)),
            (6, (3, 4, 5, 6)), (6, (3, 5, 6)), (6, (4, 5, 6)),
        ],
    ),
]


@pytest.mark.parametrize("text, spec, expected", PER_ITERATION)
def test_conditions_inside_an_iteration_hold_per_iteration(text, spec, expected) -> None:
    assert_exact(text, spec, expected)
