"""Column-wise evaluation of row expressions (one value per row of a table).

Used for the conditions that read only the row being matched (evaluated once over the whole
input instead of once per attempt), for the columns the matcher reads, and for the outer
SELECT and WHERE. The semantics are the reference's, row by row: null propagates, AND/OR/NOT
are three-valued, integers are exact. An operation that fails (division by zero, overflow)
fails only on the rows where SQL evaluates it: AND does not evaluate its right side where the
left side is FALSE, OR where it is TRUE, CASE only the branch it takes, COALESCE up to the
first value that is not null; so failures are carried per row (``Vec.err``) and raised by the
caller only for rows whose value it uses.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ceql.errors import EventError
from ceql.sql import ir
from ceql.sql.types import SqlType

# error codes carried per row
E_DIV, E_MOD, E_ADD, E_SUB, E_MUL, E_NEG, E_ABS, E_SCALE, E_DIVOVF, E_CAST, E_RESCALE, E_FIT = range(1, 13)
MESSAGES = {
    E_DIV: "division by zero",
    E_MOD: "modulo by zero",
    E_ADD: "integer overflow in addition",
    E_SUB: "integer overflow in subtraction",
    E_MUL: "integer overflow in multiplication",
    E_NEG: "integer overflow in negation",
    E_ABS: "integer overflow in ABS",
    E_SCALE: "integer overflow in timestamp conversion",
    E_DIVOVF: "integer overflow in division",
    E_RESCALE: "integer overflow in decimal scaling",
    E_FIT: "a value beyond the precision of its DECIMAL type (CAST)",
}

INT64_MIN = np.iinfo(np.int64).min


@dataclass(frozen=True)
class Shift(ir.Node):
    """``expr`` read ``delta`` rows later in the same partition (PREV: negative)."""

    expr: ir.Node
    delta: int


@dataclass
class Vec:
    """One value per row: ``values`` (numpy, or a pyarrow string array), ``valid`` (not null)
    and ``err`` (0, or the code of the failure evaluating this row would raise)."""

    values: object
    valid: np.ndarray
    err: np.ndarray | None = None


class Env:
    """Where columns come from: ``column(name)`` gives a column as an Arrow array; ``bounds``
    (partition boundaries, for PREV/NEXT shifts) give each row's partition, computed when a shift
    first needs it."""

    def __init__(self, length: int, column: Callable[[str], pa.Array], bounds: np.ndarray | None = None) -> None:
        self.length = length
        self.column = column
        self.bounds = bounds
        self._rows: tuple[np.ndarray, np.ndarray] | None = None
        self._cache: dict[object, Vec] = {}

    def partition_rows(self) -> tuple[np.ndarray, np.ndarray]:
        """Per row: the first row of its partition, and one past its last row."""
        if self._rows is None:
            bounds = self.bounds if self.bounds is not None else np.array([0, self.length], dtype=np.int64)
            counts = np.diff(bounds)
            self._rows = (np.repeat(bounds[:-1], counts), np.repeat(bounds[1:], counts))
        return self._rows


def evaluate(node: ir.Node, env: Env) -> Vec:
    """The value of a row expression on every row."""
    key = node
    try:
        cached = env._cache.get(key)
    except TypeError:  # an unhashable constant: do not cache
        cached = None
    if cached is not None:
        return cached
    result = _evaluate(node, env)
    try:
        env._cache[key] = result
    except TypeError:
        pass
    return result


def to_arrow(vec: Vec, t: SqlType) -> pa.Array:
    """A Vec as an Arrow array of ``t``'s Arrow type (nulls where not valid)."""
    vec = dense(vec, len(vec.valid))
    if t.kind == "string":
        array = vec.values if isinstance(vec.values, (pa.Array, pa.ChunkedArray)) else pa.array(vec.values, pa.string())
        if isinstance(array, pa.ChunkedArray):
            array = array.combine_chunks()
        if array.type != pa.string():
            array = array.cast(pa.string())
        return pc.if_else(pa.array(vec.valid), array, pa.scalar(None, pa.string()))
    values = np.asarray(vec.values)
    mask = ~vec.valid
    if t.kind == "bool":
        return pa.array(values.astype(np.bool_), type=pa.bool_(), mask=mask)
    if t.kind == "double":
        return pa.array(values.astype(np.float64), type=pa.float64(), mask=mask)
    if t.kind == "timestamp":
        return pa.array(values.astype(np.int64), type=pa.int64(), mask=mask).cast(t.arrow())
    if t.kind == "null":
        return pa.nulls(len(vec.valid))
    if t.kind == "decimal":
        return decimal_array(values.astype(np.int64), vec.valid, t.arrow())
    return pa.array(values.astype(np.int64), type=pa.int64(), mask=mask)


def decimal_array(unscaled: np.ndarray, valid: np.ndarray, arrow_type: pa.DataType) -> pa.Array:
    """A decimal128 array of unscaled int64 values (16 bytes each, little-endian two's
    complement: the value, then its sign extended)."""
    n = len(unscaled)
    words = np.empty((n, 2), dtype=np.int64)
    words[:, 0] = unscaled
    words[:, 1] = unscaled >> 63
    bitmap = None
    if n and not valid.all():
        bitmap = pa.py_buffer(np.packbits(valid.astype(np.uint8), bitorder="little").tobytes())
    return pa.Array.from_buffers(arrow_type, n, [bitmap, pa.py_buffer(words.tobytes())])


def unscaled_values(array: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """A decimal128 array's unscaled values as int64, and per row whether it fits 64 bits."""
    n = len(array)
    data = array.buffers()[1]
    words = np.frombuffer(data, dtype=np.int64, count=2 * (array.offset + n))[2 * array.offset :].reshape(n, 2)
    low, high = words[:, 0], words[:, 1]
    return low.copy(), high == (low >> 63)


def first_error(vec: Vec, rows: np.ndarray | None = None) -> tuple[int, int] | None:
    """(row, code) of the first row (among ``rows``, a boolean mask) whose value fails."""
    if vec.err is None:
        return None
    err = vec.err if rows is None else np.where(rows, vec.err, 0)
    hits = np.flatnonzero(err)
    if not len(hits):
        return None
    return int(hits[0]), int(err[hits[0]])


# ---------------------------------------------------------------------------- internals


def plain(array: pa.Array | pa.ChunkedArray) -> pa.Array:
    """One Arrow array of the values: chunks combined, a dictionary decoded."""
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    if pa.types.is_dictionary(array.type):
        array = array.cast(array.type.value_type)
    return array


def _arrow_column(env: Env, name: str) -> Vec:
    array = plain(env.column(name))
    t = array.type
    valid = _valid(array)
    if pa.types.is_string(t) or pa.types.is_large_string(t) or str(t) == "string_view":
        if t != pa.string():
            array = array.cast(pa.string())
        return Vec(array, valid)
    if pa.types.is_timestamp(t):
        array = array.cast(pa.int64())
        t = array.type
    if pa.types.is_decimal(t):  # exact: the unscaled integers (scale in the column's type)
        values, fits = unscaled_values(array)
        bad = np.flatnonzero(valid & ~fits)
        if len(bad):
            raise EventError(f"integer overflow in column {name} (a decimal beyond 18 digits)")
        return Vec(np.where(valid, values, 0), valid)
    if pa.types.is_boolean(t):
        values = np.asarray(array.fill_null(False).to_numpy(zero_copy_only=False), dtype=np.bool_)
        return Vec(values, valid)
    target = pa.float64() if pa.types.is_floating(t) else pa.int64()
    if t != target:
        array = array.cast(target)
    if array.null_count:
        array = array.fill_null(0)
    return Vec(array.to_numpy(zero_copy_only=False), valid)


def _valid(array: pa.Array) -> np.ndarray:
    if array.null_count == 0:
        return np.ones(len(array), dtype=np.bool_)
    return np.asarray(array.is_valid().to_numpy(zero_copy_only=False), dtype=np.bool_)


def _const(node: ir.Const, n: int) -> Vec:
    """A constant: a scalar value (numpy and Arrow broadcast it) with a validity per row."""
    t = node.type
    if node.value is None:
        if t.kind == "string":
            return Vec(pa.scalar(None, pa.string()), np.zeros(n, dtype=np.bool_))
        dtype = np.float64 if t.kind == "double" else (np.bool_ if t.kind == "bool" else np.int64)
        return Vec(dtype(0), np.zeros(n, dtype=np.bool_))
    valid = np.ones(n, dtype=np.bool_)
    if t.kind == "string":
        return Vec(pa.scalar(node.value, pa.string()), valid)
    if t.kind == "double":
        return Vec(np.float64(node.value), valid)  # type: ignore[arg-type]
    if t.kind == "bool":
        return Vec(np.bool_(node.value), valid)
    if t.kind == "decimal":  # the unscaled integer
        return Vec(np.int64(int(node.value.scaleb(t.scale))), valid)  # type: ignore[union-attr]
    return Vec(np.int64(node.value), valid)  # type: ignore[arg-type]


def dense(vec: Vec, n: int) -> Vec:
    """``vec`` with one value per row (constants are kept as scalars until needed)."""
    values = vec.values
    if isinstance(values, pa.Scalar):
        return Vec(pa.array([values.as_py()] * n, values.type) if n else pa.array([], values.type), vec.valid, vec.err)
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        return vec
    array = np.asarray(values)
    if array.ndim == 0:
        return Vec(np.full(n, array, dtype=array.dtype), vec.valid, vec.err)
    return vec


def _merge_err(*errs: np.ndarray | None) -> np.ndarray | None:
    out = None
    for err in errs:
        if err is None:
            continue
        out = err.copy() if out is None else np.where(out != 0, out, err)
    return out


def _where_err(mask: np.ndarray, code: int, err: np.ndarray | None, n: int) -> np.ndarray | None:
    if not mask.any():
        return err
    new = np.where(mask, code, 0).astype(np.int8)
    return _merge_err(err, new)


def _evaluate(node: ir.Node, env: Env) -> Vec:  # noqa: C901 - one case per node kind
    n = env.length
    if isinstance(node, ir.Const):
        return _const(node, n)
    if isinstance(node, ir.RowCol):
        return _arrow_column(env, node.column)
    if isinstance(node, Shift):
        return _shift(evaluate(node.expr, env), node.delta, env)
    if isinstance(node, ir.Case):
        return _case(node, env)
    if not isinstance(node, ir.Op):
        raise TypeError(f"not a row expression: {node!r}")
    op = node.op
    if op in ("and", "or"):
        return _logic(op, evaluate(node.args[0], env), evaluate(node.args[1], env))
    if op == "coalesce":
        return _coalesce(node, env)
    args = [evaluate(a, env) for a in node.args]
    err = _merge_err(*(a.err for a in args))
    if op == "isnull":
        return Vec(~args[0].valid, np.ones(n, dtype=np.bool_), err)
    if op == "notnull":
        return Vec(args[0].valid.copy(), np.ones(n, dtype=np.bool_), err)
    valid = args[0].valid.copy()
    for a in args[1:]:
        valid &= a.valid
    if op == "not":
        return Vec(~np.asarray(args[0].values, dtype=np.bool_), valid, err)
    if op in ("=", "<>", "<", "<=", ">", ">="):
        return Vec(_compare(op, args[0], args[1], n), valid, err)
    if op in ir.STRING_FUNCTIONS:
        return _string_function(op, node, args, valid, err, n)
    if op in ir.MATH_FUNCTIONS:
        values = [np.broadcast_to(np.asarray(a.values, dtype=np.float64), (n,)) for a in args]
        return Vec(math_function(op, *values), valid, err)
    kind = node.type.kind
    if op == "cast":
        return _cast(args[0], node.args[0].type, node.type, valid, err)
    if op == "neg":
        if kind == "double":
            return Vec(-np.asarray(args[0].values), valid, err)
        v = np.asarray(args[0].values)
        return Vec(np.negative(v), valid, _where_err(valid & (v == INT64_MIN), E_NEG, err, n))
    if op == "abs":
        v = np.asarray(args[0].values)
        if kind == "double":
            return Vec(np.abs(v), valid, err)
        return Vec(np.abs(v), valid, _where_err(valid & (v == INT64_MIN), E_ABS, err, n))
    if op == "rescale":
        return _rescale(args[0], node.type.scale - node.args[0].type.scale, valid, err, n)
    if op == "fit":
        v = np.asarray(args[0].values, dtype=np.int64)
        if node.type.precision >= 19:  # every int64 fits
            return Vec(v, valid, err)
        bound = 10**node.type.precision
        return Vec(v, valid, _where_err(valid & ((v >= bound) | (v <= -bound)), E_FIT, err, n))
    if op == "/" and kind == "decimal":
        return _decimal_divide(node, args, valid, err, n)
    if op == "scale":
        v = np.asarray(args[0].values, dtype=np.int64)
        factor = int(node.args[1].value)  # type: ignore[attr-defined]
        r, bad = _mul(v, np.full(n, factor, dtype=np.int64))
        return Vec(r, valid, _where_err(valid & bad, E_SCALE, err, n))
    a = np.asarray(args[0].values)
    b = np.asarray(args[1].values)
    if kind == "double":
        return Vec(_double(op, a.astype(np.float64), b.astype(np.float64)), valid, err)
    a = a.astype(np.int64)
    b = b.astype(np.int64)
    with np.errstate(all="ignore"):
        if op == "+":
            r = a + b
            bad = ((a ^ r) & (b ^ r)) < 0
            return Vec(r, valid, _where_err(valid & bad, E_ADD, err, n))
        if op == "-":
            r = a - b
            bad = ((a ^ b) & (a ^ r)) < 0
            return Vec(r, valid, _where_err(valid & bad, E_SUB, err, n))
        if op == "*":
            r, bad = _mul(a, b)
            return Vec(r, valid, _where_err(valid & bad, E_MUL, err, n))
        zero = valid & (b == 0)
        safe_b = np.where(b == 0, 1, b)
        overflow = valid & (a == INT64_MIN) & (b == -1)
        safe_a = np.where(overflow, 0, a)
        q = np.abs(safe_a) // np.abs(safe_b)
        q = np.where((safe_a < 0) != (safe_b < 0), -q, q)
        if op == "/":
            err = _where_err(zero, E_DIV, err, n)
            return Vec(q, valid, _where_err(overflow, E_DIVOVF, err, n))
        r = np.where(overflow, 0, safe_a - safe_b * q)
        return Vec(r, valid, _where_err(zero, E_MOD, err, n))


def _rescale(arg: Vec, k: int, valid: np.ndarray, err, n: int) -> Vec:
    """Unscaled decimals to a scale k digits larger (an error past 64 bits) or -k smaller
    (rounded half away from zero)."""
    v = np.broadcast_to(np.asarray(arg.values, dtype=np.int64), (n,))
    if k >= 0:
        r, bad = _mul(v, np.full(n, 10**k, dtype=np.int64))
        return Vec(r, valid, _where_err(valid & bad, E_RESCALE, err, n))
    return Vec(_round_div(v, np.full(n, 10**-k, dtype=np.int64)), valid, err)


def _round_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a / b rounded half away from zero (b nonzero, no INT64_MIN / -1)."""
    q = np.abs(a) // np.abs(b)
    r = np.abs(a) - q * np.abs(b)
    q = q + (r >= np.abs(b) - r)
    return np.where((a < 0) != (b < 0), -q, q)


def _decimal_divide(node: ir.Op, args: list[Vec], valid: np.ndarray, err, n: int) -> Vec:
    """Decimal a / b: a's unscaled value brought to the scale that makes the quotient's unscaled
    value an integer division by b's, divided rounding half away from zero."""
    a = np.broadcast_to(np.asarray(args[0].values, dtype=np.int64), (n,))
    b = np.broadcast_to(np.asarray(args[1].values, dtype=np.int64), (n,))
    with np.errstate(all="ignore"):
        scaled, bad = _mul(a, np.full(n, 10 ** ir.dividend_scale(node), dtype=np.int64))
        err = _where_err(valid & bad, E_RESCALE, err, n)
        zero = valid & ~bad & (b == 0)
        err = _where_err(zero, E_DIV, err, n)
        overflow = valid & ~bad & (scaled == INT64_MIN) & (b == -1)
        err = _where_err(overflow, E_DIVOVF, err, n)
        ok = ~(bad | zero | overflow)
        q = _round_div(np.where(ok, scaled, 0), np.where(ok, b, 1))
    return Vec(q, valid, err)


def _mul(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    with np.errstate(all="ignore"):
        r = a * b
        safe_b = np.where(b == 0, 1, b)
        bad = (b != 0) & ((r // safe_b != a) | (r % safe_b != 0))
        bad |= ((a == -1) & (b == INT64_MIN)) | ((b == -1) & (a == INT64_MIN))
    return r, bad


def _double(op: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        if op == "+":
            return a + b
        if op == "-":
            return a - b
        if op == "*":
            return a * b
        if op == "/":
            return a / b  # numpy follows IEEE 754 (x/0 is inf or nan)
        return np.fmod(a, b)


def _string_function(op: str, node: ir.Op, args: list[Vec], valid: np.ndarray, err, n: int) -> Vec:
    """LIKE (SQL's: % any text, _ one character, case-sensitive), LOWER, UPPER and || on strings."""
    values = args[0].values
    if not isinstance(values, (pa.Array, pa.ChunkedArray, pa.Scalar)):
        values = pa.array(np.broadcast_to(np.asarray(values, dtype=object), n), pa.string())
    if isinstance(values, pa.Scalar):
        values = dense(Vec(values, valid), n).values
    if op == "like":
        pattern = str(node.args[1].value)  # type: ignore[attr-defined]
        result = pc.match_like(values, pattern)
        return Vec(np.asarray(result.fill_null(False).to_numpy(zero_copy_only=False), dtype=np.bool_), valid, err)
    if op == "length":
        return Vec(np.asarray(pc.utf8_length(values).fill_null(0).to_numpy(zero_copy_only=False), dtype=np.int64), valid, err)
    if op == "substr":
        start = int(node.args[1].value)  # type: ignore[attr-defined]
        length = int(node.args[2].value) if len(node.args) > 2 else None  # type: ignore[attr-defined]
        begin, stop, empty = substring_bounds(start, length)
        if empty:
            return Vec(pa.array([""] * n, pa.string()), valid, err)
        return Vec(pc.utf8_slice_codeunits(values, begin, stop) if stop is not None else pc.utf8_slice_codeunits(values, begin), valid, err)
    if op == "concat":
        other = args[1].values
        if not isinstance(other, (pa.Array, pa.ChunkedArray, pa.Scalar)):
            other = pa.array(np.broadcast_to(np.asarray(other, dtype=object), n), pa.string())
        if isinstance(other, pa.Scalar):
            other = dense(Vec(other, valid), n).values
        return Vec(pc.binary_join_element_wise(values, other, ""), valid, err)
    result = pc.utf8_lower(values) if op == "lower" else pc.utf8_upper(values)
    return Vec(result, valid, err)


def substring_bounds(start: int, length: int | None) -> tuple[int, int | None, bool]:
    """SUBSTRING(s, start [, length]) as a slice [begin, stop) of code points (Trino's: start 1
    is the first character, a negative start counts from the end, start 0 or a negative length
    is the empty string; ``stop`` None: to the end); ``empty``: the result is ''."""
    if start == 0 or (length is not None and length <= 0):
        return 0, None, True
    begin = start - 1 if start > 0 else start
    if length is None:
        return begin, None, False
    stop = begin + length
    if begin < 0 and stop >= 0:
        return begin, None, False
    return begin, stop, False


def math_function(op: str, x: np.ndarray, y: np.ndarray | None = None) -> np.ndarray:
    """``ir.MATH_FUNCTIONS`` of doubles, column-wise: ``vm.math_scalar`` of each row (the VM's
    own function, so that every path gives the same bits)."""
    from ceql.sql import vm

    x = np.ascontiguousarray(x, dtype=np.float64)
    y = np.zeros(len(x)) if y is None else np.ascontiguousarray(y, dtype=np.float64)
    return vm.math_array(ir.MATH_FUNCTIONS.index(op), x, y)


def _compare(op: str, left: Vec, right: Vec, n: int) -> np.ndarray:
    arrow = (pa.Array, pa.ChunkedArray, pa.Scalar)  # strings: arrays, or scalars for constants
    if isinstance(left.values, arrow) or isinstance(right.values, arrow):
        func = {"=": pc.equal, "<>": pc.not_equal, "<": pc.less, "<=": pc.less_equal, ">": pc.greater, ">=": pc.greater_equal}[op]
        result = func(left.values, right.values)
        if isinstance(result, pa.Scalar):  # two constants: the same answer on every row
            return np.full(n, bool(result.as_py()), dtype=np.bool_)
        return np.asarray(result.fill_null(False).to_numpy(zero_copy_only=False), dtype=np.bool_)
    a = np.asarray(left.values)
    b = np.asarray(right.values)
    with np.errstate(invalid="ignore"):
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


def _logic(op: str, left: Vec, right: Vec) -> Vec:
    lv = np.asarray(left.values, dtype=np.bool_) & left.valid
    rv = np.asarray(right.values, dtype=np.bool_) & right.valid
    l_false = left.valid & ~lv
    r_false = right.valid & ~rv
    l_true = left.valid & lv
    r_true = right.valid & rv
    n = len(left.valid)
    if op == "and":
        value_false = l_false | r_false
        value = ~value_false & l_true & r_true
        valid = value_false | (l_true & r_true)
        skipped = l_false  # the right side is not evaluated
    else:
        value_true = l_true | r_true
        value = value_true
        valid = value_true | (l_false & r_false)
        skipped = l_true
    right_err = None if right.err is None else np.where(skipped, 0, right.err).astype(np.int8)
    err = _merge_err(left.err, right_err)
    del n
    return Vec(value, valid, err)


def _case(node: ir.Case, env: Env) -> Vec:
    n = env.length
    undecided = np.ones(n, dtype=np.bool_)
    result: Vec | None = None
    err = None
    chosen_masks = []
    for condition, value in node.whens:
        c = evaluate(condition, env)
        c_err = None if c.err is None else np.where(undecided, c.err, 0).astype(np.int8)
        err = _merge_err(err, c_err)
        takes = undecided & c.valid & np.asarray(c.values, dtype=np.bool_)
        if c.err is not None:
            takes &= c.err == 0
        chosen_masks.append((takes, value))
        undecided &= ~takes
    branches = chosen_masks + ([(undecided, node.otherwise)] if node.otherwise is not None else [])
    valid = np.zeros(n, dtype=np.bool_)
    for mask, value in branches:
        v = evaluate(value, env)
        if v.err is not None:
            err = _merge_err(err, np.where(mask, v.err, 0).astype(np.int8))
        valid = np.where(mask, v.valid, valid)
        result = _select(result, v, mask, node.type, n)
    if result is None:
        result = _const(ir.Const(node.type, None), n)
    return Vec(result.values, valid, err)


def _select(current: Vec | None, value: Vec, mask: np.ndarray, t: SqlType, n: int) -> Vec:
    if current is None:
        current = _const(ir.Const(t, None), n)
    if t.kind == "string":
        values = pc.if_else(pa.array(mask), value.values, current.values)
        return Vec(values, current.valid)
    return Vec(np.where(mask, value.values, current.values), current.valid)


def _coalesce(node: ir.Op, env: Env) -> Vec:
    n = env.length
    undecided = np.ones(n, dtype=np.bool_)
    result: Vec | None = None
    err = None
    valid = np.zeros(n, dtype=np.bool_)
    for arg in node.args:
        v = evaluate(arg, env)
        if v.err is not None:
            err = _merge_err(err, np.where(undecided, v.err, 0).astype(np.int8))
        takes = undecided & v.valid
        result = _select(result, v, takes, node.type, n)
        valid |= takes
        undecided &= ~takes
    assert result is not None
    return Vec(result.values, valid, err)


def _cast(arg: Vec, source: SqlType, target: SqlType, valid: np.ndarray, err) -> Vec:
    v = np.asarray(arg.values)
    if target.kind == "double" and source.kind == "decimal":
        return Vec(v.astype(np.float64) / float(10**source.scale), valid, err)
    if target.kind == "double":
        return Vec(v.astype(np.float64), valid, err)
    if target.kind == "bool":
        return Vec(v != 0, valid, err)
    if source.kind == "double":
        with np.errstate(invalid="ignore"):
            bad = valid & (np.isnan(v) | (v < -(2.0**63)) | (v >= 2.0**63))
            out = np.trunc(np.where(bad | ~valid, 0.0, v)).astype(np.int64)
        return Vec(out, valid, _where_err(bad, E_CAST, err, len(valid)))
    return Vec(v.astype(np.int64), valid, err)


def _shift(vec: Vec, delta: int, env: Env) -> Vec:
    """Row i gets row i + delta's value when that row is in i's partition, else null."""
    n = env.length
    index = np.arange(n, dtype=np.int64) + delta
    start, end = env.partition_rows()
    inside = (index >= start) & (index < end)
    source = np.where(inside, index, 0)
    valid = inside & vec.valid[source] if n else np.zeros(0, dtype=np.bool_)
    if isinstance(vec.values, (pa.Array, pa.ChunkedArray)):
        values = vec.values.take(pa.array(source)) if n else vec.values
    elif isinstance(vec.values, pa.Scalar) or np.ndim(vec.values) == 0:
        values = vec.values
    else:
        values = np.asarray(vec.values)[source] if n else np.asarray(vec.values)
    err = None if vec.err is None else np.where(inside, vec.err[source], 0).astype(np.int8)
    return Vec(values, valid, err)
