"""ceql on Spark DataFrames, batch: a lazy transformation, exact, parallel where the query allows.

Plans (``explain_plan`` says which one a query gets; docs/spark.md explains them):
- **partitioned**: PARTITION BY (and not CONSUME BY ANY, whose effect crosses keys): rows are
  grouped by key and each key's sub-stream is sorted and evaluated in its own task
  (``groupBy(...).applyInArrow``);
- **sharded**: no PARTITION BY, a WITHIN window over a non-decreasing measure and nothing that
  reads outside the window (``query.facts.shardable``): the stream is cut into shards of the
  measure, each also given the window's worth of events before it, and each reports only the
  complex events triggered by its own rows, so shards run in parallel and the union is exact;
- **single**: anything else runs in one ordered task (``mapInArrow`` on one sorted partition).

The stream order is ``order_by`` (else the primary_time, then ``tie_break``), then the input
order. Global positions (``positions=True``, or ``WITHIN n EVENTS`` in a parallel plan) are
computed inside the plan: rows are range-sorted, each sorted partition counts its rows, and a
small window over the counts gives every partition its offset; nothing runs until an action.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ceql.compile.limits import limit_matches
from ceql.errors import CeqlError
from ceql.lang.schema import TIME_UNITS, Schema
from ceql.spark.declare import check_columns, check_event_type_column, declare, schema_from_dataframe
from ceql.spark.output import Collector, OutputSpec, output_spec

POS = "__ceql_pos"
SEQ = "__ceql_seq"
TIME = "__ceql_time"
SHARD = "__ceql_shard"
HOME = "__ceql_home"
KEY = "__ceql_key"
_PID, _MID, _OFFSET = "__ceql_pid", "__ceql_mid", "__ceql_offset"
_ROW_MASK = (1 << 33) - 1  # monotonically_increasing_id keeps the row index in its low 33 bits
_FLUSH_ROWS = 10_000


@functools.lru_cache(maxsize=32)
def _compiled(query_text: str, declaration: str):
    """Compile once per Python worker (the query text and the declaration text, ``Schema.text``,
    are the cache key: plain text, never a pickle)."""
    import ceql

    return ceql.compile(query_text, ceql.declare(declaration))


def plan_kind(query) -> str:
    """Which batch plan a compiled query gets: partitioned, sharded or single."""
    facts = query.facts
    if facts.partition_groups and facts.consume != "ANY" and not facts.deadlines:
        return "partitioned"
    if facts.shardable and _every_type_has_measure(query):
        return "sharded"
    return "single"


def _every_type_has_measure(query) -> bool:
    """Shards are cut on the window measure, so every event (of any type) must have one."""
    facts = query.facts
    types = query.checked.schema.event_types.values()
    if facts.window_kind == "events":
        return True
    if facts.window_kind == "time":
        return all(d.time_attribute for d in types)
    return all(d.attribute(facts.window_attribute or "") is not None for d in types)


def explain_plan(query) -> str:
    """One line: the plan a query gets on Spark and why it is exact."""
    return {
        "partitioned": "partitioned: each PARTITION BY key is evaluated in parallel",
        "sharded": "sharded: shards of the window measure, overlapping by the window, run in parallel",
        "single": "single: one ordered task (the query's semantics do not allow splitting it)",
    }[plan_kind(query)]


@dataclass(frozen=True)
class _Job:
    """What a task needs (sent with it, so small and picklable)."""

    text: str
    declaration: str  # Schema.text()
    spec: OutputSpec
    sort_keys: tuple[str, ...]
    global_positions: bool
    max_matches: int | None
    sharded: bool = False


def matcher(query, declaration: Schema | str | None = None, **options: Any) -> Callable:
    """``find`` as a function of the DataFrame, for ``df.transform(matcher(query, ...))``."""

    def transform(df):
        return find(df, query, declaration, **options)

    return transform


def find(
    df,
    query,
    declaration: Schema | str | None = None,
    *,
    event_type: str = "event_type",
    time_column: str | None = None,
    time_unit: str | None = None,
    order_by: list[str] | str | None = None,
    tie_break: list[str] | str | None = None,
    id_columns: list[str] | None = None,
    with_events: bool = False,
    positions: bool = False,
    name: str = "query",
    shards: int | None = None,
    max_matches: int | None = None,
    allowed_lateness: str | None = None,
):
    """The complex events of ``query`` in the events of a Spark DataFrame, as a DataFrame.

    A lazy transformation: nothing runs until an action on the result. ``df`` has a string
    column with the event type (``event_type``) and the attributes the query reads. Without a
    ``declaration`` (CEQL text or a Schema) it is derived from ``df.schema``: each event type
    the query names has every column, ``time_column`` (in ``time_unit`` if integers) is the
    primary_time. Events are in the order of ``order_by`` (else the primary_time then
    ``tie_break``), then the input order. Each result row carries the ``id_columns`` of its
    events (``events`` and per label ``ids``; default: every column with ``with_events``, else
    the order columns), typed measure columns, and with ``positions=True`` the positions of the
    local engine (see docs/spark.md for the schema). A streaming DataFrame gives a streaming
    result (see ``ceql.spark.streaming``). With ``max_matches``, a task (a key's group, a shard
    or the whole stream) that finds more matches fails with LimitError as soon as it does.
    """
    compiled, df, settings = prepare_stream(
        df,
        query,
        declaration,
        event_type=event_type,
        time_column=time_column,
        time_unit=time_unit,
        order_by=order_by,
        tie_break=tie_break,
        id_columns=id_columns,
        with_events=with_events,
        name=name,
        allowed_lateness=allowed_lateness,
        max_matches=max_matches,
    )
    if df.isStreaming:
        from ceql.spark.streaming import find_streaming

        if order_by or positions or shards:
            raise CeqlError(
                "a stream is ordered by its primary_time and tie_break; order_by, positions and shards are for batch"
            )
        return find_streaming(df, compiled, **settings)
    order_by, tie_break, id_columns = _names(order_by), settings["tie_break"], settings["id_columns"]
    if settings["allowed_lateness"] is not None:
        raise CeqlError("allowed_lateness is for streaming DataFrames")
    if not id_columns:
        positions = True  # nothing else identifies the events of a match
    spec, out_schema = output_spec(compiled, df.schema, name=name, id_columns=id_columns, positions=positions)
    kind = plan_kind(compiled)
    facts = compiled.facts
    global_positions = positions or (facts.window_kind == "events" and kind != "single")
    keyed, sort_keys = _with_order_keys(df, compiled.checked.schema, order_by, tie_break)
    if global_positions and kind != "single":
        keyed = number_rows(keyed, sort_keys)
        sort_keys = (POS,)
    job = _Job(
        text=compiled.text,
        declaration=compiled.checked.schema.text(),
        spec=spec,
        sort_keys=tuple(sort_keys),
        global_positions=global_positions and kind != "single",
        max_matches=max_matches,
        sharded=kind == "sharded",
    )

    # Plain closures: Spark infers the kind of UDF from the function's signature.
    def evaluate_group(table):
        return _evaluate_group(table, job=job)

    def evaluate_stream(batches):
        return _evaluate_stream(batches, job=job)

    if kind == "partitioned":
        grouped, key_columns = _with_partition_keys(keyed, compiled)
        return grouped.groupBy(*key_columns).applyInArrow(evaluate_group, out_schema)
    if kind == "sharded":
        sharded = _with_shards(keyed, compiled, shards)
        return sharded.groupBy(SHARD).applyInArrow(evaluate_group, out_schema)
    single = keyed.repartition(1).sortWithinPartitions(*sort_keys)
    return single.mapInArrow(evaluate_stream, out_schema)


def prepare_stream(
    df,
    query,
    declaration: Schema | str | None = None,
    *,
    event_type: str = "event_type",
    time_column: str | None = None,
    time_unit: str | None = None,
    order_by: list[str] | str | None = None,
    tie_break: list[str] | str | None = None,
    id_columns: list[str] | None = None,
    with_events: bool = False,
    name: str = "query",
    allowed_lateness: str | None = None,
    max_matches: int | None = None,
):
    """What batch and streaming share: the compiled query, the DataFrame with an ``event_type``
    column, and the settings (``tie_break``, ``id_columns``, ...) checked against its columns."""
    import ceql

    order_by = _names(order_by)
    tie_break = _names(tie_break)
    if declaration is None and isinstance(query, ceql.Query):
        schema = query.checked.schema
    elif declaration is None:
        from pyspark.sql import functions as F

        schema = schema_from_dataframe(
            df, query, event_type=event_type, time_column=time_column, time_unit=time_unit
        )
        # The stream is the rows of the event types the query names (nothing declares others).
        df = df.where(F.col(event_type).isin(list(schema.event_types)))
    else:
        schema = declare(declaration)
        if time_column is not None:
            raise CeqlError(
                "time_column= is for a declaration derived from the DataFrame: declare a primary_time"
            )
    compiled = query if isinstance(query, ceql.Query) else ceql.compile(query, schema)
    check_columns(df, compiled.facts.catalog, event_type)
    for what, names in (("order_by", order_by), ("tie_break", tie_break), ("id_columns", id_columns or [])):
        unknown = [c for c in names if c not in df.columns]
        if unknown:
            raise CeqlError(
                f"{what} names no column of the DataFrame: {', '.join(unknown)} (columns: {', '.join(df.columns)})"
            )
    user_columns = list(df.columns)
    df = _with_event_type(df, event_type)
    if id_columns is None:
        if with_events:
            id_columns = user_columns
        else:
            id_columns = order_by or [c for c in [_time_column(compiled), *tie_break] if c is not None]
    settings = {
        "tie_break": tie_break,
        "id_columns": list(id_columns),
        "name": name,
        "allowed_lateness": allowed_lateness,
        "max_matches": max_matches,
        "user_columns": user_columns,
    }
    return compiled, df, settings


def _names(value: list[str] | str | None) -> list[str]:
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)


def _time_column(query) -> str | None:
    """The primary_time column when every event type uses the same one (an id column)."""
    columns = set(query.facts.time_attributes.values())
    return columns.pop() if len(columns) == 1 else None


def _with_event_type(df, event_type: str):
    """The evaluator reads the event type from ``event_type``: copy the user's column there."""
    from pyspark.sql import functions as F

    check_event_type_column(df, event_type)
    if event_type == "event_type":
        return df
    if "event_type" in df.columns:
        raise CeqlError(
            f"event_type={event_type!r}, but the DataFrame also has a column 'event_type': rename one"
        )
    return df.withColumn("event_type", F.col(event_type))


def time_ns(schema: Schema, df):
    """A Spark column with each row's primary_time in nanoseconds (null for types without one):
    integer columns scaled by their declared unit, timestamps, and ISO-8601 text (to the
    microsecond; equal microseconds keep the input order)."""
    from pyspark.sql import functions as F

    kinds = {f.name: f.dataType.typeName() for f in df.schema.fields}
    expression = None
    for type_name, decl in schema.event_types.items():
        attribute = decl.time_attribute
        if attribute is None or attribute not in kinds:
            continue
        kind = kinds[attribute]
        if kind in ("timestamp", "timestamp_ntz"):
            value = F.unix_micros(F.col(attribute).cast("timestamp")) * F.lit(1000)
        elif kind == "string":
            value = F.unix_micros(F.to_timestamp(F.col(attribute))) * F.lit(1000)
        else:
            unit = TIME_UNITS[decl.attribute(attribute).time_unit]
            value = F.col(attribute).cast("long") * F.lit(unit)
        condition = F.col("event_type") == type_name
        expression = F.when(condition, value) if expression is None else expression.when(condition, value)
    return expression


def _with_order_keys(df, schema: Schema, order_by: list[str], tie_break: list[str]):
    """The DataFrame with the columns that give the stream order, and their names."""
    from pyspark.sql import functions as F

    df = df.withColumn(SEQ, F.monotonically_increasing_id())  # the input order, as a tie-break
    if order_by:
        return df, [*order_by, SEQ]
    time = time_ns(schema, df)
    if time is None:
        return df, [*tie_break, SEQ]
    # Types without a time come first, as Spark sorts nulls (and the group sort must agree).
    time = F.coalesce(time, F.lit(-(2**63)))
    return df.withColumn(TIME, time), [TIME, *tie_break, SEQ]


def number_rows(df, sort_keys: list[str]):
    """``df`` with a global position ``__ceql_pos`` in the order of ``sort_keys``, lazily: a
    range sort, each partition's count, and a running sum of the counts as its offset."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    ordered = (
        df.orderBy(*sort_keys)
        .withColumn(_PID, F.spark_partition_id())
        .withColumn(_MID, F.monotonically_increasing_id().bitwiseAND(F.lit(_ROW_MASK)))
    )
    earlier = Window.orderBy(_PID).rowsBetween(Window.unboundedPreceding, -1)
    offsets = (
        ordered.groupBy(_PID)
        .count()
        .select(_PID, F.coalesce(F.sum("count").over(earlier), F.lit(0)).cast("long").alias(_OFFSET))
    )
    numbered = ordered.join(F.broadcast(offsets), _PID)
    return numbered.withColumn(POS, F.col(_OFFSET) + F.col(_MID)).drop(_PID, _MID, _OFFSET)


def _with_partition_keys(df, query):
    """One key column per PARTITION BY attribute position (per-type choice of attribute), and
    only the rows that belong to a sub-stream."""
    from pyspark.sql import functions as F

    facts = query.facts
    groups = facts.partition_groups
    same = len(set(groups)) == 1  # one attribute list for every type: group on the columns as they are
    columns = []
    for index in range(len(groups[0])):
        expression = None
        for type_name, group in facts.partition_types.items():
            branch = F.col(group[index]) if same else F.col(group[index]).cast("string")
            condition = F.col("event_type") == type_name
            expression = (
                F.when(condition, branch) if expression is None else expression.when(condition, branch)
            )
        key = f"{KEY}{index}"
        df = df.withColumn(key, expression)
        columns.append(key)
    condition = None
    for key in columns:
        term = F.col(key).isNotNull()
        condition = term if condition is None else (condition & term)
    return df.where(condition), columns


def _with_shards(df, query, shards: int | None):
    """Each row in the shard of its measure (its home) and in every later shard whose window
    reaches back to it. Whole-number measures use exact integer arithmetic; a row's home is
    computed once, so a shard's own triggers are decided by the same number Spark used."""
    from pyspark.sql import functions as F

    facts = query.facts
    schema = query.checked.schema
    if facts.window_kind == "events":
        measure, integral, slack = F.col(POS), True, 0
    elif facts.window_kind == "time":
        measure, integral = time_ns(schema, df), True
        slack = 2000 if any(k == "string" for _, k in df.dtypes) else 0  # ISO text: microseconds
    else:
        column = facts.window_attribute
        integral = dict(df.dtypes)[column] in ("bigint", "int", "smallint", "tinyint")
        measure, slack = F.col(column).cast("long" if integral else "double"), 0
    window = facts.window
    parallelism = shards or max(2, df.sparkSession.sparkContext.defaultParallelism * 2)
    df = df.withColumn("__ceql_m", measure)
    bounds = df.agg(F.min("__ceql_m").alias("__ceql_lo"), F.max("__ceql_m").alias("__ceql_hi"))
    if integral:
        span = F.ceil((F.col("__ceql_hi") - F.col("__ceql_lo") + 1) / F.lit(parallelism)).cast("long")
        size = F.greatest(F.lit(int(np.ceil(window))), span, F.lit(1))
        offset = F.col("__ceql_m") - F.col("__ceql_lo")
        home = F.floor(offset / size).cast("long")
        last = F.floor((offset + F.lit(int(np.ceil(window)) + slack)) / size).cast("long")
    else:
        span = (F.col("__ceql_hi") - F.col("__ceql_lo")) / F.lit(parallelism)
        size = F.greatest(F.lit(float(window)), span, F.lit(1e-9))
        offset = F.col("__ceql_m") - F.col("__ceql_lo")
        home = F.floor(offset / size).cast("long")
        last = F.floor((offset + F.lit(float(window)) * F.lit(1 + 1e-9)) / size + F.lit(1e-9)).cast("long")
    joined = df.crossJoin(F.broadcast(bounds))
    placed = joined.withColumn(HOME, home).withColumn("__ceql_last", last)
    return placed.withColumn(SHARD, F.explode(F.sequence(F.col(HOME), F.col("__ceql_last")))).drop(
        "__ceql_last", "__ceql_lo", "__ceql_hi", "__ceql_m"
    )


# ---------------------------------------------------------------------- on the workers


def _sorted(table: pa.Table, keys: tuple[str, ...]) -> pa.Table:
    return table.take(sort_order(table, keys))


def sort_order(table: pa.Table, keys) -> pa.Array:
    """Row order by ``keys``, nulls first as Spark sorts them."""
    try:  # pyarrow >= 25: null placement per key
        return pc.sort_indices(table, sort_keys=[(k, "ascending", "at_start") for k in keys])
    except (TypeError, ValueError):
        return pc.sort_indices(table, sort_keys=[(k, "ascending") for k in keys], null_placement="at_start")


def _evaluate_group(table: pa.Table, *, job: _Job) -> pa.Table:
    """Evaluate one group (a partition key, or a shard) in stream order."""
    table = _sorted(table, job.sort_keys)
    evaluator = _compiled(job.text, job.declaration).evaluator()
    collector = Collector(job.spec)
    first = collector.add_ids(table)
    positions = table.column(POS).to_numpy() if job.global_positions else None
    found: Iterator = evaluator.process_table(table, positions=positions, payload=lambda i: first + i)
    if job.sharded:  # a shard reports only the matches its own rows trigger
        shard = table.column(SHARD)[0].as_py()
        home = table.column(HOME).to_numpy()

        def row(trigger: int) -> int:
            return trigger if positions is None else int(np.searchsorted(positions, trigger))

        found = (item for item in found if home[row(item[0].trigger)] == shard)
    batches = []
    for match, rows in limit_matches(found, job.max_matches):
        collector.add(match, rows)
        if len(collector) >= _FLUSH_ROWS:
            batches.append(collector.flush())
    batches.append(collector.flush())
    return pa.Table.from_batches(batches, schema=job.spec.arrow_schema)


def _evaluate_stream(batches: Iterator[pa.RecordBatch], *, job: _Job) -> Iterator[pa.RecordBatch]:
    """The single plan: one task reads the whole stream in order; positions are its row count."""
    evaluator = _compiled(job.text, job.declaration).evaluator()
    collector = Collector(job.spec)

    def matches():
        for batch in batches:
            table = pa.Table.from_batches([batch])
            first = collector.add_ids(table)
            yield from evaluator.process_table(table, payload=lambda i, first=first: first + i)
        yield from evaluator.finish(detailed=True)  # the end of the input (NOT FOLLOWED BY)

    for match, rows in limit_matches(matches(), job.max_matches):
        collector.add(match, rows)
        if len(collector) >= _FLUSH_ROWS:
            yield collector.flush()
    if len(collector):
        yield collector.flush()
