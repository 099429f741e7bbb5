"""NEXT and LAST with checks (conditions across events, a window over a double attribute) on patterns with many candidates, on the compiled kernel (issue 40): each trigger's
candidates are enumerated best support first (compiled ``_rank_enumerate``) and the
enumeration ends at the first that passes. Checked against ``ceql.reference`` on generated
queries through run (batches and a saved-state round trip), push and workers.
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import ceql
from ceql.lang import ast, print_query, scopes
from ceql.lang.visit import walk
from ceql.runtime.kernel import PlanKernel
from ceql.runtime.kernel.postfilter import few_candidates, post_filter
from ceql.runtime.kernel.runner import unsupported
from tests.support.agreement import assert_agrees, check_case, compile_valid, reference_matches
from tests.support.cross_strategies import cross_conditions, cross_queries
from tests.support.strategies import CORE_OPERATORS, TEST_DECLARATION, cases, shaped_queries
from tests.test_kernel_selection import _pushed, workers_agree

SCHEMA = ceql.declare(TEST_DECLARATION)
CASES = settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))


@st.composite
def _checked_next_last(draw):
    """NEXT or LAST with conditions across events, or with the generator's clauses (windows over
    the attribute ``v``, a double for C), on a pattern drawn with iterations (many candidates,
    mostly)."""
    if draw(st.integers(0, 3)) == 0:
        return draw(cross_queries(strategies_=("NEXT", "LAST")))
    query = draw(shaped_queries(3, CORE_OPERATORS + ("iter", "iter"), clauses=True, strategies_=("NEXT", "LAST")))
    own = tuple(sorted(scopes.defined_labels(query.formula)))
    if own and draw(st.integers(0, 3)) > 0:
        # A condition across the events of the whole formula (one instance per candidate).
        query = dataclasses.replace(query, formula=ast.Filter(query.formula, draw(cross_conditions(own, ()))))
    return query


checked_cases = cases(_checked_next_last(), min_size=6, max_size=16)


def _reads_private(plan) -> bool:
    """Whether the plan reports events under the compiler's labels only (NOT(E FILTER c),
    UNLESS's right side): those stay off the ranked path."""
    tracked = plan.registers is not None and plan.registers.tracked
    return bool(tracked) or any(isinstance(n, ast.NotEvent) for n in walk(plan.formula, formulas_only=True))


@CASES
@given(checked_cases)
def test_ranked_next_and_last_agree_with_the_reference(case) -> None:
    compiled = compile_valid(case.query, SCHEMA)
    if compiled is None or compiled.plan.strategy not in ("NEXT", "LAST"):
        return
    plan = compiled.plan
    post = post_filter(plan)
    reason = unsupported(plan)
    if few_candidates(plan.formula, plan) is None and not _reads_private(plan):
        # NEXT / LAST on many candidates is never the reason a query stays off the kernel.
        assert reason is None or "many candidates" not in reason, (print_query(case.query), reason)
    ranked = reason is None and post is not None and not isinstance(post, str) and post.ranked
    event(f"ranked: {ranked}")
    outcome = check_case(case.query, SCHEMA, case.events, case.cuts, case.save_at)
    if outcome is None or "compiled" not in outcome.paths:
        return
    reference = reference_matches(case.query, SCHEMA, case.events)
    assert_agrees(case.query, SCHEMA, _pushed(compiled, case.events), reference, "push")


@CASES
@given(checked_cases, st.integers(2, 6))
def test_ranked_next_and_last_on_workers_agree_with_one_core(case, batch) -> None:
    compiled = workers_agree(case, batch)
    if compiled is not None:
        post = post_filter(compiled.plan)
        event(f"ranked: {not isinstance(post, str) and post is not None and post.ranked}")


def _a_then_bc(n: int, pairs: int) -> list[dict]:
    types = ["A"] * n + ["B", "C"] * pairs
    return [{"event_type": t, "id": 0, "v": i % 4, "s": "a", "t": i} for i, t in enumerate(types)]


@pytest.mark.parametrize("strategy", ["NEXT", "LAST"])
def test_ranked_stops_at_the_first_that_passes(strategy) -> None:
    """A ; B+ ; C with 30 A's and 20 (B, C) pairs has about 30 * 2**19 candidates at the last
    C: ranked, the kernel enumerates a few per trigger (the best ones, until one passes)."""
    from ceql.runtime.kernel import engine

    events = _a_then_bc(30, 20)
    text = f"SELECT {strategy} * FROM S WHERE A AS a ; B+ AS b ; C AS c FILTER c.v > a.v"
    query = ceql.compile(text, SCHEMA)
    assert unsupported(query.plan) is None
    runner = PlanKernel(query.plan)
    seen: list[int] = []
    more = runner.kernel.more
    runner.kernel.more = lambda chunk: seen.append(len(chunk)) or more(chunk)  # type: ignore[assignment]
    got = [(m.trigger, tuple(m.positions)) for m in runner.matches(events)]
    assert max(seen, default=0) <= 3 * engine.RANKED_BATCH
    assert runner.kernel.st[engine.k.S_STEPS] < 200_000  # not the 2**19 candidates
    # The Python evaluator (registers) agrees, and every match passes.
    expected = [(m.trigger, tuple(m.positions)) for m in query.run(events, engine="python")]
    assert got == expected
    assert got and all(events[c]["v"] > events[a]["v"] for _, (a, *_, c) in got)


def test_ranked_enumeration_is_bounded() -> None:
    """Where no candidate passes, the walks kept for one trigger are bounded: a clear error,
    not an exponential run."""
    from ceql.errors import LimitError
    from ceql.runtime.kernel import engine

    events = _a_then_bc(20, 16)
    query = ceql.compile("SELECT NEXT * FROM S WHERE A AS a ; B+ AS b ; C AS c FILTER c.v > a.v + 10", SCHEMA)
    saved = engine.MAX_POOL_ROWS
    engine.MAX_POOL_ROWS = 1 << 12
    try:
        with pytest.raises(LimitError, match="candidates"):
            list(PlanKernel(query.plan).matches(events))
    finally:
        engine.MAX_POOL_ROWS = saved


@pytest.mark.parametrize(
    "text",
    [
        "SELECT NEXT * FROM S WHERE A AS a ; B+ AS b ; C AS c FILTER c.v > a.v WITHIN 9 EVENTS",
        "SELECT LAST * FROM S WHERE A AS a ; B+ AS b ; C AS c FILTER b.v > a.v WITHIN 9 EVENTS",
        "SELECT LAST * FROM S WHERE (A AS a ; B+ AS b ; C AS c FILTER c.v > a.v) WITHIN 6 [t]",
        "SELECT LAST * FROM S WHERE A ; B+ ; C WITHIN 5 [v]",
        "SELECT NEXT * FROM S WHERE A AS a ; (B OR D)+ AS b ; C AS c FILTER c.v >= a.v PARTITION BY [id]",
    ],
)
def test_ranked_shapes_run_on_the_kernel_and_agree(text) -> None:
    events = [
        {"event_type": "ABDCBC"[i % 6], "id": i % 2, "v": (i * 7) % 5, "s": "a", "t": i} for i in range(60)
    ]
    query = ceql.compile(text, SCHEMA)
    assert unsupported(query.plan) is None, text
    post = post_filter(query.plan)
    assert not isinstance(post, str) and post is not None and post.ranked
    got = [(m.trigger, tuple(m.positions)) for m in query.run(events, engine="compiled")]
    expected = [(m.trigger, tuple(m.positions)) for m in query.run(events, engine="python")]
    assert got == expected
