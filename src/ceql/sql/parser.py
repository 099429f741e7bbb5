"""A hand-written recursive-descent parser for ``SELECT ... FROM t MATCH_RECOGNIZE (...)``.

Errors are QuerySyntaxError (the text does not follow the grammar: line, column, what was
expected) or UnsupportedQueryError (valid SQL that ceql does not run: the clause is named, with
its line and column). Nesting and size are bounded so that hostile input fails with an error,
never with a RecursionError.
"""

from __future__ import annotations

import contextlib
import functools
import re
import sys
import time
from collections.abc import Callable, Iterator
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from typing import Any, TypeVar

from ceql.errors import QuerySyntaxError, UnsupportedQueryError
from ceql.lang import grammar
from ceql.lang.scanner import TokenCursor
from ceql.lang.timetext import format_timestamp, parse_interval, parse_timestamp, timestamp_zone
from ceql.sql import ast
from ceql.sql.lexer import RESERVED, tokenize

MAX_DEPTH = 100
MAX_TOKENS = 100_000
#: Levels of an expression's tree (a chain ``a + b + c`` is one level per operator: SQL's left
#: associativity decides where integer arithmetic overflows, so it is kept). AND, OR and IN lists
#: are built balanced (the same evaluation order, logarithmic depth). The analysis, compiler and
#: evaluators recurse on the tree under ``deep_recursion``, which allows this depth.
MAX_EXPR_DEPTH = 1_000
INT64_MAX = 2**63 - 1

NAVIGATIONS = {"PREV", "NEXT", "FIRST", "LAST"}
AGGREGATES = {
    "COUNT", "SUM", "AVG", "MIN", "MAX", "BOOL_AND", "BOOL_OR", "EVERY", "COUNT_IF", "ARBITRARY", "ANY_VALUE",
    "ARRAY_AGG", "MAX_BY", "MIN_BY",
}
#: aggregates of two arguments: the value, and the key that picks the row
KEYED_AGGREGATES = {"MAX_BY", "MIN_BY"}
SCALARS = {
    "ABS", "COALESCE", "LOWER", "UPPER", "CONCAT_WS",
    # Trino's and Flink's common scalar functions (analysis: the double ones, and rewritten ones)
    "SQRT", "LN", "EXP", "POWER", "POW", "FLOOR", "CEIL", "CEILING", "ROUND", "SIGN", "MOD",
    "GREATEST", "LEAST", "CHAR_LENGTH", "CHARACTER_LENGTH", "LENGTH", "SUBSTRING", "SUBSTR", "CONCAT",
}  # fmt: skip

# CAST target names -> the type ceql computes with.
CAST_TYPES = {
    "BIGINT": "BIGINT",
    "INT": "BIGINT",
    "INTEGER": "BIGINT",
    "SMALLINT": "BIGINT",
    "TINYINT": "BIGINT",
    "DOUBLE": "DOUBLE",
    "FLOAT": "DOUBLE",
    "REAL": "DOUBLE",
    "VARCHAR": "VARCHAR",
    "STRING": "VARCHAR",
    "CHAR": "VARCHAR",
    "BOOLEAN": "BOOLEAN",
}

INTERVAL_UNITS = {"DAY": 86_400 * 10**9, "HOUR": 3_600 * 10**9, "MINUTE": 60 * 10**9, "SECOND": 10**9}
_UNIT_ALIASES = {"DAYS": "DAY", "HOURS": "HOUR", "MINUTES": "MINUTE", "SECONDS": "SECOND"}

# Things that are valid SQL around MATCH_RECOGNIZE but not run by ceql: named in the error.
_UNSUPPORTED_AFTER_FROM = {
    "GROUP": "GROUP BY",
    "HAVING": "HAVING",
    "ORDER": "ORDER BY on the result",
    "LIMIT": "LIMIT",
    "JOIN": "JOIN",
    "UNION": "UNION",
    "WINDOW": "WINDOW",
    "FETCH": "FETCH",
    "OFFSET": "OFFSET",
}


def reads_the_clock(text: str) -> bool:
    """Whether the query reads CURRENT_TIMESTAMP or LOCALTIMESTAMP (its plan is not reused)."""
    upper = text.upper()
    return "CURRENT_TIMESTAMP" in upper or "LOCALTIMESTAMP" in upper


def with_the_clock_read(text: str) -> str:
    """``text`` with CURRENT_TIMESTAMP and LOCALTIMESTAMP written as the literal of now, so that
    every task of a distributed run reads the same time."""
    tokens = tokenize(text)
    stamp = format_timestamp(time.time_ns())  # ISO-8601 with Z
    out = []
    at = 0
    for i, tok in enumerate(tokens[:-1]):
        if tok.upper in ("CURRENT_TIMESTAMP", "LOCALTIMESTAMP") and not (
            tokens[i + 1].kind == "OP" and tokens[i + 1].value == "("
        ):
            out.append(text[at : tok.offset])
            out.append(f"TIMESTAMP '{stamp if tok.upper == 'CURRENT_TIMESTAMP' else stamp[:-1]}'")
            at = tok.offset + len(tok.text)
    out.append(text[at:])
    return "".join(out)


def parse_sql(text: str) -> ast.Query:
    """Parse one ``SELECT ... FROM t MATCH_RECOGNIZE (...)`` query into its syntax tree."""
    query = _Parser(text).query()
    _check_depth(query)
    return query


def _balanced(op: str, pos: int, items: list[ast.Expr]) -> ast.Expr:
    """``items[0] op items[1] op ...`` for an associative ``op`` (AND, OR) as a balanced tree:
    the same operands in the same order, so the same value and the same left-to-right
    short-circuit, at logarithmic depth. Iterative: pairs are joined level by level."""
    level = list(items)
    while len(level) > 1:
        pairs = [ast.Binary(pos, op, level[i], level[i + 1]) for i in range(0, len(level) - 1, 2)]
        level = pairs + ([level[-1]] if len(level) % 2 else [])
    return level[0]


def _check_depth(query: ast.Query) -> None:
    """QuerySyntaxError if an expression's tree is deeper than MAX_EXPR_DEPTH (walked
    iteratively, so the check itself cannot overflow the stack)."""
    stack: list[tuple[object, int]] = [(query, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_EXPR_DEPTH:
            pos = getattr(node, "pos", 0)
            raise QuerySyntaxError(
                f"expression too deep (more than {MAX_EXPR_DEPTH} levels of operators; split it into measures "
                "or shorter conditions)",
                query.text,
                pos if isinstance(pos, int) else 0,
            )
        if isinstance(node, (tuple, list)):
            stack.extend((item, depth) for item in node)
        elif isinstance(node, ast.Expr) or hasattr(node, "__dataclass_fields__"):
            step = 1 if isinstance(node, ast.Expr) else 0
            for name in node.__dataclass_fields__:  # type: ignore[attr-defined]
                child = getattr(node, name)
                if isinstance(child, (tuple, list)) or hasattr(child, "__dataclass_fields__"):
                    stack.append((child, depth + step))


F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")


def allows_deep_expressions(func: F) -> F:
    """Run ``func`` under ``deep_recursion`` (for the passes that recurse on expressions)."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with deep_recursion():
            return func(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


@contextlib.contextmanager
def deep_recursion() -> Iterator[None]:
    """Room on Python's stack for the recursive passes over an expression of MAX_EXPR_DEPTH
    levels (a few frames per level). Python 3.11+ frames do not use the C stack."""
    old = sys.getrecursionlimit()
    needed = 8 * MAX_EXPR_DEPTH + 2_000
    if old < needed:
        sys.setrecursionlimit(needed)
    try:
        yield
    finally:
        if old < needed:
            sys.setrecursionlimit(old)


class _Parser(TokenCursor):
    def __init__(self, text: str) -> None:
        super().__init__(text, tokenize(text), MAX_TOKENS)
        self.semantics_pos = 0

    # ------------------------------------------------------------------ helpers

    def unsupported(self, what: str, offset: int, hint: str = "") -> UnsupportedQueryError:
        message = f"{what} is not supported by ceql's MATCH_RECOGNIZE"
        return UnsupportedQueryError(message + (f" ({hint})" if hint else ""), self.text, offset)

    def name(self, what: str) -> ast.Name:
        tok = self.tok
        if self.is_name(tok):
            self.advance()
            return ast.Name(str(tok.value), tok.kind == "QIDENT", tok.offset)
        if tok.kind == "IDENT":
            raise QuerySyntaxError(
                f"expected {what}, found keyword {tok.upper} (quote it to use it as a name: \"{tok.text}\")",
                self.text,
                tok.offset,
                what,
            )
        raise self.error(what)

    def enter(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise QuerySyntaxError(f"query nests too deeply (more than {MAX_DEPTH} levels)", self.text, self.tok.offset)

    def leave(self) -> None:
        self.depth -= 1

    def count(self, what: str) -> int:
        tok = self.tok
        if tok.kind != "INT":
            raise self.error(what)
        if int(tok.value) > INT64_MAX:  # type: ignore[arg-type]
            raise QuerySyntaxError(f"integer {tok.text} is out of range", self.text, tok.offset)
        self.advance()
        return int(tok.value)  # type: ignore[arg-type]

    # ------------------------------------------------------------------ query

    def query(self) -> ast.Query:
        if self.is_kw("WITH"):
            raise self.unsupported("WITH (common table expressions)", self.tok.offset)
        self.expect_kw("SELECT")
        if self.is_kw("DISTINCT"):
            raise self.unsupported("SELECT DISTINCT", self.tok.offset)
        if self.is_kw("ALL") and not self.is_op("(", tok=self.peek()):
            self.advance()
        select = self.comma_list(self.select_item)
        self.expect_kw("FROM")
        if self.is_op("("):
            raise self.unsupported("a subquery in FROM", self.tok.offset, "name a table, frame or view")
        table = self.name("a table name")
        if self.is_op("."):
            raise self.unsupported("a qualified table name", self.tok.offset, "name the table alone")
        if self.is_op(","):
            raise self.unsupported("several tables in FROM", self.tok.offset)
        if self.is_kw("AS") or (self.is_name() and not self.is_kw("MATCH_RECOGNIZE")):
            raise self.unsupported(
                "an alias of the input table", self.tok.offset, "MATCH_RECOGNIZE reads the table's columns directly"
            )
        if not self.is_kw("MATCH_RECOGNIZE"):
            if self.is_kw(*_UNSUPPORTED_AFTER_FROM):
                raise self.unsupported(_UNSUPPORTED_AFTER_FROM[self.tok.upper], self.tok.offset)
            raise self.error("MATCH_RECOGNIZE")
        match = self.match_recognize()
        alias = None
        if self.is_kw("AS"):
            self.advance()
            alias = self.name("an alias for the MATCH_RECOGNIZE result")
        elif self.is_name() and not self.is_kw("WHERE"):
            alias = self.name("an alias")
        where = None
        if self.is_kw("WHERE"):
            self.advance()
            where = self.expr()
        if self.is_kw(*_UNSUPPORTED_AFTER_FROM):
            raise self.unsupported(_UNSUPPORTED_AFTER_FROM[self.tok.upper], self.tok.offset)
        if self.is_op(";"):
            self.advance()
        if self.tok.kind != "EOF":
            raise self.error("WHERE or the end of the query")
        return ast.Query(tuple(select), table, match, alias, where, self.text)

    def select_item(self) -> ast.SelectItem:
        start = self.tok.offset
        if self.is_op("*"):
            self.advance()
            return ast.SelectItem(None, None, ast.Name("*", False, start), start)
        if self.is_name() and self.is_op(".", tok=self.peek()) and self.is_op("*", tok=self.peek(2)):
            qualifier = self.name("a name")
            self.advance()
            self.advance()
            return ast.SelectItem(None, None, qualifier, start)
        expr = self.expr()
        name = None
        if self.is_kw("AS"):
            self.advance()
            name = self.name("a column name")
        elif self.is_name():
            name = self.name("a column name")
        return ast.SelectItem(expr, name, None, start)

    # ------------------------------------------------------------------ MATCH_RECOGNIZE

    def comma_list(self, item: Callable[[], T]) -> list[T]:
        """``item [, item ...]``."""
        items = [item()]
        while self.is_op(","):
            self.advance()
            items.append(item())
        return items

    def match_recognize(self) -> ast.MatchRecognize:
        start = self.advance().offset
        self.expect_op("(", "'(' after MATCH_RECOGNIZE")
        partition: list[ast.Name] = []
        order: list[ast.SortKey] = []
        measures: list[ast.Measure] = []
        rows, empty = "ONE", "SHOW"
        skip = ast.Skip("PAST_LAST")
        if self.is_kw("PARTITION"):
            self.advance()
            self.expect_kw("BY")
            partition = self.comma_list(self.partition_column)
        if self.is_kw("ORDER"):
            self.advance()
            self.expect_kw("BY")
            order = self.comma_list(self.sort_key)
        if self.is_kw("MEASURES"):
            self.advance()
            measures = self.comma_list(self.measure)
        if self.is_kw("ONE", "ALL"):
            rows, empty = self.rows_per_match()
        if self.is_kw("AFTER"):
            skip = self.after_match()
        if self.is_kw("INITIAL", "SEEK"):
            raise self.unsupported(f"{self.tok.upper} (row pattern recognition in a window)", self.tok.offset)
        if not self.is_kw("PATTERN"):
            return self._clause_error(
                ["PARTITION", "ORDER", "MEASURES", "ONE", "ALL", "AFTER", "WITHIN", "SUBSET", "DEFINE"],
                "PARTITION BY, ORDER BY, MEASURES, ONE/ALL ROWS PER MATCH, AFTER MATCH SKIP or PATTERN",
            )
        pattern_pos = self.advance().offset
        self.expect_op("(", "'(' after PATTERN")
        if self.is_op(")"):
            pattern: ast.Pattern = ast.PEmpty(self.tok.offset)
        else:
            pattern = self.pattern()
        self.expect_op(")", "')' closing the pattern (or a pattern variable, '|', a quantifier)")
        del pattern_pos
        within = None
        if self.is_kw("WITHIN"):
            self.advance()
            if not self.is_kw("INTERVAL"):
                raise self.error("INTERVAL '...' unit after WITHIN")
            within = self.interval()
        subsets: list[tuple[ast.Name, tuple[ast.Name, ...]]] = []
        if self.is_kw("SUBSET"):
            self.advance()
            subsets = self.comma_list(self.subset)
        defines: list[tuple[ast.Name, ast.Expr]] = []
        if self.is_kw("DEFINE"):
            self.advance()
            defines = self.comma_list(self.define)
        if not self.is_op(")"):
            return self._clause_error(
                ["PARTITION", "ORDER", "MEASURES", "ONE", "ALL", "AFTER", "PATTERN", "WITHIN", "SUBSET"],
                "WITHIN, SUBSET, DEFINE or ')'" if not defines else "',' or ')' closing MATCH_RECOGNIZE",
            )
        self.advance()
        return ast.MatchRecognize(
            tuple(partition), tuple(order), tuple(measures), rows, empty, skip, pattern, within,
            tuple(subsets), tuple(defines), start,
        )

    def _clause_error(self, clauses: list[str], expected: str):
        tok = self.tok
        if self.is_kw(*clauses):
            raise QuerySyntaxError(
                f"clause {tok.upper} is out of place: MATCH_RECOGNIZE's clauses come in the order PARTITION BY, "
                "ORDER BY, MEASURES, ONE/ALL ROWS PER MATCH, AFTER MATCH SKIP, PATTERN, WITHIN, SUBSET, DEFINE",
                self.text,
                tok.offset,
                expected,
            )
        raise self.error(expected)

    def partition_column(self) -> ast.Name:
        name = self.name("a column name")
        if self.is_op(".", "("):
            raise self.unsupported("an expression in PARTITION BY", self.tok.offset, "partition by columns")
        return name

    def sort_key(self) -> ast.SortKey:
        column = self.name("a column name")
        if self.is_op(".", "(", "+", "-", "*", "/"):
            raise self.unsupported("an expression in ORDER BY", self.tok.offset, "order by columns")
        descending = False
        if self.is_kw("ASC", "DESC"):
            descending = self.advance().upper == "DESC"
        nulls_first = descending
        if self.is_kw("NULLS"):
            self.advance()
            nulls_first = self.expect_kw("FIRST", "LAST").upper == "FIRST"
        return ast.SortKey(column, descending, nulls_first)

    def measure(self) -> ast.Measure:
        expr = self.expr()
        if not self.is_kw("AS"):
            raise self.error("AS and the measure's name")
        self.advance()
        return ast.Measure(expr, self.name("the measure's name"))

    def rows_per_match(self) -> tuple[str, str]:
        tok = self.advance()
        if tok.upper == "ONE":
            self.expect_kw("ROW")
            self.expect_kw("PER")
            self.expect_kw("MATCH")
            if self.is_kw("WITH"):
                raise self.unsupported("ONE ROW PER MATCH WITH ...", self.tok.offset)
            return "ONE", "SHOW"
        self.expect_kw("ROWS")
        self.expect_kw("PER")
        self.expect_kw("MATCH")
        if self.is_kw("SHOW", "OMIT"):
            kind = self.advance().upper
            self.expect_kw("EMPTY")
            self.expect_kw("MATCHES")
            return "ALL", kind
        if self.is_kw("WITH"):
            self.advance()
            self.expect_kw("UNMATCHED")
            self.expect_kw("ROWS")
            return "ALL", "UNMATCHED"
        return "ALL", "SHOW"

    def after_match(self) -> ast.Skip:
        self.advance()
        self.expect_kw("MATCH")
        self.expect_kw("SKIP")
        pos = self.tok.offset
        if self.is_kw("PAST"):
            self.advance()
            self.expect_kw("LAST")
            self.expect_kw("ROW")
            return ast.Skip("PAST_LAST", None, pos)
        self.expect_kw("TO")
        if self.is_kw("NEXT") and self.is_kw("ROW", tok=self.peek()):
            self.advance()
            self.advance()
            return ast.Skip("NEXT_ROW", None, pos)
        kind = "LAST"
        if self.is_kw("FIRST", "LAST") and (self.is_name(self.peek())):
            kind = self.advance().upper
        return ast.Skip(kind, self.name("NEXT ROW, FIRST v, LAST v or a pattern variable"), pos)

    def subset(self) -> tuple[ast.Name, tuple[ast.Name, ...]]:
        name = self.name("a union variable name")
        self.expect_op("=", "'=' after the union variable")
        self.expect_op("(", "'(' and the variables of the subset")
        items = self.comma_list(lambda: self.name("a pattern variable"))
        self.expect_op(")", "',' or ')'")
        return name, tuple(items)

    def define(self) -> tuple[ast.Name, ast.Expr]:
        name = self.name("a pattern variable")
        if not self.is_kw("AS"):
            raise self.error("AS and the variable's condition")
        self.advance()
        return name, self.expr()

    # ------------------------------------------------------------------ row patterns

    def pattern(self) -> ast.Pattern:
        self.enter()
        start = self.tok.offset
        items = [self.concatenation()]
        while self.is_op("|"):
            self.advance()
            items.append(self.concatenation())
        self.leave()
        return items[0] if len(items) == 1 else ast.PAlt(start, tuple(items))

    def concatenation(self) -> ast.Pattern:
        start = self.tok.offset
        items = []
        while not (self.is_op(")", "|", "-}", ",") or self.tok.kind == "EOF"):
            items.append(self.quantified())
        if not items:
            raise self.error("a pattern variable, '(', '^', '$', PERMUTE or '{-'")
        return items[0] if len(items) == 1 else ast.PConcat(start, tuple(items))

    def quantified(self) -> ast.Pattern:
        start = self.tok.offset
        body = self.primary_pattern()
        if self.is_op("*", "+", "?"):
            op = self.advance().value
            low, high = {"*": (0, None), "+": (1, None), "?": (0, 1)}[op]  # type: ignore[index]
        elif self.is_op("{"):
            brace = self.advance()
            low, high = 0, None
            if self.tok.kind == "INT":
                low = self.count("a number")
                high = low
                if self.is_op(","):
                    self.advance()
                    high = self.count("a number") if self.tok.kind == "INT" else None
            elif self.is_op(","):
                self.advance()
                high = self.count("a number") if self.tok.kind == "INT" else None
            else:
                raise self.error("a number or ',' in a quantifier")
            self.expect_op("}", "'}' closing the quantifier")
            if high is not None and high < low:
                raise QuerySyntaxError(
                    f"quantifier {{{low},{high}}}: the upper bound is below the lower bound", self.text, brace.offset
                )
        else:
            return body
        greedy = True
        if self.is_op("?"):
            self.advance()
            greedy = False
        if self.is_op("*", "+", "{") or (self.is_op("?")):
            raise QuerySyntaxError(
                "a quantifier cannot follow a quantifier (put the quantified part in parentheses)",
                self.text,
                self.tok.offset,
            )
        return ast.PQuant(start, body, low, high, greedy)

    def primary_pattern(self) -> ast.Pattern:
        tok = self.tok
        if self.is_op("("):
            self.advance()
            if self.is_op(")"):
                self.advance()
                return ast.PEmpty(tok.offset)
            inner = self.pattern()
            self.expect_op(")", "')' (or '|', a pattern variable, a quantifier)")
            return inner
        if self.is_op("^", "$"):
            self.advance()
            return ast.PAnchor(tok.offset, str(tok.value))
        if self.is_op("{-"):
            self.advance()
            inner = self.pattern()
            self.expect_op("-}", "'-}' closing the exclusion")
            return ast.PExclude(tok.offset, inner)
        if self.is_kw("PERMUTE") and self.is_op("(", tok=self.peek()):
            self.advance()
            self.advance()
            items = self.comma_list(self.pattern)
            self.expect_op(")", "',' or ')' closing PERMUTE")
            return ast.PPermute(tok.offset, tuple(items))
        if self.is_name():
            return ast.PVar(tok.offset, self.name("a pattern variable"))
        raise self.error("a pattern variable, '(', '^', '$', PERMUTE or '{-'")

    # ------------------------------------------------------------------ expressions

    def expr(self) -> ast.Expr:
        self.enter()
        items = [self.and_expr()]
        pos = self.tok.offset
        while self.is_kw("OR"):
            self.advance()
            items.append(self.and_expr())
        self.leave()
        return _balanced("OR", pos, items)

    def and_expr(self) -> ast.Expr:
        items = [self.not_expr()]
        pos = self.tok.offset
        while self.is_kw("AND"):
            self.advance()
            items.append(self.not_expr())
        return _balanced("AND", pos, items)

    def not_expr(self) -> ast.Expr:
        if self.is_kw("NOT"):
            tok = self.advance()
            self.enter()
            operand = self.not_expr()
            self.leave()
            return ast.Unary(tok.offset, "NOT", operand)
        return self.predicate()

    def predicate(self) -> ast.Expr:
        left = self.concat_expr()
        tok = self.tok
        if self.is_op("=", "<>", "!=", "<", "<=", ">", ">="):
            self.advance()
            op = "<>" if tok.value == "!=" else str(tok.value)
            right = self.concat_expr()
            if self.is_op("=", "<>", "!=", "<", "<=", ">", ">="):
                raise QuerySyntaxError(
                    "comparisons do not chain (write a < b AND b < c)", self.text, self.tok.offset
                )
            return ast.Binary(tok.offset, op, left, right)
        if self.is_kw("IS"):
            self.advance()
            negated = False
            if self.is_kw("NOT"):
                self.advance()
                negated = True
            if self.is_kw("TRUE", "FALSE", "UNKNOWN", "DISTINCT"):
                raise self.unsupported(f"IS {'NOT ' if negated else ''}{self.tok.upper}", self.tok.offset)
            self.expect_kw("NULL")
            return ast.IsNull(tok.offset, left, negated)
        negated = False
        if self.is_kw("NOT") and self.is_kw("BETWEEN", "IN", "LIKE", tok=self.peek()):
            self.advance()
            negated = True
            tok = self.tok
        if self.is_kw("BETWEEN"):
            self.advance()
            if self.is_kw("SYMMETRIC", "ASYMMETRIC"):
                raise self.unsupported(f"BETWEEN {self.tok.upper}", self.tok.offset)
            low = self.concat_expr()
            self.expect_kw("AND")
            high = self.concat_expr()
            inside = ast.Binary(
                tok.offset,
                "AND",
                ast.Binary(tok.offset, ">=", left, low),
                ast.Binary(tok.offset, "<=", left, high),
            )
            return ast.Unary(tok.offset, "NOT", inside) if negated else inside
        if self.is_kw("IN"):
            self.advance()
            self.expect_op("(", "'(' and a list of values")
            if self.is_kw("SELECT"):
                raise self.unsupported("a subquery in IN", self.tok.offset)
            values = self.comma_list(self.concat_expr)
            self.expect_op(")", "',' or ')'")
            result = _balanced("OR", tok.offset, [ast.Binary(tok.offset, "=", left, value) for value in values])
            return ast.Unary(tok.offset, "NOT", result) if negated else result
        if self.is_kw("LIKE"):
            self.advance()
            pattern = self.tok
            if pattern.kind != "STRING":
                raise self.error("a string literal (the LIKE pattern: % any text, _ one character)")
            self.advance()
            if self.is_kw("ESCAPE"):
                raise self.unsupported("LIKE ... ESCAPE", self.tok.offset)
            like = ast.Binary(tok.offset, "LIKE", left, ast.Literal(pattern.offset, pattern.value, "string"))
            return ast.Unary(tok.offset, "NOT", like) if negated else like
        return left

    def concat_expr(self) -> ast.Expr:
        left = self.additive()
        while self.is_op("||"):
            tok = self.advance()
            left = ast.Binary(tok.offset, "||", left, self.additive())
        return left

    def additive(self) -> ast.Expr:
        left = self.multiplicative()
        while self.is_op("+", "-"):
            tok = self.advance()
            left = ast.Binary(tok.offset, str(tok.value), left, self.multiplicative())
        return left

    def multiplicative(self) -> ast.Expr:
        left = self.unary()
        while self.is_op("*", "/", "%"):
            tok = self.advance()
            left = ast.Binary(tok.offset, str(tok.value), left, self.unary())
        return left

    def unary(self) -> ast.Expr:
        if self.is_op("-", "+"):
            tok = self.advance()
            if tok.value == "-" and self.tok.kind == "INT":
                number = self.advance()
                value = -int(number.value)  # type: ignore[arg-type]
                return ast.Literal(tok.offset, value, "int")
            self.enter()
            operand = self.unary()
            self.leave()
            return ast.Unary(tok.offset, str(tok.value), operand)
        return self.primary()

    def primary(self) -> ast.Expr:
        tok = self.tok
        if tok.kind == "INT":
            self.advance()
            if int(tok.value) > INT64_MAX:  # type: ignore[arg-type]
                raise QuerySyntaxError(f"integer {tok.text} is out of range (at most {INT64_MAX})", self.text, tok.offset)
            return ast.Literal(tok.offset, int(tok.value), "int")  # type: ignore[arg-type]
        if tok.kind == "FLOAT":
            self.advance()
            return ast.Literal(tok.offset, float(tok.value), "double")  # type: ignore[arg-type]
        if tok.kind == "STRING":
            self.advance()
            return ast.Literal(tok.offset, tok.value, "string")
        if self.is_op("("):
            self.advance()
            if self.is_kw("SELECT"):
                raise self.unsupported("a subquery", self.tok.offset)
            inner = self.expr()
            self.expect_op(")", "')'")
            return inner
        if self.is_kw("TRUE", "FALSE"):
            self.advance()
            return ast.Literal(tok.offset, tok.upper == "TRUE", "bool")
        if self.is_kw("NULL"):
            self.advance()
            return ast.Literal(tok.offset, None, "null")
        if self.is_kw("CASE"):
            return self.case()
        if self.is_kw("CAST"):
            return self.cast()
        if self.is_kw("INTERVAL"):
            return self.interval()
        if self.is_kw("CURRENT_TIMESTAMP", "LOCALTIMESTAMP") and not self.is_op("(", tok=self.peek()):
            # the time the query is read (once per query: ceql.sql does not cache such a query's
            # plan, ceql.spark.sql writes the driver's time into the text its tasks read)
            self.advance()
            return ast.TimestampLiteral(tok.offset, tok.upper, time.time_ns(), tok.upper == "CURRENT_TIMESTAMP")
        if self.is_kw("TIMESTAMP") and self.peek().kind == "STRING":
            self.advance()
            text = str(self.advance().value)
            zoned = timestamp_zone(text.strip()) is not None
            return ast.TimestampLiteral(tok.offset, text, self._timestamp(text, tok.offset), zoned)
        if self.is_kw("DECIMAL", "NUMERIC") and self.peek().kind == "STRING":
            self.advance()
            text_tok = self.advance()
            return ast.Literal(tok.offset, self._decimal(str(text_tok.value), text_tok.offset), "decimal")
        if self.is_kw("DATE", "TIME") and self.peek().kind == "STRING":
            raise self.unsupported(f"{tok.upper} literals", tok.offset, "use TIMESTAMP '...'")
        if self.is_kw("RUNNING", "FINAL") and self.peek().kind == "IDENT" and self.is_op("(", tok=self.peek(2)):
            semantics = self.advance().upper
            self.semantics_pos = tok.offset
            call = self.tok
            if call.upper not in NAVIGATIONS | AGGREGATES:
                raise self.error("FIRST, LAST or an aggregate after " + semantics)
            if call.upper in ("PREV", "NEXT"):
                raise QuerySyntaxError(
                    f"{semantics} applies to FIRST, LAST and aggregates, not to {call.upper}",
                    self.text,
                    tok.offset,
                )
            return self.call(semantics)
        if tok.kind == "IDENT" and self.is_op("(", tok=self.peek()) and tok.upper not in RESERVED:
            return self.call(None)
        if self.is_name():
            first = self.name("a column name")
            if self.is_op("."):
                self.advance()
                if self.is_op("*"):
                    raise QuerySyntaxError(f"{first.text}.* is only allowed in COUNT({first.text}.*)", self.text, first.pos)
                second = self.name("a column name")
                if self.is_op("."):
                    raise self.unsupported("a column qualified twice", self.tok.offset)
                return ast.Column(first.pos, first, second)
            return ast.Column(first.pos, None, first)
        raise self.error("an expression")

    def call(self, semantics: str | None) -> ast.Expr:
        tok = self.advance()
        name = tok.upper
        start = self.semantics_pos if semantics else tok.offset  # RUNNING/FINAL starts the call
        self.expect_op("(")
        self.enter()
        try:
            if name in NAVIGATIONS:
                arg = self.expr()
                offset = 1 if name in ("PREV", "NEXT") else 0
                if self.is_op(","):
                    self.advance()
                    offset = self.count("a non-negative whole number (the offset)")
                self.expect_op(")", "')' (or ',' and an offset)")
                return ast.Navigation(start, name, arg, offset, semantics)
            if name in AGGREGATES:
                if self.is_kw("DISTINCT"):
                    raise self.unsupported(f"{name}(DISTINCT ...)", self.tok.offset)
                if self.is_kw("ALL"):
                    self.advance()
                star_pos = self.tok.offset
                if name == "COUNT" and self.is_op("*"):
                    self.advance()
                    arg: ast.Expr = ast.Star(star_pos, None)
                elif (
                    name == "COUNT"
                    and self.is_name()
                    and self.is_op(".", tok=self.peek())
                    and self.is_op("*", tok=self.peek(2))
                ):
                    var = self.name("a pattern variable")
                    self.advance()
                    self.advance()
                    arg = ast.Star(star_pos, var)
                elif name == "COUNT" and self.is_op(")"):
                    arg = ast.Star(star_pos, None)
                else:
                    arg = self.expr()
                key = None
                if name in KEYED_AGGREGATES:
                    self.expect_op(",", f"',' and the key ({name} takes a value and a key)")
                    key = self.expr()
                if self.is_op(","):
                    raise self.unsupported(f"{name} with several arguments", self.tok.offset)
                self.expect_op(")", "')'")
                if self.is_kw("FILTER", "OVER", "WITHIN", "ORDER"):
                    raise self.unsupported(f"{self.tok.upper} after an aggregate", self.tok.offset)
                return ast.Aggregate(start, name, arg, semantics, key)
            if name == "CLASSIFIER":
                var = None if self.is_op(")") else self.name("a pattern variable or ')'")
                self.expect_op(")", "')'")
                return ast.Classifier(tok.offset, var)
            if name == "MATCH_NUMBER":
                self.expect_op(")", "')' (MATCH_NUMBER takes no argument)")
                return ast.MatchNumber(tok.offset)
            if name in SCALARS:
                args = self.comma_list(self.expr)
                self.expect_op(")", "',' or ')'")
                if name == "ABS" and len(args) != 1:
                    raise QuerySyntaxError("ABS takes one argument", self.text, tok.offset)
                return ast.Function(tok.offset, name, tuple(args))
            if name == "MATCH_ROWTIME":  # Flink's: the time of the match's last row
                self.expect_op(")", "')' (ceql's MATCH_ROWTIME takes no argument)")
                return ast.Function(tok.offset, name, ())
            if name in ("MATCH_PROCTIME", "PROCTIME"):
                raise self.unsupported(f"{name}()", tok.offset)
            raise self.unsupported(
                f"function {name}",
                tok.offset,
                "supported: PREV, NEXT, FIRST, LAST, COUNT, SUM, AVG, MIN, MAX, BOOL_AND, BOOL_OR, EVERY, COUNT_IF, "
                "ARBITRARY, ANY_VALUE, ARRAY_AGG, MAX_BY, MIN_BY, CLASSIFIER, MATCH_NUMBER, ABS, COALESCE, LOWER, UPPER, "
                "CONCAT_WS, CONCAT, SQRT, LN, EXP, POWER, FLOOR, CEIL, ROUND, SIGN, MOD, GREATEST, LEAST, LENGTH, "
                "SUBSTRING",
            )
        finally:
            self.leave()

    def case(self) -> ast.Expr:
        start = self.advance().offset
        operand = None
        if not self.is_kw("WHEN"):
            operand = self.expr()
        whens = []
        while self.is_kw("WHEN"):
            self.advance()
            condition = self.expr()
            self.expect_kw("THEN")
            whens.append((condition, self.expr()))
        if not whens:
            raise self.error("WHEN")
        otherwise = None
        if self.is_kw("ELSE"):
            self.advance()
            otherwise = self.expr()
        self.expect_kw("END")
        return ast.Case(start, operand, tuple(whens), otherwise)

    def cast(self) -> ast.Expr:
        start = self.advance().offset
        self.expect_op("(", "'(' after CAST")
        operand = self.expr()
        self.expect_kw("AS")
        type_tok = self.tok
        if type_tok.kind != "IDENT":
            raise self.error("a type name")
        self.advance()
        word = type_tok.upper
        if word == "DOUBLE" and self.is_kw("PRECISION"):
            self.advance()
        if word == "TIMESTAMP":
            type_name = "TIMESTAMP"
            if self.is_op("("):
                self.advance()
                self.count("a precision")
                self.expect_op(")")
        elif word in ("DECIMAL", "NUMERIC", "DEC"):
            # DECIMAL(p, s), DECIMAL(p) (scale 0) or DECIMAL (Trino's default: precision 38, scale 0)
            precision, scale = 38, 0
            if self.is_op("("):
                self.advance()
                precision = self.count("a precision")
                if self.is_op(","):
                    self.advance()
                    scale = self.count("a scale")
                self.expect_op(")")
            if not 1 <= precision <= 38 or scale > precision:
                raise QuerySyntaxError(
                    f"DECIMAL({precision}, {scale}): the precision is 1 to 38 and the scale at most the precision",
                    self.text,
                    type_tok.offset,
                )
            type_name = f"DECIMAL({precision},{scale})"
        elif word in CAST_TYPES:
            type_name = CAST_TYPES[word]
            if self.is_op("(") and type_name == "VARCHAR":
                self.advance()
                self.count("a length")
                self.expect_op(")")
        else:
            raise self.unsupported(
                f"CAST to {word}", type_tok.offset, "supported: BIGINT, INT, DOUBLE, DECIMAL, VARCHAR, BOOLEAN, TIMESTAMP"
            )
        self.expect_op(")", "')' closing CAST")
        return ast.Cast(start, operand, type_name, type_tok.offset)

    def _decimal(self, text: str, pos: int) -> Decimal:
        """The value of ``DECIMAL '...'``: digits with an optional sign and point, exact."""
        try:
            if not re.fullmatch(r"\s*[+-]?(\d+\.?\d*|\.\d+)\s*", text):
                raise InvalidOperation
            return Decimal(text.strip())
        except InvalidOperation:
            raise QuerySyntaxError(f"DECIMAL '{text}' is not a decimal number", self.text, pos) from None

    def interval(self) -> ast.IntervalLiteral:
        start = self.advance().offset
        negative = False
        if self.is_op("-"):
            self.advance()
            negative = True
        if self.tok.kind != "STRING":
            raise self.error("a quoted interval such as '10' after INTERVAL")
        value_tok = self.advance()
        unit_tok = self.tok
        unit = _UNIT_ALIASES.get(unit_tok.upper, unit_tok.upper)
        if unit in ("YEAR", "MONTH", "YEARS", "MONTHS"):
            raise self.unsupported(f"INTERVAL ... {unit}", unit_tok.offset, "months and years have no fixed length")
        if unit not in INTERVAL_UNITS and unit_tok.kind == "IDENT" and unit in grammar.TIME_UNIT_NAMES:
            # MILLISECOND(S), MICROSECOND(S), NANOSECOND(S): CEQL's units, read as CEQL reads them
            self.advance()
            nanos = parse_interval(str(value_tok.value).strip(), unit)
            if isinstance(nanos, str):
                raise QuerySyntaxError(f"INTERVAL: {nanos}", self.text, value_tok.offset)
            return ast.IntervalLiteral(start, value_tok.text, -nanos if negative else nanos)
        if unit not in INTERVAL_UNITS:
            raise self.error("DAY, HOUR, MINUTE, SECOND or MILLISECOND")
        self.advance()
        self._precision()
        last_unit = unit
        if self.is_kw("TO"):
            self.advance()
            last_tok = self.tok
            last_unit = _UNIT_ALIASES.get(last_tok.upper, last_tok.upper)
            order = list(INTERVAL_UNITS)
            if last_unit not in INTERVAL_UNITS or order.index(last_unit) <= order.index(unit):
                raise self.error(f"a unit smaller than {unit} after TO")
            self.advance()
            self._precision()
        nanos = self._interval_nanos(str(value_tok.value), unit, last_unit, value_tok.offset)
        return ast.IntervalLiteral(start, value_tok.text, -nanos if negative else nanos)

    def _precision(self) -> None:
        if self.is_op("("):
            self.advance()
            self.count("a precision")
            self.expect_op(")")

    def _interval_nanos(self, text: str, first: str, last: str, offset: int) -> int:
        """'10' SECOND, '1.5' SECOND, '1:30' MINUTE TO SECOND, '2 03:00:00' DAY TO SECOND."""
        units = list(INTERVAL_UNITS)
        wanted = units[units.index(first) : units.index(last) + 1]
        value = text.strip()
        sign = 1
        if value.startswith("-"):
            sign, value = -1, value[1:]
        parts = re.split(r"[ :]", value) if len(wanted) > 1 else [value]
        if len(parts) != len(wanted) or not all(re.fullmatch(r"\d+(\.\d+)?", p) for p in parts):
            raise QuerySyntaxError(
                f"interval '{text}' does not match {first}{' TO ' + last if last != first else ''}",
                self.text,
                offset,
            )
        total = Fraction(0)
        for part, unit in zip(parts, wanted):
            if "." in part and unit != wanted[-1]:
                raise QuerySyntaxError(f"interval '{text}': only the last field may have a fraction", self.text, offset)
            total += Fraction(part) * INTERVAL_UNITS[unit]
        if total.denominator != 1:
            raise QuerySyntaxError(f"interval '{text}' is not a whole number of nanoseconds", self.text, offset)
        if total > INT64_MAX:
            raise QuerySyntaxError(f"interval '{text}' is too long", self.text, offset)
        return sign * int(total)

    def _timestamp(self, text: str, offset: int) -> int:
        """A TIMESTAMP literal's nanoseconds since the epoch, read as CEQL reads one
        (``ceql.lang.timetext``, shared by both languages): ISO-8601, a space or ``T``, an
        optional ``Z`` or offset; without one, UTC."""
        value = parse_timestamp(text.strip())
        if isinstance(value, str):
            raise QuerySyntaxError(f"TIMESTAMP {value}", self.text, offset)
        return value


