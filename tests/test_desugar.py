"""The quantifier rewrite, rule by rule (docs/semantics.md, "Quantifiers")."""

from __future__ import annotations

import pytest

import ceql
from ceql.lang import parse_query, print_formula
from ceql.lang.desugar import desugar, has_quantifiers

SCHEMA = ceql.declare("CREATE STREAM S { EVENT A { v:int }, EVENT B { v:int }, EVENT C { v:int } }")


def core(text: str) -> str:
    return print_formula(desugar(parse_query("SELECT * WHERE " + text).formula))


@pytest.mark.parametrize(
    "written, rewritten",
    [
        ("A{3}", "A; A; A"),
        ("A{1}", "A"),
        ("A{2,3} ; B", "(A; A OR A; A; A); B"),
        ("A{1,}", "A+"),
        ("A{3,}", "A; A; A+"),
        ("A*", "A+"),
        ("A?", "A"),
        ("C ; A? ; B", "C; A; B OR C; B"),
        ("C ; A* ; B", "C; A+; B OR C; B"),
        ("C ; A{0,2} ; B", "C; (A OR A; A); B OR C; B"),
        ("C ; A? ; B?", "C; A; B OR C; A OR C; B OR C"),
        ("C : A* : B", "C : A:+ : B OR C : B"),
        ("C : A{2,} : B", "C : A : A:+ : B"),
        ("C : A{2} : B", "C : A : A : B"),
        ("C : (A{2}) : B", "C : A; A : B"),  # `;` binds tighter than `:`
        ("C ; (A? AS x FILTER x[v > 0]) ; B", "C; (A AS x FILTER x[v > 0]); B OR C; B"),
        ("C ; (A? OR B) ; C", "C; (A OR B); C OR C; C"),
        ("(A AS x){2} AS y", "(A AS x; A AS x) AS y"),
        ("(C ; A?)+", "(C; A OR C)+"),
        ("A ; B", "A; B"),
    ],
)
def test_rewrite(written, rewritten) -> None:
    assert core(written) == rewritten


def test_checked_query_keeps_the_written_formula() -> None:
    checked = ceql.check("SELECT * WHERE C ; A? ; B", SCHEMA)
    assert has_quantifiers(checked.query.formula)
    assert not has_quantifiers(checked.formula)
    assert print_formula(checked.formula) == "C; A; B OR C; B"
    plain = ceql.check("SELECT * WHERE C ; A ; B", SCHEMA)
    assert plain.formula is plain.query.formula


@pytest.mark.parametrize(
    "text, message, column",
    [
        ("A{2,} AND B?", "an optional formula (?, * or {0,m}) cannot be an operand of AND", 26),
        ("(A ; B){20000}", "quantifiers expand this formula to about 60000 operators (at most 20000)", 17),
        ("A? ; B? ; C? ; A? ; B? ; C? ; A? ; B? ; C? ; A? ; B? ; C?", "quantifiers expand this formula", 16),
        ("A{9223372036854775807}", "quantifiers expand this formula", 16),
    ],
)
def test_rewrite_errors(text, message, column) -> None:
    with pytest.raises(ceql.QueryError) as caught:
        ceql.check("SELECT * WHERE " + text, SCHEMA)
    assert caught.value.message.startswith(message), caught.value.message
    assert caught.value.column == column
