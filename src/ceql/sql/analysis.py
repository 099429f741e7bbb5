"""Name resolution and typing of a MATCH_RECOGNIZE query against its input's columns.

``analyze(query, schema)`` checks every rule the engine and the reference rely on and returns a
``Checked`` query: pattern variables (primary and union), each DEFINE condition and MEASURE as a
typed ``ir`` tree (every column read on a located row), the output columns, and the outer
SELECT and WHERE over them. Every error names what is wrong with its line and column.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal

import pyarrow as pa

from ceql.errors import QueryError, UnsupportedQueryError
from ceql.sql import ast, ir
from ceql.sql.parser import allows_deep_expressions
from ceql.sql.types import (
    BOOL,
    DOUBLE,
    INT,
    INTERVAL,
    MAX_DECIMAL_SCALE,
    NULL,
    STRING,
    UNIT_NANOS,
    SqlType,
    as_decimal,
    decimal,
    decimal_result,
    finer_unit,
    sql_type,
    unify,
)

MAX_PATTERN_SIZE = 5_000  # pattern elements after expanding bounded quantifiers and PERMUTE
MAX_PERMUTE = 6
COMPARISONS = ("=", "<>", "<", "<=", ">", ">=")
#: the kinds aggregates and row aggregates take
VALUE_KINDS = ("int", "double", "decimal", "string", "timestamp", "bool")
INT64_MAX = 2**63 - 1


@dataclass(frozen=True)
class OutputColumn:
    """A column of the MATCH_RECOGNIZE result: an input column (``source``) or a measure."""

    name: str
    type: pa.DataType
    source: str | None = None  # the input column
    measure: int | None = None  # index into Checked.measures


@dataclass(frozen=True)
class SelectColumn:
    name: str
    expr: ir.Node  # over OutCol leaves (ir.RowCol naming result columns)


@dataclass
class Checked:
    """A MATCH_RECOGNIZE query resolved against its input (see the module docstring)."""

    query: ast.Query
    text: str
    table: str
    schema: pa.Schema
    partition: list[str]
    order: list[tuple[str, bool, bool]]  # column, descending, nulls first
    variables: list[str]  # primary variables, in order of first appearance in PATTERN
    subsets: dict[str, frozenset[str]]
    defines: dict[str, ir.Node]  # primary variable -> condition (absent: TRUE)
    measures: list[tuple[str, ir.Node]]
    rows_per_match: str  # ONE, ALL
    empty: str  # SHOW, OMIT, UNMATCHED
    skip: str  # PAST_LAST, NEXT_ROW, FIRST, LAST
    skip_to: str | None  # variable or union variable of SKIP TO FIRST/LAST
    pattern: ast.Pattern
    within: int | None  # WITHIN, in units of the time column
    time_column: str | None
    output: list[OutputColumn]
    select: list[SelectColumn]
    where: ir.Node | None
    columns_read: set[str] = field(default_factory=set)

    def classes_of(self, cls: str | None) -> frozenset[str]:
        """The primary variables a variable class stands for."""
        if cls is None:
            return frozenset(self.variables)
        return self.subsets.get(cls, frozenset([cls]))

    @property
    def output_schema(self) -> pa.Schema:
        """The schema of the result (after the outer SELECT)."""
        return pa.schema([pa.field(c.name, _arrow_of(c.expr.type, self, c.expr)) for c in self.select])


def _arrow_of(t: SqlType, checked: Checked, expr: ir.Node) -> pa.DataType:
    if isinstance(expr, ir.RowCol):
        for column in checked.output:
            if column.name == expr.column:
                return column.type
    return t.arrow()


@allows_deep_expressions
def analyze(query: ast.Query, schema: pa.Schema) -> Checked:
    """Resolve and type ``query`` against the columns of its input (``schema``)."""
    return _Analyzer(query, schema).run()


class _Analyzer:
    def __init__(self, query: ast.Query, schema: pa.Schema) -> None:
        self.query = query
        self.text = query.text
        self.schema = schema
        self.mr = query.match
        self.columns_read: set[str] = set()

    def error(self, message: str, pos: int, expected: str | None = None) -> QueryError:
        return QueryError(message, self.text, pos, expected)

    def unsupported(self, message: str, pos: int) -> UnsupportedQueryError:
        return UnsupportedQueryError(message, self.text, pos)

    # ------------------------------------------------------------------ the whole query

    def run(self) -> Checked:
        mr = self.mr
        self.variables = self._pattern_variables(mr.pattern)
        self.subsets = self._subsets()
        partition = [self.column(n)[0] for n in mr.partition_by]
        if len(set(partition)) != len(partition):
            raise self.error("a column is named twice in PARTITION BY", mr.partition_by[0].pos)
        order = []
        for key in mr.order_by:
            name, _ = self.column(key.column)
            if name in partition:
                raise self.error(f"ORDER BY {name}: it is a PARTITION BY column", key.column.pos)
            order.append((name, key.descending, key.nulls_first))
        self._check_pattern(mr.pattern)
        defines: dict[str, ir.Node] = {}
        for name, expr in mr.defines:
            key = name.key
            if key in self.subsets:
                raise self.error(f"{name.text} is a union variable (SUBSET): only primary variables are defined", name.pos)
            if key not in self.variables:
                raise self.error(f"variable {name.text} is defined but does not occur in PATTERN", name.pos)
            if key in defines:
                raise self.error(f"variable {name.text} is defined twice", name.pos)
            node = self.bind(expr, "define")
            if node.type.kind not in ("bool", "null"):
                raise self.error(f"the condition of {name.text} is {node.type}, not a boolean", _start(expr))
            defines[key] = node
        measures: list[tuple[str, ir.Node]] = []
        for measure in mr.measures:
            node = self.bind(measure.expr, "measure")
            _check_row_aggregates(node, self, measure.expr.pos)
            if node.type.kind == "interval":
                raise self.unsupported("a measure that is an interval", measure.expr.pos)
            measures.append((measure.name.text, node))
        skip_to = None
        if mr.skip.kind in ("FIRST", "LAST"):
            assert mr.skip.var is not None
            skip_to = self.variable_class(mr.skip.var)
            if skip_to is None:
                raise self.error("AFTER MATCH SKIP TO needs a pattern variable", mr.skip.var.pos)
        if mr.empty == "UNMATCHED" and _has_exclusion(mr.pattern):
            raise self.error(
                "pattern exclusion {- -} cannot be used with ALL ROWS PER MATCH WITH UNMATCHED ROWS", mr.pattern.pos
            )
        time_column, within = self._within(order)
        output = self._output(partition, order, measures)
        checked = Checked(
            query=self.query,
            text=self.text,
            table=self.query.table.text,
            schema=self.schema,
            partition=partition,
            order=order,
            variables=self.variables,
            subsets=self.subsets,
            defines=defines,
            measures=measures,
            rows_per_match=mr.rows_per_match,
            empty=mr.empty,
            skip=mr.skip.kind,
            skip_to=skip_to,
            pattern=mr.pattern,
            within=within,
            time_column=time_column,
            output=output,
            select=[],
            where=None,
        )
        checked.select, checked.where = _Outer(self, output).bind(self.query)
        checked.columns_read = self.columns_read | set(partition) | {c for c, _, _ in order}
        return checked

    def _within(self, order: list[tuple[str, bool, bool]]) -> tuple[str | None, int | None]:
        within = self.mr.within
        if within is None:
            return None, None
        if not order:
            raise self.error("WITHIN needs ORDER BY a timestamp column (the time the window measures)", within.pos)
        column, descending, _ = order[0]
        t = sql_type(self.schema.field(column).type)
        if t is None or t.kind != "timestamp":
            raise self.error(
                f"WITHIN measures the first ORDER BY column, {column}, which is not a timestamp", within.pos
            )
        if descending:
            raise self.error("WITHIN needs the first ORDER BY column ascending", within.pos)
        if within.nanos <= 0:
            raise self.error("WITHIN needs a positive interval", within.pos)
        factor = UNIT_NANOS[t.unit or "ns"]
        # last - first < window  <=>  (last - first) < ceil(window / factor) in the column's unit.
        return column, -(-within.nanos // factor)

    def _output(self, partition, order, measures) -> list[OutputColumn]:
        out: list[OutputColumn] = [OutputColumn(c, self.schema.field(c).type, source=c) for c in partition]
        if self.mr.rows_per_match == "ALL":
            out += [OutputColumn(c, self.schema.field(c).type, source=c) for c, _, _ in order]
        for i, (name, node) in enumerate(measures):
            out.append(OutputColumn(name, self._measure_arrow(node), measure=i))
        if self.mr.rows_per_match == "ALL":
            listed = {c.source for c in out if c.source}
            out += [
                OutputColumn(f.name, f.type, source=f.name) for f in self.schema if f.name not in listed
            ]
        seen: dict[str, OutputColumn] = {}
        for column in out:
            if column.name in seen and column.source is not None and column.source == seen[column.name].source:
                continue  # ORDER BY c ASC, c DESC: ALL ROWS PER MATCH shows c twice (as Trino and Oracle do)
            if column.name in seen:
                measure = column.measure if column.measure is not None else seen[column.name].measure
                where = self.mr.measures[measure].name.pos if measure is not None else self.mr.pos
                raise self.error(
                    f"the result would have two columns named {column.name!r} (a measure and an input column "
                    "of ALL ROWS PER MATCH, or two measures): rename the measure",
                    where,
                )
            seen[column.name] = column
        return out

    def _measure_arrow(self, node: ir.Node) -> pa.DataType:
        """A measure that reads a column as it is keeps the column's Arrow type."""
        if isinstance(node, ir.At) and isinstance(node.expr, ir.RowCol):
            return self.schema.field(node.expr.column).type
        if isinstance(node, ir.Agg) and node.func in ("MIN", "MAX") and isinstance(node.arg, ir.RowCol):
            source = self.schema.field(node.arg.column).type
            if not pa.types.is_dictionary(source):
                return source
        return node.type.arrow()

    # ------------------------------------------------------------------ names

    def column(self, name: ast.Name) -> tuple[str, SqlType | None]:
        """The input column a name refers to: exact spelling first, then (unquoted names) the
        one column whose name equals it ignoring case."""
        names = self.schema.names
        if name.text in names:
            found = name.text
        else:
            matches = [n for n in names if not name.quoted and n.upper() == name.text.upper()]
            if len(matches) != 1:
                shown = ", ".join(names[:20]) + (", ..." if len(names) > 20 else "")
                what = "several columns match" if matches else "no such column"
                raise self.error(f"{what}: {name.text} (the input {self.query.table.text} has {shown})", name.pos)
            found = matches[0]
        if names.count(found) > 1:
            raise self.error(f"the input has several columns named {found!r}", name.pos)
        return found, sql_type(self.schema.field(found).type)

    def value_column(self, name: ast.Name) -> tuple[str, SqlType]:
        found, t = self.column(name)
        if t is None and pa.types.is_null(self.schema.field(found).type):
            return found, NULL
        if t is None:
            raise self.unsupported(
                f"column {found} has type {self.schema.field(found).type}, which MATCH_RECOGNIZE expressions "
                "cannot compute with (integers, doubles, decimals of scale up to 18, strings, booleans and "
                "timestamps can)",
                name.pos,
            )
        self.columns_read.add(found)
        return found, t

    def variable_class(self, name: ast.Name) -> str | None:
        key = name.key
        if key in self.variables or key in self.subsets:
            return key
        return None

    # ------------------------------------------------------------------ pattern

    def _pattern_variables(self, pattern: ast.Pattern) -> list[str]:
        found: list[str] = []
        stack = [pattern]
        while stack:
            node = stack.pop()
            if isinstance(node, ast.PVar):
                if node.name.key not in found:
                    found.append(node.name.key)
            elif isinstance(node, (ast.PConcat, ast.PAlt, ast.PPermute)):
                stack.extend(reversed(node.items))
            elif isinstance(node, (ast.PQuant, ast.PExclude)):
                stack.append(node.body)
        return found

    def _subsets(self) -> dict[str, frozenset[str]]:
        subsets: dict[str, frozenset[str]] = {}
        for name, members in self.mr.subsets:
            key = name.key
            if key in self.variables:
                raise self.error(f"union variable {name.text} has the name of a pattern variable", name.pos)
            if key in subsets:
                raise self.error(f"union variable {name.text} is defined twice", name.pos)
            keys = []
            for member in members:
                if member.key not in self.variables:
                    raise self.error(
                        f"{member.text} is not a pattern variable (a subset lists variables of PATTERN)", member.pos
                    )
                keys.append(member.key)
            subsets[key] = frozenset(keys)
        return subsets

    def _check_pattern(self, pattern: ast.Pattern) -> None:
        if _size(pattern) > MAX_PATTERN_SIZE:
            raise self.unsupported(
                f"a pattern larger than {MAX_PATTERN_SIZE} elements once its bounded quantifiers and PERMUTE "
                "are written out",
                pattern.pos,
            )
        stack = [pattern]
        while stack:
            node = stack.pop()
            if isinstance(node, ast.PVar) and node.name.key in self.subsets:
                raise self.error(f"{node.name.text} is a union variable: it cannot occur in PATTERN", node.pos)
            if isinstance(node, ast.PPermute):
                if len(node.items) > MAX_PERMUTE:
                    raise self.unsupported(f"PERMUTE of more than {MAX_PERMUTE} elements", node.pos)
            if isinstance(node, (ast.PConcat, ast.PAlt, ast.PPermute)):
                stack.extend(node.items)
            elif isinstance(node, (ast.PQuant, ast.PExclude)):
                stack.append(node.body)

    # ------------------------------------------------------------------ expressions

    def bind(self, expr: ast.Expr, context: str) -> ir.Node:
        """Bind a top-level DEFINE or MEASURES expression."""
        self.context = context
        return self._expr(expr, row=None)

    def _expr(self, e: ast.Expr, row: _RowScope | None) -> ir.Node:  # noqa: C901 - one case per node
        if isinstance(e, ast.Literal) and e.kind == "decimal":
            return self._decimal_const(e.value, e.pos)  # type: ignore[arg-type]
        if isinstance(e, ast.Literal):
            return ir.Const({"int": INT, "double": DOUBLE, "string": STRING, "bool": BOOL, "null": NULL}[e.kind], e.value)
        if isinstance(e, ast.TimestampLiteral):  # with a zone written: an instant, shown in UTC
            return ir.Const(SqlType("timestamp", "ns", "UTC" if e.zoned else None), e.nanos)
        if isinstance(e, ast.IntervalLiteral):
            return ir.Const(INTERVAL, e.nanos)
        if isinstance(e, ast.Column):
            cls = self._class_of(e.var)
            name, t = self.value_column(e.name)
            if t.kind == "null":  # a column of nulls only (Arrow's null type): NULL on every row
                if row is not None:
                    row.use(cls, e.pos, self)
                return ir.Const(NULL, None)
            leaf = ir.RowCol(t, name)
            if row is not None:
                row.use(cls, e.pos, self)
                return leaf
            return ir.At(t, ir.Logical("LAST", cls, 0, False), leaf)
        if isinstance(e, ast.Classifier):
            cls = self._class_of(e.var)
            leaf = ir.RowClassifier(STRING)
            if row is not None:
                row.use(cls, e.pos, self)
                return leaf
            return ir.At(STRING, ir.Logical("LAST", cls, 0, False), leaf)
        if isinstance(e, ast.MatchNumber):
            return ir.MatchNo(INT)
        if isinstance(e, ast.Star):
            raise self.error("* is only allowed in COUNT(*)", e.pos)
        if isinstance(e, ast.Navigation):
            return self._navigation(e, row)
        if isinstance(e, ast.Aggregate):
            return self._aggregate(e, row)
        if isinstance(e, ast.Unary):
            operand = self._expr(e.operand, row)
            if e.op == "NOT":
                self._need(operand, ("bool",), "NOT", e.pos)
                return ir.Op(BOOL, "not", (operand,))
            self._need(operand, ("int", "double", "decimal", "interval"), f"unary {e.op}", e.pos)
            return operand if e.op == "+" else self._fold(ir.Op(operand.type, "neg", (operand,)))
        if isinstance(e, ast.Binary):
            return self._binary(e, row)
        if isinstance(e, ast.IsNull):
            operand = self._expr(e.operand, row)
            return ir.Op(BOOL, "notnull" if e.negated else "isnull", (operand,))
        if isinstance(e, ast.Case):
            return self._case(e, row)
        if isinstance(e, ast.Cast):
            return self._cast(e, row)
        if isinstance(e, ast.Function) and e.name == "MATCH_ROWTIME":
            return self._match_rowtime(e, row)
        if isinstance(e, ast.Function):
            args = [self._expr(a, row) for a in e.args]
            if e.name == "ABS":
                self._need(args[0], ("int", "double", "decimal"), "ABS", e.pos)
                return ir.Op(args[0].type, "abs", (args[0],))
            if e.name == "CONCAT_WS":
                # the array form (Trino's concat_ws(string, array(varchar))): of an ARRAY_AGG measure
                if len(args) != 2 or args[1].type != SqlType("array", element=STRING):
                    raise self.unsupported("CONCAT_WS other than CONCAT_WS(separator, ARRAY_AGG(strings))", e.pos)
                self._need(args[0], ("string",), "CONCAT_WS's separator", e.args[0].pos)
                return ir.Op(STRING, "concat_ws", (args[0], args[1]))
            if e.name in ("LOWER", "UPPER"):
                if len(args) != 1:
                    raise self.error(f"{e.name} takes one argument", e.pos)
                self._need(args[0], ("string",), e.name, e.pos)
                return ir.Op(STRING, e.name.lower(), (args[0],))
            if e.name != "COALESCE":
                return self._function(e, args, row)
            t = self._common_type(e, args)
            return ir.Op(t, "coalesce", tuple(self._convert(a, t) for a in args))
        raise self.unsupported(f"{type(e).__name__} in an expression", e.pos)

    def _function(self, e: ast.Function, args: list[ir.Node], row: _RowScope | None) -> ir.Node:  # noqa: C901 - one case per function
        """Trino's and Flink's common scalar functions: of doubles (``ir.MATH_FUNCTIONS``, an
        integer argument converted), of strings (``ir.STRING_FUNCTIONS``), and those that are
        other expressions (MOD is %, GREATEST and LEAST a CASE, CONCAT ||)."""
        name = {"POW": "POWER", "CEILING": "CEIL", "CHAR_LENGTH": "LENGTH", "CHARACTER_LENGTH": "LENGTH", "SUBSTR": "SUBSTRING"}.get(e.name, e.name)
        arity = {"POWER": (2, 2), "MOD": (2, 2), "ROUND": (1, 2), "SUBSTRING": (2, 3), "GREATEST": (1, 10), "LEAST": (1, 10), "CONCAT": (1, 99)}
        low, high = arity.get(name, (1, 1))
        if not low <= len(args) <= high:
            count = f"{low}" if low == high else f"{low} to {high}" if high < 99 else f"at least {low}"  # noqa: E501
            raise self.error(f"{e.name} takes {count} argument{'s' if high > 1 else ''}", e.pos)
        if name == "MOD":
            return self._binary(ast.Binary(e.pos, "%", e.args[0], e.args[1]), row)
        if name == "CONCAT":
            node = args[0]
            for arg, source in zip(args[1:], e.args[1:]):
                self._need(node, ("string",), "CONCAT", e.pos)
                self._need(arg, ("string",), "CONCAT", source.pos)
                node = ir.Op(STRING, "concat", (node, arg))
            self._need(node, ("string",), "CONCAT", e.pos)
            return node
        if name in ("GREATEST", "LEAST"):
            # null if any argument is null (Trino), else the largest (smallest) by SQL's comparison
            t = self._common_type(e, args)
            self._need(ir.Const(t, None), ("int", "double", "decimal", "string", "timestamp"), e.name, e.pos)
            values = [self._convert(a, t) for a in args]
            best = values[0]
            for value in values[1:]:
                pick = ir.Op(BOOL, ">=" if name == "GREATEST" else "<=", (best, value))
                best = ir.Case(t, ((pick, best),), value)
            nulls = [ir.Op(BOOL, "isnull", (v,)) for v in values]
            condition = nulls[0]
            for more in nulls[1:]:
                condition = ir.Op(BOOL, "or", (condition, more))
            return ir.Case(t, ((condition, ir.Const(t, None)),), best)
        if name == "LENGTH":
            self._need(args[0], ("string",), e.name, e.pos)
            return ir.Op(INT, "length", (args[0],))
        if name == "SUBSTRING":  # SUBSTRING(s, start [, length]): start 1 is the first character
            self._need(args[0], ("string",), e.name, e.pos)
            for arg, source in zip(args[1:], e.args[1:]):
                if not (isinstance(arg, ir.Const) and arg.type.kind in ("int", "null")):
                    raise self.unsupported(f"{e.name} with a start or length that is not an integer constant", source.pos)
            return ir.Op(STRING, "substr", tuple(args))
        for arg, source in zip(args, e.args):
            self._need(arg, ("int", "double"), e.name, source.pos)
        if name in ("FLOOR", "CEIL", "ROUND", "SIGN") and args[0].type.kind in ("int", "null"):
            if name == "SIGN":
                x = args[0]
                return ir.Case(
                    INT,
                    ((ir.Op(BOOL, ">", (x, ir.Const(INT, 0))), ir.Const(INT, 1)),
                     (ir.Op(BOOL, "<", (x, ir.Const(INT, 0))), ir.Const(INT, -1)),
                     (ir.Op(BOOL, "=", (x, ir.Const(INT, 0))), ir.Const(INT, 0))),
                    None,
                )  # fmt: skip
            if name == "ROUND" and len(args) == 2 and not (
                isinstance(args[1], ir.Const) and args[1].type.kind == "int" and int(args[1].value) >= 0  # type: ignore[arg-type]
            ):
                raise self.unsupported("ROUND of an integer with digits that are not a constant >= 0", e.args[1].pos)
            return args[0]  # an integer is whole already (ROUND(x, d) of an integer: d >= 0 as Trino's is)
        if name == "ROUND" and len(args) == 2:
            if not (isinstance(args[1], ir.Const) and args[1].type.kind == "int" and 0 <= int(args[1].value) <= 15):  # type: ignore[arg-type]
                raise self.unsupported("ROUND with a number of digits that is not a constant from 0 to 15", e.args[1].pos)
            return ir.Op(DOUBLE, "round", (self._convert(args[0], DOUBLE), ir.Const(DOUBLE, float(args[1].value))))  # type: ignore[arg-type]
        return ir.Op(DOUBLE, name.lower(), tuple(self._convert(a, DOUBLE) for a in args))

    def _common_type(self, e: ast.Function, args: list[ir.Node]) -> SqlType:
        """The type all of a function's arguments convert to (COALESCE, GREATEST, LEAST)."""
        t = args[0].type
        for arg, source in zip(args[1:], e.args[1:]):
            u = unify(t, arg.type)
            if u is None:
                raise self.error(f"{e.name} mixes {t} and {arg.type}", source.pos)
            t = u
        return t

    def _class_of(self, var: ast.Name | None) -> str | None:
        if var is None:
            return ir.UNIVERSAL
        cls = self.variable_class(var)
        if cls is None:
            raise self.error(
                f"{var.text} is not a pattern variable (variables: {', '.join(self.variables + list(self.subsets))})",
                var.pos,
            )
        return cls

    def _semantics(self, e, default_final: bool = False) -> bool:
        if e.semantics == "FINAL":
            if self.context == "define":
                raise self.error("FINAL is not allowed in DEFINE (conditions see the match so far)", e.pos)
            return True
        return default_final

    def _navigation(self, e: ast.Navigation, row: _RowScope | None) -> ir.Node:
        if row is not None:
            raise self.error(
                f"{e.func} cannot be used inside {row.owner}"
                + (" (only FIRST or LAST may be the first argument of PREV or NEXT)" if row.owner in ("PREV", "NEXT") else ""),
                e.pos,
            )
        if e.func in ("FIRST", "LAST"):
            scope = _RowScope(e.func)
            inner = self._expr(e.arg, scope)
            locator = ir.Logical(e.func, scope.require(e, self), e.offset, self._semantics(e))
            return ir.At(inner.type, locator, inner)
        delta = -e.offset if e.func == "PREV" else e.offset
        if isinstance(e.arg, ast.Navigation) and e.arg.func in ("FIRST", "LAST"):
            inner_nav = e.arg
            scope = _RowScope(inner_nav.func)
            inner = self._expr(inner_nav.arg, scope)
            base = ir.Logical(inner_nav.func, scope.require(inner_nav, self), inner_nav.offset, self._semantics(inner_nav))
            return ir.At(inner.type, ir.Physical(base, delta), inner)
        scope = _RowScope(e.func)
        inner = self._expr(e.arg, scope)
        base = ir.Logical("LAST", scope.require(e, self), 0, False)
        return ir.At(inner.type, ir.Physical(base, delta), inner)

    def _aggregate(self, e: ast.Aggregate, row: _RowScope | None) -> ir.Node:
        if row is not None:
            raise self.error(f"{e.func} cannot be used inside {row.owner}", e.pos)
        final = self._semantics(e)
        if isinstance(e.arg, ast.Star):
            cls = self._class_of(e.arg.var)
            return ir.Agg(INT, "COUNT", cls, None, final)
        scope = _RowScope(e.func)
        arg = self._expr(e.arg, scope)
        key = self._expr(e.key, scope) if e.key is not None else None
        cls = scope.classes.pop() if scope.classes else ir.UNIVERSAL
        t = arg.type
        if e.func in ir.ROW_AGGREGATES:
            return self._row_aggregate(e, arg, key, cls, final)
        if e.func == "COUNT":
            return ir.Agg(INT, "COUNT", cls, arg, final)
        # Trino's and Flink's aggregates that are these five: BOOL_AND is MIN of booleans (FALSE
        # < TRUE), BOOL_OR MAX, COUNT_IF the count of the rows where it is TRUE, ARBITRARY (any
        # non-null value) the smallest.
        if e.func in ("BOOL_AND", "EVERY", "BOOL_OR", "COUNT_IF"):
            self._need(arg, ("bool",), e.func, e.arg.pos)
            if e.func == "COUNT_IF":
                return ir.Agg(INT, "COUNT", cls, ir.Case(INT, ((arg, ir.Const(INT, 1)),), None), final)
            return ir.Agg(BOOL, "MAX" if e.func == "BOOL_OR" else "MIN", cls, arg, final)
        if e.func in ("ARBITRARY", "ANY_VALUE"):
            self._need(arg, VALUE_KINDS, e.func, e.arg.pos)
            return ir.Agg(t if t.kind != "null" else INT, "MIN", cls, arg, final)
        if t.kind == "decimal" and e.func in ("SUM", "AVG"):
            # Trino's: SUM is DECIMAL(38, s); AVG keeps DECIMAL(p, s), rounded half away from zero:
            # the exact SUM divided by the COUNT, a decimal division
            total = ir.Agg(decimal(38, t.scale), "SUM", cls, arg, final)
            if e.func == "SUM":
                return total
            count = ir.Op(as_decimal(INT), "cast", (ir.Agg(INT, "COUNT", cls, arg, final),))
            return ir.Op(t, "/", (total, count))
        if e.func in ("SUM", "AVG"):
            self._need(arg, ("int", "double"), e.func, e.arg.pos)
            result = DOUBLE if (e.func == "AVG" or t.kind == "double") else INT
            return ir.Agg(result, e.func, cls, arg, final)
        self._need(arg, VALUE_KINDS, e.func, e.arg.pos)
        return ir.Agg(t if t.kind != "null" else INT, e.func, cls, arg, final)

    def _match_rowtime(self, e: ast.Function, row: _RowScope | None) -> ir.Node:
        """Flink's MATCH_ROWTIME(): the time (the first ORDER BY column, a timestamp) of the
        match's last row: FINAL LAST(t) in MEASURES, the current row's in DEFINE."""
        if row is not None or self.context not in ("measure", "define"):
            raise self.error("MATCH_ROWTIME() belongs in MEASURES or DEFINE", e.pos)
        order = self.mr.order_by
        column, t = self.column(order[0].column) if order else (None, None)
        if t is None or t.kind != "timestamp" or order[0].descending:
            raise self.error("MATCH_ROWTIME() needs ORDER BY a timestamp column, ascending (its time)", e.pos)
        self.columns_read.add(column)  # type: ignore[arg-type]
        final = self.context == "measure"
        return ir.At(t, ir.Logical("LAST", ir.UNIVERSAL, 0, final), ir.RowCol(t, column))  # type: ignore[arg-type]

    def _row_aggregate(self, e: ast.Aggregate, arg: ir.Node, key: ir.Node | None, cls: str | None, final: bool) -> ir.Node:
        """ARRAY_AGG, MAX_BY, MIN_BY: in MEASURES computed from the match's rows once it is found
        (engine ``MatchRows``); MAX_BY and MIN_BY in DEFINE by the matcher's accumulators (the
        key's and the value's, compiler), ARRAY_AGG not in DEFINE."""
        if self.context == "define" and e.func == "ARRAY_AGG":
            raise self.unsupported(f"{e.func} in DEFINE (it is computed once the match is found: use it in MEASURES)", e.pos)
        kinds = VALUE_KINDS
        self._need(arg, kinds, e.func, e.arg.pos)
        t = arg.type if arg.type.kind != "null" else INT
        if e.func == "ARRAY_AGG":
            return ir.Agg(SqlType("array", element=t), e.func, cls, arg, final)
        assert key is not None and e.key is not None
        self._need(key, kinds, e.func + "'s key", e.key.pos)
        return ir.Agg(t, e.func, cls, arg, final, key)

    def _need(self, node: ir.Node, kinds: tuple[str, ...], what: str, pos: int) -> None:
        if node.type.kind not in kinds and node.type.kind != "null":
            raise self.error(f"{what} needs {' or '.join(kinds)}, not {node.type}", pos)

    def _binary(self, e: ast.Binary, row: _RowScope | None) -> ir.Node:
        left = self._expr(e.left, row)
        right = self._expr(e.right, row)
        op = e.op
        if op in ("AND", "OR"):
            self._need(left, ("bool",), op, e.left.pos)
            self._need(right, ("bool",), op, e.right.pos)
            return ir.Op(BOOL, op.lower(), (left, right))
        if op == "||":
            self._need(left, ("string",), "||", e.left.pos)
            self._need(right, ("string",), "||", e.right.pos)
            return ir.Op(STRING, "concat", (left, right))
        lt, rt = left.type, right.type
        if op == "LIKE":
            self._need(left, ("string",), "LIKE", e.left.pos)
            return ir.Op(BOOL, "like", (left, right))
        if "decimal" in (lt.kind, rt.kind) and {lt.kind, rt.kind} <= {"decimal", "int", "double", "null"}:
            return self._decimal_binary(op, left, right, e.pos)
        if op in COMPARISONS:
            if lt.kind == "null" or rt.kind == "null":
                return ir.Op(BOOL, op, (left, right))
            if lt.numeric and rt.numeric:
                if lt != rt:
                    left, right = self._convert(left, DOUBLE), self._convert(right, DOUBLE)
                return ir.Op(BOOL, op, (left, right))
            if lt.kind == "timestamp" and rt.kind == "timestamp":
                if (lt.tz is None) != (rt.tz is None) and not (_is_literal(left) or _is_literal(right)):
                    raise self.error("comparing a timestamp with a time zone and one without", e.pos)
                unit = finer_unit(lt.unit or "ns", rt.unit or "ns")
                return ir.Op(BOOL, op, (self._to_unit(left, unit), self._to_unit(right, unit)))
            if lt.kind == rt.kind and lt.kind in ("string", "bool", "interval"):
                if lt.kind == "bool" and op not in ("=", "<>"):
                    raise self.error(f"booleans compare with = and <> only, not {op}", e.pos)
                return ir.Op(BOOL, op, (left, right))
            raise self.error(f"cannot compare {lt} with {rt}", e.pos)
        # arithmetic
        if lt.kind == "timestamp" or rt.kind == "timestamp":
            return self._time_arithmetic(e, left, right)
        if lt.kind == "interval" and rt.kind == "interval" and op in ("+", "-"):
            return self._fold(ir.Op(INTERVAL, op, (left, right)))
        for node, source in ((left, e.left), (right, e.right)):
            self._need(node, ("int", "double"), f"'{op}'", source.pos)
        if lt.kind == "null" and rt.kind == "null":
            t = INT
        elif lt.kind == "null":
            t = rt
        elif rt.kind == "null":
            t = lt
        else:
            t = INT if (lt.kind == "int" and rt.kind == "int") else DOUBLE
        return self._fold(ir.Op(t, op, (self._convert(left, t), self._convert(right, t))))

    # ------------------------------------------------------------------ decimals

    def _decimal_const(self, value: Decimal, pos: int, t: SqlType | None = None) -> ir.Const:
        """A decimal constant, of its own digits' type unless ``t`` is given; its unscaled value
        must fit 64 bits (as every decimal value must)."""
        if t is None:
            exponent = int(value.as_tuple().exponent)  # type: ignore[arg-type]
            scale = max(0, -exponent)
            digits = len(value.as_tuple().digits) + max(0, exponent)
            t = decimal(max(digits, scale), scale)
        if t.scale > MAX_DECIMAL_SCALE:
            raise self.unsupported(f"the decimal {value} has more than {MAX_DECIMAL_SCALE} digits after the point", pos)
        unscaled = value.scaleb(t.scale)
        if unscaled != unscaled.to_integral_value() or abs(unscaled) > INT64_MAX:
            raise self.unsupported(
                f"the decimal {value} as {t} (decimals are exact with at most 18 digits in all)", pos
            )
        return ir.Const(t, value)

    def _exact_literal(self, node: ir.Node, pos: int) -> ir.Node:
        """A double literal meeting a decimal is read as the decimal it is written as (``1.25``:
        DECIMAL '1.25', as Trino reads it), so that the comparison or arithmetic stays exact."""
        if not (isinstance(node, ir.Const) and node.type.kind == "double" and node.value is not None):
            return node
        value = float(node.value)  # type: ignore[arg-type]
        if value != value or value in (float("inf"), float("-inf")):
            return node
        exact = Decimal(repr(value))
        if -int(exact.as_tuple().exponent) > MAX_DECIMAL_SCALE:  # type: ignore[operator]
            return node
        try:
            return self._decimal_const(exact, pos)
        except UnsupportedQueryError:
            return node

    def _to_decimal(self, node: ir.Node, t: SqlType, pos: int) -> ir.Node:
        """An integer or decimal as decimal ``t`` whose scale is at least the node's (exact: the
        engine multiplies the unscaled value by a power of ten, an error past 64 bits); a
        smaller scale rounds half away from zero (CAST)."""
        source = node.type
        if source.kind == "null":
            return ir.Const(t, None) if isinstance(node, ir.Const) else node
        if isinstance(node, ir.Const) and node.value is not None and source.kind in ("int", "decimal"):
            value = Decimal(node.value)  # type: ignore[arg-type]
            if source.kind == "decimal" and t.scale < source.scale:
                return ir.Op(t, "rescale", (node,))
            return self._decimal_const(value, pos, t)
        if source.kind == "int":
            node = ir.Op(as_decimal(INT), "cast", (node,))
            source = node.type
        if source.scale != t.scale:
            return ir.Op(t, "rescale", (node,))
        return node

    def _decimal_operand(self, node: ir.Node, scale: int, pos: int) -> ir.Node:
        """An integer or decimal operand brought to ``scale`` (its integer digits kept)."""
        if node.type.kind == "null":
            return node
        t = as_decimal(node.type)
        return self._to_decimal(node, decimal(t.precision - t.scale + scale, scale), pos)

    def _decimal_binary(self, op: str, left: ir.Node, right: ir.Node, pos: int) -> ir.Node:
        """A comparison or arithmetic with a decimal operand: exact between decimals and
        integers (Trino's result types, ``types.decimal_result``); with a double, a double."""
        left, right = self._exact_literal(left, pos), self._exact_literal(right, pos)
        kinds = {left.type.kind, right.type.kind}
        if "double" in kinds:
            left, right = self._convert(left, DOUBLE), self._convert(right, DOUBLE)
            if op in COMPARISONS:
                return ir.Op(BOOL, op, (left, right))
            if op not in ("+", "-", "*", "/", "%"):
                raise self.error(f"'{op}' of numbers", pos)
            return ir.Op(DOUBLE, op, (left, right))
        lt = left.type if left.type.kind != "null" else right.type
        rt = right.type if right.type.kind != "null" else left.type
        if op in COMPARISONS:
            scale = max(as_decimal(lt).scale, as_decimal(rt).scale)
            return ir.Op(BOOL, op, (self._decimal_operand(left, scale, pos), self._decimal_operand(right, scale, pos)))
        if op not in ("+", "-", "*", "/", "%"):
            raise self.error(f"'{op}' of numbers", pos)
        t = decimal_result(op, lt, rt)
        if t.scale > MAX_DECIMAL_SCALE:
            raise self.unsupported(
                f"a decimal {op} whose result has {t.scale} digits after the point (at most {MAX_DECIMAL_SCALE})", pos
            )
        if op in ("+", "-", "%"):  # on the unscaled values at the result's scale
            left, right = self._decimal_operand(left, t.scale, pos), self._decimal_operand(right, t.scale, pos)
        else:  # * and / take each operand at its own scale
            left = self._decimal_operand(left, as_decimal(lt).scale, pos)
            right = self._decimal_operand(right, as_decimal(rt).scale, pos)
        return ir.Op(t, op, (left, right))

    def _time_arithmetic(self, e: ast.Binary, left: ir.Node, right: ir.Node) -> ir.Node:
        lt, rt = left.type, right.type
        if e.op == "+" and lt.kind == "interval":
            left, right, lt, rt = right, left, rt, lt
        if not (lt.kind == "timestamp" and rt.kind == "interval" and e.op in ("+", "-")):
            raise self.unsupported(
                f"{lt} {e.op} {rt} (timestamps support + and - of an INTERVAL literal)", e.pos
            )
        assert isinstance(right, ir.Const)
        unit = lt.unit or "ns"
        nanos = int(right.value)  # type: ignore[arg-type]
        while nanos % UNIT_NANOS[unit]:
            unit = {"s": "ms", "ms": "us", "us": "ns"}[unit]
        t = SqlType("timestamp", unit, lt.tz)
        amount = ir.Const(t, nanos // UNIT_NANOS[unit])
        left = self._to_unit(left, unit)
        if isinstance(left, ir.Const) and left.value is not None:  # TIMESTAMP '...' - INTERVAL '1' DAY
            value = int(left.value) + (1 if e.op == "+" else -1) * int(amount.value)  # type: ignore[arg-type]
            if not -(2**63) <= value < 2**63:
                raise self.error("the timestamp is beyond the int64 range of times (years 1677 to 2262)", e.pos)
            return ir.Const(t, value)
        return ir.Op(t, e.op, (left, amount))

    def _to_unit(self, node: ir.Node, unit: str) -> ir.Node:
        t = node.type
        if t.kind != "timestamp" or t.unit == unit:
            return node
        factor = UNIT_NANOS[t.unit or "ns"] // UNIT_NANOS[unit]
        target = SqlType("timestamp", unit, t.tz)
        if isinstance(node, ir.Const):
            return ir.Const(target, int(node.value) * factor)  # type: ignore[arg-type]
        return ir.Op(target, "scale", (node, ir.Const(INT, factor)))

    def _convert(self, node: ir.Node, t: SqlType) -> ir.Node:
        """Implicit conversion to ``t`` (int to double, timestamp units, a typed NULL)."""
        if node.type == t:
            return node
        if node.type.kind == "null":
            return ir.Const(t, None) if isinstance(node, ir.Const) else node
        if t.kind == "double" and node.type.kind in ("int", "decimal"):
            if isinstance(node, ir.Const):
                return ir.Const(DOUBLE, float(node.value))  # type: ignore[arg-type]
            return ir.Op(DOUBLE, "cast", (node,))
        if t.kind == "decimal" and node.type.kind in ("int", "decimal"):
            return self._to_decimal(node, t, 0)
        if t.kind == "timestamp" and node.type.kind == "timestamp":
            return self._to_unit(node, t.unit or "ns")
        return node

    def _fold(self, node: ir.Op) -> ir.Node:
        """Negative literals and interval sums become constants."""
        if node.op == "neg" and isinstance(node.args[0], ir.Const) and node.args[0].value is not None:
            value = node.args[0].value
            if isinstance(value, int) and value == -(2**63):
                return node
            return ir.Const(node.type, -value)  # type: ignore[operator]
        if node.type.kind == "interval" and all(isinstance(a, ir.Const) for a in node.args) and node.op in ("+", "-"):
            a, b = (int(x.value) for x in node.args)  # type: ignore[union-attr, arg-type]
            return ir.Const(INTERVAL, a + b if node.op == "+" else a - b)
        return node

    def _case(self, e: ast.Case, row: _RowScope | None) -> ir.Node:
        whens = []
        operand = self._expr(e.operand, row) if e.operand is not None else None
        for cond, value in e.whens:
            c = self._expr(cond, row)
            if operand is not None:
                c = self._binary_nodes("=", operand, c, cond.pos)
            else:
                self._need(c, ("bool",), "WHEN", cond.pos)
            whens.append((c, self._expr(value, row)))
        otherwise = self._expr(e.otherwise, row) if e.otherwise is not None else None
        t = NULL
        for node, source in [(v, s[1]) for v, s in zip((w[1] for w in whens), e.whens)] + (
            [(otherwise, e.otherwise)] if otherwise is not None else []
        ):
            u = unify(t, node.type)
            if u is None:
                raise self.error(f"CASE mixes {t} and {node.type}", source.pos)
            t = u
        whens = [(c, self._convert(v, t)) for c, v in whens]
        return ir.Case(t, tuple(whens), self._convert(otherwise, t) if otherwise is not None else None)

    def _binary_nodes(self, op: str, left: ir.Node, right: ir.Node, pos: int) -> ir.Node:
        lt, rt = left.type, right.type
        if "decimal" in (lt.kind, rt.kind) and {lt.kind, rt.kind} <= {"decimal", "int", "double", "null"}:
            return self._decimal_binary(op, left, right, pos)
        if lt.numeric and rt.numeric and lt != rt:
            return ir.Op(BOOL, op, (self._convert(left, DOUBLE), self._convert(right, DOUBLE)))
        if lt.kind != rt.kind and "null" not in (lt.kind, rt.kind):
            raise self.error(f"cannot compare {lt} with {rt}", pos)
        return ir.Op(BOOL, op, (left, right))

    def _cast(self, e: ast.Cast, row: _RowScope | None) -> ir.Node:
        operand = self._expr(e.operand, row)
        source = operand.type.kind
        target = {"BIGINT": INT, "DOUBLE": DOUBLE, "VARCHAR": STRING, "BOOLEAN": BOOL}.get(e.type)
        if e.type == "TIMESTAMP":
            if source in ("timestamp", "null"):
                return operand
            raise self.unsupported(f"CAST of {operand.type} to TIMESTAMP", e.type_pos)
        if e.type.startswith("DECIMAL("):
            return self._cast_decimal(operand, e)
        if source == "decimal" and e.type == "BIGINT":  # rounded half away from zero (Trino's)
            return ir.Op(INT, "cast", (ir.Op(decimal(operand.type.precision, 0), "rescale", (operand,)),))
        if source == "decimal" and e.type == "DOUBLE":
            return self._convert(operand, DOUBLE)
        assert target is not None
        if source == target.kind or source == "null":
            return self._convert(operand, target) if source == "null" else operand
        allowed = {("int", "double"), ("double", "int"), ("bool", "int"), ("int", "bool")}
        if (source, target.kind) not in allowed:
            raise self.unsupported(f"CAST of {operand.type} to {e.type}", e.type_pos)
        return ir.Op(target, "cast", (operand,))

    def _cast_decimal(self, operand: ir.Node, e: ast.Cast) -> ir.Node:
        """CAST to DECIMAL(p, s): of an integer or a decimal, brought to scale s (rounded half
        away from zero), then an error if it has more than p digits; of a double literal, its
        written value."""
        precision, scale = (int(x) for x in e.type[len("DECIMAL(") : -1].split(","))
        if scale > MAX_DECIMAL_SCALE:
            raise self.unsupported(f"DECIMAL({precision}, {scale}): at most {MAX_DECIMAL_SCALE} digits after the point", e.type_pos)
        t = decimal(precision, scale)
        operand = self._exact_literal(operand, e.pos)
        source = operand.type.kind
        if source == "null":
            return ir.Const(t, None) if isinstance(operand, ir.Const) else operand
        if source not in ("int", "decimal"):
            raise self.unsupported(
                f"CAST of {operand.type} to DECIMAL (integers, decimals and double literals are cast)", e.type_pos
            )
        widened = self._to_decimal(operand, decimal(38, scale), e.pos)
        if isinstance(widened, ir.Const) and widened.value is not None:
            value = Decimal(widened.value)  # type: ignore[arg-type]
            if abs(value.scaleb(scale)) >= 10**precision:
                raise self.error(f"{value} does not fit {t}", e.pos)
            return ir.Const(t, value)
        return ir.Op(t, "fit", (widened,))

    # ------------------------------------------------------------------ helpers for the outer query


class _RowScope:
    """The argument of a navigation or aggregate: every column and CLASSIFIER in it must read
    rows of one variable class."""

    def __init__(self, owner: str) -> None:
        self.owner = owner
        self.classes: set[str | None] = set()

    def use(self, cls: str | None, pos: int, analyzer: _Analyzer) -> None:
        self.classes.add(cls)
        if len(self.classes) > 1:
            shown = sorted("*" if c is None else c for c in self.classes)
            raise analyzer.error(
                f"the argument of {self.owner} reads rows of several variables ({', '.join(shown)}); "
                "it must read one variable, one union variable, or only unqualified columns",
                pos,
            )

    def require(self, e: ast.Expr, analyzer: _Analyzer) -> str | None:
        if not self.classes:
            raise analyzer.error(
                f"the first argument of {self.owner} must read a column or CLASSIFIER() (it locates a row)", e.pos
            )
        return next(iter(self.classes))


class _Outer:
    """Binds the outer SELECT list and WHERE over the MATCH_RECOGNIZE result's columns."""

    def __init__(self, analyzer: _Analyzer, output: list[OutputColumn]) -> None:
        self.a = analyzer
        self.output = output
        self.by_name = {c.name: c for c in output}
        self.alias = analyzer.query.alias

    def _types(self, column: OutputColumn) -> SqlType | None:
        return sql_type(column.type)

    def bind(self, query: ast.Query) -> tuple[list[SelectColumn], ir.Node | None]:
        columns: list[SelectColumn] = []
        for item in query.select:
            if item.star is not None:
                if item.star.text != "*":
                    self._qualifier(item.star, item.pos)
                for c in self.output:
                    columns.append(SelectColumn(c.name, ir.RowCol(self._types(c) or NULL, c.name)))
                continue
            assert item.expr is not None
            node = self.expr(item.expr)
            if item.name is not None:
                name = item.name.text
            elif isinstance(item.expr, ast.Column) and isinstance(node, ir.RowCol):
                name = node.column
            else:
                # Calcite's (and so Flink's) name: the item's place in the list, decided by the
                # text (CAST(v AS BIGINT) of a BIGINT v is still EXPR$n)
                name = f"EXPR${len(columns)}"
            columns.append(SelectColumn(name, node))
        names = [c.name for c in columns]
        # one column twice (SELECT * of ORDER BY c ASC, c DESC; SELECT c, c) is SQL; two of one name is not
        duplicates = {n for n in names if len({c.expr for c in columns if c.name == n}) > 1}
        if duplicates:
            raise self.a.error(
                f"the SELECT list names {sorted(duplicates)[0]!r} twice (give one of them another name with AS)",
                query.select[0].pos,
            )
        where = None
        if query.where is not None:
            where = self.expr(query.where)
            if where.type.kind not in ("bool", "null"):
                raise self.a.error(f"WHERE needs a boolean, not {where.type}", query.where.pos)
        return columns, where

    def _qualifier(self, name: ast.Name, pos: int) -> None:
        if self.alias is None or name.key != self.alias.key:
            expected = f"the alias {self.alias.text}" if self.alias else "an alias (the result has none)"
            raise self.a.error(f"{name.text} is not the result's name: qualify columns with {expected}", name.pos)

    def column(self, name: ast.Name) -> OutputColumn:
        if name.text in self.by_name:
            return self.by_name[name.text]
        matches = [c for c in self.output if not name.quoted and c.name.upper() == name.text.upper()]
        if len(matches) != 1:
            shown = ", ".join(c.name for c in self.output)
            raise self.a.error(f"no column {name.text} in the MATCH_RECOGNIZE result (it has {shown})", name.pos)
        return matches[0]

    def expr(self, e: ast.Expr) -> ir.Node:
        a = self.a
        if isinstance(e, ast.Column):
            if e.var is not None:
                self._qualifier(e.var, e.pos)
            column = self.column(e.name)
            t = self._types(column)
            if t is None:
                return ir.RowCol(NULL, column.name)
            return ir.RowCol(t, column.name)
        if isinstance(e, (ast.Navigation, ast.Aggregate, ast.Classifier, ast.MatchNumber, ast.Star)):
            raise a.error(
                "navigation, aggregates, CLASSIFIER and MATCH_NUMBER belong in MEASURES (the outer query reads "
                "the result's columns)",
                e.pos,
            )
        # Everything else binds as in a row expression over the result's columns.
        saved = a.schema, a.columns_read
        a.schema = pa.schema([pa.field(c.name, c.type) for c in self.by_name.values()])  # a column shown twice: once
        a.columns_read = set()  # the result's columns, not the input's
        a.context = "outer"
        try:
            return self._rewrite(e)
        finally:
            a.schema, a.columns_read = saved

    def _rewrite(self, e: ast.Expr) -> ir.Node:
        """Bind with the analyzer's row rules, then columns are read on the result row itself."""
        scope = _RowScope("the outer query")
        node = self.a._expr(_strip_alias(e, self), scope)
        return node


def _strip_alias(e: ast.Expr, outer: _Outer) -> ast.Expr:
    """Check ``alias.column`` qualifiers and drop them (columns are the result's)."""
    if isinstance(e, ast.Column):
        if e.var is not None:
            outer._qualifier(e.var, e.pos)
        return ast.Column(e.pos, None, e.name)
    if isinstance(e, (ast.Navigation, ast.Aggregate, ast.Classifier, ast.MatchNumber)):
        raise outer.a.error(
            "navigation, aggregates, CLASSIFIER and MATCH_NUMBER belong in MEASURES (the outer query reads "
            "the result's columns)",
            e.pos,
        )
    if isinstance(e, ast.Unary):
        return ast.Unary(e.pos, e.op, _strip_alias(e.operand, outer))
    if isinstance(e, ast.Binary):
        return ast.Binary(e.pos, e.op, _strip_alias(e.left, outer), _strip_alias(e.right, outer))
    if isinstance(e, ast.IsNull):
        return ast.IsNull(e.pos, _strip_alias(e.operand, outer), e.negated)
    if isinstance(e, ast.Case):
        return ast.Case(
            e.pos,
            _strip_alias(e.operand, outer) if e.operand is not None else None,
            tuple((_strip_alias(c, outer), _strip_alias(v, outer)) for c, v in e.whens),
            _strip_alias(e.otherwise, outer) if e.otherwise is not None else None,
        )
    if isinstance(e, ast.Cast):
        return ast.Cast(e.pos, _strip_alias(e.operand, outer), e.type, e.type_pos)
    if isinstance(e, ast.Function):
        return ast.Function(e.pos, e.name, tuple(_strip_alias(x, outer) for x in e.args))
    return e


def _check_row_aggregates(node: ir.Node, analyzer: _Analyzer, pos: int) -> None:
    """ARRAY_AGG, MAX_BY and MIN_BY are computed from the match's rows after matching: a
    measure is one of them, or CONCAT_WS of a constant separator and an ARRAY_AGG."""
    if isinstance(node, ir.Agg) and node.func in ir.ROW_AGGREGATES:
        parts = [node.arg, node.key]
    elif isinstance(node, ir.Op) and node.op == "concat_ws":
        if not isinstance(node.args[0], ir.Const):
            raise analyzer.unsupported("CONCAT_WS with a separator that is not a constant", pos)
        parts = [node.args[1].arg] if isinstance(node.args[1], ir.Agg) else [node.args[1]]  # type: ignore[attr-defined]
    else:
        parts = [node]
    for part in parts:
        for inner in ir.walk(part) if part is not None else ():
            if (isinstance(inner, ir.Agg) and inner.func in ir.ROW_AGGREGATES) or inner.type.kind == "array":
                raise analyzer.unsupported(
                    "ARRAY_AGG, MAX_BY or MIN_BY inside an expression (a measure may be one of them, or "
                    "CONCAT_WS(separator, ARRAY_AGG(...)))",
                    pos,
                )


def _start(e: ast.Expr) -> int:
    """Where an expression's text starts (a binary operation's node is at its operator)."""
    while isinstance(e, ast.Binary):
        e = e.left
    return e.pos


def _is_literal(node: ir.Node) -> bool:
    return isinstance(node, ir.Const)


def _has_exclusion(pattern: ast.Pattern) -> bool:
    stack = [pattern]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.PExclude):
            return True
        if isinstance(node, (ast.PConcat, ast.PAlt, ast.PPermute)):
            stack.extend(node.items)
        elif isinstance(node, ast.PQuant):
            stack.append(node.body)
    return False


def _size(pattern: ast.Pattern) -> int:
    """Elements of the pattern once bounded quantifiers and PERMUTE are written out."""
    if isinstance(pattern, (ast.PVar, ast.PEmpty, ast.PAnchor)):
        return 1
    if isinstance(pattern, ast.PExclude):
        return _size(pattern.body) + 2
    if isinstance(pattern, (ast.PConcat, ast.PAlt)):
        return sum(_size(p) for p in pattern.items) + 1
    if isinstance(pattern, ast.PPermute):
        import math

        return math.factorial(len(pattern.items)) * (sum(_size(p) for p in pattern.items) + 1)
    if isinstance(pattern, ast.PQuant):
        copies = max(pattern.low, 1) if pattern.high is None else max(pattern.high, 1)
        return copies * _size(pattern.body) + 2
    return 1
