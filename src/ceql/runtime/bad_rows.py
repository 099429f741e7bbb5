"""The Python API's bad rows under ``on_error="skip"`` or ``"dead-letter"``: a batch builder
that hands each bad row to the run's ``ErrorPolicy`` (``runtime/rejects.py``) instead of
raising, with the reasons and record format of ``ceql run``.

A row is bad when the typing rules reject it (``type_rows``), or, for queries whose time
window needs events in time order, when its time is earlier than one already accepted (the
engine would raise ``out of order``). Rows are named by their 0-based index in the input, as
``EventError`` names them; the record's ``input`` is the row as given, as JSON text.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ceql.compile.catalog import EVENT_TYPE, Catalog
from ceql.compile.output_schema import declared_unit, time_type
from ceql.errors import EventError
from ceql.runtime.batches import BatchBuilder, Notices
from ceql.runtime.rejects import ErrorPolicy, RowError

SOURCE = "<events>"


class PolicyBuilder(BatchBuilder):
    """Builds typed tables like ``BatchBuilder``; bad rows go to ``policy`` and are left out."""

    def __init__(
        self,
        catalog: Catalog,
        policy: ErrorPolicy,
        plan: Any,
        notices: Notices | None = None,
        last_time: Callable[[], int | None] = lambda: None,
    ) -> None:
        super().__init__(catalog)
        if notices is not None:
            self.notices = notices
        self.policy = policy
        self.order = _OrderCheck(plan, catalog, last_time) if plan.ordered_time else None
        self._rows: list[Mapping[str, Any]] | None = None

    def from_rows(self, rows: list[Mapping[str, Any]], first_row: int = 0) -> pa.Table:
        """Like ``BatchBuilder.from_rows``; an event that is not a dict is a bad row too."""
        tables = []
        start = 0
        for index, row in enumerate(rows + [None]):
            if index < len(rows) and isinstance(row, Mapping):
                continue
            if index > start:
                tables.append(self._dict_rows(rows[start:index], first_row + start))
            if index < len(rows):
                reason = f"an event must be a dict, not {type(row).__name__}"
                self.policy.reject(RowError(SOURCE, first_row + index, reason, _text(row), "index"))
            start = index + 1
        if not tables:
            return self.catalog.arrow_schema().empty_table()
        return pa.concat_tables(tables) if len(tables) > 1 else tables[0]

    def _dict_rows(self, rows: list[Mapping[str, Any]], first_row: int) -> pa.Table:
        self._rows = rows  # the events as given: the dead-letter record's input
        try:
            return super().from_rows(rows, first_row)
        finally:
            self._rows = None

    def from_columns(
        self,
        event_types: Any,
        columns: Mapping[str, Any],
        first_row: int = 0,
        notices: Notices | None = None,
        absent: Mapping[str, np.ndarray] | None = None,
    ) -> pa.Table:
        try:
            typed = self.type_rows(event_types, columns, notices, absent)
        except EventError as exc:  # a column the query reads is missing: the whole input is bad
            raise EventError(exc.reason, None if exc.row is None else first_row + exc.row) from None
        bad = typed.bad.copy()
        reasons = dict(typed.reasons)
        if self.order is not None:
            self.order.check(typed.table, bad, reasons)
        for index in np.nonzero(bad)[0].tolist():
            self.policy.reject(
                RowError(SOURCE, first_row + index, reasons[index], self._input(event_types, columns, index, absent), "index")
            )
        if not bad.any():
            return typed.table
        return typed.table.filter(pa.array(~bad))

    def _input(self, event_types: Any, columns: Mapping[str, Any], index: int, absent: Any) -> str:
        if self._rows is not None:
            return _text(self._rows[index])
        row = {EVENT_TYPE: _value(event_types, index)}
        for name, column in columns.items():
            if absent is not None and name in absent and absent[name][index]:
                continue
            row[name] = _value(column, index)
        return _text(row)


class _OrderCheck:
    """Events of the types a time window measures must come in non-decreasing time order,
    after the latest time the evaluator has accepted (``last_time``)."""

    def __init__(self, plan: Any, catalog: Catalog, last_time: Callable[[], int | None]) -> None:
        self.attributes = dict(plan.time_attributes)  # event type -> its time column
        self.catalog = catalog
        self.last_time = last_time

    def check(self, table: pa.Table, bad: np.ndarray, reasons: dict[int, str]) -> None:
        n = table.num_rows
        times = np.zeros(n, dtype=np.int64)
        timed = np.zeros(n, dtype=bool)
        types = table.column(EVENT_TYPE)
        for type_name, column in self.attributes.items():
            rows = pc.fill_null(pc.and_(pc.equal(types, type_name), pc.is_valid(table.column(column))), False)
            mask = np.asarray(rows.to_numpy(zero_copy_only=False), dtype=bool) & ~bad
            values = pc.fill_null(table.column(column), 0).to_numpy(zero_copy_only=False)
            times[mask] = np.asarray(values, dtype=np.int64)[mask]
            timed |= mask
        last = self.last_time()
        for index in np.nonzero(timed)[0].tolist():
            value = int(times[index])
            if last is not None and value < last:
                bad[index] = True
                reasons[index] = (
                    f"out of order: time {self._shown(index, table, value)} after {self._shown(index, table, last)} "
                    "(a time window needs events in time order; sort the input or declare CREATE "
                    "QUARANTINE to reorder late events)"
                )
            else:
                last = value

    def _shown(self, index: int, table: pa.Table, ns: int) -> Any:
        column = self.attributes.get(table.column(EVENT_TYPE)[index].as_py(), "")
        kind = self.catalog.time_inputs.get(column)
        return time_type(kind, declared_unit(self.catalog.schema, column)).text(ns)


def time_text(plan: Any, catalog: Catalog) -> Callable[[int], Any]:
    """How messages write a time of ``plan``'s window: as the input gives times (looked up
    when called, once the input has been typed): ISO-8601 text for ISO or timestamp input,
    integers in their declared unit otherwise."""
    columns = list(dict.fromkeys(plan.time_attributes.values()))

    def show(ns: int) -> Any:
        column = columns[0] if columns else ""
        kind = catalog.time_inputs.get(column)
        return time_type(kind, declared_unit(catalog.schema, column)).text(ns)

    return show


def _value(column: Any, index: int) -> Any:
    if isinstance(column, (pa.Array, pa.ChunkedArray)):
        try:
            return column[index].as_py()
        except (OverflowError, ValueError):
            return str(column[index])
    return column[index]


def _text(value: Any) -> str:
    if isinstance(value, Mapping):
        value = {str(k): v for k, v in value.items()}
    return json.dumps(value, default=str, ensure_ascii=False)


__all__ = ["PolicyBuilder", "SOURCE"]
