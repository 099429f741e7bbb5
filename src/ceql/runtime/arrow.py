"""Matches as columns, and the one function that turns them into a record batch of the output
schema (``compile/output_schema.py``).

``MatchColumns`` holds matches column-wise: triggers, flat positions with offsets, per reported
label its flat positions with offsets, partition key codes with the key of each code, and the
measures' raw values (times as int64 nanoseconds), and ``NOT FOLLOWED BY``'s deadlines. The
compiled kernel's output is already in this form (``runtime/kernel/output.py``); matches of the Python evaluator are gathered into it
(``from_matches``). ``record_batch`` builds the Arrow batch of every engine and writer from it;
``MatchRows`` gives ``Match`` objects that are views of its rows, built when first read.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from ceql.compile.output_schema import POSITIONS, OutputSchema, output_schema
from ceql.match import Match

_new = object.__new__


@dataclass
class MatchColumns:
    """Matches, column-wise, in trigger order.

    Match ``i`` was triggered at ``trigger[i]``; its reported positions are
    ``positions[offsets[i]:offsets[i+1]]`` (ascending); ``labels[x] = (offsets, positions)`` the
    same for the events label ``x`` reports; its partition key is ``keys[partition[i]]`` (None
    when the query reports none); ``measures[name]`` holds one raw value per match (a list, a
    numpy or an Arrow array; times as int64 nanoseconds, the engine's unit)."""

    trigger: np.ndarray
    offsets: np.ndarray
    positions: np.ndarray
    labels: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    partition: np.ndarray | None = None
    keys: Sequence[tuple] | None = None
    measures: dict[str, Any] = field(default_factory=dict)
    deadline: Any = None  # NOT FOLLOWED BY: one deadline per match (Match.deadline)
    #: NOT FOLLOWED BY split over workers (runtime/parallel_absence.py): per match, the rank of
    #: its key (the key's value, numbers or strings; 0 for the equality form) and a tie (the
    #: position of f's event, or 0): the merge of the workers' matches due at one event sorts by
    #: (trigger, rank, deadline, tie), one core's order. None elsewhere.
    rank: np.ndarray | None = None
    tie: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.trigger)


def from_matches(matches: Iterable[Match], schema: OutputSchema) -> MatchColumns:
    """Match objects (raw measures: times as nanoseconds, or as ``Match.measures`` shows them)
    gathered into columns, for the labels and measures of ``schema``."""
    rows = matches if isinstance(matches, list) else list(matches)
    n = len(rows)
    trigger = np.fromiter((m.trigger for m in rows), dtype=np.int64, count=n)
    flat: list[int] = []
    offsets = np.zeros(n + 1, dtype=np.int64)
    label_flat: dict[str, list[int]] = {x: [] for x in schema.labels or schema.ids}
    label_offsets = {x: np.zeros(n + 1, dtype=np.int64) for x in label_flat}
    codes = np.zeros(n, dtype=np.int64) if schema.partition_type is not None else None
    keys: dict[tuple, int] = {}
    measures: dict[str, list] = {m.name: [] for m in schema.measures}
    deadlines: list | None = [] if schema.deadline else None
    for i, match in enumerate(rows):
        trigger_, positions, labels, partition, values, deadline = match._values()
        flat.extend(positions)
        offsets[i + 1] = len(flat)
        for name, found in label_flat.items():
            got = labels.get(name)
            if got:
                found.extend(got)
            label_offsets[name][i + 1] = len(found)
        if codes is not None:
            codes[i] = -1 if partition is None else keys.setdefault(partition, len(keys))
        for name, column in measures.items():
            column.append(values.get(name))
        if deadlines is not None:
            deadlines.append(deadline)
    return MatchColumns(
        trigger,
        offsets,
        np.array(flat, dtype=np.int64),
        {x: (label_offsets[x], np.array(v, dtype=np.int64)) for x, v in label_flat.items()},
        codes,
        list(keys) if codes is not None else None,
        measures,
        deadlines,
    )


def list_array(offsets: np.ndarray, values: np.ndarray) -> pa.Array:
    """A list<int64> column (``element`` items) from offsets and flat values."""
    return pa.ListArray.from_arrays(
        pa.array(np.asarray(offsets, dtype=np.int32)), pa.array(values, pa.int64()), type=POSITIONS
    )


def record_batch(
    schema: OutputSchema,
    columns: MatchColumns,
    events: pa.Array | None = None,
    ids: pa.Array | None = None,
) -> pa.RecordBatch:
    """The record batch of ``schema`` holding ``columns`` (``events`` and ``ids``: the
    columns of that name, built by the caller, when the schema has them)."""
    n = len(columns)
    # The query name on every row: one Arrow repeat (a Python list of n names cost more than
    # the rest of the batch on large outputs; issue 34).
    arrays: list[pa.Array] = [pa.repeat(pa.scalar(schema.name, pa.string()), n)]
    if schema.positions:
        arrays.append(pa.array(columns.trigger, pa.int64()))
        arrays.append(list_array(columns.offsets, columns.positions))
        if schema.labels:
            kind = schema.arrow.field("labels").type
            arrays.append(
                pa.StructArray.from_arrays(
                    [list_array(*columns.labels[x]) if n else pa.array([], POSITIONS) for x in schema.labels],
                    fields=list(kind),
                )
            )
    if schema.partition_type is not None:
        arrays.append(partition_array(schema, columns))
    for measure in schema.measures:
        values = columns.measures.get(measure.name)
        arrays.append(measure.from_raw(values if values is not None else [None] * n))
    if schema.deadline:
        deadlines = columns.deadline
        arrays.append(pa.array(deadlines if deadlines is not None else [None] * n, pa.int64()))
    if schema.events is not None:
        arrays.append(events if events is not None else pa.nulls(n, schema.arrow.field("events").type))
        if schema.ids:
            arrays.append(ids if ids is not None else pa.nulls(n, schema.arrow.field("ids").type))
    return pa.RecordBatch.from_arrays(arrays, schema=schema.arrow)


def partition_array(schema: OutputSchema, columns: MatchColumns) -> pa.Array:
    """The ``partition`` struct column: each distinct key built once, then taken per match."""
    kind = schema.partition_type
    assert kind is not None
    n = len(columns)
    codes = columns.partition
    if codes is None or columns.keys is None or n == 0:
        return pa.nulls(n, kind)
    shifted = np.maximum(np.asarray(codes, dtype=np.int64), -1) + 1  # -1 (no key) -> 0
    top = int(shifted.max()) + 1
    if top <= 4 * n + 1024:
        # The distinct codes and each match's index among them in O(n) (codes are dense): a
        # code marks its slot, the marks' ranks are the indexes (np.unique sorts).
        used = np.zeros(top, dtype=bool)
        used[shifted] = True
        distinct = np.flatnonzero(used) - 1
        inverse = (np.cumsum(used) - 1)[shifted]
    else:
        distinct, inverse = np.unique(shifted - 1, return_inverse=True)
    values = [columns.keys[c] if c >= 0 else None for c in distinct.tolist()]
    children = [
        pa.array([None if v is None else v[index] for v in values], f.type)
        for f, (_, index) in zip(kind, schema.partition)
    ]
    mask = pa.array([v is None for v in values]) if None in values else None
    unique = pa.StructArray.from_arrays(children, fields=list(kind), mask=mask)
    return unique.take(pa.array(inverse.astype(np.int64).ravel()))


def matches_table(
    plan: Any,
    matches: Iterable[Match],
    type_labels: bool = False,
    schema: OutputSchema | None = None,
) -> pa.Table:
    """Match objects as one Arrow table of the output schema."""
    schema = schema or output_schema(plan, type_labels=type_labels)
    return pa.Table.from_batches([record_batch(schema, from_matches(matches, schema))])


class MatchRows:
    """``Match`` objects over the rows of ``MatchColumns``: creating one costs an object; its
    fields are built from the columns when first read (each column turns into a Python list
    once, on the first read of that field in any row)."""

    __slots__ = ("columns", "schema", "report_partition", "_triggers", "_positions", "_rest")

    def __init__(self, columns: MatchColumns, schema: OutputSchema | None, report_partition: bool) -> None:
        self.columns = columns
        self.schema = schema
        self.report_partition = report_partition and columns.keys is not None
        self._triggers: list | None = None
        self._positions: tuple[list, list] | None = None
        self._rest: tuple | None = None

    def __len__(self) -> int:
        return len(self.columns)

    def __iter__(self) -> Iterator[Match]:
        new, cls = _new, Match
        for row in range(len(self.columns)):
            match = new(cls)
            match._fields = None
            match._view = self
            match._row = row
            yield match

    def trigger(self, row: int) -> int:
        triggers = self._triggers
        if triggers is None:
            triggers = self._triggers = self.columns.trigger.tolist()
        return triggers[row]

    def positions(self, row: int) -> tuple[int, ...]:
        found = self._positions
        if found is None:
            found = self._positions = (self.columns.offsets.tolist(), self.columns.positions.tolist())
        offsets, positions = found
        return tuple(positions[offsets[row] : offsets[row + 1]])

    def partition(self, row: int) -> tuple | None:
        codes = self._prepare()[1]
        if codes is None or codes[row] < 0:
            return None
        return self.columns.keys[codes[row]]  # type: ignore[index]

    def _prepare(self) -> tuple:
        if self._rest is not None:
            return self._rest
        columns = self.columns
        labels = [(name, o.tolist(), p.tolist()) for name, (o, p) in columns.labels.items()]
        codes = columns.partition.tolist() if self.report_partition and columns.partition is not None else None
        measures = []
        if columns.measures:
            by_name = {m.name: m for m in self.schema.measures} if self.schema is not None else {}
            for name, values in columns.measures.items():
                if isinstance(values, (pa.Array, pa.ChunkedArray)):
                    values = values.to_pylist()
                elif isinstance(values, np.ndarray):
                    values = values.tolist()
                measure = by_name.get(name)
                convert = measure.python if measure is not None and measure.time is not None else None
                measures.append((name, values, convert))
        self._rest = (labels, codes, measures)
        return self._rest

    def fields(self, row: int) -> tuple:
        """The fields of ``Match`` for one row (the deadline only when the columns have one)."""
        labels, _, measures = self._prepare()
        found = {}
        for name, lo, lp in labels:
            start, end = lo[row], lo[row + 1]
            if end > start:
                found[name] = tuple(lp[start:end])
        values = {}
        for name, column, convert in measures:
            value = column[row]
            if isinstance(value, list):
                value = tuple(value)
            values[name] = convert(value) if convert is not None else value
        deadline = self.columns.deadline
        if deadline is not None:  # NOT FOLLOWED BY on the kernel
            return (self.trigger(row), self.positions(row), found, self.partition(row), values, int(deadline[row]))
        return (self.trigger(row), self.positions(row), found, self.partition(row), values)


__all__ = ["MatchColumns", "MatchRows", "from_matches", "list_array", "matches_table", "partition_array", "record_batch"]
