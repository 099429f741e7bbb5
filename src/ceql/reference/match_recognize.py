"""The reference evaluator of MATCH_RECOGNIZE: the semantics of docs/semantics.md (part 3),
implemented literally and slowly, as the oracle the engine is tested against.

Per partition (rows grouped by the PARTITION BY values, in order of first appearance, each
sorted by ORDER BY, ties in input order), matching tries each starting row in turn. From a
start, ``_candidates`` enumerates every way of mapping rows to the pattern's variables, in the
order of preference (greedy quantifiers prefer more iterations, reluctant ones fewer,
alternation and PERMUTE prefer the earlier alternative), each step checking the variable's
DEFINE condition on the match so far with running semantics; the first candidate is the match.
Then AFTER MATCH SKIP says where the next attempt starts. Nothing here is shared with the engine
except the parsed and checked query.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from functools import cmp_to_key
from typing import Any

import pyarrow as pa

from ceql.errors import EventError
from ceql.sql import ast, ir
from ceql.sql.analysis import Checked
from ceql.sql.parser import allows_deep_expressions
from ceql.sql.types import SqlType
from ceql.sql.values import arrow_values, python_values
from ceql.sql.vector import substring_bounds
from ceql.sql.vm import math_scalar

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


class _Skip(Exception):
    """Raised by AFTER MATCH SKIP TO when the standard calls the resumption an error."""


@dataclass
class _Partition:
    rows: list[int]  # input row indices in ORDER BY order
    key: tuple


@dataclass
class _Match:
    start: int  # index into the partition
    path: list[tuple[int, str, bool]]  # (partition index, variable, excluded)
    number: int


@allows_deep_expressions
def run(checked: Checked, table: pa.Table) -> pa.Table:
    """The result of the checked query over ``table`` (its input), as an Arrow table."""
    return _Reference(checked, table).run()


class _Reference:
    def __init__(self, checked: Checked, table: pa.Table) -> None:
        self.q = checked
        self.table = table
        names = set(checked.columns_read) | {c.source for c in checked.output if c.source}
        self.values = {name: python_values(table.column(name)) for name in names if name}
        self.n = table.num_rows

    # ------------------------------------------------------------------ partitions and order

    def partitions(self) -> list[_Partition]:
        groups: dict[tuple, list[int]] = {}
        for row in range(self.n):
            key = tuple(_group_key(self.values[c][row]) for c in self.q.partition)
            groups.setdefault(key, []).append(row)
        out = []
        for key, rows in groups.items():
            rows.sort(key=cmp_to_key(self._compare_rows))
            out.append(_Partition(rows, key))
        return out

    def _compare_rows(self, a: int, b: int) -> int:
        for column, descending, nulls_first in self.q.order:
            x, y = self.values[column][a], self.values[column][b]
            if x is None or y is None:
                if x is None and y is None:
                    continue
                return (-1 if nulls_first else 1) * (1 if x is None else -1)
            c = _order_compare(x, y)
            if c:
                return -c if descending else c
        return -1 if a < b else (1 if a > b else 0)

    # ------------------------------------------------------------------ matching

    def run(self) -> pa.Table:
        out_rows: list[dict[str, Any]] = []
        for part in self.partitions():
            out_rows.extend(self.match_partition(part))
        return self.finish(out_rows)

    def match_partition(self, part: _Partition) -> list[dict[str, Any]]:
        q = self.q
        rows = part.rows
        n = len(rows)
        out: list[dict[str, Any]] = []
        number = 0
        covered = -1  # the last partition index inside some non-empty match so far
        start = 0
        while start < n:
            found = self.first_match(part, start, number + 1)
            if found is None:
                if q.rows_per_match == "ALL" and q.empty == "UNMATCHED" and start > covered:
                    out.append(self.row_output(part, rows[start], None, None))
                start += 1
                continue
            number += 1
            match = _Match(start, found, number)
            if not found:  # an empty match
                if q.rows_per_match == "ONE":
                    out.append(self.one_row(part, match))
                elif q.empty in ("SHOW", "UNMATCHED"):
                    out.append(self.row_output(part, rows[start], match, -1))
                start += 1
                continue
            end = start + len(found)
            if q.rows_per_match == "ONE":
                out.append(self.one_row(part, match))
            else:
                for k, (_, _, excluded) in enumerate(found):
                    if not excluded:
                        out.append(self.row_output(part, rows[start + k], match, k))
            covered = max(covered, end - 1)
            start = self.resume(part, match, end)
        return out

    def resume(self, part: _Partition, match: _Match, end: int) -> int:
        q = self.q
        if q.skip == "PAST_LAST":
            return end
        if q.skip == "NEXT_ROW":
            return match.start + 1
        members = q.classes_of(q.skip_to)
        indices = [match.start + k for k, (_, var, _) in enumerate(match.path) if var in members]
        if not indices:
            raise EventError(
                f"AFTER MATCH SKIP TO {q.skip} {q.skip_to}: the match number {match.number} of partition "
                f"{_shown_key(part.key)} has no row mapped to {q.skip_to}",
                row=part.rows[match.start],
            )
        target = indices[0] if q.skip == "FIRST" else indices[-1]
        if target == match.start:
            raise EventError(
                f"AFTER MATCH SKIP TO {q.skip} {q.skip_to} would resume at the first row of the match number "
                f"{match.number} of partition {_shown_key(part.key)} (an endless loop)",
                row=part.rows[match.start],
            )
        return target

    def first_match(self, part: _Partition, start: int, number: int) -> list[tuple[int, str, bool]] | None:
        for path in self._candidates(self.q.pattern, part, start, [], False, number):
            return path
        return None

    def _candidates(
        self, node: ast.Pattern, part: _Partition, start: int, path: list, excluded: bool, number: int
    ) -> Iterator[list]:
        """Every way to extend ``path`` by ``node``, most preferred first."""
        position = start + len(path)
        if isinstance(node, ast.PVar):
            var = node.name.key
            if position >= len(part.rows) or not self._in_window(part, start, position):
                return
            extended = path + [(position, var, excluded)]
            condition = self.q.defines.get(var)
            if condition is None or self.evaluate(condition, part, start, extended, number, len(extended)) is True:
                yield extended
        elif isinstance(node, ast.PEmpty):
            yield path
        elif isinstance(node, ast.PAnchor):
            if (node.kind == "^" and position == 0) or (node.kind == "$" and position == len(part.rows)):
                yield path
        elif isinstance(node, ast.PConcat):
            yield from self._sequence(node.items, part, start, path, excluded, number)
        elif isinstance(node, ast.PAlt):
            for item in node.items:
                yield from self._candidates(item, part, start, path, excluded, number)
        elif isinstance(node, ast.PPermute):
            for order in itertools.permutations(node.items):
                yield from self._sequence(order, part, start, path, excluded, number)
        elif isinstance(node, ast.PExclude):
            yield from self._candidates(node.body, part, start, path, True, number)
        elif isinstance(node, ast.PQuant):
            yield from self._repeat(node, part, start, path, excluded, number, 0)
        else:  # pragma: no cover - the parser builds no other node
            raise TypeError(node)

    def _sequence(self, items, part, start, path, excluded, number) -> Iterator[list]:
        if not items:
            yield path
            return
        for head in self._candidates(items[0], part, start, path, excluded, number):
            yield from self._sequence(items[1:], part, start, head, excluded, number)

    def _repeat(self, node: ast.PQuant, part, start, path, excluded, number, count: int) -> Iterator[list]:
        """``count`` iterations done. An iteration beyond the minimum must map at least one row
        (an empty one would change nothing and could repeat forever)."""
        can_stop = count >= node.low
        can_go = node.high is None or count < node.high

        def more() -> Iterator[list]:
            if not can_go:
                return
            for after in self._candidates(node.body, part, start, path, excluded, number):
                if can_stop and len(after) == len(path):
                    continue
                yield from self._repeat(node, part, start, after, excluded, number, count + 1)

        if node.greedy:
            yield from more()
            if can_stop:
                yield path
        else:
            if can_stop:
                yield path
            yield from more()

    def _in_window(self, part: _Partition, start: int, position: int) -> bool:
        q = self.q
        if q.within is None:
            return True
        times = self.values[q.time_column]  # type: ignore[index]
        first, this = times[part.rows[start]], times[part.rows[position]]
        if first is None or this is None:
            return False
        return this - first < q.within

    # ------------------------------------------------------------------ expressions

    def evaluate(self, node: ir.Node, part: _Partition, start: int, path: list, number: int, upto: int) -> Any:
        """``node`` on the match ``path`` seen from its row ``upto - 1`` (running semantics:
        the rows ``path[:upto]``; FINAL reads the whole ``path``)."""
        ctx = _Context(self, part, start, path, number, upto)
        return ctx.value(node)

    # ------------------------------------------------------------------ output

    def one_row(self, part: _Partition, match: _Match) -> dict[str, Any]:
        out: dict[str, Any] = dict(zip(self.q.partition, self._key_values(part)))
        for name, node in self.q.measures:
            out[name] = self.evaluate(node, part, match.start, match.path, match.number, len(match.path))
        return out

    def _key_values(self, part: _Partition) -> list[Any]:
        row = part.rows[0]
        return [self.values[c][row] for c in self.q.partition]

    def row_output(self, part: _Partition, row: int, match: _Match | None, k: int | None) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for column in self.q.output:
            if column.source is not None:
                out[column.name] = self.values[column.source][row]
        for name, node in self.q.measures:
            if match is None:
                out[name] = None
            elif k == -1:
                out[name] = self.evaluate(node, part, match.start, match.path, match.number, 0)
            else:
                out[name] = self.evaluate(node, part, match.start, match.path, match.number, k + 1)  # type: ignore[operator]
        return out

    def finish(self, rows: list[dict[str, Any]]) -> pa.Table:
        q = self.q
        selected_rows = []
        for row in rows:
            if q.where is not None and _Outer(row).value(q.where) is not True:
                continue
            selected_rows.append([_Outer(row).value(c.expr) for c in q.select])
        schema = q.output_schema
        arrays = [
            arrow_values([r[i] for r in selected_rows], schema.field(i).type) for i in range(len(schema))
        ]
        return pa.Table.from_arrays(arrays, schema=schema)


# ---------------------------------------------------------------------------- evaluation


class _Context:
    """One evaluation: the partition, the match so far and where it is seen from."""

    def __init__(self, ref: _Reference, part: _Partition, start: int, path: list, number: int, upto: int) -> None:
        self.ref = ref
        self.part = part
        self.start = start
        self.path = path
        self.number = number
        self.upto = upto

    def visible(self, final: bool) -> list[tuple[int, str, bool]]:
        return self.path if final else self.path[: self.upto]

    def locate(self, loc: ir.Locator) -> int | None:
        """The partition index a locator designates, or None."""
        if isinstance(loc, ir.Physical):
            base = self.locate(loc.base)
            if base is None:
                return None
            target = base + loc.delta
            return target if 0 <= target < len(self.part.rows) else None
        members = self.ref.q.classes_of(loc.cls)
        rows = [p for p, var, _ in self.visible(loc.final) if var in members]
        if loc.offset >= len(rows):
            return None
        return rows[loc.offset] if loc.func == "FIRST" else rows[len(rows) - 1 - loc.offset]

    def classifier(self, position: int, final: bool) -> str | None:
        """The variable a row is mapped to, if the row is in the match (in DEFINE: the match so
        far). RUNNING does not hide the rows after the current one: a row located by NEXT has
        its variable, as in Trino (``final`` is kept for the callers' symmetry)."""
        del final
        for p, var, _ in self.path:
            if p == position:
                return var
        return None

    def value(self, node: ir.Node) -> Any:
        if isinstance(node, ir.At):
            position = self.locate(node.locator)
            if position is None:
                return None
            base = node.locator.base if isinstance(node.locator, ir.Physical) else node.locator
            return _Row(self, position, base.final).value(node.expr)
        if isinstance(node, ir.Agg):
            return self.aggregate(node)
        if isinstance(node, ir.MatchNo):
            return self.number
        return _scalar(node, self.value)

    def aggregate(self, node: ir.Agg) -> Any:
        members = self.ref.q.classes_of(node.cls)
        values = []
        keys = []
        for p, var, _ in self.visible(node.final):
            if var in members:
                values.append(_Row(self, p, node.final).value(node.arg) if node.arg is not None else 1)
                if node.key is not None:
                    keys.append(_Row(self, p, node.final).value(node.key))
        if node.func == "ARRAY_AGG":  # every value, nulls included, in match order; no row: NULL
            return values or None
        if node.func in ("MAX_BY", "MIN_BY"):  # the value at the first row of the largest (smallest) key
            best = None
            for i, key in enumerate(keys):
                if key is None:
                    continue
                if best is None:
                    best = i
                    continue
                order = _order_compare(key, keys[best])
                if (order > 0 and node.func == "MAX_BY") or (order < 0 and node.func == "MIN_BY"):
                    best = i
            return None if best is None else values[best]
        if node.func == "COUNT":
            return sum(1 for v in values if v is not None)
        present = [v for v in values if v is not None]
        if not present:
            return None
        if node.func in ("SUM", "AVG"):
            total: Any = present[0]
            for v in present[1:]:
                total = total + v
                if isinstance(total, int) and not isinstance(total, bool):
                    _check_int(total, "SUM")
                if isinstance(total, Decimal):
                    _check_decimal(total, node.type.scale, "SUM")
            if node.func == "SUM":
                return total
            return float(total) / len(present)
        best = present[0]
        for v in present[1:]:
            if (node.func == "MIN" and _less(v, best)) or (node.func == "MAX" and _less(best, v)):
                best = v
        return best


class _Row:
    """A row expression read on one row of the partition."""

    def __init__(self, ctx: _Context, position: int, final: bool) -> None:
        self.ctx = ctx
        self.position = position
        self.final = final

    def value(self, node: ir.Node) -> Any:
        if isinstance(node, ir.RowCol):
            v = self.ctx.ref.values[node.column][self.ctx.part.rows[self.position]]
            if node.type.kind == "decimal" and v is not None:
                _check_decimal(v, node.type.scale, f"column {node.column}")
            return v
        if isinstance(node, ir.RowClassifier):
            return self.ctx.classifier(self.position, self.final)
        if isinstance(node, ir.MatchNo):
            return self.ctx.number
        return _scalar(node, self.value)


class _Outer:
    """The outer SELECT and WHERE, read on one result row."""

    def __init__(self, row: dict[str, Any]) -> None:
        self.row = row

    def value(self, node: ir.Node) -> Any:
        if isinstance(node, ir.RowCol):
            return self.row[node.column]
        return _scalar(node, self.value)


def _scalar(node: ir.Node, value) -> Any:  # noqa: C901 - one case per operator
    """Constants, operators and CASE, with SQL's rules: null propagates, AND/OR/NOT are
    three-valued and evaluated left to right (a FALSE left side of AND, or TRUE of OR, is the
    result without evaluating the right side), integers are exact (overflow and division by
    zero are errors), doubles follow IEEE 754."""
    if isinstance(node, ir.Const):
        return node.value
    if isinstance(node, ir.Case):
        for condition, result in node.whens:
            if value(condition) is True:
                return value(result)
        return value(node.otherwise) if node.otherwise is not None else None
    if not isinstance(node, ir.Op):
        raise TypeError(f"unexpected node {node!r}")
    op = node.op
    if op == "and":
        left = value(node.args[0])
        if left is False:
            return False
        right = value(node.args[1])
        if right is False:
            return False
        return None if left is None or right is None else True
    if op == "or":
        left = value(node.args[0])
        if left is True:
            return True
        right = value(node.args[1])
        if right is True:
            return True
        return None if left is None or right is None else False
    if op == "concat_ws":  # of an array: its non-null elements joined; a null array is null
        separator, array = (value(a) for a in node.args)
        if separator is None or array is None:
            return None
        return separator.join(x for x in array if x is not None)
    if op == "coalesce":
        for arg in node.args:
            v = value(arg)
            if v is not None:
                return v
        return None
    args = [value(a) for a in node.args]
    if op == "isnull":
        return args[0] is None
    if op == "notnull":
        return args[0] is not None
    if any(a is None for a in args):
        return None
    if op == "not":
        return not args[0]
    if op == "like":  # SQL LIKE: % any text, _ one character, the rest literally
        regex = "".join(".*" if c == "%" else "." if c == "_" else re.escape(c) for c in args[1])
        return re.fullmatch(regex, args[0], re.DOTALL) is not None
    if op == "lower":
        return args[0].lower()
    if op == "upper":
        return args[0].upper()
    if op == "concat":
        return args[0] + args[1]
    if op == "length":
        return len(args[0])
    if op == "substr":
        begin, stop, empty = substring_bounds(args[1], args[2] if len(args) > 2 else None)
        return "" if empty else args[0][begin:stop]
    if op in ir.MATH_FUNCTIONS:  # the platform's C library, as the engine calls it (vm.math_scalar)
        return float(math_scalar(ir.MATH_FUNCTIONS.index(op), float(args[0]), float(args[1]) if len(args) > 1 else 0.0))
    if op in ("=", "<>", "<", "<=", ">", ">="):
        a, b = args
        if op == "=":
            return a == b
        if op == "<>":
            return a != b
        if op == "<":
            return a < b
        if op == "<=":
            return a <= b
        if op == ">":
            return a > b
        return a >= b
    t = node.type.kind
    if op == "cast":
        return _cast(args[0], node.type.kind)
    if t == "decimal" or op in ("rescale", "fit"):
        return _decimal(op, node.type, node.args, args)
    if op == "neg":
        return _check_int(-args[0], "negation") if t in ("int", "interval", "timestamp") else -args[0]
    if op == "abs":
        return _check_int(abs(args[0]), "ABS") if t == "int" else abs(args[0])
    if op == "scale":
        return _check_int(args[0] * args[1], "timestamp conversion")
    a, b = args
    if t == "double":
        return _double(op, float(a), float(b))
    if op == "+":
        return _check_int(a + b, "addition")
    if op == "-":
        return _check_int(a - b, "subtraction")
    if op == "*":
        return _check_int(a * b, "multiplication")
    if b == 0:
        raise EventError("division by zero" if op == "/" else "modulo by zero")
    quotient = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)
    if op == "/":
        return _check_int(quotient, "division")
    return a - b * quotient


def _double(op: str, a: float, b: float) -> float:
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if op == "/":
        if b == 0:
            if a == 0 or math.isnan(a):
                return math.nan
            return math.copysign(math.inf, a) * math.copysign(1.0, b)
        return a / b
    if b == 0 or math.isinf(a):
        return math.nan
    return math.fmod(a, b)


def _decimal(op: str, t: SqlType, nodes: tuple[ir.Node, ...], args: list[Any]) -> Decimal:
    """Exact decimal arithmetic on Python Decimals (Fractions where a quotient is rounded):
    every result, and every operand brought to a larger scale, must have an unscaled value of
    64 bits (the engine's representation); a smaller scale rounds half away from zero."""
    scale = t.scale
    if op == "rescale":
        return _check_decimal(_round(Fraction(args[0]), scale), scale, "decimal scaling")
    if op == "fit":  # CAST to DECIMAL(p, s): at most p digits
        if abs(args[0].scaleb(scale)) >= 10**t.precision:
            raise EventError("a value beyond the precision of its DECIMAL type (CAST)")
        return args[0]
    if op == "neg":
        return _check_decimal(-args[0], scale, "negation")
    if op == "abs":
        return _check_decimal(abs(args[0]), scale, "ABS")
    a, b = (Fraction(x) for x in args)
    if op == "+":
        return _check_decimal(_round(a + b, scale), scale, "addition")
    if op == "-":
        return _check_decimal(_round(a - b, scale), scale, "subtraction")
    if op == "*":
        return _check_decimal(_round(a * b, scale), scale, "multiplication")
    if op == "/":
        # the dividend is brought to the scale that makes the unscaled quotient an integer division
        _check_decimal(_round(a, scale + nodes[1].type.scale), scale + nodes[1].type.scale, "decimal scaling")
        if b == 0:
            raise EventError("division by zero")
        return _check_decimal(_round(a / b, scale), scale, "division")
    if b == 0:
        raise EventError("modulo by zero")
    quotient = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)
    return _check_decimal(_round(a - b * quotient, scale), scale, "modulo")


def _round(x: Fraction, scale: int) -> Decimal:
    """``x`` to ``scale`` digits after the point, half away from zero."""
    scaled = abs(x) * 10**scale
    whole = math.floor(scaled + Fraction(1, 2))
    return Decimal(whole if x >= 0 else -whole).scaleb(-scale)


def _check_decimal(v: Decimal, scale: int, what: str) -> Decimal:
    if abs(v.scaleb(scale)) > INT64_MAX:
        raise EventError(f"integer overflow in {what}")
    return v


def _cast(v: Any, kind: str) -> Any:
    if kind == "double":
        return float(v)
    if kind == "decimal":
        return Decimal(v)
    if isinstance(v, Decimal):  # to BIGINT, already rounded to scale 0
        return int(v)
    if kind == "bool":
        return v != 0
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, float):
        if math.isnan(v) or math.isinf(v) or not (-(2.0**63) <= v < 2.0**63):
            raise EventError(f"CAST of {v} to BIGINT is out of range")
        return int(v)  # toward zero
    return v


def _check_int(v: int, what: str) -> int:
    if not INT64_MIN <= v <= INT64_MAX:
        raise EventError(f"integer overflow in {what}")
    return v


def _less(a: Any, b: Any) -> bool:
    return a < b


def _order_compare(x: Any, y: Any) -> int:
    """ORDER BY's order: NaN after every number."""
    if isinstance(x, float) and math.isnan(x):
        return 0 if (isinstance(y, float) and math.isnan(y)) else 1
    if isinstance(y, float) and math.isnan(y):
        return -1
    return -1 if x < y else (1 if x > y else 0)


def _group_key(v: Any) -> Any:
    """PARTITION BY groups NaN with NaN (and null with null)."""
    if isinstance(v, float) and math.isnan(v):
        return ("nan",)
    return v


def _shown_key(key: tuple) -> str:
    return "(" + ", ".join(repr(k) for k in key) + ")" if key else "(the whole input)"
