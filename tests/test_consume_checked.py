"""CONSUME BY with conditions across events, applied after the kernel (kernel/consume.py,
issue 40): generated queries with conditions (tests/support/cross_strategies.py), CONSUME BY
ANY or PARTITION and a window, agree with the reference on every engine path, in random
batches, with a state round trip; most of them take the emulated path, and a long keyed run
with a state round trip agrees with the Python evaluator."""

from __future__ import annotations

import dataclasses
from collections import Counter

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ceql
from ceql.lang import ast
from ceql.runtime.kernel import unsupported
from ceql.runtime.kernel.consume import emulated
from ceql.runtime.kernel.runner import PlanKernel
from tests.support.agreement import check_case, compile_valid, record
from tests.support.cross_strategies import cross_queries
from tests.support.strategies import TEST_DECLARATION, cases

SCHEMA = ceql.declare(TEST_DECLARATION)
WINDOWS = st.one_of(
    st.builds(ast.Within, st.just("events"), st.integers(2, 8)),
    st.builds(ast.Within, st.just("time"), st.integers(2, 10)),
)


@st.composite
def consuming_queries(draw):
    """A query with conditions across events, CONSUME BY ANY or PARTITION and a window."""
    query = draw(cross_queries(strategies_=(None, None, "ALL", "ANY", "NEXT", "LAST", "MAX")))
    partition_by = draw(st.sampled_from([(), (), (("id",),)]))
    return dataclasses.replace(
        query,
        consume=draw(st.sampled_from(["ANY", "PARTITION"])),
        within=draw(WINDOWS),
        partition_by=partition_by if not query.partition_labels else (),
    )


seen: Counter = Counter()


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(cases(consuming_queries(), nulls=True))
def test_consume_by_with_conditions_agrees_with_the_reference(case) -> None:
    compiled = compile_valid(case.query, SCHEMA)
    if compiled is not None and unsupported(compiled.plan) is None:
        runner = PlanKernel(compiled.plan)
        seen["emulated" if runner.consumed is not None else "per trigger"] += 1
    record(check_case(case.query, SCHEMA, case.events, case.cuts, case.save_at))


def test_most_consuming_queries_are_emulated() -> None:
    """(After the property test above: the emulated path is the one exercised.)"""
    if not seen:
        test_consume_by_with_conditions_agrees_with_the_reference()
    assert seen["emulated"] >= 100, seen


KEYED = ceql.declare("CREATE STREAM S { EVENT A { k:int, v:int, t:primary_time }, EVENT B { k:int, v:int, t:primary_time } }")


def _keyed(n: int, seed: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    types = rng.choice(["A", "B"], n)
    return [
        {"event_type": str(t), "k": int(k), "v": int(v), "t": i * 100_000_000}
        for i, (t, k, v) in enumerate(zip(types, rng.integers(0, 20, n), rng.integers(0, 10, n)))
    ]


def test_emulated_consumption_is_the_per_trigger_check() -> None:
    """On 20k keyed events, in batches with a state round trip: the same complex events as the
    Python evaluator, for ANY and PARTITION."""
    events = _keyed(20_000, 1)
    for consume in ("ANY", "PARTITION"):
        query = ceql.compile(
            f"SELECT * FROM S WHERE A AS a ; B AS b FILTER b.v > a.v PARTITION BY [k] WITHIN 2 SECONDS CONSUME BY {consume}",
            KEYED,
        )
        assert emulated(query.plan, True)
        assert f"kernel: CONSUME BY {consume} applied after the checks" in query.explain()
        expected = sorted(query.run(events, engine="python"))
        assert len(expected) > 500
        evaluator = query.evaluator(engine="compiled")
        assert evaluator._kernel.consumed is not None
        got = list(evaluator.push_batch(events[:7_000]))
        blob = evaluator.export_state()
        evaluator = query.evaluator(engine="compiled")
        evaluator.import_state(blob)
        got += list(evaluator.push_batch(events[7_000:]))
        got += list(evaluator.finish())
        assert sorted(got) == expected, consume
