"""Conditions across events decided on registers as events arrive: exactness against the
reference, the equality index and routing, no repeated complex events, and the costs that must
not grow with the window or the stream (counted in work, not timed)."""

from __future__ import annotations

import random

import pytest

import ceql
from ceql.compile.determinize import AutomatonTooLarge
from ceql.runtime.runs import RegisterRuns
from ceql.runtime.state import StateError

DECL = """
CREATE STREAM S {
  EVENT T { id:int, user:int },
  EVENT R { id:int, user:int, tweet:int },
  EVENT A { v:int, k:int },
  EVENT B { v:int, k:int },
  EVENT C { v:int, k:int }
}"""
SCHEMA = ceql.declare(DECL)


def _tweets(n: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        if rng.random() < 0.35:
            out.append({"event_type": "T", "id": i, "user": rng.randrange(5)})
        else:
            out.append({"event_type": "R", "id": i, "user": rng.randrange(5), "tweet": max(0, i - rng.randrange(1, 6))})
    return out


def _abc(n: int, seed: int, values: int = 10) -> list[dict]:
    rng = random.Random(seed)
    return [{"event_type": rng.choice("ABC"), "v": rng.randrange(values), "k": rng.randrange(3)} for _ in range(n)]


def _same(query: str, events: list[dict]) -> list:
    compiled = ceql.compile(query, SCHEMA)
    got = list(compiled.run(events))
    expected = ceql.reference.run(compiled, events)
    assert sorted(got) == sorted(expected), query
    return got


@pytest.mark.parametrize("seed", range(3))
def test_equality_correlation_routed_and_indexed(seed: int) -> None:
    events = _tweets(60, seed)
    routed = "SELECT * FROM S WHERE (T AS x ; R AS y) FILTER x.id = y.tweet WITHIN 10 EVENTS"
    assert _same(routed, events)
    assert "routed per value" in dict(ceql.compile(routed, SCHEMA).plan.passes)["auto_partition"]
    # R plays two roles with two attributes: no routing, the equality index instead.
    chained = "SELECT * FROM S WHERE (R AS x ; R AS y) FILTER x.id = y.tweet WITHIN 10 EVENTS"
    compiled = ceql.compile(chained, SCHEMA)
    assert compiled.plan.registers is not None and compiled.plan.registers.key is not None
    assert _same(chained, events)


def test_the_index_visits_only_the_classes_of_the_events_value() -> None:
    query = ceql.compile("SELECT * FROM S WHERE (R AS x ; R AS y) FILTER x.id = y.tweet WITHIN 400 EVENTS", SCHEMA)
    evaluator = query.evaluator()
    runs = evaluator.runs
    assert isinstance(runs, RegisterRuns)
    visited = []
    original = runs.registers.step

    def counting(labels):
        program = original(labels)
        if program is None:
            return None

        def wrapped(nu, values, mask, symbol=-1):
            visited.append(1)
            return program(nu, values, mask, symbol)

        return wrapped

    runs.registers.step = counting
    events = [{"event_type": "R", "id": i, "user": 0, "tweet": -1} for i in range(300)]
    evaluator.push_batch(events)
    before = len(visited)
    evaluator.push({"event_type": "R", "id": 1000, "user": 0, "tweet": 5})
    # 300 live classes, but the event's value selects one of them (plus the initial class).
    assert len(visited) - before <= 3


@pytest.mark.parametrize("window", [6, 10])
def test_inequality_under_kleene_is_decided_before_enumeration(window: int) -> None:
    events = _abc(30, window, values=1000)
    query = f"SELECT * FROM S WHERE (A AS a ; B+ ; C AS c) FILTER a.v > c.v + 500 WITHIN {window} EVENTS"
    _same(query, events)
    # The work is bounded by the classes that can still succeed: no run holds a partial match
    # whose a.v cannot exceed anything (the condition prunes at C, the B+ subsets share nodes).
    compiled = ceql.compile(query, SCHEMA)
    evaluator = compiled.evaluator()
    list(evaluator.process(events))
    assert evaluator.live_nodes() < 30 * window


def test_repeated_derivations_are_reported_once() -> None:
    query = (
        "SELECT * FROM S WHERE ((((B AS x1 OR C AS x2)):+ FILTER (x1.v <= x2.v AND x2.v <= x1.v)))+ "
        "WITHIN 8 EVENTS"
    )
    events = [{"event_type": t, "v": v, "k": 0} for t, v in [("B", 2), ("C", 2), ("B", 2), ("C", 1), ("C", 2)]]
    got = _same(query, events)
    assert len(got) == len(set(got))
    assert ceql.compile(query, SCHEMA).plan.repeats


@pytest.mark.parametrize("seed", range(4))
def test_conditions_inside_iterations_and_or_branches(seed: int) -> None:
    events = _abc(14, seed, values=4)
    for query in (
        "SELECT * FROM S WHERE A AS a ; ((B AS b ; C AS c) FILTER b.v <= c.v)+",
        "SELECT * FROM S WHERE (A AS a ; B AS b FILTER a.v < b.v) OR (A AS a ; C AS c FILTER a.v = c.v)",
        "SELECT * FROM S WHERE (A AS a ; (B AS b)+ ; C AS c) FILTER a.v != b.v AND b.v < c.v + 1 WITHIN 6 EVENTS",
        "SELECT * FROM S WHERE (A AS a ALL B AS b) FILTER a.v = b.v AND a.k = b.k WITHIN 5 EVENTS",
    ):
        _same(query, events)


@pytest.mark.parametrize("strategy", ["NEXT", "LAST"])
def test_next_and_last_keep_one_class_per_state(strategy: str) -> None:
    query = ceql.compile(f"SELECT {strategy} * FROM S WHERE A AS a ; B AS b", SCHEMA)
    for count in (100, 1000):
        evaluator = query.evaluator()
        evaluator.push_batch([{"event_type": "A", "v": i, "k": 0} for i in range(count)])
        matches = evaluator.push({"event_type": "B", "v": 0, "k": 0})
        assert len(matches) == 1
        expected = (0, count) if strategy == "NEXT" else (count - 1, count)
        assert matches[0].positions == expected
        # The live structure does not grow with the number of A events.
        assert evaluator.live_nodes() <= 4


def test_max_reports_every_maximal_support() -> None:
    query = ceql.compile("SELECT MAX * FROM S WHERE A AS a ; B+ AS b", SCHEMA)
    events = [{"event_type": t, "v": 0, "k": 0} for t in "AABB"]
    got = list(query.run(events))
    assert sorted(got) == sorted(ceql.reference.run(query, events))
    assert {m.positions for m in got if m.trigger == 3} == {(0, 2, 3), (1, 2, 3)}


def test_state_round_trip_with_registers_and_hostile_states() -> None:
    query = ceql.compile("SELECT * FROM S WHERE (R AS x ; R AS y) FILTER x.id = y.tweet WITHIN 20 EVENTS", SCHEMA)
    events = _tweets(40, 7)
    whole = list(query.run(events))
    first = query.evaluator()
    early = list(first.process(events[:25]))
    blob = first.export_state()
    second = query.evaluator()
    second.import_state(blob)
    late = list(second.process(events[25:]))
    assert early + late == whole
    from tests.support.states import forge, open_state

    with pytest.raises(StateError, match="position"):
        query.evaluator().import_state(forge(blob, position=-5))
    _, document = open_state(blob)
    first_state = next(iter(document["states"]))
    with pytest.raises(StateError, match="automaton state"):
        query.evaluator().import_state(forge(blob, states={**document["states"], first_state: ["f", [987654]]}))
    with pytest.raises(StateError):
        query.evaluator().import_state(b"\x80\x04not a state")
    other = ceql.compile("SELECT * FROM S WHERE A ; B", SCHEMA)
    with pytest.raises(StateError, match="another query"):
        other.evaluator().import_state(blob)


def test_determinization_bound_names_the_cause() -> None:
    text = " ALL ".join(f"(A FILTER A[v = {i}])" for i in range(6))
    query = ceql.compile(f"SELECT * FROM S WHERE {text}", SCHEMA)
    query.plan.det.max_states = 20
    with pytest.raises(AutomatonTooLarge, match="ALL"):
        list(query.run([{"event_type": "A", "v": i % 6, "k": 0} for i in range(12)]))


def test_long_chains_compile_without_recursion() -> None:
    chain = " ; ".join(["A"] * 1000)
    query = ceql.compile(f"SELECT * FROM S WHERE {chain} WITHIN 2000 EVENTS", SCHEMA)
    assert list(query.run([{"event_type": "A", "v": 0, "k": 0}] * 999)) == []
    assert len(list(query.run([{"event_type": "A", "v": 0, "k": 0}] * 1000))) == 1
    wide = " OR ".join(["(A ; B)", "(B ; C)", "(C ; A)"] * 700)
    query = ceql.compile(f"SELECT * FROM S WHERE {wide}", SCHEMA)
    events = [{"event_type": t, "v": 0, "k": 0} for t in "ABC"]
    assert [m.positions for m in query.run(events)] == [(0, 1), (1, 2)]


def test_live_class_bound_names_the_option() -> None:
    from ceql.errors import LimitError

    query = ceql.compile("SELECT * FROM S WHERE (A AS a ; B AS b) FILTER a.v < b.v", SCHEMA)
    events = [{"event_type": "A", "v": i, "k": 0} for i in range(50)]
    with pytest.raises(LimitError, match="max_classes") as caught:
        list(query.run(events, max_classes=20))
    assert caught.value.limit == "max_classes"
