"""A task's matches from the engine's Arrow table to the rows ``find`` returns, vectorised.

``Evaluator.arrow`` gives the matches of a table (the compiled kernel builds them without a
Python object per match; other queries go through the Python evaluator into the same layout,
see ``ceql.runtime.arrow``): ``trigger``, ``positions`` (rows of the table), ``labels.<name>``,
``partition.<attribute>`` or ``partition``, and the measures. This module turns that table into
a record batch of the output schema (``ceql.spark.output``) with array operations only: the id
columns of the events by ``take`` on the task's rows, positions through the task's global
positions, the label map and the partition struct rebuilt from their columns. It gives the same
rows as ``Collector`` (tests/test_spark_rows.py checks it on every plan).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ceql.spark.output import OutputSpec


def output_batch(
    found: pa.Table,
    spec: OutputSpec,
    ids: pa.Table | None,
    positions: np.ndarray | None = None,
) -> pa.RecordBatch:
    """The rows of ``found`` (``Evaluator.arrow`` of a task's table) in the output schema.
    ``ids``: the id columns of the task's rows; ``positions``: the stream position of each of
    them (None: the row numbers are the positions)."""
    schema = spec.arrow_schema
    n = found.num_rows
    columns: dict[str, pa.Array] = {"query": pa.array(np.full(n, spec.name, dtype=object), pa.string())}
    rows = _lists(found, "positions")
    labels = {name: _lists(found, f"labels.{name}") for name in _label_names(found)}
    if spec.positions:
        trigger = found.column("trigger").to_numpy()
        columns["trigger"] = pa.array(_global(trigger, positions), pa.int64())
        columns["positions"] = _mapped(rows, positions)
        columns["labels"] = _label_map(labels, positions, n, schema.field("labels").type)
    if spec.partition == "struct":
        kind = schema.field("partition").type
        parts = []
        for field in kind:
            name = f"partition.{field.name}"
            parts.append(
                found.column(name).combine_chunks().cast(field.type)
                if name in found.column_names
                else pa.nulls(n, field.type)
            )
        columns["partition"] = pa.StructArray.from_arrays(parts, fields=list(kind))
    elif spec.partition == "strings":
        columns["partition"] = (
            found.column("partition").combine_chunks()
            if "partition" in found.column_names
            else pa.nulls(n, pa.list_(pa.string()))
        )
    for name in spec.measures:
        kind = schema.field(name).type
        columns[name] = _measure(found.column(name).combine_chunks(), kind)
    if spec.has_ids:
        columns["events"] = _take_lists(ids, rows, schema.field("events").type)
        if spec.labels:
            kind = schema.field("ids").type
            empty = pa.array([[]] * n, pa.list_(pa.int64()))
            arrays = [_take_lists(ids, labels.get(f.name, empty), f.type) for f in kind]
            columns["ids"] = pa.StructArray.from_arrays(arrays, fields=list(kind))
    return pa.RecordBatch.from_arrays([columns[f.name] for f in schema], schema=schema)


def _lists(found: pa.Table, name: str) -> pa.ListArray:
    column = found.column(name).combine_chunks()
    return column if isinstance(column, pa.ListArray) else column.cast(pa.list_(pa.int64()))


def _label_names(found: pa.Table) -> list[str]:
    return sorted(name[len("labels.") :] for name in found.column_names if name.startswith("labels."))


def _global(values: np.ndarray, positions: np.ndarray | None) -> np.ndarray:
    return values if positions is None else positions[values]


def _mapped(lists: pa.ListArray, positions: np.ndarray | None) -> pa.ListArray:
    """A list<int64> column of row numbers as stream positions."""
    if positions is None:
        return lists
    values = _global(lists.flatten().to_numpy(), positions)
    return pa.ListArray.from_arrays(_offsets(lists), pa.array(values, pa.int64()))


def _offsets(lists: pa.ListArray) -> pa.Array:
    """Offsets that start at 0 (a sliced list array's do not)."""
    offsets = lists.offsets.to_numpy()
    return pa.array(offsets - offsets[0], pa.int32())


def _label_map(labels: dict[str, pa.ListArray], positions, n: int, kind: pa.DataType) -> pa.MapArray:
    """label -> positions per match, for the labels that hold events, in name order."""
    names = sorted(labels)
    if not names:
        return pa.MapArray.from_arrays(
            pa.array(np.zeros(n + 1, dtype=np.int32)),
            pa.array([], pa.string()),
            pa.array([], pa.list_(pa.int64())),
            type=kind,
        )
    lengths = np.stack(
        [pc.list_value_length(labels[name]).to_numpy(zero_copy_only=False) for name in names], axis=1
    )
    present = lengths > 0  # n x labels, in row-major order: match by match, names in order
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(present.sum(axis=1), out=offsets[1:])
    rows, which = np.nonzero(present)
    keys = pa.array(np.array(names, dtype=object)[which], pa.string())
    items = pa.concat_arrays([_mapped(labels[name], positions) for name in names])
    items = items.take(pa.array(which * n + rows, pa.int64()))
    return pa.MapArray.from_arrays(pa.array(offsets), keys, items, type=kind)


def _take_lists(ids: pa.Table | None, lists: pa.ListArray, kind: pa.DataType) -> pa.ListArray:
    """list<struct<id columns>>: for each match, the id columns of the rows in ``lists``."""
    struct_type = kind.value_type
    flat = lists.flatten()
    if ids is None or len(flat) == 0:
        values = pa.array([], struct_type)
    else:
        taken = ids.take(flat)
        arrays = [taken.column(f.name).combine_chunks().cast(f.type) for f in struct_type]
        values = pa.StructArray.from_arrays(arrays, fields=list(struct_type))
    return pa.ListArray.from_arrays(_offsets(lists), values, type=kind)


def _measure(values: pa.Array, kind: pa.DataType) -> pa.Array:
    if pa.types.is_timestamp(kind) and pa.types.is_timestamp(values.type):
        return values.cast(pa.timestamp("ns", kind.tz)).cast(kind)
    return values.cast(kind)
