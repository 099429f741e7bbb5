"""Golden tests: the papers' worked examples and the CORE engines' own tests give the stated results."""

from __future__ import annotations

import itertools

import pytest

import ceql
from tests.support import golden, vendored
from tests.support.evaluators import EVALUATORS
from tests.support.examples import select, supports


@pytest.fixture(params=EVALUATORS)
def evaluate(request):
    return request.param[1]


@pytest.mark.parametrize(
    "name, strategy, formula, expected",
    golden.THESIS_CASES,
    ids=lambda v: v if isinstance(v, str) and " " in v else None,
)
def test_thesis_running_stream(evaluate, name, strategy, formula, expected) -> None:
    # Index 0's type is only fixed by the thesis; phi1..phi4 must not depend on it.
    variants = golden.TH_S_VARIANTS if "phi" in name and "phi6" not in name else golden.TH_S_VARIANTS[:2]
    for stream in variants:
        matches = evaluate(golden.TH_DECL, f"{select(strategy)} WHERE {formula}", stream)
        assert supports(matches) == expected, name


@pytest.mark.parametrize("name, strategy, formula, letters, expected", golden.QSUITE_CASES)
def test_foundations_q_suite(evaluate, name, strategy, formula, letters, expected) -> None:
    matches = evaluate(golden.Q_DECL, f"{select(strategy)} WHERE {formula}", golden._types(letters))
    got = supports(matches)
    last = len(letters) - 1
    assert got.get(last, set()) == expected[last], name
    for trigger, value in expected.items():
        assert got.get(trigger, set()) == value, (name, trigger)


def test_example4_second_order_labels(evaluate) -> None:
    query = "SELECT * WHERE (H AS X ; T+ AS Y ; H AS Z) FILTER X[hum < 30] AND Z[hum > 60] AND X.id = Y.id AND X.id = Z.id"
    matches = evaluate(golden.TH_DECL, query, golden.TH_S)
    assert {m.trigger for m in matches} == {7}
    got = {tuple(sorted(m.labels.items())) for m in matches}
    assert got == {
        (("X", (3,)), ("Y", (4, 6)), ("Z", (7,))),
        (("X", (3,)), ("Y", (4,)), ("Z", (7,))),
        (("X", (3,)), ("Y", (6,)), ("Z", (7,))),
    }


def test_theorem6_inequality_between_sets(evaluate) -> None:
    matches = evaluate(golden.RT_DECL, "SELECT * WHERE (R+ ; T+) FILTER R.a != T.a", golden.RT_STREAM)
    assert supports(matches) == {2: {(0, 2), (1, 2), (0, 1, 2)}, 3: {(1, 3), (1, 2, 3)}}


@pytest.mark.parametrize("name, stream, query, expected", golden.CORE_CASES)
def test_core_plus_plus_probes(evaluate, name, stream, query, expected) -> None:
    assert supports(evaluate(golden.CORE_DECL, query, stream)) == expected, name


# --------------------------------------------------------------------------- CORE (Java) engine tests


def _java_arrival_orders(streams: list[list[dict]]) -> list[list[dict]]:
    """The orders in which the Java engine can receive events from several streams.

    Its test harness reads every stream on its own thread, and each thread waits 30 ms before
    handing over its next event (``StreamReader.readFromCSVParser`` with ``fastRun``): the streams
    arrive one event per stream per round, in an order within the round that thread scheduling
    decides. The orders returned keep one fixed order of the streams in every round, for each
    order of the streams. One stream: one order.
    """
    orders = []
    for order in itertools.permutations(streams):
        merged = []
        for round_ in range(max(len(s) for s in order)):
            merged.extend(s[round_] for s in order if round_ < len(s))
        orders.append(merged)
    return orders


@pytest.mark.parametrize("test", vendored.core_java_tests(), ids=lambda t: t.name)
def test_core_java_engine_suite(evaluate, test: vendored.JavaTest) -> None:
    schema = ceql.declare(test.declaration)
    streams = [test.events(schema, path) for path in test.stream_files]
    read, expected = test.expected
    assert read == sum(len(s) for s in streams)
    # The Java engine's default consumption policy is ANY.
    query = test.query + "\nCONSUME BY ANY"
    for events in _java_arrival_orders(streams):
        matches = evaluate(test.declaration, query, events)
        values = sorted(f"value={float(events[p]['value'])}" for m in matches for p in m.positions)
        assert values == sorted(expected)


def test_core_java_suite_is_vendored() -> None:
    """The suite must not silently shrink to nothing (it reads tests/data/core-java)."""
    tests = vendored.core_java_tests()
    assert [t.name for t in tests] == [f"Test{n}" for n in range(1, 16)]
    assert sum(len(t.stream_files) > 1 for t in tests) == 2


@pytest.mark.parametrize(
    "strategy, expected",
    [("NEXT", tuple(range(201))), ("LAST", tuple(range(201))), ("MAX", tuple(range(201)))],
)
def test_next_last_and_max_do_not_enumerate_every_complex_event(strategy, expected) -> None:
    """200 A's then a B: 2^200 - 1 complex events end at the B; the best is found directly."""
    decl = "CREATE STREAM S { EVENT A { v:int }, EVENT B { v:int } }"
    stream = [{"event_type": "A", "v": i} for i in range(200)] + [{"event_type": "B", "v": 0}]
    query = ceql.compile(f"SELECT {strategy} * WHERE A+ ; B", ceql.declare(decl))
    matches = list(query.run(stream))
    assert [m.positions for m in matches if m.trigger == 200] == [expected]
    windowed = ceql.compile(f"SELECT {strategy} * WHERE A+ ; B WITHIN 10 EVENTS", ceql.declare(decl))
    assert [m.positions for m in windowed.run(stream)] == [tuple(range(191, 201))]
