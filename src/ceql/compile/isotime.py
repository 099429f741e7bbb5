"""ISO-8601 times as int64 nanoseconds, column-wise and exactly.

``2024-01-01``, ``2024-01-01T10:00``, ``2024-01-01 10:00:00.123456789``, with ``Z`` or an offset
(``+01:00``, ``+0100``, ``+01``); naive times are UTC. The date goes through Arrow's calendar
(which checks the day of the month), the rest through integer arithmetic; a fraction has at most
nine digits (nanoseconds), and times beyond int64 nanoseconds (years 1677 to 2262) are flagged.
"""

from __future__ import annotations

import datetime as _dt

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

INT64_MAX = 2**63 - 1

_ISO_TEXT = (
    r"^(?P<date>[0-9]{4}-[0-9]{2}-[0-9]{2})"
    r"(?:[T ](?P<hour>[0-9]{2}):(?P<minute>[0-9]{2})(?::(?P<second>[0-9]{2})(?:[.,](?P<fraction>[0-9]{1,9}))?)?)?"
    r"(?P<zone>Z|z|[+-][0-9]{2}(?::?[0-9]{2})?)?$"
)


def _mask(array: pa.Array) -> np.ndarray:
    """A boolean Arrow array as numpy, nulls as False."""
    return np.asarray(pc.fill_null(array, False).to_numpy(zero_copy_only=False), dtype=bool)


def parse_iso8601(trimmed: pa.Array, wanted: np.ndarray) -> tuple[pa.Array, np.ndarray, np.ndarray]:
    """ISO-8601 text -> int64 ns (null elsewhere), which rows parsed, which are beyond int64.

    Column-wise: the date by Arrow's calendar (which checks the day of the month), the rest by
    integer arithmetic; a fraction has at most 9 digits (nanoseconds)."""
    n = len(trimmed)
    none = np.zeros(n, dtype=bool)
    if not wanted.any():
        return pa.nulls(n, pa.int64()), none, none
    candidates = pc.if_else(pa.array(wanted), trimmed, pa.nulls(n, pa.string()))
    matched = _mask(pc.match_substring_regex(candidates, _ISO_TEXT))
    if not matched.any():
        return pa.nulls(n, pa.int64()), none, none
    parts = pc.extract_regex(pc.if_else(pa.array(matched), candidates, pa.nulls(n, pa.string())), _ISO_TEXT)
    field = {name: parts.field(name) for name in ("date", "hour", "minute", "second", "fraction", "zone")}
    try:
        days = pc.cast(pc.cast(pc.cast(field["date"], pa.date32()), pa.int32()), pa.int64())
        date_ok = _mask(pc.is_valid(days))
    except pa.ArrowInvalid:  # an impossible date (2024-02-30): find which rows, one by one
        days, date_ok = _dates_slowly(field["date"])

    def number(name: str) -> pa.Array:
        return pc.fill_null(pc.cast(pc.if_else(pc.equal(field[name], ""), None, field[name]), pa.int64()), 0)

    hour, minute, second = number("hour"), number("minute"), number("second")
    clock_ok = _mask(pc.and_(pc.and_(pc.less(hour, 24), pc.less(minute, 60)), pc.less(second, 60)))
    fraction = pc.fill_null(field["fraction"], "")
    nanos = pc.cast(pc.if_else(pc.equal(fraction, ""), "0", pc.utf8_rpad(fraction, 9, "0")), pa.int64())
    zone = pc.fill_null(field["zone"], "")
    sign = pc.if_else(pc.starts_with(zone, "-"), -1, 1)
    digits = pc.replace_substring(pc.utf8_slice_codeunits(zone, 1), ":", "")
    zone_hours = pc.fill_null(
        pc.cast(
            pc.if_else(
                pc.greater_equal(pc.utf8_length(digits), 2), pc.utf8_slice_codeunits(digits, 0, 2), None
            ),
            pa.int64(),
        ),
        0,
    )
    zone_minutes = pc.fill_null(
        pc.cast(
            pc.if_else(pc.equal(pc.utf8_length(digits), 4), pc.utf8_slice_codeunits(digits, 2, 4), None),
            pa.int64(),
        ),
        0,
    )
    zone_ok = _mask(pc.and_(pc.less(zone_hours, 24), pc.less(zone_minutes, 60)))
    offset_seconds = pc.multiply(sign, pc.add(pc.multiply(zone_hours, 3600), pc.multiply(zone_minutes, 60)))
    seconds = pc.subtract(
        pc.add(pc.add(pc.multiply(hour, 3600), pc.multiply(minute, 60)), second), offset_seconds
    )
    parsed = matched & date_ok & clock_ok & zone_ok
    # days * 86400 s fits easily; only the final nanoseconds can leave int64 (years beyond 2262).
    # The range is exact, to the nanosecond: 1677-09-21T00:12:43.145224192Z to
    # 2262-04-11T23:47:16.854775807Z.
    total_seconds = pc.add(pc.multiply(pc.fill_null(days, 0), 86_400), seconds)
    top, top_nanos = divmod(INT64_MAX, 10**9)
    bottom, bottom_nanos = divmod(-INT64_MAX - 1, 10**9)
    beyond = pc.or_(
        pc.or_(pc.greater(total_seconds, top), pc.and_(pc.equal(total_seconds, top), pc.greater(nanos, top_nanos))),
        pc.or_(
            pc.less(total_seconds, bottom), pc.and_(pc.equal(total_seconds, bottom), pc.less(nanos, bottom_nanos))
        ),
    )
    over = parsed & _mask(beyond)
    good = parsed & ~over
    safe_seconds = pc.if_else(pa.array(good), total_seconds, 0)
    # Before 1970, (s + 1) * 10^9 + (nanos - 10^9): the same number, no intermediate overflow.
    negative = pc.less(safe_seconds, 0)
    whole = pc.multiply(pc.if_else(negative, pc.add(safe_seconds, 1), safe_seconds), 10**9)
    values = pc.add(whole, pc.if_else(negative, pc.subtract(nanos, 10**9), nanos))
    values = pc.if_else(pa.array(good), values, pa.nulls(n, pa.int64()))
    return values, parsed, over


def _dates_slowly(dates: pa.Array) -> tuple[pa.Array, np.ndarray]:
    out: list[int | None] = []
    for text in dates.to_pylist():
        try:
            out.append(None if text is None else (_dt.date.fromisoformat(text) - _dt.date(1970, 1, 1)).days)
        except ValueError:
            out.append(None)
    values = pa.array(out, pa.int64())
    return values, _mask(pc.is_valid(values))
