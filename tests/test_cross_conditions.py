"""Conditions across events in every position agree with the reference (issue 13).

The cases (tests/support/cross_strategies.py) carry conditions that read several events at a time:
every comparison operator, arithmetic on ints and doubles, string order, missing values,
aggregates, PREV, NOT over conditions, free labels, inside ``+``/``:+``, OR branches, ALL, AND,
UNLESS right sides, NOT(E FILTER ...) bodies, nested filters and PART-BY (over labels, inside
formulas). Each runs on every engine path that supports it, batch by batch, with a state round
trip in the middle (tests/support/agreement.py): no refusal (UnsupportedQueryError), no complex event
reported twice, the reference's complex events. 1,000 cases here, 10,000 in the slow run.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

import ceql
from tests.support.agreement import check_case, record
from tests.support.cross_strategies import cross_queries, partition_queries
from tests.support.strategies import TEST_DECLARATION, cases

SCHEMA = ceql.declare(TEST_DECLARATION)
cross_cases = cases(cross_queries(), nulls=True)


@settings(max_examples=1000, deadline=None, suppress_health_check=list(HealthCheck))
@given(cross_cases)
def test_cross_conditions_agree_with_the_reference(case) -> None:
    record(check_case(case.query, SCHEMA, case.events, case.cuts, case.save_at))


@pytest.mark.slow
@settings(max_examples=10_000, deadline=None, suppress_health_check=list(HealthCheck))
@given(cross_cases)
def test_cross_conditions_agree_with_the_reference_many(case) -> None:
    record(check_case(case.query, SCHEMA, case.events, case.cuts, case.save_at))


def test_the_examples_of_issue_13_are_exact() -> None:
    """The two duplicate reports of issue 13, and its two refused constructs."""
    events = [
        {"event_type": t, "id": 0, "v": v, "s": "a", "t": i}
        for i, (t, v) in enumerate([("B", 2), ("C", 2.0), ("B", 2), ("C", 1.0), ("C", 2.0), ("B", 1)])
    ]
    for text in (
        "SELECT * FROM S WHERE ((((B AS x1 OR C AS x2)):+ FILTER (x1.v <= x2.v AND x2.v <= x1.v)))+ WITHIN 8 EVENTS",
        "SELECT * WHERE (B ; (((C AS x1 OR (C AS x2 OR (C):+)) FILTER x1.v > x2.v))+)",
        "SELECT * WHERE (B AS b ; C AS c) UNLESS (C AS d FILTER d.v < b.v)",
        "SELECT * WHERE B AS b ; ((C AS c ; NOT(B) ; C AS d) FILTER c.v >= d.v)+",
    ):
        query = ceql.compile(text, SCHEMA)
        expected = ceql.reference.run(query, events)
        for engine in ("python", "compiled"):
            got = list(query.run(events, engine=engine))
            assert len(got) == len(set(got)), text
            assert sorted(got) == sorted(expected), text


partition_cases = cases(partition_queries(), nulls=True)


@settings(max_examples=500, deadline=None, suppress_health_check=list(HealthCheck))
@given(partition_cases)
def test_partition_by_over_labels_with_all_and_unless_agrees(case) -> None:
    """PART-BY over labels inside ALL / AND, and the clause over labels on ALL, AND, UNLESS and
    iterations, keyed by different attributes per label (issue 25)."""
    record(check_case(case.query, SCHEMA, case.events, case.cuts, case.save_at))


@pytest.mark.slow
@settings(max_examples=10_000, deadline=None, suppress_health_check=list(HealthCheck))
@given(partition_cases)
def test_partition_by_over_labels_with_all_and_unless_agrees_many(case) -> None:
    record(check_case(case.query, SCHEMA, case.events, case.cuts, case.save_at))
