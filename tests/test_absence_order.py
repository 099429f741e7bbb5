"""NOT FOLLOWED BY's matches due at one trigger come in one order on every path
(docs/semantics.md, 5.2: partition key by value, then deadline, then the complex event's events),
and CONSUME BY runs on the compiled kernel: generated queries give the reference's matches, in
the reference's order, run whole, pushed one event at a time with ``advance`` and saved states,
and on two workers."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ceql
from ceql.lang import print_query
from ceql.runtime import kernel
from ceql.runtime.kernel.absence import KernelAbsence
from ceql.runtime.state import StateError
from tests.support.agreement import assert_agrees, compile_valid, reference_matches, run_engine
from tests.support.strategies import TEST_DECLARATION, absence_queries, cases

SCHEMA = ceql.declare(TEST_DECLARATION)
FAST = settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))


@st.composite
def consuming_queries(draw) -> object:
    """NOT FOLLOWED BY queries with CONSUME BY ANY or PARTITION (often partitioned)."""
    query = draw(absence_queries())
    return dataclasses.replace(query, consume=draw(st.sampled_from(["ANY", "PARTITION"])))


def _ordered(query) -> bool:
    """Whether the query fixes which matches come (ANY and LIMIT choose any)."""
    return query.limit is None and query.strategy != "ANY"


def _pushed(compiled: ceql.Query, events: list[dict], engine: str, save_at: int | None, advance: list[bool]) -> list:
    """One event at a time (``advance`` to an event's time before it where asked), the state
    saved and loaded at ``save_at``, then ``finish``."""
    evaluator = compiled.evaluator(engine=engine)
    out: list = []
    clock = compiled.plan.absence.time_attributes
    for index, event in enumerate(events):
        if index == save_at:
            blob = evaluator.export_state()
            evaluator = compiled.evaluator(engine=engine)
            evaluator.import_state(blob)
        if compiled.plan.window_kind != "events" and event["event_type"] in clock and advance[index % len(advance)]:
            out.extend(evaluator.advance(event[clock[event["event_type"]]]))
        out.extend(evaluator.push(event))
    out.extend(evaluator.finish())
    return out


@FAST
@given(cases(absence_queries(), max_size=12))
def test_every_path_gives_the_reference_order(case) -> None:
    """Run whole, in batches with a saved state, and pushed: the reference's list itself."""
    compiled = compile_valid(case.query, SCHEMA)
    if compiled is None or not _ordered(case.query):
        return
    expected = list(ceql.reference.run(compiled, case.events))
    paths = ("python", "compiled") if kernel.unsupported(compiled.plan) is None else ("python",)
    text = print_query(case.query)
    for path in paths:
        assert list(compiled.run(case.events, engine=path)) == expected, f"[{path}] {text}"
        assert run_engine(compiled, case.events, path, case.cuts, case.save_at) == expected, f"[{path}, cuts] {text}"
        assert _pushed(compiled, case.events, path, case.save_at, [False]) == expected, f"[{path}, push] {text}"


@FAST
@given(cases(consuming_queries(), max_size=12), st.lists(st.booleans(), min_size=1, max_size=5))
def test_consume_by_on_the_kernel_agrees(case, advance) -> None:
    """CONSUME BY on the kernel: whole, in batches with a saved state, pushed with ``advance``
    and a state round trip; the same list as the Python path where the order is fixed."""
    compiled = compile_valid(case.query, SCHEMA)
    if compiled is None:
        return
    assert kernel.unsupported(compiled.plan) is None or "CONSUME" not in kernel.unsupported(compiled.plan)
    if kernel.unsupported(compiled.plan) is not None:
        return
    reference = reference_matches(case.query, SCHEMA, case.events)
    text = print_query(case.query)
    batches = run_engine(compiled, case.events, "compiled", case.cuts, case.save_at)
    assert_agrees(case.query, SCHEMA, batches, reference, "compiled, batches")
    pushed = _pushed(compiled, case.events, "compiled", case.save_at, advance)
    assert_agrees(case.query, SCHEMA, pushed, reference, "compiled, push")
    if _ordered(case.query):
        python = _pushed(compiled, case.events, "python", case.save_at, advance)
        assert pushed == python, text
        assert batches == run_engine(compiled, case.events, "python", case.cuts, case.save_at), text


KEYED = ceql.declare(
    "CREATE STREAM S { EVENT A { k:int, v:int, ts:primary_time }, EVENT B { k:int, v:int, ts:primary_time }, "
    "EVENT C { k:int, v:int, ts:primary_time } }"
)
NAMED = ceql.declare(
    "CREATE STREAM S { EVENT A { k:string, v:int, ts:primary_time }, EVENT B { k:string, v:int, ts:primary_time } }"
)


def _keyed_events(count: int, keys: list, seed: int) -> list[dict]:
    import random

    rng = random.Random(seed)
    ts, out = 0, []
    for _ in range(count):
        ts += rng.randrange(0, 3) * 10**9  # (many events share a time: many deadlines pass at once)
        out.append({"event_type": rng.choice("AAB"), "k": rng.choice(keys), "v": rng.randrange(10), "ts": ts})
    return out


@pytest.mark.parametrize(
    ("schema", "keys"),
    [(KEYED, [7, 3, 11, 0, 5]), (NAMED, ["pear", "apple", "fig", "Zed"])],
)
def test_keys_due_at_one_event_come_by_key_value(schema, keys) -> None:
    """Several keys due at one event: by key value (numbers, strings by code point), whatever
    order the keys first came in; then by deadline. The same on one core, two workers, the
    Python path and pushed."""
    text = "SELECT * FROM S WHERE A AS a NOT FOLLOWED BY B PARTITION BY [k] WITHIN 5 SECONDS"
    query = ceql.compile(text, schema)
    events = _keyed_events(400, keys, 3)
    expected = list(ceql.reference.run(query, events))
    shared = 0
    for a, b in zip(expected, expected[1:]):
        if a.trigger == b.trigger:
            assert (a.partition, a.deadline) <= (b.partition, b.deadline)
            shared += a.partition != b.partition
    assert shared > 10  # (the case is there)
    assert list(query.run(events, engine="compiled")) == expected
    assert list(query.run(events, engine="compiled", workers=2)) == expected
    assert list(query.run(events, engine="python")) == expected
    for engine in ("compiled", "python"):
        assert _pushed(query, events, engine, 200, [False]) == expected


def test_consume_by_runs_on_the_kernel_and_consumes_across_triggers() -> None:
    """CONSUME BY ANY: once a deadline reports, complex events starting at or before that
    trigger are not reported; PARTITION does it per key."""
    events = _keyed_events(300, [1, 2, 3], 5)
    for consume in ("ANY", "PARTITION"):
        text = f"SELECT * FROM S WHERE A AS a ; A AS b NOT FOLLOWED BY B PARTITION BY [k] WITHIN 4 SECONDS CONSUME BY {consume}"
        query = ceql.compile(text, KEYED)
        assert kernel.unsupported(query.plan) is None
        assert isinstance(query.evaluator(engine="compiled")._kernel, KernelAbsence)
        expected = list(ceql.reference.run(query, events))
        plain = list(ceql.reference.run(ceql.compile(text.replace(f" CONSUME BY {consume}", ""), KEYED), events))
        assert 0 < len(expected) < len(plain)  # (it consumes)
        assert list(query.run(events, engine="compiled")) == expected
        with pytest.warns(RuntimeWarning, match="no CONSUME BY"):  # (one core: the same matches)
            assert list(query.run(events, engine="compiled", workers=2)) == expected
        for save_at in (None, 100, 200):
            assert _pushed(query, events, "compiled", save_at, [True, False]) == _pushed(
                query, events, "python", save_at, [True, False]
            )


def test_a_saved_state_keeps_the_consumed_markers() -> None:
    """The markers travel in the state (the matches after loading are the run's), and a state
    with impossible markers is refused."""
    from ceql.runtime.kernel.absence import FORMAT, VERSION
    from ceql.runtime.state import fingerprint, seal, unseal

    text = "SELECT * FROM S WHERE A AS a ; A AS b NOT FOLLOWED BY B PARTITION BY [k] WITHIN 4 SECONDS CONSUME BY PARTITION"
    query = ceql.compile(text, KEYED)
    events = _keyed_events(200, [1, 2, 3], 9)
    whole = list(query.run(events, engine="compiled"))
    first = query.evaluator(engine="compiled")
    got = list(first.push_batch(events[:120]))
    blob = first.export_state()
    body = unseal(blob, FORMAT, VERSION, fingerprint(query.checked))
    assert body["last_any"] >= 0 and body["last_by_key"]
    second = query.evaluator(engine="compiled")
    second.import_state(blob)
    got += second.push_batch(events[120:])
    got += second.finish()
    assert got == whole
    for field, value in (("last_any", 10**6), ("last_by_key", [[999, 3]]), ("last_by_key", [[0, -5]]), ("last_any", True)):
        broken = dict(body, **{field: value})
        with pytest.raises(StateError):
            query.evaluator(engine="compiled").import_state(seal(FORMAT, VERSION, fingerprint(query.checked), broken))
