"""Iteration ``f+``: one or more instances of f, in order.

Golden examples (hand-derived or from the papers) come first; the differential property test
checks generated queries that contain the construct against the reference (ceql.reference) on
every engine path (tests/support/constructs.py).
"""

from __future__ import annotations

from hypothesis import given

from tests.support.constructs import CONSTRUCT, check, operator_cases
from tests.support.examples import ev, run, supports


@CONSTRUCT
@given(operator_cases("iter"))
def test_iteration_agrees_with_the_reference(case) -> None:
    check(case)


def test_free_labels_defined_in_an_iteration_body_are_per_iteration() -> None:
    # ((A AS x ; B FILTER B.v = x.v))+ : + re-chooses x in each iteration.
    stream = [ev("A", 1), ev("B", 1), ev("A", 2), ev("B", 2)]
    matches = run("SELECT * WHERE (A AS x ; (B FILTER B.v = x.v))+", stream)
    assert supports(matches) == {1: {(0, 1)}, 3: {(2, 3), (0, 1, 2, 3)}}
    # Outside the iteration, x is read from the whole complex event (all its x events).
    outer = run("SELECT * WHERE (A AS x ; B AS y)+ FILTER y.v = x.v", stream)
    assert supports(outer) == {1: {(0, 1)}, 3: {(2, 3)}}
