"""The SQL around MATCH_RECOGNIZE (ceql.sql.outer): ORDER BY, WHERE, GROUP BY, joins, WITH,
VALUES and subqueries as the input, uncorrelated subqueries inside the clause; ceql runs each
MATCH_RECOGNIZE, DuckDB the rest. Errors: inside the clause ceql's own, outside DuckDB's message
under the query's line and column; a missing function is named."""

from __future__ import annotations

import pyarrow as pa
import pytest

import ceql
from ceql.errors import QueryError, QuerySyntaxError, UnsupportedQueryError
from ceql.sql import outer

TICKER = pa.table(
    {
        "symbol": ["ACME"] * 8 + ["XYZ"] * 4,
        "day": [1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 3, 4],
        "price": [12, 11, 10, 13, 14, 9, 8, 15, 30, 28, 31, 29],
    }
)
V = """MATCH_RECOGNIZE (PARTITION BY symbol ORDER BY day MEASURES A.price AS start_price, LAST(UP.price) AS top,
    MATCH_NUMBER() AS n PATTERN (A DOWN+ UP+) DEFINE DOWN AS price < PREV(price), UP AS price > PREV(price))"""


def test_order_by_group_by_where_and_limit() -> None:
    got = ceql.sql(f"SELECT * FROM ticker {V} AS r ORDER BY top DESC LIMIT 2", ticker=TICKER).to_pylist()
    assert [r["top"] for r in got] == [31, 15]
    got = ceql.sql(f"""SELECT symbol, COUNT(*) AS matches, SUM(top - start_price) AS gain FROM ticker {V}
        WHERE top > start_price GROUP BY symbol ORDER BY symbol""", ticker=TICKER).to_pylist()
    assert got == [{"symbol": "ACME", "matches": 2, "gain": 8}, {"symbol": "XYZ", "matches": 1, "gain": 1}]


def test_with_values_and_a_join() -> None:
    text = f"""WITH prices AS (SELECT * FROM ticker WHERE symbol = 'ACME')
        SELECT r.n, t.price FROM prices {V} AS r JOIN ticker t ON t.symbol = r.symbol AND t.price = r.top ORDER BY r.n"""
    assert ceql.sql(text, ticker=TICKER).to_pylist() == [{"n": 1, "price": 14}, {"n": 2, "price": 15}]
    text = """SELECT m.id, m.label FROM (VALUES 1, 2, 3) t(id) MATCH_RECOGNIZE (ORDER BY id
        MEASURES CLASSIFIER() AS label ALL ROWS PER MATCH PATTERN (A B*) DEFINE B AS id > PREV(id)) AS m ORDER BY id"""
    assert ceql.sql(text).to_pylist() == [{"id": 1, "label": "A"}, {"id": 2, "label": "B"}, {"id": 3, "label": "B"}]


def test_constant_subqueries_inside_the_clause() -> None:
    text = """SELECT m.val FROM (VALUES (1, 100), (2, 200)) t(id, value) MATCH_RECOGNIZE (ORDER BY id
        MEASURES (SELECT 'x') AS val AFTER MATCH SKIP TO NEXT ROW PATTERN (A+)
        DEFINE A AS id IN (SELECT 1 UNION SELECT 2) AND EXISTS (SELECT 1)) AS m"""
    assert ceql.sql(text).to_pylist() == [{"val": "x"}, {"val": "x"}]


def test_the_simple_form_does_not_need_the_outer_engine() -> None:
    # a query ceql runs whole is never split (its own outer SELECT and WHERE)
    text = f"SELECT symbol, top FROM ticker {V} WHERE top > 20"
    assert ceql.sql(text, ticker=TICKER).to_pylist() == [{"symbol": "XYZ", "top": 31}]


def test_errors() -> None:
    with pytest.raises(QueryError, match="(?s)nosuch.*line 1, column 1|line 1, column 1.*nosuch"):
        ceql.sql(f"SELECT nosuch(top) FROM ticker {V} ORDER BY 1", ticker=TICKER)
    with pytest.raises(QuerySyntaxError, match="run by DuckDB"):
        ceql.sql(f"SELECT * FROM ticker {V} ORDER BY BY top", ticker=TICKER)
    # inside the clause the error is ceql's, at its place in the whole query
    text = "SELECT * FROM ticker MATCH_RECOGNIZE (PATTERN (A) DEFINE A AS nosuch > 1) ORDER BY 1"
    with pytest.raises(QueryError) as caught:
        ceql.sql(text, ticker=TICKER)
    assert caught.value.column == text.index("nosuch") + 1
    assert "the input ticker has symbol, day, price" in str(caught.value)


def test_split_finds_inputs_and_aliases() -> None:
    parts = outer.split("SELECT * FROM (VALUES 1) t(a) MATCH_RECOGNIZE (PATTERN (A)) AS m, u MATCH_RECOGNIZE (PATTERN (B)) x")
    assert [c.input_text.strip() for c in parts.clauses] == ["(VALUES 1) t(a)", "u"]
    assert [c.input_name for c in parts.clauses] == [None, "u"]
    assert parts.rest(["r0", "r1"]) == "SELECT * FROM r0  AS m, r1  x"
    assert outer.bare_values("SELECT * FROM (VALUES 1, 2) t(a)") == "SELECT * FROM (VALUES (1), (2)) t(a)"


def test_partition_as_a_name_and_an_unknown_function_inside_the_clause() -> None:
    text = f"SELECT r.symbol AS partition, COUNT(*) AS n FROM ticker {V} AS r GROUP BY r.symbol ORDER BY 1"
    assert ceql.sql(text, ticker=TICKER).to_pylist() == [{"partition": "ACME", "n": 2}, {"partition": "XYZ", "n": 1}]
    with pytest.raises(UnsupportedQueryError, match="function MEDIAN is not supported.*supported: PREV"):
        ceql.sql("SELECT * FROM ticker MATCH_RECOGNIZE (MEASURES MEDIAN(price) AS m PATTERN (A)) ORDER BY 1", ticker=TICKER)


def test_explain_and_check_of_a_query_with_sql_around() -> None:
    text = f"SELECT * FROM ticker {V} AS r ORDER BY top"
    plan = ceql.sql.explain(text, TICKER)
    assert plan.startswith("the SQL around MATCH_RECOGNIZE, run by DuckDB")
    assert "MATCH_RECOGNIZE over ticker" in plan and "ORDER BY top" in plan
    assert ceql.sql.check(text, TICKER).output_schema.names == ["symbol", "start_price", "top", "n"]


def test_nested_match_recognize_is_a_clear_error_and_with_works() -> None:
    inner = "SELECT * FROM ticker MATCH_RECOGNIZE (PARTITION BY symbol ORDER BY day MEASURES A.price AS price, A.day AS day PATTERN (A))"
    outer_clause = "MATCH_RECOGNIZE (PARTITION BY symbol ORDER BY day MEASURES COUNT(*) AS n PATTERN (A+))"
    with pytest.raises(UnsupportedQueryError, match="in the input of another"):
        ceql.sql(f"SELECT * FROM ({inner}) x {outer_clause} ORDER BY 1", ticker=TICKER)
    rows = ceql.sql(f"WITH x AS ({inner}) SELECT * FROM x {outer_clause} ORDER BY 1", ticker=TICKER).to_pylist()
    assert rows == [{"symbol": "ACME", "n": 8}, {"symbol": "XYZ", "n": 4}]


def test_flink_group_windows_and_match_rowtime() -> None:
    import datetime as dt

    base = dt.datetime(1970, 1, 1)
    ticks = pa.table(
        {
            "symbol": ["ACME"] * 6,
            "ts": pa.array([base + dt.timedelta(seconds=s) for s in (1, 2, 4, 5, 7, 10)], pa.timestamp("ms")),
            "price": pa.array([1, 2, 1, 1, 2, 3], pa.int32()),
        }
    )
    # MATCH_ROWTIME(): the time of the match's last row; TUMBLE windows aligned on the epoch
    got = ceql.sql(
        """SELECT symbol, SUM(price) AS total, TUMBLE_START(t, INTERVAL '3' SECOND) AS s,
        TUMBLE_END(t, INTERVAL '3' SECOND) AS e, TUMBLE_ROWTIME(t, INTERVAL '3' SECOND) AS r
        FROM ticks MATCH_RECOGNIZE (PARTITION BY symbol ORDER BY ts MEASURES SUM(price) AS price,
        MATCH_ROWTIME() AS t PATTERN (A B) DEFINE B AS B.price >= A.price) AS m
        GROUP BY symbol, TUMBLE(t, INTERVAL '3' SECOND) ORDER BY s""",
        ticks=ticks,
    ).to_pylist()
    seconds = [[int((row[k] - base).total_seconds() * 1000) for k in ("s", "e", "r")] for row in got]
    assert [r["total"] for r in got] == [3, 2, 5]  # matches ending at 2 s | at 5 s | at 10 s
    assert seconds == [[0, 3000, 2999], [3000, 6000, 5999], [9000, 12000, 11999]]
    # a SUM of integers computed by the SQL around (DuckDB's HUGEINT) is an integer input
    got = ceql.sql(
        """SELECT * FROM (SELECT symbol, SUM(price) AS p, MIN(ts) AS ts FROM ticks GROUP BY symbol, ts)
        MATCH_RECOGNIZE (PARTITION BY symbol ORDER BY ts MEASURES LAST(B.p) - A.p AS d PATTERN (A B)
        DEFINE B AS B.p > A.p)""",
        ticks=ticks,
    ).to_pylist()
    assert got == [{"symbol": "ACME", "d": 1}, {"symbol": "ACME", "d": 1}]


def test_match_rowtime_needs_a_time_order() -> None:
    with pytest.raises(QueryError, match="MATCH_ROWTIME"):
        ceql.sql("SELECT * FROM ticker MATCH_RECOGNIZE (ORDER BY day MEASURES MATCH_ROWTIME() AS t PATTERN (A))", ticker=TICKER)
