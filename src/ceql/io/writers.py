"""Write matches: JSON Lines (DESIGN 6.1), Parquet, or CORE++'s text format."""

from __future__ import annotations

import json
from typing import Any, TextIO

import pyarrow as pa
import pyarrow.parquet as pq

from ceql.compile.catalog import format_time_ns
from ceql.lang.schema import Schema
from ceql.match import Match

#: The columns of a match as a table row (Parquet output, Spark results).
MATCH_FIELDS = [
    ("query", pa.string()),
    ("trigger", pa.int64()),
    ("positions", pa.list_(pa.int64())),
    ("labels", pa.map_(pa.string(), pa.list_(pa.int64()))),
    ("partition", pa.list_(pa.string())),
]


def append_match(rows: dict[str, list], query: str, match: Match) -> None:
    """Append a match to column lists keyed by MATCH_FIELDS' names (partition values as text)."""
    rows["query"].append(query)
    rows["trigger"].append(match.trigger)
    rows["positions"].append(list(match.positions))
    rows["labels"].append(sorted((k, list(v)) for k, v in match.labels.items()))
    rows["partition"].append(None if match.partition is None else [str(v) for v in match.partition])


class EventRef:
    """An input event a match refers to: where it came from and how to read its values."""

    __slots__ = ("table", "index", "source", "row")

    def __init__(self, table: pa.Table, index: int, source: str, row: int) -> None:
        self.table, self.index, self.source, self.row = table, index, source, row

    def values(self) -> dict[str, Any]:
        row = {name: self.table.column(name)[self.index].as_py() for name in self.table.column_names}
        return {k: v for k, v in row.items() if v is not None}


class TimeDisplay:
    """Which time columns an output shows as timestamps: those the input gave as timestamps or
    ISO-8601 text (the catalog learns it while the input is read), the others as the integers
    they were. Measures of type timestamp (``x.ts``, ``MAX(x.ts)``) follow: shown as timestamps
    when some time column is."""

    def __init__(self, catalog: Any = None, measure_kinds: dict[str, dict[str, str]] | None = None) -> None:
        self.catalog = catalog
        self.measure_kinds = measure_kinds or {}  # query -> measure name -> type name
        self._seen: tuple = ()
        self._columns: frozenset[str] = frozenset()

    @property
    def columns(self) -> frozenset[str]:
        """The time columns shown as timestamps (so far: the catalog may learn more)."""
        catalog = self.catalog
        if catalog is None:
            return frozenset()
        seen = tuple(catalog.time_inputs.items())
        if seen != self._seen:
            self._seen = seen
            self._columns = catalog.timestamp_columns
        return self._columns

    def measures(self, query: str) -> list[str]:
        """The measures of ``query`` shown as timestamps."""
        if not self.columns:
            return []
        kinds = self.measure_kinds.get(query, {})
        return [name for name, kind in kinds.items() if kind in ("timestamp", "list<timestamp>")]


def _as_timestamp(value: Any) -> Any:
    if isinstance(value, int) and not isinstance(value, bool):
        return format_time_ns(value)
    if isinstance(value, (list, tuple)):
        return [_as_timestamp(v) for v in value]
    return value


class Writer:
    """Base class: ``write(query_name, match, events)`` then ``close()``."""

    def __init__(self, with_events: bool, tag_queries: bool, times: TimeDisplay | None = None) -> None:
        self.with_events = with_events
        self.tag_queries = tag_queries
        self.count = 0
        self.times = times or TimeDisplay()
        # Per query: its SELECT items, label -> the attributes ``label[a, b]`` reports (None: all).
        self.restrictions: dict[str, dict[str, tuple[str, ...] | None]] = {}

    def restrict(self, query: str, items: dict[str, tuple[str, ...] | None]) -> None:
        """Report only the attributes the SELECT items name for their labels' events."""
        self.restrictions[query] = items

    def _records(self, query: str, match: Match, events: list[EventRef] | None) -> list[dict[str, Any]]:
        restrictions = self.restrictions.get(query, {})
        out = []
        for position, event in zip(match.positions, events or [None] * len(match.positions)):
            allowed = _allowed(restrictions, match, position, event)
            out.append(_event_record(position, event, allowed))
        return out

    def _text_times(self, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Time values as ISO-8601 text where the input gave timestamps (JSON output)."""
        shown = self.times.columns
        if shown:
            for record in records:
                for name in shown & record.keys():
                    record[name] = _as_timestamp(record[name])
        return records

    def write(self, query: str, match: Match, events: list[EventRef] | None) -> None:
        raise NotImplementedError

    def close(self) -> None:
        pass


def _allowed(
    items: dict[str, tuple[str, ...] | None], match: Match, position: int, event: EventRef | None
) -> set[str] | None:
    """The attributes to report for the event at ``position`` (None: all of them). ``items``
    are the query's SELECT items, label -> the attributes written ``label[a, b]`` (None: all):
    an event reports the union over its labels, or everything if one of them names none."""
    if not items or not any(attributes is not None for attributes in items.values()):
        return None
    labels = {label for label, positions in match.labels.items() if position in positions}
    if event is not None:
        labels.add(event.table.column("event_type")[event.index].as_py())
    covering = [items[label] for label in labels if label in items]
    if not covering or any(attributes is None for attributes in covering):
        return None
    return {attribute for attributes in covering for attribute in attributes}


def _event_record(position: int, event: EventRef | None, allowed: set[str] | None = None) -> dict[str, Any]:
    record: dict[str, Any] = {"position": position}
    if event is not None:
        record["source"] = event.source
        record["row"] = event.row
        values = event.values()
        if allowed is not None:
            values = {k: v for k, v in values.items() if k == "event_type" or k in allowed}
        record.update(values)
    return record


class JsonLinesWriter(Writer):
    def __init__(
        self, stream: TextIO, with_events: bool, tag_queries: bool, times: TimeDisplay | None = None
    ) -> None:
        super().__init__(with_events, tag_queries, times)
        self.stream = stream

    def write(self, query: str, match: Match, events: list[EventRef] | None) -> None:
        record = match.to_dict()
        if self.tag_queries:
            record = {"query": query, **record}
        if "measures" in record:
            for name in self.times.measures(query):
                if name in record["measures"]:
                    record["measures"][name] = _as_timestamp(record["measures"][name])
        if self.with_events and events is not None:
            record["events"] = self._text_times(self._records(query, match, events))
        self.stream.write(json.dumps(record, default=str) + "\n")
        self.count += 1


class ParquetWriter(Writer):
    """Columns: query, trigger, positions, labels (map), partition (as text), one typed column
    per measure, and with ``--with-events`` the events as a typed list of structs (position,
    source, row, event_type and every declared attribute, null where an event has none)."""

    BATCH = 50_000

    def __init__(
        self,
        path: str,
        with_events: bool,
        tag_queries: bool,
        measures: dict[str, pa.DataType] | None = None,
        attributes: dict[str, pa.DataType] | None = None,
        times: TimeDisplay | None = None,
    ) -> None:
        super().__init__(with_events, tag_queries, times)
        self.path = path
        self.measures = dict(measures or {})
        taken = {name for name, _ in MATCH_FIELDS} | {"events"}
        for name in self.measures:
            if name in taken:
                raise ValueError(f"measure {name!r} clashes with an output column; rename it with AS")
        self.attributes = {name: kind for name, kind in (attributes or {}).items() if name != "event_type"}
        # The file's schema is fixed at the first write to it, once the input has been read
        # far enough to know which times came as timestamps.
        self.writer: pq.ParquetWriter | None = None
        self.schema: pa.Schema | None = None
        self.rows: dict[str, list] = self._empty()

    def _empty(self) -> dict[str, list]:
        names = [name for name, _ in MATCH_FIELDS] + list(self.measures)
        return {name: [] for name in names + (["events"] if self.with_events else [])}

    def _schema(self) -> pa.Schema:
        stamp = pa.timestamp("ns", tz="UTC")
        shown = self.times.columns
        fields = list(MATCH_FIELDS)
        for name, kind in self.measures.items():
            if pa.types.is_timestamp(kind) and not shown:
                kind = pa.int64()  # the input's times were integers: so are these
            elif pa.types.is_timestamp(kind):
                kind = stamp
            elif pa.types.is_list(kind) and pa.types.is_timestamp(kind.value_type):
                kind = pa.list_(stamp if shown else pa.int64())
            fields.append((name, kind))
        if self.with_events:
            event_fields = [
                ("position", pa.int64()),
                ("source", pa.string()),
                ("row", pa.int64()),
                ("event_type", pa.string()),
            ] + [(name, stamp if name in shown else kind) for name, kind in self.attributes.items()]
            fields.append(("events", pa.list_(pa.struct(event_fields))))
        return pa.schema(fields)

    def write(self, query: str, match: Match, events: list[EventRef] | None) -> None:
        rows = self.rows
        append_match(rows, query, match)
        for name in self.measures:
            value = match.measures.get(name)
            rows[name].append(list(value) if isinstance(value, tuple) else value)
        if self.with_events:
            rows["events"].append(self._records(query, match, events))
        self.count += 1
        if len(rows["trigger"]) >= self.BATCH:
            self._flush()

    def _flush(self) -> None:
        if self.writer is None:
            self.schema = self._schema()
            self.writer = pq.ParquetWriter(self.path, self.schema)
        if self.rows["trigger"]:
            try:
                table = pa.table(self.rows, schema=self.schema)
            except (OverflowError, pa.ArrowInvalid, pa.ArrowTypeError):
                from ceql.runtime.arrow import typed_column

                for name in self.measures:  # name the measure that does not fit (raises)
                    typed_column(name, self.rows[name], self.schema.field(name).type, "Parquet")
                raise
            self.writer.write_table(table)
            self.rows = self._empty()

    def close(self) -> None:
        self._flush()
        assert self.writer is not None
        self.writer.close()


class CoreTextWriter(Writer):
    """CORE++'s output: ``[start,end], ((id: T attributes: [v ...]) ... )`` per complex event,
    where T is the event type's number in declaration order and start/end are the window's
    measure (attribute values for WITHIN n [attr], times for time windows, else positions)."""

    def __init__(self, stream: TextIO, schema: Schema, tag_queries: bool) -> None:
        super().__init__(True, tag_queries)
        self.stream = stream
        self.schema = schema
        self.type_ids = {name: i for i, name in enumerate(schema.event_types)}
        self.window: dict[str, tuple[str, str | None]] = {}

    def set_window(self, query: str, kind: str | None, attribute: str | None) -> None:
        self.window[query] = (kind or "events", attribute)

    def write(self, query: str, match: Match, events: list[EventRef] | None) -> None:
        events = events or []
        values = [e.values() if e is not None else {} for e in events]
        kind, attribute = self.window.get(query, ("events", None))
        if not match.positions:
            start = end = match.trigger
        elif kind == "attribute" and attribute:
            start, end = values[0].get(attribute), values[-1].get(attribute)
        elif kind == "time":
            start, end = (self._time(v) for v in (values[0], values[-1]))
        else:
            start, end = match.positions[0], match.positions[-1]
        parts = []
        for value in values:
            decl = self.schema.event_types[value["event_type"]]
            shown = " ".join(_core_value(value.get(a.name), a.type) for a in decl.attributes)
            parts.append(f"(id: {self.type_ids[decl.name]} attributes: [{shown} ])")
        prefix = f"{query}: " if self.tag_queries else ""
        self.stream.write(f"{prefix}[{start},{end}], ({' '.join(parts)} )\n")
        self.count += 1

    def _time(self, value: dict[str, Any]) -> Any:
        decl = self.schema.event_types[value["event_type"]]
        return value.get(decl.time_attribute or "")


def _core_value(value: Any, kind: str) -> str:
    if value is None:
        return ""
    if kind == "double":
        return f"{value:f}"
    if kind == "boolean":
        return "true" if value else "false"
    return str(value)
