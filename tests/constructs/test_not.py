"""``NOT(E)`` between two parts of a sequence: no E event in between.

Golden examples (hand-derived or from the papers) come first; the differential property test
checks generated queries that contain the construct against the reference (ceql.reference) on
every engine path (tests/support/constructs.py).
"""

from __future__ import annotations

from hypothesis import given

from tests.support.constructs import CONSTRUCT, check, operator_cases


@CONSTRUCT
@given(operator_cases("not"))
def test_not_agrees_with_the_reference(case) -> None:
    check(case)
