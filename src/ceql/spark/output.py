"""The rows ``find`` returns: their Spark schema (decided on the driver) and how a task turns
matches into Arrow batches of that schema (on the workers).

The columns are the output schema of every engine (``compile/output_schema.py``; docs/guide.md,
"Output"), as Spark types (pyspark's ``from_arrow_type``): ``query``; with ``positions=True``
``trigger``, ``positions`` and ``labels``; ``partition``; the measures; with id columns
``events`` (the id columns of the match's events in stream order) and ``ids`` (per reported
label). Times are shown as the DataFrame gives the time column (Spark timestamps hold
microseconds).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ceql.compile.output_schema import FIXED, OutputSchema, declared_unit, output_schema, time_names
from ceql.errors import CeqlError
from ceql.runtime.arrow import from_matches, record_batch

RESERVED = FIXED


@dataclass(frozen=True)
class OutputSpec:
    """Everything a task needs to build result batches (picklable, sent with the task)."""

    name: str
    id_columns: tuple[str, ...]
    positions: bool
    labels: tuple[str, ...]  # reported labels that get an ``ids`` field
    partition: str | None  # "struct" or None
    partition_fields: tuple[str, ...]
    measures: tuple[str, ...]
    arrow_schema: pa.Schema = field(compare=False)  # the batches Spark takes from a task
    schema: OutputSchema | None = field(default=None, compare=False)  # the output schema
    # "nested" (the output schema of every engine) or "flat" (``flat_batch``: no struct or
    # list column; what Spark's row conversion and Parquet's writer handle cheaply).
    layout: str = "nested"
    # The nested output schema in Spark's Arrow types: what tasks build (then flatten).
    nested_schema: pa.Schema | None = field(default=None, compare=False)

    @property
    def has_ids(self) -> bool:
        return bool(self.id_columns)


def time_kinds(query, df_schema) -> dict[str, str]:
    """How a DataFrame gives each time column (``Catalog.time_inputs``'s words): Spark
    timestamps (UTC instants, microseconds), timestamps without a zone, dates, ISO-8601 text,
    or integers in the declared unit."""
    from pyspark.sql import types as T

    schema = query.checked.schema
    by_name = {f.name: f.dataType for f in df_schema.fields}
    out = {}
    for column in time_names(schema):
        kind = by_name.get(column)
        if isinstance(kind, T.TimestampType):
            out[column] = "timestamp[us, tz=UTC]"
        elif isinstance(kind, T.TimestampNTZType):
            out[column] = "timestamp[us]"
        elif isinstance(kind, T.DateType):
            out[column] = "date32[day]"
        elif isinstance(kind, T.StringType):
            out[column] = "ISO-8601"
        else:
            out[column] = f"integer {declared_unit(schema, column)}"
    return out


LAYOUTS = ("nested", "flat")


def output_spec(
    query, df_schema, *, name: str, id_columns: list[str], positions: bool, layout: str = "nested"
) -> tuple[OutputSpec, object]:
    """The output spec and Spark schema of ``find`` on a DataFrame with ``df_schema``, in
    ``layout`` ("nested": the output schema of every engine; "flat": ``flat_batch``)."""
    from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema, to_arrow_type

    if layout not in LAYOUTS:
        raise CeqlError(f"layout= must be 'nested' or 'flat', not {layout!r}")

    by_name = {f.name: f for f in df_schema.fields}
    events = [pa.field(c, to_arrow_type(by_name[c].dataType)) for c in id_columns] if id_columns else None
    schema = output_schema(
        query.plan,
        name=name,
        positions=positions,
        time_kinds=time_kinds(query, df_schema),
        events=events,
        ids=True,
    )
    spark_schema = from_arrow_schema(schema.arrow)
    nested = to_arrow_schema(spark_schema)
    if layout == "flat":
        spark_schema = from_arrow_schema(flat_batch(pa.RecordBatch.from_pylist([], schema=nested)).schema)
    spec = OutputSpec(
        name=name,
        id_columns=tuple(id_columns),
        positions=positions,
        labels=schema.ids,
        partition="struct" if schema.partition_type is not None else None,
        partition_fields=tuple(f for f, _ in schema.partition),
        measures=tuple(m.name for m in schema.measures),
        arrow_schema=to_arrow_schema(spark_schema),
        schema=schema,
        layout=layout,
        nested_schema=nested,
    )
    return spec, spark_schema


class Collector:
    """Matches -> Arrow batches of the output schema. Each match comes with the row numbers of
    its events in ``ids`` (a table of the id columns that grows as events are read)."""

    def __init__(self, spec: OutputSpec) -> None:
        self.spec = spec
        self.matches: list = []
        self.rows: list[list[int]] = []
        self.ids: list[pa.Table] = []
        self.id_rows = 0

    def add_ids(self, table: pa.Table) -> int:
        """Keep the id columns of a block of events; returns the row number of its first row."""
        first = self.id_rows
        if self.spec.has_ids:
            self.ids.append(table.select(list(self.spec.id_columns)))
        self.id_rows += table.num_rows
        return first

    def add(self, match, rows: list[int]) -> None:
        self.matches.append(match)
        self.rows.append(rows)

    def add_values(self, match, values: list[tuple]) -> None:
        """A match whose events come as tuples of id values (``plain_rows``), not row numbers."""
        first = self.add_ids(values_table(values, self.spec))
        self.add(match, list(range(first, first + len(values))))

    def __len__(self) -> int:
        return len(self.matches)

    def flush(self) -> pa.RecordBatch:
        """The collected matches as one batch (and forget them)."""
        spec = self.spec
        out = spec.schema
        assert out is not None
        matches, rows = self.matches, self.rows
        self.matches, self.rows = [], []
        events = ids = None
        if spec.has_ids:
            table = pa.concat_tables(self.ids) if self.ids else None
            if table is not None and len(self.ids) > 1:
                self.ids = [table]
            kind = out.arrow.field("events").type
            events = _lists(table, rows, kind)
            if out.ids:
                arrays = []
                for label in out.ids:
                    picked = [
                        [row for row, position in zip(r, m.positions) if position in set(m.labels.get(label, ()))]
                        for m, r in zip(matches, rows)
                    ]
                    arrays.append(_lists(table, picked, kind))
                ids = pa.StructArray.from_arrays(arrays, fields=list(out.arrow.field("ids").type))
        batch = record_batch(out, from_matches(matches, out), events, ids)
        return task_batch(batch, spec)


def task_batch(batch: pa.RecordBatch, spec: OutputSpec) -> pa.RecordBatch:
    """A batch of the output schema as a task hands it to Spark: in Spark's Arrow types, and
    flattened for the flat layout."""
    batch = spark_batch(batch, spec.nested_schema or spec.arrow_schema)
    return flat_batch(batch) if spec.layout == "flat" else batch


def spark_batch(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """A batch of the output schema in the Arrow types Spark takes (timestamps in
    microseconds, UTC)."""
    if batch.schema == schema:
        return batch
    return pa.RecordBatch.from_arrays(
        [column.cast(f.type, safe=False) for column, f in zip(batch.columns, schema)], schema=schema
    )


def flat_batch(batch: pa.RecordBatch) -> pa.RecordBatch:
    """The flat layout of a nested result batch: a struct column becomes a column per field,
    named ``<column>_<field>`` (``partition_card``, ``ids_b``, ``labels_b``); a list becomes
    text, its elements separated by a space, the fields of a struct element by a comma
    (``events``: "101 102 106" with one id column, "c1,101 c1,102" with two; a null value is
    empty text). Spark converts and writes such rows several times cheaper than lists of
    structs (docs/spark.md, "Cost")."""
    names: list[str] = []
    arrays: list[pa.Array] = []
    for name, column in zip(batch.schema.names, batch.columns):
        for flat_name, array in _flat_columns(name, column):
            if flat_name in names:
                raise CeqlError(f"layout='flat' makes two columns named {flat_name!r}: rename a measure")
            names.append(flat_name)
            arrays.append(array)
    return pa.RecordBatch.from_arrays(arrays, names=names)


def _flat_columns(name: str, array: pa.Array) -> list[tuple[str, pa.Array]]:
    kind = array.type
    if pa.types.is_struct(kind):  # flatten() carries the struct's own nulls into its fields
        return [
            column
            for field_, child in zip(kind, array.flatten())
            for column in _flat_columns(f"{name}_{field_.name}", child)
        ]
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        elements = _element_text(array.values)
        offsets = array.offsets
        if array.offset or len(offsets) and offsets[0].as_py():  # a slice: offsets index into values
            elements = elements.slice(offsets[0].as_py())
            offsets = pc.subtract(offsets, offsets[0])
        lists = pa.ListArray.from_arrays(offsets, elements, mask=array.is_null())
        return [(name, pc.binary_join(lists, " "))]
    return [(name, array)]


def _element_text(values: pa.Array) -> pa.Array:
    """Each element of a list as text: a struct's fields joined by commas."""
    if pa.types.is_struct(values.type):
        parts = [_element_text(child) for child in values.flatten()]
        if not parts:
            return pa.array([""] * len(values), pa.string())
        return parts[0] if len(parts) == 1 else pc.binary_join_element_wise(*parts, ",")
    return pc.fill_null(pc.cast(values, pa.string()), "")


def plain_rows(table: pa.Table, columns: tuple[str, ...]) -> list[tuple]:
    """The id columns of each row as a tuple of plain values that an evaluator state can save
    (timestamps and dates as integers)."""
    arrays = []
    for name in columns:
        column = table.column(name)
        if pa.types.is_timestamp(column.type) or pa.types.is_date(column.type):
            column = column.cast(pa.int64() if pa.types.is_timestamp(column.type) else pa.int32())
        arrays.append(column.to_pylist())
    return list(zip(*arrays)) if arrays else [() for _ in range(table.num_rows)]


def values_table(values: list[tuple], spec: OutputSpec) -> pa.Table:
    """Tuples made by ``plain_rows`` back as a table of the id columns, typed."""
    kind = (spec.nested_schema or spec.arrow_schema).field("events").type.value_type
    columns = []
    for index, field_ in enumerate(kind):
        column = [v[index] for v in values]
        if pa.types.is_timestamp(field_.type) or pa.types.is_date(field_.type):
            raw = pa.int64() if pa.types.is_timestamp(field_.type) else pa.int32()
            columns.append(pa.array(column, raw).cast(field_.type))
        else:
            columns.append(pa.array(column, field_.type))
    return pa.table(columns, names=[f.name for f in kind])


def _lists(table: pa.Table | None, rows: list[list[int]], kind: pa.DataType) -> pa.Array:
    """A list<struct> column: for each match, the rows ``rows[i]`` of ``table``."""
    offsets = np.zeros(len(rows) + 1, dtype=np.int32)
    np.cumsum([len(r) for r in rows], out=offsets[1:])
    flat = [i for r in rows for i in r]
    struct_type = kind.value_type
    if table is None or not flat:
        values = pa.array([], struct_type)
    else:
        taken = table.take(pa.array(flat, pa.int64()))
        arrays = [taken.column(f.name).combine_chunks().cast(f.type) for f in struct_type]
        values = pa.StructArray.from_arrays(arrays, fields=list(struct_type))
    return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), values, type=kind)

