"""The quantifier rewrite, rule by rule (docs/semantics.md, "Quantifiers")."""

from __future__ import annotations

import pytest
from hypothesis import given

import ceql
from ceql.lang import parse_query, print_formula
from ceql.lang.desugar import desugar, has_quantifiers
from tests.support.constructs import CONSTRUCT, check, operator_cases
from tests.support.examples import letters, run, supports

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


@pytest.mark.parametrize(
    "formula, stream, expected",
    [
        # n copies: two A's then B.
        ("A{2} ; B", "AABAB", {2: {(0, 1, 2)}, 4: {(0, 1, 4), (0, 3, 4), (1, 3, 4)}}),
        ("A{1,2} ; B", "AAB", {2: {(0, 2), (1, 2), (0, 1, 2)}}),
        # at least two
        ("A{2,} ; B", "AAAB", {3: {(0, 1, 3), (0, 2, 3), (1, 2, 3), (0, 1, 2, 3)}}),
        ("C ; A? ; B", "CAB", {2: {(0, 2), (0, 1, 2)}}),
        ("C ; A* ; B", "CAAB", {3: {(0, 3), (0, 1, 3), (0, 2, 3), (0, 1, 2, 3)}}),
        # in a ':' chain the copies are contiguous, and A* is (C : B) OR (C : A:+ : B)
        ("C : A* : B", "CAAB", {3: {(0, 1, 2, 3)}}),
        ("C : A* : B", "CB", {1: {(0, 1)}}),
        ("C : A{2} : B", "CAAB", {3: {(0, 1, 2, 3)}}),
        ("C : A{2} : B", "CADAB", {}),
        # in parentheses the copies are a unit of their own, joined by ';'
        ("C : (A{2}) : B", "CADAB", {4: {(0, 1, 3, 4)}}),
        # optional parts under AS / FILTER: the alternative without them drops the wrapper
        ("C ; (A? AS x FILTER x[v > 0]) ; B", "CAB", {2: {(0, 2)}}),
        # an optional formula on its own stands for its non-empty alternatives
        ("A*", "AA", {0: {(0,)}, 1: {(1,), (0, 1)}}),
    ],
)
def test_quantifiers(formula, stream, expected) -> None:
    assert supports(run(f"SELECT * WHERE {formula}", letters(stream))) == expected


def test_quantified_labels_accumulate() -> None:
    matches = run("SELECT * WHERE (A AS x){2} ; B", letters("AAB"))
    assert [dict(m.labels) for m in matches] == [{"x": (0, 1)}]
    checked = ceql.check("SELECT * WHERE (A AS x){2} ; B AS y ; C? AS z", SCHEMA)
    assert (checked.label_multiplicity["x"], checked.label_multiplicity["y"]) == ("many", "one")
    assert checked.label_multiplicity["z"] == "one"


@pytest.mark.parametrize(
    "formula, message",
    [
        ("A? AND B", "an optional formula (?, * or {0,m}) cannot be an operand of AND"),
        ("A ALL B*", "an optional formula (?, * or {0,m}) cannot be an operand of ALL"),
        ("A UNLESS B?", "the right side of UNLESS cannot be optional (?, * or {0,m})"),
        ("(A ; B){100000}", "quantifiers expand this formula to about 300000 operators (at most 20000)"),
    ],
)
def test_quantifier_errors(formula, message) -> None:
    with pytest.raises(ceql.QueryError) as caught:
        ceql.check(f"SELECT * WHERE {formula}", SCHEMA)
    assert caught.value.message.startswith(message)
    assert caught.value.line == 1


@CONSTRUCT
@given(operator_cases("repeat"))
def test_quantifiers_agree_with_the_reference(case) -> None:
    check(case)
