"""The parser and printer: real engines' queries parse, analyse and round-trip."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings

import ceql
from ceql.lang import ast, parse_query, print_query
from tests.support import vendored
from tests.support.strategies import TEST_DECLARATION, queries


def _roundtrip(text: str, schema: ceql.Schema) -> None:
    checked = ceql.check(text, schema)
    printed = print_query(checked.query)
    again = parse_query(printed)
    assert again == checked.query, printed
    assert print_query(again) == printed
    ceql.check(printed, schema)


@pytest.mark.parametrize(
    "declaration, query",
    [pytest.param(d, q, id=f"{d.parent.name}/{q.stem}") for d, q in vendored.core_cpp_queries()],
)
def test_core_cpp_benchmark_queries(declaration: Path, query: Path) -> None:
    schema = ceql.declare(declaration.read_text())
    _roundtrip(query.read_text(), schema)


def test_core_cpp_queries_are_vendored() -> None:
    """The conformance set must not silently shrink to nothing (it reads tests/data/core-cpp)."""
    datasets = [d.name for d in vendored.core_cpp_datasets()]
    assert datasets == [
        "crypto_market",
        "ordered_bluesky",
        "smart_homes",
        "stocks",
        "taxis",
        "unordered_bluesky",
        "unordered_stocks",
    ]
    assert len(vendored.core_cpp_queries()) == 129


@pytest.mark.parametrize("dataset", vendored.core_cpp_datasets(), ids=lambda d: d.name)
def test_core_cpp_declarations_with_their_quarantine(dataset: Path) -> None:
    """Each data set's stream declaration, with its out-of-order option declaration if it has one."""
    texts = [(dataset / "declaration.core").read_text()]
    quarantine = dataset / "quarantine_declaration.core"
    if quarantine.is_file():
        texts.append(quarantine.read_text())
    schema = ceql.declare(*texts)
    assert schema.event_types
    assert len(schema.quarantines) == (1 if quarantine.is_file() else 0)


@pytest.mark.parametrize("test", vendored.core_java_tests(), ids=lambda t: t.name)
def test_core_java_engine_test_queries(test: vendored.JavaTest) -> None:
    schema = ceql.declare(test.declaration)
    _roundtrip(test.query, schema)


def test_java_era_query_forms() -> None:
    """What the Java-era experiment queries of CORE add to the CORE++ ones: no CONSUME BY line,
    lower-case ``and``, an iterated disjunction under a label filtered twice, unspaced
    comparisons. (The experiment files themselves carry no licence, so they are not vendored.)"""
    schema = ceql.declare((vendored.CORE_CPP / "stocks" / "declaration.core").read_text())
    _roundtrip(
        "SELECT *\nFROM S\nWHERE (BUY as a; (BUY OR SELL)+ as mid ; SELL as z)\nFILTER\n"
        "      a[name='IBM']\n  AND mid[name = 'IBM'] and mid[volume=100]\n  AND z[price>=10.5]\n"
        "WITHIN 500 [stock_time]",
        schema,
    )


def test_java_declaration_dialect() -> None:
    schema = ceql.declare(
        "DECLARE EVENT BUY(id int,name string,volume int,price double,stock_time int)\n"
        "DECLARE EVENT SELL(id int,name string,volume int,price double,stock_time int)\n"
        "DECLARE STREAM S(BUY, SELL)"
    )
    assert schema.streams == {"S": ("BUY", "SELL")}
    assert schema.event_types["BUY"].attribute("price").type == "double"


def test_quarantine_declarations() -> None:
    schema = ceql.declare(
        "CREATE STREAM S { EVENT E { t:primary_time } }\nCREATE QUARANTINE { FIXED_TIME 2 seconds {S} }"
    )
    assert schema.allowed_lateness_ns() == 2 * 10**9
    direct = ceql.declare("CREATE STREAM B { EVENT E { t:primary_time } } CREATE QUARANTINE { DIRECT {B} }")
    assert direct.quarantines[0].kind == "DIRECT"


def _shape(node) -> str:
    """A fully parenthesised rendering of a formula tree, to check precedence."""
    if isinstance(node, ast.EventType):
        return node.name
    if isinstance(node, ast.Label):
        return f"({_shape(node.body)} AS {node.label})"
    if isinstance(node, ast.Iteration):
        return f"({_shape(node.body)}{':+' if node.contiguous else '+'})"
    if isinstance(node, ast.Filter):
        return f"({_shape(node.body)} FILTER)"
    if isinstance(node, ast.Unless):
        return f"({_shape(node.left)} UNLESS {_shape(node.right)})"
    op = {ast.Union_: " OR ", ast.Conjunction: " AND ", ast.AllOf: " ALL "}.get(type(node))
    if op is None:
        op = " : " if node.contiguous else " ; "
    return "(" + op.join(_shape(p) for p in node.parts) + ")"


@pytest.mark.parametrize(
    "text, expected",
    [
        # precedence, tightest first: AS/+/:+, ;, :, AND, ALL, UNLESS, OR, FILTER
        ("A ; B : C", "((A ; B) : C)"),
        ("A : B ; C", "(A : (B ; C))"),
        ("A ; B OR C", "((A ; B) OR C)"),
        ("A AS x+", "((A AS x)+)"),
        ("A+ AS x", "((A+) AS x)"),
        ("A :+ ; B", "((A:+) ; B)"),
        ("A ; B AND C ALL D UNLESS E OR F", "(((((A ; B) AND C) ALL D) UNLESS E) OR F)"),
        ("A UNLESS B UNLESS C", "((A UNLESS B) UNLESS C)"),
        ("A ; B FILTER A[v > 1] OR B[v < 2]", "((A ; B) FILTER)"),
        ("A OR B FILTER A[v > 1] FILTER B[v > 1]", "(((A OR B) FILTER) FILTER)"),
        ("(A FILTER A[v > 1]) ; B", "((A FILTER) ; B)"),
    ],
)
def test_precedence(text: str, expected: str) -> None:
    query = parse_query("SELECT * WHERE " + text)
    assert _shape(query.formula) == expected
    assert parse_query(print_query(query)) == query


def test_filter_binds_loosest() -> None:
    query = parse_query("SELECT * WHERE A AS x ; B AS y FILTER x[v > 1]")
    assert isinstance(query.formula, ast.Filter)
    assert isinstance(query.formula.body, ast.Sequence)


def test_keywords_case_insensitive_and_backquotes() -> None:
    a = parse_query(
        "select all * from S where A as x; `B` filter x[v >= 1] within 3 events consume by any limit 2"
    )
    b = parse_query(
        "SELECT ALL * FROM S WHERE A AS x; B FILTER x[v >= 1] WITHIN 3 EVENTS CONSUME BY ANY LIMIT 2"
    )
    assert a == b
    keyword_label = parse_query("SELECT * WHERE A AS `last`")
    assert keyword_label.formula.label == "last"
    assert "`last`" in print_query(keyword_label)


def test_comments_and_strings() -> None:
    query = parse_query("SELECT * -- a comment\nWHERE /* block\ncomment */ A FILTER A[s = 'it''s']")
    assert query.formula.cond.pred.right.value == "it's"
    assert "'it''s'" in print_query(query)


def test_time_window_units() -> None:
    query = parse_query("SELECT * WHERE A WITHIN 1 HOURS 2 MINUTES 3.5 SECONDS")
    assert query.within == ast.Within("time", (3600 + 120 + 3.5) * 10**9)
    assert parse_query(print_query(query)).within == query.within


def test_value_sequences() -> None:
    query = parse_query(
        "SELECT * WHERE A FILTER A[v IN {1..5} AND v NOT IN {..0} AND v IN {2..} AND s IN {'a', 'b'}]"
    )
    preds = query.formula.cond.pred.parts
    assert preds[0] == ast.InInterval(ast.Attr("v"), 1, 5)
    assert preds[1] == ast.InInterval(ast.Attr("v"), None, 0, True)
    assert preds[2] == ast.InInterval(ast.Attr("v"), 2, None)
    assert preds[3] == ast.InSet(ast.Attr("s"), ("a", "b"))


def test_parenthesised_arithmetic_in_predicates_and_conditions() -> None:
    query = parse_query("SELECT * WHERE A AS x; B AS y FILTER (x.v + 1) * 2 < y.v AND x[(v - 1) > 0]")
    cond = query.formula.cond
    assert isinstance(cond.parts[0], ast.Compare)
    assert isinstance(cond.parts[1], ast.LabelCond)
    assert parse_query(print_query(query)) == query


@settings(max_examples=300, deadline=None)
@given(queries(depth=3))
def test_generated_queries_roundtrip(query: ast.Query) -> None:
    printed = print_query(query)
    assert parse_query(printed) == query, printed
    ceql.check(printed, ceql.declare(TEST_DECLARATION))


@pytest.mark.parametrize(
    "text",
    [
        "CREATE STREAM S { EVENT A { id:int, ts:primary_time(ms), s:string }, EVENT B { x:double, ok:boolean } }\n"
        "CREATE QUARANTINE { FIXED_TIME 1.5 seconds {S}, DIRECT {S} }",
        "DECLARE EVENT `trade id`(`a b` int, `x``y` double, t primary_time(us))\n"
        "DECLARE EVENT SELECT(FROM long)\nDECLARE STREAM `my stream`(`trade id`, SELECT)",
    ],
)
def test_schema_text_parses_back_to_the_same_schema(text: str) -> None:
    """Schema.text() is how a schema travels to Spark workers (plain text, never a pickle)."""
    schema = ceql.declare(text)
    assert ceql.declare(schema.text()) == schema
