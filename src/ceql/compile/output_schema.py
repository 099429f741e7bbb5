"""The one output schema: the columns of a query's matches on every engine, format and path.

``output_schema(plan, ...)`` derives, once, from the compiled query and the run's options the
Arrow schema every writer uses (the API's ``output="arrow"`` on the Python and the kernel path,
``ceql run`` JSON Lines and Parquet on both engines, ``ceql.spark.find`` as Spark types) and
the facts the writers need to fill it. Columns, in order (docs/guide.md, "Output"):

- ``query`` string (never null): the query's name;
- ``trigger`` int64, ``positions`` list<int64>: the position of the event that reported the
  match and the reported positions, ascending (absent only on Spark without positions);
- ``labels`` struct<label: list<int64>>: one field per AS label the projection reports, in
  alphabetical order (an empty list when the label holds no event); absent when none is
  reported;
- ``partition`` struct<attribute: type>: the PARTITION BY key, one field per attribute, typed as
  declared; with two attribute lists, the attributes of both (each holds the key's value at its
  place in the first list that names it), int and double keyed together are double; absent
  when the query reports no partition (none, or one found from an equality);
- one column per measure, in SELECT order, typed (int64, double, string, bool, a time, or a
  list of those for labels that may hold several events);
- ``deadline`` int64 for ``WHERE f NOT FOLLOWED BY g`` queries: the instant each match was due
  (``Match.deadline``: nanoseconds, positions or the window attribute's units);
- ``events`` list<struct<...>> (``ceql run --with-events``: position, source, row, event_type
  and every declared attribute; Spark: the id columns) and ``ids`` struct<label:
  list<struct<id columns>>> (Spark, with id columns and labels).

Times are shown as the input gave them (``TimeType``): integers in their unit, timestamps with
their unit and zone, ISO-8601 text as timestamp[ns, UTC], dates as date32. Inside the engine a
time is int64 nanoseconds; ``TimeType`` converts. This module is pure: no io, no Spark.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ceql.errors import CeqlError, UnsupportedQueryError
from ceql.lang.schema import TIME_UNITS

#: Column names the schema uses itself: a measure may not take one.
FIXED = ("query", "trigger", "positions", "labels", "partition", "events", "ids")
#: The name of a list's item field (Parquet's and Spark's), so every engine writes one schema.
ITEM = "element"
_DAY_NS = 86_400 * 10**9
_SCALARS = {"int": pa.int64(), "double": pa.float64(), "string": pa.string(), "boolean": pa.bool_()}
_STAMP = re.compile(r"timestamp\[(s|ms|us|ns)(?:, tz=(.+))?\]$")


def list_of(kind: pa.DataType) -> pa.DataType:
    """A list type with the item field every engine writes (``element``)."""
    return pa.list_(pa.field(ITEM, kind))


POSITIONS = list_of(pa.int64())


# ---------------------------------------------------------------------------- times


@dataclass(frozen=True)
class TimeType:
    """How the values of one time column (or timestamp measure) are shown, from the way the
    input gave them (``kind``, as ``Catalog.time_inputs`` records it): ``arrow`` is the output
    type; ``from_ns`` turns the engine's int64 nanoseconds into it, ``python`` into the value
    ``Match.measures`` holds (a zone-aware ``pandas.Timestamp``, an int, or a ``date``)."""

    kind: str
    arrow: pa.DataType
    per_unit: int = 1  # integers: nanoseconds per unit

    @property
    def is_integer(self) -> bool:
        return pa.types.is_integer(self.arrow)

    def from_ns(self, values: pa.Array | pa.ChunkedArray) -> pa.Array:
        """int64 nanoseconds (nulls kept) as this type. Exact for values of the input's own
        unit; finer parts of a time given otherwise are dropped (floored)."""
        if isinstance(values, pa.ChunkedArray):
            values = values.combine_chunks()
        if not pa.types.is_int64(values.type):
            values = _as_ns(values)
        if self.is_integer:
            if self.per_unit == 1:
                return values
            return _floor_div(values, self.per_unit)
        if pa.types.is_date32(self.arrow):
            return _floor_div(values, _DAY_NS).cast(pa.int32()).cast(pa.date32())
        unit = self.arrow.unit
        scaled = values if unit == "ns" else _floor_div(values, TIME_UNITS[unit])
        return scaled.cast(self.arrow)

    def python(self, ns: int | None) -> Any:
        """One int64 nanosecond time as ``Match.measures`` shows it."""
        if ns is None:
            return None
        if self.is_integer:
            return ns // self.per_unit
        if pa.types.is_date32(self.arrow):
            return _dt.date(1970, 1, 1) + _dt.timedelta(days=ns // _DAY_NS)
        import pandas as pd

        unit = self.arrow.unit
        ns = ns - ns % TIME_UNITS[unit]
        return pd.Timestamp(ns, unit="ns", tz="UTC").tz_convert(self.arrow.tz or "UTC")

    def text(self, ns: int) -> str | int:
        """One int64 nanosecond time as JSON shows it (ISO-8601 text, or the integer)."""
        if self.is_integer:
            return ns // self.per_unit
        if pa.types.is_date32(self.arrow):
            return (_dt.date(1970, 1, 1) + _dt.timedelta(days=ns // _DAY_NS)).isoformat()
        return iso_text(ns - ns % TIME_UNITS[self.arrow.unit], self.arrow.tz)


def time_type(kind: str | None, unit: str = "ns") -> TimeType:
    """The TimeType of an input kind: ``integer ms``, ``timestamp[us, tz=UTC]``, ``ISO-8601``,
    ``date32[day]`` ...; no kind yet (no value read): integers in ``unit``."""
    kind = kind or f"integer {unit}"
    if kind.startswith("integer"):
        unit = kind.split()[-1] if " " in kind else unit
        return TimeType(kind, pa.int64(), TIME_UNITS.get(unit, 1))
    found = _STAMP.match(kind)
    if found:
        return TimeType(kind, pa.timestamp(found.group(1), tz=found.group(2)))
    if kind.startswith("date"):
        return TimeType(kind, pa.date32())
    return TimeType(kind, pa.timestamp("ns", tz="UTC"))  # ISO-8601 text: UTC instants


def iso_text(ns: int, zone: str | None) -> str:
    """An int64 nanosecond time as ISO-8601 text, exactly: ``...Z`` in UTC, local time with its
    offset in another zone, no suffix without one (a naive input); trailing zeros of the
    fraction dropped."""
    seconds, nanos = divmod(ns, 10**9)
    fraction = ("." + f"{nanos:09d}".rstrip("0")) if nanos else ""
    if zone is None or _is_utc(zone):
        day = _dt.datetime(1970, 1, 1) + _dt.timedelta(seconds=seconds)
        return day.strftime("%Y-%m-%dT%H:%M:%S") + fraction + ("" if zone is None else "Z")
    local = _dt.datetime.fromtimestamp(seconds, _zone(zone))
    offset = local.strftime("%z")
    offset = offset[:3] + ":" + offset[3:] if offset else "Z"
    return local.strftime("%Y-%m-%dT%H:%M:%S") + fraction + offset


def _is_utc(zone: str) -> bool:
    return zone in ("UTC", "Etc/UTC", "utc", "Z", "+00:00", "GMT", "Etc/GMT")


@lru_cache(maxsize=64)
def _zone(zone: str) -> _dt.tzinfo:
    fixed = re.match(r"([+-])(\d\d):?(\d\d)$", zone)
    if fixed:
        sign = -1 if fixed.group(1) == "-" else 1
        return _dt.timezone(sign * _dt.timedelta(hours=int(fixed.group(2)), minutes=int(fixed.group(3))))
    from zoneinfo import ZoneInfo

    return ZoneInfo(zone)


def list_parts(values: pa.Array) -> tuple[pa.Array, pa.Array]:
    """A list array's offsets (from 0) and the items they index, also for a slice."""
    offsets = values.offsets
    if len(values) == 0:
        return pa.array([0], offsets.type), values.values.slice(0, 0)
    start, end = offsets[0].as_py(), offsets[-1].as_py()
    return pc.subtract(offsets, pa.scalar(start, offsets.type)), values.values.slice(start, end - start)


def _floor_div(values: pa.Array, divisor: int) -> pa.Array:
    """Integer floor division of an int64 array (nulls kept), exactly."""
    numbers = np.asarray(pc.fill_null(values, 0).to_numpy(zero_copy_only=False), dtype=np.int64)
    out = pa.array(numbers // divisor, pa.int64())
    if values.null_count:
        out = pc.if_else(pc.is_valid(values), out, pa.nulls(len(values), pa.int64()))
    return out


def _as_ns(values: pa.Array) -> pa.Array:
    """Timestamps of any unit (or Python times in a list) as int64 nanoseconds."""
    if pa.types.is_timestamp(values.type):
        return values.cast(pa.timestamp("ns", values.type.tz)).cast(pa.int64())
    if pa.types.is_date(values.type):
        return pc.multiply(values.cast(pa.date32()).cast(pa.int32()).cast(pa.int64()), _DAY_NS)
    return values.cast(pa.int64())


def ns_value(value: Any) -> Any:
    """A time as ``Match.measures`` or the engine holds it, back to int64 nanoseconds (ints,
    pandas Timestamps, datetimes and dates; anything else as it is)."""
    if value is None or isinstance(value, int):
        return value
    if hasattr(value, "value") and hasattr(value, "tz_localize"):  # pandas Timestamp
        return int(value.value)
    if isinstance(value, _dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(_dt.timezone.utc).replace(tzinfo=None)
        delta = value - _dt.datetime(1970, 1, 1)
        return (delta.days * 86_400 + delta.seconds) * 10**9 + delta.microseconds * 1000
    if isinstance(value, _dt.date):
        return (value - _dt.date(1970, 1, 1)).days * _DAY_NS
    return value


# ---------------------------------------------------------------------------- the schema


@dataclass(frozen=True)
class Measure:
    """One measure column: its name, the analysis' type name, its Arrow type, and for
    timestamp measures (``a.ts``, ``MAX(x.ts)``) how their nanoseconds are shown."""

    name: str
    kind: str
    arrow: pa.DataType
    time: TimeType | None = None
    many: bool = False  # a list (x.a over a label that may hold several events)

    def from_raw(self, values: list | pa.Array) -> pa.Array:
        """Raw values (the engine's: times as int64 nanoseconds) as this column."""
        if self.time is None:
            if isinstance(values, (pa.Array, pa.ChunkedArray)):
                return values.cast(self.arrow) if values.type != self.arrow else values
            try:
                return pa.array(values, self.arrow)
            except (OverflowError, pa.ArrowInvalid, pa.ArrowTypeError):
                raise self._unfit(values) from None
        if self.many:
            if not isinstance(values, (pa.Array, pa.ChunkedArray)):
                values = pa.array(
                    [None if v is None else [ns_value(x) for x in v] for v in values], pa.list_(pa.int64())
                )
            if isinstance(values, pa.ChunkedArray):
                values = values.combine_chunks()
            offsets, child = list_parts(values)
            mask = values.is_null() if values.null_count else None
            return pa.ListArray.from_arrays(offsets, self.time.from_ns(child), type=self.arrow, mask=mask)
        if not isinstance(values, (pa.Array, pa.ChunkedArray)):
            values = pa.array([ns_value(v) for v in values], pa.int64())
        return self.time.from_ns(values)

    def _unfit(self, values: list) -> CeqlError:
        """The error for values the column's type cannot hold: an exact integer beyond int64,
        as ``SUM`` or ``x * 2`` may give (``Match.measures`` keeps it exact), named with the
        first such value."""
        shown = "a value"
        for value in values:
            try:
                pa.array([value], self.arrow)
            except (OverflowError, pa.ArrowInvalid, pa.ArrowTypeError):
                shown = str(value)[:60]
                break
        return CeqlError(
            f"measure {self.name}: {shown} does not fit its {self.arrow} column in the output "
            "(an integer beyond int64); Match objects (output='matches') keep such values exact"
        )

    def python(self, raw: Any) -> Any:
        """A raw value as ``Match.measures`` holds it (tuples for lists)."""
        if self.time is None or raw is None:
            return raw
        if self.many:
            return tuple(self.time.python(ns_value(v)) for v in raw)
        return self.time.python(ns_value(raw))


@dataclass(frozen=True)
class OutputSchema:
    """The columns of one query's matches (see the module docstring) and how to fill them."""

    name: str
    positions: bool  # trigger, positions and labels
    labels: tuple[str, ...]
    partition: tuple[tuple[str, int], ...]  # (field, index of its value in the key tuple)
    partition_type: pa.StructType | None
    measures: tuple[Measure, ...]
    events: pa.StructType | None  # one event of the ``events`` column (None: no such column)
    ids: tuple[str, ...]  # labels with a field in ``ids``
    times: Mapping[str, TimeType] = field(default_factory=dict)  # time column -> how shown
    deadline: bool = False  # NOT FOLLOWED BY: a ``deadline`` column
    arrow: pa.Schema = field(default=None, compare=False)  # type: ignore[assignment]

    @property
    def time_measures(self) -> tuple[Measure, ...]:
        """The measures whose values are times (converted from nanoseconds on output)."""
        return tuple(m for m in self.measures if m.time is not None)

    def with_name(self, name: str) -> OutputSchema:
        """The same schema for a query of another name."""
        return OutputSchema(
            name, self.positions, self.labels, self.partition, self.partition_type, self.measures,
            self.events, self.ids, self.times, self.deadline, self.arrow,
        )  # fmt: skip


def output_schema(
    plan: Any,
    *,
    name: str = "query",
    positions: bool = True,
    type_labels: bool = False,
    time_kinds: Mapping[str, str] | None = None,
    events: Iterable[pa.Field] | None = None,
    ids: bool = False,
) -> OutputSchema:
    """The output schema of a compiled query (``plan``) for a run with these options.

    ``time_kinds``: time column -> how the input gave it (``Catalog.time_inputs``); a column
    not in it is shown as integers in its declared unit. ``events``: the fields of one event
    in the ``events`` column (``event_fields`` for ``ceql run``; Spark: the id columns), or None
    for no such column; ``ids``: also the ``ids`` column (one field per reported label)."""
    times = time_types(plan.catalog.schema, time_kinds or {})
    labels = reported_labels(plan, type_labels) if positions or ids else ()
    fields: list[pa.Field] = [pa.field("query", pa.string(), nullable=False)]
    if positions:
        fields += [pa.field("trigger", pa.int64()), pa.field("positions", POSITIONS)]
        if labels:
            fields.append(pa.field("labels", pa.struct([pa.field(x, POSITIONS) for x in labels])))
    partition, partition_type = _partition(plan)
    if partition_type is not None:
        fields.append(pa.field("partition", partition_type))
    measures = _measures(plan, times)
    taken = {f.name for f in fields}
    for measure in measures:
        if measure.name in FIXED or measure.name in taken:
            raise UnsupportedQueryError(
                f"measure name {measure.name!r} clashes with an output column; rename it with AS"
            )
        taken.add(measure.name)
        fields.append(pa.field(measure.name, measure.arrow))
    deadline = getattr(plan, "absence", None) is not None
    if deadline:
        if "deadline" in taken:
            raise UnsupportedQueryError("measure name 'deadline' clashes with an output column; rename it with AS")
        fields.append(pa.field("deadline", pa.int64()))
    event_type = None
    id_labels: tuple[str, ...] = ()
    if events is not None:
        event_type = pa.struct(list(events))
        fields.append(pa.field("events", list_of(event_type)))
        if ids:
            id_labels = reported_labels(plan, type_labels)
            if id_labels:
                fields.append(
                    pa.field("ids", pa.struct([pa.field(x, list_of(event_type)) for x in id_labels]))
                )
    return OutputSchema(
        name=name,
        positions=positions,
        labels=labels if positions else (),
        partition=partition,
        partition_type=partition_type,
        measures=measures,
        events=event_type,
        ids=id_labels,
        times=times,
        deadline=deadline,
        arrow=pa.schema(fields),
    )


def reported_labels(plan: Any, type_labels: bool = False) -> tuple[str, ...]:
    """The labels a query's matches report (after projection), in alphabetical order."""
    labels = set(plan.as_labels)
    if type_labels:
        labels |= set(plan.checked.label_types)
    projection = plan.projection
    if projection is not None and projection.kind == "none":
        return ()
    if projection is not None and projection.kind == "list":
        labels &= {item.label for item in projection.items}
    return tuple(sorted(labels))


def _partition(plan: Any) -> tuple[tuple[tuple[str, int], ...], pa.StructType | None]:
    groups = plan.partition_groups
    if not groups or plan.auto_partition:
        return (), None
    types = plan.catalog.schema.event_types
    places: dict[str, int] = {}
    for group in groups:
        for index, attribute in enumerate(group):
            places.setdefault(attribute, index)
    kinds: dict[int, set[str]] = {}
    for type_name, group in plan.partition_types.items():
        for index, attribute in enumerate(group):
            declared = types[type_name].attribute(attribute)
            if declared is not None:
                kinds.setdefault(index, set()).add(declared.value_type)
    fields = []
    for attribute, index in places.items():
        found = kinds.get(index) or {_storage(plan.catalog, attribute)}
        kind = "double" if "double" in found else found.pop()
        fields.append(pa.field(attribute, _SCALARS[kind]))
    return tuple(places.items()), pa.struct(fields)


def _storage(catalog: Any, attribute: str) -> str:
    column = catalog.columns.get(attribute)
    return column.storage if column is not None else "string"


def _measures(plan: Any, times: Mapping[str, TimeType]) -> tuple[Measure, ...]:
    if plan.measures is None:
        return ()
    return measures_of(plan.checked, times)


def measures_of(checked: Any, times: Mapping[str, TimeType]) -> tuple[Measure, ...]:
    """The measure columns of a checked query, in SELECT order (``times``: how each time
    column is shown, ``time_types``)."""
    kinds = getattr(checked, "measure_types", {}) or {}
    expressions = {m.name: m.expr for m in checked.query.projection.measures}
    out = []
    for name in expressions:
        kind = kinds.get(name) or "string"
        many = kind.startswith("list<")
        scalar = kind[5:-1] if many else kind
        time = None
        if scalar == "timestamp":
            time = _measure_time(expressions.get(name), times)
            arrow = time.arrow
        else:
            arrow = _SCALARS.get(scalar, pa.string())
        out.append(Measure(name, kind, list_of(arrow) if many else arrow, time, many))
    return tuple(out)


def _measure_time(expr: Any, times: Mapping[str, TimeType]) -> TimeType:
    """The TimeType of a timestamp measure: that of the time column it reads."""
    from ceql.lang import ast
    from ceql.lang.visit import walk

    read = []
    if expr is not None:
        for node in walk(expr):
            if not isinstance(node, (ast.Attr, ast.Aggregate)):
                continue
            name = node.name if isinstance(node, ast.Attr) else getattr(node, "attr", None)
            if name in times and name not in read:
                read.append(name)
    shown = {times[name] for name in read}
    if len(shown) == 1:
        return shown.pop()
    return TimeType("integer ns", pa.int64())  # no single source: nanoseconds, exactly


def time_types(schema: Any, kinds: Mapping[str, str]) -> dict[str, TimeType]:
    """Time column -> how it is shown, from how the input gives it (``kinds``; a column not in
    it: integers in its declared unit)."""
    return {column: time_type(kinds.get(column), declared_unit(schema, column)) for column in time_names(schema)}


def time_names(schema: Any) -> list[str]:
    """The attributes that are a primary_time wherever they are declared, in declaration order."""
    found: dict[str, bool] = {}
    for decl in schema.event_types.values():
        for attribute in decl.attributes:
            is_time = attribute.type == "primary_time"
            found[attribute.name] = found.get(attribute.name, True) and is_time
    return [name for name, is_time in found.items() if is_time]


def declared_unit(schema: Any, column: str) -> str:
    """The unit of a time column's integers: the one every declaring type names, else ns."""
    units = {
        a.time_unit
        for decl in schema.event_types.values()
        for a in decl.attributes
        if a.name == column and a.type == "primary_time"
    }
    return units.pop() if len(units) == 1 else "ns"


def event_fields(catalog: Any, times: Mapping[str, TimeType]) -> list[pa.Field]:
    """The fields of one event of ``ceql run --with-events``: its position, input file and
    line (or row), event type, and every declared attribute (times as the input gave them)."""
    fields = [
        pa.field("position", pa.int64()),
        pa.field("source", pa.string()),
        pa.field("row", pa.int64()),
        pa.field("event_type", pa.string()),
    ]
    for name, column in catalog.columns.items():
        kind = times[name].arrow if name in times else column.arrow_type
        fields.append(pa.field(name, kind))
    return fields


__all__ = [
    "FIXED",
    "ITEM",
    "Measure",
    "OutputSchema",
    "POSITIONS",
    "TimeType",
    "declared_unit",
    "event_fields",
    "iso_text",
    "list_of",
    "list_parts",
    "measures_of",
    "ns_value",
    "output_schema",
    "reported_labels",
    "time_names",
    "time_type",
    "time_types",
]
