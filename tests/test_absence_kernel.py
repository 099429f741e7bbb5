"""NOT FOLLOWED BY on the compiled kernel (``runtime/kernel/absence.py``): generated queries
agree with the reference when run whole, in batches with the state saved and loaded, and pushed
one event at a time with ``advance`` and state round trips; the docs' shapes run there."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ceql
from ceql.lang import print_query
from ceql.runtime import kernel
from ceql.runtime.kernel.absence import KernelAbsence
from tests.support.agreement import (
    assert_agrees,
    by_trigger,
    check_case,
    compile_valid,
    record,
    reference_matches,
)
from tests.support.strategies import TEST_DECLARATION, absence_queries, cases

SCHEMA = ceql.declare(TEST_DECLARATION)
FAST = settings(max_examples=250, deadline=None, suppress_health_check=list(HealthCheck))
absence_cases = cases(absence_queries(), max_size=12)

KEYED = ceql.declare(
    "CREATE STREAM S { EVENT A { k:int, v:int, ts:primary_time }, EVENT B { k:int, v:int, ts:primary_time }, "
    "EVENT C { k:int, v:int, ts:primary_time } }"
)
#: The shapes of issue 40's table and docs/recipes.md: each must run on the kernel.
SHAPES = [
    "SELECT * FROM S WHERE A AS a NOT FOLLOWED BY B AS b FILTER b.k = a.k WITHIN 5 SECONDS",
    "SELECT * FROM S WHERE A AS a NOT FOLLOWED BY B PARTITION BY [k] WITHIN 5 SECONDS",
    "SELECT a.k AS key, a.v AS v FROM S WHERE A AS a NOT FOLLOWED BY B AS b FILTER b.k = a.k WITHIN 5 SECONDS",
    "SELECT * FROM S WHERE A AS a FILTER a[v > 900] NOT FOLLOWED BY B AS b FILTER b[v > 500] "
    "PARTITION BY [k] WITHIN 500 MILLISECONDS",
    "SELECT * FROM S WHERE A AS a ; C AS c NOT FOLLOWED BY B AS b FILTER b.k = a.k WITHIN 20 EVENTS",
]


def _keyed_events(count: int, keys: int, seed: int) -> list[dict]:
    import random

    rng = random.Random(seed)
    ts, out = 0, []
    for _ in range(count):
        ts += rng.randrange(0, 400_000_000)
        out.append({"event_type": rng.choice("ABC"), "k": rng.randrange(keys), "v": rng.randrange(1000), "ts": ts})
    return out


@pytest.mark.parametrize("text", SHAPES)
def test_the_docs_shapes_run_on_the_kernel(text) -> None:
    query = ceql.compile(text, KEYED)
    assert kernel.unsupported(query.plan) is None
    evaluator = query.evaluator(engine="compiled")
    assert isinstance(evaluator._kernel, KernelAbsence)
    events = _keyed_events(120, 5, 5)  # (200 cost the reference 6 s of CPU on the last shape)
    expected = by_trigger(ceql.reference.run(query, events))
    assert expected  # (the shapes report something here)
    got = by_trigger(list(evaluator.run(events)))
    assert got == expected
    # Pushed one by one (the per-event path), a state round trip in the middle.
    pushed = query.evaluator(engine="compiled")
    found = []
    for index, event in enumerate(events):
        if index == 60:
            blob = pushed.export_state()
            pushed = query.evaluator(engine="compiled")
            pushed.import_state(blob)
        found.extend(pushed.push(event))
    found.extend(pushed.finish())
    assert by_trigger(found) == expected


@FAST
@given(absence_cases)
def test_compiled_agrees_with_the_reference(case) -> None:
    """Batches cut anywhere, the state saved and loaded in the middle (both engine paths)."""
    record(check_case(case.query, SCHEMA, case.events, case.cuts, case.save_at))


@FAST
@given(absence_cases, st.data())
def test_compiled_push_with_advance_agrees(case, data) -> None:
    """One event at a time on the kernel, ``advance`` before some events, a state round trip,
    batches mixed in: the reference's matches."""
    compiled = compile_valid(case.query, SCHEMA)
    if compiled is None or kernel.unsupported(compiled.plan) is not None:
        return
    events = case.events
    evaluator = compiled.evaluator(engine="compiled")
    got = []
    clock = compiled.plan.absence.time_attributes
    index = 0
    while index < len(events):
        if index == case.save_at:
            blob = evaluator.export_state()
            evaluator = compiled.evaluator(engine="compiled")
            evaluator.import_state(blob)
        event = events[index]
        if compiled.plan.window_kind != "events" and event["event_type"] in clock and data.draw(st.booleans()):
            got.extend(evaluator.advance(event["t"]))
        if data.draw(st.integers(0, 4)) == 0:  # a batch of a few events
            size = data.draw(st.integers(1, 3))
            got.extend(evaluator.push_batch(events[index : index + size]))
            index += size
            continue
        got.extend(evaluator.push(event))
        index += 1
    got.extend(evaluator.finish())
    reference = reference_matches(case.query, SCHEMA, events)
    assert_agrees(case.query, SCHEMA, got, reference, f"compiled push with advance: {print_query(case.query)}")


def test_idle_and_next_deadline_agree_with_the_python_path() -> None:
    from tests.constructs.test_not_followed_by import ORDERS, SHOP, UNPAID

    query = ceql.compile(UNPAID, SHOP)
    seen = {}
    for engine in ("python", "compiled"):
        evaluator = query.evaluator(engine=engine)
        found = [(evaluator.is_idle(), evaluator.next_deadline())]
        for event in ORDERS[:4]:
            evaluator.push(event)
            found.append((evaluator.is_idle(), evaluator.next_deadline()))
        seen[engine] = found
    assert seen["python"] == seen["compiled"]
    assert seen["python"][0] == (True, None)
