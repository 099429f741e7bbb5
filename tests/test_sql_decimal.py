"""Exact DECIMAL in MATCH_RECOGNIZE (issue #35): decimal128 columns, DECIMAL literals, CAST to
DECIMAL(p, s), Trino's result types for + - * / %, comparisons, SUM/AVG/MIN/MAX and the row
aggregates, decimal128 results. The engine computes with unscaled int64 values (vector, VM),
the reference with Python's Decimal: they agree on generated decimal data and queries, and the
examples below are Trino's answers."""

from __future__ import annotations

import os
from decimal import Decimal as D

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ceql
from ceql.errors import EventError, QueryError, UnsupportedQueryError
from ceql.reference import match_recognize as reference
from tests.support.sql_strategies import patterns
from tests.test_sql_differential import check_agrees

EXAMPLES = int(os.environ.get("CEQL_SQL_EXAMPLES", "300"))


def run_both(text: str, table: pa.Table) -> pa.Table:
    """The engine's result, checked equal (schema and rows) to the reference's."""
    expected = reference.run(ceql.sql.check(text, table), table)
    got = ceql.sql(text, t=table)
    assert got.schema == expected.schema
    assert got.to_pylist() == expected.to_pylist()
    return got


PRICES = pa.table(
    {
        "id": [1, 2, 3, 4, 5],
        "price": pa.array([D("1.25"), D("2.50"), None, D("-3.75"), D("10.05")], pa.decimal128(10, 2)),
        "q": [1, 2, 3, 4, 5],
    }
)


def one(text: str, table: pa.Table = PRICES) -> dict:
    rows = run_both(text, table).to_pylist()
    assert len(rows) == 1
    return rows[0]


def test_arithmetic_has_trinos_types_and_exact_values() -> None:
    result = run_both(
        """SELECT * FROM t MATCH_RECOGNIZE (ORDER BY id MEASURES A.price + B.price AS plus, A.price * B.price AS times,
        B.price / A.price AS quotient, B.price % A.price AS modulo, -A.price AS neg, ABS(A.price - B.price) AS dist
        PATTERN (A B) DEFINE A AS id = 4)""",
        PRICES,
    )
    assert result.schema.field("plus").type == pa.decimal128(11, 2)  # 1 + max(s) + max(p - s)
    assert result.schema.field("times").type == pa.decimal128(20, 4)  # p1 + p2, s1 + s2
    assert result.schema.field("quotient").type == pa.decimal128(12, 2)  # p1 + s2 + max(0, s2 - s1)
    assert result.schema.field("modulo").type == pa.decimal128(10, 2)
    assert result.to_pylist() == [
        {
            "plus": D("6.30"),
            "times": D("-37.6875"),
            "quotient": D("-2.68"),  # -2.68
            "modulo": D("2.55"),  # the sign of the dividend
            "neg": D("3.75"),
            "dist": D("13.80"),
        }
    ]


def decimal_table(values: list[str], precision: int, scale: int) -> pa.Table:
    """Rows ``id`` 1, 2, ... with ``x`` the decimals written in ``values``."""
    return pa.table({"id": range(1, len(values) + 1), "x": pa.array([D(v) for v in values], pa.decimal128(precision, scale))})


def test_division_rounds_half_away_from_zero() -> None:
    text = "SELECT * FROM t MATCH_RECOGNIZE (ORDER BY id MEASURES A.x / 8 AS eighth, A.x / 3 AS third ALL ROWS PER MATCH PATTERN (A))"
    assert run_both(text, decimal_table(["1.00", "-1.00"], 5, 2)).to_pylist() == [
        {"id": 1, "eighth": D("0.13"), "third": D("0.33"), "x": D("1.00")},  # 0.125 -> 0.13
        {"id": 2, "eighth": D("-0.13"), "third": D("-0.33"), "x": D("-1.00")},
    ]


def test_comparisons_are_exact_where_doubles_are_not() -> None:
    # 0.1 + 0.2 = 0.3 exactly as decimals (as doubles it is 0.30000000000000004)
    exact = "A.x + B.x = 0.3 AS exact, CAST(A.x AS DOUBLE) + CAST(B.x AS DOUBLE) = 0.3 AS inexact"
    row = one(f"SELECT * FROM t MATCH_RECOGNIZE (ORDER BY id MEASURES {exact} PATTERN (A B))", decimal_table(["0.1", "0.2"], 3, 1))
    assert row == {"exact": True, "inexact": False}


def test_aggregates() -> None:
    row = one(
        """SELECT * FROM t MATCH_RECOGNIZE (ORDER BY id MEASURES SUM(price) AS s, AVG(price) AS a, MIN(price) AS lo,
        MAX(price) AS hi, COUNT(price) AS n PATTERN (A+))"""
    )
    assert row == {"s": D("10.05"), "a": D("2.51"), "lo": D("-3.75"), "hi": D("10.05"), "n": 4}  # 10.05 / 4 = 2.5125
    schema = ceql.sql(
        "SELECT * FROM t MATCH_RECOGNIZE (ORDER BY id MEASURES SUM(price) AS s, AVG(price) AS a PATTERN (A+))", t=PRICES
    ).schema
    assert schema.field("s").type == pa.decimal128(38, 2) and schema.field("a").type == pa.decimal128(10, 2)


def test_literals_and_casts() -> None:
    row = one(
        """SELECT * FROM t MATCH_RECOGNIZE (ORDER BY id MEASURES DECIMAL '0.125' AS lit, A.price + 0.1 AS plus_literal,
        CAST(A.price AS DECIMAL(4, 1)) AS rounded, CAST(A.price AS BIGINT) AS whole, CAST(A.price AS DOUBLE) AS d,
        CAST(2.5 AS DECIMAL(3, 2)) AS folded, CAST(q AS DECIMAL(5, 1)) AS from_int
        PATTERN (A) DEFINE A AS price < 0)"""
    )
    assert row == {
        "lit": D("0.125"),
        "plus_literal": D("-3.65"),  # the literal is exact, so the sum stays a decimal
        "rounded": D("-3.8"),
        "whole": -4,  # rounded half away from zero, as Trino casts
        "d": -3.75,
        "folded": D("2.50"),
        "from_int": D("4.0"),
    }


def test_a_decimal_meeting_a_double_column_is_a_double() -> None:
    table = pa.table({"id": [1], "x": pa.array([D("1.5")], pa.decimal128(3, 1)), "w": [0.25]})
    row = one("SELECT * FROM t MATCH_RECOGNIZE (ORDER BY id MEASURES A.x + A.w AS s PATTERN (A))", table)
    assert row == {"s": 1.75}


def test_overflow_and_precision_are_errors() -> None:
    big = pa.table({"id": [1, 2], "x": pa.array([D("500000000000000000.0"), D("1.0")], pa.decimal128(38, 1))})
    with pytest.raises(EventError, match="integer overflow in addition"):
        ceql.sql("SELECT * FROM t MATCH_RECOGNIZE (ORDER BY id MEASURES A.x + A.x AS s PATTERN (A))", t=big)
    with pytest.raises(EventError, match="decimal scaling"):
        ceql.sql("SELECT * FROM t MATCH_RECOGNIZE (ORDER BY id MEASURES A.x + DECIMAL '0.01' AS s PATTERN (A))", t=big)
    with pytest.raises(EventError, match="precision of its DECIMAL type"):
        ceql.sql(
            "SELECT * FROM t MATCH_RECOGNIZE (ORDER BY id MEASURES CAST(A.x AS DECIMAL(3, 1)) AS s PATTERN (A))", t=big
        )
    with pytest.raises(EventError, match="division by zero"):
        ceql.sql("SELECT * FROM t MATCH_RECOGNIZE (ORDER BY id MEASURES A.price / (A.price - A.price) AS s PATTERN (A))", t=PRICES)
    with pytest.raises(EventError, match="decimal scaling"):  # the dividend at scale 1 + 1 is past 64 bits
        ceql.sql("SELECT * FROM t MATCH_RECOGNIZE (ORDER BY id MEASURES A.x / A.x AS s PATTERN (A))", t=big)
    with pytest.raises(QueryError, match="does not fit"):
        ceql.sql("SELECT * FROM t MATCH_RECOGNIZE (ORDER BY id MEASURES CAST(123.4 AS DECIMAL(3, 1)) AS s PATTERN (A))", t=big)


def test_what_stays_refused_says_why() -> None:
    wide = pa.table({"id": [1], "x": pa.array([D("1")], pa.decimal128(38, 20))})
    with pytest.raises(UnsupportedQueryError, match="decimals of scale up to 18"):
        ceql.sql("SELECT * FROM t MATCH_RECOGNIZE (ORDER BY id MEASURES A.x AS x PATTERN (A))", t=wide)
    with pytest.raises(UnsupportedQueryError, match="digits after the point"):
        ceql.sql(
            "SELECT * FROM t MATCH_RECOGNIZE (ORDER BY id MEASURES A.price * A.price * A.price * A.price * A.price * "
            "A.price * A.price * A.price * A.price * A.price AS x PATTERN (A))",
            t=PRICES,
        )
    with pytest.raises(UnsupportedQueryError, match="CAST of double to DECIMAL"):
        ceql.sql("SELECT * FROM t MATCH_RECOGNIZE (ORDER BY id MEASURES CAST(A.q * 0.5 AS DECIMAL(5, 2)) AS x PATTERN (A))", t=PRICES)


def test_partition_and_order_by_a_decimal_and_the_outer_where() -> None:
    table = pa.table(
        {
            "k": pa.array([D("1.0"), D("2.0"), D("1.0"), None], pa.decimal128(4, 1)),
            "x": pa.array([D("0.3"), D("0.1"), D("0.2"), D("0.5")], pa.decimal128(4, 1)),
        }
    )
    rows = run_both(
        "SELECT * FROM t MATCH_RECOGNIZE (PARTITION BY k ORDER BY x MEASURES FIRST(A.x) AS lo, COUNT(*) AS n "
        "PATTERN (A+)) AS r WHERE r.lo < 0.25",
        table,
    ).to_pylist()
    assert rows == [{"k": D("1.0"), "lo": D("0.2"), "n": 2}, {"k": D("2.0"), "lo": D("0.1"), "n": 1}]


def test_a_decimal_column_beyond_64_bits_is_an_error() -> None:
    table = pa.table({"id": [1], "x": pa.array([D("1" + "0" * 30)], pa.decimal128(38, 0))})
    with pytest.raises(EventError, match="integer overflow in column x"):
        ceql.sql("SELECT * FROM t MATCH_RECOGNIZE (ORDER BY id MEASURES A.x + 1 AS y PATTERN (A))", t=table)
    # passed through untouched, it is not read
    assert ceql.sql("SELECT * FROM t MATCH_RECOGNIZE (ORDER BY id ALL ROWS PER MATCH PATTERN (A))", t=table)[
        "x"
    ].to_pylist() == [D("1" + "0" * 30)]


# ---------------------------------------------------------------------------- generated


@st.composite
def decimal_tables(draw, max_rows: int = 10) -> pa.Table:
    """``d`` DECIMAL(9, 2) and ``e`` DECIMAL(12, 4) (small values, and now and then one near
    the 64-bit limit of the unscaled value, for the overflow errors), ``v`` integers, ``w``
    doubles, ``p`` a partition and ``t`` an order key with ties."""
    n = draw(st.integers(1, max_rows))

    def column(scale: int, large: int):
        unit = D(1).scaleb(-scale)
        small = st.integers(-600, 600).map(lambda x: D(x) * unit)
        huge = st.sampled_from([D(large), D(-large)])
        return st.lists(st.one_of(st.none(), small, small, small, huge), min_size=n, max_size=n)

    return pa.table(
        {
            "p": pa.array(draw(st.lists(st.one_of(st.none(), st.integers(0, 1)), min_size=n, max_size=n)), pa.int64()),
            "t": pa.array(draw(st.lists(st.integers(0, 5), min_size=n, max_size=n)), pa.int64()),
            "d": pa.array(draw(column(2, 9_999_999)), pa.decimal128(9, 2)),
            "e": pa.array(draw(column(4, 99_999_999)), pa.decimal128(12, 4)),
            "v": pa.array(draw(st.lists(st.one_of(st.none(), st.integers(-3, 5)), min_size=n, max_size=n)), pa.int64()),
            "w": pa.array(draw(st.lists(st.sampled_from([0.5, -1.25, 2.0]), min_size=n, max_size=n)), pa.float64()),
        }
    )


@st.composite
def decimal_expressions(draw, names: tuple[str, ...], depth: int = 2) -> str:
    x = draw(st.sampled_from([f"{n}." for n in names] + [""]))
    leaves = [
        f"{x}d",
        f"{x}e",
        "d",
        f"PREV({x}d)",
        f"NEXT({x}e)",
        f"FIRST({x}d)",
        f"LAST({x}e, 1)",
        f"SUM({x}d)",
        f"AVG({x}e)",
        f"MIN({x}d)",
        f"MAX({x}e)",
        "0.5",
        "DECIMAL '-1.125'",
        "2",
        f"{x}v",
        f"CAST({x}v AS DECIMAL(3, 1))",
    ]
    if depth <= 0:
        return draw(st.sampled_from(leaves))

    def sub() -> str:
        return draw(decimal_expressions(names, depth - 1))

    forms = {
        "leaf": lambda: draw(st.sampled_from(leaves)),
        "arith": lambda: f"({sub()} {draw(st.sampled_from(['+', '-', '*', '/', '%']))} {sub()})",
        "neg": lambda: f"-({sub()})",
        "abs": lambda: f"ABS({sub()})",
        "coalesce": lambda: f"COALESCE({sub()}, {sub()})",
        "cast": lambda: f"CAST({sub()} AS DECIMAL({draw(st.sampled_from(['6, 1', '18, 3', '4, 0']))}))",
        "case": lambda: f"CASE WHEN {draw(decimal_conditions(names, depth - 1))} THEN {sub()} ELSE {sub()} END",
    }
    return forms[draw(st.sampled_from(["leaf", "leaf", "arith", "arith", "neg", "abs", "case", "coalesce", "cast"]))]()


@st.composite
def decimal_conditions(draw, names: tuple[str, ...], depth: int = 1) -> str:
    op = draw(st.sampled_from(["<", "<=", ">", ">=", "=", "<>"]))
    kind = draw(st.sampled_from(["cmp", "cmp", "cmp", "double", "between", "in", "null"]))
    left = draw(decimal_expressions(names, depth))
    right = {
        "double": f"{op} w",  # a decimal meeting a double column: a double comparison
        "between": "BETWEEN -1 AND 2.5",
        "in": "IN (0, 1.25, DECIMAL '-0.5')",
        "null": "IS NULL",
    }
    return f"{left} {right[kind] if kind in right else op + ' ' + draw(decimal_expressions(names, depth))}"


@st.composite
def decimal_queries(draw) -> str:
    pattern = draw(patterns(depth=2))
    used = [v for v in ("A", "B", "C") if v in pattern.replace("PERMUTE", "")]
    names = tuple(used)
    defines = [f"{v} AS {draw(decimal_conditions(names))}" for v in used if draw(st.booleans())]
    measures = [f"{draw(decimal_expressions(names))} AS m{i}" for i in range(draw(st.integers(1, 3)))]
    if draw(st.integers(0, 3)) == 0:
        measures.append(f"{draw(st.sampled_from(['ARRAY_AGG(d)', 'MAX_BY(e, d)', 'MIN_BY(v, e)']))} AS r")
    parts = [draw(st.sampled_from(["", "PARTITION BY p"])), draw(st.sampled_from(["ORDER BY t", "ORDER BY d, t", "ORDER BY e DESC"]))]
    parts.append("MEASURES " + ", ".join(measures))
    parts.append(draw(st.sampled_from(["ONE ROW PER MATCH", "ALL ROWS PER MATCH", "ALL ROWS PER MATCH WITH UNMATCHED ROWS"])))
    parts.append(draw(st.sampled_from(["AFTER MATCH SKIP PAST LAST ROW", "AFTER MATCH SKIP TO NEXT ROW"])))
    parts.append(f"PATTERN ({pattern})")
    if defines:
        parts.append("DEFINE " + ", ".join(defines))
    where = draw(st.sampled_from(["", "", " WHERE T.m0 IS NULL OR T.m0 > 0.5"]))
    return f"SELECT * FROM data MATCH_RECOGNIZE ({' '.join(p for p in parts if p)}) AS T{where}"


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(decimal_queries(), decimal_tables())
def test_decimals_agree_with_reference(text: str, table: pa.Table) -> None:
    check_agrees(text, table)
