"""Bad queries and declarations: each error names its exact line, column and what is wrong."""

from __future__ import annotations

import pytest

import ceql
from ceql.lang import parse_query

DECLARATION = """
CREATE STREAM S {
  EVENT BUY { id:int, name:string, price:double, ok:boolean, t:primary_time },
  EVENT SELL { id:int, name:string, price:double, ok:boolean, t:primary_time }
}
CREATE STREAM R { EVENT TICK { sym:string, px:double, seq:int } }
"""

CASES = [
    (
        "SELECT * FROM S WHERE",
        "QuerySyntaxError",
        1,
        22,
        "expected an event type, '(' or NOT(...), found end of input",
    ),
    (
        "SELECT * FROM S WHERE SELL AS x;",
        "QuerySyntaxError",
        1,
        33,
        "expected an event type, '(' or NOT(...), found end of input",
    ),
    (
        "SELECT * FROM S WHERE (SELL AS x; BUY",
        "QuerySyntaxError",
        1,
        38,
        "expected ')' or an operator, found end of input",
    ),
    (
        "SELECT * FROM S WHERE SELL AS",
        "QuerySyntaxError",
        1,
        30,
        "expected a label name after AS, found end of input",
    ),
    (
        "SELECT * FROM S WHERE SELL AS x FILTER",
        "QuerySyntaxError",
        1,
        39,
        "expected a condition: label[predicate], x.attr op y.attr, or '(', found end of input",
    ),
    (
        "SELECT * FROM S WHERE SELL AS x FILTER x[price >]",
        "QuerySyntaxError",
        1,
        49,
        "expected an attribute name, a number or a string, found ']'",
    ),
    (
        "SELECT * FROM S WHERE SELL AS x FILTER x[price > 1",
        "QuerySyntaxError",
        1,
        51,
        "expected ']' or AND/OR, found end of input",
    ),
    (
        "SELECT * FROM S WHERE SELL AS x FILTER x[price 1]",
        "QuerySyntaxError",
        1,
        48,
        "expected a comparison, LIKE, IN, NOT IN or IN RANGE, found '1'",
    ),
    ("SELECT * S WHERE SELL", "QuerySyntaxError", 1, 10, "expected FROM or WHERE, found 'S'"),
    (
        "SELECT * FROM S WHERE SELL WITHIN 10",
        "QuerySyntaxError",
        1,
        37,
        "expected EVENTS, a time unit (DAYS, HOURS, MINUTES, SECONDS, MILLISECONDS, ...) or '[attribute]', found end of input",
    ),
    (
        "SELECT * FROM S WHERE SELL WITHIN 2.5 EVENTS",
        "QuerySyntaxError",
        1,
        35,
        "the size of an EVENTS or attribute window must be a whole number",
    ),
    (
        "SELECT * FROM S WHERE SELL CONSUME BY ALL",
        "QuerySyntaxError",
        1,
        39,
        "expected ANY, PARTITION or NONE, found keyword ALL",
    ),
    (
        "SELECT * FROM S WHERE SELL LIMIT x",
        "QuerySyntaxError",
        1,
        34,
        "expected a whole number after LIMIT, found 'x'",
    ),
    ("SELECT * FROM S WHERE SELL LIMIT 0", "QueryError", 1, 34, "LIMIT must be at least 1, found 0"),
    (
        "SELECT * FROM S WHERE SELL AS select",
        "QuerySyntaxError",
        1,
        31,
        "expected a label name after AS, found keyword SELECT (back-quote it to use it as a name: `select`)",
    ),
    (
        "SELECT * FROM S WHERE SELL FILTER SELL[name = 'abc]",
        "QuerySyntaxError",
        1,
        47,
        "unterminated string (missing closing ')",
    ),
    ("SELECT * FROM S WHERE SELL # BUY", "QuerySyntaxError", 1, 28, "unexpected character '#'"),
    (
        "SELECT * FROM S WHERE NOT(SELL; BUY)",
        "QuerySyntaxError",
        1,
        31,
        "expected FILTER or ')' (NOT takes one event type), found ';'",
    ),
    (
        "SELECT * FROM S WHERE SELL WITHIN 5 SECONDS 2 MINUTES",
        "QuerySyntaxError",
        1,
        47,
        "MINUTES cannot follow SECONDS (write the units from the largest to the smallest, each once)",
    ),
    (
        "SELECT * FROM S WHERE SELL FILTER SELL[price IN {1, 'a'}]",
        "QueryError",
        1,
        40,
        "IN mixes types: the tested value is a number, 'a' is a string",
    ),
    ("SELECT * FROM T WHERE SELL", "QueryError", 1, 15, "unknown stream T"),
    ("SELECT * FROM S WHERE SHORT", "QueryError", 1, 23, "unknown event type SHORT"),
    (
        "SELECT * FROM S WHERE SELL AS x; TICK",
        "QueryError",
        1,
        34,
        "event type TICK is not in the streams of the FROM clause (S)",
    ),
    (
        "SELECT * FROM S WHERE SELL AS x FILTER x[volume > 5]",
        "QueryError",
        1,
        42,
        "unknown attribute volume for label x (event types: SELL)",
    ),
    (
        "SELECT * FROM S WHERE SELL AS x FILTER x[price > 'cheap']",
        "QueryError",
        1,
        42,
        "cannot compare a number with a string",
    ),
    (
        "SELECT * FROM S WHERE SELL AS x FILTER x[name > 5]",
        "QueryError",
        1,
        42,
        "cannot compare a string with a number",
    ),
    (
        "SELECT * FROM S WHERE SELL AS x FILTER x[price LIKE 'a.*']",
        "QueryError",
        1,
        42,
        "LIKE applies to strings only",
    ),
    (
        "SELECT * FROM S WHERE SELL AS x FILTER x[name LIKE '(unclosed']",
        "QueryError",
        1,
        42,
        "invalid regular expression '(unclosed': Invalid regular expression: missing ): ^(?:(unclosed)$",
    ),
    (
        "SELECT * FROM S WHERE SELL AS x; BUY FILTER y[price > 1]",
        "QueryError",
        1,
        45,
        "label y is not defined anywhere in the query",
    ),
    (
        # y is defined in the right side of UNLESS only: still a label of the query (free).
        "SELECT * FROM S WHERE (SELL AS x FILTER z.price > x.price) UNLESS BUY AS y",
        "QueryError",
        1,
        41,
        "label z is not defined anywhere in the query",
    ),
    (
        "SELECT * FROM S WHERE SELL AS x; BUY AS y FILTER x.price < y.name",
        "QueryError",
        1,
        50,
        "cannot compare a number with a string",
    ),
    (
        "SELECT * FROM S WHERE SELL AS x FILTER x[ok > TRUE]",
        "QueryError",
        1,
        42,
        "booleans can only be compared with = or !=, not >",
    ),
    (
        "SELECT * FROM S WHERE SELL AS x FILTER x[name + 1 > 2]",
        "QueryError",
        1,
        42,
        "arithmetic '+' applies to numbers only",
    ),
    (
        "SELECT z FROM S WHERE SELL AS x",
        "QueryError",
        1,
        8,
        "label z in SELECT is not defined in the formula",
    ),
    (
        "SELECT * FROM R WHERE TICK WITHIN 10 SECONDS",
        "QueryError",
        1,
        35,
        "a time window needs a primary_time attribute, and event type TICK has none (use WITHIN n EVENTS or WITHIN n [attribute])",
    ),
    (
        "SELECT * FROM R WHERE TICK WITHIN 10 [sym]",
        "QueryError",
        1,
        35,
        "WITHIN [sym] needs a numeric attribute",
    ),
    (
        "SELECT * FROM S WHERE SELL WITHIN 10 [volume]",
        "QueryError",
        1,
        35,
        "event type SELL has no attribute volume for WITHIN",
    ),
    (
        "SELECT * FROM S, R WHERE SELL; TICK PARTITION BY [name]",
        "QueryError",
        1,
        37,
        "event type TICK has no attribute name to PARTITION BY",
    ),
    ("SELECT * FROM S WHERE SELL WITHIN 0 EVENTS", "QueryError", 1, 35, "a WITHIN window must be at least 1"),
    ("SELECT * FROM S WHERE X>SELL", "QueryError", 1, 23, "unknown stream X"),
    ("SELECT * FROM S WHERE R>TICK", "QueryError", 1, 23, "stream R is not in the FROM clause"),
    (
        "SELECT * FROM S WHERE SELL AS x FILTER 1 < 2",
        "QueryError",
        1,
        40,
        "a condition must name at least one label (x[pred] or x.attr op ...)",
    ),
    (
        "SELECT * FROM S WHERE SELL AS x FILTER x",
        "QuerySyntaxError",
        1,
        41,
        "expected '[' or '.' after a label in a FILTER condition (x[pred] or x.attr), found end of input",
    ),
    (
        "SELECT *\nFROM S\nWHERE (SELL AS x;\n       BUY AS y\nFILTER x[price > 1]",
        "QuerySyntaxError",
        5,
        20,
        "expected ')' or an operator, found end of input",
    ),
    (
        "SELECT *\nFROM S\nWHERE SELL AS x;\n  BUY AS y FILTER x[price > 1] AND\n  y[name = 5]",
        "QueryError",
        5,
        5,
        "cannot compare a string with a number",
    ),
]


@pytest.fixture(scope="module")
def schema() -> ceql.Schema:
    return ceql.declare(DECLARATION)


@pytest.mark.parametrize("text, kind, line, column, message", CASES)
def test_error_position_and_message(schema, text, kind, line, column, message) -> None:
    with pytest.raises(ceql.QueryError) as caught:
        ceql.check(text, schema)
    error = caught.value
    assert type(error).__name__ == kind
    assert (error.line, error.column) == (line, column)
    assert error.message == message
    # The excerpt shows the offending line with a caret under the column.
    source_line, caret = error.excerpt.split("\n")
    assert source_line.strip() == text.splitlines()[line - 1].strip() if text.strip() else True
    assert caret.index("^") == column + 1
    assert f"line {line}, column {column}" in str(error)


def test_syntax_errors_are_query_errors() -> None:
    assert issubclass(ceql.QuerySyntaxError, ceql.QueryError)
    assert len(CASES) >= 30


@pytest.mark.parametrize(
    "text",
    [
        "SELECT * WHERE " + "(" * 5000 + "A" + ")" * 5000,
        "SELECT * WHERE A FILTER " + "(" * 5000 + "A[v > 1]" + ")" * 5000,
        "SELECT * WHERE A FILTER A[" + "NOT " * 5000 + "v > 1]",
        "SELECT * WHERE A FILTER A[v > " + "- " * 5000 + "1]",
        "SELECT * WHERE A" + "+" * 5000,
        "SELECT * WHERE " + " UNLESS ".join(["A"] * 5000),
        "SELECT * WHERE A" + " FILTER A[v > 1]" * 5000,
        "SELECT * WHERE A FILTER A[v > " + " + ".join(["1"] * 5000) + "]",
    ],
    ids=[
        "parens",
        "condition-parens",
        "not-chain",
        "minus-chain",
        "postfix-chain",
        "unless-chain",
        "filter-chain",
        "arith-chain",
    ],
)
def test_deep_or_huge_queries_fail_cleanly(text: str) -> None:
    with pytest.raises(ceql.QuerySyntaxError) as caught:
        parse_query(text)
    assert "nests too deeply" in caught.value.message


def test_huge_flat_query_is_fine_or_rejected_cleanly() -> None:
    schema = ceql.declare("CREATE STREAM S { EVENT A { v:int } }")
    wide = "SELECT * WHERE " + "; ".join(["A"] * 2000)
    assert len(ceql.check(wide, schema).query.formula.parts) == 2000
    with pytest.raises(ceql.QuerySyntaxError, match="too large"):
        parse_query("SELECT * WHERE " + "; ".join(["A"] * 150_000))


@pytest.mark.parametrize(
    "text, line, column, message",
    [
        ("CREATE STREAM S { EVENT A { x:int, x:int } }", 1, 36, "attribute x is declared twice"),
        ("CREATE STREAM S { EVENT A { x:integr } }", 1, 31, "unknown type integr"),
        ("CREATE STREAM S { EVENT A { x int } }", 1, 31, "expected ':', found 'int'"),
        (
            "DECLARE EVENT A(x int)\nDECLARE STREAM S(A, B)",
            2,
            21,
            "unknown event type B (declare it with DECLARE EVENT first)",
        ),
        (
            "CREATE STREAM S { EVENT A { t:primary_time, u:primary_time } }",
            1,
            45,
            "an event type has at most one primary_time attribute",
        ),
        (
            "CREATE STREAM S { EVENT A { x:int } }\nCREATE STREAM T { EVENT A { x:string } }",
            2,
            25,
            "event type A is declared twice with different attributes",
        ),
        ("CREATE TABLE S", 1, 8, "expected STREAM or QUARANTINE after CREATE, found 'TABLE'"),
        (
            "",
            1,
            1,
            "expected a declaration (CREATE STREAM, DECLARE EVENT, DECLARE STREAM or CREATE QUARANTINE), found end of input",
        ),
    ],
)
def test_declaration_errors(text: str, line: int, column: int, message: str) -> None:
    with pytest.raises(ceql.DeclarationError) as caught:
        ceql.declare(text)
    assert (caught.value.line, caught.value.column, caught.value.message) == (line, column, message)


def test_quarantine_on_unknown_stream() -> None:
    with pytest.raises(ceql.DeclarationError, match="unknown stream Q"):
        ceql.declare(
            "CREATE STREAM S { EVENT A { t:primary_time } }", "CREATE QUARANTINE { FIXED_TIME 1 seconds {Q} }"
        )
