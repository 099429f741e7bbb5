"""``f UNLESS g``: f's complex events whose span holds no complex event of g.

Golden examples (hand-derived or from the papers) come first; the differential property test
checks generated queries that contain the construct against the reference (ceql.reference) on
every engine path (tests/support/constructs.py).
"""

from __future__ import annotations

import pytest
from hypothesis import given

from tests.support import golden
from tests.support.constructs import CONSTRUCT, check, operator_cases
from tests.support.examples import ev, run, select, supports


@CONSTRUCT
@given(operator_cases("unless"))
def test_unless_agrees_with_the_reference(case) -> None:
    check(case)


@pytest.mark.parametrize("name, strategy, formula, stream, expected", golden.UNLESS_CASES[:-1])
def test_thesis_unless(evaluate, name, strategy, formula, stream, expected) -> None:
    matches = evaluate(golden.TH_DECL, f"{select(strategy)} WHERE {formula}", stream)
    assert supports(matches) == expected, name


def test_unless_is_anchored_at_the_span(evaluate) -> None:
    decl = "CREATE STREAM S { EVENT R { a:int }, EVENT T { a:int } }"
    assert supports(evaluate(decl, "SELECT * WHERE R UNLESS T", [{"event_type": "R", "a": 0}])) == {0: {(0,)}}
    # [003] anchors UNLESS at the stream start; ceql (docs/semantics.md) at the CE's span: kept.
    stream = [{"event_type": "T", "a": 0}, {"event_type": "R", "a": 0}]
    assert supports(evaluate(decl, "SELECT * WHERE R UNLESS T", stream)) == {1: {(1,)}}
    stream = [{"event_type": "R", "a": 0}, {"event_type": "T", "a": 0}, {"event_type": "R", "a": 0}]
    assert supports(evaluate(decl, "SELECT * WHERE R ; R UNLESS T", stream)) == {}


def test_unless_right_side_reads_its_own_labels_first() -> None:
    # z is defined on the right: read from the right side's own CE; x from the left side's CE.
    stream = [ev("A", 1), ev("C", 5), ev("D", 5), ev("B", 1)]
    query = "SELECT * WHERE (A AS x ; B) UNLESS (C AS z ; (D FILTER D.v = z.v AND z.v > x.v))"
    assert supports(run(query, stream)) == {}
    assert supports(run(query, [ev("A", 9), *stream[1:]])) == {3: {(0, 3)}}
