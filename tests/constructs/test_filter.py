"""``FILTER``: conditions on one event and across events (labels, free labels, NOT in conditions).\n\nConditions across events decided on registers: test_conditions_across_events.py; their broad\ndifferential suite is tests/test_cross_conditions.py.

Golden examples (hand-derived or from the papers) come first; the differential property test
checks generated queries that contain the construct against the reference (ceql.reference) on
every engine path (tests/support/constructs.py).
"""

from __future__ import annotations

from hypothesis import given

import ceql
from tests.support import golden
from tests.support.constructs import CONSTRUCT, check, operator_cases
from tests.support.examples import ev, run, supports


@CONSTRUCT
@given(operator_cases("filter"))
def test_filter_agrees_with_the_reference(case) -> None:
    check(case)


def test_not_over_a_condition_differs_from_not_equal() -> None:
    # x ranges over non-empty subsets of the A's (v = 1 and 2), y is B (v = 1).
    stream = [ev("A", 1), ev("A", 2), ev("B", 1)]
    every_pair_differs = run("SELECT * WHERE (A+ AS x ; B AS y) FILTER x.v != y.v", stream)
    not_all_equal = run("SELECT * WHERE (A+ AS x ; B AS y) FILTER NOT (x.v = y.v)", stream)
    assert supports(every_pair_differs) == {2: {(1, 2)}}
    assert supports(not_all_equal) == {2: {(1, 2), (0, 1, 2)}}


def test_free_label_read_from_the_whole_complex_event() -> None:
    # x (at 0, v = 1) must be below every y, read from the whole CE: y = {1, 3} (v 3 and 0) fails.
    stream = [ev("A", 1), ev("B", 3), ev("C"), ev("B", 0)]
    matches = run("SELECT * WHERE (A AS x FILTER x.v < y.v) ; B+ AS y", stream)
    assert supports(matches) == {1: {(0, 1)}}


def test_free_label_in_a_not_atom() -> None:
    decl, stream = (
        golden.LOGIN_DECL,
        [
            {"event_type": "LOGIN", "user": 1},
            {"event_type": "LOGOUT", "user": 1},
            {"event_type": "TIMEOUT", "user": 1},
        ],
    )
    query = "SELECT * WHERE LOGIN AS l ; NOT(LOGOUT FILTER LOGOUT.user = l.user) ; TIMEOUT AS t"
    schema = ceql.declare(decl)
    assert supports(ceql.reference.run(ceql.check(query, schema), stream)) == {}
    other = [dict(stream[0]), {"event_type": "LOGOUT", "user": 2}, dict(stream[2])]
    assert supports(ceql.reference.run(ceql.check(query, schema), other)) == {2: {(0, 2)}}
