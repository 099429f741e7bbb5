"""Turn user events (dicts, pandas, Arrow) into typed Arrow tables for the evaluator.

Columns: ``event_type`` (string) and one column per attribute the query needs, typed from the
declarations (int and primary_time -> int64, double -> float64, string, boolean). Bad values
raise EventError naming the row and the reason; nothing is dropped silently.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ceql.errors import EventError, UnsupportedQueryError
from ceql.lang.schema import Schema

ARROW_TYPES = {
    "int": pa.int64(),
    "double": pa.float64(),
    "string": pa.string(),
    "boolean": pa.bool_(),
    "primary_time": pa.int64(),
}
DEFAULT_BATCH = 65_536


def column_types(schema: Schema, type_names: Iterable[str]) -> dict[str, pa.DataType]:
    """Arrow type of each attribute over the given event types (int with double -> double)."""
    columns: dict[str, pa.DataType] = {}
    origin: dict[str, str] = {}
    for type_name in type_names:
        for attribute in schema.event_types[type_name].attributes:
            arrow = ARROW_TYPES[attribute.type]
            previous = columns.get(attribute.name)
            if previous is None or previous == arrow:
                columns[attribute.name] = arrow
                origin.setdefault(attribute.name, type_name)
            elif {previous, arrow} <= {pa.int64(), pa.float64()}:
                columns[attribute.name] = pa.float64()
            else:
                raise UnsupportedQueryError(
                    f"attribute {attribute.name} is {previous} in {origin[attribute.name]} but {arrow} in "
                    f"{type_name}; ceql needs one type per attribute name among the event types a query uses"
                )
    return columns


def to_time_ns(value: Any) -> int | None:
    """A primary_time value as int64 nanoseconds (ints pass; datetimes and ISO strings convert)."""
    if value is None or isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        text = value.strip()
        if text.lstrip("-").isdigit():
            return int(text)
        try:
            value = _dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            raise ValueError(f"not a time: {value!r} (expected integer nanoseconds or ISO-8601)") from None
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=_dt.timezone.utc)
        delta = value - _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
        return (delta.days * 86_400 + delta.seconds) * 10**9 + delta.microseconds * 1000
    if hasattr(value, "value") and hasattr(value, "tz_localize"):  # pandas Timestamp
        return int(value.value)
    raise ValueError(f"not a time: {value!r} (expected integer nanoseconds or ISO-8601)")


class BatchBuilder:
    """Builds typed Arrow tables for one schema and set of columns."""

    def __init__(self, schema: Schema, columns: dict[str, pa.DataType], time_columns: set[str]) -> None:
        self.schema = schema
        self.columns = columns
        self.time_columns = time_columns
        self.known_types = set(schema.event_types)
        self.arrow_schema = pa.schema([("event_type", pa.string())] + list(columns.items()))

    # ------------------------------------------------------------------ dict rows

    def from_rows(self, rows: list[Mapping[str, Any]], first_row: int = 0) -> pa.Table:
        """A table from event dicts; ``first_row`` numbers rows in error messages."""
        types = []
        for index, row in enumerate(rows):
            try:
                event_type = row["event_type"]
            except (KeyError, TypeError):
                raise EventError("event has no 'event_type'", first_row + index) from None
            if event_type not in self.known_types:
                raise EventError(f"unknown event type {event_type!r}", first_row + index)
            types.append(event_type)
        arrays = [pa.array(types, pa.string())]
        for name, arrow_type in self.columns.items():
            values = [row.get(name) for row in rows]
            if name in self.time_columns:
                values = self._times(values, name, first_row)
            arrays.append(self._array(values, arrow_type, name, first_row, rows))
        return pa.Table.from_arrays(arrays, schema=self.arrow_schema)

    def _times(self, values: list, name: str, first_row: int) -> list:
        out = []
        for index, value in enumerate(values):
            try:
                out.append(to_time_ns(value))
            except ValueError as exc:
                raise EventError(f"column {name}: {exc}", first_row + index) from None
        return out

    def _array(self, values: list, arrow_type: pa.DataType, name: str, first_row: int, rows) -> pa.Array:
        try:
            if arrow_type == pa.int64() and any(isinstance(v, bool) for v in values):
                raise pa.ArrowInvalid("boolean for an integer")
            return pa.array(values, arrow_type)
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, TypeError):
            pass
        for index, value in enumerate(values):  # find the offending row
            try:
                if arrow_type == pa.int64() and isinstance(value, bool):
                    raise TypeError
                pa.array([value], arrow_type)
            except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, TypeError):
                expected = {
                    pa.int64(): "an integer",
                    pa.float64(): "a number",
                    pa.string(): "a string",
                    pa.bool_(): "a boolean",
                }.get(arrow_type, str(arrow_type))
                raise EventError(f"column {name}: {value!r} is not {expected}", first_row + index) from None
        raise EventError(f"column {name}: values cannot be converted to {arrow_type}", first_row)

    # ------------------------------------------------------------------ Arrow / pandas

    def from_table(self, table: pa.Table, first_row: int = 0) -> pa.Table:
        """Normalise an Arrow table: check types, add missing columns, cast to declared types."""
        if "event_type" not in table.column_names:
            raise EventError("input has no 'event_type' column", first_row)
        event_type = table.column("event_type")
        if not pa.types.is_string(event_type.type):
            event_type = pc.cast(event_type, pa.string())
        known = pa.array(sorted(self.known_types), pa.string())
        unknown = pc.invert(pc.fill_null(pc.is_in(event_type, value_set=known), False))
        if pc.any(unknown).as_py():
            index = pc.index(unknown, True).as_py()
            raise EventError(f"unknown event type {event_type[index].as_py()!r}", first_row + index)
        arrays = [event_type]
        for name, arrow_type in self.columns.items():
            if name not in table.column_names:
                arrays.append(pa.nulls(table.num_rows, arrow_type))
                continue
            column = table.column(name)
            if column.type == arrow_type:
                arrays.append(column)
                continue
            if name in self.time_columns and (
                pa.types.is_timestamp(column.type) or pa.types.is_string(column.type)
            ):
                arrays.append(pa.array(self._times(column.to_pylist(), name, first_row), pa.int64()))
                continue
            try:
                arrays.append(pc.cast(column, arrow_type))
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                arrays.append(self._array(column.to_pylist(), arrow_type, name, first_row, None))
        return pa.Table.from_arrays(arrays, schema=self.arrow_schema)


def iter_tables(events: Any, builder: BatchBuilder, batch_size: int = DEFAULT_BATCH) -> Iterator[pa.Table]:
    """Tables of at most ``batch_size`` events from dicts, pandas, or Arrow input."""
    if isinstance(events, pa.RecordBatch):
        events = pa.Table.from_batches([events])
    if isinstance(events, pa.Table):
        offset = 0
        for batch in events.to_batches(max_chunksize=batch_size):
            yield builder.from_table(pa.Table.from_batches([batch]), offset)
            offset += batch.num_rows
        return
    if _is_pandas(events):
        table = pa.Table.from_pandas(events, preserve_index=False)
        yield from iter_tables(table, builder, batch_size)
        return
    if isinstance(events, Mapping):
        events = [events]
    offset = 0
    chunk: list = []
    for event in events:
        if isinstance(event, (pa.RecordBatch, pa.Table)):
            if chunk:
                yield builder.from_rows(chunk, offset)
                offset += len(chunk)
                chunk = []
            table = builder.from_table(
                pa.Table.from_batches([event]) if isinstance(event, pa.RecordBatch) else event, offset
            )
            offset += table.num_rows
            yield table
            continue
        chunk.append(event)
        if len(chunk) >= batch_size:
            yield builder.from_rows(chunk, offset)
            offset += len(chunk)
            chunk = []
    if chunk:
        yield builder.from_rows(chunk, offset)


def _is_pandas(value: Any) -> bool:
    module = type(value).__module__
    return module.startswith("pandas") and hasattr(value, "to_dict") and hasattr(value, "columns")
