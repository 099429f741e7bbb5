"""``WHERE f NOT FOLLOWED BY g ... WITHIN w`` (docs/semantics.md, 5.2): the complex events of f
that g does not follow before their deadline, reported when the deadline passes -- at the first
event past it, when the caller advances time, at the end of the input -- with the deadline in
``Match.deadline``. The engine agrees with the reference on generated queries, run as a whole,
in batches with the state saved and loaded, and pushed one event at a time with ``advance``."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ceql
from ceql.lang import print_query
from ceql.match import Match
from tests.support.agreement import (
    assert_agrees,
    by_trigger,
    check_case,
    compile_valid,
    record,
    reference_matches,
)
from tests.support.cli import run_cli
from tests.support.strategies import TEST_DECLARATION, absence_queries, cases

SCHEMA = ceql.declare(TEST_DECLARATION)
FAST = settings(max_examples=250, deadline=None, suppress_health_check=list(HealthCheck))

SHOP = ceql.declare(
    "CREATE STREAM Shop { EVENT Order { id:int, amount:double, ts:primary_time }, "
    "EVENT Payment { order:int, ts:primary_time }, EVENT Tick { ts:primary_time } }"
)
UNPAID = (
    "SELECT o.id AS order_id FROM Shop WHERE Order AS o "
    "NOT FOLLOWED BY Payment AS p FILTER p.order = o.id WITHIN 10 MINUTES"
)
MINUTE = 60 * 10**9
ORDERS = [
    {"event_type": "Order", "id": 1, "amount": 5.0, "ts": 0},
    {"event_type": "Order", "id": 2, "amount": 7.5, "ts": 1 * MINUTE},
    {"event_type": "Payment", "order": 1, "ts": 3 * MINUTE},
    {"event_type": "Order", "id": 3, "amount": 2.0, "ts": 4 * MINUTE},
    {"event_type": "Payment", "order": 2, "ts": 11 * MINUTE},  # exactly at order 2's deadline: too late
    {"event_type": "Payment", "order": 3, "ts": 14 * MINUTE - 1},  # 1 ns before order 3's deadline
    {"event_type": "Order", "id": 4, "amount": 9.0, "ts": 20 * MINUTE},
]


def summary(matches) -> list[tuple]:
    return sorted((m.trigger, m.positions, dict(m.measures)["order_id"], m.deadline) for m in matches)


EXPECTED = [(4, (1,), 2, 11 * MINUTE), (7, (6,), 4, 30 * MINUTE)]


def test_order_not_followed_by_its_payment() -> None:
    query = ceql.compile(UNPAID, SHOP)
    assert summary(ceql.reference.run(query, ORDERS)) == EXPECTED
    assert summary(query.run(ORDERS)) == EXPECTED
    assert summary(query.run(ORDERS, engine="compiled")) == EXPECTED  # (two kernels: runtime/kernel/absence.py)


def test_push_advance_and_finish() -> None:
    """Pushed one by one: order 2 is reported by the payment past its deadline; order 4 by
    advance (a heartbeat past its deadline), at the position of the next event."""
    query = ceql.compile(UNPAID, SHOP)
    evaluator = query.evaluator()
    got = []
    for event in ORDERS:
        got.extend(evaluator.push(event))
    assert summary(got) == EXPECTED[:1]
    assert evaluator.advance(30 * MINUTE - 1) == []
    (late,) = evaluator.advance("1970-01-01T00:30:00Z")
    assert (late.trigger, late.positions, late.deadline) == (7, (6,), 30 * MINUTE)
    assert evaluator.finish() == []
    with pytest.raises(ceql.errors.UsageError, match="after finish"):  # the input has ended
        evaluator.push({"event_type": "Order", "id": 5, "amount": 1.0, "ts": 29 * MINUTE})


def test_advance_reports_at_the_next_position() -> None:
    """Advanced past a deadline before an event of a type the query does not name, the match
    comes at the next position; without the call, at the next event the query names."""
    query = ceql.compile(UNPAID, SHOP)
    events = [ORDERS[0], {"event_type": "Tick", "ts": 10 * MINUTE}, {"event_type": "Payment", "order": 7, "ts": 11 * MINUTE}]
    (ran,) = query.run(events)
    evaluator = query.evaluator()
    evaluator.push(events[0])
    (advanced,) = evaluator.advance(10 * MINUTE)
    assert (ran.trigger, advanced.trigger) == (2, 1)
    assert Match(1, *list(ran)[1:]) == advanced


def test_a_deadline_is_passed_by_any_event_the_query_names() -> None:
    """The query's event types carry the clock: here an order of another id."""
    query = ceql.compile(UNPAID, SHOP)
    events = [ORDERS[0], {"event_type": "Order", "id": 9, "amount": 1.0, "ts": 10 * MINUTE}]
    first, second = query.run(events)
    assert (first.trigger, first.positions) == (1, (0,))
    assert (second.trigger, second.positions) == (2, (1,))  # due at the end of the input


def test_state_saved_while_waiting() -> None:
    query = ceql.compile(UNPAID, SHOP)
    for cut in range(len(ORDERS) + 1):
        first = query.evaluator()
        got = first.push_batch(ORDERS[:cut])
        second = query.evaluator()
        second.import_state(first.export_state())
        got += second.push_batch(ORDERS[cut:]) + second.finish()
        assert summary(got) == EXPECTED, cut


def test_partitions_and_windows_over_events() -> None:
    """Per key, a window of 3 events: the deadline is the event 3 positions after the first;
    two keys may come due at the same event."""
    text = "SELECT * WHERE A AS x NOT FOLLOWED BY B PARTITION BY [id] WITHIN 3 EVENTS"
    events = [{"event_type": t, "id": i, "v": 0, "s": "a", "t": n} for n, (t, i) in enumerate(
        [("A", 0), ("A", 1), ("B", 1), ("D", 0), ("A", 1), ("D", 1), ("D", 0), ("B", 1)]
    )]
    query = ceql.compile(text, SCHEMA)
    expected = [(3, (0,), (0,), 3), (7, (4,), (1,), 7)]
    for matches in (ceql.reference.run(query, events), query.run(events)):
        assert sorted((m.trigger, m.positions, m.partition, m.deadline) for m in matches) == expected


def test_match_shows_its_deadline() -> None:
    match = next(iter(ceql.compile(UNPAID, SHOP).run(ORDERS)))
    assert "deadline=660000000000" in repr(match)
    assert match.to_dict()["deadline"] == 11 * MINUTE
    assert "deadline" not in next(iter(ceql.compile("SELECT * FROM Shop WHERE Order", SHOP).run(ORDERS))).to_dict()


@pytest.mark.parametrize(
    "text, words",
    [
        ("SELECT * FROM Shop WHERE Order AS o NOT FOLLOWED BY Payment", "needs a window"),
        ("SELECT * FROM Shop WHERE Order ; NOT(Payment) ; Order NOT FOLLOWED BY Payment WITHIN 3 EVENTS", "cannot use NOT(...)"),
        ("SELECT * FROM Shop WHERE Order AS o NOT FOLLOWED BY Order WITHIN 3 [id]", "never decreases"),
        ("SELECT p FROM Shop WHERE Order AS o NOT FOLLOWED BY Payment AS p WITHIN 3 EVENTS", "label p in SELECT"),
        ("SELECT * FROM Shop WHERE Order NOT FOLLOWED BY Payment NOT FOLLOWED BY Tick WITHIN 3 EVENTS", "one NOT FOLLOWED BY"),
    ],
)
def test_refused(text, words) -> None:
    with pytest.raises(ceql.QueryError, match=words.replace("(", r"\(").replace(")", r"\)")):
        ceql.compile(text, SHOP)


def test_round_trip() -> None:
    checked = ceql.check(UNPAID, SHOP)
    assert ceql.parse(print_query(checked.query)) == checked.query
    assert "NOT FOLLOWED BY Payment AS p FILTER p.order = o.id" in print_query(checked.query)
    assert "not followed by:" in ceql.lang.describe(checked)


def test_cli_reports_at_the_end_of_the_input(tmp_path) -> None:
    declaration = tmp_path / "shop.core"
    declaration.write_text(
        "CREATE STREAM Shop { EVENT Order { id:int, amount:double, ts:primary_time }, "
        "EVENT Payment { order:int, ts:primary_time }, EVENT Tick { ts:primary_time } }"
    )
    events = tmp_path / "events.jsonl"
    events.write_text("".join(json.dumps(e) + "\n" for e in ORDERS))
    result = run_cli("run", "-d", str(declaration), "-q", UNPAID, "-i", str(events), "--quiet")
    assert result.returncode == 0, result.stderr
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(r["trigger"], r["positions"], r["deadline"]) for r in rows] == [(4, [1], 11 * MINUTE), (7, [6], 30 * MINUTE)]


# ------------------------------------------------------------------ generated queries

absence_cases = cases(absence_queries(), max_size=12)


@FAST
@given(absence_cases)
def test_engine_agrees_with_the_reference(case) -> None:
    """Batches cut anywhere, the state saved and loaded in the middle, the end of the input."""
    record(check_case(case.query, SCHEMA, case.events, case.cuts, case.save_at))


@FAST
@given(absence_cases, st.data())
def test_push_with_advance_agrees(case, data) -> None:
    """One event at a time, with ``advance`` to the time of the next event when that event is
    of a type the query names (so the trigger is that event's position either way), and a
    state round trip: the same matches as ``run`` (and the reference)."""
    compiled = compile_valid(case.query, SCHEMA)
    if compiled is None:
        return
    events = case.events
    evaluator = compiled.evaluator()
    got = []
    for index, event in enumerate(events):
        if index == case.save_at:
            blob = evaluator.export_state()
            evaluator = compiled.evaluator()
            evaluator.import_state(blob)
        clock = compiled.plan.absence.time_attributes
        if compiled.plan.window_kind != "events" and event["event_type"] in clock and data.draw(st.booleans()):
            got.extend(evaluator.advance(event["t"]))
        got.extend(evaluator.push(event))
    got.extend(evaluator.finish())
    ran = list(compiled.run(events))
    exact = case.query.limit is None and case.query.strategy != "ANY"
    if exact:
        assert by_trigger(got) == by_trigger(ran), print_query(case.query)
    reference = reference_matches(case.query, SCHEMA, events)
    assert_agrees(case.query, SCHEMA, got, reference, "push with advance")


# ------------------------------------------------------------------ Spark

SECOND = 10**9
KEYED = "SELECT * WHERE A AS x NOT FOLLOWED BY B AS p FILTER p.v >= x.v PARTITION BY [id] WITHIN 5 SECONDS"


def _keyed_events() -> list[dict]:
    """Key 1 goes quiet after its A: on a stream, only the watermark passes its deadline."""
    rows = [("A", 1, 0), ("A", 0, 1), ("B", 0, 2), ("A", 0, 3), ("A", 0, 9), ("B", 0, 11), ("B", 0, 20)]
    return [
        {"event_type": kind, "id": key, "v": 1, "s": "a", "t": second * SECOND, "seq": index}
        for index, (kind, key, second) in enumerate(rows)
    ]


def test_spark_batch_and_streaming_agree(spark, tmp_path) -> None:
    from ceql.spark import find
    from tests.test_spark_streaming import _stream, _write_files, input_schema

    events = _keyed_events()
    local = sorted((tuple(events[p]["seq"] for p in m.positions), m.deadline) for m in ceql.compile(KEYED, SCHEMA).run(events))
    assert local == [((0,), 5 * SECOND), ((3,), 8 * SECOND)]
    source = tmp_path / "in"
    source.mkdir()
    _write_files(source, events, per_file=2)
    batch_frame = spark.read.schema(input_schema()).json(str(source))
    batch = find(batch_frame, KEYED, SCHEMA, tie_break="seq", id_columns=["seq"], positions=True).collect()
    assert sorted((tuple(e.seq for e in r.events), r.deadline) for r in batch) == local
    assert sorted(r.trigger for r in batch) == [4, 4]  # the event at 9 s passes both deadlines
    running = (
        find(_stream(spark, source), KEYED, SCHEMA, tie_break="seq", id_columns=["seq"])
        .writeStream.format("parquet")
        .option("path", str(tmp_path / "out"))
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    running.awaitTermination()
    streamed = spark.read.parquet(str(tmp_path / "out")).collect()
    assert sorted((tuple(e.seq for e in r.events), r.deadline) for r in streamed) == local
