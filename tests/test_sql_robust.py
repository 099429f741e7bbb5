"""Hostile or large SQL input fails with a clear error, or runs, in bounded time (issue #35):
no RecursionError on long expressions or IN lists, no UnicodeEncodeError on lone surrogates,
no exponential search for nested quantifiers whose conditions read only the row."""

from __future__ import annotations

import time

import pyarrow as pa
import pytest

import ceql
from ceql.errors import LimitError, QuerySyntaxError
from ceql.reference import match_recognize as reference
from ceql.sql.parser import MAX_EXPR_DEPTH

TABLE = pa.table({"t": list(range(20)), "price": list(range(20)), "s": ["a"] * 20})


def query(define: str, pattern: str = "A") -> str:
    return f"SELECT * FROM t MATCH_RECOGNIZE (ORDER BY t MEASURES COUNT(*) AS n PATTERN ({pattern}) DEFINE {define})"


def test_a_500_term_sum_of_prevs_runs() -> None:
    terms = " + ".join(f"PREV(price, {i % 5 + 1})" for i in range(500))
    result = ceql.sql(query(f"A AS {terms} > 0"), t=TABLE)
    assert result.num_rows == 15  # rows with 5 rows before them (the others read a null)
    # the same through the VM (the condition reads the match) and the reference
    text = query(f"B AS {terms.replace('PREV(price', 'PREV(A.price')} > 0", "A B")
    assert ceql.sql(text, t=TABLE).to_pylist() == reference.run(ceql.sql.check(text, TABLE), TABLE).to_pylist()
    assert "PREV" in ceql.sql.explain(text, TABLE)


def test_an_in_list_of_10000_values_runs() -> None:
    values = ", ".join(str(i) for i in range(0, 20_000, 2))
    assert ceql.sql(query(f"A AS price IN ({values})"), t=TABLE).num_rows == 10
    assert ceql.sql(query(f"A AS price NOT IN ({values})"), t=TABLE).num_rows == 10
    text = query(f"B AS A.price IN ({values})", "A B")
    assert ceql.sql(text, t=TABLE).to_pylist() == reference.run(ceql.sql.check(text, TABLE), TABLE).to_pylist()


def test_long_and_chains_run() -> None:
    chain = " AND ".join(f"price <> {i + 100}" for i in range(5_000))
    assert ceql.sql(query(f"A AS {chain}"), t=TABLE).num_rows == 20


def test_an_expression_too_deep_is_a_clear_error() -> None:
    terms = " + ".join(["price"] * (MAX_EXPR_DEPTH + 5))
    with pytest.raises(QuerySyntaxError, match="expression too deep"):
        ceql.sql(query(f"A AS {terms} > 0"), t=TABLE)
    with pytest.raises(QuerySyntaxError, match="nests too deeply"):
        ceql.sql(query("A AS " + "(" * 500 + "price" + ")" * 500 + " > 0"), t=TABLE)


@pytest.mark.parametrize(
    "text",
    [
        query("A AS s = 'a\ud800'"),
        "SELECT * FROM t MATCH_RECOGNIZE (ORDER BY t MEASURES COUNT(*) AS n\udc80 PATTERN (A))",
        'SELECT * FROM t MATCH_RECOGNIZE (ORDER BY t MEASURES COUNT(*) AS "n\ud800" PATTERN (A))',
        "SELECT * FROM t MATCH_RECOGNIZE (ORDER BY t PATTERN (A)) -- \ud800",
    ],
)
def test_a_lone_surrogate_is_a_syntax_error_at_its_place(text: str) -> None:
    with pytest.raises(QuerySyntaxError) as caught:
        ceql.sql(text, t=TABLE)
    column = next(i for i, ch in enumerate(text) if "\ud800" <= ch <= "\udfff") + 1
    assert caught.value.line == 1 and caught.value.column == column
    assert "lone surrogate" in str(caught.value)
    str(caught.value).encode("utf-8")  # the message itself can be printed


@pytest.mark.parametrize("pattern", ["(A*)* B", "(A+)* B", "(A*)+ B", "((A*)*)* B", "(A*?)*? B", "(A?)* B"])
def test_nested_quantifiers_with_row_conditions_take_linear_time(pattern: str) -> None:
    table = pa.table({"t": list(range(400)), "price": [1] * 400})
    text = query("A AS price = 1, B AS price = 2", pattern)
    started = time.perf_counter()
    assert ceql.sql.run(text, {"t": table}, max_steps=2_000_000).num_rows == 0
    assert time.perf_counter() - started < 10


@pytest.mark.parametrize("pattern", ["(A*)* B", "(A+)? B", "(A?)* B*", "(A*?)*? B", "(A*)*? B", "(A+)+ B", "(A*)? B"])
def test_collapsed_quantifiers_agree_with_the_reference(pattern: str) -> None:
    table = pa.table({"t": list(range(7)), "price": [1, 1, 2, 1, 2, 2, 1]})
    text = f"""SELECT * FROM t MATCH_RECOGNIZE (ORDER BY t MEASURES CLASSIFIER() AS c, MATCH_NUMBER() AS m
        ALL ROWS PER MATCH AFTER MATCH SKIP TO NEXT ROW PATTERN ({pattern}) DEFINE A AS price = 1, B AS price = 2)"""
    assert ceql.sql(text, t=table).to_pylist() == reference.run(ceql.sql.check(text, table), table).to_pylist()


def test_groups_that_can_map_no_row_remember_failed_states() -> None:
    # (A* C*)* B: an iteration of the group may map no row; its states are remembered once it
    # has mapped one, so the search is polynomial, not exponential
    table = pa.table({"t": list(range(60)), "price": [1] * 60})
    text = query("A AS price = 1, B AS price = 2, C AS price = 1", "(A* C*)* B")
    assert ceql.sql.run(text, {"t": table}, max_steps=2_000_000).num_rows == 0
    assert "failed states remembered: yes" in ceql.sql.explain(text, table)


@pytest.mark.parametrize("pattern", ["(A* C*)* B", "(A? C?)+ B?", "(A* | C)* B", "((A C?)*)* B*", "(A* C*)*? B", "(A{0,2} C?)* B"])
def test_remembered_iterations_agree_with_the_reference(pattern: str) -> None:
    table = pa.table({"t": list(range(8)), "price": [1, 2, 1, 1, 3, 2, 1, 2]})
    text = f"""SELECT * FROM t MATCH_RECOGNIZE (ORDER BY t MEASURES CLASSIFIER() AS c, MATCH_NUMBER() AS m
        ALL ROWS PER MATCH AFTER MATCH SKIP TO NEXT ROW PATTERN ({pattern})
        DEFINE A AS price = 1, B AS price = 2, C AS price <= 2)"""
    assert ceql.sql(text, t=table).to_pylist() == reference.run(ceql.sql.check(text, table), table).to_pylist()


def test_the_step_limit_names_the_real_reason() -> None:
    table = pa.table({"t": list(range(60)), "price": [1] * 60})
    dynamic = query("A AS price = 1, B AS price = 2, C AS price >= A.price", "(A | C)* B")
    with pytest.raises(LimitError, match="the conditions of C read the match so far") as caught:
        ceql.sql.run(dynamic, {"t": table}, max_steps=100_000)
    assert "cannot be remembered" in str(caught.value)
