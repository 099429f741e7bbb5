"""The rows ``find`` returns: their Spark schema (decided on the driver) and how a task turns
matches into Arrow batches of that schema (on the workers).

Columns, in order (docs/spark.md, "Output schema"):

- ``query`` string: the query's name;
- with ``positions=True``: ``trigger`` long, ``positions`` array<long>, ``labels``
  map<string, array<long>> (label -> positions), as in the local engine;
- ``partition``: the PARTITION BY key, a struct of the key attributes typed as declared (one
  group), or array<string> (several groups); absent when the query has no reported partition;
- one typed column per measure (the types of the local engine's Arrow output);
- with id columns: ``events`` array<struct<id columns>>, the match's events in stream order,
  and ``ids`` struct<label: array<struct<id columns>>> for every reported label;
- ``deadline`` long, last, for ``NOT FOLLOWED BY`` queries (``Match.deadline``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from ceql.errors import UnsupportedQueryError

RESERVED = ("query", "trigger", "positions", "labels", "partition", "events", "ids")


@dataclass(frozen=True)
class OutputSpec:
    """Everything a task needs to build result batches (picklable, sent with the task)."""

    name: str
    id_columns: tuple[str, ...]
    positions: bool
    labels: tuple[str, ...]  # reported labels that get an ``ids`` field
    partition: str | None  # "struct", "strings" or None
    partition_fields: tuple[str, ...]
    measures: tuple[str, ...]
    arrow_schema: pa.Schema = field(compare=False)
    deadline: bool = False  # NOT FOLLOWED BY: a ``deadline`` column (Match.deadline)

    @property
    def has_ids(self) -> bool:
        return bool(self.id_columns)


def output_spec(
    query, df_schema, *, name: str, id_columns: list[str], positions: bool
) -> tuple[OutputSpec, object]:
    """The output spec and Spark schema of ``find`` on a DataFrame with ``df_schema``."""
    from pyspark.sql import types as T
    from pyspark.sql.pandas.types import from_arrow_type, to_arrow_schema

    from ceql.runtime.arrow import measure_type, reported_labels

    facts = query.facts
    fields = [T.StructField("query", T.StringType(), False)]
    if positions:
        fields += [
            T.StructField("trigger", T.LongType()),
            T.StructField("positions", T.ArrayType(T.LongType())),
            T.StructField("labels", T.MapType(T.StringType(), T.ArrayType(T.LongType()))),
        ]
    partition, partition_fields = None, ()
    if facts.partition_reported:
        groups = facts.partition_groups
        if len(groups) == 1:
            partition, partition_fields = "struct", tuple(groups[0])
            types = facts.catalog.arrow_types
            fields.append(
                T.StructField(
                    "partition",
                    T.StructType([T.StructField(a, from_arrow_type(types[a])) for a in partition_fields]),
                )
            )
        else:
            partition = "strings"
            fields.append(T.StructField("partition", T.ArrayType(T.StringType())))
    kinds = query.checked.measure_types or {}
    for measure in facts.measures:
        if measure in RESERVED:
            raise UnsupportedQueryError(
                f"measure name {measure!r} clashes with an output column; rename it with AS"
            )
        kind = measure_type(kinds.get(measure))
        spark_type = from_arrow_type(kind) if kind is not None else T.StringType()
        fields.append(T.StructField(measure, spark_type))
    labels: tuple[str, ...] = ()
    if id_columns:
        by_name = {f.name: f for f in df_schema.fields}
        event = T.StructType([T.StructField(c, by_name[c].dataType) for c in id_columns])
        fields.append(T.StructField("events", T.ArrayType(event)))
        labels = reported_labels(query.plan)
        if labels:
            fields.append(
                T.StructField("ids", T.StructType([T.StructField(x, T.ArrayType(event)) for x in labels]))
            )
    deadline = getattr(query.plan, "absence", None) is not None
    if deadline:
        if any(f.name == "deadline" for f in fields):
            raise UnsupportedQueryError("measure name 'deadline' clashes with an output column; rename it with AS")
        fields.append(T.StructField("deadline", T.LongType()))
    schema = T.StructType(fields)
    spec = OutputSpec(
        name=name,
        id_columns=tuple(id_columns),
        positions=positions,
        labels=labels,
        partition=partition,
        partition_fields=partition_fields,
        measures=tuple(facts.measures),
        arrow_schema=to_arrow_schema(schema),
        deadline=deadline,
    )
    return spec, schema


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
        matches, rows = self.matches, self.rows
        self.matches, self.rows = [], []
        schema = spec.arrow_schema
        columns: dict[str, pa.Array] = {"query": pa.array([spec.name] * len(matches), pa.string())}
        if spec.positions:
            columns["trigger"] = pa.array([m.trigger for m in matches], pa.int64())
            columns["positions"] = pa.array([list(m.positions) for m in matches], pa.list_(pa.int64()))
            columns["labels"] = pa.array(
                [sorted((k, list(v)) for k, v in m.labels.items()) for m in matches],
                schema.field("labels").type,
            )
        if spec.partition == "struct":
            kind = schema.field("partition").type
            values = [
                dict(zip(spec.partition_fields, m.partition)) if m.partition is not None else None
                for m in matches
            ]
            columns["partition"] = pa.array(values, kind)
        elif spec.partition == "strings":
            columns["partition"] = pa.array(
                [[str(v) for v in m.partition] if m.partition is not None else None for m in matches],
                pa.list_(pa.string()),
            )
        for name in spec.measures:
            kind = schema.field(name).type
            values = [_plain(m.measures.get(name)) for m in matches]
            if pa.types.is_timestamp(kind):  # measures hold nanoseconds; Spark's unit may differ
                columns[name] = pa.array(values, pa.int64()).cast(pa.timestamp("ns", kind.tz)).cast(kind)
            else:
                columns[name] = pa.array(values, kind)
        if spec.deadline:
            columns["deadline"] = pa.array([m.deadline for m in matches], pa.int64())
        if spec.has_ids:
            table = pa.concat_tables(self.ids) if self.ids else None
            if table is not None and len(self.ids) > 1:
                self.ids = [table]
            columns["events"] = _lists(table, rows, schema.field("events").type)
            for label in spec.labels:
                picked = [
                    [row for row, position in zip(r, m.positions) if position in set(m.labels.get(label, ()))]
                    for m, r in zip(matches, rows)
                ]
                columns.setdefault("ids", {})[label] = _lists(
                    table, picked, schema.field("ids").type.field(label).type
                )
            if spec.labels:
                ids = columns.pop("ids")
                columns["ids"] = pa.StructArray.from_arrays(
                    [ids[label] for label in spec.labels], fields=list(schema.field("ids").type)
                )
        return pa.RecordBatch.from_arrays([columns[f.name] for f in schema], schema=schema)


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
    kind = spec.arrow_schema.field("events").type.value_type
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


def _plain(value):
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    return value
