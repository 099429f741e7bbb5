"""Time written as text: ``TIMESTAMP '2024-03-01T09:00:00Z'`` and ``INTERVAL '10' MINUTE``.

A timestamp is an ISO-8601 instant with the rules of the input (docs/input.md): a date,
optionally ``T`` or a space and ``hh:mm``, ``:ss`` and a fraction of up to nine digits, and
``Z`` or an offset (``+01:00``, ``+0100``, ``+01``); without a zone it is UTC. Its value is the
int64 number of nanoseconds since 1970-01-01T00:00:00Z, computed with integer arithmetic. An
interval is a decimal number of one of the units of ``WITHIN`` (NANOSECONDS to DAYS, singular
or plural) that makes a whole number of nanoseconds.
"""

from __future__ import annotations

import re
from fractions import Fraction

from ceql.lang import grammar

_ISO = re.compile(
    r"(?P<y>[0-9]{4})-(?P<mo>[0-9]{2})-(?P<d>[0-9]{2})"
    r"(?:[T ](?P<h>[0-9]{2}):(?P<mi>[0-9]{2})(?::(?P<s>[0-9]{2})(?:[.,](?P<f>[0-9]{1,9}))?)?)?"
    r"(?P<z>Z|z|[+-][0-9]{2}(?::?[0-9]{2})?)?"
)
_NUMBER = re.compile(r"[0-9]+(?:\.[0-9]+)?")
_MONTH_DAYS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
_EPOCH_ORDINAL = 719_163  # 1970-01-01 as a proleptic Gregorian ordinal (0001-01-01 is 1)
TIMESTAMP_EXAMPLE = "2024-03-01T09:00:00Z"


def _leap(year: int) -> bool:
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def _ordinal(year: int, month: int, day: int) -> int:
    y = year - 1
    days = y * 365 + y // 4 - y // 100 + y // 400 + sum(_MONTH_DAYS[: month - 1])
    return days + (1 if month > 2 and _leap(year) else 0) + day


def parse_timestamp(text: str) -> int | str:
    """The nanoseconds of an ISO-8601 instant, or why the text is not one."""
    match = _ISO.fullmatch(text)
    if match is None:
        return f"'{text}' is not an ISO-8601 time (such as '{TIMESTAMP_EXAMPLE}')"
    year, month, day = int(match["y"]), int(match["mo"]), int(match["d"])
    if not 1 <= month <= 12 or not 1 <= day <= (29 if month == 2 and _leap(year) else _MONTH_DAYS[month - 1]):
        return f"'{text}' is not a date"
    if year < 1:
        return f"'{text}' is not a date"
    hour, minute, second = int(match["h"] or 0), int(match["mi"] or 0), int(match["s"] or 0)
    if hour >= 24 or minute >= 60 or second >= 60:
        return f"'{text}' is not a time of day"
    fraction = match["f"]
    nanos = int(fraction.ljust(9, "0")) if fraction else 0
    offset = 0
    zone = match["z"]
    if zone and zone not in ("Z", "z"):
        digits = zone[1:].replace(":", "")
        hours, minutes = int(digits[:2]), int(digits[2:4]) if len(digits) == 4 else 0
        if hours >= 24 or minutes >= 60:
            return f"'{text}' has an impossible offset {zone}"
        offset = (1 if zone[0] == "+" else -1) * (hours * 3600 + minutes * 60)
    days = _ordinal(year, month, day) - _EPOCH_ORDINAL
    seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offset
    total = seconds * 10**9 + nanos
    if not -grammar.INT64_MAX - 1 <= total <= grammar.INT64_MAX:  # the input's bound (compile/isotime.py)
        return f"'{text}' is beyond the int64 nanosecond range of times (years 1677 to 2262)"
    return total


def timestamp_zone(text: str) -> str | None:
    """The zone designator of an ISO-8601 instant (``Z``, ``+01:00``, ...), or None (none
    written, or not an instant)."""
    match = _ISO.fullmatch(text)
    return match["z"] if match is not None else None


def format_timestamp(value: int) -> str:
    """The ISO-8601 text of a time in nanoseconds (UTC, ``Z``, the fraction only if needed)."""
    seconds, nanos = divmod(value, 10**9)
    days, rest = divmod(seconds, 86_400)
    year, month, day = _civil(days)
    text = f"{year:04d}-{month:02d}-{day:02d}T{rest // 3600:02d}:{rest % 3600 // 60:02d}:{rest % 60:02d}"
    if nanos:
        text += "." + f"{nanos:09d}".rstrip("0")
    return text + "Z"


def _civil(days: int) -> tuple[int, int, int]:
    """(year, month, day) of a number of days since 1970-01-01 (H. Hinnant's algorithm)."""
    z = days + 719_468
    era = z // 146_097
    doe = z - era * 146_097
    yoe = (doe - doe // 1460 + doe // 36_524 - doe // 146_096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    return yoe + era * 400 + (1 if month <= 2 else 0), month, day


def parse_interval(number: str, unit: str) -> int | str:
    """The nanoseconds of ``number`` (decimal text) ``unit`` (a WITHIN unit, any spelling), or
    why it is not an interval."""
    plural = grammar.TIME_UNIT_NAMES.get(unit.upper())
    if plural is None:
        return f"{unit} is not a time unit (DAYS, HOURS, MINUTES, SECONDS, MILLISECONDS, MICROSECONDS, NANOSECONDS)"
    if _NUMBER.fullmatch(number) is None:
        return f"'{number}' is not a number (write INTERVAL '10' MINUTES; for a negative interval, -INTERVAL ...)"
    amount = Fraction(number) * grammar.TIME_UNIT_NS[plural]
    if amount.denominator != 1:
        return f"'{number}' {unit} is not a whole number of nanoseconds"
    if amount > grammar.INT64_MAX:
        return f"INTERVAL '{number}' {unit} is too long (at most about 292 years)"
    return int(amount)


def format_interval(value: int) -> str:
    """``INTERVAL 'n' UNIT`` for a non-negative number of nanoseconds, in the largest unit that
    divides it."""
    for plural, singular, ns in grammar.TIME_UNITS:
        if value % ns == 0:
            count = value // ns
            return f"INTERVAL '{count}' {singular if count == 1 else plural}"
    raise AssertionError("NANOSECONDS divides every interval")  # pragma: no cover
