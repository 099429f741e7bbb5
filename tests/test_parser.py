"""The parser and printer: real engines' queries parse, analyse and round-trip."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings

import ceql
from ceql.lang import ast, parse_query, print_query
from tests.strategies import TEST_DECLARATION, queries

SHARED = Path(__file__).resolve().parents[2] / "shared"
CONFORMANCE = SHARED / "conformance"
NOTES = SHARED / "notes" / "anchors-core-jvm.md"


def _core_cpp_cases():
    for query in sorted((CONFORMANCE / "core-cpp").glob("*/queries/*.txt")):
        dataset = query.parent.parent
        yield pytest.param(dataset / "declaration.core", query, id=f"{dataset.name}/{query.stem}")


def _core_java_cases():
    for test in sorted((CONFORMANCE / "core-java").glob("Test*")):
        yield pytest.param(test / "query" / "StreamDescription.txt", test / "query" / "queries", id=test.name)


def _roundtrip(text: str, schema: ceql.Schema) -> None:
    checked = ceql.check(text, schema)
    printed = print_query(checked.query)
    again = parse_query(printed)
    assert again == checked.query, printed
    assert print_query(again) == printed
    ceql.check(printed, schema)


@pytest.mark.parametrize("declaration, query", list(_core_cpp_cases()))
def test_core_cpp_benchmark_queries(declaration: Path, query: Path) -> None:
    schema = ceql.declare(declaration.read_text())
    _roundtrip(query.read_text(), schema)


@pytest.mark.parametrize("declaration, query", list(_core_java_cases()))
def test_core_java_engine_test_queries(declaration: Path, query: Path) -> None:
    schema = ceql.declare(declaration.read_text())
    _roundtrip(query.read_text(), schema)


def _notes_blocks() -> list[str]:
    appendices = NOTES.read_text().split("## Appendix A", 1)[1]
    return re.findall(r"```\n(.*?)```", appendices, re.S)


def test_appendix_declarations_parse() -> None:
    blocks = [b for b in _notes_blocks() if b.lstrip().startswith(("CREATE", "DECLARE"))]
    assert len(blocks) >= 7
    streams = (
        "CREATE STREAM S { EVENT E { t:primary_time } } CREATE STREAM Bluesky { EVENT P { t:primary_time } }"
    )
    for block in blocks:
        schema = ceql.declare(streams, block)
        assert schema.event_types


def test_appendix_queries_parse_analyse_and_roundtrip() -> None:
    """Appendix A and B: CORE++ and Java-era CORE queries quoted in the notes."""
    decls = {
        "stock": ceql.declare((CONFORMANCE / "core-cpp/stocks/declaration.core").read_text()),
        "plug": ceql.declare((CONFORMANCE / "core-cpp/smart_homes/declaration.core").read_text()),
        "dropoff": ceql.declare((CONFORMANCE / "core-cpp/taxis/declaration.core").read_text()),
        "Buy": ceql.declare((CONFORMANCE / "core-cpp/crypto_market/declaration.core").read_text()),
        "CreatePost": ceql.declare((CONFORMANCE / "core-cpp/ordered_bluesky/declaration.core").read_text()),
    }
    count = 0
    for block in _notes_blocks():
        if not block.lstrip().startswith("SELECT"):
            continue
        # Java-era files use a placeholder the experiment scripts replace with the window length.
        text = block.replace("WITHIN TIMESTAMP", "WITHIN 10000")
        schema = next(s for marker, s in decls.items() if marker in text)
        _roundtrip(text, schema)
        count += 1
    assert count >= 52


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
