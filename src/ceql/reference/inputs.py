"""Events for the reference evaluator: what ``Query.run`` accepts, as plain Python rows.

Dicts (with ``event_type``), a pandas DataFrame, Arrow tables or record batches (alone or in an
iterable, mixed with dicts). Values are checked against the declared types of the event's type:
a double attribute given as an integer becomes a float, a ``primary_time`` given as an integer
(in its declared unit), a datetime, a pandas or Arrow timestamp or an ISO-8601 string becomes
integer nanoseconds, NaN/NaT become missing. A value of the wrong type is an EventError naming
the row. ``time_kinds`` says how the input gives each time column (outputs show times so).
"""

from __future__ import annotations

import datetime as _dt
import math
from collections.abc import Iterable, Mapping
from typing import Any

from ceql.errors import EventError
from ceql.lang.schema import TIME_UNITS, Schema

_EXPECTED = {"int": "an integer", "double": "a number", "string": "a string", "boolean": "a boolean"}


def rows(events: Any, schema: Schema) -> list[dict[str, Any]]:
    """The events as a list of dicts, typed by the declarations."""
    out: list[dict[str, Any]] = []
    for raw in _raw_rows(events):
        out.append(_typed(raw, schema, len(out)))
    return out


def _raw_rows(events: Any) -> Iterable[Mapping[str, Any]]:
    import pyarrow as pa

    if isinstance(events, (pa.Table, pa.RecordBatch)):
        yield from _arrow_rows(events)
        return
    if _is_pandas(events):
        yield from _arrow_rows(pa.Table.from_pandas(events, preserve_index=False))
        return
    if isinstance(events, Mapping):
        events = [events]
    for event in events:
        if isinstance(event, (pa.Table, pa.RecordBatch)):
            yield from _arrow_rows(event)
        else:
            yield event


def _arrow_rows(table: Any) -> list[dict[str, Any]]:
    import pandas as pd
    import pyarrow as pa

    columns = {}
    for name, column in zip(table.schema.names, table.columns):
        if pa.types.is_timestamp(column.type):  # instants (not integers in a declared unit)
            ns = column.cast(pa.timestamp("ns", column.type.tz)).cast(pa.int64()).to_pylist()
            columns[name] = [None if v is None else pd.Timestamp(v, unit="ns", tz="UTC") for v in ns]
            continue
        columns[name] = column.to_pylist()
    return [{name: values[i] for name, values in columns.items()} for i in range(table.num_rows)]


def _is_pandas(value: Any) -> bool:
    module = type(value).__module__
    return module.startswith("pandas") and hasattr(value, "to_dict") and hasattr(value, "columns")


def _typed(raw: Mapping[str, Any], schema: Schema, row: int) -> dict[str, Any]:
    if not isinstance(raw, Mapping) or "event_type" not in raw:
        raise EventError("event has no 'event_type'", row)
    decl = schema.event_types.get(raw["event_type"])
    if decl is None:
        raise EventError(f"unknown event type {raw['event_type']!r}", row)
    event = dict(raw)
    for attribute in decl.attributes:
        value = event.get(attribute.name)
        if value is None or (isinstance(value, float) and math.isnan(value)):
            event[attribute.name] = None
            continue
        kind = attribute.type
        if kind == "primary_time":
            event[attribute.name] = _time_ns(value, attribute.name, row, attribute.time_unit)
        elif kind == "double" and isinstance(value, int) and not isinstance(value, bool):
            event[attribute.name] = float(value)
        elif not _fits(kind, value):
            raise EventError(f"column {attribute.name}: {value!r} is not {_EXPECTED[kind]}", row)
    return event


def _fits(kind: str, value: Any) -> bool:
    if kind == "int":
        return isinstance(value, int) and not isinstance(value, bool) and -(2**63) <= value < 2**63
    if kind == "double":
        return isinstance(value, float)
    if kind == "string":
        return isinstance(value, str)
    return isinstance(value, bool)


def _time_ns(value: Any, name: str, row: int, unit: str = "ns") -> int:
    """A primary_time value as integer nanoseconds since the epoch (UTC when no zone);
    integers are in the declared ``unit``."""
    scale = TIME_UNITS[unit]
    if isinstance(value, int) and not isinstance(value, bool):
        return value * scale
    if isinstance(value, float) and value.is_integer():
        return int(value) * scale
    if hasattr(value, "value") and hasattr(value, "tz_localize"):  # pandas Timestamp
        return int(value.value)
    if isinstance(value, str):
        text = value.strip()
        if text.lstrip("-").isdigit():
            return int(text) * scale
        try:
            value = _dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            raise EventError(f"column {name}: {value!r} is not a time", row) from None
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=_dt.timezone.utc)
        delta = value - _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
        return (delta.days * 86_400 + delta.seconds) * 10**9 + delta.microseconds * 1000
    if isinstance(value, _dt.date):  # midnight UTC
        return (value - _dt.date(1970, 1, 1)).days * 86_400 * 10**9
    raise EventError(f"column {name}: {value!r} is not a time", row)


def time_kinds(events: Any, schema: Schema) -> dict[str, str]:
    """How the input gives each primary_time column, in the words the engine's catalog uses
    (``integer ms``, ``ISO-8601``, ``timestamp[us, tz=UTC]``...): the type of an Arrow or
    pandas column, else the first value given (Python times and dates are UTC timestamps)."""
    import pyarrow as pa

    units = {a.name: a.time_unit for d in schema.event_types.values() for a in d.attributes if a.type == "primary_time"}
    kinds: dict[str, str] = {}
    if _is_pandas(events):
        events = pa.Table.from_pandas(events, preserve_index=False)
    sources = [events] if isinstance(events, (pa.Table, pa.RecordBatch, Mapping)) else events
    for source in sources:
        if isinstance(source, (pa.Table, pa.RecordBatch)):
            for name in units:
                if name in kinds or name not in source.schema.names:
                    continue
                column = source.column(name)
                if pa.types.is_timestamp(column.type) or pa.types.is_date(column.type):
                    kinds[name] = str(column.type)
                else:
                    values = [v for v in column.to_pylist() if v is not None]
                    if values:
                        kinds[name] = _kind_of(values[0], units[name])
            continue
        for name in units:
            if name not in kinds and isinstance(source, Mapping) and source.get(name) is not None:
                kinds[name] = _kind_of(source[name], units[name])
    return kinds


def _kind_of(value: Any, unit: str) -> str:
    if isinstance(value, str):
        return f"integer {unit}" if value.strip().lstrip("-+").isdigit() else "ISO-8601"
    if isinstance(value, (int, float)):
        return f"integer {unit}"
    return "timestamp[ns, tz=UTC]"  # datetimes, dates, pandas Timestamps
