"""The selection strategy ``ANY``: one complex event per trigger.

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
@given(clause_cases(strategy=st.just("ANY")))
def test_any_agrees_with_the_reference(case) -> None:
    check(case)


def test_any_strategy_keeps_exactly_one(evaluate) -> None:
    full = supports(evaluate(golden.Q_DECL, f"SELECT * WHERE {golden.Q5}", golden._types("AABABC")))
    one = supports(evaluate(golden.Q_DECL, f"SELECT ANY * WHERE {golden.Q5}", golden._types("AABABC")))
    assert len(one[5]) == 1 and one[5] <= full[5]
