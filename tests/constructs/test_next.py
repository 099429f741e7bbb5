"""The selection strategy ``NEXT``.

Golden examples (hand-derived or from the papers) come first; the differential property test
checks generated queries that contain the construct against the reference (ceql.reference) on
every engine path (tests/support/constructs.py).
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tests.support.constructs import CONSTRUCT, check, clause_cases


@CONSTRUCT
@given(clause_cases(strategy=st.just("NEXT")))
def test_next_agrees_with_the_reference(case) -> None:
    check(case)
