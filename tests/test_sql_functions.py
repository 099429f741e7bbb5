"""Trino's and Flink's common scalar functions in MATCH_RECOGNIZE (issue #35: "common scalar
functions" were refused): SQRT, LN, EXP, POWER, FLOOR, CEIL, ROUND, SIGN, MOD, GREATEST, LEAST,
CONCAT, LENGTH, SUBSTRING. Trino's answers for examples, the engine against the reference on
generated queries (row masks, the VM, hoisted navigation, aggregates), and a clear error for an
unknown function."""

from __future__ import annotations

import math
import os

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ceql
from ceql.errors import QueryError, UnsupportedQueryError
from ceql.reference import match_recognize as reference
from tests.support.sql_strategies import doubles, numbers, patterns, tables
from tests.test_sql_differential import check_agrees

EXAMPLES = int(os.environ.get("CEQL_SQL_EXAMPLES", "300"))

T = pa.table({"id": [1, 2, 3], "v": [9, -7, None], "w": [2.5, -2.5, 0.125], "s": ["hello", "ab", None]})


def measures(expressions: str, table: pa.Table = T) -> list[dict]:
    text = f"SELECT * FROM t MATCH_RECOGNIZE (ORDER BY id MEASURES {expressions} ALL ROWS PER MATCH PATTERN (A*))"
    got = ceql.sql(text, t=table)
    expected = reference.run(ceql.sql.check(text, table), table)
    assert got.schema == expected.schema
    assert str(got.to_pylist()) == str(expected.to_pylist())  # str: NaN equals NaN
    return [{k: v for k, v in row.items() if k not in table.column_names} for row in got.to_pylist()]


def test_numeric_functions_are_trinos() -> None:
    rows = measures(
        "SQRT(v) AS r, ROUND(w) AS rd, ROUND(w, 1) AS rd1, FLOOR(w) AS f, CEIL(w) AS c, SIGN(v) AS sg, MOD(v, 4) AS m, "
        "POWER(w, 2) AS p, LN(EXP(w)) AS le"
    )
    assert [r["r"] for r in rows][0] == 3.0 and math.isnan(rows[1]["r"]) and rows[2]["r"] is None
    assert [r["rd"] for r in rows] == [3.0, -3.0, 0.0]  # half away from zero
    assert [r["rd1"] for r in rows] == [2.5, -2.5, 0.1]
    assert [r["f"] for r in rows] == [2.0, -3.0, 0.0] and [r["c"] for r in rows] == [3.0, -2.0, 1.0]
    assert [r["sg"] for r in rows] == [1, -1, None] and [r["m"] for r in rows] == [1, -3, None]  # % has the dividend's sign
    assert [r["p"] for r in rows] == [6.25, 6.25, 0.015625] and [r["le"] for r in rows] == [2.5, -2.5, 0.125]


def test_greatest_and_least_are_null_if_an_argument_is() -> None:
    rows = measures("GREATEST(v, 0, 3) AS g, LEAST(w, v) AS l, GREATEST(s, 'b') AS gs")
    assert rows == [{"g": 9, "l": 2.5, "gs": "hello"}, {"g": 3, "l": -7.0, "gs": "b"}, {"g": None, "l": None, "gs": None}]


def test_string_functions() -> None:
    rows = measures(
        "LENGTH(s) AS n, CHAR_LENGTH(CLASSIFIER()) AS nc, SUBSTRING(s, 2) AS a, SUBSTR(s, 2, 2) AS b, SUBSTRING(s, -2) AS c, "
        "SUBSTRING(s, 0) AS d, CONCAT(s, '!', s) AS e, SUBSTRING(LOWER(CLASSIFIER()), 1, 1) AS f"
    )
    assert rows[0] == {"n": 5, "nc": 1, "a": "ello", "b": "el", "c": "lo", "d": "", "e": "hello!hello", "f": "a"}
    assert rows[2]["n"] is None and rows[2]["e"] is None


def test_functions_in_conditions_and_of_aggregates() -> None:
    table = pa.table({"id": list(range(6)), "v": [1, 4, 9, 16, 2, 3]})
    text = (
        "SELECT * FROM t MATCH_RECOGNIZE (ORDER BY id MEASURES SQRT(SUM(B.v)) AS root, ROUND(AVG(B.v), 1) AS mean "
        "PATTERN (A B+) DEFINE B AS SQRT(B.v) = FLOOR(SQRT(B.v)) AND GREATEST(B.v, PREV(B.v)) = B.v)"
    )
    got = ceql.sql(text, t=table)
    assert got.to_pylist() == reference.run(ceql.sql.check(text, table), table).to_pylist()
    assert got.to_pylist() == [{"root": math.sqrt(29), "mean": 9.7}]


def test_unknown_functions_and_bad_arguments_say_so() -> None:
    with pytest.raises(UnsupportedQueryError, match="function FOO is not supported"):
        ceql.sql("SELECT * FROM t MATCH_RECOGNIZE (ORDER BY id MEASURES FOO(v) AS x PATTERN (A))", t=T)
    with pytest.raises(QueryError, match="POWER takes 2 arguments"):
        ceql.sql("SELECT * FROM t MATCH_RECOGNIZE (ORDER BY id MEASURES POWER(v) AS x PATTERN (A))", t=T)
    with pytest.raises(QueryError, match="SQRT needs int or double"):
        ceql.sql("SELECT * FROM t MATCH_RECOGNIZE (ORDER BY id MEASURES SQRT(s) AS x PATTERN (A))", t=T)
    with pytest.raises(UnsupportedQueryError, match="not an integer constant"):
        ceql.sql("SELECT * FROM t MATCH_RECOGNIZE (ORDER BY id MEASURES SUBSTRING(s, v) AS x PATTERN (A))", t=T)


@st.composite
def function_expressions(draw, names: tuple[str, ...]) -> str:
    n = draw(numbers(names, 1))
    d = draw(doubles(names))
    x = draw(st.sampled_from([f"{v}." for v in names] + [""]))
    return draw(
        st.sampled_from(
            [
                f"SQRT({n})",
                f"LN({d})",
                f"EXP({n})",
                f"POWER({d}, {draw(st.sampled_from(['2', '0.5', '-1', n]))})",
                f"FLOOR({d})",
                f"CEIL({n})",
                f"ROUND({d})",
                f"ROUND({d}, {draw(st.integers(0, 3))})",
                f"SIGN({d})",
                f"SIGN({n})",
                f"MOD({n}, {draw(st.sampled_from(['2', '-3']))})",
                f"GREATEST({n}, {draw(numbers(names, 0))})",
                f"LEAST({d}, {n}, 1)",
                f"LENGTH({x}s)",
                "LENGTH(CLASSIFIER())",
                f"SUBSTRING({x}s, {draw(st.sampled_from(['1', '2', '-1', '0']))}, {draw(st.sampled_from(['1', '2']))})",
                f"CONCAT({x}s, 'x', UPPER({x}s))",
            ]
        )
    )


@st.composite
def function_queries(draw) -> str:
    pattern = draw(patterns(depth=2))
    used = [v for v in ("A", "B", "C") if v in pattern.replace("PERMUTE", "")]
    names = tuple(used)
    defines = []
    for v in used:
        if draw(st.booleans()):
            f = draw(function_expressions(names))
            condition = f"{f} IS NULL" if draw(st.integers(0, 3)) == 0 else f"{f} {draw(st.sampled_from(['<', '>=', '<>']))} {draw(st.sampled_from(['1', '2.5', 'LENGTH(s)', '0']))}"
            if "SUBSTRING" in f or "CONCAT" in f:
                condition = f"{f} >= 'b'"
            defines.append(f"{v} AS {condition}")
    m = [f"{draw(function_expressions(names))} AS m{i}" for i in range(draw(st.integers(1, 3)))]
    order = draw(st.sampled_from(["ORDER BY t", "ORDER BY t DESC", "ORDER BY ts"]))
    rows = draw(st.sampled_from(["ONE ROW PER MATCH", "ALL ROWS PER MATCH", "ALL ROWS PER MATCH WITH UNMATCHED ROWS"]))
    parts = [draw(st.sampled_from(["", "PARTITION BY p"])), order, "MEASURES " + ", ".join(m), rows, f"PATTERN ({pattern})"]
    if defines:
        parts.append("DEFINE " + ", ".join(defines))
    return f"SELECT * FROM data MATCH_RECOGNIZE ({' '.join(p for p in parts if p)})"


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(function_queries(), tables())
def test_functions_agree_with_reference(text: str, table: pa.Table) -> None:
    check_agrees(text, table)
