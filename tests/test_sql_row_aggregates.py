"""ARRAY_AGG, MAX_BY, MIN_BY and CONCAT_WS(separator, ARRAY_AGG(...)) in MEASURES: computed
from the rows of each match once it is found (engine.MatchRows), by the engine and, separately,
by the reference; each case asserts both and the rows Trino's semantics give. MAX_BY and MIN_BY
in DEFINE: the matcher's accumulators (the key's, then the value's), against the reference on
generated queries."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ceql
from ceql.errors import UnsupportedQueryError
from ceql.reference import match_recognize as reference
from tests.support.sql_strategies import conditions, patterns, tables
from tests.test_sql_differential import check_agrees

TABLE = pa.table(
    {
        "t": [1, 2, 3, 4, 5, 6],
        "v": [5, None, 7, 7, 1, 9],
        "s": ["a", "b", None, "d", "e", "f"],
    }
)


def both(text: str, table: pa.Table = TABLE) -> pa.Table:
    """The engine's result, asserted equal (rows and schema) to the reference's."""
    got = ceql.sql(text, t=table)
    expected = reference.run(ceql.sql.check(text, table), table)
    assert got.schema == expected.schema
    assert got.to_pylist() == expected.to_pylist()
    return got


def test_array_agg_running_and_final_keeps_nulls_in_match_order() -> None:
    out = both(
        """SELECT * FROM t MATCH_RECOGNIZE (ORDER BY t MEASURES ARRAY_AGG(v) AS r, FINAL ARRAY_AGG(B.s) AS f,
        ARRAY_AGG(CLASSIFIER()) AS c ALL ROWS PER MATCH PATTERN (A B{2}) DEFINE A AS v > 4)"""
    )
    assert out.schema.field("r").type == pa.list_(pa.int64())
    assert out.select(["t", "r", "f", "c"]).to_pylist() == [
        {"t": 1, "r": [5], "f": ["b", None], "c": ["A"]},
        {"t": 2, "r": [5, None], "f": ["b", None], "c": ["A", "B"]},
        {"t": 3, "r": [5, None, 7], "f": ["b", None], "c": ["A", "B", "B"]},
        {"t": 4, "r": [7], "f": ["e", "f"], "c": ["A"]},
        {"t": 5, "r": [7, 1], "f": ["e", "f"], "c": ["A", "B"]},
        {"t": 6, "r": [7, 1, 9], "f": ["e", "f"], "c": ["A", "B", "B"]},
    ]


def test_an_aggregate_of_no_rows_is_null() -> None:
    # RUNNING over B before any B row, and the unmatched rows of WITH UNMATCHED ROWS
    out = both(
        """SELECT * FROM t MATCH_RECOGNIZE (ORDER BY t MEASURES ARRAY_AGG(B.v) AS b, MAX_BY(B.s, B.v) AS m
        ALL ROWS PER MATCH WITH UNMATCHED ROWS PATTERN (A B) DEFINE A AS v = 7, B AS v < 7)"""
    )
    assert [(r["t"], r["b"], r["m"]) for r in out.to_pylist()] == [
        (1, None, None), (2, None, None), (3, None, None), (4, None, None), (5, [1], "e"), (6, None, None),
    ]


def test_max_by_and_min_by_pick_the_first_row_of_the_extreme_key_and_skip_null_keys() -> None:
    table = pa.table({"t": [1, 2, 3, 4], "k": [2, 5, None, 5], "s": ["w", "x", "y", "z"]})
    out = both(
        """SELECT * FROM t MATCH_RECOGNIZE (ORDER BY t MEASURES MAX_BY(s, k) AS hi, FINAL MIN_BY(s, k) AS lo,
        MIN_BY(s, CLASSIFIER()) AS first_label ONE ROW PER MATCH PATTERN (A+))""",
        table,
    )
    assert out.to_pylist() == [{"hi": "x", "lo": "w", "first_label": "w"}]


def test_overlapping_matches_and_exclusions() -> None:
    # SKIP TO NEXT ROW: a row is in several matches, each with its own labels; excluded rows
    # are not output but are aggregated
    out = both(
        """SELECT * FROM t MATCH_RECOGNIZE (ORDER BY t MEASURES MATCH_NUMBER() AS n,
        CONCAT_WS('-', ARRAY_AGG(LOWER(CLASSIFIER()) || COALESCE(s, '?'))) AS path
        ALL ROWS PER MATCH AFTER MATCH SKIP TO NEXT ROW PATTERN (A {- B -} C) DEFINE A AS t <= 2)"""
    )
    assert [(r["t"], r["n"], r["path"]) for r in out.to_pylist()] == [
        (1, 1, "aa"), (3, 1, "aa-bb-c?"), (2, 2, "ab"), (4, 2, "ab-b?-cd"),
    ]


def test_partitions_and_one_row_per_match() -> None:
    table = pa.table({"p": ["x", "y", "x", "y", "x"], "t": [1, 1, 2, 2, 3], "v": [1, 2, 3, 4, 5]})
    out = both(
        """SELECT * FROM t MATCH_RECOGNIZE (PARTITION BY p ORDER BY t MEASURES ARRAY_AGG(v * 10) AS a
        PATTERN (A+))""",
        table,
    )
    assert out.to_pylist() == [{"p": "x", "a": [10, 30, 50]}, {"p": "y", "a": [20, 40]}]


@pytest.mark.parametrize(
    ("measures", "define", "message"),
    [
        ("ARRAY_AGG(v) AS a", "A AS CARDINALITY(ARRAY_AGG(v)) > 0", "function CARDINALITY"),
        ("v AS a", "A AS ARRAY_AGG(v) IS NULL", "ARRAY_AGG in DEFINE"),
        ("COALESCE(MAX_BY(v, t), 0) AS a", "A AS TRUE", "inside an expression"),
        ("CONCAT_WS(s, ARRAY_AGG(s)) AS a", "A AS TRUE", "separator that is not a constant"),
        ("CONCAT_WS('-', s) AS a", "A AS TRUE", "CONCAT_WS other than"),
    ],
)
def test_what_is_refused(measures: str, define: str, message: str) -> None:
    with pytest.raises(UnsupportedQueryError, match=message):
        ceql.sql(f"SELECT * FROM t MATCH_RECOGNIZE (ORDER BY t MEASURES {measures} PATTERN (A) DEFINE {define})", t=TABLE)


def test_many_matches_grow_the_matchers_buffers() -> None:
    # more output rows and matched rows than the first buffers hold (1024 rows, 4096 cells),
    # with unmatched rows between the matches
    n = 3000
    table = pa.table({"t": list(range(n)), "v": [(i * 7) % 11 for i in range(n)], "s": [str(i % 5) for i in range(n)]})
    out = both(
        """SELECT * FROM t MATCH_RECOGNIZE (ORDER BY t MEASURES ARRAY_AGG(s) AS a, MIN_BY(t, v) AS m
        ALL ROWS PER MATCH WITH UNMATCHED ROWS PATTERN (A B+) DEFINE A AS v > 8, B AS v < PREV(v))""",
        table,
    )
    assert out.num_rows == n
    assert sum(1 for a in out.column("a").to_pylist() if a is None) > 100  # the unmatched rows


def test_long_matches_grow_the_match_list_alone() -> None:
    # one row per match, each of 600 rows: the match list (4096 cells) fills with the output
    # rows (1024) nearly empty, and grows alone
    n = 6000
    table = pa.table({"t": list(range(n)), "v": [i % 600 for i in range(n)], "s": [str(i % 5) for i in range(n)]})
    out = both(
        """SELECT * FROM t MATCH_RECOGNIZE (ORDER BY t MEASURES ARRAY_AGG(s) AS a, MIN_BY(t, v) AS m, COUNT(*) AS c
        ONE ROW PER MATCH PATTERN (A B+) DEFINE A AS v = 0, B AS v > PREV(v))""",
        table,
    )
    assert out.column("c").to_pylist() == [600] * 10


def test_concat_ws_skips_null_elements_and_is_null_without_rows() -> None:
    # row 3's s is null: B's array is [null] there, joined ''; before any B row, NULL
    out = both(
        """SELECT * FROM t MATCH_RECOGNIZE (ORDER BY t MEASURES CONCAT_WS('+', ARRAY_AGG(B.s)) AS b,
        CONCAT_WS('+', ARRAY_AGG(s)) AS a ALL ROWS PER MATCH PATTERN (A B) DEFINE A AS t = 2)"""
    )
    assert [(r["t"], r["a"], r["b"]) for r in out.to_pylist()] == [(2, "b", None), (3, "b", "")]


def test_max_by_in_define_is_trinos() -> None:
    # Trino's testMultipleAggregationArguments: max_by in a condition, the largest CLASSIFIER() so far
    out = both(
        """SELECT * FROM t MATCH_RECOGNIZE (ORDER BY t MEASURES CLASSIFIER() AS c ALL ROWS PER MATCH
        PATTERN (A B+) DEFINE B AS MAX_BY(v, CLASSIFIER()) >= 7 AND MIN_BY(s, v) = 'e')"""
    )
    # MAX_BY(v, CLASSIFIER()) is v on the first B row, MIN_BY(s, v) s on the first row of the
    # smallest v so far: from t 1, B's first row has a null v; from t 3 and t 4 the smallest v's
    # s is null or 'd'; from t 5, B's v is 9 and the smallest v (1) is t 5's, with s 'e'
    assert out.select(["t", "c"]).to_pylist() == [{"t": 5, "c": "A"}, {"t": 6, "c": "B"}]


@st.composite
def by_conditions(draw, names: tuple[str, ...]) -> str:
    """A condition with MAX_BY or MIN_BY of a variable's rows (or every row) and another condition."""
    x = draw(st.sampled_from([f"{n}." for n in names] + [""]))
    label = f"CLASSIFIER({x[:-1]})"
    value = draw(st.sampled_from([f"{x}v", f"{x}w", f"{x}s", label, f"{x}v * 2 + MATCH_NUMBER()", f"{x}ts", f"{x}v > 2"]))
    key = draw(st.sampled_from([f"{x}v", f"{x}w", f"{x}s", label, f"{x}ts", f"{x}t"]))
    by = f"{draw(st.sampled_from(['MAX_BY', 'MIN_BY']))}({value}, {key})"
    test = draw(st.sampled_from([f"{by} IS NULL", f"{by} IS NOT NULL", f"{by} = {by}"]))
    if value.endswith(("v", "()")) and draw(st.booleans()):
        test = f"{by} {draw(st.sampled_from(['>', '<=', '=']))} {draw(st.integers(-1, 5))}"
    combine = draw(st.sampled_from(["", " AND ", " OR "]))
    return test + (f"{combine}{draw(conditions(names, 1))}" if combine else "")


@st.composite
def by_queries(draw) -> str:
    pattern = draw(patterns(depth=2))
    used = [v for v in ("A", "B", "C") if v in pattern.replace("PERMUTE", "")]
    defines = [f"{v} AS {draw(by_conditions(tuple(used)))}" for v in used if draw(st.integers(0, 3)) > 0]
    rows = draw(st.sampled_from(["ONE ROW PER MATCH", "ALL ROWS PER MATCH", "ALL ROWS PER MATCH WITH UNMATCHED ROWS"]))
    parts = [draw(st.sampled_from(["", "PARTITION BY p"])), draw(st.sampled_from(["ORDER BY t", "ORDER BY ts DESC"]))]
    parts += ["MEASURES CLASSIFIER() AS c, MATCH_NUMBER() AS n", rows, f"PATTERN ({pattern})"]
    if defines:
        parts.append("DEFINE " + ", ".join(defines))
    return f"SELECT * FROM data MATCH_RECOGNIZE ({' '.join(p for p in parts if p)})"


@settings(
    max_examples=int(os.environ.get("CEQL_SQL_EXAMPLES", "300")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(by_queries(), tables())
def test_max_by_and_min_by_in_define_agree_with_reference(text: str, table: pa.Table) -> None:
    check_agrees(text, table)
