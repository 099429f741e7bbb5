"""Parquet: columns with their own types, typed by the catalog like any Arrow data.

Only ``event_type`` and the declared columns are read (others are ignored, with one warning), so
a nested column nobody declares costs nothing; a declared column holding structs or lists makes
its rows rejected. A row group that cannot be read (a corrupt page) makes each of its remaining
rows a rejected row; a file whose footer cannot be read is one rejected record (its rows cannot
be counted). Positions in messages are 1-based rows of the file.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ceql.compile.catalog import EVENT_TYPE, Catalog
from ceql.io.errors import RowError
from ceql.io.formats.base import Parsed, ReadOptions, Split, check_columns, row_text
from ceql.runtime.batches import Notices, type_rows

NAME = "parquet"
EXTENSIONS = (".parquet", ".pq")
UNIT = "row"


@dataclass(frozen=True)
class Layout:
    """The columns read from a Parquet file, and its rows per row group."""

    columns: tuple[str, ...]
    group_rows: tuple[int, ...]
    problem: str | None = None  # the file cannot be read at all


def plan(
    path: str, file_index: int, catalog: Catalog, options: ReadOptions, notices: Notices, whole: bool
) -> list[Split]:
    """One split per row group (checks the file's columns against the catalog)."""
    try:
        metadata = pq.read_metadata(path)
        names = pq.read_schema(path).names
    except (pa.ArrowException, OSError) as exc:
        layout = Layout((), (), f"cannot read the Parquet file: {_first_line(exc)}")
        return [Split(path, file_index, 0, None, 1, layout)]
    check_columns(names, catalog, path, notices)
    columns = tuple(n for n in names if n == EVENT_TYPE or n in catalog.columns)
    groups = tuple(metadata.row_group(i).num_rows for i in range(metadata.num_row_groups))
    layout = Layout(columns, groups)
    splits, first = [], 1
    for index, rows in enumerate(groups):
        splits.append(Split(path, file_index, index, None, first, layout))
        first += rows
    return splits  # ``whole`` makes no difference: row groups are read in order either way


def read_split(split: Split, catalog: Catalog, options: ReadOptions, notices: Notices) -> Iterator[Parsed]:
    """Read and type one row group, batch by batch."""
    layout: Layout = split.layout
    empty = catalog.arrow_schema().empty_table()
    if layout.problem is not None:
        error = RowError(split.source, None, layout.problem, unit=UNIT)
        yield Parsed(empty, np.zeros(0, np.int64), [error])
        return
    if not layout.group_rows:
        return
    line = split.first_line
    end = split.first_line + layout.group_rows[split.start]
    try:
        parquet = pq.ParquetFile(split.path)
        batches = parquet.iter_batches(
            batch_size=options.batch_rows, row_groups=[split.start], columns=list(layout.columns)
        )
        for batch in batches:
            yield _typed(batch, line, split.source, catalog, notices)
            line += batch.num_rows
    except (pa.ArrowException, OSError) as exc:
        reason = f"cannot read the Parquet file here (row group {split.start}): {_first_line(exc)}"
        rejects = [RowError(split.source, row, reason, unit=UNIT) for row in range(line, end)]
        yield Parsed(empty, np.zeros(0, np.int64), rejects)


def _typed(batch: pa.RecordBatch, first: int, source: str, catalog: Catalog, notices: Notices) -> Parsed:
    columns = {name: batch.column(name) for name in batch.schema.names if name != EVENT_TYPE}
    typed = type_rows(catalog, batch.column(EVENT_TYPE), columns, notices=notices)
    lines = np.arange(first, first + batch.num_rows, dtype=np.int64)
    rejects = []
    if typed.bad.any():
        for index in np.nonzero(typed.bad)[0]:
            values = {name: _shown(batch.column(name), int(index)) for name in batch.schema.names}
            rejects.append(
                RowError(source, int(lines[index]), typed.reasons[int(index)], row_text(values), UNIT)
            )
        lines = lines[~typed.bad]
    return Parsed(typed.accepted(), lines, rejects)


def _shown(column: pa.Array, index: int):
    try:
        return column[index].as_py()
    except (OverflowError, ValueError):
        return str(column[index])


def _first_line(exc: Exception) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def read_table(path: str, options: ReadOptions) -> pa.Table:
    """A whole Parquet file as an Arrow table with its own types (``ceql sql``)."""
    from ceql.errors import CeqlError

    if path == "-":
        raise CeqlError("parquet cannot be read from standard input; give a file")
    try:
        return pq.read_table(path)
    except (pa.ArrowException, OSError) as exc:
        raise CeqlError(f"{path}: cannot read the Parquet file: {_first_line(exc)}") from None
