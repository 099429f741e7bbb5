"""Contiguous sequence ``f : g`` and contiguous iteration ``f:+``: nothing in between.

Golden examples (hand-derived or from the papers) come first; the differential property test
checks generated queries that contain the construct against the reference (ceql.reference) on
every engine path (tests/support/constructs.py).
"""

from __future__ import annotations

from hypothesis import given

from tests.support.constructs import CONSTRUCT, check, operator_cases


@CONSTRUCT
@given(operator_cases("cseq"))
def test_contiguous_sequence_agrees_with_the_reference(case) -> None:
    check(case)


@CONSTRUCT
@given(operator_cases("citer"))
def test_contiguous_iteration_agrees_with_the_reference(case) -> None:
    check(case)
