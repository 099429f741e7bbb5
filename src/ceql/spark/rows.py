"""A task's matches from the engine's columns to the rows ``find`` returns, vectorised.

``Evaluator.columns`` gives the matches of a table as ``MatchColumns`` (``runtime/arrow.py``:
the compiled kernel builds them without a Python object per match; other queries are gathered
into the same layout): triggers, positions and label positions as row numbers of the task's
table, partition key codes, raw measures. This module maps the row numbers to the task's
stream positions, takes the id columns of the events (``events``, and per label ``ids``) with
``take`` on the task's rows, and hands the rest to ``record_batch``, the one function that
builds every engine's rows. It gives the same rows as ``Collector`` (tests/test_spark_rows.py
checks it on every plan).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pyarrow as pa

from ceql.runtime.arrow import MatchColumns, record_batch
from ceql.spark.output import OutputSpec, task_batch


def output_batch(
    found: MatchColumns,
    spec: OutputSpec,
    ids: pa.Table | None,
    positions: np.ndarray | None = None,
) -> pa.RecordBatch:
    """The rows of ``found`` (matches over a task's table, positions as its row numbers) in
    the Spark output schema. ``ids``: the id columns of the task's rows; ``positions``: the
    stream position of each of them (None: the row numbers are the positions)."""
    out = spec.schema
    assert out is not None
    n = len(found)
    events = ids_column = None
    if spec.has_ids:
        kind = out.arrow.field("events").type
        events = _take_lists(ids, found.offsets, found.positions, kind)
        if out.ids:
            arrays = []
            for label in out.ids:
                offsets, rows = found.labels.get(label) or (np.zeros(n + 1, dtype=np.int64), np.zeros(0, np.int64))
                arrays.append(_take_lists(ids, offsets, rows, kind))
            ids_column = pa.StructArray.from_arrays(arrays, fields=list(out.arrow.field("ids").type))
    if positions is not None:
        found = dataclasses.replace(
            found,
            trigger=positions[np.asarray(found.trigger, dtype=np.int64)],
            positions=positions[np.asarray(found.positions, dtype=np.int64)],
            labels={x: (o, positions[np.asarray(v, dtype=np.int64)]) for x, (o, v) in found.labels.items()},
        )
    return task_batch(record_batch(out, found, events, ids_column), spec)


def _take_lists(ids: pa.Table | None, offsets: np.ndarray, rows: np.ndarray, kind: pa.DataType) -> pa.ListArray:
    """list<struct<id columns>>: for each match, the id columns of its rows (``rows`` flat,
    cut by ``offsets``)."""
    struct_type = kind.value_type
    offsets = np.asarray(offsets, dtype=np.int64)
    start = int(offsets[0]) if len(offsets) else 0
    flat = np.asarray(rows, dtype=np.int64)[start : int(offsets[-1]) if len(offsets) else 0]
    if ids is None or len(flat) == 0:
        values = pa.array([], struct_type)
    else:
        taken = ids.take(pa.array(flat))
        arrays = [taken.column(f.name).combine_chunks().cast(f.type) for f in struct_type]
        values = pa.StructArray.from_arrays(arrays, fields=list(struct_type))
    return pa.ListArray.from_arrays(pa.array(offsets - start, pa.int32()), values, type=kind)
