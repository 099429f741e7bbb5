"""``PARTITION BY``: the clause (events of one key) and inside a formula (labels with equal keys).

Golden examples (hand-derived or from the papers) come first; the differential property test
checks generated queries that contain the construct against the reference (ceql.reference) on
every engine path (tests/support/constructs.py).
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

import ceql
from tests.support import golden
from tests.support.constructs import CONSTRUCT, check, clause_cases, operator_cases
from tests.support.examples import ev, run, supports


@CONSTRUCT
@given(clause_cases(partition_by=st.just((("id",),))))
def test_partition_by_clause_agrees_with_the_reference(case) -> None:
    check(case)


@CONSTRUCT
@given(operator_cases("partition"))
def test_partition_by_in_a_formula_agrees_with_the_reference(case) -> None:
    check(case)


@pytest.mark.parametrize("name, query, expected", golden.TW_CASES)
def test_partition_by_paper_examples(evaluate, name, query, expected) -> None:
    assert supports(evaluate(golden.TW_DECL, query, golden.TW_STREAM)) == expected, name


def test_partition_by_labels_missing_value_and_empty_label() -> None:
    # x.id = 1; at 1 y.id = 2 (differs), at 2 the C branch leaves y empty (constrains nothing),
    # at 3 y.id is missing (rejects), at 4 y.id = 1.
    stream = [ev("A", id=1), ev("B", id=2), ev("C", id=5), ev("B", id=None), ev("B", id=1)]
    query = "SELECT * WHERE A AS x ; (B AS y OR C AS z) PARTITION BY [x.id, y.id]"
    matches = run(query, stream)
    assert [(m.trigger, m.positions, m.partition) for m in matches] == [(2, (0, 2), None), (4, (0, 4), None)]
    # Inside a formula with a plain attribute: every event of the formula (here C too).
    formula = run("SELECT * WHERE ((A ; (B OR C)) PARTITION BY [id])", stream)
    assert supports(formula) == {4: {(0, 4)}}


def test_the_two_partition_by_meanings_differ_on_adjacency() -> None:
    # The example of docs/semantics.md: events of other keys may stand between x and y in the
    # sub-stream reading, not in the label reading.
    decl = "CREATE STREAM S { EVENT A { k:int }, EVENT B { k:int } }"
    schema = ceql.declare(decl)
    stream = [{"event_type": "A", "k": 1}, {"event_type": "B", "k": 2}, {"event_type": "B", "k": 1}]
    plain = ceql.reference.run(ceql.check("SELECT * WHERE A AS x : B AS y PARTITION BY [k]", schema), stream)
    labels = ceql.reference.run(
        ceql.check("SELECT * WHERE A AS x : B AS y PARTITION BY [x.k, y.k]", schema), stream
    )
    assert supports(plain) == {2: {(0, 2)}}
    assert supports(labels) == {}
