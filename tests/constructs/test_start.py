"""``START(f)``: f anchored at the start of the stream (or of the enclosing part).

Golden examples (hand-derived or from the papers) come first; the differential property test
checks generated queries that contain the construct against the reference (ceql.reference) on
every engine path (tests/support/constructs.py).
"""

from __future__ import annotations

from hypothesis import given

from tests.support.constructs import CONSTRUCT, check, operator_cases
from tests.support.examples import letters, run, supports


@CONSTRUCT
@given(operator_cases("start"))
def test_start_agrees_with_the_reference(case) -> None:
    check(case)


def test_start_inside_a_sequence_anchors_at_the_left_part_end() -> None:
    assert supports(run("SELECT * WHERE A ; START(B ; C)", letters("ABC"))) == {2: {(0, 1, 2)}}
    assert supports(run("SELECT * WHERE A ; START(B ; C)", letters("ADBC"))) == {}
