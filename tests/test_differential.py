"""The engine agrees with the reference evaluator on generated queries and streams."""

from __future__ import annotations

import dataclasses
from collections import Counter

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import ceql
from ceql.lang import ast, print_query
from tests.strategies import TEST_DECLARATION, queries, streams

SCHEMA = ceql.declare(TEST_DECLARATION)
FAST = settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SLOW = settings(max_examples=5000, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def by_trigger(matches) -> dict[int, Counter]:
    out: dict[int, Counter] = {}
    for match in matches:
        out.setdefault(match.trigger, Counter())[match.key()] += 1
    return out


def check_agreement(query: ast.Query, events: list[dict]) -> None:
    text = print_query(query)
    try:
        compiled = ceql.compile(text, SCHEMA)
    except ceql.UnsupportedQueryError:
        assume(False)
        return
    engine = by_trigger(compiled.run(events))
    # LIMIT and ANY let the engine choose: compare with the reference's full candidate set.
    chooses = query.limit is not None or query.strategy == "ANY"
    relaxed = dataclasses.replace(
        query, limit=None, strategy="ALL" if query.strategy == "ANY" else query.strategy
    )
    reference = by_trigger(ceql.reference.run(ceql.check(print_query(relaxed), SCHEMA), events))
    if not chooses:
        assert engine == reference, text
        return
    assert set(engine) == set(reference), text
    for trigger, candidates in reference.items():
        got = engine[trigger]
        assert all(count == 1 for count in got.values()), text
        assert set(got) <= set(candidates), text
        expected = len(candidates)
        if query.strategy == "ANY":
            expected = 1
        if query.limit is not None:
            expected = min(expected, query.limit)
        assert sum(got.values()) == expected, text


@FAST
@given(queries(depth=3), streams(min_size=3, max_size=9))
def test_engine_matches_reference(query, events) -> None:
    check_agreement(query, events)


@FAST
@given(
    queries(depth=3, operators=("seq", "cseq", "or", "iter", "citer", "as", "filter", "not"), cross=False),
    streams(min_size=3, max_size=10),
)
def test_engine_matches_reference_core_operators(query, events) -> None:
    check_agreement(query, events)


@pytest.mark.slow
@SLOW
@given(queries(depth=4), streams(min_size=3, max_size=11))
def test_engine_matches_reference_many(query, events) -> None:
    check_agreement(query, events)


AUTO_PARTITION = [
    "SELECT * WHERE A AS x; B AS y FILTER x.id = y.id",
    "SELECT * WHERE (A AS x; B+ AS y; C AS z) FILTER x.id = y.id AND y.id = z.id AND x[v > 0] WITHIN 6 EVENTS",
    "SELECT NEXT * WHERE (A AS x; (B OR C) AS y) FILTER y.id = x.id",
    "SELECT LAST * WHERE (A AS x ALL B AS y) FILTER x.id = y.id CONSUME BY ANY",
    "SELECT MAX x WHERE ((A AS x; B AS y) AND (A AS x; B AS y)) FILTER x.s = y.s LIMIT 2",
]


@pytest.mark.parametrize("text", AUTO_PARTITION)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(events=streams(min_size=3, max_size=10))
def test_equalities_linking_every_event_become_partition_keys(text, events) -> None:
    query = ceql.compile(text, SCHEMA)
    assert query.plan.auto_partition is not None
    check_agreement(ceql.parse(text), events)


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
@given(linked_queries(), streams(min_size=3, max_size=10))
def test_linking_equalities_against_the_reference(query, events) -> None:
    check_agreement(query, events)
