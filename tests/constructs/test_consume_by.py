"""``CONSUME BY``: NONE, ANY and PARTITION.

Golden examples (hand-derived or from the papers) come first; the differential property test
checks generated queries that contain the construct against the reference (ceql.reference) on
every engine path (tests/support/constructs.py).
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tests.support import golden
from tests.support.constructs import CONSTRUCT, check, clause_cases
from tests.support.examples import supports


@CONSTRUCT
@given(clause_cases(consume=st.sampled_from(["NONE", "ANY", "PARTITION"])))
def test_consume_by_agrees_with_the_reference(case) -> None:
    check(case)


def test_foundations_consumption(evaluate) -> None:
    query = "SELECT * WHERE A AS a ; B AS b"
    stream = golden._types("ABCB")
    assert supports(evaluate(golden.Q_DECL, query + " CONSUME BY ANY", stream)) == {1: {(0, 1)}}
    assert supports(evaluate(golden.Q_DECL, query + " CONSUME BY NONE", stream)) == {1: {(0, 1)}, 3: {(0, 3)}}
