"""The syntax of the language extensions: parse trees, canonical printing, errors with positions."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

import ceql
from ceql.lang import ast, grammar, parse_query, print_query
from ceql.lang.printer import print_expr
from tests.support.strategies import TEST_DECLARATION, extended_queries

SCHEMA = ceql.declare(TEST_DECLARATION)


def formula(text: str) -> ast.Formula:
    return parse_query("SELECT * WHERE " + text).formula


def roundtrip(text: str) -> ast.Query:
    query = parse_query(text)
    printed = print_query(query)
    assert parse_query(printed) == query, printed
    assert print_query(parse_query(printed)) == printed
    return query


# --------------------------------------------------------------------------- SELECT


def test_select_items_labels_and_measures() -> None:
    query = roundtrip("SELECT x, y[v, s], COUNT(y) AS n, FIRST(y).v, x.v * 2 + 1 AS w WHERE A AS x ; B+ AS y")
    projection = query.projection
    assert projection.kind == "list"
    assert [i.label for i in projection.items] == ["x", "y"]
    assert projection.items[1].attributes == ("v", "s")
    assert [(m.name, m.expr) for m in projection.measures] == [
        ("n", ast.Aggregate("COUNT", "y")),
        ("FIRST(y).v", ast.Aggregate("FIRST", "y", "v")),
        ("w", ast.Arith("+", ast.Arith("*", ast.Attr("v", "x"), ast.Literal(2)), ast.Literal(1))),
    ]


@pytest.mark.parametrize(
    "text, kind, measures",
    [
        ("SELECT COUNT(*) WHERE A", "star", ("COUNT(*)",)),
        ("SELECT *, COUNT(*) AS n WHERE A", "star", ("n",)),
        ("SELECT NONE, SUM(x.v) WHERE A AS x", "none", ("SUM(x.v)",)),
        ("SELECT MAX(x.v), MIN(x.s) WHERE A AS x", "star", ("MAX(x.v)", "MIN(x.s)")),
        ("SELECT LAST LAST(x).v WHERE A AS x", "star", ("LAST(x).v",)),
        ("SELECT MAX x, AVG(x.v) AS m WHERE A AS x", "list", ("m",)),
        ("SELECT 'a' AS tag, -1 AS one WHERE A", "star", ("tag", "one")),
    ],
)
def test_measure_lists(text, kind, measures) -> None:
    query = roundtrip(text)
    assert query.projection.kind == kind
    assert tuple(m.name for m in query.projection.measures) == measures


def test_strategy_keywords_followed_by_a_parenthesis_are_functions() -> None:
    assert parse_query("SELECT MAX(x.v) WHERE A AS x").strategy is None
    assert parse_query("SELECT MAX MAX(x.v) WHERE A AS x").strategy == "MAX"
    assert parse_query("SELECT LAST(x).v WHERE A AS x").strategy is None


def test_function_names_are_not_reserved() -> None:
    query = roundtrip("SELECT count, COUNT(count) AS n WHERE A AS count FILTER count.first > FIRST(count).first")
    assert query.projection.items[0].label == "count"
    cond = query.formula.cond
    assert cond.left == ast.Attr("first", "count")
    assert cond.right == ast.Aggregate("FIRST", "count", "first")


# --------------------------------------------------------------------------- conditions


def test_aggregates_prev_and_not_in_conditions() -> None:
    query = roundtrip(
        "SELECT * WHERE (A AS s ; B+ AS b) FILTER COUNT(b) >= 3 AND AVG(b.v) > s.v AND "
        "NOT (b.v = s.v) AND NOT b[v > 1] AND b.v > PREV(b.v)"
    )
    parts = query.formula.cond.parts
    assert parts[0] == ast.Compare(">=", ast.Aggregate("COUNT", "b"), ast.Literal(3))
    assert parts[1] == ast.Compare(">", ast.Aggregate("AVG", "b", "v"), ast.Attr("v", "s"))
    assert parts[2] == ast.Not(ast.Compare("=", ast.Attr("v", "b"), ast.Attr("v", "s")))
    assert isinstance(parts[3], ast.Not) and isinstance(parts[3].operand, ast.LabelCond)
    assert parts[4] == ast.Compare(">", ast.Attr("v", "b"), ast.Prev("b", "v"))


def test_not_binds_tighter_than_and() -> None:
    cond = formula("A AS x FILTER NOT x.v = 1 AND x.v = 2").cond
    assert isinstance(cond, ast.And) and isinstance(cond.parts[0], ast.Not)


# --------------------------------------------------------------------------- formulas


def _shape(node) -> str:
    """A fully parenthesised rendering of a formula tree."""
    if isinstance(node, ast.EventType):
        return node.name
    if isinstance(node, ast.Label):
        return f"({_shape(node.body)} AS {node.label})"
    if isinstance(node, ast.Iteration):
        return f"({_shape(node.body)}{':+' if node.contiguous else '+'})"
    if isinstance(node, ast.Repeat):
        return f"({_shape(node.body)}{{{node.low},{node.high}{',c' if node.contiguous else ''}}})"
    if isinstance(node, ast.Rename):
        return f"({_shape(node.body)}[{','.join(f'{a}->{b}' for a, b in node.mapping)}])"
    if isinstance(node, ast.Filter):
        return f"({_shape(node.body)} FILTER)"
    if isinstance(node, ast.PartitionBy):
        return f"({_shape(node.body)} PARTBY)"
    if isinstance(node, ast.Start):
        return f"START({_shape(node.body)})"
    if isinstance(node, ast.Project):
        return f"PROJECT[{','.join(node.labels)}]({_shape(node.body)})"
    if isinstance(node, ast.Unless):
        return f"({_shape(node.left)} UNLESS {_shape(node.right)})"
    op = {ast.Union_: " OR ", ast.Conjunction: " AND ", ast.AllOf: " ALL "}.get(type(node))
    if op is None:
        op = " : " if node.contiguous else " ; "
    return "(" + op.join(_shape(p) for p in node.parts) + ")"


@pytest.mark.parametrize(
    "text, expected",
    [
        ("A? ; B* ; C{2} ; D{1,3} ; A{2,}", "((A{0,1}) ; (B{0,None}) ; (C{2,2}) ; (D{1,3}) ; (A{2,None}))"),
        ("A AS x{2}", "((A AS x){2,2})"),
        ("A{2} AS x", "((A{2,2}) AS x)"),
        ("A+?", "((A+){0,1})"),
        ("A : B{2} : C", "(A : (B{2,2,c}) : C)"),
        ("A : B{2} AS x : C", "(A : ((B{2,2,c}) AS x) : C)"),
        ("A : (B{2}) : C", "(A : (B{2,2}) : C)"),
        ("A ; B{2} : C", "((A ; (B{2,2})) : C)"),
        ("(A ; B)[A -> X, B -> Y]", "((A ; B)[A->X,B->Y])"),
        ("A[A -> X] AS y", "((A[A->X]) AS y)"),
        ("START(A ; B) ; C", "(START((A ; B)) ; C)"),
        ("PROJECT[x](A AS x ; B) OR C", "(PROJECT[x](((A AS x) ; B)) OR C)"),
        ("[A ; B] ; C", "((A ; B) ; C)"),
        ("(A ; B PARTITION BY [id] FILTER A[v > 1]) ; C", "((((A ; B) PARTBY) FILTER) ; C)"),
        ("(A PARTITION BY [x.id] ; B)", None),
    ],
)
def test_formula_shapes(text, expected) -> None:
    if expected is None:
        with pytest.raises(ceql.QuerySyntaxError):
            formula(text)
        return
    node = formula(text)
    assert _shape(node) == expected
    query = parse_query("SELECT * WHERE " + text)
    assert parse_query(print_query(query)) == query


def test_partition_by_in_a_formula_and_as_the_clause() -> None:
    query = roundtrip("SELECT * WHERE (A AS x ; B AS y PARTITION BY [x.id, y.id]) PARTITION BY [id]")
    assert isinstance(query.formula, ast.PartitionBy)
    assert query.formula.keys == (ast.Attr("id", "x"), ast.Attr("id", "y"))
    assert query.partition_by == (("id",),)
    labelled = roundtrip("SELECT * WHERE A AS x ; B AS y PARTITION BY [x.id, y.id]")
    assert labelled.partition_labels == (ast.Attr("id", "x"), ast.Attr("id", "y"))
    assert labelled.partition_by == ()
    # A formula's own PARTITION BY at the top is printed in parentheses.
    top = ast.Query(ast.Projection("star"), ast.PartitionBy(ast.EventType("A"), (ast.Attr("id"),)))
    assert parse_query(print_query(top)) == top


def test_thesis_brackets_group_formulas() -> None:
    a = formula("[H AS x ; (T AS y FILTER y.id = x.id)+ ; H AS z] FILTER (x.hum < 30 AND x.id = z.id)")
    b = formula("(H AS x ; (T AS y FILTER y.id = x.id)+ ; H AS z) FILTER (x.hum < 30 AND x.id = z.id)")
    assert a == b


def test_start_and_project_are_not_reserved() -> None:
    query = roundtrip("SELECT * WHERE START ; PROJECT ; `START`[START -> x]")
    assert [p for p in query.formula.parts][:2] == [ast.EventType("START"), ast.EventType("PROJECT")]
    printed = print_query(query)
    assert "`START`" in printed and "`PROJECT`" in printed


# --------------------------------------------------------------------------- WITHIN, literals


@pytest.mark.parametrize(
    "clause, nanoseconds, printed",
    [
        ("1 HOUR 30 MINUTES", 5400 * 10**9, "1 HOUR 30 MINUTES"),
        ("2 DAYS", 2 * 86400 * 10**9, "2 DAYS"),
        ("1 DAY 1 NANOSECOND", 86400 * 10**9 + 1, "1 DAY 1 NANOSECOND"),
        ("1.5 SECONDS", 1_500_000_000, "1 SECOND 500 MILLISECONDS"),
        ("250 milliseconds 3 microseconds", 250_003_000, "250 MILLISECONDS 3 MICROSECONDS"),
        ("0.000000001 SECOND", 1, "1 NANOSECOND"),
        ("1e3 SECONDS", 1000 * 10**9, "16 MINUTES 40 SECONDS"),
    ],
)
def test_time_units_are_exact(clause, nanoseconds, printed) -> None:
    query = roundtrip(f"SELECT * WHERE A WITHIN {clause}")
    assert query.within == ast.Within("time", nanoseconds)
    assert isinstance(query.within.value, int)
    assert print_query(query).endswith("WITHIN " + printed)


def test_int64_literals() -> None:
    low = parse_query("SELECT * WHERE A FILTER A[v > -9223372036854775808 AND v < 9223372036854775807]")
    parts = low.formula.cond.pred.parts
    assert parts[0].right == ast.Literal(grammar.INT64_MIN)
    assert parts[1].right == ast.Literal(grammar.INT64_MAX)
    assert parse_query(print_query(low)) == low
    assert print_expr(ast.Neg(ast.Literal(-5))) == "-(-5)"  # never "--", a comment


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    "text, column, message",
    [
        ("SELECT * WHERE A FILTER A[v > 9223372036854775808]", 31, "integer 9223372036854775808 is out of range"),
        ("SELECT * WHERE A FILTER A[v > 99999999999999999999999]", 31, "integer 99999999999999999999999 is out of range"),
        ("SELECT * WHERE A FILTER A[v IN {9223372036854775808}]", 33, "integer 9223372036854775808 is out of range"),
        ("SELECT * WHERE A LIMIT 9223372036854775808", 24, "integer 9223372036854775808 is out of range"),
        ("SELECT * WHERE A WITHIN 9223372036854775808 EVENTS", 25, "integer 9223372036854775808 is out of range"),
        ("SELECT * WHERE A FILTER A[v > 1e999]", 31, "number 1e999 is out of range"),
        ("SELECT * WHERE A WITHIN 300 YEARS", 29, "expected EVENTS, a time unit"),
        ("SELECT * WHERE A WITHIN 1.5 NANOSECONDS", 25, "1.5 NANOSECONDS is not a whole number of nanoseconds"),
        ("SELECT * WHERE A WITHIN 1 SECOND 1 HOUR", 36, "HOURS cannot follow SECONDS"),
        ("SELECT * WHERE A WITHIN 200000 DAYS", 25, "the time window is too long"),
        ("SELECT * WHERE A{3,2}", 17, "a quantifier's lower bound (3) is above its upper bound (2)"),
        ("SELECT * WHERE A{0}", 17, "a quantifier's upper bound must be at least 1"),
        ("SELECT * WHERE A{}", 18, "expected a whole number (f{n}, f{n,m} or f{n,}), found '}'"),
        ("SELECT * WHERE A{1,x}", 20, "expected a whole number or '}', found 'x'"),
        ("SELECT * WHERE A[A B]", 20, "expected '->' (f[A -> B] renames label A to B), found 'B'"),
        ("SELECT * WHERE A[A -> B, A -> C]", 26, "label A is renamed twice"),
        ("SELECT * WHERE PROJECT[x] A", 27, "expected '(' and the formula to project (PROJECT[x, y](f))"),
        ("SELECT * WHERE START(A", 23, "expected ')' or an operator, found end of input"),
        ("SELECT * WHERE (A PARTITION BY [x.id, id])", 39, "PARTITION BY lists either attributes of labels"),
        ("SELECT * WHERE A PARTITION BY [x.id], [y.id]", 37, "PARTITION BY over labels takes one list"),
        ("SELECT * WHERE A FILTER COUNT(x.v) > 1", 32, "expected ')' (COUNT takes a label or *), found '.'"),
        ("SELECT * WHERE A FILTER SUM(x) > 1", 30, "expected '.' and an attribute name (SUM(x.attribute))"),
        ("SELECT * WHERE A FILTER FIRST(x.v) > 1", 32, "expected ')' (FIRST takes a label: FIRST(x).attribute)"),
        ("SELECT * WHERE A FILTER A[COUNT(A) > 1]", 27, "COUNT(...) applies to labels"),
        ("SELECT *, x WHERE A AS x", 11, "labels cannot be listed after * in SELECT"),
        ("SELECT x, * WHERE A AS x", 11, "* must be the first item of SELECT"),
        ("SELECT COUNT(x) AS WHERE A AS x", 20, "expected a name for the value after AS, found keyword WHERE"),
    ],
)
def test_syntax_errors(text, column, message) -> None:
    with pytest.raises(ceql.QuerySyntaxError) as caught:
        parse_query(text)
    assert caught.value.message.startswith(message), caught.value.message
    assert (caught.value.line, caught.value.column) == (1, column)


@pytest.mark.parametrize(
    "text, column, message",
    [
        ("SELECT * WHERE A AS x FILTER SUM(x.s) > 1", 30, "SUM applies to numeric attributes, and s is a string"),
        ("SELECT * WHERE A AS x FILTER MAX(x.v) > 'a'", 30, "cannot compare a number with a string"),
        ("SELECT * WHERE A AS x FILTER COUNT(z) > 1", 30, "label z is not defined anywhere in the query"),
        ("SELECT * WHERE A AS x FILTER x.v > PREV(x.v) + PREV(y.v)", 30, "PREV(...) may name only one label"),
        ("SELECT PREV(x.v) WHERE A AS x", 8, "PREV(...) is only allowed in FILTER conditions"),
        ("SELECT x.v + 1 WHERE A+ AS x", 8, "arithmetic '+' needs one value, but x.v may hold several"),
        ("SELECT x.s + 1 WHERE A AS x", 8, "arithmetic '+' applies to numbers only"),
        ("SELECT COUNT(y) WHERE A AS x", 8, "label y in SELECT is not defined in the formula"),
        ("SELECT COUNT(x) AS n, x.v AS n WHERE A AS x", 23, "two SELECT values are named n"),
        ("SELECT z WHERE A AS x UNLESS B AS z", 8, "label z in SELECT is not defined in the formula"),
        ("SELECT * WHERE (A AS x)[y -> z]", 17, "label y is not defined in the formula it renames"),
        ("SELECT * WHERE PROJECT[y](A AS x)", 16, "label y in PROJECT is not defined in the formula it projects"),
        ("SELECT * WHERE (A AS x PARTITION BY [y.id])", 38, "label y is not defined in the formula this PARTITION BY"),
        ("SELECT * WHERE (A AS x PARTITION BY [x.nope])", 38, "event type A (labelled x) has no attribute nope"),
        ("SELECT * WHERE A AS x PARTITION BY [x.id, x.s]", 43, "PARTITION BY compares attributes of different types"),
        ("SELECT * WHERE A? AND B", 16, "an optional formula (?, * or {0,m}) cannot be an operand of AND"),
    ],
)
def test_analysis_errors(text, column, message) -> None:
    with pytest.raises(ceql.QueryError) as caught:
        ceql.check(text, SCHEMA)
    assert caught.value.message.startswith(message), caught.value.message
    assert (caught.value.line, caught.value.column) == (1, column)


# --------------------------------------------------------------------------- canonical printing


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(extended_queries(depth=3))
def test_extended_queries_roundtrip(query: ast.Query) -> None:
    printed = print_query(query)
    assert parse_query(printed) == query, printed
    assert print_query(parse_query(printed)) == printed
