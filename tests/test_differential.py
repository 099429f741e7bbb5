"""The engine agrees with the reference evaluator on generated queries and streams.

Every case runs on each engine path that supports its query (the Python evaluator and the
compiled kernel), with the stream cut into random batches and the evaluator's state saved and
loaded into a fresh evaluator in the middle (tests/support/agreement.py). The generators
(tests/support/strategies.py, tests/support/cross_strategies.py) are tuned so that most cases report complex
events (tests/test_generators.py checks it). Conditions across events have their own suite,
tests/test_cross_conditions.py.
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ceql
from ceql.lang import ast
from tests.support.agreement import check_case, record
from tests.support.cross_strategies import extended_matching_queries
from tests.support.strategies import (
    CORE_OPERATORS,
    TEST_DECLARATION,
    cases,
    queries,
    shaped_queries,
    streams,
)

SCHEMA = ceql.declare(TEST_DECLARATION)
FAST = settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
SLOW = settings(max_examples=3000, deadline=None, suppress_health_check=list(HealthCheck))
ALL_STRATEGIES = (None, None, "ALL", "ANY", "NEXT", "LAST", "MAX", "STRICT")

#: The core operators: sequences (both kinds), OR, iterations (both kinds), AS, unary FILTER, NOT.
core_cases = cases(shaped_queries(3, CORE_OPERATORS))
#: Every clause: windows of the three kinds, PARTITION BY, CONSUME BY, strategies, LIMIT,
#: projection; AND, ALL and UNLESS too.
clause_cases = cases(
    shaped_queries(3, CORE_OPERATORS + ("and", "all", "unless"), clauses=True, strategies_=ALL_STRATEGIES),
    max_size=11,
)
#: Every construct of the semantics, with measures and missing values.
extended_cases = cases(extended_matching_queries(), nulls=True)


def check(case) -> None:
    outcome = check_case(case.query, SCHEMA, case.events, case.cuts, case.save_at)
    record(outcome)


@FAST
@given(core_cases)
def test_core_operators(case) -> None:
    check(case)


@FAST
@given(clause_cases)
def test_every_clause(case) -> None:
    check(case)


@FAST
@given(extended_cases)
def test_extended_constructs(case) -> None:
    check(case)


@FAST
@given(queries(depth=3), streams(min_size=3, max_size=9), st.lists(st.integers(1, 8), max_size=2))
def test_broad_random_queries(query, events, cuts) -> None:
    """The older, broader generator (four types, nested predicates): fewer matches, other shapes."""
    record(check_case(query, SCHEMA, events, tuple(cuts), save_at=len(events) // 2))


@pytest.mark.slow
@SLOW
@given(core_cases)
def test_core_operators_many(case) -> None:
    check(case)


@pytest.mark.slow
@SLOW
@given(clause_cases)
def test_every_clause_many(case) -> None:
    check(case)


@pytest.mark.slow
@SLOW
@given(extended_cases)
def test_extended_constructs_many(case) -> None:
    check(case)


# ------------------------------------------------------------------ equalities as partition keys

AUTO_PARTITION = [
    "SELECT * WHERE A AS x; B AS y FILTER x.id = y.id",
    "SELECT * WHERE (A AS x; B+ AS y; C AS z) FILTER x.id = y.id AND y.id = z.id AND x[v > 0] WITHIN 6 EVENTS",
    "SELECT NEXT * WHERE (A AS x; (B OR C) AS y) FILTER y.id = x.id",
    "SELECT LAST * WHERE (A AS x ALL B AS y) FILTER x.id = y.id CONSUME BY ANY",
    "SELECT MAX x WHERE ((A AS x; B AS y) AND (A AS x; B AS y)) FILTER x.s = y.s LIMIT 2",
]


@pytest.mark.parametrize("text", AUTO_PARTITION)
@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(events=streams(min_size=3, max_size=10), cut=st.integers(1, 9))
def test_equalities_linking_every_event_become_partition_keys(text, events, cut) -> None:
    query = ceql.compile(text, SCHEMA)
    assert query.plan.auto_partition is not None
    record(check_case(ceql.parse(text), SCHEMA, events, (cut,), save_at=cut))


def test_no_partition_key_when_it_could_change_the_result() -> None:
    for text in [
        "SELECT * WHERE A AS x : B AS y FILTER x.id = y.id",
        "SELECT * WHERE A AS x; NOT(C); B AS y FILTER x.id = y.id",
        "SELECT * WHERE A AS x; C; B AS y FILTER x.id = y.id",
        "SELECT STRICT * WHERE A AS x; B AS y FILTER x.id = y.id",
        "SELECT * WHERE (A AS x; B AS y) UNLESS C FILTER x.id = y.id",
        "SELECT * WHERE A+ AS x FILTER A.v = A.v",  # one label: no two events are tied
        "SELECT * WHERE (A+ AS x OR B AS y); C AS z FILTER x.id = z.id AND y.id = z.id",  # x may be empty
    ]:
        assert ceql.compile(text, SCHEMA).plan.auto_partition is None, text


def test_partition_key_per_event_type() -> None:
    """Each event type is routed by the attribute of its role: A by id, B by v."""
    query = ceql.compile("SELECT * WHERE A AS x; B AS y FILTER x.id = y.v", SCHEMA)
    assert query.plan.partition_types == {"A": ("id",), "B": ("v",)}
    events = [
        {"event_type": "A", "id": 1, "v": 5, "s": "a", "t": 0},
        {"event_type": "B", "id": 2, "v": 1, "s": "a", "t": 0},
        {"event_type": "B", "id": 1, "v": 2, "s": "a", "t": 0},
    ]
    assert list(query.run(events)) == ceql.reference.run(query, events)


@st.composite
def linked_queries(draw):
    """Formulas whose events are all labelled x or y, filtered by x.id = y.id (often partitionable)."""

    def part(label):
        node: ast.Formula = ast.Label(ast.EventType(draw(st.sampled_from("ABC"))), label)
        if draw(st.booleans()):
            node = ast.Iteration(node)
        return node

    kind = draw(st.sampled_from(["seq", "or", "all", "and"]))
    labels = ["x", "y"] + [draw(st.sampled_from("xy")) for _ in range(draw(st.integers(0, 1)))]
    parts = tuple(part(label) for label in labels)
    formula = {"seq": lambda p: ast.Sequence(p), "or": ast.Union_, "all": ast.AllOf, "and": ast.Conjunction}[
        kind
    ](parts)
    cond = ast.Compare("=", ast.Attr("id", "x"), ast.Attr("id", "y"))
    base = draw(queries(depth=0))
    return dataclasses.replace(
        base, formula=ast.Filter(formula, cond), projection=ast.Projection("star"), partition_by=()
    )


@FAST
@given(linked_queries(), streams(min_size=3, max_size=10), st.lists(st.integers(1, 9), max_size=2))
def test_linking_equalities_against_the_reference(query, events, cuts) -> None:
    record(check_case(query, SCHEMA, events, tuple(cuts), save_at=len(events) // 2))
