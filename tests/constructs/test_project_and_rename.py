"""``PROJECT(f, labels)``, renaming ``f AS [x -> y]``, and the SELECT list of labels.

Golden examples (hand-derived or from the papers) come first; the differential property test
checks generated queries that contain the construct against the reference (ceql.reference) on
every engine path (tests/support/constructs.py).
"""

from __future__ import annotations

from hypothesis import given

import ceql
from tests.support import golden
from tests.support.constructs import CONSTRUCT, check, operator_cases
from tests.support.examples import ev, letters, run


@CONSTRUCT
@given(operator_cases("project"))
def test_project_agrees_with_the_reference(case) -> None:
    check(case)


@CONSTRUCT
@given(operator_cases("rename"))
def test_rename_agrees_with_the_reference(case) -> None:
    check(case)


def test_projection_labels_and_partition(evaluate) -> None:
    query = "SELECT x FROM S WHERE SELL AS x; BUY AS y PARTITION BY [name]"
    matches = evaluate(golden.CORE_DECL, query, golden.CORE_S2)
    assert [(m.trigger, m.positions, m.labels, m.partition) for m in matches] == [
        (1, (0,), {"x": (0,)}, ("A",)),
        (3, (2,), {"x": (2,)}, ("B",)),
        (4, (0,), {"x": (0,)}, ("A",)),
    ]


def test_renaming_moves_events_to_the_new_label() -> None:
    matches = run("SELECT * WHERE (A AS x ; B AS y)[x -> y] FILTER y[v > 0]", [ev("A", 1), ev("B", 2)])
    assert [dict(m.labels) for m in matches] == [{"y": (0, 1)}]
    assert run("SELECT * WHERE (A AS x ; B AS y)[x -> y] FILTER y[v > 1]", [ev("A", 1), ev("B", 2)]) == []


def test_project_keeps_only_the_listed_labels() -> None:
    matches = run("SELECT * WHERE PROJECT[x](A AS x ; B) ; C", letters("ABC"), type_labels=True)
    assert [(m.positions, dict(m.labels)) for m in matches] == [((0, 2), {"x": (0,), "C": (2,)})]


def test_renaming_replaces_the_labels() -> None:
    """SO-CEL Example 2: the renamed complex events carry T, HS and HH, and no H (T-003-3)."""
    case = next(c for c in golden.EXTENSION_CASES if c[0] == "SO-CEL Example 2 (renaming)")
    _, _, declaration, stream, query, _, _ = case
    matches = ceql.reference.run(ceql.check(query, ceql.declare(declaration)), stream, type_labels=True)
    assert len(matches) == 26
    assert {tuple(sorted(m.labels)) for m in matches} == {("HH", "HS", "T")}
    witness = {"T": (3,), "HS": (4, 6, 7), "HH": (9,)}
    assert any(dict(m.labels) == witness for m in matches)
