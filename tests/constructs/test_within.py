"""``WITHIN``: windows over events, over the primary time and over an attribute.

Golden examples (hand-derived or from the papers) come first; the differential property test
checks generated queries that contain the construct against the reference (ceql.reference) on
every engine path (tests/support/constructs.py).
"""

from __future__ import annotations

from hypothesis import given

from tests.support.constructs import CONSTRUCT, WINDOWS, check, clause_cases
from tests.support.examples import supports


@CONSTRUCT
@given(clause_cases(within=WINDOWS))
def test_within_agrees_with_the_reference(case) -> None:
    check(case)


def test_time_window_uses_primary_time(evaluate) -> None:
    decl = "CREATE STREAM S { EVENT A { ts:primary_time }, EVENT B { ts:primary_time } }"
    second = 10**9
    stream = [
        {"event_type": "A", "ts": 0},
        {"event_type": "A", "ts": 2 * second},
        {"event_type": "B", "ts": 3 * second},
    ]
    matches = evaluate(decl, "SELECT * WHERE A ; B WITHIN 3 SECONDS", stream)
    assert supports(matches) == {2: {(1, 2)}}
