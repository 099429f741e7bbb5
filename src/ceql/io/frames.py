"""Matches as a flat data frame: ``Query.run(..., output="pandas")`` and ``output="polars"``.

The Arrow output (``compile/output_schema.py``) nests what belongs together: ``labels`` and
``partition`` are structs. A data frame is easier to group and join when those are plain
columns, so the frame has, in this order:

- ``query``, ``trigger`` and ``positions`` (a list of ints per row), as in the Arrow output;
- one list column per reported label, named by the label (``labels.x`` if a measure or a key
  already has that name);
- one column per PARTITION BY attribute, named by the attribute (``partition.a`` if taken);
- the measures, named and typed as in the Arrow output, except that a difference of times
  (``b.ts - a.ts``, nanoseconds in Arrow) is a duration (``timedelta64[ns]``, polars
  ``Duration``); times are datetimes in their zone where the output contract makes them
  timestamps (ISO-8601 or timestamp input), integers where the input gave integers;
- ``deadline`` for NOT FOLLOWED BY queries.

Neither pandas nor polars is required by ceql: each is imported when asked for.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import pyarrow as pa

from ceql.errors import MissingExtraError


def flatten(table: pa.Table, intervals: Collection[str] = ()) -> pa.Table:
    """The Arrow output ``table`` with ``labels`` and ``partition`` as top-level columns and the
    ``intervals`` measures (int64 nanoseconds) as ``duration[ns]``."""
    names = set(table.column_names) - {"labels", "partition"}
    columns: list[tuple[str, pa.ChunkedArray]] = []
    for field in table.schema:
        column = table.column(field.name)
        if field.name in ("labels", "partition"):
            for index, inner in enumerate(field.type):
                name = inner.name if inner.name not in names else f"{field.name}.{inner.name}"
                names.add(name)
                parts = [chunk.field(index) for chunk in column.chunks]
                columns.append((name, pa.chunked_array(parts, inner.type)))
        elif field.name in intervals and pa.types.is_integer(field.type):
            columns.append((field.name, column.cast(pa.duration("ns"))))
        else:
            columns.append((field.name, column))
    return pa.table(dict(columns)) if columns else table


def to_pandas(table: pa.Table, intervals: Collection[str] = ()) -> Any:
    """A flat pandas DataFrame of the Arrow output (see the module docstring)."""
    try:
        import pandas as pd
    except ImportError as error:  # pragma: no cover - pandas is a dependency of ceql
        raise MissingExtraError("output='pandas' needs pandas (pip install pandas)") from error
    flat = flatten(table, intervals)
    frame = flat.to_pandas()
    # List cells as Python lists (pyarrow gives numpy arrays, which compare element-wise and
    # turn times into integers on ``tolist``): what a user prints, compares and explodes.
    for field in flat.schema:
        if pa.types.is_list(field.type) or pa.types.is_large_list(field.type):
            frame[field.name] = pd.Series(flat.column(field.name).to_pylist(), index=frame.index, dtype=object)
    return frame


def to_polars(table: pa.Table, intervals: Collection[str] = ()) -> Any:
    """A flat polars DataFrame of the Arrow output (see the module docstring)."""
    try:
        import polars
    except ImportError as error:
        raise MissingExtraError("output='polars' needs polars (pip install polars)") from error
    return polars.from_arrow(flatten(table, intervals))


def converter(output: str) -> Any:
    """The function from the Arrow output to ``output``'s frame ("pandas" or "polars"),
    raising MissingExtraError at once when polars is not installed."""
    if output == "polars":
        try:
            import polars  # noqa: F401 - only whether it is there
        except ImportError as error:
            raise MissingExtraError(
                "output='polars' needs polars, which ceql does not install (pip install polars)"
            ) from error
        return to_polars
    return to_pandas
