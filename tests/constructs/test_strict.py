"""The selection strategy ``STRICT``.

Golden examples (hand-derived or from the papers) come first; the differential property test
checks generated queries that contain the construct against the reference (ceql.reference) on
every engine path (tests/support/constructs.py).
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tests.support import golden
from tests.support.constructs import CONSTRUCT, check, clause_cases


@CONSTRUCT
@given(clause_cases(strategy=st.just("STRICT")))
def test_strict_agrees_with_the_reference(case) -> None:
    check(case)


def test_example15_strict_iteration_and_projection(evaluate) -> None:
    assert [
        (m.trigger, m.positions, m.labels) for m in evaluate(golden.S003_DECL, golden.EX15, golden.S003)
    ] == [(9, (9,), {})]
    matches = evaluate(golden.S003_DECL, golden.EX15, golden.S003_ENGINEERED)
    assert sorted(m.positions for m in matches) == [(1, 3, 4), (3, 4)]
    assert {m.trigger for m in matches} == {4}
