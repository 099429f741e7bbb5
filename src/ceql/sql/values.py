"""Moving values between Arrow columns and the plain Python values the reference computes with.

Timestamps are integers in their column's unit (as the engine computes with them); strings,
integers, doubles and booleans are themselves; null is None.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa


def python_values(column: pa.ChunkedArray | pa.Array) -> list[Any]:
    """The values of a column as Python values (timestamps as integers in the column's unit)."""
    t = column.type
    if pa.types.is_dictionary(t):
        column = column.cast(t.value_type)
        t = t.value_type
    if pa.types.is_timestamp(t):
        return column.cast(pa.int64()).to_pylist()
    return column.to_pylist()


def arrow_values(values: list[Any], arrow_type: pa.DataType) -> pa.Array:
    """An Arrow array of ``arrow_type`` from Python values (timestamps given as integers)."""
    if pa.types.is_timestamp(arrow_type):
        return pa.array(values, type=pa.int64()).cast(arrow_type)
    if pa.types.is_list(arrow_type) and pa.types.is_timestamp(arrow_type.value_type):
        return pa.array(values, type=pa.list_(pa.int64())).cast(arrow_type)
    if pa.types.is_dictionary(arrow_type):
        return pa.array(values, type=arrow_type.value_type).cast(arrow_type)
    if pa.types.is_null(arrow_type):
        return pa.nulls(len(values))
    return pa.array(values, type=arrow_type)


def as_table(data: Any, name: str = "input") -> pa.Table:
    """An Arrow table from an Arrow table or record batch, a pandas DataFrame or a polars
    DataFrame (anything with ``to_arrow``)."""
    if isinstance(data, pa.Table):
        return data
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    if hasattr(data, "to_arrow") and not hasattr(data, "to_pandas_on_spark"):
        table = data.to_arrow()
        return table if isinstance(table, pa.Table) else pa.table(table)
    try:
        import pandas as pd
    except ImportError:  # pragma: no cover - pandas is a dependency
        pd = None
    if pd is not None and isinstance(data, pd.DataFrame):
        return pa.Table.from_pandas(data, preserve_index=False)
    if isinstance(data, dict):
        return pa.table(data)
    if isinstance(data, list) and all(isinstance(row, dict) for row in data):
        return pa.Table.from_pylist(data)
    raise TypeError(
        f"table {name}: expected an Arrow table, a pandas or polars DataFrame, a dict of columns or a list "
        f"of dicts, not {type(data).__name__}"
    )
