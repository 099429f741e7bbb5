"""ceql on Spark DataFrames, batch: a lazy transformation, exact, parallel where the query allows.

Plans (``explain_plan`` says which one a query gets; docs/spark.md explains them):
- **partitioned**: PARTITION BY (and not CONSUME BY ANY, whose effect crosses keys): keys go to
  buckets by a hash, and each bucket's rows are sorted and evaluated by one evaluator, which
  keeps each key's sub-stream apart as the local engine does (``repartition(keys)`` then
  ``mapInArrow``: one Python call per bucket, not per key, and no sort in the JVM). NOT FOLLOWED BY too when that is exact
  (``absence_splits_by_key``): a key's deadlines are then passed by its own events and by the end
  of its rows, and the trigger the whole stream would give is found afterwards
  (``_global_triggers``). NOT FOLLOWED BY without PARTITION BY goes the same way when an
  equality links g to f's one event (``absence_routing``, from ``compile.plan.split_keys``):
  its keys are that equality's attributes, per event type;
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
import inspect
import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ceql.errors import CeqlError, EventError
from ceql.lang.schema import Schema
from ceql.runtime.limits import limit_matches
from ceql.spark.declare import check_columns, check_event_type_column, declare, schema_from_dataframe
from ceql.spark.order import POS, TIME, number_rows, row_count, row_label, time_ns, with_order_keys
from ceql.spark.output import Collector, OutputSpec, output_spec
from ceql.spark.rows import output_batch

SHARD = "__ceql_shard"
HOME = "__ceql_home"
KEY = "__ceql_key"
DEADLINE = "__ceql_deadline"  # NOT FOLLOWED BY split by key: each match's deadline, for its trigger
_FLUSH_ROWS = 10_000


@functools.lru_cache(maxsize=32)
def _compiled(query_text: str, declaration: str):
    """Compile once per Python worker (the query text and the declaration text, ``Schema.text``,
    are the cache key: plain text, never a pickle)."""
    import ceql

    return ceql.compile(query_text, ceql.declare(declaration))


def plan_kind(query) -> str:
    """Which batch plan a compiled query gets: partitioned (by PARTITION BY, or by NOT FOLLOWED
    BY's equality), sharded or single."""
    facts = query.facts
    if facts.partition_groups and facts.consume != "ANY" and (not facts.deadlines or absence_splits_by_key(query)):
        return "partitioned"
    if absence_routing(query) is not None:
        return "partitioned"
    if facts.shardable and _every_type_has_measure(query):
        return "sharded"
    return "single"


def absence_splits_by_key(query) -> bool:
    """Whether a NOT FOLLOWED BY query evaluated per PARTITION BY key reports what the whole
    stream reports (docs/semantics.md, 5.2). The complex events of f and the g that cancels
    them live in one key's sub-stream when g is partitioned like f (every event type either
    side names has the same key attributes). A deadline passes at the first event at or past
    it: in a key's sub-stream that is the first event of the key, which comes no earlier than
    the whole stream's; no event of the key lies between the two (the stream is in measure
    order), so no g of the key can cancel in between, and the complex events reported are the
    same. Only their grouping by trigger differs (several deadlines of a key may pass at one
    event of the key but at different events of the stream), so what acts on the complex events
    of one trigger must not depend on the group: the strategy keeps them all (ALL, or STRICT
    per complex event), no LIMIT, CONSUME BY NONE, and no projection (two complex events that
    project alike are one at a trigger). The trigger itself is recomputed afterwards."""
    plan = query.plan
    absence = getattr(plan, "absence", None)
    if absence is None:
        return True
    keyed = dict(plan.partition_types)
    if not keyed or plan.auto_partition or absence.auto_partition:
        return False
    # The event types either side names (others move no run and pass no deadline).
    named = set(query.checked.used_types) | set(getattr(query.checked, "absence", query.checked).used_types)
    cancelling = dict(absence.partition_types)
    if any(keyed.get(name) is None or cancelling.get(name) != keyed[name] for name in named):
        return False
    return plan.strategy in ("ALL", "STRICT") and plan.limit is None and _keeps_each_complex_event(plan)


def _keeps_each_complex_event(plan) -> bool:
    """Whether the complex events of one trigger are reported each on its own (CONSUME BY
    NONE, no projection that could make two of them one), so that grouping them by another
    trigger changes nothing."""
    projection = plan.projection
    return plan.consume == "NONE" and (projection is None or (projection.kind == "star" and not projection.items))


def absence_routing(query) -> dict[str, tuple[str, ...]] | None:
    """NOT FOLLOWED BY without PARTITION BY, split by the equality that links its cancelling
    events to f's one event (``Order AS o NOT FOLLOWED BY Payment AS p FILTER p.order = o.id``):
    event type -> the attributes of its key, as ``compile.plan.split_keys`` gives them (its
    contract: each key's sub-stream alone, to its end, gives that key's complex events and
    deadlines; an event whose key is missing is in the sub-stream of key None). None when the
    query has no such split. Every type the answer lacks takes part in no complex event."""
    from ceql.compile.plan import split_keys

    facts = query.facts
    if not facts.deadlines or facts.partition_groups:
        return None
    routing = split_keys(query.plan)
    if routing is None or not _keeps_each_complex_event(query.plan):
        return None
    return routing


def _every_type_has_measure(query) -> bool:
    """Shards are cut on the window measure, so every event (of any type) must have one."""
    facts = query.facts
    types = query.checked.schema.event_types.values()
    if facts.window_kind == "events":
        return True
    if facts.window_kind == "time":
        return all(d.time_attribute for d in types)
    return all(d.attribute(facts.window_attribute or "") is not None for d in types)


def explain_plan(
    query,
    declaration: Schema | str | None = None,
    df=None,
    *,
    event_type: str = "event_type",
    time_column: str | None = None,
    time_unit: str | None = None,
) -> str:
    """One line: the plan a query gets on Spark and why it is exact. ``query`` is a compiled
    query, or query text as ``find`` takes it: with its ``declaration``, or with the DataFrame
    ``df`` (and ``event_type``, ``time_column``, ``time_unit``) to derive one from."""
    import ceql

    if not isinstance(query, ceql.Query):
        if declaration is not None:
            query = ceql.compile(query, declare(declaration))
        elif df is not None:
            schema = schema_from_dataframe(df, query, event_type=event_type, time_column=time_column, time_unit=time_unit)
            query = ceql.compile(query, schema)
        else:
            raise CeqlError("explain_plan needs the declaration (or the DataFrame) to compile the query text")
    routing = absence_routing(query)
    if routing is not None:
        keys = ", ".join(f"{name} by [{', '.join(attributes)}]" for name, attributes in routing.items())
        return f"partitioned: NOT FOLLOWED BY's keys ({keys}) are evaluated in parallel"
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
    # The evaluator needs the stream positions (WITHIN n EVENTS on a part of the stream).
    positions_in_semantics: bool = False
    # NOT FOLLOWED BY on a part of the stream: the end of the part is the end of the input for
    # it, and with ``deadline_column`` each row carries its deadline (``DEADLINE``), from which
    # the trigger of the whole stream is found afterwards.
    deadlines: bool = False
    deadline_column: str | None = None  # the Arrow type name of ``DEADLINE`` (int64, double)

    @property
    def arrow_schema(self) -> pa.Schema:
        """The schema of the task's output (the output schema, and the deadlines if carried)."""
        schema = self.spec.arrow_schema
        if self.deadline_column:
            schema = schema.append(pa.field(DEADLINE, pa.type_for_alias(self.deadline_column)))
        return schema

    @property
    def whole_tables(self) -> bool:
        """Whether a task evaluates its rows at once into an Arrow table (``Evaluator.arrow``:
        the compiled kernel where it runs the query, no Python object per match); else match
        by match (``process_table``: given positions, or stopping at ``max_matches``)."""
        return not self.positions_in_semantics and not self.max_matches


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
    positions: bool = False,
    shards: int | None = None,
    layout: str = "nested",
    late: str = "fail",
    on_error: str = "fail",
    dead_letter: Callable[[Any], Any] | None = None,
    **options: Any,
):
    """The complex events of ``query`` in the events of a Spark DataFrame, as a DataFrame.

    ``options`` are those of ``prepare_stream`` (``event_type``, ``time_column``, ``time_unit``,
    ``order_by``, ``tie_break``, ``id_columns``, ``with_events``, ``name``, ``max_matches``,
    ``allowed_lateness``). A lazy transformation: nothing runs until an action on the result. ``df`` has a string
    column with the event type (``event_type``) and the attributes the query reads. Without a
    ``declaration`` (CEQL text or a Schema) it is derived from ``df.schema``: each event type
    the query names has every column, ``time_column`` (in ``time_unit`` if integers) is the
    primary_time. Events are in the order of ``order_by`` (else the primary_time then
    ``tie_break``), then the input order. Each result row carries the ``id_columns`` of its
    events (``events`` and per label ``ids``; default: every column with ``with_events``, else
    the order columns), typed measure columns, and with ``positions=True`` the positions of the
    local engine (see docs/spark.md for the schema). A streaming DataFrame gives a streaming
    result (see ``ceql.spark.streaming``; ``late="rows"`` gives late events as rows of their
    own instead of stopping the query). With ``max_matches``, a task (a bucket of keys, a shard
    or the whole stream) that finds more matches fails with LimitError as soon as it does.
    ``on_error`` is the local engine's bad-row policy: "fail" (a bad row fails the job, naming
    it), "skip" (the rows the local engine rejects are left out before the events are ordered),
    "dead-letter" (also ``dead_letter(rejected)``, called once with the lazy DataFrame of their
    records: ``source``, ``reason``, ``input``); see ``spark/bad_rows.py``. ``layout="flat"``
    (batch): no struct or list column (``ceql.spark.output.flat_batch``: ``partition_<key>``,
    ``events`` and ``ids_<label>`` as text), which Spark converts and writes more cheaply.
    """
    unknown = sorted(set(options) - set(_STREAM_OPTIONS))
    if unknown:
        raise TypeError(f"find() got an unexpected keyword argument {unknown[0]!r}")
    compiled, df, settings = prepare_stream(df, query, declaration, **options)
    order_by = options.get("order_by")
    if df.isStreaming:
        from ceql.spark.streaming import find_streaming

        if order_by or positions or shards or on_error != "fail" or layout != "nested":
            raise CeqlError(
                "a stream is ordered by its primary_time and tie_break; order_by, positions, shards, "
                "on_error and layout are for batch"
            )
        return find_streaming(df, compiled, late=late, **settings)
    if settings["allowed_lateness"] is not None or late != "fail":
        raise CeqlError("allowed_lateness and late are for streaming DataFrames")
    from ceql.spark.bad_rows import split_bad_rows

    df = split_bad_rows(df, compiled, on_error, dead_letter)
    return plan_batch(
        df, compiled, settings, order_by=_names(order_by), positions=positions, shards=shards, layout=layout
    )


def plan_batch(
    df,
    compiled,
    settings: dict,
    *,
    order_by: list[str],
    positions: bool,
    shards: int | None = None,
    numbered: bool = False,
    layout: str = "nested",
):
    """The batch plan of ``find`` on a prepared DataFrame (``prepare_stream``). With
    ``numbered``, ``order_by`` is one column that already holds each row's position (0, 1, ...
    in stream order; the CLI's orderer numbers the events so). ``layout``: of the result rows
    (``output_spec``)."""
    from pyspark.sql import functions as F

    tie_break, id_columns, max_matches = settings["tie_break"], settings["id_columns"], settings["max_matches"]
    if not id_columns:
        positions = True  # nothing else identifies the events
    spec, out_schema = output_spec(
        compiled, df.schema, name=settings["name"], id_columns=id_columns, positions=positions, layout=layout
    )
    kind = plan_kind(compiled)
    global_positions = kind != "single" and (positions or compiled.facts.window_kind == "events")
    shown = id_columns or settings["user_columns"]
    counted = df
    if numbered:
        (column,) = order_by
        keyed, sort_keys = df.withColumn(POS, F.col(column)), [POS]
    else:
        keyed, sort_keys, bucket_key = with_order_keys(
            df, compiled.checked.schema, order_by, tie_break, row_label(shown)
        )
        if global_positions:
            buckets = int(df.sparkSession.conf.get("spark.sql.shuffle.partitions") or 8)
            keyed = number_rows(keyed, sort_keys, bucket_key, buckets)
            sort_keys = [POS]
    split_deadlines = kind == "partitioned" and compiled.facts.deadlines
    # A key's deadlines pass at its own events: with triggers shown, find the stream's afterwards.
    fix_triggers = split_deadlines and global_positions
    task_schema = out_schema
    if fix_triggers:
        from pyspark.sql import types as T

        task_schema = T.StructType([*out_schema.fields, T.StructField(DEADLINE, _deadline_type(compiled, df))])
    job = _Job(
        text=compiled.text,
        declaration=compiled.checked.schema.text(),
        spec=spec,
        sort_keys=tuple(sort_keys),
        global_positions=global_positions,
        max_matches=max_matches,
        sharded=kind == "sharded",
        positions_in_semantics=global_positions and compiled.facts.window_kind == "events",
        deadlines=split_deadlines,
        deadline_column=_deadline_type(compiled, df).typeName().replace("long", "int64") if fix_triggers else None,
    )

    # Plain closures: Spark infers the kind of UDF from the function's signature.
    def evaluate_group(table):
        return _evaluate_group(table, job=job)

    def evaluate_stream(batches):
        return _evaluate_stream(batches, job=job)

    def evaluate_partition(batches):
        return _evaluate_partition(batches, job=job)

    # Only what the tasks read travels: the query's columns, ids, order and plan columns.
    schema = compiled.checked.schema
    times = [d.time_attribute for d in schema.event_types.values() if d.time_attribute]
    # Every declared column travels: the evaluator checks each (one reading rule on every path).
    declared = [a.name for d in schema.event_types.values() for a in d.attributes]
    wanted = ["event_type", *sorted(compiled.facts.catalog.required), *times, *declared, *id_columns, *sort_keys]
    if compiled.facts.window_attribute:
        wanted.append(compiled.facts.window_attribute)
    timeline = keyed
    keyed = keyed.select(*[f"`{c}`" for c in dict.fromkeys(wanted) if c in keyed.columns])
    if kind == "partitioned":
        routing = absence_routing(compiled)
        if routing is not None:
            grouped, key_columns = _with_routing_keys(keyed, routing)
        else:
            grouped, key_columns = _with_partition_keys(keyed, compiled, reuse=True)
        # Keys hashed into buckets (the exchange's partitions), one evaluator per bucket running
        # PARTITION BY inside it: the local engine restricted to the bucket's keys (every event
        # of a key is in its bucket), with a Python call and a sort per bucket rather than per
        # key. mapInArrow over the exchange, not groupBy(bucket).applyInArrow: that would also
        # sort every row by its bucket in the JVM, which the task's own sort makes needless.
        # No number of partitions: the shuffle partitions, which adaptive execution may merge
        # for small inputs (a merged partition still holds whole keys).
        spread = grouped.repartition(*[F.col(f"`{c}`") for c in key_columns])
        found = spread.mapInArrow(evaluate_partition, task_schema)
        if fix_triggers:
            return _global_triggers(found, timeline, compiled, counted, out_schema)
        return found
    if kind == "sharded":
        sharded = _with_shards(keyed, compiled, shards, counted)
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
    column, and the settings (``tie_break``, ``id_columns``, ...) checked against its columns.
    Its keyword options are ``find``'s (see its docstring)."""
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
        if not df.isStreaming:
            check_types_present(df, event_type, list(schema.event_types))
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


#: The keyword options ``find`` passes on to ``prepare_stream``.
_STREAM_OPTIONS = tuple(inspect.signature(prepare_stream).parameters)[3:]


def check_types_present(df, event_type: str, names: list[str]) -> None:
    """Without a declaration nothing says which event types exist: a misspelt one (``PURCHSE``)
    would match nothing. So each type the query names must occur in the data, as the CLI
    refuses a type its declaration lacks. One small job: per type, each input partition is read
    up to its first row of that type (a type that is there is found at once; only a missing one
    costs a whole scan, and then the error names a few of the types the data has)."""
    from functools import reduce

    from pyspark.sql import functions as F

    column = F.col(f"`{event_type}`")
    probes = [df.where(column == F.lit(name)).select(F.lit(name).alias("t")).limit(1) for name in names]
    found = {row["t"] for row in reduce(lambda a, b: a.unionAll(b), probes).collect()}
    missing = [name for name in names if name not in found]
    if missing:
        some = sorted(str(row[0]) for row in df.select(column).distinct().limit(20).collect())
        import difflib

        hints = []
        for name in missing:
            close = difflib.get_close_matches(name, some, 1)
            hints.append(f"{name} (did you mean {close[0]}?)" if close else name)
        raise CeqlError(
            f"the query names event type{'s' if len(missing) > 1 else ''} {', '.join(hints)}, which no row of the "
            f"DataFrame has in {event_type!r} (it has: {', '.join(some) or 'no rows'}); pass a declaration to "
            "declare event types the data may lack"
        )


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


def _with_partition_keys(df, query, reuse: bool = False):
    """One key column per PARTITION BY attribute position (per-type choice of attribute), and
    only the rows that belong to a sub-stream. With ``reuse``, when every event type is keyed
    by the same attributes, those columns themselves (no copies to shuffle)."""
    from pyspark.sql import functions as F

    facts = query.facts
    groups = facts.partition_groups
    same = len(set(groups)) == 1  # one attribute list for every type: group on the columns as they are
    if reuse and same and set(facts.partition_types) == set(query.checked.schema.event_types):
        condition = None
        for name in groups[0]:
            term = F.col(name).isNotNull()
            condition = term if condition is None else (condition & term)
        return df.where(condition), list(groups[0])
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


def _with_routing_keys(df, routing: dict[str, tuple[str, ...]]):
    """One key column per position of ``routing``'s attributes (``absence_routing``), and only
    the rows of its event types. Rows whose key is missing stay (the sub-stream of key None:
    an f that nothing can cancel is still reported). Equal values must hash alike whatever
    their columns' types, so each key is brought to one type: integers to long, numbers of
    mixed kinds to double (with -0.0 as 0.0), else one type as is, or text. Values that differ
    may still share a bucket: a bucket is a union of whole sub-streams, which is exact."""
    from pyspark.sql import functions as F

    types = dict(df.dtypes)
    width = len(next(iter(routing.values())))
    columns = []
    for index in range(width):
        kinds = {types[attributes[index]] for attributes in routing.values()}
        if kinds <= set(_INTEGRAL) | {"boolean"}:
            cast = "bigint"
        elif all(k in (*_INTEGRAL, "boolean", "float", "double") or k.startswith("decimal") for k in kinds):
            cast = "double"
        else:
            cast = kinds.pop() if len(kinds) == 1 else "string"
        expression = None
        for type_name, attributes in routing.items():
            branch = F.col(f"`{attributes[index]}`").cast(cast)
            if cast == "double":
                branch = F.when(branch == F.lit(0.0), F.lit(0.0)).otherwise(branch)
            condition = F.col("event_type") == type_name
            expression = F.when(condition, branch) if expression is None else expression.when(condition, branch)
        key = f"{KEY}{index}"
        df = df.withColumn(key, expression)
        columns.append(key)
    return df.where(F.col("event_type").isin(list(routing))), columns


def _deadline_type(query, df):
    """The Spark type of NOT FOLLOWED BY's deadlines: positions and nanoseconds are longs, an
    attribute window's deadlines have the attribute's kind."""
    from pyspark.sql import types as T

    facts = query.facts
    if facts.window_kind == "attribute" and dict(df.dtypes).get(facts.window_attribute or "") not in _INTEGRAL:
        return T.DoubleType()
    return T.LongType()


_INTEGRAL = ("bigint", "int", "smallint", "tinyint")
_M, _AT, _B, _FIRST, _LATER, _TOTAL, _LO, _HI = (
    "__ceql_m",
    "__ceql_at",
    "__ceql_b",
    "__ceql_first",
    "__ceql_later",
    "__ceql_total",
    "__ceql_lo",
    "__ceql_hi",
)


def _global_triggers(found, events, query, counted, out_schema):
    """The triggers of NOT FOLLOWED BY matches found per key, as the whole stream gives them
    (docs/semantics.md, 5.2): a deadline d passes at the first event of the stream whose
    measure is at or past d (with ``n EVENTS``: position d; with a time or attribute window: an
    event of a type the query names), else at the end of the input (the number of events).

    Lazily and in parallel: the named events' (measure, position) and the matches' deadlines go
    to buckets by a monotone function of the value (as ``number_rows`` cuts the stream); in its
    bucket each deadline finds the first position at or past it, else it takes the first
    position of the next bucket that has events, else the end."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    facts = query.facts
    total = row_count(counted).select(F.col("__ceql_count").alias(_TOTAL))
    columns = [F.col(f"`{f.name}`") for f in out_schema.fields]
    if facts.window_kind == "events":  # the event at position d, if there is one
        fixed = found.crossJoin(F.broadcast(total)).withColumn("trigger", F.least(F.col(DEADLINE), F.col(_TOTAL)))
        return fixed.select(*columns)
    named = sorted(query.plan.absence.time_attributes)
    if facts.window_kind == "time":
        measure = time_ns(query.checked.schema, events)
    else:
        measure = F.col(f"`{facts.window_attribute}`")
    line = (
        events.where(F.col("event_type").isin(named))
        .select(measure.alias(_M), F.col(POS).alias(_AT))
        .where(F.col(_M).isNotNull())
    )
    bounds = line.agg(F.min(_M).alias(_LO), F.max(_M).alias(_HI))
    buckets = int(events.sparkSession.conf.get("spark.sql.shuffle.partitions") or 8)

    def bucket(value):
        # Monotone in the value (each double operation rounds monotonically): a value at or
        # past d is in d's bucket or a later one.
        share = (value.cast("double") - F.col(_LO).cast("double")) / (
            F.col(_HI).cast("double") - F.col(_LO).cast("double") + F.lit(1.0)
        )
        return F.least(F.greatest(F.floor(share * F.lit(buckets)), F.lit(0)), F.lit(buckets - 1)).cast("int")

    line = line.crossJoin(F.broadcast(bounds)).withColumn(_B, bucket(F.col(_M))).drop(_LO, _HI)
    placed = found.crossJoin(F.broadcast(bounds)).withColumn(_B, bucket(F.col(DEADLINE))).drop(_LO, _HI)
    firsts = line.groupBy(_B).agg(F.min(_AT).alias(_FIRST))
    # Per bucket, the first position of the later buckets (a few hundred rows at most).
    later = (
        firsts.select(F.col(_B).alias("__ceql_b0"))
        .join(firsts, F.col(_B) > F.col("__ceql_b0"))
        .groupBy("__ceql_b0")
        .agg(F.min(_FIRST).alias(_LATER))
        .withColumnRenamed("__ceql_b0", _B)
    )
    with_at = T.StructType([*placed.schema.fields, T.StructField(_AT, T.LongType())])
    matched = placed.groupBy(_B).cogroup(line.groupBy(_B)).applyInArrow(_first_at_or_after, with_at)
    fixed = matched.join(F.broadcast(later), _B, "left").crossJoin(F.broadcast(total))
    fixed = fixed.withColumn("trigger", F.coalesce(F.col(_AT), F.col(_LATER), F.col(_TOTAL)))
    return fixed.select(*columns)


def _first_at_or_after(found: pa.Table, line: pa.Table) -> pa.Table:
    """On a worker, one bucket: for each match's deadline, the least position among the events
    whose measure is at or past it (null when none in the bucket)."""
    if not found.num_rows:
        return found.append_column(_AT, pa.array([], pa.int64()))
    measures = line.column(_M).to_numpy(zero_copy_only=False)
    order = np.argsort(measures, kind="stable")
    measures = measures[order]
    at = line.column(_AT).to_numpy(zero_copy_only=False)[order]
    # The least position from each index on (no assumption that positions follow measures).
    least = np.minimum.accumulate(at[::-1])[::-1] if len(at) else at
    deadlines = found.column(DEADLINE).to_numpy(zero_copy_only=False)
    index = np.searchsorted(measures, deadlines, side="left")
    hit = index < len(measures)
    values = least[np.minimum(index, max(len(least) - 1, 0))] if len(least) else np.zeros(len(index), np.int64)
    return found.append_column(_AT, pa.array(np.where(hit, values, 0).astype(np.int64), mask=~hit))


def _with_shards(df, query, shards: int | None, unnumbered=None):
    """Each row in the shard of its measure (its home) and in every later shard whose window
    reaches back to it. Whole-number measures use exact integer arithmetic; a row's home is
    computed once, so a shard's own triggers are decided by the same number Spark used. The
    bounds of the measure come from an aggregate over the rows' values (for positions: 0 and
    the number of rows of ``unnumbered``), so they are the same however Spark splits the data."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    facts = query.facts
    schema = query.checked.schema
    if facts.window_kind == "events":
        measure, integral, slack = F.col(POS), True, 0
        bounds = row_count(unnumbered if unnumbered is not None else df).select(
            F.lit(0).cast("long").alias("__ceql_lo"), (F.col("__ceql_count") - F.lit(1)).alias("__ceql_hi")
        )
    else:
        if facts.window_kind == "time":
            measure, integral = time_ns(schema, df), True
            slack = 2000 if any(k == "string" for _, k in df.dtypes) else 0  # ISO text: microseconds
        else:
            column = facts.window_attribute
            integral = dict(df.dtypes)[column] in ("bigint", "int", "smallint", "tinyint")
            measure, slack = F.col(column).cast("long" if integral else "double"), 0
        bounds = df.select(measure.alias("__ceql_m")).agg(
            F.min("__ceql_m").alias("__ceql_lo"), F.max("__ceql_m").alias("__ceql_hi")
        )
    window = facts.window
    parallelism = shards or max(2, df.sparkSession.sparkContext.defaultParallelism * 2)
    df = df.withColumn("__ceql_m", measure)
    if integral:
        # In decimal(38, 0): measures span all of int64, so hi - lo and offset + window do not
        # fit a long; every division below is of a multiple, hence exact.
        exact = T.DecimalType(38, 0)
        lo, hi, m = (F.col(c).cast(exact) for c in ("__ceql_lo", "__ceql_hi", "__ceql_m"))
        width = hi - lo + F.lit(parallelism)
        span = (width - width % F.lit(parallelism)) / F.lit(parallelism)  # ceil((hi - lo + 1) / parallelism)
        size = F.greatest(F.lit(int(np.ceil(window))).cast(exact), span.cast(exact), F.lit(1).cast(exact))
        offset = m - lo
        reach = offset + F.lit(int(np.ceil(window)) + slack).cast(exact)
        home = ((offset - offset % size) / size).cast("long")
        last = ((reach - reach % size) / size).cast("long")
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
    query = _compiled(job.text, job.declaration)
    positions = table.column(POS).to_numpy() if job.global_positions else None
    try:
        return _evaluate_rows(table, query, job, positions)
    except EventError as exc:  # named by its id columns too
        rows = np.arange(table.num_rows) if positions is None else positions
        raise _naming_the_event(exc, table, job, int(np.searchsorted(rows, exc.row or 0))) from None


def _evaluate_partition(batches: Iterator[pa.RecordBatch], *, job: _Job) -> Iterator[pa.RecordBatch]:
    """One task of the partitioned plan: its rows are whole key sub-streams (the exchange hashes
    the keys), evaluated at once in stream order as one bucket."""
    return whole_task(batches, lambda table: _evaluate_group(table, job=job))


def whole_task(
    batches: Iterator[pa.RecordBatch], evaluate: Callable[[pa.Table], pa.Table]
) -> Iterator[pa.RecordBatch]:
    """A ``mapInArrow`` task whose rows are whole groups (keys hashed into the exchange's
    partitions, or the whole input): ``evaluate`` of all its rows at once, as batches of at
    most ``_FLUSH_ROWS`` rows; nothing for a task without rows (``find`` and
    ``ceql.spark.sql`` share it)."""
    received = [batch for batch in batches if batch.num_rows]
    if received:
        yield from evaluate(pa.Table.from_batches(received)).to_batches(max_chunksize=_FLUSH_ROWS)


def _check_times(table: pa.Table, base: int, positions: np.ndarray | None = None) -> None:
    """The stream is in primary_time order: an event of a type with a time but without a value
    has no place in it (Query.run, which takes the input order, keeps it where it is)."""
    if TIME in table.column_names and table.column(TIME).null_count:
        index = int(pc.index(table.column(TIME).is_null(), True).as_py())
        row = base + index if positions is None else int(positions[index])
        raise EventError(
            "missing time value: find() puts the events in primary_time order (give it a time, or order "
            "the stream with order_by=)",
            row,
        )


def _evaluate_rows(table: pa.Table, query, job: _Job, positions: np.ndarray | None) -> pa.Table:
    _check_times(table, 0, positions)
    if job.whole_tables:
        return pa.Table.from_batches(list(_column_rows(table, query, job, positions)), schema=job.arrow_schema)
    evaluator = query.evaluator()
    collector = Collector(job.spec)
    first = collector.add_ids(table)
    found: Iterator = evaluator.process_table(_events(table, query), positions=positions, payload=lambda i: first + i)
    if job.deadlines:  # the key's rows end here: NOT FOLLOWED BY reports what is still due
        found = itertools.chain(found, _later(lambda: evaluator.finish(detailed=True)))
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
            batches.append(_flush(collector, job))
    batches.append(_flush(collector, job))
    return pa.Table.from_batches(batches, schema=job.arrow_schema)


def _later(make: Callable[[], Any]) -> Iterator:
    """The items of ``make()``, called only once they are asked for."""
    yield from make()


def _flush(collector: Collector, job: _Job) -> pa.RecordBatch:
    """The collected rows, with their deadlines when the job carries them."""
    deadlines = [match.deadline for match in collector.matches] if job.deadline_column else None
    batch = collector.flush()
    return _with_deadlines(batch, deadlines, job) if deadlines is not None else batch


def _with_deadlines(batch: pa.RecordBatch, deadlines, job: _Job) -> pa.RecordBatch:
    """``batch`` with the ``DEADLINE`` column, in the job's type."""
    values = list(deadlines) if deadlines is not None else []
    if len(values) != batch.num_rows:
        raise CeqlError("internal: NOT FOLLOWED BY matches without their deadlines")
    column = pa.array(values).cast(job.arrow_schema.field(DEADLINE).type)
    return pa.RecordBatch.from_arrays([*batch.columns, column], schema=job.arrow_schema)


def _naming_the_event(exc: EventError, table: pa.Table, job: _Job, index: int) -> EventError:
    """A bad event on a worker, named by its stream position and its id columns, or else its
    values (the rows of a DataFrame have no other name)."""
    names = [c for c in job.spec.id_columns if c in table.column_names] or [
        c for c in table.column_names if not c.startswith("__ceql")
    ]
    if names and 0 <= index < table.num_rows:
        ids = ", ".join(f"{c}={table.column(c)[index].as_py()!r}" for c in names)
        return EventError(f"{exc.reason} (the event with {ids})", exc.row)
    return exc


def _column_rows(table: pa.Table, query, job: _Job, positions: np.ndarray | None = None) -> Iterator[pa.RecordBatch]:
    """The rows of a task's matches, from the engine's columns (``Evaluator.columns``: the
    compiled kernel where it runs the query, no Python object per match). A shard keeps only
    the matches its own rows trigger."""
    ids = _ids(table, job.spec)
    home = table.column(HOME).to_numpy() if job.sharded else None
    shard = table.column(SHARD)[0].as_py() if job.sharded else None
    if job.deadlines and positions is not None and len(positions):
        # A trigger at the end of a key's rows is one past them (the stream's is found later).
        positions = np.append(positions, positions[-1] + 1)
    # A whole stream or a key's rows (not a shard) end here: NOT FOLLOWED BY reports what is due.
    for found in query.evaluator().columns(_events(table, query), finish=not job.sharded):
        batch = output_batch(found, job.spec, ids, positions)
        if job.deadline_column:
            batch = _with_deadlines(batch, found.deadline, job)
        if home is not None:
            batch = batch.filter(pa.array(home[np.asarray(found.trigger, dtype=np.int64)] == shard))
        yield batch


def _events(table: pa.Table, query) -> pa.Table:
    """The declared columns, which the evaluator types and checks (the query's) or checks
    only (the others); undeclared ones stay out (the evaluator would warn about each, in
    every task)."""
    declared = query.facts.catalog.declared_names
    return table.select([c for c in table.column_names if c == "event_type" or c in declared])


def _ids(table: pa.Table, spec: OutputSpec) -> pa.Table | None:
    return table.select(list(spec.id_columns)) if spec.has_ids else None


def _evaluate_stream(batches: Iterator[pa.RecordBatch], *, job: _Job) -> Iterator[pa.RecordBatch]:
    """The single plan: one task reads the whole stream in order; positions are its row count."""
    if job.whole_tables:
        received = list(batches)
        if not received:
            return
        table = pa.Table.from_batches(received)
        query = _compiled(job.text, job.declaration)
        try:
            _check_times(table, 0)
            for batch in _column_rows(table, query, job):
                yield from pa.Table.from_batches([batch]).to_batches(max_chunksize=_FLUSH_ROWS)
        except EventError as exc:
            raise _naming_the_event(exc, table, job, exc.row or 0) from None
        return
    query = _compiled(job.text, job.declaration)
    evaluator = query.evaluator()
    collector = Collector(job.spec)

    def matches():
        for batch in batches:
            table = pa.Table.from_batches([batch])
            first = collector.add_ids(table)
            start = evaluator.position
            try:
                _check_times(table, start)
                yield from evaluator.process_table(_events(table, query), payload=lambda i, first=first: first + i)
            except EventError as exc:
                raise _naming_the_event(exc, table, job, (exc.row or 0) - start) from None
        yield from evaluator.finish(detailed=True)  # the end of the input (NOT FOLLOWED BY)

    for match, rows in limit_matches(matches(), job.max_matches):
        collector.add(match, rows)
        if len(collector) >= _FLUSH_ROWS:
            yield collector.flush()
    if len(collector):
        yield collector.flush()
