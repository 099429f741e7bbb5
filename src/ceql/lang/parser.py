"""A hand-written recursive-descent parser for CEQL queries.

Precedence of formula operators, tightest first (CORE++ order, then the extensions):
``AS``/``+``/``:+`` (postfix), ``;``, ``:``, ``AND``, ``ALL``, ``UNLESS``, ``OR``, ``FILTER``.
A FILTER condition extends as far as it can. Nesting is bounded (``MAX_DEPTH``) and so is the
query size (``MAX_TOKENS``), so that hostile input fails with a QuerySyntaxError, never with a
RecursionError.
"""

from __future__ import annotations

from ceql.errors import QuerySyntaxError
from ceql.lang import ast
from ceql.lang.lexer import KEYWORDS, Token, tokenize

MAX_DEPTH = 64  # parenthesis / prefix nesting while parsing
MAX_TREE_DEPTH = 150  # depth of the resulting tree (later passes recurse over it)
MAX_TOKENS = 200_000

_COMPARISON_OPS = {"=": "=", "==": "=", "!=": "!=", "<>": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}
_NS_PER_UNIT = {
    "HOUR": 3600 * 10**9,
    "HOURS": 3600 * 10**9,
    "MINUTE": 60 * 10**9,
    "MINUTES": 60 * 10**9,
    "SECOND": 10**9,
    "SECONDS": 10**9,
}


def parse_query(text: str) -> ast.Query:
    """Parse one CEQL query. Raises QuerySyntaxError with line, column and what was expected."""
    query = _Parser(text).parse_query()
    check_tree_depth(query, text)
    return query


def check_tree_depth(root: ast.Node, text: str | None = None) -> None:
    """Reject trees deeper than MAX_TREE_DEPTH (iteratively, so this check cannot overflow)."""
    stack: list[tuple[object, int]] = [(root, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, tuple):
            stack.extend((item, depth) for item in value)
            continue
        if not isinstance(value, ast.Node):
            continue
        if depth > MAX_TREE_DEPTH:
            raise QuerySyntaxError(
                f"query nests too deeply (more than {MAX_TREE_DEPTH} levels)",
                text,
                value.pos if value.pos >= 0 else 0,
            )
        for name in value.__dataclass_fields__:
            if name != "pos":
                stack.append((getattr(value, name), depth + 1))


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = tokenize(text)
        if len(self.tokens) > MAX_TOKENS:
            raise QuerySyntaxError(
                f"query too large ({len(self.tokens)} tokens; at most {MAX_TOKENS})", text, 0
            )
        self.i = 0
        self.depth = 0

    # ------------------------------------------------------------------ token helpers

    @property
    def tok(self) -> Token:
        return self.tokens[self.i]

    def peek(self, k: int = 1) -> Token:
        return self.tokens[min(self.i + k, len(self.tokens) - 1)]

    def advance(self) -> Token:
        tok = self.tokens[self.i]
        if tok.kind != "EOF":
            self.i += 1
        return tok

    def error(self, expected: str, tok: Token | None = None) -> QuerySyntaxError:
        tok = tok or self.tok
        return QuerySyntaxError(
            f"expected {expected}, found {tok.describe()}", self.text, tok.offset, expected
        )

    def is_kw(self, *words: str, tok: Token | None = None) -> bool:
        tok = tok or self.tok
        return tok.kind == "IDENT" and tok.upper in words

    def is_op(self, *ops: str, tok: Token | None = None) -> bool:
        tok = tok or self.tok
        return tok.kind == "OP" and tok.value in ops

    def expect_kw(self, word: str) -> Token:
        if not self.is_kw(word):
            raise self.error(word)
        return self.advance()

    def expect_op(self, op: str) -> Token:
        if not self.is_op(op):
            raise self.error(f"'{op}'")
        return self.advance()

    def is_name(self, tok: Token | None = None) -> bool:
        tok = tok or self.tok
        return tok.kind == "QIDENT" or (tok.kind == "IDENT" and tok.upper not in KEYWORDS)

    def expect_name(self, what: str) -> Token:
        tok = self.tok
        if self.is_name(tok):
            return self.advance()
        if tok.kind == "IDENT":
            raise QuerySyntaxError(
                f"expected {what}, found keyword {tok.upper} (back-quote it to use it as a name: "
                f"`{tok.text}`)",
                self.text,
                tok.offset,
                what,
            )
        raise self.error(what)

    def name_value(self, tok: Token) -> str:
        return str(tok.value)

    def enter(self, tok: Token) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise QuerySyntaxError(
                f"query nests too deeply (more than {MAX_DEPTH} levels)", self.text, tok.offset
            )

    def leave(self) -> None:
        self.depth -= 1

    # ------------------------------------------------------------------ query

    def parse_query(self) -> ast.Query:
        start = self.expect_kw("SELECT")
        strategy = None
        if self.is_kw(*ast.STRATEGIES) and not self.is_op(",", tok=self.peek()):
            # "SELECT ALL *" / "SELECT LAST x": a strategy is followed by the projection.
            nxt = self.peek()
            if self.is_op("*", tok=nxt) or self.is_name(nxt) or self.is_kw("NONE", tok=nxt):
                strategy = self.advance().upper
        projection = self.parse_projection()
        streams: list[str] = []
        streams_pos: list[int] = []
        if self.is_kw("FROM"):
            self.advance()
            while True:
                tok = self.expect_name("a stream name")
                streams.append(self.name_value(tok))
                streams_pos.append(tok.offset)
                if not self.is_op(","):
                    break
                self.advance()
        if not self.is_kw("WHERE"):
            raise self.error("FROM or WHERE" if not streams else "',' or WHERE")
        self.advance()
        formula = self.parse_formula()
        partition_by: list[tuple[str, ...]] = []
        within = None
        consume = None
        limit = None
        limit_pos = -1
        partition_pos = -1
        if self.is_kw("PARTITION"):
            partition_pos = self.advance().offset
            self.expect_kw("BY")
            partition_by.append(self.parse_attribute_list())
            if self.is_op(","):
                self.advance()
                partition_by.append(self.parse_attribute_list())
        if self.is_kw("WITHIN"):
            self.advance()
            within = self.parse_within()
        if self.is_kw("CONSUME"):
            self.advance()
            self.expect_kw("BY")
            if not self.is_kw(*ast.CONSUME_POLICIES):
                raise self.error("ANY, PARTITION or NONE")
            consume = self.advance().upper
        if self.is_kw("LIMIT"):
            self.advance()
            tok = self.tok
            if tok.kind != "INT":
                raise self.error("a whole number after LIMIT")
            limit = int(self.advance().value)
            limit_pos = tok.offset
        if self.tok.kind != "EOF":
            raise self.error(self._expected_after_formula(partition_by, within, consume, limit))
        return ast.Query(
            projection=projection,
            formula=formula,
            strategy=strategy,
            streams=tuple(streams),
            partition_by=tuple(partition_by),
            within=within,
            consume=consume,
            limit=limit,
            limit_pos=limit_pos,
            streams_pos=tuple(streams_pos),
            partition_pos=partition_pos,
            pos=start.offset,
        )

    def _expected_after_formula(self, partition_by, within, consume, limit) -> str:
        options = []
        if not partition_by and within is None and consume is None and limit is None:
            options += ["an operator", "FILTER", "PARTITION BY"]
        if within is None and consume is None and limit is None:
            options.append("WITHIN")
        if consume is None and limit is None:
            options.append("CONSUME BY")
        if limit is None:
            options.append("LIMIT")
        options.append("end of query")
        return ", ".join(options[:-1]) + " or " + options[-1] if len(options) > 1 else options[0]

    def parse_projection(self) -> ast.Projection:
        tok = self.tok
        if self.is_op("*"):
            self.advance()
            return ast.Projection("star", pos=tok.offset)
        if self.is_kw("NONE"):
            self.advance()
            return ast.Projection("none", pos=tok.offset)
        if not self.is_name():
            raise self.error("'*', NONE or a list of labels to report")
        items = [self.parse_projection_item()]
        while self.is_op(","):
            self.advance()
            items.append(self.parse_projection_item())
        return ast.Projection("list", tuple(items), pos=tok.offset)

    def parse_projection_item(self) -> ast.ProjectionItem:
        tok = self.expect_name("a label")
        stream, label = None, self.name_value(tok)
        if self.is_op(">"):
            self.advance()
            stream, label = label, self.name_value(self.expect_name("an event type name"))
        attributes = None
        if self.is_op("["):
            self.advance()
            names = [self.name_value(self.expect_name("an attribute name"))]
            while self.is_op(","):
                self.advance()
                names.append(self.name_value(self.expect_name("an attribute name")))
            self.expect_op("]")
            attributes = tuple(names)
        return ast.ProjectionItem(label, attributes, stream, pos=tok.offset)

    def parse_attribute_list(self) -> tuple[str, ...]:
        self.expect_op("[")
        names = [self.name_value(self.expect_name("an attribute name"))]
        while self.is_op(","):
            self.advance()
            names.append(self.name_value(self.expect_name("an attribute name")))
        self.expect_op("]")
        return tuple(names)

    def parse_within(self) -> ast.Within:
        start = self.tok
        if start.kind not in ("INT", "FLOAT"):
            raise self.error("a number after WITHIN (n EVENTS, a time span or n [attribute])")
        nxt = self.peek()
        if self.is_kw("EVENTS", tok=nxt) or self.is_op("[", tok=nxt):
            if start.kind != "INT":
                raise QuerySyntaxError(
                    "the size of an EVENTS or attribute window must be a whole number",
                    self.text,
                    start.offset,
                )
            self.advance()
            if self.is_kw("EVENTS"):
                self.advance()
                return ast.Within("events", int(start.value), pos=start.offset)
            self.advance()
            attribute = self.name_value(self.expect_name("an attribute name"))
            self.expect_op("]")
            return ast.Within("attribute", int(start.value), attribute, pos=start.offset)
        total = 0
        seen: list[str] = []
        order = ["HOURS", "MINUTES", "SECONDS"]
        while self.tok.kind in ("INT", "FLOAT"):
            number = self.advance()
            if not self.is_kw(*_NS_PER_UNIT):
                raise self.error("EVENTS, HOURS, MINUTES, SECONDS or '[attribute]'")
            unit_tok = self.advance()
            unit = unit_tok.upper.rstrip("S") + "S"
            if seen and order.index(unit) <= order.index(seen[-1]):
                raise QuerySyntaxError(
                    f"{unit} cannot follow {seen[-1]} (write hours, then minutes, then seconds)",
                    self.text,
                    unit_tok.offset,
                )
            seen.append(unit)
            total += round(float(number.value) * _NS_PER_UNIT[unit])
        return ast.Within("time", int(total), pos=start.offset)

    # ------------------------------------------------------------------ formulas

    def parse_formula(self) -> ast.Formula:
        """FILTER level (loosest): ``f FILTER cond [FILTER cond ...]``."""
        body = self.parse_or()
        while self.is_kw("FILTER"):
            tok = self.advance()
            cond = self.parse_cond()
            body = ast.Filter(body, cond, pos=tok.offset)
        return body

    def _nary(self, next_level, keyword_or_op: str, make, is_keyword: bool = True):
        first = next_level()
        parts = [first]
        while self.is_kw(keyword_or_op) if is_keyword else self.is_op(keyword_or_op):
            self.advance()
            parts.append(next_level())
        if len(parts) == 1:
            return first
        return make(tuple(parts), first.pos)

    def parse_or(self) -> ast.Formula:
        return self._nary(self.parse_unless, "OR", lambda p, pos: ast.Union_(p, pos=pos))

    def parse_unless(self) -> ast.Formula:
        left = self.parse_all()
        while self.is_kw("UNLESS"):
            self.advance()
            right = self.parse_all()
            left = ast.Unless(left, right, pos=left.pos)
        return left

    def parse_all(self) -> ast.Formula:
        return self._nary(self.parse_and, "ALL", lambda p, pos: ast.AllOf(p, pos=pos))

    def parse_and(self) -> ast.Formula:
        return self._nary(self.parse_colon, "AND", lambda p, pos: ast.Conjunction(p, pos=pos))

    def parse_colon(self) -> ast.Formula:
        return self._nary(self.parse_semicolon, ":", lambda p, pos: ast.Sequence(p, True, pos=pos), False)

    def parse_semicolon(self) -> ast.Formula:
        return self._nary(self.parse_postfix, ";", lambda p, pos: ast.Sequence(p, False, pos=pos), False)

    def parse_postfix(self) -> ast.Formula:
        body = self.parse_primary()
        steps = 0
        while True:
            if self.is_kw("AS"):
                tok = self.advance()
                label = self.name_value(self.expect_name("a label name after AS"))
                body = ast.Label(body, label, pos=body.pos)
            elif self.is_op("+", ":+"):
                tok = self.advance()
                body = ast.Iteration(body, tok.value == ":+", pos=body.pos)
            else:
                return body
            steps += 1
            if steps + self.depth > MAX_DEPTH:
                raise QuerySyntaxError(
                    f"query nests too deeply (more than {MAX_DEPTH} levels)", self.text, tok.offset
                )

    def parse_primary(self) -> ast.Formula:
        tok = self.tok
        if self.is_op("("):
            self.advance()
            self.enter(tok)
            inner = self.parse_formula()
            self.leave()
            if not self.is_op(")"):
                raise self.error("')' or an operator")
            self.advance()
            return inner
        if self.is_kw("NOT"):
            self.advance()
            self.expect_op("(")
            atom = self.parse_event_type()
            cond = None
            if self.is_kw("FILTER"):
                self.advance()
                self.enter(tok)
                cond = self.parse_cond()
                self.leave()
                while self.is_kw("FILTER"):
                    self.advance()
                    cond = ast.And((cond, self.parse_cond()), pos=cond.pos)
            if not self.is_op(")"):
                raise self.error("FILTER or ')' (NOT takes one event type)")
            self.advance()
            return ast.NotEvent(atom, cond, pos=tok.offset)
        if self.is_name():
            return self.parse_event_type()
        raise self.error("an event type, '(' or NOT(...)")

    def parse_event_type(self) -> ast.EventType:
        tok = self.expect_name("an event type name")
        if self.is_op(">") and self.is_name(self.peek()):
            self.advance()
            name_tok = self.advance()
            return ast.EventType(self.name_value(name_tok), self.name_value(tok), pos=tok.offset)
        return ast.EventType(self.name_value(tok), pos=tok.offset)

    # ------------------------------------------------------------------ conditions

    def parse_cond(self) -> ast.Cond:
        return self._bool_chain(self.parse_cond_and, "OR", ast.Or)

    def parse_cond_and(self) -> ast.Cond:
        return self._bool_chain(self.parse_cond_atom, "AND", ast.And)

    def _bool_chain(self, next_level, word: str, cls):
        first = next_level()
        parts = [first]
        while self.is_kw(word):
            self.advance()
            parts.append(next_level())
        return first if len(parts) == 1 else cls(tuple(parts), pos=first.pos)

    def parse_cond_atom(self) -> ast.Cond:
        tok = self.tok
        if self.is_op("("):
            # Either a parenthesised condition or an arithmetic expression: try the first.
            saved = self.i
            self.advance()
            self.enter(tok)
            try:
                inner = self.parse_cond()
                closed = self.is_op(")")
            except QuerySyntaxError:
                closed = False
            self.leave()
            if closed and not self._starts_expression_continuation(self.peek()):
                self.advance()
                return inner
            self.i = saved
            return self.parse_cross_comparison()
        if self.is_name():
            nxt = self.peek()
            if self.is_op("[", tok=nxt):
                label_tok = self.advance()
                return self.parse_label_cond(None, label_tok)
            if self.is_op(">", tok=nxt) and self.is_name(self.peek(2)) and self.is_op("[", tok=self.peek(3)):
                stream_tok = self.advance()
                self.advance()
                label_tok = self.advance()
                return self.parse_label_cond(self.name_value(stream_tok), label_tok)
            if self.is_op(".", tok=nxt):
                return self.parse_cross_comparison()
            self.advance()
            raise self.error("'[' or '.' after a label in a FILTER condition (x[pred] or x.attr)")
        if tok.kind in ("INT", "FLOAT", "STRING") or self.is_op("-", "+") or self.is_kw("TRUE", "FALSE"):
            return self.parse_cross_comparison()
        raise self.error("a condition: label[predicate], x.attr op y.attr, or '('")

    def _starts_expression_continuation(self, tok: Token) -> bool:
        return tok.kind == "OP" and tok.value in ("+", "-", "*", "/", "%", *_COMPARISON_OPS)

    def parse_label_cond(self, stream: str | None, label_tok: Token) -> ast.LabelCond:
        self.expect_op("[")
        self.enter(label_tok)
        pred = self.parse_pred()
        self.leave()
        if not self.is_op("]"):
            raise self.error("']' or AND/OR")
        self.advance()
        return ast.LabelCond(self.name_value(label_tok), pred, stream, pos=label_tok.offset)

    def parse_cross_comparison(self) -> ast.Compare:
        left = self.parse_expr(labelled=True)
        tok = self.tok
        if not self.is_op(*_COMPARISON_OPS):
            raise self.error("a comparison operator (=, !=, <, <=, >, >=)")
        self.advance()
        right = self.parse_expr(labelled=True)
        return ast.Compare(_COMPARISON_OPS[tok.value], left, right, pos=left.pos)

    # ------------------------------------------------------------------ predicates (one event)

    def parse_pred(self) -> ast.Pred:
        return self._bool_chain(self.parse_pred_and, "OR", ast.Or)

    def parse_pred_and(self) -> ast.Pred:
        return self._bool_chain(self.parse_pred_not, "AND", ast.And)

    def parse_pred_not(self) -> ast.Pred:
        tok = self.tok
        if self.is_kw("NOT"):
            self.advance()
            self.enter(tok)
            operand = self.parse_pred_not()
            self.leave()
            return ast.Not(operand, pos=tok.offset)
        return self.parse_pred_atom()

    def parse_pred_atom(self) -> ast.Pred:
        tok = self.tok
        if self.is_op("("):
            saved = self.i
            self.advance()
            self.enter(tok)
            try:
                inner = self.parse_pred()
                closed = self.is_op(")")
            except QuerySyntaxError:
                closed = False
            self.leave()
            if (
                closed
                and not self._starts_expression_continuation(self.peek())
                and not self.is_kw("IN", "LIKE", "NOT", tok=self.peek())
            ):
                self.advance()
                return inner
            self.i = saved
        left = self.parse_expr(labelled=False)
        tok = self.tok
        if self.is_op(*_COMPARISON_OPS):
            self.advance()
            right = self.parse_expr(labelled=False)
            return ast.Compare(_COMPARISON_OPS[tok.value], left, right, pos=left.pos)
        if self.is_kw("LIKE"):
            self.advance()
            if self.tok.kind != "STRING":
                raise self.error("a quoted regular expression after LIKE")
            return ast.Like(left, str(self.advance().value), pos=left.pos)
        negated = False
        if self.is_kw("NOT") and self.is_kw("IN", tok=self.peek()):
            self.advance()
            negated = True
        if self.is_kw("IN"):
            self.advance()
            if self.is_kw("RANGE"):
                if negated:
                    raise QuerySyntaxError(
                        "NOT IN RANGE is not CEQL; write NOT (x IN RANGE(a, b))",
                        self.text,
                        self.tok.offset,
                    )
                self.advance()
                self.expect_op("(")
                low = self.parse_expr(labelled=False)
                self.expect_op(",")
                high = self.parse_expr(labelled=False)
                self.expect_op(")")
                return ast.InRange(left, low, high, pos=left.pos)
            return self.parse_value_seq(left, negated)
        raise self.error("a comparison, LIKE, IN, NOT IN or IN RANGE")

    def parse_value_seq(self, operand: ast.Expr, negated: bool) -> ast.Pred:
        self.expect_op("{")
        if self.is_op(".."):
            self.advance()
            high = self.parse_signed_number()
            self.expect_op("}")
            return ast.InInterval(operand, None, high, negated, pos=operand.pos)
        first = self.parse_set_value()
        if self.is_op(".."):
            if isinstance(first, (str, bool)):
                raise self.error("a number before '..'")
            self.advance()
            high = None
            if not self.is_op("}"):
                high = self.parse_signed_number()
            self.expect_op("}")
            return ast.InInterval(operand, first, high, negated, pos=operand.pos)
        values = [first]
        while self.is_op(","):
            self.advance()
            values.append(self.parse_set_value())
        if not self.is_op("}"):
            raise self.error("',' or '}'")
        self.advance()
        return ast.InSet(operand, tuple(values), negated, pos=operand.pos)

    def parse_set_value(self):
        if self.tok.kind == "STRING":
            return str(self.advance().value)
        if self.is_kw("TRUE", "FALSE"):
            return self.advance().upper == "TRUE"
        return self.parse_signed_number()

    def parse_signed_number(self) -> int | float:
        sign = 1
        if self.is_op("-", "+"):
            sign = -1 if self.advance().value == "-" else 1
        if self.tok.kind not in ("INT", "FLOAT"):
            raise self.error("a number")
        return sign * self.advance().value

    # ------------------------------------------------------------------ arithmetic expressions

    def parse_expr(self, labelled: bool) -> ast.Expr:
        left = self.parse_term(labelled)
        while self.is_op("+", "-"):
            op = self.advance().value
            right = self.parse_term(labelled)
            left = ast.Arith(op, left, right, pos=left.pos)
        return left

    def parse_term(self, labelled: bool) -> ast.Expr:
        left = self.parse_unary(labelled)
        while self.is_op("*", "/", "%"):
            op = self.advance().value
            right = self.parse_unary(labelled)
            left = ast.Arith(op, left, right, pos=left.pos)
        return left

    def parse_unary(self, labelled: bool) -> ast.Expr:
        tok = self.tok
        if self.is_op("-", "+"):
            self.advance()
            self.enter(tok)
            operand = self.parse_unary(labelled)
            self.leave()
            return ast.Neg(operand, pos=tok.offset) if tok.value == "-" else operand
        return self.parse_operand(labelled)

    def parse_operand(self, labelled: bool) -> ast.Expr:
        tok = self.tok
        if self.is_op("("):
            self.advance()
            self.enter(tok)
            inner = self.parse_expr(labelled)
            self.leave()
            self.expect_op(")")
            return inner
        if tok.kind in ("INT", "FLOAT", "STRING"):
            self.advance()
            return ast.Literal(tok.value, pos=tok.offset)
        if self.is_kw("TRUE", "FALSE"):
            self.advance()
            return ast.Literal(tok.upper == "TRUE", pos=tok.offset)
        if self.is_name():
            self.advance()
            if labelled:
                if not self.is_op("."):
                    raise self.error("'.' and an attribute name (label.attribute)")
                self.advance()
                attr = self.expect_name("an attribute name")
                return ast.Attr(self.name_value(attr), self.name_value(tok), pos=tok.offset)
            return ast.Attr(self.name_value(tok), pos=tok.offset)
        if labelled:
            raise self.error("a value or label.attribute")
        raise self.error("an attribute name, a number or a string")
