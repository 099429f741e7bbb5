"""The value types of MATCH_RECOGNIZE expressions and how input columns map to them.

ceql computes with five kinds of values: ``int`` (64-bit, exact: overflow is an error), ``double``,
``string``, ``bool`` and ``timestamp`` (an integer count of ``unit`` since the epoch, with the
column's time zone or none), plus ``interval`` (nanoseconds; literals only), ``null`` (the
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

    def __str__(self) -> str:
        if self.kind == "array":
            return f"array({self.element})"
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
        if self.kind == "array":
            return pa.list_(self.element.arrow() if self.element is not None else pa.null())
        return pa.null()


INT = SqlType("int")
DOUBLE = SqlType("double")
STRING = SqlType("string")
BOOL = SqlType("bool")
NULL = SqlType("null")
INTERVAL = SqlType("interval")


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
    if a.numeric and b.numeric:
        return DOUBLE
    if a.kind == "timestamp" and b.kind == "timestamp" and (a.tz is None) == (b.tz is None):
        return SqlType("timestamp", finer_unit(a.unit or "ns", b.unit or "ns"), a.tz)
    return None
