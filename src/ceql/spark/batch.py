"""ceql on Spark DataFrames, batch: exact and parallel where the query allows it.

Plans (``explain_plan`` says which one a query gets):
- **partitioned**: PARTITION BY (and not CONSUME BY ANY, whose effect crosses keys): rows are
  grouped by key and each key's sub-stream is evaluated in parallel (``applyInArrow``);
- **sharded**: no PARTITION BY, a WITHIN window over a non-decreasing measure, CONSUME BY NONE and
  no NOT(...) (which may look before the window): the stream is cut into shards of the measure;
  each shard also gets the window's worth of events before it and reports only the complex events
  triggered inside it, so shards run in parallel and the union is exact;
- **single**: anything else runs in one ordered task (``mapInArrow`` on one partition).

Positions are global: rows are sorted by ``order_by`` (or the primary_time, else the input order)
with the input order as tie-break, and numbered scalably (a per-partition count and offsets).
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np
import pyarrow as pa

from ceql.compile.catalog import Catalog
from ceql.compile.compiler import has_not
from ceql.compile.limits import limit_matches
from ceql.errors import CeqlError
from ceql.io.writers import MATCH_FIELDS, append_match
from ceql.lang.schema import Schema

POS = "__ceql_pos"
SEQ = "__ceql_seq"
SHARD = "__ceql_shard"
MEASURE = "__ceql_measure"
_ROW_MASK = (1 << 33) - 1  # monotonically_increasing_id keeps the row index in its low 33 bits


def _declare(schema_or_declaration: Schema | str) -> Schema:
    import ceql

    if isinstance(schema_or_declaration, Schema):
        return schema_or_declaration
    return ceql.declare(schema_or_declaration)


@functools.lru_cache(maxsize=32)
def _compiled(query_text: str, schema_blob: bytes):
    """Compile once per Python worker (the query text and pickled schema are the cache key)."""
    import pickle

    import ceql

    return ceql.compile(query_text, pickle.loads(schema_blob))


def plan_kind(query) -> str:
    """Which batch plan a compiled query gets: partitioned, sharded or single."""
    parsed = query.checked.query
    plan = query.plan
    if plan.partition_groups and plan.consume != "ANY":
        return "partitioned"
    if (
        not plan.partition_groups
        and parsed.within is not None
        and plan.monotone
        and plan.consume == "NONE"
        and not has_not(parsed.formula)
        and _every_type_has_measure(query)
    ):
        return "sharded"
    return "single"


def _every_type_has_measure(query) -> bool:
    """Shards are cut on the window measure, so every event (of any type) must have one."""
    within = query.checked.query.within
    types = query.checked.schema.event_types.values()
    if within.kind == "events":
        return True
    if within.kind == "time":
        return all(d.time_attribute for d in types)
    return all(d.attribute(within.attribute or "") is not None for d in types)


def explain_plan(query) -> str:
    kind = plan_kind(query)
    return {
        "partitioned": "partitioned: each PARTITION BY key is evaluated in parallel",
        "sharded": "sharded: shards of the window measure, overlapping by the window, run in parallel",
        "single": "single: one ordered task (the query's semantics do not allow splitting it)",
    }[kind]


def output_schema(schema: Schema, with_events: bool):
    """The Spark schema of the result rows."""
    from pyspark.sql import types as T

    fields = [
        T.StructField("query", T.StringType()),
        T.StructField("trigger", T.LongType()),
        T.StructField("positions", T.ArrayType(T.LongType())),
        T.StructField("labels", T.MapType(T.StringType(), T.ArrayType(T.LongType()))),
        T.StructField("partition", T.ArrayType(T.StringType())),
    ]
    if with_events:
        fields.append(T.StructField("events", T.ArrayType(event_struct(schema))))
    return T.StructType(fields)


def event_struct(schema: Schema):
    """The Spark type of an event in the output: its position, then the typed columns of the
    schema's catalog (the same types as every other path)."""
    from pyspark.sql import types as T

    return T.StructType([T.StructField("position", T.LongType()), *Catalog.of_schema(schema).spark_fields()])


def _arrow_output_schema(schema: Schema, with_events: bool) -> pa.Schema:
    fields = list(MATCH_FIELDS)
    if with_events:
        from pyspark.sql.pandas.types import to_arrow_type

        fields.append(("events", pa.list_(to_arrow_type(event_struct(schema)))))
    return pa.schema(fields)


class _Collector:
    """Turns matches into Arrow record batches of the output schema."""

    def __init__(
        self, name: str, arrow_schema: pa.Schema, with_events: bool, event_fields: list[str]
    ) -> None:
        self.name = name
        self.arrow_schema = arrow_schema
        self.with_events = with_events
        self.event_fields = event_fields
        self.rows: dict[str, list] = {f: [] for f in arrow_schema.names}

    def add(self, match, events: list | None) -> None:
        append_match(self.rows, self.name, match)
        if self.with_events:
            self.rows["events"].append(events)

    def __len__(self) -> int:
        return len(self.rows["trigger"])

    def flush(self) -> pa.RecordBatch:
        batch = pa.RecordBatch.from_pydict(self.rows, schema=self.arrow_schema)
        self.rows = {f: [] for f in self.arrow_schema.names}
        return batch


def _event_rows(table: pa.Table, fields: list[str]):
    """A function of a row index -> the event as a dict of the output's event struct."""
    columns = {name: table.column(name) for name in fields if name in table.column_names}
    positions = table.column(POS)

    def row(index: int) -> dict[str, Any]:
        out = {name: column[index].as_py() for name, column in columns.items()}
        out["position"] = positions[index].as_py()
        return out

    return row


def find(
    df,
    query,
    schema_or_declaration: Schema | str,
    event_type: str = "event_type",
    order_by: list[str] | str | None = None,
    with_events: bool = False,
    name: str = "query",
    shards: int | None = None,
    max_matches: int | None = None,
    **streaming_options: Any,
):
    """Find the complex events of ``query`` in the events of a Spark DataFrame.

    ``df`` has a column with the event type (``event_type``) and the declared attributes. The
    result has one row per complex event: query, trigger, positions, labels, partition and,
    with ``with_events``, the events. A streaming DataFrame gives a streaming result (see
    ``ceql.spark.streaming``). With ``max_matches``, a task (a partition key's group, a shard,
    or the whole stream) that finds more matches fails with LimitError as soon as it does.
    """
    import pickle

    import ceql

    schema = _declare(schema_or_declaration)
    compiled = query if isinstance(query, ceql.Query) else ceql.compile(query, schema)
    if event_type != "event_type":
        df = df.withColumnRenamed(event_type, "event_type")
    catalog = compiled.plan.catalog
    missing = sorted(catalog.required - set(df.columns))
    if missing:  # a misspelt column would otherwise match nothing, silently
        raise CeqlError(catalog.missing_message(missing))
    if df.isStreaming and shards is None:
        from ceql.spark.streaming import find_streaming

        return find_streaming(
            df, compiled, schema, order_by=order_by, with_events=with_events, name=name, **streaming_options
        )
    if streaming_options:
        raise CeqlError(f"options only for streaming DataFrames: {', '.join(streaming_options)}")
    numbered = number_rows(df, schema, order_by)
    kind = plan_kind(compiled)
    blob = pickle.dumps(schema)
    text = compiled.text
    out_schema = output_schema(schema, with_events)
    arrow_schema = _arrow_output_schema(schema, with_events)
    event_fields = [f.name for f in event_struct(schema).fields if f.name != "position"]
    if kind == "partitioned":
        keyed, key_columns = _with_partition_keys(numbered, compiled)

        def evaluate_group(table: pa.Table) -> pa.Table:
            return _evaluate_table(
                table, text, blob, name, arrow_schema, with_events, event_fields, max_matches=max_matches
            )

        return keyed.groupBy(*key_columns).applyInArrow(evaluate_group, out_schema)
    if kind == "sharded":
        sharded, size = _with_shards(numbered, compiled, shards)
        window = compiled.plan.window

        def evaluate_shard(table: pa.Table) -> pa.Table:
            return _evaluate_table(
                table,
                text,
                blob,
                name,
                arrow_schema,
                with_events,
                event_fields,
                shard_size=size,
                window=window,
                max_matches=max_matches,
            )

        return sharded.groupBy(SHARD).applyInArrow(evaluate_shard, out_schema)

    def evaluate_all(batches):
        query_object = _compiled(text, blob)
        evaluator = query_object.evaluator()
        collector = _Collector(name, arrow_schema, with_events, event_fields)

        def matches():
            for batch in batches:
                table = pa.Table.from_batches([batch])
                payload = _event_rows(table, event_fields) if with_events else None
                yield from evaluator.process_at(table, table.column(POS).to_numpy(), payload)

        for match, payloads in limit_matches(matches(), max_matches):
            collector.add(match, payloads if with_events else None)
            if len(collector) >= 10_000:
                yield collector.flush()
        if len(collector):
            yield collector.flush()

    single = numbered.repartition(1).sortWithinPartitions(POS)
    return single.mapInArrow(evaluate_all, out_schema)


def _evaluate_table(
    table: pa.Table,
    text: str,
    blob: bytes,
    name: str,
    arrow_schema: pa.Schema,
    with_events: bool,
    event_fields: list[str],
    shard_size: float | None = None,
    window: float | None = None,
    max_matches: int | None = None,
) -> pa.Table:
    """Evaluate one group (a partition key, or a shard) sorted by position."""
    query_object = _compiled(text, blob)
    order = np.argsort(table.column(POS).to_numpy(), kind="stable")
    table = table.take(pa.array(order))
    evaluator = query_object.evaluator()
    collector = _Collector(name, arrow_schema, with_events, event_fields)
    payload = _event_rows(table, event_fields) if with_events else None
    positions = table.column(POS).to_numpy()
    keep_from = keep_to = None
    trigger_measure: dict[int, float] = {}
    if shard_size is not None:
        shard = table.column(SHARD)[0].as_py()
        keep_from, keep_to = shard * shard_size, (shard + 1) * shard_size
        measures = table.column(MEASURE).to_numpy()
        trigger_measure = dict(zip(positions.tolist(), measures.tolist()))
    found = evaluator.process_at(table, positions, payload)
    if keep_from is not None:  # matches triggered outside the shard are another shard's
        found = (item for item in found if keep_from <= trigger_measure[item[0].trigger] < keep_to)
    for match, payloads in limit_matches(found, max_matches):
        collector.add(match, payloads if with_events else None)
    batch = collector.flush()
    return pa.Table.from_batches([batch], schema=arrow_schema)


def time_expression(schema: Schema):
    """A Spark column with each row's primary_time (null for types without one), or None."""
    from pyspark.sql import functions as F

    times = {name: d.time_attribute for name, d in schema.event_types.items() if d.time_attribute}
    if not times:
        return None
    expression = None
    for type_name, attribute in times.items():
        branch = F.col(attribute).cast("long")
        expression = (
            F.when(F.col("event_type") == type_name, branch)
            if expression is None
            else expression.when(F.col("event_type") == type_name, branch)
        )
    return expression


def number_rows(df, schema: Schema, order_by: list[str] | str | None):
    """The DataFrame with a global position column, computed scalably and materialised."""
    from pyspark.sql import functions as F

    df = df.withColumn(SEQ, F.monotonically_increasing_id())
    if isinstance(order_by, str):
        order_by = [order_by]
    if order_by:
        keys = [F.col(c) for c in order_by] + [F.col(SEQ)]
    else:
        time = time_expression(schema)
        keys = [time, F.col(SEQ)] if time is not None else [F.col(SEQ)]
    ordered = df.orderBy(*keys)
    ordered = ordered.withColumn("__ceql_pid", F.spark_partition_id()).withColumn(
        "__ceql_mid", F.monotonically_increasing_id()
    )
    # Materialise so that the partitioning used for the offsets is the one that is numbered.
    ordered = ordered.localCheckpoint(eager=True)
    counts = ordered.groupBy("__ceql_pid").count().collect()
    offsets: dict[int, int] = {}
    total = 0
    for row in sorted(counts, key=lambda r: r["__ceql_pid"]):
        offsets[row["__ceql_pid"]] = total
        total += row["count"]
    size = max(offsets) + 1 if offsets else 1
    table = F.array(*[F.lit(offsets.get(i, 0)).cast("long") for i in range(size)])
    position = F.element_at(table, F.col("__ceql_pid") + 1) + (
        F.col("__ceql_mid").bitwiseAND(F.lit(_ROW_MASK))
    )
    return ordered.withColumn(POS, position).drop("__ceql_pid", "__ceql_mid", SEQ)


def _with_partition_keys(df, query):
    """Add one key column per PARTITION BY attribute position (per-type choice of list) and
    drop the rows that belong to no sub-stream."""
    from pyspark.sql import functions as F

    plan = query.plan
    groups = plan.partition_groups
    columns = []
    for index in range(len(groups[0])):
        expression = None
        for type_name, group in plan.partition_types.items():
            branch = F.col(group[index]).cast("string")
            condition = F.col("event_type") == type_name
            expression = (
                F.when(condition, branch) if expression is None else expression.when(condition, branch)
            )
        key = f"__ceql_key{index}"
        df = df.withColumn(key, expression if expression is not None else F.lit(None).cast("string"))
        columns.append(key)
    condition = None
    for key in columns:
        term = F.col(key).isNotNull()
        condition = term if condition is None else (condition & term)
    return df.where(condition), columns


def _with_shards(df, query, shards: int | None):
    """Assign each row to the shard of its measure and to every later shard whose window reaches
    back to it."""
    from pyspark.sql import functions as F

    plan = query.plan
    window = plan.window
    if plan.window_kind == "events":
        measure = F.col(POS).cast("double")
    else:
        attribute = query.checked.query.within.attribute
        measure = (
            F.col(attribute).cast("double")
            if plan.window_kind == "attribute"
            else time_expression(query.checked.schema).cast("double")
        )
    df = df.withColumn(MEASURE, measure)
    bounds = df.agg(F.min(MEASURE).alias("lo"), F.max(MEASURE).alias("hi")).collect()[0]
    lo, hi = bounds["lo"] or 0.0, bounds["hi"] or 0.0
    parallelism = shards or max(2, df.sparkSession.sparkContext.defaultParallelism * 2)
    size = max(float(window), math.ceil((hi - lo + 1) / parallelism))
    first = F.floor(F.col(MEASURE) / F.lit(size))
    last = F.floor((F.col(MEASURE) + F.lit(float(window))) / F.lit(size))
    return df.withColumn(SHARD, F.explode(F.sequence(first, last))), size
