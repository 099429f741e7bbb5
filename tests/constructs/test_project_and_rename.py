"""``PROJECT(f, labels)``, renaming ``f AS [x -> y]``, and the SELECT list of labels.

Golden examples (hand-derived or from the papers) come first; the differential property test
checks generated queries that contain the construct against the reference (ceql.reference) on
every engine path (tests/support/constructs.py).
"""

from __future__ import annotations

import pytest
from hypothesis import given

import ceql
from ceql.runtime.kernel.projected import drops_events
from ceql.runtime.kernel.runner import unsupported
from ceql.runtime.parallel import ParallelKernel, split_of
from tests.support import golden
from tests.support.agreement import assert_agrees, compile_valid, reference_matches
from tests.support.constructs import CONSTRUCT, SCHEMA, check, operator_cases
from tests.support.cross_strategies import project_window_queries
from tests.support.examples import ev, letters, run
from tests.support.strategies import cases


@CONSTRUCT
@given(operator_cases("project"))
def test_project_agrees_with_the_reference(case) -> None:
    check(case)


@CONSTRUCT
@given(operator_cases("rename"))
def test_rename_agrees_with_the_reference(case) -> None:
    check(case)


@CONSTRUCT
@given(cases(project_window_queries(), nulls=True))
def test_conditions_inside_project_under_a_window_agree_with_the_reference(case) -> None:
    """Conditions across events inside PROJECT under a window (issue 40): on the kernel where
    PROJECT drops no event (run, push in batches, a state round trip, and workers where the
    query splits), on the Python path where it drops some; both agree with the reference."""
    check(case)
    compiled = compile_valid(case.query, SCHEMA)
    if compiled is None:
        return
    reason = unsupported(compiled.plan)
    assert reason is None or "PROJECT drops" not in reason or drops_events(compiled.plan.formula, compiled.plan.checked.query.partition_labels), reason
    if reason is None and split_of(compiled.plan) is not None:
        many = list(ParallelKernel(compiled.plan, 2, batch_size=3).matches(case.events))
        assert_agrees(case.query, SCHEMA, many, reference_matches(case.query, SCHEMA, case.events), "workers")


#: Where PROJECT keeps a label of every event (the census's extended queries), the kernel
#: evaluates the query; where it drops an event a check reads, the kernel's window would span it.
PROJECT_WINDOWS = [
    ("SELECT * WHERE PROJECT[y, C](C ; A AS y PARTITION BY [C.id, C.v]) WITHIN 7 EVENTS", True),
    ("SELECT * WHERE PROJECT[C, y](C ; C AS y PARTITION BY [y.id]) WITHIN 2 SECONDS LIMIT 1", True),
    ("SELECT * WHERE PROJECT[x, y](A AS x ; B AS y FILTER y.v > x.v) WITHIN 3 EVENTS", True),
    ("SELECT * WHERE PROJECT[x, B](A AS x ; NOT(D FILTER D.v != x.v) ; B) WITHIN 4 EVENTS", False),  # (conservative)
    # B is dropped but read by no check: not marked, so not in the enumerated complex event.
    ("SELECT * WHERE PROJECT[x, y](A AS x ; C AS y ; B) FILTER y.v >= x.v WITHIN 5 EVENTS", True),
    ("SELECT * WHERE PROJECT[x, y](A AS x ; C AS y ; B AS b FILTER b.v >= x.v) WITHIN 5 EVENTS", False),
    ("SELECT * WHERE PROJECT[x, y](A AS x ; C AS y ; B FILTER COUNT(*) = 3) WITHIN 5 EVENTS", False),
    ("SELECT * WHERE PROJECT[z]((A AS x ; B AS y)[y -> z] FILTER z.v > x.v) WITHIN 3 EVENTS", False),
    ("SELECT * WHERE PROJECT[A](A AS x; B FILTER B.v = x.v) WITHIN 2 EVENTS", False),
    ("SELECT * WHERE PROJECT[y](A AS x ; NOT(D FILTER D.v = x.v) ; B AS y) WITHIN 3 EVENTS", False),
]


@pytest.mark.parametrize("text, kernel", PROJECT_WINDOWS)
def test_conditions_inside_project_under_a_window_on_the_kernel(text: str, kernel: bool) -> None:
    query = ceql.compile(text, SCHEMA)
    assert (unsupported(query.plan) is None) == kernel
    stream = [
        {"event_type": t, "id": i % 2, "v": float(v) if t == "C" else v, "s": "a", "t": i}
        for i, (t, v) in enumerate(zip("ACABDBCABAB", [1, 2, 0, 3, 1, 2, 0, 5, 1, 4, 2]))
    ]
    expected = sorted((m.trigger, m.positions, tuple(sorted(m.labels.items()))) for m in ceql.reference.run(query, stream))
    assert expected, "the stream should make complex events"
    for engine in ("compiled", "python"):
        got = sorted((m.trigger, m.positions, tuple(sorted(m.labels.items()))) for m in query.run(stream, engine=engine))
        assert got == expected, engine


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
