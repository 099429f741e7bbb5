"""One event dict typed by the catalog, without building an Arrow batch: ``Evaluator.push``.

The rules are those of ``batches.type_rows`` (and ``runtime/conversion.py``), for one row: the
row is bad when its event type is missing, blank or unknown, when an attribute its event type
declares is left out of the dict (among the query's columns), is a missing time, or holds a
value the declared type does not admit (every declared column is checked, as on every path); the first problem found is the reason, in the same
order. Values of the common Python types (an int for an int, a float for a double, a str for a
string, ...) are converted here; anything else goes through the column-wise conversion of a
batch of one value, so both paths accept, reject and convert exactly the same values. Warnings
(unknown columns, values for a type that does not declare the column) go to the builder's
notices, once each, as on the batch path.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ceql.compile.catalog import EVENT_TYPE, Catalog
from ceql.errors import EventError
from ceql.lang.schema import TIME_UNITS
from ceql.runtime.batches import BatchBuilder
from ceql.runtime.conversion import (
    EXACT_DOUBLE,
    INT64_MAX,
    INT64_MIN,
    Target,
    convert_python,
    is_unicode_text,
)

_ABSENT = object()
_NOT_HANDLED = object()  # a value the fast conversions leave to the column-wise one
_INT_TEXT = re.compile(r"[+-]?[0-9]{1,18}")
_ISO_TEXT = re.compile(
    r"(?P<y>[0-9]{4})-(?P<mo>[0-9]{2})-(?P<d>[0-9]{2})"
    r"(?:[T ](?P<h>[0-9]{2}):(?P<mi>[0-9]{2})(?::(?P<s>[0-9]{2})(?:[.,](?P<f>[0-9]{1,9}))?)?)?"
    r"(?P<z>Z|z|[+-][0-9]{2}(?::?[0-9]{2})?)?"
)
_DAYS_BEFORE_1970 = 719_162  # date(1970, 1, 1).toordinal() - 1


class _Field:
    """How one column is read for one event type: its name, target and conversion."""

    __slots__ = ("name", "target", "convert", "time", "required", "time_kind", "kept")

    def __init__(self, name: str, target: Target, time: bool, required: bool, kept: bool = True) -> None:
        self.name = name
        self.target = target
        self.time = time
        self.required = required
        self.kept = kept  # the query reads it (else it is only checked, as on every path)
        self.convert = _converter(target)
        self.time_kind = f"integer {target.unit}"


class RowTyper:
    """Types one event dict at a time for a query's catalog (see the module docstring)."""

    def __init__(self, builder: BatchBuilder) -> None:
        self.builder = builder
        # Every declared column is checked (``BatchBuilder.checked``); the query's are kept.
        catalog: Catalog = builder.checked
        kept = builder.catalog.columns
        self.catalog = catalog
        self.declared_names = catalog.declared_names | {EVENT_TYPE}
        self._fields: dict[str, tuple[list[_Field], list[str]]] = {}
        # Time columns known to come as integers (nothing more to record about them).
        self._integer_times: dict[str, bool] = {}
        for type_name in catalog.known_types:
            fields = []
            others = []
            for name, column in catalog.columns.items():
                if type_name in column.declared:
                    fields.append(
                        _Field(
                            name, column.target(type_name), column.is_time, name in catalog.required, name in kept
                        )
                    )
                else:
                    others.append(name)
            self._fields[type_name] = (fields, others)

    def type(self, event: Any, row: int = 0) -> tuple[str, dict[str, Any]]:
        """(event type, stored value per column its type declares, None if missing), or
        EventError naming ``row``."""
        if type(event) is not dict and not isinstance(event, Mapping):
            raise EventError(f"an event must be a dict, not {type(event).__name__}", row)
        if not self.declared_names.issuperset(event):
            notices = self.builder.notices
            for name in sorted(event.keys() - self.declared_names):
                notices.warn(
                    ("unknown", name), f"column {name} is not declared for any event type; it is ignored"
                )
        type_name = event.get(EVENT_TYPE)
        if type(type_name) is not str:
            type_name = self._odd_type(type_name, row)
        found = self._fields.get(type_name)
        if found is None:
            if not type_name.isascii():  # e.g. a lone surrogate: the reason every path gives
                self._odd_type(type_name, row)
            if not type_name.strip():
                raise EventError(f"event has no {EVENT_TYPE}", row)
            raise EventError(f"unknown event type {type_name!r}", row)
        fields, others = found
        values: dict[str, Any] = {}
        get = event.get
        for field in fields:
            name = field.name
            raw = get(name, _ABSENT)
            if raw is None or raw is _ABSENT:
                if field.time or (raw is _ABSENT and field.required):
                    raise EventError(f"missing field {name}", row)
                if field.kept:
                    values[name] = None
                continue
            value = field.convert(raw)
            if value is _NOT_HANDLED:
                value = self._slowly(field, raw, row)
            elif field.time and not self._integer_times.get(name):
                self._note_time(field, raw)
            if field.kept:
                values[name] = value
        if others:
            for name in others:
                if get(name) is not None:
                    self._undeclared(name, type_name, event[name])
        return type_name, values

    def _note_time(self, field: _Field, raw: Any) -> None:
        """Record how the input gives a time column (for outputs that show times): the first
        kind seen, unless integers come later (``Catalog.note_time_input``)."""
        catalog = self.catalog
        kind = _time_kind(raw, field)
        known = catalog.time_inputs.get(field.name)
        if known is None or (kind.startswith("integer") and not known.startswith("integer")):
            catalog.note_time_input(field.name, kind)
            self._integer_times[field.name] = kind.startswith("integer")

    def _odd_type(self, value: Any, row: int) -> str:
        """An event type that is not a str: missing, or converted as text would be (bad)."""
        if value is None:
            raise EventError(f"event has no {EVENT_TYPE}", row)
        converted = convert_python([value], Target("string"))
        if converted.codes[0] != 0:
            raise EventError(f"{EVENT_TYPE}: {converted.reason(0)}", row)
        text = converted.values[0].as_py()
        if text is None or not text.strip():
            raise EventError(f"event has no {EVENT_TYPE}", row)
        return text

    def _slowly(self, field: _Field, raw: Any, row: int) -> Any:
        """The column-wise conversion of one value (the rules in one place)."""
        converted = convert_python([raw], field.target)
        if converted.codes[0] != 0:
            raise EventError(f"column {field.name}: {converted.reason(0)}", row)
        if field.time and not converted.missing[0] and not self._integer_times.get(field.name):
            self.catalog.note_time_input(field.name, converted.input_kind or field.time_kind)
            self._integer_times[field.name] = self.catalog.time_inputs[field.name].startswith("integer")
        if converted.missing[0]:
            if field.time:
                raise EventError(f"missing field {field.name}", row)
            return None
        return converted.values[0].as_py()

    def _undeclared(self, name: str, type_name: str, raw: Any) -> None:
        """A value in a column the event's type does not declare is ignored: say so once."""
        key = ("undeclared", name, type_name)
        notices = self.builder.notices
        if key in notices.seen:
            return
        column = self.catalog.columns[name]
        if column.storage == "string" and raw == "":
            return  # an empty field is no value
        if convert_python([raw], next(iter(column.targets()))).missing[0]:
            return
        notices.warn(
            key,
            f"column {name} has values for event type {type_name}, which does not declare it; they are ignored",
        )


def _time_kind(raw: Any, field: _Field) -> str:
    return "ISO-8601" if type(raw) is str and not _INT_TEXT.fullmatch(raw) else field.time_kind


def _converter(target: Target):
    """A fast conversion of the common Python values to ``target`` (``_NOT_HANDLED`` for the
    others), giving exactly what the column-wise conversion gives."""
    kind = target.kind
    declared = target.type
    if declared == "string":
        # A lone surrogate is no text: the column-wise conversion rejects it, as on every path.
        return lambda raw: raw if type(raw) is str and (raw.isascii() or is_unicode_text(raw)) else _NOT_HANDLED
    if declared == "boolean":
        return lambda raw: raw if type(raw) is bool else _NOT_HANDLED
    if declared == "double":

        def to_double(raw: Any) -> Any:
            kind_of = type(raw)
            if kind_of is float:
                return raw
            if kind_of is int and INT64_MIN <= raw <= INT64_MAX:
                return float(raw)
            return _NOT_HANDLED

        return to_double
    if declared == "int":
        stored_double = kind == "double"

        def to_int(raw: Any) -> Any:
            kind_of = type(raw)
            if kind_of is int:
                if stored_double:
                    return float(raw) if -EXACT_DOUBLE <= raw <= EXACT_DOUBLE else _NOT_HANDLED
                return raw if INT64_MIN <= raw <= INT64_MAX else _NOT_HANDLED
            if kind_of is float and raw.is_integer() and -EXACT_DOUBLE <= raw <= EXACT_DOUBLE:
                return raw if stored_double else int(raw)
            if kind_of is str and _INT_TEXT.fullmatch(raw):
                number = int(raw)
                if stored_double:
                    return float(number) if -EXACT_DOUBLE <= number <= EXACT_DOUBLE else _NOT_HANDLED
                return number
            return _NOT_HANDLED

        return to_int
    # primary_time: int64 nanoseconds
    factor = TIME_UNITS[target.unit]
    limit = INT64_MAX // factor

    def to_time(raw: Any) -> Any:
        kind_of = type(raw)
        if kind_of is int:
            number = raw
        elif kind_of is float and raw.is_integer() and -EXACT_DOUBLE <= raw <= EXACT_DOUBLE:
            number = int(raw)
        elif kind_of is str:
            if _INT_TEXT.fullmatch(raw):
                number = int(raw)
            else:
                return _iso_ns(raw)
        else:
            return _NOT_HANDLED
        if factor == 1:
            return number if INT64_MIN <= number <= INT64_MAX else _NOT_HANDLED
        return number * factor if -limit <= number <= limit else _NOT_HANDLED

    return to_time


def _iso_ns(text: str) -> Any:
    """ISO-8601 text as int64 ns (the rules of compile/isotime.py), or _NOT_HANDLED for
    anything unusual (it then takes the column-wise path, which also explains bad values)."""
    if len(text) >= 20 and text[-1] == "Z" and text[10] == "T" and text[13] == ":" and text[16] == ":":
        # The common layout, YYYY-MM-DDTHH:MM:SS[.fraction]Z, by position; days by date, cached.
        days = _DAYS.get(text[:10])
        if days is None:
            days = _day_number(text[:10])
        clock = text[11:13] + text[14:16] + text[17:19]
        fraction = text[19:-1]
        if (
            days is not None
            and clock.isascii()
            and clock.isdigit()
            and (not fraction or (fraction[0] == "." and 2 <= len(fraction) <= 10 and fraction[1:].isascii() and fraction[1:].isdigit()))
        ):
            hour, minute, second = int(clock[0:2]), int(clock[2:4]), int(clock[4:6])
            if hour < 24 and minute < 60 and second < 60:
                nanos = int(fraction[1:].ljust(9, "0")) if fraction else 0
                return (days * 86_400 + hour * 3600 + minute * 60 + second) * 10**9 + nanos
    match = _ISO_TEXT.fullmatch(text)
    if match is None:
        return _NOT_HANDLED
    year, month, day = int(match["y"]), int(match["mo"]), int(match["d"])
    if not (1678 <= year <= 2261 and 1 <= month <= 12 and 1 <= day <= _days_in(year, month)):
        return _NOT_HANDLED  # near the int64 limits, or not a date: the careful path
    hour = int(match["h"] or 0)
    minute = int(match["mi"] or 0)
    second = int(match["s"] or 0)
    if hour >= 24 or minute >= 60 or second >= 60:
        return _NOT_HANDLED
    fraction = match["f"]
    nanos = int(fraction.ljust(9, "0")) if fraction else 0
    zone = match["z"]
    offset = 0
    if zone and zone not in ("Z", "z"):
        digits = zone[1:].replace(":", "")
        zone_hours = int(digits[:2])
        zone_minutes = int(digits[2:4]) if len(digits) == 4 else 0
        if zone_hours >= 24 or zone_minutes >= 60:
            return _NOT_HANDLED
        offset = (1 if zone[0] == "+" else -1) * (zone_hours * 3600 + zone_minutes * 60)
    days = _ordinal(year, month, day) - _DAYS_BEFORE_1970 - 1
    return (days * 86_400 + hour * 3600 + minute * 60 + second - offset) * 10**9 + nanos


_MONTH_DAYS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
_DAYS: dict[str, int] = {}  # 'YYYY-MM-DD' -> days since 1970-01-01 (dates seen, a bounded cache)


def _day_number(date: str) -> int | None:
    """Days since 1970 of a 'YYYY-MM-DD' date well inside the int64 range of times, or None."""
    if not (len(date) == 10 and date[4] == "-" and date[7] == "-" and date.isascii()):
        return None
    digits = date[0:4] + date[5:7] + date[8:10]
    if not digits.isdigit():
        return None
    year, month, day = int(digits[0:4]), int(digits[4:6]), int(digits[6:8])
    if not (1678 <= year <= 2261 and 1 <= month <= 12 and 1 <= day <= _days_in(year, month)):
        return None
    if len(_DAYS) >= 4096:
        _DAYS.clear()
    days = _DAYS[date] = _ordinal(year, month, day) - _DAYS_BEFORE_1970 - 1
    return days


def _leap(year: int) -> bool:
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def _days_in(year: int, month: int) -> int:
    return 29 if month == 2 and _leap(year) else _MONTH_DAYS[month - 1]


def _ordinal(year: int, month: int, day: int) -> int:
    """Proleptic Gregorian ordinal (1 = 0001-01-01), as datetime.date.toordinal."""
    y = year - 1
    days = y * 365 + y // 4 - y // 100 + y // 400
    days += sum(_MONTH_DAYS[: month - 1]) + (1 if month > 2 and _leap(year) else 0)
    return days + day
