"""Unary predicates, evaluated column-wise on Arrow data.

Every distinct predicate of a query gets an id; evaluating all of them on a batch gives one
bit per predicate and event. Together with the event type this forms the event's *symbol*,
which is all the automaton ever looks at. No Python code runs per event here: comparisons,
arithmetic, regular expressions (RE2) and set tests are pyarrow/numpy kernels.

Semantics (shared with the reference evaluator): an atomic test on a missing value (an event
type without the attribute, a null, a division by zero) is false; NOT is the complement.
"""

from __future__ import annotations

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
    if isinstance(pred, ast.Compare):
        left, right = _expr(pred.left, table), _expr(pred.right, table)
        left, right = _align(left, right)
        return _fill(_COMPARE[pred.op](left, right), table)
    operand = _expr(pred.operand, table)
    if isinstance(pred, ast.Like):
        if _is_scalar(operand):
            operand = _broadcast(operand, table)
        return _fill(pc.match_substring_regex(operand, f"^(?:{pred.pattern})$"), table)
    if isinstance(pred, ast.InSet):
        operand = _broadcast(operand, table) if _is_scalar(operand) else operand
        values = pa.array(list(pred.values))
        if pa.types.is_floating(operand.type) or pa.types.is_floating(values.type):
            operand = pc.cast(operand, pa.float64())
            values = pc.cast(values, pa.float64())
        inside = _fill(pc.is_in(operand, value_set=values, skip_nulls=True), table)
        valid = _fill(pc.is_valid(operand), table)
        return pc.and_(pc.invert(inside), valid) if pred.negated else inside
    if isinstance(pred, ast.InInterval):
        inside = None
        if pred.low is not None:
            inside = _fill(pc.greater_equal(*_align(operand, pa.scalar(pred.low))), table)
        if pred.high is not None:
            upper = _fill(pc.less_equal(*_align(operand, pa.scalar(pred.high))), table)
            inside = upper if inside is None else pc.and_(inside, upper)
        valid = _fill(pc.is_valid(_broadcast(operand, table) if _is_scalar(operand) else operand), table)
        return pc.and_(pc.invert(inside), valid) if pred.negated else inside
    if isinstance(pred, ast.InRange):
        low, high = _expr(pred.low, table), _expr(pred.high, table)
        lower = _fill(pc.less_equal(*_align(low, operand)), table)
        upper = _fill(pc.less_equal(*_align(operand, high)), table)
        return pc.and_(lower, upper)
    raise TypeError(f"unknown predicate {pred!r}")


def _is_scalar(value) -> bool:
    return isinstance(value, pa.Scalar)


def _broadcast(value, table: pa.Table):
    return pa.array([value.as_py()] * table.num_rows, type=value.type)


def _fill(result, table: pa.Table):
    """Nulls (missing values) become false; scalars become full columns."""
    if _is_scalar(result):
        result = _broadcast(result, table)
    return pc.fill_null(result, False)


def _align(left, right):
    """Make two numeric operands comparable (int with float compares as float)."""
    lt, rt = left.type, right.type
    if pa.types.is_integer(lt) and pa.types.is_floating(rt):
        left = pc.cast(left, pa.float64())
    elif pa.types.is_floating(lt) and pa.types.is_integer(rt):
        right = pc.cast(right, pa.float64())
    return left, right


def _expr(expr: ast.Expr, table: pa.Table):
    if isinstance(expr, ast.Attr):
        if expr.name in table.column_names:
            return table.column(expr.name)
        return pa.nulls(table.num_rows)
    if isinstance(expr, ast.Literal):
        return pa.scalar(expr.value)
    if isinstance(expr, ast.Neg):
        return pc.negate(_expr(expr.operand, table))
    left, right = _align(_expr(expr.left, table), _expr(expr.right, table))
    if expr.op == "+":
        return pc.add(left, right)
    if expr.op == "-":
        return pc.subtract(left, right)
    if expr.op == "*":
        return pc.multiply(left, right)
    zero = pc.equal(right, 0)
    safe_right = (
        pc.if_else(zero, None, right) if not _is_scalar(right) else (None if right.as_py() == 0 else right)
    )
    if safe_right is None:
        return pa.nulls(table.num_rows, pa.float64())
    if expr.op == "/":
        return pc.divide(pc.cast(left, pa.float64()), pc.cast(safe_right, pa.float64()))
    # '%': truncated remainder (sign of the dividend), as in C, Java and Arrow.
    if pa.types.is_integer(_type_of(left)) and pa.types.is_integer(_type_of(safe_right)):
        quotient = pc.divide(left, safe_right)  # integer division truncates toward zero
        return pc.subtract(left, pc.multiply(quotient, safe_right))
    fleft, fright = pc.cast(left, pa.float64()), pc.cast(safe_right, pa.float64())
    return pc.subtract(fleft, pc.multiply(pc.trunc(pc.divide(fleft, fright)), fright))


def _type_of(value) -> pa.DataType:
    return value.type
