"""ARRAY_AGG, MAX_BY, MIN_BY and CONCAT_WS(separator, ARRAY_AGG(...)) in MEASURES: computed
from the rows of each match once it is found (engine.MatchRows), by the engine and, separately,
by the reference; each case asserts both and the rows Trino's semantics give."""

from __future__ import annotations

import pyarrow as pa
import pytest

import ceql
from ceql.errors import UnsupportedQueryError
from ceql.reference import match_recognize as reference

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
        ("ARRAY_AGG(v) AS a", "A AS MAX_BY(v, t) > 0", "MAX_BY in DEFINE"),
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


def test_concat_ws_skips_null_elements_and_is_null_without_rows() -> None:
    # row 3's s is null: B's array is [null] there, joined ''; before any B row, NULL
    out = both(
        """SELECT * FROM t MATCH_RECOGNIZE (ORDER BY t MEASURES CONCAT_WS('+', ARRAY_AGG(B.s)) AS b,
        CONCAT_WS('+', ARRAY_AGG(s)) AS a ALL ROWS PER MATCH PATTERN (A B) DEFINE A AS t = 2)"""
    )
    assert [(r["t"], r["a"], r["b"]) for r in out.to_pylist()] == [(2, "b", None), (3, "b", "")]
