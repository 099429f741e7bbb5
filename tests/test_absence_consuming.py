"""NOT FOLLOWED BY with f and g one event each (docs/recipes.md's alerting shape): the
cancelling kernel consumes the f events a g cancels (kernel/absence.py's ``cancelling_plan``,
issue 40). Generated queries of that shape (one-event filters, a correlation by equality or
PARTITION BY, every window kind, f and g of one type or two) agree with the reference on
every engine path, in random batches, with a state round trip; push agrees too."""

from __future__ import annotations

import dataclasses
from collections import Counter

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ceql
from ceql.lang import ast, parse_query
from ceql.runtime.kernel import unsupported
from ceql.runtime.kernel.absence import KernelAbsence
from tests.support.agreement import check_case, compile_valid, record
from tests.support.strategies import (
    TEST_DECLARATION,
    Case,
    absence_queries,
    cases,
    defined_labels,
    matching_streams,
)

SCHEMA = ceql.declare(TEST_DECLARATION)
TYPES = ("A", "B", "C")  # (f and g; C: other events)
seen: Counter = Counter()


@st.composite
def recipe_cases(draw) -> Case:
    """``A AS a [FILTER a[...]] NOT FOLLOWED BY B AS b [FILTER ...] [PARTITION BY [id]] WITHIN w``."""
    first = draw(st.sampled_from(TYPES))
    then = draw(st.sampled_from([t for t in TYPES if t != first] * 3 + [first]))  # (one type: not consumed)
    own = f"{first} AS a" + draw(st.sampled_from(["", " FILTER a[v > 1]"]))
    link = draw(st.sampled_from(["plain", "equality", "partition"]))
    conds = [c for c in (draw(st.sampled_from(["", "b[v < 3]"])), "b.id = a.id" if link == "equality" else "") if c]
    absent = f"{then} AS b" + (" FILTER " + " AND ".join(conds) if conds else "")
    window = draw(st.sampled_from(["3 EVENTS", "4 NANOSECONDS", "2 [t]", "6 NANOSECONDS"]))
    part = " PARTITION BY [id]" if link == "partition" else ""
    text = f"SELECT * FROM S WHERE {own} NOT FOLLOWED BY {absent}{part} WITHIN {window}"
    events = draw(matching_streams(tuple(sorted({first, then, "C"})), 4, 14))
    cuts = tuple(draw(st.lists(st.integers(1, max(1, len(events) - 1)), max_size=3)))
    save_at = draw(st.one_of(st.none(), st.integers(1, max(1, len(events) - 1))))
    return Case(parse_query(text), events, cuts, save_at)


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(recipe_cases())
def test_recipe_shapes_agree_with_the_reference(case) -> None:
    compiled = compile_valid(case.query, SCHEMA)
    assert compiled is not None
    consuming = KernelAbsence(compiled.plan).cancelling.plan.consume == "PARTITION"
    seen["consuming" if consuming else "plain"] += 1
    outcome = check_case(case.query, SCHEMA, case.events, case.cuts, case.save_at)
    assert outcome is not None and "compiled" in outcome.paths
    seen["with matches"] += outcome.matches > 0
    record(outcome)
    # push, one event at a time on each path, as run gives
    for engine in ("python", "compiled"):
        evaluator = compiled.evaluator(engine=engine)
        pushed = [match for event in case.events for match in evaluator.push(event)]
        pushed += evaluator.finish()
        assert sorted(pushed) == sorted(compiled.run(case.events, engine=engine)), engine


def test_the_consuming_path_is_exercised() -> None:
    if not seen:
        test_recipe_shapes_agree_with_the_reference()
    # Shares, not counts: the CI profile runs half the examples (tests/conftest.py).
    total = seen["consuming"] + seen["plain"]
    assert total >= 50 and seen["consuming"] >= 0.3 * total and seen["with matches"] >= 0.3 * total, seen


# ------------------------------------------------------------- LIMIT with a projection


@st.composite
def limited_projections(draw) -> Case:
    """Generated NOT FOLLOWED BY queries (tests/support/strategies.py) with a projection of
    some of f's labels and LIMIT 1 or 2: LIMIT counts distinct projected matches."""
    case = draw(cases(absence_queries(strategies_=(None, None, "ALL", "ANY", "NEXT", "LAST", "MAX")), max_size=12))
    query = case.query
    labels = sorted(defined_labels(query.formula) - {"p"}) + list(TYPES)
    chosen = draw(st.lists(st.sampled_from(labels), min_size=1, max_size=2, unique=True))
    projection = ast.Projection("list", tuple(ast.ProjectionItem(label) for label in chosen))
    limit = draw(st.sampled_from([1, 1, 2]))
    return Case(dataclasses.replace(query, projection=projection, limit=limit), case.events, case.cuts, case.save_at)


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(limited_projections())
def test_limit_with_a_projection_agrees_with_the_reference(case) -> None:
    compiled = compile_valid(case.query, SCHEMA)
    if compiled is not None:
        seen["limited on the kernel"] += unsupported(compiled.plan) is None
    record(check_case(case.query, SCHEMA, case.events, case.cuts, case.save_at))


def test_limit_with_a_projection_runs_on_the_kernel() -> None:
    if not seen["limited on the kernel"]:
        test_limit_with_a_projection_agrees_with_the_reference()
    assert seen["limited on the kernel"] >= 100, seen
