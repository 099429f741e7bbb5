"""Typed Arrow tables from raw rows: the one row typing of every path, and the Python API's builder.

``type_rows`` turns a batch of raw rows (an event type column and raw attribute columns: text,
typed Arrow arrays or Python values) into a table of the catalog's types, and says which rows are
bad and why. The file readers, the command line, Spark and the Python API all call it, so they
accept and reject exactly the same rows. A row is bad when its event type is missing or unknown,
when an attribute its event type declares (among the columns read) is missing or holds a value
the declared type does not admit (``ceql.runtime.conversion``). A value in a column that the
row's event type does not declare is ignored (with one warning per column and event type), and
so are columns that no event type declares.

``BatchBuilder`` is the Python API's side (``Query.run``, ``Evaluator.push``): it reads the
columns one query needs and raises EventError (naming the 0-based row and the reason) for the
first bad row.
"""

from __future__ import annotations

import threading
import warnings
import weakref
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ceql.compile.catalog import EVENT_TYPE, Catalog
from ceql.errors import EventError, InputWarning
from ceql.lang.schema import Schema
from ceql.log import logger
from ceql.runtime.conversion import Target, convert

DEFAULT_BATCH = 65_536
_ABSENT = object()  # a key a dict does not have
_STRING = Target("string")


class Notices:
    """Warnings about the input, each given once (``emit`` prints or warns it)."""

    def __init__(self, emit: Callable[[str], None] | None = None) -> None:
        self.emit = emit
        self.seen: set[Any] = set()
        self.messages: list[str] = []

    def warn(self, key: Any, message: str) -> None:
        if key in self.seen:
            return
        self.seen.add(key)
        self.messages.append(message)
        logger.warning("input: %s", message)
        if self.emit is not None:
            self.emit(message)


@dataclass
class TypedRows:
    """A batch typed by the catalog: every row (bad ones hold nulls), and why the bad are bad."""

    table: pa.Table
    bad: np.ndarray  # bool per row
    reasons: dict[int, str] = field(default_factory=dict)  # row -> the first problem found
    types: np.ndarray | None = None  # each row's index in the catalog's known_types (-1: none)

    def accepted(self) -> pa.Table:
        """The rows that are not bad."""
        if not self.bad.any():
            return self.table
        return self.table.filter(pa.array(~self.bad))

    def first_bad(self) -> int | None:
        return int(np.argmax(self.bad)) if self.bad.any() else None


def type_rows(
    catalog: Catalog,
    event_types: Any,
    columns: Mapping[str, Any],
    *,
    absent: Mapping[str, np.ndarray] | None = None,
    notices: Notices | None = None,
) -> TypedRows:
    """Type a batch of raw rows.

    ``event_types`` and each of ``columns`` are an Arrow array or a list of Python values, one
    item per row. ``absent`` marks, per column, rows where the field was not there at all (JSON
    objects without the key): that is a bad row for a required column, and null otherwise. A
    null is a missing value, except in a time column (a bad row). A
    required column that is not among ``columns`` while some row's event type declares it is an
    EventError naming it; a column no event type declares is ignored (``notices`` warns once).
    """
    if notices is not None:  # first: an unknown column may be a misspelt one the query needs
        declared = catalog.declared_names
        for name in columns:
            if name != EVENT_TYPE and name not in declared:
                notices.warn(
                    ("unknown", name), f"column {name} is not declared for any event type; it is ignored"
                )
    types = convert(event_types, _STRING)
    n = len(types.missing)
    known = catalog.known_types
    type_index = _type_indexes(types.values, known)
    unknown = type_index < 0
    # Only a type name no event type has can be blank (declared names are identifiers): trim
    # those rows alone (issue 34: trimming every row cost more than the rest of the typing).
    blank = types.missing.copy()
    suspects = unknown if all(name.strip() for name in known) else np.ones(n, dtype=bool)
    if suspects.any():
        rows = np.flatnonzero(suspects)
        trimmed = pc.utf8_trim_whitespace(types.values.take(pa.array(rows)))
        blank[rows] |= np.asarray(pc.fill_null(pc.equal(trimmed, ""), False).to_numpy(zero_copy_only=False), dtype=bool)
    bad = np.zeros(n, dtype=bool)
    reasons: dict[int, str] = {}

    def flag(mask: np.ndarray, reason_of: Callable[[int], str]) -> None:
        new = mask & ~bad
        if new.any():
            for index in np.nonzero(new)[0]:
                reasons[int(index)] = reason_of(int(index))
            bad[:] |= new

    flag(blank, lambda i: f"event has no {EVENT_TYPE}")
    flag(types.bad, lambda i: f"{EVENT_TYPE}: {types.reason(i)}")
    flag(unknown, lambda i: f"unknown event type {types.values[i].as_py()!r}")

    schema_types = catalog.schema.event_types
    arrays: list[pa.Array] = [types.values]
    for name, column in catalog.columns.items():
        needs = catalog.declares(name)[type_index] & ~bad
        raw = columns.get(name)
        if raw is None:
            if name in catalog.required and needs.any():
                raise EventError(catalog.missing_message([name]))
            arrays.append(pa.nulls(n, column.arrow_type))
            continue
        targets = column.targets()
        if len(targets) == 1:
            (target,) = targets
            converted = convert(raw, target)
            values, missing, codes = converted.values, converted.missing, converted.codes
            reason_of = converted.reason
        else:  # e.g. times in ms for one event type and in s for another: row by row groups
            values, missing, codes, reason_of = _by_event_type(raw, targets, known, type_index, n)
        valued = ~missing & ~unknown & ~needs  # values where the row's type does not declare it
        # A null (JSON null, an empty CSV field, an Arrow/pandas null) is a missing value: it
        # reaches the engine, where every comparison on it is false (docs/semantics.md 3.2).
        # A time cannot be missing (it orders the stream and measures windows), and a field
        # left out of a row (a JSON object or dict without the key) that a query reads is a bad
        # row: it is more likely a misspelt or truncated record than a value.
        if column.is_time:
            rejected = missing
        elif absent is not None and name in absent and name in catalog.required:
            rejected = absent[name]
        else:
            rejected = np.zeros(n, dtype=bool)
        flag(needs & rejected, lambda i, name=name: f"missing field {name}")
        flag(needs & (codes != 0), lambda i, name=name, reason_of=reason_of: f"column {name}: {reason_of(i)}")
        if notices is not None:
            if column.storage == "string" and valued.any():  # an empty CSV field is no value here
                valued &= np.asarray(
                    pc.fill_null(pc.not_equal(values, ""), False).to_numpy(zero_copy_only=False)
                )
            _warn_undeclared(notices, name, valued, type_index, known, schema_types)
        seen_kind = catalog.time_inputs.get(name, "")
        if column.is_time and not seen_kind.startswith("integer") and (needs & ~bad).any():
            catalog.note_time_input(name, _time_kind(raw, targets))
        keep = needs & ~bad
        # (Rows to blank that hold no value already need no pass: a type that does not
        # declare the column and gives it nulls, as Arrow input does.)
        if not keep.all() and (~keep & ~missing).any():
            values = pc.if_else(pa.array(keep), values, pa.nulls(n, column.arrow_type))
        arrays.append(values)
    table = pa.Table.from_arrays(arrays, schema=catalog.arrow_schema())
    return TypedRows(table, bad, reasons, type_index)


MATCH_MIN_ROWS = 4096  # below, Arrow's index_in (the compiled match would not pay for its call)
MATCH_MAX_NAMES = 16  # above, a hash (index_in) beats comparing with each name


def _type_indexes(values: pa.Array, known: tuple[str, ...] | list[str]) -> np.ndarray:
    """Each row's index in ``known`` (-1: none or null), for a string array. Where the
    kernel's compiled functions are loaded (the compiled engine runs) and the array is large,
    a compiled byte comparison with each name (issue 34: Arrow's hashing index_in cost a
    fifth of a 200k-event join); else index_in."""
    import sys

    compiled = sys.modules.get("ceql.runtime.kernel.compiled")
    if (
        compiled is not None
        and len(values) >= MATCH_MIN_ROWS
        and len(known) <= MATCH_MAX_NAMES
        and values.type in (pa.string(), pa.large_string())
    ):
        _, offsets, data = values.buffers()
        kind = np.int32 if values.type == pa.string() else np.int64
        offsets = np.frombuffer(offsets, dtype=kind)[values.offset : values.offset + len(values) + 1]
        data = np.frombuffer(data, dtype=np.uint8) if data is not None else np.zeros(0, dtype=np.uint8)
        encoded = [name.encode() for name in known]
        names = np.frombuffer(b"".join(encoded), dtype=np.uint8) if any(encoded) else np.zeros(0, dtype=np.uint8)
        starts = np.cumsum([0] + [len(name) for name in encoded]).astype(np.int64)
        by_first = np.full(256, -1, dtype=np.int64)
        for q, name in enumerate(encoded):
            if name:
                by_first[name[0]] = q if by_first[name[0]] == -1 else -2
        out = np.empty(len(values), dtype=np.int64)
        compiled.match_names(offsets, data, names, starts, by_first, out)
        if values.null_count:  # (a null's bytes are unspecified)
            out[~values.is_valid().to_numpy(zero_copy_only=False)] = -1
        return out
    index = pc.index_in(values, value_set=pa.array(known, pa.string()))
    return np.asarray(pc.fill_null(index, -1).to_numpy(zero_copy_only=False), dtype=np.int64)


# The type index of the table typed last (weakly held, with the names it indexes): the kernel's
# join and chain paths read it instead of matching every row's type name again (issue 34:
# the second string match cost a third of a small join's run). Per thread: the workers of
# runtime/parallel.py type pieces side by side.
_last_typed = threading.local()


def _remember_types(table: pa.Table, known: tuple[str, ...], types: np.ndarray | None) -> None:
    _last_typed.last = None if types is None else (weakref.ref(table), known, types)


def typed_indexes(table: pa.Table, names: tuple[str, ...] | list[str]) -> np.ndarray | None:
    """Each row's index in ``names`` (-1: none), when ``table`` is the table typed last (the
    same object); else None."""
    last = getattr(_last_typed, "last", None)
    if last is None or last[0]() is not table:
        return None
    _, known, types = last
    lookup = np.array([names.index(t) if t in names else -1 for t in known] + [-1], dtype=np.int64)
    return lookup[types]  # (-1 indexes the last item: no type)


def _by_event_type(raw: Any, targets: dict[Target, tuple[str, ...]], known, type_index, n: int):
    """Convert a column whose event types type it differently: each row by its own type."""
    values = None
    missing = np.zeros(n, dtype=bool)
    codes = np.zeros(n, dtype=np.int8)
    owners: dict[int, Any] = {}
    for target, type_names in targets.items():
        rows = np.isin(type_index, [known.index(t) for t in type_names])
        converted = convert(raw, target)
        values = converted.values if values is None else pc.if_else(pa.array(rows), converted.values, values)
        missing[rows] = converted.missing[rows]
        codes[rows] = converted.codes[rows]
        for index in np.nonzero(rows & (converted.codes != 0))[0]:
            owners[int(index)] = converted
    return values, missing, codes, lambda i: owners[i].reason(i)


def _warn_undeclared(notices: Notices, name: str, rows: np.ndarray, type_index, known, schema_types) -> None:
    """Values in a column that the row's event type does not declare are ignored: say so once."""
    if not rows.any():
        return
    for position in np.unique(type_index[rows]):
        type_name = known[int(position)]
        if schema_types[type_name].attribute(name) is None:
            notices.warn(
                ("undeclared", name, type_name),
                f"column {name} has values for event type {type_name}, which does not declare it; "
                "they are ignored",
            )


def _time_kind(raw: Any, targets: dict[Target, tuple[str, ...]]) -> str:
    """How the input gives a time column (for outputs that show times as they came)."""
    target = next(iter(targets))
    if isinstance(raw, pa.ChunkedArray):
        raw = raw.chunk(0) if raw.num_chunks else pa.array([], raw.type)
    if isinstance(raw, pa.Array):
        if pa.types.is_timestamp(raw.type) or pa.types.is_date(raw.type):
            return str(raw.type)
        if pa.types.is_string(raw.type) or pa.types.is_large_string(raw.type):
            return convert(raw.slice(0, 64), target).input_kind or "text"
        return f"integer {target.unit}"
    return convert(list(raw[:64]), target).input_kind or f"integer {target.unit}"


class BatchBuilder:
    """Builds the typed tables of one query (Python API): the columns it reads, typed by its
    catalog; a bad row raises EventError with its 0-based index in the input.

    Every declared attribute the input has is typed and checked (``Catalog.checking``), also
    those the query does not read, so that a row is bad or good alike on every path (the
    file readers check every declared column); the tables hold the query's columns only."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self.checked = catalog.checking()
        self.notices = Notices(lambda message: warnings.warn(message, InputWarning, stacklevel=2))

    def type_rows(
        self,
        event_types: Any,
        columns: Mapping[str, Any],
        notices: Notices | None = None,
        absent: Mapping[str, np.ndarray] | None = None,
    ) -> TypedRows:
        """``type_rows`` over every declared column; the table keeps the query's columns."""
        typed = type_rows(self.checked, event_types, columns, absent=absent, notices=notices)
        if self.checked is not self.catalog:
            schema = self.catalog.arrow_schema()
            table = pa.Table.from_arrays([typed.table.column(f.name) for f in schema], schema=schema)
            typed = TypedRows(table, typed.bad, typed.reasons, typed.types)
        _remember_types(typed.table, self.checked.known_types, typed.types)
        return typed

    @property
    def columns(self) -> dict[str, pa.DataType]:
        """Column name -> Arrow type, as typed tables have them (after event_type)."""
        return {name: c.arrow_type for name, c in self.catalog.columns.items()}

    @property
    def arrow_schema(self) -> pa.Schema:
        return self.catalog.arrow_schema()

    def from_columns(
        self,
        event_types: Any,
        columns: Mapping[str, Any],
        first_row: int = 0,
        notices: Notices | None = None,
        absent: Mapping[str, np.ndarray] | None = None,
    ) -> pa.Table:
        """A typed table from raw columns (Arrow arrays or lists), or EventError for the first
        bad row (``first_row`` is the index of the batch's first row in the whole input)."""
        try:
            typed = self.type_rows(event_types, columns, notices, absent)
        except EventError as exc:
            raise EventError(exc.reason, None if exc.row is None else first_row + exc.row) from None
        index = typed.first_bad()
        if index is not None:
            raise EventError(typed.reasons[index], first_row + index)
        return typed.table

    def from_rows(self, rows: list[Mapping[str, Any]], first_row: int = 0) -> pa.Table:
        """A typed table from event dicts (a None is a missing value; a key left out is a
        bad row when a query reads it, else a missing value)."""
        for index, row in enumerate(rows):
            if not isinstance(row, Mapping):
                raise EventError(f"an event must be a dict, not {type(row).__name__}", first_row + index)
        columns: dict[str, list] = {}
        absent: dict[str, np.ndarray] = {}
        for name in self.checked.columns:
            # Left out: a bad row if a query reads the field, else null (type_rows decides).
            values = [row.get(name, _ABSENT) for row in rows]
            if _ABSENT in values:
                absent[name] = np.fromiter((v is _ABSENT for v in values), dtype=bool, count=len(values))
                values = [None if v is _ABSENT else v for v in values]
            columns[name] = values
        declared = self.catalog.declared_names
        for name in set().union(*rows) - declared - {EVENT_TYPE}:
            self.notices.warn(
                ("unknown", name), f"column {name} is not declared for any event type; it is ignored"
            )
        return self.from_columns(
            [row.get(EVENT_TYPE) for row in rows], columns, first_row, self.notices, absent or None
        )

    def from_table(self, table: pa.Table, first_row: int = 0, notices: Notices | None = None) -> pa.Table:
        """A typed table from an Arrow table of any column types (no warnings by default: the
        evaluator's internal paths pass tables with extra bookkeeping columns)."""
        if EVENT_TYPE not in table.column_names:
            raise EventError(f"the input has no {EVENT_TYPE} column", first_row)
        names = table.column_names
        if len(set(names)) != len(names):
            twice = sorted({n for n in names if names.count(n) > 1})
            raise EventError(f"the input has the column {', '.join(twice)} twice")
        columns = {name: table.column(name) for name in names if name != EVENT_TYPE}
        return self.from_columns(table.column(EVENT_TYPE), columns, first_row, notices)


def typed_events(schema: Schema, events: Any) -> pa.Table:
    """All events (dicts, pandas, Arrow) as one table of every declared column, typed by the
    same rules as every other path (attributes left out are null; bad values raise EventError).
    For consumers that need the events themselves, such as the reference evaluator."""
    builder = BatchBuilder(Catalog.of_schema(schema))
    tables = list(iter_tables(events, builder))
    return pa.concat_tables(tables) if tables else builder.arrow_schema.empty_table()


def iter_tables(events: Any, builder: BatchBuilder, batch_size: int = DEFAULT_BATCH) -> Iterator[pa.Table]:
    """Typed tables of at most ``batch_size`` events from dicts, pandas, or Arrow input."""
    if isinstance(events, pa.RecordBatch):
        events = pa.Table.from_batches([events])
    if isinstance(events, pa.Table):
        offset = 0
        for batch in events.to_batches(max_chunksize=batch_size):
            yield builder.from_table(pa.Table.from_batches([batch]), offset, builder.notices)
            offset += batch.num_rows
        return
    if _is_pandas(events):
        yield from _pandas_tables(events, builder, batch_size)
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
            table = pa.Table.from_batches([event]) if isinstance(event, pa.RecordBatch) else event
            yield builder.from_table(table, offset, builder.notices)
            offset += table.num_rows
            continue
        chunk.append(event)
        if len(chunk) >= batch_size:
            yield builder.from_rows(chunk, offset)
            offset += len(chunk)
            chunk = []
    if chunk:
        yield builder.from_rows(chunk, offset)


def _pandas_tables(frame: Any, builder: BatchBuilder, batch_size: int) -> Iterator[pa.Table]:
    """pandas columns as Arrow arrays; an object column of mixed Python values (which Arrow
    cannot hold) as its Python values, typed by the same rules."""
    if EVENT_TYPE not in frame.columns:
        raise EventError(f"the input has no {EVENT_TYPE} column")
    for start in range(0, len(frame), batch_size):
        part = frame.iloc[start : start + batch_size]
        columns: dict[str, Any] = {}
        for name in part.columns:
            series = part[name]
            try:
                columns[str(name)] = pa.Array.from_pandas(series)
            except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError):
                columns[str(name)] = series.astype(object).where(series.notna(), None).tolist()
        event_types = columns.pop(EVENT_TYPE)
        yield builder.from_columns(event_types, columns, start, builder.notices)


def _is_pandas(value: Any) -> bool:
    module = type(value).__module__
    return module.startswith("pandas") and hasattr(value, "to_dict") and hasattr(value, "columns")


def builder_for(plan) -> BatchBuilder:
    """The batch builder of a plan (made once, from the plan's catalog)."""
    builder = getattr(plan, "_builder", None)
    if builder is None:
        builder = BatchBuilder(plan.catalog)
        plan._builder = builder
    return builder


__all__ = [
    "builder_for",
    "DEFAULT_BATCH",
    "BatchBuilder",
    "Notices",
    "TypedRows",
    "iter_tables",
    "type_rows",
    "typed_events",
]
