"""MATCH_RECOGNIZE: worked examples of the standard (Flink's and Trino's documentation examples,
with their published results), the inputs and the result's types, errors with line and column,
and the benchmark queries run from their Flink SQL text unchanged."""

from __future__ import annotations

import sys
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest

import ceql
from ceql.errors import EventError, LimitError, QueryError, QuerySyntaxError, UnsupportedQueryError
from ceql.reference import match_recognize as reference

ROOT = Path(__file__).resolve().parents[1]


def both(text: str, **tables) -> list[dict]:
    """The engine's rows, checked equal to the reference's."""
    (name, table), = tables.items()
    table = ceql.sql.values.as_table(table)
    got = ceql.sql(text, **{name: table})
    expected = reference.run(ceql.sql.check(text, table), table)
    assert got.equals(expected), (got.to_pylist(), expected.to_pylist())
    return got.to_pylist()


def ticker(prices: list[int], symbol: str = "ACME") -> pa.Table:
    return pa.table({"symbol": [symbol] * len(prices), "rowtime": list(range(1, len(prices) + 1)), "price": prices})


# ---------------------------------------------------------------------------- documented results


SKIP_QUERY = """SELECT * FROM Ticker MATCH_RECOGNIZE (
    PARTITION BY symbol ORDER BY rowtime
    MEASURES SUM(A.price) AS sumPrice, FIRST(rowtime) AS startTime, LAST(rowtime) AS endTime
    ONE ROW PER MATCH AFTER MATCH SKIP {skip}
    PATTERN (A+ C) DEFINE A AS SUM(A.price) < 30)"""


def test_after_match_skip_past_last_row_and_to_last() -> None:
    """Flink's documentation, "After Match Strategy" (its input and published rows)."""
    table = ticker([7, 9, 10, 5, 10, 7, 14])
    rows = both(SKIP_QUERY.format(skip="PAST LAST ROW"), Ticker=table)
    assert [(r["sumPrice"], r["startTime"], r["endTime"]) for r in rows] == [(26, 1, 4), (17, 5, 7)]
    # SKIP TO LAST A: Flink's documentation publishes 26, 25, 17; the standard then resumes at
    # the last A of the third match, its first row: an error (Oracle, Trino, and Flink itself).
    with pytest.raises(EventError, match="would resume at the first row of the match number 4"):
        ceql.sql(SKIP_QUERY.format(skip="TO LAST A"), Ticker=table)


def test_after_match_skip_to_next_row() -> None:
    """Flink publishes five rows; the standard (ceql, Trino) has a sixth: the match that starts
    at the sixth row (A = 7, C = 14), which Flink's documentation omits."""
    rows = both(SKIP_QUERY.format(skip="TO NEXT ROW"), Ticker=ticker([7, 9, 10, 5, 10, 7, 14]))
    assert [r["sumPrice"] for r in rows] == [26, 24, 25, 22, 17, 7]


def test_greedy_and_reluctant() -> None:
    """Flink's documentation, "Greedy & Reluctant Quantifiers"."""
    table = pa.table(
        {"symbol": ["XYZ"] * 6, "tax": [1, 2, 1, 2, 1, 2], "price": [10, 11, 12, 13, 14, 16], "rowtime": range(6)}
    )
    query = """SELECT * FROM Ticker MATCH_RECOGNIZE (PARTITION BY symbol ORDER BY rowtime
        MEASURES C.price AS lastPrice ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW
        PATTERN (A B{q} C) DEFINE A AS A.price > 10, B AS B.price < 15, C AS C.price > 12)"""
    assert [r["lastPrice"] for r in both(query.format(q="*"), Ticker=table)] == [16]
    assert [r["lastPrice"] for r in both(query.format(q="*?"), Ticker=table)] == [13, 16]


def test_aggregates_in_define() -> None:
    """Flink's documentation, "Aggregations": periods whose average price stays below 15."""
    prices = [12, 17, 13, 16, 25, 2, 4, 10, 15, 25, 25, 30]
    query = """SELECT * FROM Ticker MATCH_RECOGNIZE (PARTITION BY symbol ORDER BY rowtime
        MEASURES FIRST(A.rowtime) AS start_t, LAST(A.rowtime) AS end_t, AVG(A.price) AS avgPrice
        ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW PATTERN (A+ B) DEFINE A AS AVG(A.price) < 15)"""
    rows = both(query, Ticker=ticker(prices))
    assert [(r["start_t"], r["end_t"], r["avgPrice"]) for r in rows] == [(1, 4, 14.5), (6, 11, 13.5)]


def test_logical_offsets_and_skip_to_last() -> None:
    """Flink's documentation, its first example: a falling price, then a rise."""
    query = """SELECT * FROM Ticker MATCH_RECOGNIZE (PARTITION BY symbol ORDER BY rowtime
        MEASURES START_ROW.rowtime AS start_t, LAST(PRICE_DOWN.rowtime) AS bottom_t, LAST(PRICE_UP.rowtime) AS end_t
        ONE ROW PER MATCH AFTER MATCH SKIP TO LAST PRICE_UP
        PATTERN (START_ROW PRICE_DOWN+ PRICE_UP)
        DEFINE PRICE_DOWN AS (LAST(PRICE_DOWN.price, 1) IS NULL AND PRICE_DOWN.price < START_ROW.price)
                             OR PRICE_DOWN.price < LAST(PRICE_DOWN.price, 1),
               PRICE_UP AS PRICE_UP.price > LAST(PRICE_DOWN.price, 1))"""
    rows = both(query, Ticker=ticker([12, 17, 19, 21, 25, 18, 15, 14, 24, 25, 19]))
    assert [(r["start_t"], r["bottom_t"], r["end_t"]) for r in rows] == [(5, 8, 9)]


def test_trino_v_shape_with_subset() -> None:
    """Trino's documentation example (PREV, SUBSET, a reference to another variable)."""
    orders = pa.table({"custkey": [1] * 8, "orderdate": range(8), "totalprice": [50, 40, 30, 35, 45, 60, 20, 25]})
    query = """SELECT * FROM orders MATCH_RECOGNIZE(
        PARTITION BY custkey ORDER BY orderdate
        MEASURES A.totalprice AS starting_price, LAST(B.totalprice) AS bottom_price, LAST(U.totalprice) AS top_price
        ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW
        PATTERN (A B+ C+ D+) SUBSET U = (C, D)
        DEFINE B AS totalprice < PREV(totalprice),
               C AS totalprice > PREV(totalprice) AND totalprice <= A.totalprice,
               D AS totalprice > PREV(totalprice))"""
    assert both(query, orders=orders) == [{"custkey": 1, "starting_price": 50, "bottom_price": 30, "top_price": 60}]


def test_all_rows_per_match_running_final_classifier_and_exclusion() -> None:
    table = ticker([5, 3, 2, 4, 6, 1])
    query = """SELECT rowtime, price, c, n, bottom, final_bottom FROM Ticker MATCH_RECOGNIZE (
        PARTITION BY symbol ORDER BY rowtime
        MEASURES CLASSIFIER() AS c, MATCH_NUMBER() AS n, LAST(DOWN.price) AS bottom, FINAL LAST(DOWN.price) AS final_bottom
        ALL ROWS PER MATCH AFTER MATCH SKIP PAST LAST ROW
        PATTERN (START {- DOWN+ -} UP+) DEFINE DOWN AS price < PREV(price), UP AS price > PREV(price))"""
    assert both(query, Ticker=table) == [
        {"rowtime": 1, "price": 5, "c": "START", "n": 1, "bottom": None, "final_bottom": 2},
        {"rowtime": 4, "price": 4, "c": "UP", "n": 1, "bottom": 2, "final_bottom": 2},
        {"rowtime": 5, "price": 6, "c": "UP", "n": 1, "bottom": 2, "final_bottom": 2},
    ]


def test_empty_matches_and_unmatched_rows() -> None:
    table = ticker([1, 5, 6, 2])
    base = """SELECT rowtime, n, c FROM Ticker MATCH_RECOGNIZE (PARTITION BY symbol ORDER BY rowtime
        MEASURES MATCH_NUMBER() AS n, CLASSIFIER() AS c {rows} PATTERN ({pattern}) DEFINE A AS price > 4)"""
    empty = both(base.format(rows="ALL ROWS PER MATCH SHOW EMPTY MATCHES", pattern="A*"), Ticker=table)
    assert [(r["rowtime"], r["n"], r["c"]) for r in empty] == [(1, 1, None), (2, 2, "A"), (3, 2, "A"), (4, 3, None)]
    omitted = both(base.format(rows="ALL ROWS PER MATCH OMIT EMPTY MATCHES", pattern="A*"), Ticker=table)
    assert [r["rowtime"] for r in omitted] == [2, 3]
    unmatched = both(base.format(rows="ALL ROWS PER MATCH WITH UNMATCHED ROWS", pattern="A+"), Ticker=table)
    assert [(r["rowtime"], r["n"]) for r in unmatched] == [(1, None), (2, 1), (3, 1), (4, None)]
    one = both(base.format(rows="ONE ROW PER MATCH", pattern="A*").replace("rowtime, n, c", "n"), Ticker=table)
    assert [r["n"] for r in one] == [1, 2, 3]


def test_alternation_permute_anchors_and_reluctant() -> None:
    table = pa.table({"t": range(6), "k": list("bacbca")})
    query = """SELECT * FROM e MATCH_RECOGNIZE (ORDER BY t MEASURES FIRST(t) AS s, LAST(t) AS e_, COUNT(*) AS n
        ONE ROW PER MATCH AFTER MATCH SKIP TO NEXT ROW PATTERN ({p}) DEFINE {d})"""
    define = {"A": "A AS k = 'a'", "B": "B AS k = 'b'", "C": "C AS k = 'c'"}

    def run(pattern: str) -> list[dict]:
        used = ", ".join(v for k, v in define.items() if k in pattern.replace("PERMUTE", ""))
        return both(query.format(p=pattern, d=used), e=table)

    assert [r["s"] for r in run("A | B")] == [0, 1, 3, 5]
    assert [(r["s"], r["n"]) for r in run("PERMUTE(A, B, C)")] == [(0, 3), (1, 3), (3, 3)]
    assert [r["s"] for r in run("^ B")] == [0]
    assert [r["s"] for r in run("A $")] == [5]
    assert [r["n"] for r in run("B (A | C){1,2}?")] == [2, 2]
    assert [r["n"] for r in run("B (A | C){1,2}")] == [3, 3]


def test_within() -> None:
    table = pa.table({"t": pa.array([0, 500, 1000, 3000, 3999], pa.timestamp("ms")), "k": list("abbab")})
    query = """SELECT * FROM e MATCH_RECOGNIZE (ORDER BY t MEASURES A.t AS a, LAST(B.t) AS b ONE ROW PER MATCH
        PATTERN (A B+) WITHIN INTERVAL '1' SECOND DEFINE A AS k = 'a', B AS k = 'b')"""
    rows = both(query, e=table)
    assert [(r["a"].timestamp(), r["b"].timestamp()) for r in rows] == [(0.0, 0.5), (3.0, 3.999)]


# ---------------------------------------------------------------------------- inputs and types


def test_inputs_pandas_dict_and_types() -> None:
    frame = pd.DataFrame({"k": [1, 1, 2], "t": [1, 2, 3], "v": [1.5, 2.5, 3.5]})
    query = "SELECT * FROM f MATCH_RECOGNIZE (PARTITION BY k ORDER BY t MEASURES A.v AS v, COUNT(*) AS n PATTERN (A))"
    assert ceql.sql(query, f=frame).to_pylist() == [{"k": 1, "v": 1.5, "n": 1}, {"k": 1, "v": 2.5, "n": 1}, {"k": 2, "v": 3.5, "n": 1}]
    assert ceql.sql(query, F=frame.to_dict("list")).num_rows == 3  # names compare as SQL compares them
    with pytest.raises(QueryError, match="table f is not given"):
        ceql.sql(query, g=frame)


def test_result_keeps_column_types() -> None:
    zone = pa.timestamp("us", tz="Europe/Paris")
    table = pa.table(
        {
            "t": pa.array([1, 2], pa.int32()),
            "at": pa.array([datetime(2024, 1, 1, tzinfo=timezone.utc)] * 2, zone),
            "name": pa.array(["x", "y"]).dictionary_encode(),
            "big": pa.array([2**62, -(2**62)], pa.int64()),
        }
    )
    query = """SELECT * FROM e MATCH_RECOGNIZE (ORDER BY t MEASURES A.t AS t1, A.at AS at1, A.at + INTERVAL '1' SECOND AS later,
        A.name AS n1, A.big AS b1, A.big * 1 AS b2, MAX(A.t) AS mx ONE ROW PER MATCH PATTERN (A))"""
    result = ceql.sql(query, e=table)
    types = {f.name: f.type for f in result.schema}
    assert types["t1"] == pa.int32() and types["mx"] == pa.int32()
    assert types["at1"] == zone and types["later"] == zone
    assert types["n1"] == table.schema.field("name").type
    assert result.column("b2").to_pylist() == [2**62, -(2**62)]  # integers exact


def test_unnamed_select_items_are_named_by_their_place_as_calcite_does() -> None:
    """``EXPR$n``, n the item's place in the list; a CAST to the column's own type is still an
    expression (Flink names it so), only a plain column keeps its name."""
    table = pa.table({"t": [1, 2], "v": [5, 7]})
    query = "SELECT t1, t1 + 1, CAST(t1 AS BIGINT), R.v1 FROM e MATCH_RECOGNIZE (ORDER BY t MEASURES A.t AS t1, A.v AS v1 PATTERN (A)) AS R"
    assert ceql.sql(query, e=table).column_names == ["t1", "EXPR$1", "EXPR$2", "v1"]


def test_empty_input() -> None:
    table = pa.table({"k": pa.array([], pa.int64()), "t": pa.array([], pa.int64())})
    query = "SELECT * FROM e MATCH_RECOGNIZE (PARTITION BY k ORDER BY t MEASURES COUNT(*) AS n PATTERN (A+))"
    result = ceql.sql(query, e=table)
    assert result.num_rows == 0 and result.schema.names == ["k", "n"]


# ---------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    "text, kind, where, message",
    [
        ("SELECT * FROM t MATCH_RECOGNIZE (PATTERN (A B) DEFINE A AS x > 1", QuerySyntaxError, (1, 65), "closing MATCH_RECOGNIZE"),
        ("SELECT * FROM t\n  MATCH_RECOGNIZE (DEFINE A AS x > 1 PATTERN (A))", QuerySyntaxError, (2, 20), "out of place"),
        ("SELECT * FROM t MATCH_RECOGNIZE (PATTERN (A**))", QuerySyntaxError, (1, 45), "cannot follow a quantifier"),
        ("SELECT * FROM t MATCH_RECOGNIZE (PATTERN (A{3,1}))", QuerySyntaxError, (1, 44), "below the lower bound"),
        ("SELECT * FROM t MATCH_RECOGNIZE (PATTERN (A) DEFINE A AS s LIKE 'x%' ESCAPE '!')", UnsupportedQueryError, (1, 70), "ESCAPE"),
        ("SELECT * FROM t MATCH_RECOGNIZE (MEASURES MATCH_PROCTIME() AS r PATTERN (A))", UnsupportedQueryError, (1, 43), "MATCH_PROCTIME"),
        ("SELECT * FROM t MATCH_RECOGNIZE (PATTERN (A)) GROUP BY x", UnsupportedQueryError, (1, 17), "without columns"),
        ("SELECT * FROM t MATCH_RECOGNIZE (PATTERN (A) DEFINE A AS nope > 1)", QueryError, (1, 58), "no such column"),
        ("SELECT * FROM t MATCH_RECOGNIZE (PATTERN (A) DEFINE B AS v > 1)", QueryError, (1, 53), "does not occur in PATTERN"),
        ("SELECT * FROM t MATCH_RECOGNIZE (PATTERN (A) DEFINE A AS FINAL LAST(v) > 1)", QueryError, (1, 58), "FINAL is not allowed"),
        ("SELECT * FROM t MATCH_RECOGNIZE (MEASURES LAST(A.v + B.v) AS x PATTERN (A B))", QueryError, (1, 54), "several variables"),
        ("SELECT * FROM t MATCH_RECOGNIZE (ORDER BY v PATTERN (A) WITHIN INTERVAL '1' SECOND)", QueryError, (1, 64), "not a timestamp"),
        ("SELECT * FROM t MATCH_RECOGNIZE (MEASURES A.v AS v ALL ROWS PER MATCH PATTERN (A))", QueryError, (1, 50), "two columns named"),
        ("SELECT * FROM t MATCH_RECOGNIZE (ALL ROWS PER MATCH WITH UNMATCHED ROWS PATTERN ({- A -}))", QueryError, (1, 82), "exclusion"),
        ("SELECT * FROM t MATCH_RECOGNIZE (PATTERN (A) DEFINE A AS s > 1)", QueryError, (1, 60), "cannot compare string with int"),
        ("SELECT * FROM t MATCH_RECOGNIZE (PATTERN (A) DEFINE A AS v + 1)", QueryError, (1, 58), "not a boolean"),
        ("SELECT * FROM t MATCH_RECOGNIZE (PATTERN (U A) SUBSET U = (A))", QueryError, (1, 55), "has the name of a pattern variable"),
        ("SELECT * FROM t MATCH_RECOGNIZE (PATTERN (A) SUBSET U = (B))", QueryError, (1, 58), "not a pattern variable"),
    ],
)
def test_query_errors_have_line_and_column(text, kind, where, message) -> None:
    table = pa.table({"v": [1], "s": ["a"], "t": [1]})
    with pytest.raises(kind) as caught:
        ceql.sql(text, t=table)
    assert (caught.value.line, caught.value.column) == where, str(caught.value)
    assert message in str(caught.value)


def test_runtime_errors() -> None:
    table = pa.table({"t": [1, 2, 3], "v": [4, 0, 2]})
    with pytest.raises(EventError, match="division by zero") as caught:
        ceql.sql("SELECT * FROM e MATCH_RECOGNIZE (ORDER BY t PATTERN (A B) DEFINE B AS A.v / B.v > 1)", e=table)
    assert caught.value.row == 1  # the row whose condition divides by zero
    # the left side of AND is FALSE: the division is not evaluated
    ok = "SELECT * FROM e MATCH_RECOGNIZE (ORDER BY t MEASURES COUNT(*) AS n PATTERN (A B) DEFINE B AS B.v <> 0 AND A.v / B.v > 1)"
    assert ceql.sql(ok, e=table).to_pylist() == []
    with pytest.raises(EventError, match="no row mapped to B"):
        ceql.sql("SELECT * FROM e MATCH_RECOGNIZE (ORDER BY t AFTER MATCH SKIP TO FIRST B PATTERN (A B?))", e=table)
    overflow = pa.table({"t": [1, 2], "v": [2**62, 2**62]})
    with pytest.raises(EventError, match="integer overflow in SUM"):
        ceql.sql("SELECT * FROM e MATCH_RECOGNIZE (ORDER BY t MEASURES SUM(v) AS s PATTERN (A+))", e=overflow)


def test_step_bound() -> None:
    table = pa.table({"t": range(40), "v": [1] * 40})
    query = "SELECT * FROM e MATCH_RECOGNIZE (ORDER BY t PATTERN ((A | B)+ C) DEFINE A AS v > 0 AND COUNT(*) > 0, C AS v < 0)"
    with pytest.raises(LimitError, match="matching steps"):
        ceql.sql.run(query, {"e": table}, max_steps=10_000)


# ---------------------------------------------------------------------------- the benchmark queries


@pytest.mark.parametrize("name", ["A : B : C per key", "stock rise per ticker, 20 s", "A : B:+ : C per key"])
def test_benchmark_queries_run_from_flink_text_unchanged(name: str) -> None:
    """The MATCH_RECOGNIZE queries of `python -m benchmarks flink`, exactly as Flink gets them,
    give the rows of their CEQL equivalents (benchmarks/flink_side.py)."""
    sys.path.insert(0, str(ROOT))
    from benchmarks import flink_sql, generators
    from benchmarks.flink_side import SQL, WORKLOADS, canonical
    from benchmarks.workloads import DECLARATIONS

    time_column = SQL[name][0]
    table = getattr(generators, flink_sql.SQL_GENERATOR[time_column])(events=20_000)
    rows = ceql.sql(flink_sql.flink_text(name), ev=flink_sql.with_rowtime(table, time_column))
    _, declaration, _, text = WORKLOADS[name]
    positions = ceql.compile(text, ceql.declare(DECLARATIONS[declaration])).run(table, output="arrow").column("positions")
    assert sorted(tuple(r.values()) for r in rows.to_pylist()) == sorted(canonical(name, tuple(p)) for p in positions.to_pylist())
    assert rows.num_rows > 20


def test_frames_with_to_arrow_such_as_polars() -> None:
    """polars (not a dependency) is read through ``to_arrow()``, as any frame that has it."""

    class Frame:
        def __init__(self, table: pa.Table) -> None:
            self.table = table

        def to_arrow(self) -> pa.Table:
            return self.table

    frame = Frame(pa.table({"t": [1, 2, 3], "v": [3, 1, 2]}))
    query = "SELECT * FROM f MATCH_RECOGNIZE (ORDER BY t MEASURES FIRST(v) AS a, LAST(v) AS b PATTERN (X Y) DEFINE Y AS v > PREV(v))"
    assert ceql.sql(query, f=frame).to_pylist() == [{"a": 1, "b": 2}]


@pytest.mark.parametrize(
    "pattern, rows",
    [
        ("A B+ C", "ALL ROWS PER MATCH"),  # matches longer than the first path buffer, many output rows
        ("A+ B", "ONE ROW PER MATCH"),  # hundreds of backtracking entries
        ("(A? X?)+ B", "ONE ROW PER MATCH"),  # iterations that may map no row: the trail grows
        ("(A | X)+ B", "ALL ROWS PER MATCH WITH UNMATCHED ROWS"),
    ],
)
def test_buffers_grow_mid_partition(pattern: str, rows: str) -> None:
    """The matcher's buffers (path, backtracking stack, trail, output) start small and grow,
    resuming where it stopped: long inputs agree with the reference."""
    n = 2100  # 6 partitions of 350 rows: over 1024 output rows
    table = pa.table(
        {
            "k": [i // 350 for i in range(n)],
            "t": range(n),
            "kind": ["a" if i % 350 == 0 else ("c" if i % 350 == 349 else "b") for i in range(n)],
            "v": [i % 7 for i in range(n)],
        }
    )
    conditions = {"A": "A AS kind <> 'c'", "B": "B AS kind = 'c' OR COUNT(*) > 400", "C": "C AS kind = 'c'", "X": "X AS v > 3"}
    define = ", ".join(c for v, c in conditions.items() if v in pattern)
    query = f"""SELECT * FROM e MATCH_RECOGNIZE (PARTITION BY k ORDER BY t
        MEASURES COUNT(*) AS n, SUM(v) AS s, LAST(A.v, 1) AS prev_a, CLASSIFIER() AS c
        {rows} PATTERN ({pattern}) DEFINE {define})"""
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(20_000)  # the reference recurses once per iteration
    try:
        both(query, e=table)
    finally:
        sys.setrecursionlimit(old)
