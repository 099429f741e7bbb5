"""Integer arithmetic in one-event predicates is exact at the edges of int64 (as in the reference):
no silent wrap-around, ``/`` truncates toward zero, ``%`` has the sign of the dividend, a division
by zero makes the test false, and integers beyond 2^53 compare exactly with doubles."""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ceql
from ceql import reference
from ceql.compile.predicates import PredicateSet, _risky_rows

SCHEMA = ceql.declare("CREATE STREAM S { EVENT A { x:int, y:int, f:double } }")
MAX, MIN = 2**63 - 1, -(2**63)
EDGES = [
    0,
    1,
    -1,
    2,
    -3,
    7,
    MAX,
    MIN,
    MAX - 1,
    MIN + 1,
    2**62,
    -(2**62),
    2**53,
    2**53 + 1,
    -(2**53) - 1,
    3037000499,
    3037000500,
]


def events(pairs, doubles=None) -> list[dict]:
    doubles = doubles or [0.5] * len(pairs)
    return [{"event_type": "A", "x": x, "y": y, "f": f} for (x, y), f in zip(pairs, doubles)]


def engine(pred: str, stream: list[dict]) -> list[int]:
    return [m.trigger for m in ceql.compile(f"SELECT * FROM S WHERE A FILTER A[{pred}]", SCHEMA).run(stream)]


def ref(pred: str, stream: list[dict]) -> list[int]:
    checked = ceql.check(f"SELECT * FROM S WHERE A FILTER A[{pred}]", SCHEMA)
    return sorted(m.trigger for m in reference.run(checked, stream))


# An oracle independent of both engines: Python integers, CEQL's division rules.
def tdiv(a: int, b: int) -> int:
    quotient = abs(a) // abs(b)
    return quotient if (a < 0) == (b < 0) else -quotient


def tmod(a: int, b: int) -> int:
    return a - b * tdiv(a, b)


PAIRS = [(x, y) for x in EDGES for y in EDGES[:9]]
STREAM = events(PAIRS)


@pytest.mark.parametrize(
    "pred, oracle",
    [
        ("x + 9223372036854775807 > 0", lambda x, y: x + MAX > 0),  # the case
        ("x + y > 0", lambda x, y: x + y > 0),
        ("x - y < 0", lambda x, y: x - y < 0),
        ("x * y >= 0", lambda x, y: x * y >= 0),
        ("x * x > 9223372036854775807", lambda x, y: x * x > MAX),
        ("-x < 0", lambda x, y: -x < 0),
        ("(x + y) - y = x", lambda x, y: True),
        ("x * 2 - x = x", lambda x, y: True),
        ("x + 1 > x", lambda x, y: True),
    ],
)
def test_no_wrap_around(pred, oracle) -> None:
    expected = [i for i, (x, y) in enumerate(PAIRS) if oracle(x, y)]
    assert engine(pred, STREAM) == expected
    assert ref(pred, STREAM) == expected  # the reference agrees


@pytest.mark.parametrize(
    "pred, oracle",
    [
        ("x / y = 0", lambda x, y: y != 0 and tdiv(x, y) == 0),
        ("x / y < 0", lambda x, y: y != 0 and tdiv(x, y) < 0),
        ("x / 2 = -3", lambda x, y: tdiv(x, 2) == -3),
        ("x % 3 = 1", lambda x, y: tmod(x, 3) == 1),
        ("x % -3 = -1", lambda x, y: tmod(x, -3) == -1),
        ("x % y = 0", lambda x, y: y != 0 and tmod(x, y) == 0),
        ("x * y % 7 = 3", lambda x, y: tmod(x * y, 7) == 3),
        ("x / y * y + x % y = x", lambda x, y: y != 0),
        ("NOT x / y = 1", lambda x, y: not (y != 0 and tdiv(x, y) == 1)),
        ("x / 0 = 0 OR x % 0 = 0", lambda x, y: False),
    ],
)
def test_integer_division_truncates_and_zero_divisors_are_false(pred, oracle) -> None:
    expected = [i for i, (x, y) in enumerate(PAIRS) if oracle(x, y)]
    assert engine(pred, STREAM) == expected
    assert ref(pred, STREAM) == expected


def test_min_divided_by_minus_one_is_exact() -> None:
    stream = events([(MIN, -1)])
    assert engine("x / y > 0", stream) == [0]  # 2^63, no wrap to MIN
    assert engine("x % y = 0", stream) == [0]
    assert engine("-x > 9223372036854775806", stream) == [0]


BIG = [2**53 + 1, 2**53, -(2**53) - 1, MAX, MIN, 2**62 + 1, 3]
DOUBLES = [float(2**53), float(2**53), -float(2**53), 2.0**63, -(2.0**63), 2.0**62, 3.0]


@pytest.mark.parametrize(
    "pred",
    [
        "x = f",
        "x != f",
        "x < f",
        "x >= f",
        "x > f",
        "x <= f",
        "x * 1.0 = f",
        "x + 0.5 > f",
        "x IN {9007199254740992.0, 3.5}",
        "f IN {9007199254740993, 3}",
        "x IN {9007199254740992.5 .. 9223372036854775807}",
        "f IN {9007199254740993 .. 9223372036854775807}",
        "x NOT IN {3.0 .. 9007199254740992.0}",
        "x IN RANGE(f, f)",
        "f IN RANGE(x, x)",
        "x % 2.0 = 1.0",
    ],
)
def test_integers_beyond_2_53_compare_exactly_with_doubles(pred) -> None:
    stream = events([(x, 0) for x in BIG], DOUBLES)
    assert engine(pred, stream) == ref(pred, stream)


def test_a_comparison_with_nan_is_false_even_with_not_equal() -> None:
    stream = events([(1, 0), (2, 0)], [float("nan"), 1.0])
    for pred in ("f != 1.0", "f = f", "f != x", "f < 2.0", "f - f != 0.0"):
        assert engine(pred, stream) == ref(pred, stream), pred
    assert engine("f != 1.0", stream) == []
    assert engine("NOT f = 1.0", stream) == [0]


def test_double_remainder_is_fmod() -> None:
    stream = events([(0, 0)] * 4, [1e17 + 8, -7.5, 5.25, 1e300])
    for divisor in ("3.0", "-2.0", "0.7"):
        pred = f"f % {divisor} > 0.5"
        expected = [i for i, e in enumerate(stream) if math.fmod(e["f"], float(divisor)) > 0.5]
        assert engine(pred, stream) == expected


def test_only_the_rows_near_the_limits_leave_the_column_wise_path() -> None:
    n = 100_000
    x = np.arange(n, dtype=np.int64) - n // 2
    x[[10, 500, 99_999]] = [MAX, MAX - 5, MIN]
    table = pa.table({"event_type": ["A"] * n, "x": x, "y": np.ones(n, np.int64), "f": np.zeros(n)})
    checked = ceql.check("SELECT * FROM S WHERE A FILTER A[x + 9223372036854775000 > 0]", SCHEMA)
    pred = checked.query.formula.cond.pred
    overflowing = [i for i, v in enumerate(x.tolist()) if v + 9223372036854775000 > MAX]
    assert np.flatnonzero(_risky_rows(pred, table)).tolist() == overflowing  # exactly those
    predicates = PredicateSet()
    predicates.intern(pred)
    (result,) = predicates.evaluate(table)
    expected = [int(v) + 9223372036854775000 > 0 for v in x.tolist()]
    assert result.tolist() == expected


# --------------------------------------------------------------------------- property test

_ATOMS = st.sampled_from(["x", "y"]) | st.sampled_from(
    [
        "0",
        "1",
        "2",
        "-1",
        "7",
        "3037000500",
        "4611686018427387904",
        "9223372036854775807",
        "-9223372036854775807",
    ]
)


def _expressions():
    return st.recursive(
        _ATOMS,
        lambda inner: st.builds(
            lambda a, op, b: f"({a} {op} {b})", inner, st.sampled_from(["+", "-", "*", "/", "%"]), inner
        )
        | inner.map(lambda a: f"-({a})"),
        max_leaves=5,
    )


def _value(text: str, x: int, y: int):
    """The oracle: evaluate an expression written by _expressions with Python integers."""
    tokens = text.replace("(", " ( ").replace(")", " ) ").split()
    position = 0

    def parse():
        nonlocal position
        token = tokens[position]
        position += 1
        if token == "-":
            position += 1  # "("
            value = parse()
            position += 1  # ")"
            return None if value is None else -value
        if token == "(":
            left = parse()
            op = tokens[position]
            position += 1
            right = parse()
            position += 1  # ")"
            if left is None or right is None:
                return None
            if op == "+":
                return left + right
            if op == "-":
                return left - right
            if op == "*":
                return left * right
            if right == 0:
                return None
            return tdiv(left, right) if op == "/" else tmod(left, right)
        return {"x": x, "y": y}.get(token, int(token) if token.lstrip("-").isdigit() else None)

    return parse()


@settings(max_examples=150, deadline=None)
@given(
    left=_expressions(),
    op=st.sampled_from(["=", "!=", "<", "<=", ">", ">="]),
    right=_expressions(),
    values=st.lists(st.tuples(st.sampled_from(EDGES), st.sampled_from(EDGES)), min_size=1, max_size=6),
)
def test_random_integer_expressions_are_exact(left, op, right, values) -> None:
    import operator

    compare = {
        "=": operator.eq,
        "!=": operator.ne,
        "<": operator.lt,
        "<=": operator.le,
        ">": operator.gt,
        ">=": operator.ge,
    }[op]
    expected = []
    for i, (x, y) in enumerate(values):
        a, b = _value(left, x, y), _value(right, x, y)
        if a is not None and b is not None and compare(a, b):
            expected.append(i)
    assert engine(f"{left} {op} {right}", events(values)) == expected


_INT64 = st.one_of(st.sampled_from(EDGES), st.integers(MIN, MAX), st.integers(-5, 5))


@settings(max_examples=300, deadline=None)
@given(
    a=st.lists(_INT64, min_size=1, max_size=20), b=st.data(), op=st.sampled_from(["+", "-", "*", "/", "%"])
)
def test_overflow_detection_is_exact(a, b, op) -> None:
    from ceql.compile.predicates import _int_arithmetic

    b = b.draw(st.lists(_INT64, min_size=len(a), max_size=len(a)))
    risky = np.zeros(len(a), dtype=bool)
    with np.errstate(all="ignore"):
        values = _int_arithmetic(op, np.array(a, np.int64), np.array(b, np.int64), risky)
    for i, (x, y) in enumerate(zip(a, b)):
        if op in "/%" and y == 0:
            continue
        exact = {"+": x + y, "-": x - y, "*": x * y}.get(op)
        if exact is None:
            exact = tdiv(x, y) if op == "/" else tmod(x, y)
        assert risky[i] == (not MIN <= exact <= MAX), (x, op, y)
        if not risky[i]:
            assert int(values[i]) == exact, (x, op, y)
