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
(which float64 cannot represent exactly), the rows concerned are found with a float64 estimate
of every intermediate value and evaluated exactly with Python integers; the others stay
column-wise. The checked kernels stay on for those, so a row the estimate misses still cannot
give a wrong answer (the whole batch is then evaluated exactly).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ceql.lang import ast
from ceql.lang.printer import print_pred

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
        return [_to_bool(_pred(pred, table)) for pred in self.preds]


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
#: A float64 estimate of an intermediate integer result at or above this magnitude may be an
#: int64 overflow (estimates are off by far less than the margin of 2^43).
_SAFE_INT = 2.0**63 - 2.0**43


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
        except _Inexact:  # the estimate is conservative; this is a last line of defence
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
        inside = _fill(pc.is_in(operand, value_set=values, skip_nulls=True), table)
        valid = _fill(pc.is_valid(operand), table)
        return pc.and_(pc.invert(inside), valid) if pred.negated else inside
    if isinstance(pred, ast.InInterval):
        inside = None
        low, high = _bound(pred.low, operand.type, up=True), _bound(pred.high, operand.type, up=False)
        if pred.low is not None:
            inside = _fill(pc.greater_equal(*_align(operand, low)), table)
        if pred.high is not None:
            upper = _fill(pc.less_equal(*_align(operand, high)), table)
            inside = upper if inside is None else pc.and_(inside, upper)
        valid = _fill(pc.is_valid(_broadcast(operand, table) if _is_scalar(operand) else operand), table)
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
    """The rows where the column-wise path could be inexact, from float64 estimates of every
    intermediate value: an integer result of arithmetic within 2^43 of the int64 limits or
    beyond them, or an integer beyond 2^53 that meets a double."""
    risky = np.zeros(table.num_rows, dtype=bool)

    def mixed(first: tuple, second: tuple) -> None:
        for (value, kind), (_, other) in ((first, second), (second, first)):
            if kind == "int" and other == "float":
                risky[...] |= np.abs(value) > FLOAT_EXACT

    def estimate(expr: ast.Expr) -> tuple[Any, str]:
        if isinstance(expr, ast.Attr):
            return _estimate_column(expr, table)
        if isinstance(expr, ast.Literal):
            value = expr.value
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                return 0.0, "other"
            if isinstance(value, int) and not INT64_MIN <= value <= INT64_MAX:
                risky[...] = True  # not an int64 at all
                return math.copysign(math.inf, value), "int"
            return float(value), "int" if isinstance(value, int) else "float"
        if isinstance(expr, ast.Neg):
            result, kind = estimate(expr.operand)
            result = -result
        else:
            left, right = estimate(expr.left), estimate(expr.right)
            mixed(left, right)
            (a, left_kind), (b, right_kind) = left, right
            kind = "int" if left_kind == right_kind == "int" else "float"
            with np.errstate(all="ignore"):
                if expr.op == "+":
                    result = a + b
                elif expr.op == "-":
                    result = a - b
                elif expr.op == "*":
                    result = a * b
                elif expr.op == "/":
                    result = np.where(b != 0, np.trunc(a / b) if kind == "int" else a / b, 0.0)
                else:  # a bound on the magnitude: |a % b| <= min(|a|, |b|)
                    result = np.minimum(np.abs(a), np.abs(b))
        if kind == "int":  # a result of arithmetic (a leaf is an exact int64 value)
            with np.errstate(all="ignore"):
                risky[...] |= ~(np.abs(result) < _SAFE_INT)
        return result, kind

    if isinstance(pred, ast.Compare):
        mixed(estimate(pred.left), estimate(pred.right))
    elif isinstance(pred, ast.InRange):
        operand = estimate(pred.operand)
        mixed(estimate(pred.low), operand)
        mixed(operand, estimate(pred.high))
    else:
        operand = estimate(pred.operand)
        if isinstance(pred, ast.InSet):
            literals = [v for v in pred.values if isinstance(v, float)]
        else:
            literals = [v for v in (pred.low, pred.high) if isinstance(v, float)]
        if literals:
            mixed(operand, (0.0, "float"))
    return risky


def _estimate_column(attr: ast.Attr, table: pa.Table) -> tuple[Any, str]:
    if attr.name not in table.column_names:
        return 0.0, "other"
    column = table.column(attr.name)
    if pa.types.is_integer(column.type):
        values = pc.cast(pc.fill_null(column, 0), pa.float64(), safe=False)
        return values.to_numpy(), "int"
    if pa.types.is_floating(column.type):
        return pc.fill_null(column, 0.0).to_numpy(), "float"
    return 0.0, "other"


def _exact_rows(pred: ast.Pred, table: pa.Table, rows: np.ndarray) -> list[bool]:
    """Evaluate an atomic test on some rows with Python numbers (exact integers)."""
    indices = pa.array(rows)
    names = {a.name for a in _attributes(pred)} & set(table.column_names)
    columns = {name: table.column(name).take(indices).to_pylist() for name in names}
    results = []
    for i in range(len(rows)):
        results.append(
            exact_test(pred, lambda attr, i=i: columns[attr.name][i] if attr.name in columns else None)
        )
    return results


def _attributes(pred: ast.Pred):
    for expr in (
        (pred.left, pred.right)
        if isinstance(pred, ast.Compare)
        else (pred.operand, pred.low, pred.high)
        if isinstance(pred, ast.InRange)
        else (pred.operand,)
    ):
        yield from ast.attributes(expr)


_MISSING: Any = object()


def exact_test(pred: ast.Pred, lookup: Callable[[ast.Attr], Any]) -> bool:
    """An atomic test (comparison, IN, IN RANGE) on one event, exactly (the fallback of the
    column-wise path). ``lookup`` gives an attribute's value, None when missing."""
    if isinstance(pred, ast.Compare):
        left, right = exact_value(pred.left, lookup), exact_value(pred.right, lookup)
        if left is _MISSING or right is _MISSING or _is_nan(left) or _is_nan(right):
            return False
        return _PY_COMPARE[pred.op](left, right)
    value = exact_value(pred.operand, lookup)
    if value is _MISSING:
        return False
    if isinstance(pred, ast.InSet):
        inside = any(value == v and isinstance(v, bool) == isinstance(value, bool) for v in pred.values)
        return inside != pred.negated
    if isinstance(pred, ast.InInterval):
        inside = (pred.low is None or value >= pred.low) and (pred.high is None or value <= pred.high)
        return inside != pred.negated
    if isinstance(pred, ast.InRange):
        low, high = exact_value(pred.low, lookup), exact_value(pred.high, lookup)
        if low is _MISSING or high is _MISSING:
            return False
        return low <= value <= high
    raise TypeError(f"no exact evaluation for {pred!r}")


def exact_value(expr: ast.Expr, lookup: Callable[[ast.Attr], Any]) -> Any:
    """The value of an expression with Python numbers (``_MISSING`` for a missing value or a
    division by zero)."""
    if isinstance(expr, ast.Attr):
        value = lookup(expr)
        return _MISSING if value is None else value
    if isinstance(expr, ast.Literal):
        return expr.value
    if isinstance(expr, ast.Neg):
        value = exact_value(expr.operand, lookup)
        return value if value is _MISSING else -value
    left, right = exact_value(expr.left, lookup), exact_value(expr.right, lookup)
    if left is _MISSING or right is _MISSING:
        return _MISSING
    result = arithmetic(expr.op, left, right)
    return _MISSING if result is None else result


def arithmetic(op: str, left: Any, right: Any) -> Any:
    """``left op right`` with CEQL's semantics on Python numbers: exact on integers, ``/``
    truncating toward zero and ``%`` the truncated remainder on two integers, C's fmod on
    doubles; None for a division by zero."""
    if op == "+":
        return left + right
    if op == "-":
        return left - right
    if op == "*":
        return left * right
    if right == 0:
        return None
    if isinstance(left, int) and isinstance(right, int):
        quotient = abs(left) // abs(right)
        if (left < 0) != (right < 0):
            quotient = -quotient
        return quotient if op == "/" else left - right * quotient
    return left / right if op == "/" else math.fmod(left, right)


def _is_nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


_PY_COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "=": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
}
