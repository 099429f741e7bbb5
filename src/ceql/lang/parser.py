"""A hand-written recursive-descent parser for CEQL queries.

Operator precedence comes from ``grammar.py`` (shared with the printer). Nesting is bounded
(``MAX_DEPTH``) and so is the query size (``MAX_TOKENS``), so that hostile input fails with a
QuerySyntaxError, never with a RecursionError.

Words with a meaning only in context are not reserved: function names (``COUNT(``, ``FIRST(``,
...) are recognised by the ``(`` that follows, ``START(`` and ``PROJECT[`` likewise, time
literals (``TIMESTAMP '...'``, ``INTERVAL '...' UNIT``) by the quoted text, and time units only
after a number (``WITHIN 10 MINUTES``, ``p.ts + 10 MINUTES``) or an interval's text.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from fractions import Fraction
from typing import Any

from ceql.errors import QuerySyntaxError, did_you_mean
from ceql.lang import ast, grammar
from ceql.lang.lexer import KEYWORDS, Token, tokenize
from ceql.lang.printer import print_expr
from ceql.lang.scanner import TokenCursor
from ceql.lang.timetext import TIMESTAMP_EXAMPLE, parse_interval, parse_timestamp
from ceql.lang.visit import walk_depth

MAX_DEPTH = 64  # parenthesis / prefix nesting while parsing
MAX_TREE_DEPTH = 150  # depth of the resulting tree (later passes recurse over it)
MAX_TOKENS = 200_000


def parse_query(text: str) -> ast.Query:
    """Parse one CEQL query. Raises QuerySyntaxError with line, column and what was expected."""
    query = _Parser(text).parse_query()
    check_tree_depth(query, text)
    return query


def check_tree_depth(root: ast.Node, text: str | None = None) -> None:
    """Reject trees deeper than MAX_TREE_DEPTH (iteratively, so this check cannot overflow)."""
    for node, depth in walk_depth(root):
        if depth > MAX_TREE_DEPTH:
            raise QuerySyntaxError(
                f"query nests too deeply (more than {MAX_TREE_DEPTH} levels)",
                text,
                node.pos if node.pos >= 0 else 0,
            )


_INFIX_NODES = {
    "OR": ast.Union_,
    "ALL": ast.AllOf,
    "AND": ast.Conjunction,
}


class _Parser(TokenCursor):
    def __init__(self, text: str) -> None:
        super().__init__(text, tokenize(text), MAX_TOKENS)
        # Formulas written in parentheses: a quantifier inside them is not an element of an
        # enclosing ':' chain (so `A : (B{2}) : C` joins the two B's with ';').
        self.parenthesized: set[int] = set()

    # ------------------------------------------------------------------ token helpers

    def hint(self, expected: str, tok: Token) -> str:
        """What a user most likely meant: a keyword of ``expected`` they misspelt (``WTIHIN``),
        or, for a condition written where a formula goes (the SQL habit ``WHERE view AS v AND
        v.price > 3``), that conditions go in FILTER."""
        if tok.kind == "IDENT" and tok.upper not in KEYWORDS:
            words = set(re.findall(r"\b[A-Z]{2,}\b", expected))
            if "FILTER" in words:  # after a formula, every clause may come
                words |= {"PARTITION", "WITHIN", "CONSUME", "LIMIT", "FILTER"}
            hint = did_you_mean(tok.text, sorted(words), upper=True)
            if hint:
                return hint
        previous = self.tokens[self.i - 1] if self.i else None
        if (
            "FILTER" in expected
            and previous is not None
            and previous.kind in ("IDENT", "QIDENT")
            and (self.is_op(".", "[", tok=tok) or tok.kind == "OP" and tok.value in grammar.COMPARISONS)
        ):
            end = self.i
            while end < len(self.tokens) - 1 and end - self.i < 6 and self.tokens[end].upper not in KEYWORDS:
                end += 1
            last = self.tokens[end - 1]
            condition = self.text[previous.offset : last.offset + len(last.text)]
            return (
                f" (a condition goes after FILTER: ... FILTER {condition}; "
                "in a formula AND means both patterns match the same events)"
            )
        return ""

    def fail(self, message: str, offset: int, expected: str | None = None) -> QuerySyntaxError:
        return QuerySyntaxError(message, self.text, offset, expected)

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

    def is_time_literal(self, k: int = 0) -> bool:
        """``TIMESTAMP '...'`` or ``INTERVAL '...'`` at offset k (the quoted text makes them
        literals, so the words stay usable as names)."""
        tok = self.peek(k) if k else self.tok
        return tok.upper in grammar.TIME_LITERALS and self.peek(k + 1).kind == "STRING"

    def parse_time_literal(self) -> ast.Literal:
        """``TIMESTAMP 'iso-8601'`` or ``INTERVAL 'number' UNIT``."""
        word = self.advance()
        text = self.advance()
        if word.upper == "TIMESTAMP":
            value = parse_timestamp(str(text.value))
            if isinstance(value, str):
                raise self.fail(f"TIMESTAMP {value}", text.offset, f"TIMESTAMP '{TIMESTAMP_EXAMPLE}'")
            return ast.Literal(value, "timestamp", pos=word.offset)
        if not self.is_kw(*grammar.TIME_UNIT_NAMES):
            raise self.error("a time unit after INTERVAL 'n' (DAYS, HOURS, MINUTES, SECONDS, MILLISECONDS, ...)")
        unit = self.advance()
        value = parse_interval(str(text.value), unit.text)
        if isinstance(value, str):
            raise self.fail(f"INTERVAL: {value}", text.offset, "INTERVAL '10' MINUTES")
        return ast.Literal(value, "interval", pos=word.offset)

    def is_function_call(self, k: int = 0) -> bool:
        """A function name (not back-quoted) followed by '(' at ``peek(k)``."""
        tok = self.peek(k) if k else self.tok
        return tok.kind == "IDENT" and tok.upper in grammar.FUNCTIONS and self.is_op("(", tok=self.peek(k + 1))

    def enter(self, tok: Token) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise self.fail(f"query nests too deeply (more than {MAX_DEPTH} levels)", tok.offset)

    def leave(self) -> None:
        self.depth -= 1

    def whole_number(self, tok: Token, what: str) -> int:
        """An INT token's value, which must fit in a signed 64-bit integer."""
        if tok.kind != "INT":
            raise self.error(what, tok)
        value = int(tok.value)  # type: ignore[call-overload]
        if value > grammar.INT64_MAX:
            raise self.fail(f"integer {tok.text} is out of range (at most {grammar.INT64_MAX})", tok.offset)
        return value

    # ------------------------------------------------------------------ query

    def parse_query(self) -> ast.Query:
        start = self.expect_kw("SELECT")
        strategy = None
        if self.is_kw(*ast.STRATEGIES) and not self.is_function_call():
            nxt = self.peek()
            # "SELECT ALL *" / "SELECT LAST x": a strategy is followed by the projection.
            if not self.is_op(",", tok=nxt) and not self.is_kw("FROM", "WHERE", tok=nxt) and nxt.kind != "EOF":
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
        formula = self.parse_formula(top=True)
        absent = None
        if self.is_kw("NOT") and self.peek().upper == "FOLLOWED":
            self.advance()
            self.advance()
            self.expect_kw("BY")
            absent = self.parse_formula(top=True)
            if self.is_kw("NOT") and self.peek().upper == "FOLLOWED":
                raise self.fail(
                    "a query has one NOT FOLLOWED BY (the whole WHERE formula, then what must not follow it)",
                    self.tok.offset,
                )
        partition_by: tuple[tuple[str, ...], ...] = ()
        partition_labels: tuple[ast.Attr, ...] = ()
        within = None
        consume = None
        limit = None
        limit_pos = -1
        partition_pos = -1
        if self.is_kw("PARTITION"):
            partition_pos = self.advance().offset
            self.expect_kw("BY")
            partition_by, partition_labels = self.parse_partition_clause()
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
            tok = self.advance()
            limit = self.whole_number(tok, "a whole number after LIMIT")
            limit_pos = tok.offset
        if self.tok.kind != "EOF":
            partitioned = bool(partition_by or partition_labels)
            raise self.error(self._expected_after_formula(partitioned, within, consume, limit, absent is not None))
        return ast.Query(
            projection=projection, formula=formula, absent=absent, strategy=strategy,
            streams=tuple(streams), streams_pos=tuple(streams_pos),
            partition_by=partition_by, partition_labels=partition_labels, partition_pos=partition_pos,
            within=within, consume=consume, limit=limit, limit_pos=limit_pos, pos=start.offset,
        )  # fmt: skip

    def _expected_after_formula(self, partitioned: bool, within, consume, limit, absent: bool = False) -> str:
        options = []
        if not partitioned and within is None and consume is None and limit is None:
            options += ["an operator", "FILTER"] + ([] if absent else ["NOT FOLLOWED BY"]) + ["PARTITION BY"]
        if within is None and consume is None and limit is None:
            options.append("WITHIN")
        if consume is None and limit is None:
            options.append("CONSUME BY")
        if limit is None:
            options.append("LIMIT")
        options.append("end of query")
        return ", ".join(options[:-1]) + " or " + options[-1] if len(options) > 1 else options[0]

    # ------------------------------------------------------------------ SELECT

    def parse_projection(self) -> ast.Projection:
        start = self.tok
        kind: str | None = None
        items: list[ast.ProjectionItem] = []
        measures: list[ast.Measure] = []
        while True:
            tok = self.tok
            if self.is_op("*") or self.is_kw("NONE"):
                if items or measures or kind:
                    raise self.fail(f"{tok.text} must be the first item of SELECT", tok.offset)
                self.advance()
                kind = "star" if tok.text == "*" else "none"
            elif self.starts_label_item():
                if kind is not None:
                    raise self.fail(
                        f"labels cannot be listed after {'*' if kind == 'star' else 'NONE'} in SELECT",
                        tok.offset,
                    )
                items.append(self.parse_projection_item())
            elif self.starts_expression():
                measures.append(self.parse_measure())
            else:
                what = "'*', NONE, labels or expressions to report" if tok is start else "a label or an expression"
                raise self.error(what)
            if not self.is_op(","):
                break
            self.advance()
        if kind is None:
            kind = "list" if items else "star"
        return ast.Projection(kind, tuple(items), tuple(measures), pos=start.offset)

    def starts_label_item(self) -> bool:
        return (
            self.is_name()
            and not self.is_function_call()
            and not self.is_time_literal()
            and not self.is_op(".", tok=self.peek())
        )

    def starts_expression(self) -> bool:
        tok = self.tok
        return (
            self.is_function_call()
            or self.is_time_literal()
            or (self.is_name() and self.is_op(".", tok=self.peek()))
            or tok.kind in ("INT", "FLOAT", "STRING")
            or self.is_kw("TRUE", "FALSE")
            or self.is_op("(", "-", "+")
        )

    def parse_projection_item(self) -> ast.ProjectionItem:
        tok = self.expect_name("a label")
        stream, label = None, self.name_value(tok)
        if self.is_op(">"):
            self.advance()
            stream, label = label, self.name_value(self.expect_name("an event type name"))
        attributes = None
        if self.is_op("["):
            attributes = self.parse_name_list("an attribute name")
        return ast.ProjectionItem(label, attributes, stream, pos=tok.offset)

    def parse_measure(self) -> ast.Measure:
        start = self.tok
        expr = self.parse_expr(labelled=True)
        if self.is_kw("AS"):
            self.advance()
            name = self.name_value(self.expect_name("a name for the value after AS"))
        else:
            name = print_expr(expr)
        return ast.Measure(expr, name, pos=start.offset)

    def parse_name_list(self, what: str) -> tuple[str, ...]:
        self.expect_op("[")
        names = [self.name_value(self.expect_name(what))]
        while self.is_op(","):
            self.advance()
            names.append(self.name_value(self.expect_name(what)))
        self.expect_op("]", f"',' or ']' after {what}")
        return tuple(names)

    # ------------------------------------------------------------------ PARTITION BY

    def parse_key_list(self) -> tuple[ast.Attr, ...]:
        """``[a, b]`` or ``[x.a, y.b]`` (one kind only)."""
        self.expect_op("[")
        keys = [self.parse_key()]
        while self.is_op(","):
            self.advance()
            keys.append(self.parse_key())
        self.expect_op("]", "',' or ']' after a PARTITION BY attribute")
        labelled = [k for k in keys if k.label is not None]
        if labelled and len(labelled) != len(keys):
            odd = next(k for k in keys if (k.label is None) == (keys[0].label is not None))
            raise self.fail(
                "PARTITION BY lists either attributes of labels (x.a, y.b) or plain attributes (a, b), not both",
                odd.pos,
            )
        return tuple(keys)

    def parse_key(self) -> ast.Attr:
        tok = self.expect_name("an attribute name (a) or a label's attribute (x.a)")
        if self.is_op("."):
            self.advance()
            attr = self.expect_name("an attribute name")
            return ast.Attr(self.name_value(attr), self.name_value(tok), pos=tok.offset)
        return ast.Attr(self.name_value(tok), pos=tok.offset)

    def parse_partition_clause(self) -> tuple[tuple[tuple[str, ...], ...], tuple[ast.Attr, ...]]:
        """The query clause: plain lists (sub-streams, at most two) or one list over labels."""
        first = self.parse_key_list()
        if first[0].label is not None:
            if self.is_op(","):
                raise self.fail(
                    "PARTITION BY over labels takes one list ([x.a, y.b, ...])", self.tok.offset
                )
            return (), first
        groups = [tuple(k.name for k in first)]
        if self.is_op(","):
            self.advance()
            second = self.parse_key_list()
            if second[0].label is not None:
                raise self.fail(
                    "PARTITION BY over labels takes one list ([x.a, y.b, ...])", second[0].pos
                )
            groups.append(tuple(k.name for k in second))
        return tuple(groups), ()

    # ------------------------------------------------------------------ WITHIN

    def parse_within(self) -> ast.Within:
        start = self.tok
        if self.is_time_literal() and start.upper == "INTERVAL":
            # The SQL spelling (Flink, and ceql's MATCH_RECOGNIZE): WITHIN INTERVAL '10' MINUTES.
            span = self.parse_time_literal()
            return ast.Within("time", int(span.value), pos=start.offset)  # type: ignore[arg-type]
        if start.kind not in ("INT", "FLOAT"):
            raise self.error("a number after WITHIN (n EVENTS, a time span such as 10 MINUTES or INTERVAL '10' MINUTES, or n [attribute])")
        nxt = self.peek()
        if self.is_kw("EVENTS", tok=nxt) or self.is_op("[", tok=nxt):
            if start.kind != "INT":
                raise self.fail("the size of an EVENTS or attribute window must be a whole number", start.offset)
            size = self.whole_number(self.advance(), "a whole number")
            if self.is_kw("EVENTS"):
                self.advance()
                return ast.Within("events", size, pos=start.offset)
            self.advance()
            attribute = self.name_value(self.expect_name("an attribute name"))
            self.expect_op("]")
            return ast.Within("attribute", size, attribute, pos=start.offset)
        units = [plural for plural, _, _ in grammar.TIME_UNITS]
        total = 0
        seen: list[str] = []
        while self.tok.kind in ("INT", "FLOAT"):
            number = self.advance()
            if not self.is_kw(*grammar.TIME_UNIT_NAMES):
                raise self.error("EVENTS, a time unit (DAYS, HOURS, MINUTES, SECONDS, MILLISECONDS, ...) or '[attribute]'")
            unit_tok = self.advance()
            unit = grammar.TIME_UNIT_NAMES[unit_tok.upper]
            if seen and units.index(unit) <= units.index(seen[-1]):
                raise self.fail(
                    f"{unit} cannot follow {seen[-1]} (write the units from the largest to the smallest, each once)",
                    unit_tok.offset,
                )
            seen.append(unit)
            amount = Fraction(number.text) * grammar.TIME_UNIT_NS[unit]
            if amount.denominator != 1:
                raise self.fail(
                    f"{number.text} {unit_tok.text} is not a whole number of nanoseconds", number.offset
                )
            total += int(amount)
            if total > grammar.INT64_MAX:
                raise self.fail("the time window is too long (at most about 292 years)", start.offset)
        return ast.Within("time", total, pos=start.offset)

    # ------------------------------------------------------------------ formulas

    def parse_formula(self, top: bool) -> ast.Formula:
        """FILTER / PARTITION BY level (loosest). At the top of the query, PARTITION BY is the
        query clause instead (parenthesise to partition a formula)."""
        body = self.parse_infix(0)
        while True:
            if self.is_kw("FILTER"):
                tok = self.advance()
                cond = self.parse_cond()
                body = ast.Filter(body, cond, pos=tok.offset)
            elif self.is_kw("PARTITION") and not top:
                tok = self.advance()
                self.expect_kw("BY")
                body = ast.PartitionBy(body, self.parse_key_list(), pos=tok.offset)
            else:
                return body

    def parse_infix(self, index: int) -> ast.Formula:
        if index == len(grammar.INFIX):
            return self.parse_postfix()
        op = grammar.INFIX[index]
        first = self.parse_infix(index + 1)
        if not op.nary:  # UNLESS: left-associative
            left = first
            while self._at(op):
                self.advance()
                right = self.parse_infix(index + 1)
                left = ast.Unless(left, right, pos=left.pos)
            return left
        parts = [first]
        while self._at(op):
            self.advance()
            parts.append(self.parse_infix(index + 1))
        if len(parts) == 1:
            return first
        if op.token == ":":
            return ast.Sequence(tuple(self._contiguous_part(p) for p in parts), True, pos=first.pos)
        if op.token == ";":
            return ast.Sequence(tuple(parts), False, pos=first.pos)
        return _INFIX_NODES[op.token](tuple(parts), pos=first.pos)

    def _at(self, op: grammar.Infix) -> bool:
        return self.is_kw(op.token) if op.keyword else self.is_op(op.token)

    def _contiguous_part(self, part: ast.Formula) -> ast.Formula:
        """A quantifier written as an element of a ':' chain (possibly under AS or a renaming)
        repeats contiguously: its copies are joined by ':'."""
        wrappers: list[ast.Formula] = []
        node = part
        while id(node) not in self.parenthesized:
            if isinstance(node, ast.Repeat):
                new: ast.Formula = dataclasses.replace(node, contiguous=True)
                for wrapper in reversed(wrappers):
                    new = dataclasses.replace(wrapper, body=new)
                return new
            if not isinstance(node, (ast.Label, ast.Rename)):
                break
            wrappers.append(node)
            node = node.body
        return part

    def parse_postfix(self) -> ast.Formula:
        body = self.parse_primary()
        steps = 0
        while True:
            tok = self.tok
            if self.is_kw("AS"):
                self.advance()
                label = self.name_value(self.expect_name("a label name after AS"))
                body = ast.Label(body, label, pos=body.pos)
            elif self.is_op("+", ":+"):
                self.advance()
                body = ast.Iteration(body, tok.value == ":+", pos=body.pos)
            elif self.is_op("?", "*"):
                self.advance()
                body = ast.Repeat(body, 0, 1 if tok.value == "?" else None, pos=body.pos)
            elif self.is_op("{"):
                low, high = self.parse_bounds()
                body = ast.Repeat(body, low, high, pos=body.pos)
            elif self.is_op("["):
                body = ast.Rename(body, self.parse_renaming(), pos=body.pos)
            else:
                return body
            steps += 1
            if steps + self.depth > MAX_DEPTH:
                raise self.fail(f"query nests too deeply (more than {MAX_DEPTH} levels)", tok.offset)

    def parse_bounds(self) -> tuple[int, int | None]:
        """``{n}``, ``{n,m}`` or ``{n,}``."""
        brace = self.advance()
        low = self.whole_number(self.advance(), "a whole number (f{n}, f{n,m} or f{n,})")
        high: int | None = low
        if self.is_op(","):
            self.advance()
            high = None
            if not self.is_op("}"):
                high = self.whole_number(self.advance(), "a whole number or '}'")
        self.expect_op("}", "',' or '}'")
        if high is not None and high < low:
            raise self.fail(f"a quantifier's lower bound ({low}) is above its upper bound ({high})", brace.offset)
        if high == 0:
            raise self.fail("a quantifier's upper bound must be at least 1 (f{0} matches nothing)", brace.offset)
        return low, high

    def parse_renaming(self) -> tuple[tuple[str, str], ...]:
        """``[A -> B, C -> D]`` after a formula."""
        self.expect_op("[")
        pairs: list[tuple[str, str]] = []
        while True:
            source_tok = self.expect_name("a label to rename (f[A -> B])")
            source = self.name_value(source_tok)
            if any(source == s for s, _ in pairs):
                raise self.fail(f"label {source} is renamed twice", source_tok.offset)
            self.expect_op("->", "'->' (f[A -> B] renames label A to B)")
            target = self.name_value(self.expect_name("the new name of the label"))
            pairs.append((source, target))
            if not self.is_op(","):
                break
            self.advance()
        self.expect_op("]", "',' or ']'")
        return tuple(pairs)

    def parse_group(self, close: str) -> ast.Formula:
        tok = self.advance()
        self.enter(tok)
        inner = self.parse_formula(top=False)
        self.leave()
        if not self.is_op(close):
            raise self.error(f"'{close}' or an operator")
        self.advance()
        self.parenthesized.add(id(inner))
        return inner

    def parse_primary(self) -> ast.Formula:
        tok = self.tok
        if self.is_op("("):
            return self.parse_group(")")
        if self.is_op("["):  # the thesis groups formulas with square brackets too
            return self.parse_group("]")
        if self.is_kw("NOT"):
            return self.parse_not_event()
        if tok.kind == "IDENT" and grammar.FORMULA_PREFIXES.get(tok.upper) is not None:
            opener = grammar.FORMULA_PREFIXES[tok.upper]
            if self.is_op(opener, tok=self.peek()):
                return self.parse_start() if tok.upper == "START" else self.parse_project()
        if self.is_name():
            return self.parse_event_type()
        raise self.error("an event type, '(' or NOT(...)")

    def parse_not_event(self) -> ast.NotEvent:
        tok = self.advance()
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

    def parse_start(self) -> ast.Start:
        tok = self.advance()
        self.enter(tok)
        self.expect_op("(")
        body = self.parse_formula(top=False)
        self.expect_op(")", "')' or an operator")
        self.leave()
        return ast.Start(body, pos=tok.offset)

    def parse_project(self) -> ast.Project:
        tok = self.advance()
        self.enter(tok)
        labels = self.parse_name_list("a label to keep")
        self.expect_op("(", "'(' and the formula to project (PROJECT[x, y](f))")
        body = self.parse_formula(top=False)
        self.expect_op(")", "')' or an operator")
        self.leave()
        return ast.Project(body, labels, pos=tok.offset)

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
        return self._bool_chain(self.parse_cond_not, "AND", ast.And)

    def _bool_chain(self, next_level, word: str, cls):
        first = next_level()
        parts = [first]
        while self.is_kw(word):
            self.advance()
            parts.append(next_level())
        return first if len(parts) == 1 else cls(tuple(parts), pos=first.pos)

    def parse_cond_not(self) -> ast.Cond:
        return self._negation(self.parse_cond_atom)

    def _negation(self, atom: Callable[[], Any]) -> Any:
        """``NOT x`` (each NOT one level of nesting) or ``atom()``: conditions and predicates."""
        tok = self.tok
        if not self.is_kw("NOT"):
            return atom()
        self.advance()
        self.enter(tok)
        operand = self._negation(atom)
        self.leave()
        return ast.Not(operand, pos=tok.offset)

    def _parenthesized(self, inner: Callable[[], Any], not_before: tuple[str, ...] = ()) -> Any:
        """At '(': ``inner()`` if the parenthesis closes it and neither an operator nor one of
        the words ``not_before`` follows (then it was an arithmetic expression's parenthesis);
        otherwise None, with the position restored."""
        tok = self.tok
        saved = self.i
        self.advance()
        self.enter(tok)
        try:
            found = inner()
            closed = self.is_op(")")
        except QuerySyntaxError:
            closed = False
        self.leave()
        after = self.peek()
        if closed and not self._starts_expression_continuation(after) and not self.is_kw(*not_before, tok=after):
            self.advance()
            return found
        self.i = saved
        return None

    def parse_cond_atom(self) -> ast.Cond:
        tok = self.tok
        if self.is_op("("):
            # Either a parenthesised condition or an arithmetic expression: try the first.
            inner = self._parenthesized(self.parse_cond)
            if inner is not None:
                return inner
            return self.parse_comparison()
        if self.is_function_call() or self.is_time_literal():
            return self.parse_comparison()
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
                return self.parse_comparison()
            self.advance()
            raise self.error("'[' or '.' after a label in a FILTER condition (x[pred] or x.attr)")
        if tok.kind in ("INT", "FLOAT", "STRING") or self.is_op("-", "+") or self.is_kw("TRUE", "FALSE"):
            return self.parse_comparison()
        raise self.error("a condition: label[predicate], x.attr op y.attr, or '('")

    def _starts_expression_continuation(self, tok: Token) -> bool:
        return tok.kind == "OP" and tok.value in ("+", "-", "*", "/", "%", *grammar.COMPARISONS)

    def parse_label_cond(self, stream: str | None, label_tok: Token) -> ast.LabelCond:
        self.expect_op("[")
        self.enter(label_tok)
        pred = self.parse_pred()
        self.leave()
        if not self.is_op("]"):
            raise self.error("']' or AND/OR")
        self.advance()
        return ast.LabelCond(self.name_value(label_tok), pred, stream, pos=label_tok.offset)

    def parse_comparison(self) -> ast.Compare:
        left = self.parse_expr(labelled=True)
        tok = self.tok
        if not self.is_op(*grammar.COMPARISONS):
            raise self.error("a comparison operator (=, !=, <, <=, >, >=)")
        self.advance()
        right = self.parse_expr(labelled=True)
        return ast.Compare(grammar.COMPARISONS[tok.value], left, right, pos=left.pos)

    # ------------------------------------------------------------------ predicates (one event)

    def parse_pred(self) -> ast.Pred:
        return self._bool_chain(self.parse_pred_and, "OR", ast.Or)

    def parse_pred_and(self) -> ast.Pred:
        return self._bool_chain(self.parse_pred_not, "AND", ast.And)

    def parse_pred_not(self) -> ast.Pred:
        return self._negation(self.parse_pred_atom)

    def parse_pred_atom(self) -> ast.Pred:
        if self.is_op("("):
            inner = self._parenthesized(self.parse_pred, not_before=("IN", "LIKE", "NOT"))
            if inner is not None:
                return inner
        left = self.parse_expr(labelled=False)
        tok = self.tok
        if self.is_op(*grammar.COMPARISONS):
            self.advance()
            right = self.parse_expr(labelled=False)
            return ast.Compare(grammar.COMPARISONS[tok.value], left, right, pos=left.pos)
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
                    raise self.fail("NOT IN RANGE is not CEQL; write NOT (x IN RANGE(a, b))", self.tok.offset)
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
        negative = False
        if self.is_op("-", "+"):
            negative = self.advance().value == "-"
        if self.tok.kind not in ("INT", "FLOAT"):
            raise self.error("a number")
        return self.number_value(self.advance(), negative)

    def number_value(self, tok: Token, negative: bool) -> int | float:
        """The value of a number token, negated if asked; integers must fit in int64."""
        value = tok.value
        if tok.kind == "INT":
            value = -int(value) if negative else int(value)  # type: ignore[call-overload]
            if not grammar.INT64_MIN <= value <= grammar.INT64_MAX:
                raise self.fail(
                    f"integer {tok.text} is out of range (at most {grammar.INT64_MAX})", tok.offset
                )
            return value
        return -float(value) if negative else float(value)  # type: ignore[arg-type]

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
            if tok.value == "-" and self.tok.kind in ("INT", "FLOAT"):
                # A negative number is one literal (so that -9223372036854775808 fits).
                return ast.Literal(self.number_value(self.advance(), True), pos=tok.offset)
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
        if tok.kind in ("INT", "FLOAT"):
            self.advance()
            if self.is_kw(*grammar.TIME_UNIT_NAMES):
                # ``10 MINUTES`` in an expression is the interval of WITHIN's spelling (no
                # expression is otherwise followed by a word right after a number).
                unit = self.advance()
                value = parse_interval(tok.text, unit.text)
                if isinstance(value, str):
                    raise self.fail(value, tok.offset, "a duration such as 10 MINUTES")
                return ast.Literal(value, "interval", pos=tok.offset)
            return ast.Literal(self.number_value(tok, False), pos=tok.offset)
        if tok.kind == "STRING":
            self.advance()
            return ast.Literal(tok.value, pos=tok.offset)  # type: ignore[arg-type]
        if self.is_kw("TRUE", "FALSE"):
            self.advance()
            return ast.Literal(tok.upper == "TRUE", pos=tok.offset)
        if self.is_time_literal():
            return self.parse_time_literal()
        if tok.kind == "IDENT" and tok.upper in grammar.TIME_LITERALS and self.peek(1).kind in ("INT", "FLOAT"):
            # (No expression is followed by a number: this is a time literal without its quotes.)
            example = "INTERVAL '10' MINUTES" if tok.upper == "INTERVAL" else f"TIMESTAMP '{TIMESTAMP_EXAMPLE}'"
            raise self.fail(f"{tok.upper} takes quoted text: write {example}", self.peek(1).offset, example)
        if self.is_function_call():
            if not labelled:
                raise self.fail(
                    f"{tok.upper}(...) applies to labels: use it in a FILTER condition (COUNT(x) > 2), "
                    "not inside label[...]",
                    tok.offset,
                )
            return self.parse_function()
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
            raise self.error("a value, label.attribute or an aggregate such as COUNT(x)")
        raise self.error("an attribute name, a number or a string")

    def parse_function(self) -> ast.Expr:
        """``COUNT(x)``, ``COUNT(*)``, ``SUM|AVG|MIN|MAX(x.a)``, ``FIRST|LAST(x).a``, ``PREV(x.a)``."""
        tok = self.advance()
        func = tok.upper
        self.advance()  # '('
        if func == "COUNT" and self.is_op("*"):
            self.advance()
            self.expect_op(")")
            return ast.Aggregate("COUNT", None, pos=tok.offset)
        label = self.name_value(self.expect_name("a label" + (" or *" if func == "COUNT" else "")))
        if func == "COUNT":
            self.expect_op(")", "')' (COUNT takes a label or *)")
            return ast.Aggregate("COUNT", label, pos=tok.offset)
        if func in ("FIRST", "LAST"):
            self.expect_op(")", f"')' ({func} takes a label: {func}(x).attribute)")
            self.expect_op(".", f"'.' and an attribute name ({func}(x).attribute)")
            attr = self.name_value(self.expect_name("an attribute name"))
            return ast.Aggregate(func, label, attr, pos=tok.offset)
        self.expect_op(".", f"'.' and an attribute name ({func}(x.attribute))")
        attr = self.name_value(self.expect_name("an attribute name"))
        self.expect_op(")")
        if func == "PREV":
            return ast.Prev(label, attr, pos=tok.offset)
        return ast.Aggregate(func, label, attr, pos=tok.offset)
