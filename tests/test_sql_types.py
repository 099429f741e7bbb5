"""Types and functions MATCH_RECOGNIZE was refusing (issue #35): columns of nulls only (Arrow's
null type, from a pandas frame or an empty CSV column), TIMESTAMP literals with a zone and
arithmetic on literals next to zoned columns (the literal syntax shared with CEQL), LIKE, LOWER,
UPPER. Each answer is checked against the reference."""

from __future__ import annotations

import datetime as dt

import pandas as pd
import pyarrow as pa
import pytest

import ceql
from ceql.errors import QuerySyntaxError, UnsupportedQueryError
from ceql.lang.timetext import parse_timestamp
from ceql.reference import match_recognize as reference


def both(text: str, table: pa.Table) -> list[dict]:
    """The engine's rows, asserted equal to the reference's."""
    got = ceql.sql(text, t=table).to_pylist()
    assert got == reference.run(ceql.sql.check(text, table), table).to_pylist()
    return got


def test_a_column_of_nulls_is_null_on_every_row() -> None:
    frame = pd.DataFrame({"t": [1, 2, 3], "x": [None, None, None], "v": [1, 2, 3]})
    table = pa.Table.from_pandas(frame, preserve_index=False)
    assert table.schema.field("x").type == pa.null()
    text = """SELECT * FROM t MATCH_RECOGNIZE (ORDER BY t MEASURES COALESCE(A.x, A.v) AS c, A.x AS ax
        PATTERN (A) DEFINE A AS x IS NULL AND v > 1)"""
    assert both(text, table) == [{"c": 2, "ax": None}, {"c": 3, "ax": None}]
    rows = ceql.sql("SELECT * FROM t MATCH_RECOGNIZE (ORDER BY t MEASURES A.v AS w ALL ROWS PER MATCH PATTERN (A))", t=frame)
    assert rows.column("x").to_pylist() == [None] * 3


ZONED = pa.table(
    {
        "ts": pa.array([dt.datetime(2024, 1, d, tzinfo=dt.timezone.utc) for d in (1, 2, 3)], pa.timestamp("ms", tz="UTC")),
        "v": [1, 2, 3],
    }
)


@pytest.mark.parametrize(
    ("condition", "expected"),
    [
        ("ts >= TIMESTAMP '2024-01-03 00:00:00' - INTERVAL '1' DAY", [2, 3]),
        ("ts >= TIMESTAMP '2024-01-03T00:00:00Z' - INTERVAL '1' DAY", [2, 3]),
        ("ts > TIMESTAMP '2024-01-02T01:00:00+02:00'", [2, 3]),
        ("ts < TIMESTAMP '2024-01-01' + INTERVAL '36' HOUR", [1, 2]),
    ],
)
def test_timestamp_literals_next_to_a_zoned_column(condition: str, expected: list[int]) -> None:
    text = f"SELECT * FROM t MATCH_RECOGNIZE (ORDER BY ts MEASURES A.v AS v PATTERN (A) DEFINE A AS {condition})"
    assert [r["v"] for r in both(text, ZONED)] == expected


@pytest.mark.parametrize("literal", ["2024-01-02T03:04:05Z", "2024-01-02 03:04:05.5+01:00", "2024-01-02", "2024-01-02 03:04"])
def test_timestamp_literals_read_as_ceql_reads_them(literal: str) -> None:
    text = f"SELECT * FROM t MATCH_RECOGNIZE (MEASURES TIMESTAMP '{literal}' AS x PATTERN (A))"
    value = ceql.sql(text, t=pa.table({"v": [1]})).column("x").cast(pa.int64())[0].as_py()
    assert value == parse_timestamp(literal)


def test_a_bad_timestamp_literal_says_why() -> None:
    with pytest.raises(QuerySyntaxError, match="is not a date"):
        ceql.sql("SELECT * FROM t MATCH_RECOGNIZE (MEASURES TIMESTAMP '2024-13-01' AS x PATTERN (A))", t=pa.table({"v": [1]}))


STRINGS = pa.table({"t": [1, 2, 3, 4], "s": ["ACME", "abc", "A_e", None], "v": [1, 2, 3, 4]})


@pytest.mark.parametrize(
    ("condition", "expected"),
    [
        ("s LIKE 'A%'", ["ACME", "A_e"]),
        ("s NOT LIKE 'A%'", ["abc"]),
        ("s LIKE '_b_'", ["abc"]),
        ("s LIKE 'a%' OR LOWER(s) LIKE 'acme'", ["ACME", "abc"]),
        ("UPPER(s) = 'ABC'", ["abc"]),
        ("s LIKE 'A.e'", []),
    ],
)
def test_like_lower_upper(condition: str, expected: list[str]) -> None:
    text = f"SELECT * FROM t MATCH_RECOGNIZE (ORDER BY t MEASURES A.s AS s PATTERN (A) DEFINE A AS {condition})"
    assert [r["s"] for r in both(text, STRINGS)] == expected


def test_string_functions_in_the_vm_and_in_measures() -> None:
    text = """SELECT * FROM t MATCH_RECOGNIZE (ORDER BY t MEASURES LOWER(A.s) AS a, UPPER(LAST(B.s)) AS b
        PATTERN (A B) DEFINE B AS LOWER(B.s) LIKE '%b%' OR B.v > A.v)"""
    assert both(text, STRINGS) == [{"a": "acme", "b": "ABC"}, {"a": "a_e", "b": None}]


def test_string_functions_of_a_value_only_the_matcher_has() -> None:
    # one computed operand: the VM maps its dictionary code through a table (engine)
    text = """SELECT * FROM t MATCH_RECOGNIZE (ORDER BY t MEASURES LOWER(CLASSIFIER()) || '_x' AS c,
        FINAL MAX(LOWER(CLASSIFIER())) AS m ALL ROWS PER MATCH PATTERN (A B+)
        DEFINE B AS LOWER(PREV(CLASSIFIER())) LIKE 'a%' OR MIN(UPPER(CLASSIFIER())) = 'B')"""
    # B needs A just before it: the MIN over the match so far is 'A' from the first row
    assert [(r["c"], r["m"]) for r in both(text, STRINGS)] == [("a_x", "b"), ("b_x", "b")] * 2


def test_string_functions_of_two_computed_values_are_refused() -> None:
    with pytest.raises(UnsupportedQueryError, match=r"\|\| of a value computed while matching"):
        ceql.sql("SELECT * FROM t MATCH_RECOGNIZE (MEASURES CLASSIFIER() || LAST(s) AS c PATTERN (A))", t=STRINGS)
    with pytest.raises(QuerySyntaxError, match="LIKE pattern"):
        ceql.sql("SELECT * FROM t MATCH_RECOGNIZE (PATTERN (A) DEFINE A AS s LIKE s)", t=STRINGS)


def test_trino_and_flink_aggregates_that_are_min_max_and_count() -> None:
    table = pa.table({"t": [1, 2, 3, 4, 5], "v": [3, 1, 4, 1, 5], "b": [True, False, None, True, True]})
    text = """SELECT * FROM t MATCH_RECOGNIZE (ORDER BY t MEASURES BOOL_AND(b) AS ba, BOOL_OR(b) AS bo,
        EVERY(A.b) AS ev, COUNT_IF(v > 2) AS ci, ARBITRARY(v) AS av ALL ROWS PER MATCH
        PATTERN (A B*) DEFINE B AS COUNT_IF(v > 2) < 3 AND BOOL_OR(b))"""
    rows = both(text, table)
    assert [(r["ba"], r["bo"], r["ci"], r["av"]) for r in rows] == [
        (True, True, 1, 3),
        (False, True, 1, 1),
        (False, True, 2, 1),
        (False, True, 2, 1),
        (True, True, 1, 5),
    ]
    with pytest.raises(ceql.QueryError, match="BOOL_AND needs bool"):
        ceql.sql("SELECT * FROM t MATCH_RECOGNIZE (MEASURES BOOL_AND(v) AS x PATTERN (A))", t=table)


def test_current_timestamp_is_the_time_the_query_runs() -> None:
    now = dt.datetime.now(dt.timezone.utc)
    table = pa.table({"ts": pa.array([now - dt.timedelta(days=2), now - dt.timedelta(hours=1)], pa.timestamp("ms", tz="UTC")), "v": [1, 2]})
    text = """SELECT * FROM t MATCH_RECOGNIZE (ORDER BY ts MEASURES A.v AS v, CURRENT_TIMESTAMP AS at
        PATTERN (A) DEFINE A AS ts >= CURRENT_TIMESTAMP - INTERVAL '1' DAY)"""
    first = ceql.sql(text, t=table).to_pylist()
    assert [r["v"] for r in first] == [2] and first[0]["at"] >= now
    assert ceql.sql(text, t=table).to_pylist()[0]["at"] > first[0]["at"]  # read again: the plan is not reused
    from ceql.sql.parser import with_the_clock_read

    written = with_the_clock_read("SELECT CURRENT_TIMESTAMP, LOCALTIMESTAMP, 'CURRENT_TIMESTAMP'")
    assert written.startswith("SELECT TIMESTAMP '") and written.endswith(", 'CURRENT_TIMESTAMP'")


def test_concatenation_of_a_rows_strings() -> None:
    table = pa.table({"t": [1, 2, 3], "s": ["a", "b", None], "u": ["x", "y", "z"]})
    text = """SELECT * FROM t MATCH_RECOGNIZE (ORDER BY t MEASURES A.s || '-' || A.u AS c, UPPER(B.s || B.u) AS d
        PATTERN (A B?) DEFINE B AS B.s || B.u = 'by')"""
    assert both(text, table) == [{"c": "a-x", "d": "BY"}, {"c": None, "d": None}]
    with pytest.raises(UnsupportedQueryError, match=r"\|\| of a value computed while matching"):
        ceql.sql("SELECT * FROM t MATCH_RECOGNIZE (MEASURES A.s || B.s AS c PATTERN (A B))", t=table)


@pytest.mark.parametrize(("interval", "expected"), [("'2' MILLISECONDS", [2, 1]), ("'1500' MICROSECOND", [1, 1, 1]), ("'1' SECOND", [3])])
def test_intervals_in_ceqls_smaller_units(interval: str, expected: list[int]) -> None:
    table = pa.table({"ts": pa.array([0, 1_500_000, 3_000_000], pa.timestamp("ns")), "v": [1, 2, 3]})
    text = f"SELECT * FROM t MATCH_RECOGNIZE (ORDER BY ts MEASURES COUNT(*) AS n PATTERN (A+) WITHIN INTERVAL {interval})"
    assert [r["n"] for r in both(text, table)] == expected
    with pytest.raises(QuerySyntaxError, match="is not a number"):
        ceql.sql(text.replace(interval, "'x' MILLISECOND"), t=table)
