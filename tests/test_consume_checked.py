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


def _model(rows: list[tuple[int, int, int]], per_partition: bool) -> tuple[list[bool], dict[int, int]]:
    """CONSUME BY by hand (rows: (trigger, partition, first), in trigger order): a row survives
    when it starts after its scope's last consumption before its trigger; a trigger consumes
    the scopes of the rows it keeps."""
    last: dict[int, int] = {}
    keep: list[bool] = []
    at = 0
    while at < len(rows):
        end = at
        while end < len(rows) and rows[end][0] == rows[at][0]:
            end += 1
        group = rows[at:end]
        ok = [first > last.get(part if per_partition else 0, -1) for _, part, first in group]
        for (trigger, part, _), kept in zip(group, ok):
            if kept:
                last[part if per_partition else 0] = trigger
        keep += ok
        at = end
    return keep, last


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 3), st.integers(0, 20), st.integers(0, 9)), max_size=30),
    st.booleans(),
    st.integers(1, 4),
)
def test_consumed_with_several_scopes_at_one_trigger_is_the_model(raw, per_partition, calls) -> None:
    """``Consumed.keep`` (NOT FOLLOWED BY's deadlines: rows of several partitions due at one
    trigger), over several calls, keeps what the model keeps and leaves the same markers."""
    from ceql.runtime.kernel.consume import NEVER, Consumed

    rows = sorted(((first + gap, part, first) for part, gap, first in raw), key=lambda row: row[0])
    consumed = Consumed(per_partition)
    got: list[bool] = []
    # Calls cut between triggers only (a trigger's rows come in one call).
    bounds = [i for i in range(1, len(rows)) if rows[i][0] != rows[i - 1][0]]
    cuts = [0, *bounds[:: max(1, len(bounds) // calls)][1:], len(rows)]
    for a, b in zip(cuts[:-1], cuts[1:]):
        part = rows[a:b]
        kept = consumed.keep(
            np.array([r[0] for r in part], dtype=np.int64),
            np.array([r[1] for r in part], dtype=np.int64),
            np.array([r[2] for r in part], dtype=np.int64),
        )
        got += kept.tolist()
    keep, last = _model(rows, per_partition)
    assert got == keep
    codes, at = consumed.markers()
    assert dict(zip(codes.tolist(), at.tolist())) == last
    assert (consumed.last[np.setdiff1d(np.arange(len(consumed.last)), codes)] == NEVER).all()
