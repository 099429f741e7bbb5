"""From a typed Arrow table to what the per-event loop reads: one symbol per event (vectorised
predicates), the events that can matter, their window measures (exact ints), partition keys,
and the values that registers, measures and outputs need."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ceql.compile.plan import Plan
from ceql.errors import EventError

NAN = math.nan  # a missing window measure (one object, so equal keys stay equal)


def out_of_order(position: int, value: Any, previous: Any, show: Callable[[int], Any] | None = None) -> EventError:
    """The error for an event whose time is before the previous one's (time windows); ``show``
    writes a time as the input gave it (ISO-8601 text for ISO input, not nanoseconds)."""
    if show is not None:
        value, previous = show(int(value)), show(int(previous))
    return EventError(
        f"out of order: time {value} after {previous} (a time window needs events in time order; "
        "sort the input or declare CREATE QUARANTINE to reorder late events)",
        position,
    )


@dataclass
class Prepared:
    """One batch, reduced to the events the loop must visit (lists, for fast Python access)."""

    positions: list[int]  # stream positions
    symbols: list[int]
    measures: list | None  # window measure per event (ints, or the attribute's values)
    keys: list | None  # partition key per event (None: the event is in no partition)
    masks: list[int] | None  # predicate bits, for register programs
    values: list[tuple] | None  # the plan's value attributes, for registers and measures
    data: list | None  # per event: (values, payload, local index) kept in tECS nodes
    end: int  # the stream position after the batch
    # With ``keep_all`` (NOT FOLLOWED BY's cancelling runs): every event is kept; whether its
    # symbol may change a run, and its deadline measure (None: it carries no window measure).
    relevant: list[bool] | None = None
    deadline_measures: list | None = None



def measure_column(plan: Plan, table: pa.Table, types: Any = None) -> pa.Array:
    """Each row's window measure column: with one attribute name, every row's value; with
    several, each event type's own (``types``: the event_type column, read if not given).
    The Python path and the kernel (kernel/windows.py) read windows from this one column."""
    attributes = plan.time_attributes
    names = set(attributes.values())
    if len(names) == 1:
        column = table.column(names.pop())
    else:
        types = table.column("event_type") if types is None else types
        column = None
        for type_name, attribute in attributes.items():
            this = table.column(attribute)
            mask = pc.equal(types, type_name)
            column = pc.if_else(mask, this, pa.nulls(len(this), this.type) if column is None else column)
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    return column

class Ingest:
    """Prepares batches for one evaluator (keeps what spans batches: symbol relevance, the last
    time seen, per-partition event counts)."""

    def __init__(self, plan: Plan, keep_all: bool = False) -> None:
        self.plan = plan
        self.keep_all = keep_all  # keep every event (NOT FOLLOWED BY: any event may pass a deadline)
        self.irrelevant = np.zeros(0, dtype=bool)
        self.type_array = pa.array(plan.type_names, pa.string())
        self.last_time: Any = None
        # How error messages write a time (set by the evaluator from how its input gives times).
        self.show_time: Callable[[int], Any] | None = None
        self.local_counts: dict[Any, int] = {}  # events seen per partition (sub-stream index)
        self.needs_local = plan.strict_filter
        self.has_registers = plan.registers is not None
        self.keep_values = self.has_registers or plan.measures is not None
        # Value attributes stored as double whose name some event types declare int.
        mixed = plan.catalog.int_types if plan.catalog is not None else {}
        self._int_types = {name: mixed[name] for name in plan.value_attributes if name in mixed}

    # ------------------------------------------------------------------ symbols

    def symbols(self, table: pa.Table) -> tuple[np.ndarray, np.ndarray]:
        plan = self.plan
        type_index = pc.index_in(table.column("event_type"), value_set=self.type_array)
        types = type_index.to_numpy(zero_copy_only=False).astype(np.int64)
        masks = np.zeros(table.num_rows, dtype=np.uint64)
        for bit, values in enumerate(plan.compiled.predicates.evaluate(table)):
            masks |= values.astype(np.uint64) << np.uint64(bit)
        symbols = plan.symbols.ids_for(types, masks)
        known = len(self.irrelevant)
        if len(plan.symbols.entries) > known:
            extra = [plan.det.irrelevant(s) for s in range(known, len(plan.symbols.entries))]
            self.irrelevant = np.concatenate([self.irrelevant, np.array(extra, dtype=bool)])
        return symbols, masks

    # ------------------------------------------------------------------ measures

    def window_measures(self, table: pa.Table, rows: np.ndarray, positions: np.ndarray) -> list | None:
        """The window measure of each kept event: its position, its time (int ns) or the
        attribute's value -- exact Python numbers, never rounded through float."""
        plan = self.plan
        if plan.window_kind is None:
            return None
        if plan.window_kind == "events":
            return positions.tolist()
        types = table.column("event_type")
        column = measure_column(self.plan, table, types)
        values = column.take(pa.array(rows, pa.int64())).to_pylist() if len(rows) else []
        if plan.ordered_time:
            self._check_order(table, types, column)
        # A missing value (null, NaN) is NaN: a complex event that starts or ends with it is in
        # no window (docs/semantics.md, WITHIN), and NaN compares false with everything.
        return [NAN if v is None or v != v else v for v in values]

    def _check_order(self, table: pa.Table, types, column: pa.Array) -> None:
        """Time windows need events in non-decreasing primary_time order."""
        used = pc.is_in(types, value_set=pa.array(sorted(self.plan.time_attributes), pa.string()))
        used = pc.fill_null(used, False)
        rows = np.nonzero(used.to_numpy(zero_copy_only=False))[0]
        if len(rows) == 0:
            return
        values = column.take(pa.array(rows, pa.int64()))
        nulls = values.is_null()
        if pc.any(nulls).as_py():
            row = int(rows[pc.index(nulls, True).as_py()])
            raise EventError("missing time value (the query's window needs it)", self.base + row)
        if pa.types.is_floating(values.type):
            array = values.to_numpy(zero_copy_only=False)
            if np.isnan(array).any():
                row = int(rows[int(np.argmax(np.isnan(array)))])
                raise EventError("time value is NaN (the query's window needs it)", self.base + row)
        else:
            array = values.to_numpy(zero_copy_only=False)
        if self.last_time is not None:
            if array[0] < self.last_time:
                raise self._out_of_order(int(rows[0]), array[0], self.last_time)
        if len(array) > 1:
            bad = array[1:] < array[:-1]
            if bad.any():
                k = int(np.argmax(bad)) + 1
                raise self._out_of_order(int(rows[k]), array[k], array[k - 1])
        self.last_time = array[-1].item()

    def _out_of_order(self, row: int, value, previous) -> EventError:
        return out_of_order(self.base + row, value, previous, self.show_time)

    # ------------------------------------------------------------------ keys and values

    def partition_keys(self, table: pa.Table, rows: np.ndarray) -> list:
        plan = self.plan
        take = pa.array(rows, pa.int64())
        types = table.column("event_type").take(take).to_pylist()
        groups = {group: [table.column(a).take(take).to_pylist() for a in group] for group in plan.partition_groups}
        keys: list = []
        for k, type_name in enumerate(types):
            group = plan.partition_types.get(type_name)
            if group is None:
                keys.append(None)
                continue
            key = tuple(column[k] for column in groups[group])
            keys.append(None if any(v is None or v != v for v in key) else key)
        return keys

    def event_values(self, table: pa.Table, rows: np.ndarray) -> list[tuple]:
        take = pa.array(rows, pa.int64())
        columns = []
        types = None
        for name in self.plan.value_attributes:
            if name not in table.column_names:
                columns.append([None] * len(rows))
                continue
            values = table.column(name).take(take).to_pylist()
            integral = self._int_types.get(name)
            if integral:
                # A name declared int by some event types and double by others is stored as
                # double: its values are ints again for the types that declare it int (so
                # that / and % on them are integer operations, as in the reference).
                if types is None:
                    types = table.column("event_type").take(take).to_pylist()
                values = [
                    int(v) if t in integral and isinstance(v, float) and v.is_integer() else v
                    for v, t in zip(values, types)
                ]
            columns.append(values)
        return list(zip(*columns)) if columns else [()] * len(rows)

    # ------------------------------------------------------------------ a batch

    def prepare(
        self, table: pa.Table, base: int, positions: np.ndarray | None = None, payload: Any = None
    ) -> Prepared:
        """``base``: the position of the table's first row, when ``positions`` is not given
        (else the stream position of every row, increasing)."""
        self.base = base
        n = table.num_rows
        symbols, masks = self.symbols(table)
        if self.needs_local or self.keep_all:
            relevant = np.arange(n)  # sub-stream indexes count every event
        else:
            relevant = np.nonzero(~self.irrelevant[symbols])[0]
        if positions is None:
            kept_positions = relevant + base
            end = base + n
        else:
            positions = np.asarray(positions, dtype=np.int64)
            kept_positions = positions[relevant]
            end = int(positions[-1]) + 1 if n else base
        measures = self.window_measures(table, relevant, kept_positions)
        keys = self.partition_keys(table, relevant) if self.plan.partition_groups else None
        values = self.event_values(table, relevant) if self.keep_values else None
        mask_list = masks[relevant].tolist() if self.has_registers else None
        payloads = None
        if payload is not None:
            rows = relevant.tolist()
            payloads = [payload(r) for r in rows] if callable(payload) else [payload[r] for r in rows]
        data = None
        if values is not None or payloads is not None or self.needs_local:
            locals_ = self._local_indexes(keys, len(relevant)) if self.needs_local else None
            data = [
                (
                    values[k] if values is not None else None,
                    payloads[k] if payloads is not None else None,
                    locals_[k] if locals_ is not None else None,
                )
                for k in range(len(relevant))
            ]
        prepared = Prepared(
            positions=kept_positions.tolist(),
            symbols=symbols[relevant].tolist(),
            measures=measures,
            keys=keys,
            masks=mask_list,
            values=values,
            data=data,
            end=end,
        )
        if self.keep_all:
            prepared.relevant = (~self.irrelevant[symbols]).tolist()
            prepared.deadline_measures = self.deadline_measures(table, prepared)
        return prepared

    def deadline_measures(self, table: pa.Table, prepared: Prepared) -> list:
        """Per event, the measure that passes deadlines: its position (EVENTS), or its time or
        window attribute when its type is one the query names (else None)."""
        if self.plan.window_kind == "events":
            return list(prepared.positions)
        measured = pc.is_in(table.column("event_type"), value_set=pa.array(sorted(self.plan.time_attributes), pa.string()))
        flags = pc.fill_null(measured, False).to_pylist()
        return [m if flag else None for m, flag in zip(prepared.measures or [], flags)]

    def _local_indexes(self, keys: list | None, count: int) -> list[int]:
        out = []
        counts = self.local_counts
        for k in range(count):
            key = keys[k] if keys is not None else None
            local = counts.get(key, 0)
            counts[key] = local + 1
            out.append(local)
        return out
