"""The value types of MATCH_RECOGNIZE expressions and how input columns map to them.

ceql computes with five kinds of values: ``int`` (64-bit, exact: overflow is an error), ``double``,
``string``, ``bool``, ``timestamp`` (an integer count of ``unit`` since the epoch, with the
column's time zone or none) and ``decimal`` (exact, ``DECIMAL(precision, scale)``: the engine
computes with the unscaled 64-bit integer, the reference with Python's Decimal), plus ``interval`` (nanoseconds; literals only), ``null`` (the
type of a bare NULL literal, which fits anywhere) and ``array`` (ARRAY_AGG's result: a measure
only, an Arrow list).
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

UNIT_NANOS = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}


@dataclass(frozen=True)
class SqlType:
    kind: str  # int, double, string, bool, timestamp, interval, null, array
    unit: str | None = None  # timestamps
    tz: str | None = None  # timestamps with a zone
    element: SqlType | None = None  # arrays (ARRAY_AGG's result): the type of the elements
    precision: int = 0  # decimals: digits in all
    scale: int = 0  # decimals: digits after the point


    def __str__(self) -> str:
        if self.kind == "array":
            return f"array({self.element})"
        if self.kind == "decimal":
            return f"decimal({self.precision}, {self.scale})"
        if self.kind == "timestamp":
            return f"timestamp({self.unit}{', ' + self.tz if self.tz else ''})"
        return self.kind

    @property
    def numeric(self) -> bool:
        return self.kind in ("int", "double")

    def arrow(self) -> pa.DataType:
        """The Arrow type of a result of this type."""
        if self.kind == "int":
            return pa.int64()
        if self.kind == "double":
            return pa.float64()
        if self.kind == "string":
            return pa.string()
        if self.kind == "bool":
            return pa.bool_()
        if self.kind == "timestamp":
            return pa.timestamp(self.unit or "ns", self.tz)
        if self.kind == "decimal":
            return pa.decimal128(self.precision, self.scale)
        if self.kind == "array":
            return pa.list_(self.element.arrow() if self.element is not None else pa.null())
        return pa.null()


INT = SqlType("int")
DOUBLE = SqlType("double")
STRING = SqlType("string")
BOOL = SqlType("bool")
NULL = SqlType("null")
INTERVAL = SqlType("interval")

#: Decimals are exact with at most 18 digits after the point (a scale the unscaled int64 can
#: hold); precision is capped at 38 (Arrow's decimal128), as Trino caps it.
MAX_DECIMAL_SCALE = 18
MAX_DECIMAL_PRECISION = 38
#: BIGINT as a decimal (Trino's rule: an integer meets a decimal as DECIMAL(19, 0)).
INT_AS_DECIMAL_PRECISION = 19


def decimal(precision: int, scale: int) -> SqlType:
    """``DECIMAL(precision, scale)``, the precision capped at 38."""
    return SqlType("decimal", precision=min(max(precision, scale, 1), MAX_DECIMAL_PRECISION), scale=scale)


def as_decimal(t: SqlType) -> SqlType:
    """An integer or decimal type as a decimal (BIGINT is DECIMAL(19, 0))."""
    if t.kind == "decimal":
        return t
    return decimal(INT_AS_DECIMAL_PRECISION, 0)


def decimal_result(op: str, a: SqlType, b: SqlType) -> SqlType:
    """The type of ``a op b`` for decimals (or an integer and a decimal), Trino's rules:
    + and -: (1 + max(s1, s2) + max(p1 - s1, p2 - s2), max(s1, s2)); *: (p1 + p2, s1 + s2);
    /: (p1 + s2 + max(0, s2 - s1), max(s1, s2)); %: (min(p1 - s1, p2 - s2) + max(s1, s2),
    max(s1, s2)); precision capped at 38."""
    a, b = as_decimal(a), as_decimal(b)
    (p1, s1), (p2, s2) = (a.precision, a.scale), (b.precision, b.scale)
    if op in ("+", "-"):
        return decimal(1 + max(s1, s2) + max(p1 - s1, p2 - s2), max(s1, s2))
    if op == "*":
        return decimal(p1 + p2, s1 + s2)
    if op == "/":
        return decimal(p1 + s2 + max(0, s2 - s1), max(s1, s2))
    return decimal(min(p1 - s1, p2 - s2) + max(s1, s2), max(s1, s2))


def sql_type(arrow_type: pa.DataType) -> SqlType | None:
    """The SQL type of an input column's Arrow type; None when ceql cannot compute with it."""
    t = arrow_type
    if pa.types.is_dictionary(t):
        t = t.value_type
    if pa.types.is_signed_integer(t) or t in (pa.uint8(), pa.uint16(), pa.uint32()):
        return INT
    if pa.types.is_floating(t):
        return DOUBLE
    if pa.types.is_boolean(t):
        return BOOL
    if pa.types.is_string(t) or pa.types.is_large_string(t) or str(t) == "string_view":
        return STRING
    if pa.types.is_timestamp(t):
        return SqlType("timestamp", t.unit, t.tz)
    if pa.types.is_decimal(t) and t.bit_width <= 128 and 0 <= t.scale <= MAX_DECIMAL_SCALE:
        return decimal(t.precision, t.scale)
    return None


def finer_unit(a: str, b: str) -> str:
    """The finer of two timestamp units."""
    return a if UNIT_NANOS[a] <= UNIT_NANOS[b] else b


def unify(a: SqlType, b: SqlType) -> SqlType | None:
    """The common type of two branches (CASE, COALESCE): None if they do not mix."""
    if a.kind == "null":
        return b
    if b.kind == "null":
        return a
    if a == b:
        return a
    if "decimal" in (a.kind, b.kind) and {a.kind, b.kind} <= {"decimal", "int"}:
        # the wider integer part and the larger scale (Trino's common super type)
        a, b = as_decimal(a), as_decimal(b)
        scale = max(a.scale, b.scale)
        return decimal(max(a.precision - a.scale, b.precision - b.scale) + scale, scale)
    if "decimal" in (a.kind, b.kind) and {a.kind, b.kind} <= {"decimal", "double"}:
        return DOUBLE
    if a.numeric and b.numeric:
        return DOUBLE
    if a.kind == "timestamp" and b.kind == "timestamp" and (a.tz is None) == (b.tz is None):
        return SqlType("timestamp", finer_unit(a.unit or "ns", b.unit or "ns"), a.tz)
    return None
