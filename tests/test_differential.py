"""The engine agrees with the reference evaluator on generated queries and streams."""

from __future__ import annotations

import dataclasses
from collections import Counter

import pytest
from hypothesis import HealthCheck, assume, given, settings

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
