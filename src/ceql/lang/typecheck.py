"""Types of conditions, predicates and measures (analysis pass 2).

Value types: ``int``, ``double``, ``string``, ``boolean``, ``timestamp`` (a ``primary_time``, a
``TIMESTAMP '...'`` literal, a timestamp plus or minus an interval), ``interval`` (an
``INTERVAL 'n' UNIT`` literal, the difference of two timestamps; reported as ``int``
nanoseconds), and for measures ``list<T>`` (``x.a`` on a label that may hold several events).
Comparisons need one *kind* of value on both sides: number (int, double and the times, which
are integer nanoseconds), string or boolean; a time compared with a string is an error that
shows the ``TIMESTAMP`` form. A time mixed with a plain number (``f.ts < t.ts - 60``: 60 ns), or
times combined without meaning (two timestamps added), is computed on the nanoseconds, as CORE
does with integer times, and gives a warning (``CheckedQuery.warnings``, ``ceql check``).
"""

from __future__ import annotations

from typing import Protocol

from ceql.errors import QueryError, did_you_mean
from ceql.lang import ast
from ceql.lang.printer import print_cond, print_expr
from ceql.lang.schema import NUMERIC_TYPES, Schema
from ceql.lang.timetext import TIMESTAMP_EXAMPLE, format_timestamp, parse_timestamp
from ceql.lang.visit import Visitor, walk

NUMBER_TYPES = frozenset({"int", "double", "timestamp", "interval"})
TIME_TYPES = frozenset({"timestamp", "interval"})


class Reporter(Protocol):
    """What the checks need from the analysis: the schema and errors with positions."""

    schema: Schema

    def fail(self, message: str, pos: int, expected: str | None = None) -> QueryError: ...


def kind(value_type: str) -> str:
    """The kind of a value type for comparisons: number, string or boolean."""
    return "number" if value_type in NUMERIC_TYPES or value_type in NUMBER_TYPES else value_type


def _value_type(declared: str) -> str:
    return "timestamp" if declared == "primary_time" else declared


def _kind_of_value(value: object) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, str):
        return "string"
    return "number"


def _literal_type(value: object) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, str):
        return "string"
    return "int" if isinstance(value, int) else "double"


def attribute_type(a: Reporter, attr: ast.Attr, types: set[str], label: str) -> str:
    """The value type of ``attr`` on events labelled ``label`` (which have ``types``): int,
    double, string, boolean or timestamp (ints and doubles mixed give double)."""
    found: dict[str, str] = {}
    for type_name in sorted(types):
        declared = a.schema.event_types[type_name].attribute(attr.name)
        if declared is not None:
            found[type_name] = _value_type(declared.type)
    if not found:
        names = ", ".join(sorted(types))
        known = {at.name for t in types for at in a.schema.event_types[t].attributes}
        hint = did_you_mean(attr.name, sorted(known))
        raise a.fail(f"unknown attribute {attr.name} for label {label} (event types: {names}){hint}", attr.pos)
    kinds = {kind(t) for t in found.values()}
    if len(kinds) > 1:
        detail = ", ".join(f"{t}.{attr.name} is {kind(k)}" for t, k in found.items())
        raise a.fail(f"attribute {attr.name} has different types ({detail})", attr.pos)
    values = set(found.values())
    if len(values) == 1:
        return values.pop()
    return "double" if "double" in values else "int"


def _arith_type(left: str, right: str) -> str:
    """The type of plain numeric arithmetic (times taken as their integer nanoseconds)."""
    return "int" if {left, right} <= {"int", "timestamp", "interval"} else "double"


#: Arithmetic with a meaning for times: (left, op, right) -> result.
_TIME_ARITHMETIC = {
    ("timestamp", "+", "interval"): "timestamp",
    ("interval", "+", "timestamp"): "timestamp",
    ("timestamp", "-", "interval"): "timestamp",
    ("timestamp", "-", "timestamp"): "interval",
    ("interval", "+", "interval"): "interval",
    ("interval", "-", "interval"): "interval",
    ("interval", "*", "int"): "interval",
    ("int", "*", "interval"): "interval",
    ("interval", "/", "int"): "interval",
    ("interval", "/", "interval"): "int",
    ("interval", "%", "interval"): "interval",
}


def _location(text: str, pos: int) -> str:
    if pos < 0:
        return "?"
    line = text.count("\n", 0, pos) + 1
    column = pos - (text.rfind("\n", 0, pos) + 1) + 1
    return f"{line}:{column}"


class TypeChecker:
    """Pass 2: conditions (with free labels), predicates and measures, typed."""

    def __init__(self, analyzer: Reporter, all_labels: dict[str, set[str]]) -> None:
        self.a = analyzer
        self.all_labels = all_labels
        self.warnings: list[str] = []
        self.interval_measures: set[str] = set()  # differences of times (pandas: durations)
        # Expressions whose type came from warned arithmetic (not warned about again).
        self._warned: set[int] = set()

    def warn(self, node: ast.Node, message: str) -> None:
        """A warning about ``node`` (once per node and message)."""
        text = f"{_location(getattr(self.a, 'text', ''), node.pos)}: {message}"
        if text not in self.warnings:
            self.warnings.append(text)

    # ------------------------------------------------------------------ labels

    def label(self, label: str, pos: int, own: dict[str, set[str]]) -> set[str]:
        """The event types of a label named in a condition: its own definition in the filtered
        formula, or (a free label) its definitions anywhere in the query."""
        if label in own:
            return own[label]
        if label in self.all_labels:
            return self.all_labels[label]
        defined = ", ".join(sorted(self.all_labels)) or "none"
        raise self.a.fail(
            f"label {label} is not defined anywhere in the query{did_you_mean(label, self.all_labels)}",
            pos,
            f"a label defined in the query: {defined}",
        )

    # ------------------------------------------------------------------ conditions

    def condition(self, cond: ast.Cond, own: dict[str, set[str]]) -> None:
        _ConditionChecker(self, own).visit(cond)

    def pred(self, pred: ast.Pred, types: set[str], label: str) -> None:
        _PredChecker(self, types, label).visit(pred)

    def compare(self, node: ast.Compare, expr_type) -> None:
        left_type, right_type = expr_type(node.left), expr_type(node.right)
        left, right = kind(left_type), kind(right_type)
        if {left, right} == {"number", "string"} and (left_type in TIME_TYPES or right_type in TIME_TYPES):
            text = node.right if right == "string" else node.left
            shown = text.value if isinstance(text, ast.Literal) and isinstance(text.value, str) else None
            example = shown if shown is not None and isinstance(parse_timestamp(shown), int) else TIMESTAMP_EXAMPLE
            raise self.a.fail(
                f"cannot compare a time with a string; write the time as TIMESTAMP '{example}'",
                text.pos,
                f"TIMESTAMP '{example}'",
            )
        if left != right:
            raise self.a.fail(f"cannot compare a {left} with a {right}", node.pos)
        if left == "boolean" and node.op not in ("=", "!="):
            raise self.a.fail(f"booleans can only be compared with = or !=, not {node.op}", node.pos)
        if left == "number":
            self._compare_times(node, left_type, right_type)

    def _compare_times(self, node: ast.Compare, left: str, right: str) -> None:
        """Warn about comparisons of a time with a plain number or with the other kind of time."""
        if left not in TIME_TYPES and right not in TIME_TYPES:
            return
        shown = print_cond(node)
        if left in TIME_TYPES and right in TIME_TYPES:
            if left != right:
                self.warn(node, f"{shown} compares a timestamp with an interval (both are read as nanoseconds)")
            return
        number, time = (node.right, left) if left in TIME_TYPES else (node.left, right)
        if id(number) in self._warned:
            return
        self.warn(node, f"{shown} compares {_a(time)} with {_bare(number, time == 'interval')}")

    # ------------------------------------------------------------------ measures

    def measures(
        self, measures: tuple[ast.Measure, ...], reported: dict[str, set[str]], multiplicity: dict[str, str]
    ) -> dict[str, str]:
        out = {}
        for measure in measures:
            for node in walk(measure.expr):
                if isinstance(node, ast.Prev):
                    raise self.a.fail("PREV(...) is only allowed in FILTER conditions", node.pos)
            typer = _ExprTyper(self, reported, "measure", multiplicity)
            kind = typer.visit(measure.expr)
            out[measure.name] = "int" if kind == "interval" else kind  # intervals: nanoseconds
            if kind == "interval":
                self.interval_measures.add(measure.name)
        return out


class _ExprTyper(Visitor):
    """The type of an expression: in a one-event predicate (bare attributes), a FILTER condition
    (labelled attributes, aggregates, PREV) or a measure (``x.a`` of a "many" label is a list)."""

    pass_name = "the expression typer"
    families = (ast.EXPR_NODES,)

    def __init__(
        self,
        types: TypeChecker,
        labels: dict[str, set[str]],
        context: str,
        multiplicity: dict[str, str] | None = None,
        bare: tuple[set[str], str] | None = None,
    ) -> None:
        self.t = types
        self.a = types.a
        self.labels = labels
        self.context = context
        self.multiplicity = multiplicity or {}
        self.bare = bare

    def label_types(self, label: str, pos: int) -> set[str]:
        if self.context == "pred":
            raise self.a.fail("aggregates and PREV apply to labels: use them in FILTER conditions", pos)
        if self.context == "filter":
            return self.t.label(label, pos, self.labels)
        if label not in self.labels:
            defined = ", ".join(sorted(self.labels)) or "none"
            raise self.a.fail(
                f"label {label} in SELECT is not defined in the formula", pos, f"one of: {defined}"
            )
        return self.labels[label]

    def scalar(self, node: ast.Expr, what: str) -> str:
        kind = self.visit(node)
        if kind.startswith("list<"):
            raise self.a.fail(
                f"{what} needs one value, but {print_expr(node)} may hold several (its label may have several events); "
                "use an aggregate such as FIRST(x).a, SUM(x.a) or COUNT(x)",
                node.pos,
            )
        return kind

    def visit_Attr(self, node: ast.Attr) -> str:
        if node.label is None:
            if self.bare is None:
                raise self.a.fail(f"attribute {node.name} needs a label (x.{node.name})", node.pos)
            types, label = self.bare
            return attribute_type(self.a, node, types, label)
        value_type = attribute_type(self.a, node, self.label_types(node.label, node.pos), node.label)
        if self.context == "measure" and self.multiplicity.get(node.label) == "many":
            return f"list<{value_type}>"
        return value_type

    def visit_Literal(self, node: ast.Literal) -> str:
        return node.kind or _literal_type(node.value)

    def visit_Neg(self, node: ast.Neg) -> str:
        kind = self.scalar(node.operand, "unary minus")
        if kind not in NUMBER_TYPES:
            raise self.a.fail("unary minus applies to numbers only", node.pos)
        if kind == "timestamp":
            self.t.warn(node, f"{print_expr(node)} negates a timestamp (read as nanoseconds)")
            self.t._warned.add(id(node))
            return "int"
        return kind

    def visit_Arith(self, node: ast.Arith) -> str:
        kinds = []
        for side in (node.left, node.right):
            kind = self.scalar(side, f"arithmetic '{node.op}'")
            if kind not in NUMBER_TYPES:
                raise self.a.fail(f"arithmetic '{node.op}' applies to numbers only", side.pos)
            kinds.append(kind)
        left, right = kinds
        if left not in TIME_TYPES and right not in TIME_TYPES:
            return _arith_type(left, right)
        timed = _TIME_ARITHMETIC.get((left, node.op, right))  # (a double never makes a whole interval)
        if timed is not None:
            return timed
        self.t._warned.add(id(node))
        if {left, right} & TIME_TYPES and ({left, right} - TIME_TYPES) and node.op in "+-":
            time = left if left in TIME_TYPES else right
            number = node.right if left in TIME_TYPES else node.left
            if id(number) not in self.t._warned and id(node.left) not in self.t._warned:
                self.t.warn(node, f"{print_expr(node)} combines {_a(time)} with {_bare(number, True)}")
        elif id(node.left) not in self.t._warned and id(node.right) not in self.t._warned:
            self.t.warn(
                node, f"{print_expr(node)} has no meaning for {_a(left)} and {_a(right)}: it is computed on nanoseconds"
            )
        return _arith_type(left, right)

    def visit_Aggregate(self, node: ast.Aggregate) -> str:
        if node.label is None:  # COUNT(*)
            return "int"
        types = self.label_types(node.label, node.pos)
        if node.func == "COUNT":
            return "int"
        kind = attribute_type(self.a, ast.Attr(node.attr or "", node.label, pos=node.pos), types, node.label)
        if node.func in ("SUM", "AVG"):
            if kind not in NUMBER_TYPES:
                raise self.a.fail(f"{node.func} applies to numeric attributes, and {node.attr} is a {kind}", node.pos)
            return "double" if node.func == "AVG" or kind == "double" else "int"
        if node.func in ("MIN", "MAX") and kind == "boolean":
            raise self.a.fail(f"{node.func} applies to numbers and strings, and {node.attr} is a boolean", node.pos)
        return kind

    def visit_Prev(self, node: ast.Prev) -> str:
        types = self.label_types(node.label, node.pos)
        return attribute_type(self.a, ast.Attr(node.attr, node.label, pos=node.pos), types, node.label)


class _ConditionChecker(Visitor):
    pass_name = "the condition analysis"
    families = (ast.COND_NODES,)

    def __init__(self, types: TypeChecker, own: dict[str, set[str]]) -> None:
        self.t = types
        self.own = own

    def visit_And(self, cond: ast.And) -> None:
        for part in cond.parts:
            self.visit(part)

    visit_Or = visit_And

    def visit_Not(self, cond: ast.Not) -> None:
        self.visit(cond.operand)

    def visit_LabelCond(self, cond: ast.LabelCond) -> None:
        types = self.t.label(cond.label, cond.pos, self.own)
        if cond.stream is not None and cond.stream not in self.t.a.schema.streams:
            raise self.t.a.fail(f"unknown stream {cond.stream}", cond.pos)
        self.t.pred(cond.pred, types, cond.label)

    def visit_Compare(self, cond: ast.Compare) -> None:
        nodes = list(walk(cond))
        if not any(
            isinstance(n, (ast.Prev, ast.Aggregate)) or (isinstance(n, ast.Attr) and n.label) for n in nodes
        ):
            raise self.t.a.fail(
                "a condition must name at least one label (x[pred] or x.attr op ...)", cond.pos
            )
        prev_labels = {n.label for n in nodes if isinstance(n, ast.Prev)}
        if len(prev_labels) > 1:
            raise self.t.a.fail(
                "PREV(...) may name only one label in a comparison (it compares each event of that label "
                "with the previous one)",
                cond.pos,
            )
        typer = _ExprTyper(self.t, self.own, "filter")
        self.t.compare(cond, typer.visit)


class _PredChecker(Visitor):
    """One-event predicates inside ``x[...]`` (bare attributes of the label's events)."""

    pass_name = "the predicate analysis"
    families = (ast.PRED_NODES,)

    def __init__(self, types: TypeChecker, event_types: set[str], label: str) -> None:
        self.t = types
        self.a = types.a
        self.typer = _ExprTyper(types, {}, "pred", bare=(event_types, label))

    def kind(self, expr: ast.Expr) -> str:
        return kind(self.typer.visit(expr))

    def visit_And(self, pred: ast.And) -> None:
        for part in pred.parts:
            self.visit(part)

    visit_Or = visit_And

    def visit_Not(self, pred: ast.Not) -> None:
        self.visit(pred.operand)

    def visit_Compare(self, pred: ast.Compare) -> None:
        self.t.compare(pred, self.typer.visit)

    def visit_Like(self, pred: ast.Like) -> None:
        if self.kind(pred.operand) != "string":
            raise self.a.fail("LIKE applies to strings only", pred.pos)
        import pyarrow as pa
        import pyarrow.compute as pc

        try:
            pc.match_substring_regex(pa.array([""], pa.string()), f"^(?:{pred.pattern})$")
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            detail = str(exc).splitlines()[0]
            raise self.a.fail(f"invalid regular expression {pred.pattern!r}: {detail}", pred.pos) from None

    def visit_InSet(self, pred: ast.InSet) -> None:
        kind = self.kind(pred.operand)
        for value in pred.values:
            if _kind_of_value(value) != kind:
                raise self.a.fail(
                    f"IN mixes types: the tested value is a {kind}, {value!r} is a {_kind_of_value(value)}",
                    pred.pos,
                )

    def visit_InInterval(self, pred: ast.InInterval) -> None:
        if self.kind(pred.operand) != "number":
            raise self.a.fail("a range {a..b} applies to numbers only", pred.pos)

    def visit_InRange(self, pred: ast.InRange) -> None:
        for part in (pred.operand, pred.low, pred.high):
            if self.kind(part) != "number":
                raise self.a.fail("IN RANGE applies to numbers only", part.pos)


def _a(type_name: str) -> str:
    return ("an " if type_name[0] in "aeiou" else "a ") + type_name


def _bare(number: ast.Expr, duration: bool) -> str:
    """How a plain number next to a time is read (``duration``: as an interval, else as an
    instant), and what to write instead."""
    if isinstance(number, ast.Literal) and number.kind is None and isinstance(number.value, int):
        n = number.value
        if not duration:
            suggestion = format_timestamp(n) if -(2**63) <= n < 2**63 else TIMESTAMP_EXAMPLE
            return (
                f"the bare number {n}, read as nanoseconds since 1970 (TIMESTAMP '{suggestion}'); "
                "write TIMESTAMP '...' for an instant"
            )
        unit = "SECONDS" if n != 1 else "SECOND"
        return (
            f"the bare number {n}, read as {n} nanoseconds; write INTERVAL '{abs(n)}' {unit} (or the unit meant; "
            f"INTERVAL '{abs(n)}' NANOSECONDS keeps the value)"
        )
    return f"the plain number {print_expr(number)}, read as nanoseconds; write TIMESTAMP '...' or INTERVAL 'n' UNIT"
