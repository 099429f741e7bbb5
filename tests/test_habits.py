"""A data engineer's habits (issue 36): both spellings of a duration, suggestions for
misspelt words, ISO times in messages, pandas output, the ``ceql`` logger, progress, types
and the explain picture."""

from __future__ import annotations

import pytest

import ceql
from ceql.errors import EventError, QueryError, QuerySyntaxError
from ceql.lang import parse_query
from ceql.lang.printer import print_query

DECL = """CREATE STREAM S {
  EVENT view { id:int, price:double, ts:primary_time },
  EVENT buy  { id:int, price:double, ts:primary_time }
}"""


@pytest.fixture(scope="module")
def schema():
    return ceql.declare(DECL)


def _events():
    return [
        {"event_type": "view", "id": 1, "price": 2.0, "ts": "2026-01-01T00:00:00Z"},
        {"event_type": "view", "id": 2, "price": 5.0, "ts": "2026-01-01T00:02:00Z"},
        {"event_type": "buy", "id": 1, "price": 2.0, "ts": "2026-01-01T00:05:00Z"},
        {"event_type": "buy", "id": 2, "price": 5.0, "ts": "2026-01-01T00:20:00Z"},
    ]


# ---------------------------------------------------------------------- 1. durations


@pytest.mark.parametrize(
    "within",
    ["10 MINUTES", "INTERVAL '10' MINUTES", "INTERVAL '10' MINUTE", "INTERVAL '600' SECOND"],
)
def test_within_takes_both_spellings(schema, within):
    text = f"SELECT * FROM S WHERE view AS v ; buy AS b PARTITION BY [id] WITHIN {within}"
    query = ceql.compile(text, schema)
    assert [m.positions for m in query.run(_events())] == [(0, 2)]
    assert parse_query(text).within.value == 600 * 10**9


@pytest.mark.parametrize(
    "duration", ["10 MINUTES", "10 MINUTE", "INTERVAL '10' MINUTE", "600 SECONDS", "INTERVAL '600' SECONDS"]
)
def test_durations_in_expressions(schema, duration):
    text = f"SELECT * FROM S WHERE view AS v ; buy AS b FILTER b.ts < v.ts + {duration} AND v.id = b.id"
    query = ceql.compile(text, schema)
    assert [m.positions for m in query.run(_events())] == [(0, 2)]


@pytest.mark.parametrize(
    "text",
    [
        "SELECT * FROM S WHERE view AS v ; buy AS b WITHIN INTERVAL '90' SECONDS",
        "SELECT * FROM S WHERE view AS v ; buy AS b FILTER b.ts - v.ts <= 2 DAYS",
        "SELECT * FROM S WHERE view AS v ; buy AS b FILTER b.ts > v.ts + 1.5 MINUTES",
    ],
)
def test_durations_round_trip(text):
    query = parse_query(text)
    assert parse_query(print_query(query)) == query


def test_a_timestamp_is_no_window(schema):
    with pytest.raises(QueryError, match="TIMESTAMP|number after WITHIN"):
        ceql.compile("SELECT * FROM S WHERE view WITHIN TIMESTAMP '2026-01-01'", schema)


def test_a_duration_must_be_whole_nanoseconds(schema):
    with pytest.raises(QuerySyntaxError, match="whole number of nanoseconds"):
        parse_query("SELECT * FROM S WHERE view AS v ; buy AS b FILTER b.ts < v.ts + 0.5 NANOSECONDS")


# ---------------------------------------------------------------------- 2. errors


@pytest.mark.parametrize(
    ("text", "hint"),
    [
        ("SELECT * FROM S WHERE view AS v ; buy AS b WTIHIN 10 MINUTES", "did you mean WITHIN?"),
        ("SELECT * FROM S WHERE view AS v ; buy AS b PARTITON BY [id]", "did you mean PARTITION?"),
        ("SELECT * FORM S WHERE view", "did you mean FROM?"),
        ("SELECT * FROM S WHERE view AS v ; buy AS b CONSUMED BY ANY", "did you mean CONSUME?"),
        ("SELECT * FROM S WHERE veiw AS v", "did you mean view?"),
        ("SELECT * FROM S WHERE view AS v FILTER v.prise > 3", "did you mean price?"),
        ("SELECT * FROM S WHERE view AS v FILTER v[prise > 3]", "did you mean price?"),
        ("SELECT * FROM S WHERE view AS clicks ; buy FILTER clikcs.price > 3", "did you mean clicks?"),
        ("SELECT * FROM S WHERE view AS v ; buy PARTITION BY [idd]", "did you mean id?"),
    ],
)
def test_did_you_mean(schema, text, hint):
    with pytest.raises(QueryError) as caught:
        ceql.compile(text, schema)
    assert hint in str(caught.value)


def test_no_suggestion_for_unrelated_words(schema):
    with pytest.raises(QueryError) as caught:
        ceql.compile("SELECT * FROM S WHERE view AS v ; buy AS b BANANA", schema)
    assert "did you mean" not in str(caught.value)


def test_sql_where_condition_points_to_filter(schema):
    with pytest.raises(QuerySyntaxError) as caught:
        ceql.compile("SELECT * FROM S WHERE view AS v AND v.price > 3", schema)
    assert "a condition goes after FILTER: ... FILTER v.price > 3" in str(caught.value)
    assert caught.value.column == 38


def test_double_quoted_string_hint(schema):
    with pytest.raises(QuerySyntaxError) as caught:
        ceql.compile('SELECT * FROM S WHERE view AS v FILTER v.price = "x"', schema)
    assert "strings take single quotes: 'text'; back-quote a name: `name`" in str(caught.value)


@pytest.mark.parametrize("engine", ["auto", "python"])
def test_out_of_order_names_iso_times(schema, engine):
    query = ceql.compile("SELECT * FROM S WHERE view AS v ; buy AS b WITHIN 10 MINUTES", schema)
    events = [_events()[1], _events()[0]]
    with pytest.raises(EventError, match="time 2026-01-01T00:00:00Z after 2026-01-01T00:02:00Z"):
        list(query.run(events, engine=engine))
    with pytest.raises(EventError, match="time 2026-01-01T00:00:00Z after 2026-01-01T00:02:00Z"):
        evaluator = query.evaluator()
        for event in events:
            evaluator.push(event)


def test_out_of_order_keeps_integers_for_integer_input(schema):
    query = ceql.compile("SELECT * FROM S WHERE view AS v ; buy AS b WITHIN 10 MINUTES", schema)
    events = [{"event_type": "view", "id": 1, "price": 1.0, "ts": 20}, {"event_type": "buy", "id": 1, "price": 1.0, "ts": 10}]
    with pytest.raises(EventError, match="time 10 after 20"):
        list(query.run(events))
