"""Answers that were wrong (issue #35): each query gives the reference's answer, or its error.

- integer overflow in DEFINE and MEASURES is an error on every path (row masks, the VM), never a
  wrap: the compiled VM checked ``(a * b) // b == a``, which LLVM folds to true;
- a comparison of two string constants holds on every row (it compared Arrow scalars as numpy
  arrays: some rows, or "operands could not be broadcast");
- ``NEXT(CLASSIFIER())`` in MEASURES with ALL ROWS PER MATCH is the next row's variable within
  the match, as in Trino (semantics.md 12).
"""

from __future__ import annotations

import pyarrow as pa
import pytest

import ceql
from ceql.errors import EventError
from ceql.reference import match_recognize as reference

BIG = 2**62


def both(text: str, table: pa.Table) -> tuple[object, object]:
    """(engine, reference) outcomes: rows, or the error's type and message."""

    def outcome(run):
        try:
            return run().to_pylist()
        except EventError as error:
            return ("EventError", getattr(error, "reason", str(error)))

    checked = ceql.sql.check(text, table)
    return outcome(lambda: ceql.sql(text, t=table)), outcome(lambda: reference.run(checked, table))


@pytest.mark.parametrize(
    "define",
    [
        "A AS price * 3 < 0",  # a row mask
        "A AS price * 3 < 0 AND price > 0",
        "A AS price + price < 0",
        "A AS price - (0 - price) - price < 0",
    ],
)
def test_overflow_in_a_row_mask_is_an_error(define: str) -> None:
    table = pa.table({"t": [1, 2, 3], "price": [BIG, 1, 2]})
    text = f"SELECT * FROM t MATCH_RECOGNIZE (ORDER BY t MEASURES A.price AS p PATTERN (A) DEFINE {define})"
    engine, oracle = both(text, table)
    assert engine == oracle
    assert engine == ("EventError", "integer overflow in " + ("multiplication" if "*" in define else
                                                                      "addition" if "+" in define else "subtraction"))


@pytest.mark.parametrize(
    "text",
    [
        "SELECT * FROM t MATCH_RECOGNIZE (ORDER BY t MEASURES A.price * 3 AS p PATTERN (A))",
        "SELECT * FROM t MATCH_RECOGNIZE (ORDER BY t MEASURES A.price AS p PATTERN (A B) DEFINE B AS A.price * 3 < 0)",
        "SELECT * FROM t MATCH_RECOGNIZE (ORDER BY t MEASURES A.price * -3 AS p PATTERN (A))",
        "SELECT * FROM t MATCH_RECOGNIZE (ORDER BY t MEASURES (0 - A.price) * 3 AS p PATTERN (A))",
    ],
)
def test_overflow_in_the_vm_is_an_error(text: str) -> None:
    table = pa.table({"t": [1, 2, 3], "price": [BIG, 1, 2]})
    engine, oracle = both(text, table)
    assert engine == oracle
    assert engine[0] == "EventError" and "integer overflow in multiplication" in engine[1]


def test_products_that_fit_are_exact() -> None:
    table = pa.table({"t": [1, 2, 3, 4], "price": [BIG - 1, -BIG + 1, 3, -(2**31)]})
    text = "SELECT * FROM t MATCH_RECOGNIZE (ORDER BY t MEASURES A.price * 2 AS p, A.price * -2 AS q ALL ROWS PER MATCH PATTERN (A))"
    engine, oracle = both(text, table)
    assert engine == oracle
    assert [r["p"] for r in engine] == [2 * (BIG - 1), -(2**63) + 2, 6, -(2**32)]
    lowest = pa.table({"t": [1], "price": [-BIG]})
    text = "SELECT * FROM t MATCH_RECOGNIZE (ORDER BY t MEASURES A.price * 2 AS p PATTERN (A))"
    assert both(text, lowest) == ([{"p": -(2**63)}], [{"p": -(2**63)}])


def test_an_error_in_a_row_mask_is_raised_only_where_the_row_is_tried() -> None:
    # the row with the overflow is never tried for B (no A before it), nor for A (FALSE first)
    table = pa.table({"t": [1, 2, 3], "price": [BIG, 1, 2]})
    text = """SELECT * FROM t MATCH_RECOGNIZE (ORDER BY t MEASURES B.price AS p PATTERN (A B)
        DEFINE A AS price < 10, B AS price * 3 > 0)"""
    engine, oracle = both(text, table)
    assert engine == oracle == [{"p": 2}]


@pytest.mark.parametrize("rows", [1, 2, 3, 5])
@pytest.mark.parametrize(("condition", "matches"), [("'ab' < 'ac'", True), ("'ab' > 'ac'", False), ("'b' = 'b'", True)])
def test_comparison_of_string_constants(rows: int, condition: str, matches: bool) -> None:
    table = pa.table({"t": list(range(rows)), "price": list(range(rows))})
    text = f"SELECT * FROM t MATCH_RECOGNIZE (ORDER BY t MEASURES A.t AS a PATTERN (A) DEFINE A AS {condition})"
    engine, oracle = both(text, table)
    assert engine == oracle
    assert len(engine) == (rows if matches else 0)


def test_next_classifier_is_the_next_rows_variable_within_the_match() -> None:
    table = pa.table({"t": [1, 2, 3, 4, 5], "price": [9, 1, 2, 9, 1]})
    text = """SELECT * FROM t MATCH_RECOGNIZE (ORDER BY t
        MEASURES CLASSIFIER() AS c, NEXT(CLASSIFIER()) AS n, NEXT(CLASSIFIER(), 2) AS n2, PREV(CLASSIFIER()) AS p
        ALL ROWS PER MATCH PATTERN (A B+) DEFINE B AS price < 5)"""
    engine, oracle = both(text, table)
    assert engine == oracle
    assert [(r["c"], r["n"], r["n2"], r["p"]) for r in engine] == [
        ("A", "B", "B", None),
        ("B", "B", None, "A"),
        ("B", None, None, "B"),  # the next row is outside the match
        ("A", "B", None, None),  # the previous row is outside this match
        ("B", None, None, "A"),
    ]


def test_next_classifier_in_define_sees_only_the_match_so_far() -> None:
    table = pa.table({"t": [1, 2, 3], "price": [9, 1, 2]})
    text = """SELECT * FROM t MATCH_RECOGNIZE (ORDER BY t MEASURES COUNT(*) AS n
        PATTERN (A B+) DEFINE B AS NEXT(CLASSIFIER()) IS NULL)"""
    engine, oracle = both(text, table)
    assert engine == oracle == [{"n": 3}]


def test_an_order_by_column_written_twice_is_shown_twice() -> None:
    # Trino's testOutputLayout: ORDER BY id ASC, id DESC with ALL ROWS PER MATCH gives PARTITION BY,
    # both ORDER BY columns, the measures, the rest (ceql refused two result columns named id)
    table = pa.table({"id": [3, 1, 2], "part": ["p", "p", "q"], "value": [90, 80, 70]})
    text = (
        "SELECT * FROM t MATCH_RECOGNIZE (PARTITION BY part ORDER BY id ASC, id DESC MEASURES CLASSIFIER() AS c "
        "ALL ROWS PER MATCH PATTERN (A) DEFINE A AS true) AS m"
    )
    got = ceql.sql(text, t=table)
    expected = reference.run(ceql.sql.check(text, table), table)
    assert got.column_names == ["part", "id", "id", "c", "value"] and got.schema == expected.schema
    assert list(zip(*(c.to_pylist() for c in got.columns))) == [("p", 1, 1, "A", 80), ("p", 3, 3, "A", 90), ("q", 2, 2, "A", 70)]
    assert got.columns == expected.columns
    # the outer query reads it by name (both are the same column); a measure of an input column's name stays an error
    assert ceql.sql(text.replace("SELECT *", "SELECT m.id, c") + " WHERE m.id > 1", t=table).to_pylist() == [
        {"id": 3, "c": "A"},
        {"id": 2, "c": "A"},
    ]
    with pytest.raises(ceql.QueryError, match="two columns named 'value'"):
        ceql.sql(text.replace("CLASSIFIER() AS c", "CLASSIFIER() AS value"), t=table)
