"""Unary predicates, evaluated column-wise on Arrow data.

Every distinct predicate of a query gets an id; evaluating all of them on a batch gives one
bit per predicate and event. Together with the event type this forms the event's *symbol*,
which is all the automaton ever looks at. No Python code runs per event here: comparisons,
arithmetic, regular expressions (RE2) and set tests are pyarrow/numpy kernels.

Semantics (shared with the reference evaluator): an atomic test on a missing value (an event
type without the attribute, a null, a division by zero) is false; NOT is the complement; a
comparison with NaN is false.

Arithmetic is exact, as in the reference (Python numbers): integers are int64 and never wrap.
``/`` on two integers truncates toward zero and ``%`` is the truncated remainder (the sign of
the dividend); with a double, both sides are doubles (``%`` is C's fmod). The column-wise path
uses Arrow's checked kernels; when one overflows, or an integer beyond 2^53 meets a double
(which float64 cannot represent exactly), the rows concerned are found (wrapping int64
arithmetic with overflow tests, in numpy) and evaluated exactly with Python integers; the
other rows stay column-wise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ceql.compile.values import COMPARE as PY_COMPARE
from ceql.compile.values import fmod
from ceql.lang import ast
from ceql.lang.printer import print_pred
from ceql.lang.visit import walk

_COMPARE = {
    "=": pc.equal,
    "!=": pc.not_equal,
    "<": pc.less,
    "<=": pc.less_equal,
    ">": pc.greater,
    ">=": pc.greater_equal,
}


class PredicateSet:
    """The distinct predicates of a query, interned by their canonical text."""

    def __init__(self) -> None:
        self.preds: list[ast.Pred] = []
        self.texts: list[str] = []
        self._ids: dict[str, int] = {}
        # Attribute names stored as double that some event types declare int -> those types
        # (set from the query's catalog): their rows are evaluated on int values.
        self.int_types: dict[str, frozenset[str]] = {}
        self._mixed: list[list[str]] = []

    def intern(self, pred: ast.Pred) -> int:
        """The id of ``pred`` (equal predicates share an id)."""
        text = print_pred(pred)
        found = self._ids.get(text)
        if found is None:
            found = len(self.preds)
            self._ids[text] = found
            self.preds.append(pred)
            self.texts.append(text)
        return found

    def __len__(self) -> int:
        return len(self.preds)

    def evaluate(self, table: pa.Table) -> list[np.ndarray]:
        """One boolean numpy array per predicate, for every row of ``table``."""
        results = []
        as_ints: pa.Table | None = None
        if len(self._mixed) != len(self.preds):  # once: the mixed columns each predicate reads
            self._mixed = [[n for n in _attribute_names(p) if n in self.int_types] for p in self.preds]
        for pred, mixed in zip(self.preds, self._mixed):
            result = _to_bool(_pred(pred, table))
            if mixed and table.num_rows:
                # An attribute declared int by some event types and double by others is stored
                # as double; on the rows of the int types the predicate reads ints (exact / and
                # %), as the reference does.
                if as_ints is None:
                    as_ints = self._int_view(table)
                types = table.column("event_type")
                rows = np.ones(table.num_rows, dtype=bool)
                for name in mixed:
                    declared = pa.array(sorted(self.int_types[name]), pa.string())
                    rows &= _to_bool(pc.is_in(types, value_set=declared))
                if rows.any():
                    result = np.where(rows, _to_bool(_pred(pred, as_ints)), result)
            results.append(result)
        return results

    def _int_view(self, table: pa.Table) -> pa.Table:
        """``table`` with the mixed columns as int64 (null where a value is not integral)."""
        for name in self.int_types:
            if name not in table.column_names:
                continue
            column = table.column(name)
            integral = pc.and_(pc.is_finite(column), pc.equal(pc.floor(column), column))
            values = pc.cast(pc.if_else(integral, column, pa.scalar(None, column.type)), pa.int64(), safe=False)
            table = table.set_column(table.schema.get_field_index(name), name, values)
        return table


def _attribute_names(pred: ast.Node) -> set[str]:
    """The attribute names a one-event predicate reads."""
    return {node.name for node in walk(pred) if isinstance(node, ast.Attr)}


def _to_bool(array) -> np.ndarray:
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks() if array.num_chunks != 1 else array.chunk(0)
    array = pc.fill_null(array, False)
    return array.to_numpy(zero_copy_only=False).astype(bool, copy=False)


def _pred(pred: ast.Pred, table: pa.Table):
    if isinstance(pred, ast.And):
        result = _pred(pred.parts[0], table)
        for part in pred.parts[1:]:
            result = pc.and_(result, _pred(part, table))
        return result
    if isinstance(pred, ast.Or):
        result = _pred(pred.parts[0], table)
        for part in pred.parts[1:]:
            result = pc.or_(result, _pred(part, table))
        return result
    if isinstance(pred, ast.Not):
        return pc.invert(_pred(pred.operand, table))
    if isinstance(pred, ast.Like):
        operand = _expr(pred.operand, table)
        if _is_scalar(operand):
            operand = _broadcast(operand, table)
        return _fill(pc.match_substring_regex(operand, f"^(?:{pred.pattern})$"), table)
    return _atomic(pred, table)


# --------------------------------------------------------------------------- exactness


INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
#: Integers up to this magnitude are exact in float64.
FLOAT_EXACT = 2**53


class _Inexact(Exception):
    """The column-wise path cannot give the exact answer for some rows (int64 overflow, or an
    integer beyond 2^53 meeting a double)."""


def _atomic(pred: ast.Pred, table: pa.Table):
    """A comparison or membership test: column-wise, and exactly for the rows that need it."""
    try:
        return _fast(pred, table)
    except _Inexact:
        pass
    risky = _risky_rows(pred, table)
    result = np.zeros(table.num_rows, dtype=bool)
    exact = np.flatnonzero(risky)
    safe = np.flatnonzero(~risky)
    if len(safe):
        try:
            result[safe] = _to_bool(_fast(pred, table.take(pa.array(safe))))
        except _Inexact:  # cannot happen (the rows are found exactly); a last line of defence
            exact = np.arange(table.num_rows)
    if len(exact):
        result[exact] = _exact_rows(pred, table, exact)
    return pa.array(result, pa.bool_())


def _fast(pred: ast.Pred, table: pa.Table):
    """Column-wise evaluation; raises _Inexact where it would not be exact."""
    if isinstance(pred, ast.Compare):
        left, right = _align(_expr(pred.left, table), _expr(pred.right, table))
        result = _COMPARE[pred.op](left, right)
        if pred.op == "!=":  # NaN compares false, also with != (as in the reference)
            result = pc.and_kleene(result, pc.and_kleene(_not_nan(left), _not_nan(right)))
        return _fill(result, table)
    operand = _expr(pred.operand, table)
    if isinstance(pred, ast.InSet):
        operand = _broadcast(operand, table) if _is_scalar(operand) else operand
        values = _set_values(pred.values, operand.type)
        if pa.types.is_floating(values.type) and pa.types.is_integer(operand.type):
            operand = _cast_float(operand)
        if pa.types.is_floating(operand.type):
            # -0.0 is in {0} (as -0.0 = 0 holds): x + 0.0 turns -0.0 into 0.0 and nothing else
            # changes; NaN is a missing value, so NOT IN is false on it too.
            operand = pc.add(operand, pa.scalar(0.0, operand.type))
        inside = _fill(pc.is_in(operand, value_set=values, skip_nulls=True), table)
        valid = _fill(pc.and_kleene(pc.is_valid(operand), _not_nan(operand)), table)
        return pc.and_(pc.invert(inside), valid) if pred.negated else inside
    if isinstance(pred, ast.InInterval):
        inside = None
        low, high = _bound(pred.low, operand.type, up=True), _bound(pred.high, operand.type, up=False)
        if pred.low is not None:
            inside = _fill(pc.greater_equal(*_align(operand, low)), table)
        if pred.high is not None:
            upper = _fill(pc.less_equal(*_align(operand, high)), table)
            inside = upper if inside is None else pc.and_(inside, upper)
        present = _broadcast(operand, table) if _is_scalar(operand) else operand
        valid = _fill(pc.and_kleene(pc.is_valid(present), _not_nan(present)), table)  # NaN is missing
        return pc.and_(pc.invert(inside), valid) if pred.negated else inside
    if isinstance(pred, ast.InRange):
        low, high = _expr(pred.low, table), _expr(pred.high, table)
        lower = _fill(pc.less_equal(*_align(low, operand)), table)
        upper = _fill(pc.less_equal(*_align(operand, high)), table)
        return pc.and_(lower, upper)
    raise TypeError(f"unknown predicate {pred!r}")


def _set_values(values: tuple, operand_type: pa.DataType) -> pa.Array:
    """The set of an IN test, with only the values that can equal an operand of that type under
    exact comparison (NaN equals nothing; an integer that float64 cannot hold equals no double;
    a fractional double equals no integer), so Arrow's hash lookup is exact."""
    values = [v for v in values if not (isinstance(v, float) and math.isnan(v))]
    values = [v + 0.0 if isinstance(v, float) else v for v in values]  # -0.0 is 0.0
    if pa.types.is_floating(operand_type):
        values = [v for v in values if isinstance(v, bool) or not isinstance(v, int) or float(v) == v]
    elif pa.types.is_integer(operand_type):
        numbers = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
        if any(isinstance(v, float) for v in numbers):
            integral = [int(v) for v in numbers if math.isfinite(v) and v == int(v)]
            values = [v for v in integral if INT64_MIN <= v <= INT64_MAX]
            return pa.array(values, pa.int64())
    try:
        return pa.array(values) if values else pa.array([], operand_type)
    except (OverflowError, pa.ArrowInvalid):  # an integer beyond int64 equals no int64 value
        return pa.array([v for v in values if INT64_MIN <= v <= INT64_MAX], pa.int64())


def _bound(value: int | float | None, operand_type: pa.DataType, up: bool):
    """An interval bound as an Arrow scalar that compares exactly with the operand's type:
    for a double operand, an integer bound becomes the nearest double on the inside."""
    if value is None:
        return None
    if pa.types.is_floating(operand_type) and isinstance(value, int) and not isinstance(value, bool):
        rounded = float(value)
        if up and rounded < value:
            rounded = math.nextafter(rounded, math.inf)
        elif not up and rounded > value:
            rounded = math.nextafter(rounded, -math.inf)
        return pa.scalar(rounded)
    return _literal(value)


def _is_scalar(value) -> bool:
    return isinstance(value, pa.Scalar)


def _broadcast(value, table: pa.Table):
    return pa.array([value.as_py()] * table.num_rows, type=value.type)


def _fill(result, table: pa.Table):
    """Nulls (missing values) become false; scalars become full columns."""
    if _is_scalar(result):
        result = _broadcast(result, table)
    return pc.fill_null(result, False)


def _not_nan(value):
    return pc.invert(pc.is_nan(value)) if pa.types.is_floating(value.type) else pa.scalar(True)


def _cast_float(value):
    """int64 -> float64, refusing the integers float64 cannot hold exactly (beyond 2^53)."""
    try:
        return pc.cast(value, pa.float64())
    except pa.ArrowInvalid:
        raise _Inexact from None


def _align(left, right):
    """Make two numeric operands comparable (int with float compares as float)."""
    lt, rt = left.type, right.type
    if pa.types.is_integer(lt) and pa.types.is_floating(rt):
        left = _cast_float(left)
    elif pa.types.is_floating(lt) and pa.types.is_integer(rt):
        right = _cast_float(right)
    return left, right


def _literal(value):
    if isinstance(value, int) and not isinstance(value, bool) and not INT64_MIN <= value <= INT64_MAX:
        raise _Inexact
    return pa.scalar(value)


def _expr(expr: ast.Expr, table: pa.Table):
    if isinstance(expr, ast.Attr):
        if expr.name in table.column_names:
            return table.column(expr.name)
        return pa.nulls(table.num_rows)
    if isinstance(expr, ast.Literal):
        return _literal(expr.value)
    try:
        if isinstance(expr, ast.Neg):
            return pc.negate_checked(_expr(expr.operand, table))
        left, right = _align(_expr(expr.left, table), _expr(expr.right, table))
        if expr.op == "+":
            return pc.add_checked(left, right)
        if expr.op == "-":
            return pc.subtract_checked(left, right)
        if expr.op == "*":
            return pc.multiply_checked(left, right)
        return _divide(expr.op, left, right, table)
    except pa.ArrowInvalid:  # overflow
        raise _Inexact from None


def _divide(op: str, left, right, table: pa.Table):
    """``/`` and ``%``; a zero divisor gives a missing value (null)."""
    integers = pa.types.is_integer(left.type) and pa.types.is_integer(right.type)
    result_type = pa.int64() if integers else pa.float64()
    if _is_scalar(right):
        if not right.is_valid or right.as_py() == 0:
            return pa.nulls(table.num_rows, result_type)
        divisor = right
    else:
        divisor = pc.if_else(pc.equal(right, 0), pa.scalar(None, right.type), right)
    if integers:
        quotient = pc.divide_checked(left, divisor)  # integer division truncates toward zero
        if op == "/":
            return quotient
        return pc.subtract_checked(left, pc.multiply_checked(quotient, divisor))
    if op == "/":
        return pc.divide(pc.cast(left, pa.float64()), pc.cast(divisor, pa.float64()))
    return _fmod(left, divisor, table)


def _fmod(left, right, table: pa.Table) -> pa.Array:
    """C's fmod (exact, the sign of the dividend), nulls where an operand is null."""
    n = table.num_rows
    arrays = []
    for value in (left, right):
        if _is_scalar(value):
            value = _broadcast(value, table) if value.is_valid else pa.nulls(n, pa.float64())
        value = pc.cast(value, pa.float64())
        arrays.append((pc.fill_null(value, 1.0).to_numpy(zero_copy_only=False), _to_valid(value)))
    (a, a_ok), (b, b_ok) = arrays
    with np.errstate(all="ignore"):
        remainder = np.fmod(a, b)
    return pa.array(remainder, pa.float64(), mask=~(a_ok & b_ok))


def _to_valid(value) -> np.ndarray:
    return _to_bool(pc.is_valid(value))


# --------------------------------------------------------------------------- exact fallback


def _risky_rows(pred: ast.Pred, table: pa.Table) -> np.ndarray:
    """The rows where the column-wise path is inexact: some integer operation overflows int64
    (found exactly, by redoing the integer arithmetic with numpy's wrapping int64 and the usual
    sign tests), or an integer beyond 2^53 meets a double."""
    n = table.num_rows
    risky = np.zeros(n, dtype=bool)

    def mixed(first: tuple, second: tuple) -> None:
        for (value, kind), (_, other) in ((first, second), (second, first)):
            if kind == "int" and other == "float":
                risky[...] |= (value > FLOAT_EXACT) | (value < -FLOAT_EXACT)

    def as_float(value: np.ndarray, kind: str) -> np.ndarray:
        return value.astype(np.float64) if kind == "int" else value

    def evaluate(expr: ast.Expr) -> tuple[np.ndarray, str]:
        if isinstance(expr, ast.Attr):
            return _column_values(expr, table)
        if isinstance(expr, ast.Literal):
            value = expr.value
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                return np.zeros(n), "other"
            if isinstance(value, float):
                return np.full(n, value), "float"
            if not INT64_MIN <= value <= INT64_MAX:
                risky[...] = True  # not an int64 at all
                return np.zeros(n, np.int64), "int"
            return np.full(n, value, np.int64), "int"
        if isinstance(expr, ast.Neg):
            value, kind = evaluate(expr.operand)
            if kind == "int":
                risky[...] |= value == INT64_MIN
            return -value, kind
        left, right = evaluate(expr.left), evaluate(expr.right)
        mixed(left, right)
        (a, left_kind), (b, right_kind) = left, right
        if left_kind == right_kind == "int":
            return _int_arithmetic(expr.op, a, b, risky), "int"
        a, b = as_float(a, left_kind), as_float(b, right_kind)
        zero = b == 0
        b = np.where(zero, 1.0, b)
        result = {"+": a + b, "-": a - b, "*": a * b, "/": a / b}.get(expr.op)
        return (np.fmod(a, b) if result is None else result), "float"

    with np.errstate(all="ignore"):
        if isinstance(pred, ast.Compare):
            mixed(evaluate(pred.left), evaluate(pred.right))
        elif isinstance(pred, ast.InRange):
            operand = evaluate(pred.operand)
            mixed(evaluate(pred.low), operand)
            mixed(operand, evaluate(pred.high))
        else:
            operand = evaluate(pred.operand)
            if isinstance(pred, ast.InSet):
                floats = [v for v in pred.values if isinstance(v, float)]
            else:
                floats = [v for v in (pred.low, pred.high) if isinstance(v, float)]
            if floats:
                mixed(operand, (None, "float"))
    return risky


def _int_arithmetic(op: str, a: np.ndarray, b: np.ndarray, risky: np.ndarray) -> np.ndarray:
    """``a op b`` in wrapping int64, marking in ``risky`` the rows where it overflows (the
    values of those rows are then meaningless, and they are evaluated exactly)."""
    if op == "+":
        result = a + b
        risky |= ((a ^ result) & (b ^ result)) < 0  # both operands' signs differ from the sum's
        return result
    if op == "-":
        result = a - b
        risky |= ((a ^ b) & (a ^ result)) < 0
        return result
    if op == "*":
        result = a * b
        nonzero = a != 0
        risky |= nonzero & (result // np.where(nonzero, a, 1) != b)
        risky |= ((a == -1) & (b == INT64_MIN)) | ((b == -1) & (a == INT64_MIN))
        return result
    divisor = np.where(b == 0, 1, b)  # a zero divisor makes the value missing: any value will do
    edge = (a == INT64_MIN) & (divisor == -1)  # the quotient 2^63 does not fit; the remainder is 0
    if op == "/":
        risky |= edge
    divisor = np.where(edge, 1, divisor)
    floor = a // divisor
    inexact = (a - floor * divisor != 0) & ((a < 0) != (divisor < 0))
    quotient = floor + inexact  # truncate toward zero
    if op == "/":
        return quotient
    return np.where(edge, 0, a - quotient * divisor)


def _column_values(attr: ast.Attr, table: pa.Table) -> tuple[np.ndarray, str]:
    """An attribute's values as numpy (nulls as 0) and its kind: int, float or other."""
    n = table.num_rows
    if attr.name not in table.column_names:
        return np.zeros(n), "other"
    column = table.column(attr.name)
    if pa.types.is_integer(column.type):
        return _numpy(pc.cast(pc.fill_null(column, 0), pa.int64())), "int"
    if pa.types.is_floating(column.type):
        return _numpy(pc.cast(pc.fill_null(column, 0.0), pa.float64())), "float"
    return np.zeros(n), "other"


def _numpy(array) -> np.ndarray:
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks() if array.num_chunks != 1 else array.chunk(0)
    return array.to_numpy(zero_copy_only=False)


def _exact_rows(pred: ast.Pred, table: pa.Table, rows: np.ndarray) -> np.ndarray:
    """Evaluate an atomic test on some rows with Python numbers (exact integers), as the
    reference does. Values are numpy object arrays, so each operation is one C loop of Python
    arithmetic; a validity mask marks missing values and divisions by zero."""
    part = table.take(pa.array(rows))
    m = len(rows)

    def value(expr: ast.Expr) -> _Exact:
        if isinstance(expr, ast.Attr):
            if expr.name not in part.column_names:
                return _Exact(np.zeros(m, dtype=object), np.zeros(m, dtype=bool), False)
            column = part.column(expr.name)
            integral = pa.types.is_integer(column.type)
            filler = 0 if integral or pa.types.is_floating(column.type) else ""
            return _Exact(_objects(pc.fill_null(column, filler).to_pylist()), _to_valid(column), integral)
        if isinstance(expr, ast.Literal):
            integral = isinstance(expr.value, int) and not isinstance(expr.value, bool)
            return _Exact(_objects([expr.value] * m), np.ones(m, dtype=bool), integral)
        if isinstance(expr, ast.Neg):
            operand = value(expr.operand)
            return _Exact(-operand.values, operand.valid, operand.integral)
        left, right = value(expr.left), value(expr.right)
        a, b = left.values, right.values
        valid = left.valid & right.valid
        integral = left.integral and right.integral
        if expr.op in _OBJECT_ARITHMETIC:
            return _Exact(_OBJECT_ARITHMETIC[expr.op](a, b), valid, integral)
        zero = np.asarray(b == 0, dtype=bool)
        valid = valid & ~zero
        b = np.where(zero, 1, b)
        if not integral:
            return _Exact(np.true_divide(a, b) if expr.op == "/" else _FMOD(a, b), valid, False)
        quotient = np.floor_divide(np.abs(a), np.abs(b))
        quotient = np.where(np.asarray((a < 0) != (b < 0), dtype=bool), -quotient, quotient)
        return _Exact(quotient if expr.op == "/" else a - b * quotient, valid, True)

    if isinstance(pred, ast.Compare):
        return _compare_exact(pred.op, value(pred.left), value(pred.right))
    operand = value(pred.operand)
    if isinstance(pred, ast.InRange):
        return _compare_exact("<=", value(pred.low), operand) & _compare_exact(
            "<=", operand, value(pred.high)
        )
    inside = np.fromiter((_member(pred, v) for v in operand.values), dtype=bool, count=m)
    present = operand.valid & np.asarray(operand.values == operand.values, dtype=bool)  # NaN is missing
    return (~inside if pred.negated else inside) & present


@dataclass(frozen=True)
class _Exact:
    """Exact values of an expression on some rows: Python numbers, valid where not missing."""

    values: np.ndarray
    valid: np.ndarray
    integral: bool


def _compare_exact(op: str, left: _Exact, right: _Exact) -> np.ndarray:
    """A comparison with Python semantics (exact between int and float); false where a value
    is missing or NaN (the only value unequal to itself)."""
    a, b = left.values, right.values
    with np.errstate(invalid="ignore"):  # NaN compares false (below), without a warning
        result = np.asarray(NUMPY_COMPARE[op](a, b), dtype=bool)
    return result & left.valid & right.valid & np.asarray(a == a, dtype=bool) & np.asarray(b == b, dtype=bool)


def _objects(values: list) -> np.ndarray:
    array = np.empty(len(values), dtype=object)
    array[:] = values
    return array


def _member(pred: ast.InSet | ast.InInterval, value: Any) -> bool:
    """Whether a present value is in the set or interval (before NOT), as in the reference."""
    if isinstance(pred, ast.InSet):
        return any(value == v and isinstance(v, bool) == isinstance(value, bool) for v in pred.values)
    return (pred.low is None or value >= pred.low) and (pred.high is None or value <= pred.high)


_OBJECT_ARITHMETIC = {"+": np.add, "-": np.subtract, "*": np.multiply}
_FMOD = np.frompyfunc(fmod, 2, 1)
#: The comparison operators on arrays, element-wise (object arrays too: exact ints).
NUMPY_COMPARE = {
    "=": np.equal,
    "!=": np.not_equal,
    "<": np.less,
    "<=": np.less_equal,
    ">": np.greater,
    ">=": np.greater_equal,
}


# --------------------------------------------------------------------------- one event at a time

#: A one-event predicate compiled for ``Evaluator.push``: values -> bool, where ``values`` maps
#: an attribute name to its stored value (None: missing).
ScalarPred = Any


class ScalarPredicates:
    """The predicates of a ``PredicateSet`` evaluated on one event, as closures compiled from
    the syntax tree once (no ``eval`` of user text), with the results of the column-wise path:
    a missing value makes an atomic test false; a comparison with NaN is false (also ``!=``),
    while NaN is a value for ``IN`` / ``NOT IN`` (as in Arrow); integers are exact (Python
    ints: the column-wise path falls back to them where int64 or float64 would not be); ``/``
    on two integers truncates, ``%`` is the truncated remainder or C's fmod; a zero divisor
    gives a missing value; ``LIKE`` runs the same RE2 engine (pyarrow), its answers cached per
    string. A name stored as double that the event's type declares int is read as an int when
    every such name the predicate reads is int for that type (the column-wise int view)."""

    def __init__(self, predicates: PredicateSet) -> None:
        self.predicates = predicates
        self._by_type: dict[str, tuple[int, list[tuple[int, Any]]]] = {}

    def for_type(self, type_name: str, declared: frozenset[str]) -> tuple[int, list[tuple[int, Any]]]:
        """For events of ``type_name`` (which declares the attributes ``declared``): the bits of
        the predicates that hold whatever the event (they read only attributes the type does not
        declare, which are always missing), and (bit, closure) for the predicates to evaluate."""
        found = self._by_type.get(type_name)
        if found is not None:
            return found
        constant = 0
        live: list[tuple[int, Any]] = []
        int_types = self.predicates.int_types
        for bit, pred in enumerate(self.predicates.preds):
            names = _attribute_names(pred)
            mixed = [n for n in names if n in int_types]
            as_int = frozenset(mixed) if mixed and all(type_name in int_types[n] for n in mixed) else frozenset()
            closure = compile_scalar(pred, as_int)
            if names & declared:
                live.append((1 << bit, closure))
            elif closure({}):
                constant |= 1 << bit
        self._by_type[type_name] = (constant, live)
        return constant, live


def compile_scalar(pred: ast.Pred, as_int: frozenset[str] = frozenset()) -> Any:
    """A closure ``values -> bool`` for a one-event predicate (see ``ScalarPredicates``);
    the names in ``as_int`` (stored as double) are read as ints."""
    if isinstance(pred, ast.And):
        parts = [compile_scalar(p, as_int) for p in pred.parts]
        return lambda row: all(part(row) for part in parts)
    if isinstance(pred, ast.Or):
        parts = [compile_scalar(p, as_int) for p in pred.parts]
        return lambda row: any(part(row) for part in parts)
    if isinstance(pred, ast.Not):
        inner = compile_scalar(pred.operand, as_int)
        return lambda row: not inner(row)
    if isinstance(pred, ast.Like):
        return _scalar_like(pred, _scalar_expr(pred.operand, as_int))
    if isinstance(pred, ast.Compare):
        return _scalar_compare(pred.op, _scalar_expr(pred.left, as_int), _scalar_expr(pred.right, as_int), pred)
    operand = _scalar_expr(pred.operand, as_int)
    if isinstance(pred, (ast.InSet, ast.InInterval)):
        negated = pred.negated

        def member(row: Any) -> bool:
            value = operand(row)
            if value is None or value != value:  # NaN is missing: IN and NOT IN are false
                return False
            inside = _member(pred, value)
            return not inside if negated else inside

        values = pred.values if isinstance(pred, ast.InSet) else ()
        if len(values) > 4 and (
            all(type(v) is str for v in values) or all(type(v) is int for v in values)
        ):
            hashed = frozenset(values)  # a hash lookup finds exactly the values that are equal

            def in_hashed(row: Any) -> bool:
                value = operand(row)
                if value is None or value != value:
                    return False
                inside = value in hashed and type(value) is not bool
                return not inside if negated else inside

            return in_hashed
        return member
    if isinstance(pred, ast.InRange):
        low, high = _scalar_expr(pred.low, as_int), _scalar_expr(pred.high, as_int)

        def in_range(row: Any) -> bool:
            value, lo, hi = operand(row), low(row), high(row)
            if value is None or lo is None or hi is None:
                return False
            return lo <= value and value <= hi  # NaN anywhere: false, as in Arrow

        return in_range
    raise TypeError(f"unknown predicate {pred!r}")


def _scalar_compare(op: str, left: Any, right: Any, pred: ast.Compare | None = None) -> Any:
    compare = PY_COMPARE[op]
    if (
        pred is not None
        and isinstance(pred.left, ast.Attr)
        and isinstance(pred.right, ast.Literal)
        and not getattr(left, "reads_int", False)
    ):
        # The common ``attr op constant``: one closure, no calls per operand.
        name = pred.left.name
        constant = pred.right.value

        def check_constant(row: Any) -> bool:
            a = row.get(name)
            if a is None or a != a:
                return False
            return compare(a, constant)

        return check_constant

    def check(row: Any) -> bool:
        a = left(row)
        if a is None:
            return False
        b = right(row)
        if b is None or a != a or b != b:  # missing, or NaN (false for every operator)
            return False
        return compare(a, b)

    return check


def _scalar_like(pred: ast.Like, operand: Any) -> Any:
    pattern = f"^(?:{pred.pattern})$"
    cache: dict[str, bool] = {}

    def like(row: Any) -> bool:
        text = operand(row)
        if text is None:
            return False
        found = cache.get(text)
        if found is None:
            found = bool(pc.match_substring_regex(pa.array([text], pa.string()), pattern)[0].as_py())
            if len(cache) >= _LIKE_CACHE:
                cache.clear()
            cache[text] = found
        return found

    return like


_LIKE_CACHE = 4096


def _scalar_expr(expr: ast.Expr, as_int: frozenset[str]) -> Any:
    """A closure ``values -> value`` (None: missing) with the column-wise arithmetic."""
    if isinstance(expr, ast.Attr):
        name = expr.name
        if name in as_int:

            def read_int(row: Any) -> Any:
                value = row.get(name)
                if value is None:
                    return None
                return int(value) if math.isfinite(value) and value == int(value) else None

            read_int.reads_int = True  # type: ignore[attr-defined]
            return read_int
        return lambda row: row.get(name)
    if isinstance(expr, ast.Literal):
        constant = expr.value
        return lambda row: constant
    if isinstance(expr, ast.Neg):
        inner = _scalar_expr(expr.operand, as_int)

        def negate(row: Any) -> Any:
            value = inner(row)
            return None if value is None else -value

        return negate
    left, right = _scalar_expr(expr.left, as_int), _scalar_expr(expr.right, as_int)
    op = expr.op
    if op in _PY_ARITHMETIC:
        function = _PY_ARITHMETIC[op]

        def arithmetic(row: Any) -> Any:
            a = left(row)
            if a is None:
                return None
            b = right(row)
            return None if b is None else function(a, b)

        return arithmetic

    def divide(row: Any) -> Any:
        a = left(row)
        if a is None:
            return None
        b = right(row)
        if b is None or b == 0:
            return None
        if type(a) is int and type(b) is int:
            quotient = abs(a) // abs(b)
            if (a < 0) != (b < 0):
                quotient = -quotient
            return quotient if op == "/" else a - b * quotient
        return float(a) / float(b) if op == "/" else _fmod_scalar(a, b)

    return divide


def _fmod_scalar(a: Any, b: Any) -> float:
    """C's fmod, as numpy's (NaN for an infinite dividend, where math.fmod raises)."""
    try:
        return math.fmod(a, b)
    except ValueError:
        return math.nan


def _add(a: Any, b: Any) -> Any:
    return a + b


def _subtract(a: Any, b: Any) -> Any:
    return a - b


def _multiply(a: Any, b: Any) -> Any:
    return a * b


_PY_ARITHMETIC = {"+": _add, "-": _subtract, "*": _multiply}
