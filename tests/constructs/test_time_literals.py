"""Time written as time: ``TIMESTAMP '...'`` and ``INTERVAL 'n' UNIT`` in conditions and in
arithmetic with time attributes; a time compared with a string is an error showing the
TIMESTAMP form; a time mixed with a bare number is flagged. The reference, the Python path, the
kernel, ``push`` and Spark agree (the generators in tests/support/strategies.py draw time literals too,
so the differential suites cover them)."""

from __future__ import annotations

import pyarrow as pa
import pytest

import ceql
from ceql.lang import print_query
from ceql.lang.timetext import format_timestamp, parse_interval, parse_timestamp
from ceql.runtime.conversion import Target, convert
from tests.support.cli import run_cli

SCHEMA = ceql.declare(
    "CREATE STREAM S { EVENT Order { id:int, ts:primary_time }, EVENT Payment { id:int, ts:primary_time(ms) } }"
)


@pytest.mark.parametrize(
    "text",
    [
        "2024-03-01T09:00:00Z",
        "2024-03-01T09:00:00.123456789Z",
        "2024-03-01 09:00:00,5+01:00",
        "2024-03-01T09:00-0530",
        "2024-03-01T09:00:00+01",
        "2024-02-29",
        "1969-12-31T23:59:59.999999999Z",
        "1677-09-21T00:12:45.145224192Z",
        "2262-04-11T23:47:14.854775807Z",
    ],
)
def test_timestamp_values_are_the_inputs_values(text) -> None:
    """A TIMESTAMP literal is the nanoseconds the input conversion gives the same text."""
    converted = convert(pa.array([text]), Target("primary_time"))
    assert parse_timestamp(text) == converted.values[0].as_py()
    value = parse_timestamp(text)
    assert parse_timestamp(format_timestamp(value)) == value


@pytest.mark.parametrize("text", ["2024-02-30", "2023-02-29", "2024-03-01T24:00", "2024-03-01T09:00:00+2400", "x", "2262-04-11T23:47:17Z", "1677-09-21T00:12:43Z"])
def test_impossible_timestamps_are_refused(text) -> None:
    assert isinstance(parse_timestamp(text), str)
    assert convert(pa.array([text]), Target("primary_time")).codes[0] != 0


def test_intervals_in_every_unit_of_within() -> None:
    for plural, singular, ns in ceql.lang.grammar.TIME_UNITS:
        assert parse_interval("3", plural) == parse_interval("3", singular.lower()) == 3 * ns
        within = ceql.check(f"SELECT * WHERE Order WITHIN 3 {plural}", SCHEMA).query.within
        assert within.value == 3 * ns
    assert parse_interval("1.5", "SECONDS") == 1_500_000_000
    assert isinstance(parse_interval("1.5", "NANOSECONDS"), str)
    assert isinstance(parse_interval("-1", "SECONDS"), str)
    assert isinstance(parse_interval("1", "WEEKS"), str)


@pytest.mark.parametrize(
    "text",
    [
        "SELECT * WHERE Order AS o FILTER o[ts >= TIMESTAMP '2024-03-01T09:00:00Z']",
        "SELECT * WHERE Order AS o ; Payment AS p FILTER p.ts < o.ts + INTERVAL '10' MINUTE AND o.id = p.id",
        "SELECT * WHERE Order AS o ; Payment AS p FILTER p.ts - o.ts <= INTERVAL '1.5' SECONDS",
        "SELECT o.ts + INTERVAL '1' HOUR AS due, p.ts - o.ts AS gap WHERE Order AS o ; Payment AS p",
        "SELECT * WHERE Order AS o FILTER TIMESTAMP '2024-03-01' < o.ts AND o.ts < TIMESTAMP '2024-03-02'",
        "SELECT * WHERE Order AS o FILTER o[ts IN RANGE(TIMESTAMP '2024-03-01', TIMESTAMP '2024-03-02')]",
        "SELECT * WHERE Order AS o ; Payment AS p FILTER p.ts - o.ts > 2 * INTERVAL '5' MINUTES - INTERVAL '1' DAY / 1440",
    ],
)
def test_round_trip_and_no_warning(text) -> None:
    checked = ceql.check(text, SCHEMA)
    assert checked.warnings == ()
    assert ceql.parse(print_query(checked.query)) == checked.query


def test_time_words_stay_names() -> None:
    schema = ceql.declare("CREATE STREAM S { EVENT A { timestamp:int, interval:int } }")
    checked = ceql.check("SELECT * WHERE A AS timestamp FILTER timestamp[timestamp > 1 AND interval < 2]", schema)
    assert not checked.warnings


def test_measure_types_of_times() -> None:
    checked = ceql.check("SELECT o.ts + INTERVAL '1' HOUR AS due, p.ts - o.ts AS gap WHERE Order AS o ; Payment AS p", SCHEMA)
    assert checked.measure_types == {"due": "timestamp", "gap": "int"}


@pytest.mark.parametrize(
    "text",
    [
        "SELECT * WHERE Order AS o FILTER o[ts > '2024-03-01T09:00:00Z']",
        "SELECT * WHERE Order AS o FILTER o.ts < 'soon'",
        "SELECT * WHERE Order AS o FILTER 'x' = o.ts - o.ts",
    ],
)
def test_a_time_compared_with_a_string_is_an_error_showing_the_timestamp_form(text) -> None:
    column = text.index("'") + 1  # the error points at the string
    with pytest.raises(ceql.QueryError) as error:
        ceql.check(text, SCHEMA)
    message = str(error.value)
    assert "cannot compare a time with a string" in message and "TIMESTAMP '" in message
    assert f"column {column}" in message


@pytest.mark.parametrize(
    "text, words",
    [
        ("SELECT * WHERE Order AS f ; Payment AS t FILTER f.ts < t.ts - 60", "INTERVAL '60' SECONDS"),
        ("SELECT * WHERE Order AS f ; Payment AS t FILTER t.ts - f.ts < 60", "read as 60 nanoseconds"),
        ("SELECT * WHERE Order AS o FILTER o[ts > 1000]", "TIMESTAMP '1970-01-01T00:00:00.000001Z'"),
        ("SELECT * WHERE Order AS o ; Payment AS p FILTER o.ts + p.ts > 0", "no meaning"),
        ("SELECT * WHERE Order AS o ; Payment AS p FILTER o.ts < p.ts - o.ts", "timestamp with an interval"),
    ],
)
def test_a_time_with_a_bare_number_is_flagged(text, words) -> None:
    """Flagged, not refused: CORE's integer times keep working (the value is nanoseconds)."""
    (warning,) = ceql.check(text, SCHEMA).warnings
    assert words in warning


def test_ceql_check_prints_the_warning(tmp_path) -> None:
    declaration = tmp_path / "decl.core"
    declaration.write_text("CREATE STREAM S { EVENT A { id:int, ts:primary_time }, EVENT B { id:int, ts:primary_time } }")
    query = "SELECT * FROM S WHERE A AS f ; B AS t FILTER f.ts < t.ts - 60"
    result = run_cli("check", "-d", str(declaration), "-q", query)
    assert result.returncode == 0, result.stderr
    assert "warnings:" in result.stdout and "1:53: t.ts - 60 combines a timestamp" in result.stdout


# ------------------------------------------------------------------ every engine agrees

ORDERS = [
    {"event_type": "Order", "id": 1, "ts": "2024-03-01T09:00:00Z"},
    {"event_type": "Order", "id": 2, "ts": "2024-03-01T09:04:00Z"},
    {"event_type": "Payment", "id": 1, "ts": "2024-03-01T09:09:59.999Z"},
    {"event_type": "Order", "id": 3, "ts": "2024-03-01T09:12:00Z"},
    {"event_type": "Payment", "id": 2, "ts": "2024-03-01T09:20:00Z"},
    {"event_type": "Payment", "id": 3, "ts": "2024-03-01T10:22:00+01:00"},  # 10 minutes: too late
]
PAID_IN_TIME = (
    "SELECT * WHERE Order AS o ; Payment AS p FILTER o.id = p.id AND p.ts < o.ts + INTERVAL '10' MINUTES "
    "AND o[ts >= TIMESTAMP '2024-03-01T09:00:00Z']"
)


@pytest.mark.parametrize("engine", ["python", "compiled"])
def test_reference_engine_and_push_agree(engine) -> None:
    events = ORDERS
    query = ceql.compile(PAID_IN_TIME + " WITHIN 1 HOUR", SCHEMA)
    reference = [(m.trigger, m.positions) for m in ceql.reference.run(query, events)]
    ran = [(m.trigger, m.positions) for m in query.run(events, engine=engine)]
    evaluator = query.evaluator(engine=engine)
    pushed = [(m.trigger, m.positions) for e in events for m in evaluator.push(e)]
    assert sorted(reference) == sorted(ran) == sorted(pushed) == [(2, (0, 2))]


@pytest.mark.spark
def test_spark_agrees(spark) -> None:
    import pandas as pd

    from ceql.spark import find

    events = ORDERS
    query = ceql.compile(PAID_IN_TIME, SCHEMA)
    frame = spark.createDataFrame(pd.DataFrame(events))
    rows = find(frame, query, SCHEMA, positions=True).collect()
    assert sorted((r.trigger, tuple(r.positions)) for r in rows) == [(2, (0, 2))]
    local = sorted((m.trigger, m.positions) for m in query.run(events))
    assert local == [(2, (0, 2))]


@pytest.mark.parametrize(
    "bad, found, expected",
    [
        ("TIMESTAMP '2024-13-01'", "'2024-13-01'", "is not a date"),
        ("TIMESTAMP 'yesterday'", "'yesterday'", "is not an ISO-8601 time"),
        ("TIMESTAMP '2024-03-01T25:00:00Z'", "'2024-03-01T25:00:00Z'", "is not a time of day"),
        ("TIMESTAMP '2024-03-01T09:00:00+25:00'", "'2024-03-01T09:00:00+25:00'", "impossible offset"),
        ("o.ts + INTERVAL 'x' MINUTE", "'x'", "is not a number"),
        ("o.ts + INTERVAL '1.5' NANOSECONDS", "'1.5'", "whole number of nanoseconds"),
        ("o.ts + INTERVAL '1' FORTNIGHT", "FORTNIGHT", "expected a time unit"),
        ("o.ts + INTERVAL 10 MINUTES", "10", "takes quoted text"),
        ("TIMESTAMP 2024", "2024", "takes quoted text"),
    ],
)
def test_bad_time_literals_are_errors_at_their_line_and_column(bad, found, expected) -> None:
    """A bad literal is a syntax error that points at the part at fault, on its own line."""
    text = f"SELECT * WHERE Order AS o ; Payment AS p\n  FILTER p.ts > {bad}"
    with pytest.raises(ceql.QuerySyntaxError) as caught:
        ceql.check(text, SCHEMA)
    error = caught.value
    assert expected in error.message
    assert error.line == 2
    assert text.splitlines()[1][error.column - 1 :].startswith(found), (error.column, str(error))


@pytest.mark.parametrize("text", ["2262-04-11T23:47:16.854775807Z", "1677-09-21T00:12:43.145224192Z"])
def test_the_int64_edges_are_times_in_literals_and_in_the_input(text) -> None:
    """A literal takes every instant the input takes (the whole int64 nanosecond range)."""
    value = parse_timestamp(text)
    assert value in (2**63 - 1, -(2**63))
    assert convert(pa.array([text]), Target("primary_time")).codes[0] == 0
