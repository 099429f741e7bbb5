"""ceql on Spark Structured Streaming (``transformWithStateInPandas``, one key per PARTITION BY
value, or one key for the whole stream).

Order. The stream order is (primary_time, ``tie_break``): a column the source already has that
orders events with equal times (an event id, or Kafka's partition and offset, used by default
when the input has them). No global sequence number is needed: matches identify their events by
their id columns. A key's events are buffered in state and released to the evaluator in that
order once a later time of the key (by more than the allowed lateness) has been seen, or the
event-time watermark (the latest time of the stream minus the allowed lateness) passes them,
so every event that is not late is evaluated in its place. Releasing on the key's own latest
time evaluates most events in the micro-batch that brings them (the watermark lags a batch).

End of input. The watermark of a micro-batch is the latest time seen before it, so a finished
input (``trigger(availableNow=True)``, or a file source with no new files) gets one more
micro-batch in which the watermark reaches the last time: with no allowed lateness, the matches
of the last instant come out too. With an allowed lateness L, the events of the last L of event
time wait for a later event (they might still be overtaken).

Late events. An event is late when an event of its key that comes after it in the stream order
was already evaluated (it arrived after later times of its key had been seen). It cannot take its
place any more; it is never mixed into the matches: ``find`` on a stream fails with an error
naming it, and ``write_stream`` writes it to its own output (``late_path``) with the columns it
came with.

Restarts. State, timers and the output commit together in Spark's checkpoint: a query
restarted from its checkpoint (after a crash or a kill) loses and duplicates nothing.
``write_stream`` writes each micro-batch's matches and late events to directories named after
the batch id, replaced when Spark replays a batch, so its outputs are exactly-once as well.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ceql.errors import CeqlError, LimitError
from ceql.lang.schema import Schema
from ceql.spark.batch import _compiled, sort_order
from ceql.spark.order import row_label, time_ns
from ceql.spark.output import Collector, OutputSpec, output_spec, plain_rows

# transformWithStateInPandas renames columns that start with underscores: plain names here.
TIME = "ceql_time_ns"
MILLIS = "ceql_time_ms"
TS = "ceql_event_time"
KEY = "ceql_key"
LATE = "late"
KAFKA_ORDER = ["partition", "offset"]


class LateEventError(CeqlError):
    """An event of a stream arrived after events that come after it had been evaluated."""


def input_table(rows: Iterator[pd.DataFrame], columns: list[str], schema: pa.Schema) -> pa.Table | None:
    """A key's rows of one micro-batch (the state processor's pandas frames) as one Arrow table
    of ``columns`` in ``schema``; None when there are none."""
    frames = [frame for frame in rows if len(frame)]
    if not frames:
        return None
    frame = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    return pa.Table.from_pandas(frame[columns], schema=schema, preserve_index=False)


def _at_most(found: Iterator, limit: int | None) -> Iterator:
    """The items of ``found``, failing with LimitError past ``limit`` (None: no limit)."""
    for count, item in enumerate(found, 1):
        if limit and count > limit:
            raise LimitError(f"more than {limit} matches in one micro-batch of one key")
        yield item


def _processor_class():
    from pyspark.sql.streaming import StatefulProcessor

    class CeqlProcessor(StatefulProcessor):
        """Buffers a key's events and evaluates them in stream order as the watermark passes."""

        def __init__(self, setup: dict[str, Any]) -> None:
            self.setup = setup

        def init(self, handle) -> None:
            self.handle = handle
            self.state = handle.getValueState("ceql", _state_schema())

        # -- state, stored in the checkpoint as data (never a pickle): the buffered events and
        # the last evaluated event's order key as Arrow IPC, the evaluator's own state format,
        # the timers as longs.
        def _load(self) -> dict[str, Any]:
            if not self.state.exists():
                return {"buffer": None, "evaluator": None, "frontier": None, "timers": []}
            buffer, evaluator, frontier, timers = self.state.get()
            return {
                "buffer": _bytes(buffer),
                "evaluator": _bytes(evaluator),
                "frontier": _bytes(frontier),
                "timers": [int(t) for t in timers or ()],
            }

        def _save(self, data: dict[str, Any]) -> None:
            self.state.update((data["buffer"], data["evaluator"], data["frontier"], data["timers"]))

        def handleInputRows(self, key, rows, timerValues) -> Iterator[pd.DataFrame]:
            setup = self.setup
            table = input_table(rows, setup["columns"], setup["input_schema"])
            if table is None:
                return iter([])
            data = self._load()
            order = _order(table, setup["order"])
            table = table.take(pa.array(order))
            late_mask = _behind(table, setup["order"], _frontier_key(data["frontier"]))
            outputs = []
            if late_mask.any():
                late = table.filter(pa.array(late_mask))
                if setup["late"] == "fail":
                    first = late.slice(0, 1).to_pylist()[0]
                    shown = {k: v for k, v in first.items() if k in setup["user_columns"]}
                    raise LateEventError(
                        f"late event {shown}: events after it in (time, tie-break) order were already "
                        "evaluated; allow lateness (allowed_lateness=...) or write late events to their "
                        "own output with ceql.spark.write_stream(..., late_path=...)"
                    )
                outputs.append(_late_frame(late, setup))
                table = table.filter(pa.array(~late_mask))
            buffered = _read_ipc(data["buffer"])
            table = pa.concat_tables([buffered, table]) if buffered is not None else table
            # The key's events before its latest instant (minus the allowed lateness) can go now:
            # an event behind that instant arriving later is late anyway, so waiting for Spark's
            # watermark (a micro-batch behind) would only keep everything in state a batch longer.
            watermark = timerValues.getCurrentWatermarkInMs()
            if table.num_rows:
                own = int(pc.max(table.column(MILLIS)).as_py()) - setup["delay_ms"]
                watermark = max(watermark, own)
            outputs.extend(self._release(data, watermark, table))
            self._save(data)
            return iter(outputs)

        def handleExpiredTimer(self, key, timerValues, expiredTimerInfo) -> Iterator[pd.DataFrame]:
            data = self._load()
            fired = expiredTimerInfo.getExpiryTimeInMs()
            data["timers"] = [t for t in data["timers"] if t != fired]
            outputs = self._release(data, timerValues.getCurrentWatermarkInMs())
            self._save(data)
            return iter(outputs)

        def _release(self, data: dict[str, Any], watermark: int, table: pa.Table | None = None) -> list[pd.DataFrame]:
            """Evaluate the buffered events (``table``, else those in the state) the watermark
            has passed, in order; keep the others and set a timer for the next one."""
            setup = self.setup
            table = _read_ipc(data["buffer"]) if table is None else table
            if table is None or not table.num_rows:
                return self._deadlines(data, watermark)
            millis = table.column(MILLIS).to_numpy()
            ready = millis + 1 <= watermark  # event times are shifted by 1 ms, like the watermark
            outputs = []
            if ready.any():
                now = table.filter(pa.array(ready))
                rest = table.filter(pa.array(~ready))
                now = now.take(pa.array(_order(now, setup["order"])))
                outputs = self._evaluate(data, now)
                # The last evaluated event's (time, tie-break) key, typed as the input has it.
                data["frontier"] = _write_ipc(now.slice(now.num_rows - 1, 1).select(setup["order"]))
                table = rest
            data["buffer"] = _write_ipc(table) if table.num_rows else None
            if table.num_rows:
                due = int(table.column(MILLIS).to_numpy().min()) + 1
                if due not in data["timers"]:
                    self.handle.registerTimer(due)
                    data["timers"].append(due)
            return outputs + self._deadlines(data, watermark)

        def _deadlines(self, data: dict[str, Any], watermark: int) -> list[pd.DataFrame]:
            """NOT FOLLOWED BY: the watermark says that no event before its time will be
            evaluated (an earlier one is late from now on): report what is due by then, and set
            a timer for the next deadline."""
            setup = self.setup
            if not setup["deadlines"] or data["evaluator"] is None or watermark <= 0:
                return []
            evaluator = _compiled(setup["text"], setup["declaration"]).evaluator()
            evaluator.import_state(data["evaluator"])
            now = (watermark - 1) * 1_000_000  # event times are shifted by 1 ms, like the watermark
            outputs = self._collect(evaluator.advance(now, detailed=True))
            frontier = _frontier_key(data["frontier"])
            if frontier is None or frontier[0] < now:
                data["frontier"] = _write_ipc(_order_key(setup, now))
            data["evaluator"] = evaluator.export_state()
            deadline = evaluator.next_deadline()
            if deadline is not None:
                due = -(-deadline // 1_000_000) + 1
                if due not in data["timers"]:
                    self.handle.registerTimer(due)
                    data["timers"].append(due)
            return outputs

        def _collect(self, found) -> list[pd.DataFrame]:
            setup = self.setup
            spec: OutputSpec = setup["spec"]
            collector = Collector(spec)
            for match, events in found:
                if spec.has_ids:
                    collector.add_values(match, events)
                else:
                    collector.add(match, [])
            if not len(collector):
                return []
            frame = collector.flush().to_pandas()
            if setup["late"] == "rows":
                frame[LATE] = None
            return [frame]

        def _evaluate(self, data: dict[str, Any], table: pa.Table) -> list[pd.DataFrame]:
            setup = self.setup
            evaluator = _compiled(setup["text"], setup["declaration"]).evaluator()
            if data["evaluator"] is not None:
                evaluator.import_state(data["evaluator"])
            spec: OutputSpec = setup["spec"]
            values = plain_rows(table, spec.id_columns) if spec.has_ids else None
            found = _at_most(evaluator.process_table(table, payload=values), setup["max_matches"])
            outputs = self._collect(found)
            data["evaluator"] = evaluator.export_state()
            return outputs

        def close(self) -> None:
            pass

    return CeqlProcessor


def _order(table: pa.Table, columns: list[str]) -> np.ndarray:
    return sort_order(table, columns).to_numpy()


def _behind(table: pa.Table, columns: list[str], frontier: tuple | None) -> np.ndarray:
    """Which rows come at or before ``frontier`` in (time, tie-break) order (late rows)."""
    late = np.zeros(table.num_rows, dtype=bool)
    if frontier is None:
        return late
    time = table.column(TIME).to_numpy(zero_copy_only=False)
    late[time < frontier[0]] = True
    ties = np.flatnonzero(time == frontier[0])
    if len(ties):
        rows = table.take(pa.array(ties)).select(columns).to_pylist()
        for index, row in zip(ties, rows):
            key = tuple(row[c] for c in columns)
            late[index] = _at_or_before(key, frontier)
    return late


def _at_or_before(key: tuple, frontier: tuple) -> bool:
    for value, bound in zip(key, frontier):
        if value is None or bound is None:  # nulls sort first
            if value is None and bound is not None:
                return True
            if value is not None and bound is None:
                return False
            continue
        if value != bound:
            return value < bound
    return True


def _late_frame(late: pa.Table, setup: dict[str, Any]) -> pd.DataFrame:
    """Late events as output rows: no match columns, the event in ``late``."""
    events = late.select(setup["user_columns"]).to_pylist()
    frame = setup["spec"].arrow_schema.empty_table().to_pandas()
    frame = pd.DataFrame({name: [None] * len(events) for name in frame.columns})
    frame["query"] = setup["spec"].name
    frame[LATE] = events
    return frame


def _order_key(setup: dict[str, Any], time: int) -> pa.Table:
    """A frontier at ``time`` before every tie-break value (nulls sort first): an event earlier
    than ``time``, or at it with a null tie-break, is late."""
    fields = [setup["input_schema"].field(name) for name in setup["order"]]
    return pa.table([pa.array([time if i == 0 else None], f.type) for i, f in enumerate(fields)], schema=pa.schema(fields))


def _state_schema():
    """The per-key state in the checkpoint: plain data, read back without running code."""
    from pyspark.sql.types import ArrayType, BinaryType, LongType, StructField, StructType

    return StructType(
        [
            StructField("buffer", BinaryType()),  # the buffered events (Arrow IPC)
            StructField("evaluator", BinaryType()),  # Evaluator.export_state (versioned JSON)
            StructField("frontier", BinaryType()),  # the last evaluated event's order key (Arrow IPC)
            StructField("timers", ArrayType(LongType())),
        ]
    )


def _bytes(value) -> bytes | None:
    return None if value is None else bytes(value)


def _frontier_key(blob: bytes | None) -> tuple | None:
    """The (time, tie-break) values of the last evaluated event."""
    table = _read_ipc(blob)
    return None if table is None else tuple(table.to_pylist()[0].values())


def _read_ipc(blob: bytes | None) -> pa.Table | None:
    if blob is None:
        return None
    return pa.ipc.open_stream(blob).read_all()


def _write_ipc(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
_PROVIDER = "spark.sql.streaming.stateStore.providerClass"


def _use_rocksdb(spark) -> None:
    """The stateful operator (transformWithStateInPandas) needs the RocksDB state store: set it
    on the user's session when it is not (a runtime setting, read when a query starts), or say
    exactly what to set."""
    if spark.conf.get(_PROVIDER, None) == ROCKSDB:
        return
    try:
        spark.conf.set(_PROVIDER, ROCKSDB)
    except Exception as exc:  # noqa: BLE001 - e.g. a session that does not let it change
        raise CeqlError(
            f"ceql on a stream needs Spark's RocksDB state store: create the session with "
            f'.config("{_PROVIDER}", "{ROCKSDB}") (ceql.spark.session() does)'
        ) from exc


def split_late(batch):
    """The matches and the late events of a micro-batch of ``find(..., late="rows")``, as two
    DataFrames: the match rows without the ``late`` column, and the late events with the
    columns they came with (and ``query``). For a ``foreachBatch`` sink."""
    from pyspark.sql import functions as F

    matches = batch.where(F.col(LATE).isNull()).drop(LATE)
    late = batch.where(F.col(LATE).isNotNull()).select("query", f"{LATE}.*")
    return matches, late


def lateness_ms(schema: Schema, allowed_lateness: str | None) -> int:
    """The watermark delay in milliseconds: the option, else FIXED_TIME quarantine, else 0."""
    if allowed_lateness is not None:
        from ceql.lang.schema import parse_declarations

        text = f"CREATE STREAM X {{ EVENT E {{ t:primary_time }} }} CREATE QUARANTINE {{ FIXED_TIME {allowed_lateness} {{X}} }}"
        try:
            ns = parse_declarations(text).allowed_lateness_ns() or 0
        except Exception as exc:  # noqa: BLE001 - report the option, not the internal text
            raise CeqlError(f"allowed_lateness must look like '2 seconds': {allowed_lateness!r}") from exc
        return ns // 1_000_000
    ns = schema.allowed_lateness_ns()
    return (ns or 0) // 1_000_000


def find_streaming(
    df,
    query,
    *,
    tie_break: list[str],
    id_columns: list[str],
    user_columns: list[str],
    name: str = "query",
    allowed_lateness: str | None = None,
    late: str = "fail",
    max_matches: int | None = None,
):
    """The streaming form of ``ceql.spark.find`` (see the module docstring). ``late="fail"``
    stops the query at a late event; ``late="rows"`` adds a ``late`` column: null on match
    rows, the late event on rows that are not matches (``split_late`` separates them, e.g. in
    a ``foreachBatch`` sink)."""
    prepared, keys, setup, out_schema = _streaming_plan(
        df,
        query,
        tie_break=tie_break,
        id_columns=id_columns,
        user_columns=user_columns,
        name=name,
        allowed_lateness=allowed_lateness,
        late=late,
        max_matches=max_matches,
    )
    return prepared.groupBy(*keys).transformWithStateInPandas(
        statefulProcessor=_processor_class()(setup),
        outputStructType=out_schema,
        outputMode="Append",
        timeMode="EventTime",
    )


def _streaming_plan(
    df,
    query,
    *,
    tie_break: list[str],
    id_columns: list[str],
    user_columns: list[str],
    name: str,
    allowed_lateness: str | None,
    late: str,
    max_matches: int | None,
):
    """The keyed input of the stateful operator, its key columns, the processor's setup and
    the output schema."""
    if late not in ("fail", "rows"):
        raise CeqlError(f"late= must be 'fail' or 'rows', not {late!r}")
    from pyspark.sql import functions as F
    from pyspark.sql import types as T
    from pyspark.sql.pandas.types import to_arrow_schema

    schema = query.checked.schema
    facts = query.facts
    if not tie_break:
        if all(c in df.columns for c in KAFKA_ORDER):
            tie_break = KAFKA_ORDER
        else:
            raise CeqlError(
                "a stream needs tie_break=[...]: the column(s) that order events with equal times "
                "(an event id or sequence number; Kafka's partition and offset are used when present)"
            )
    _use_rocksdb(df.sparkSession)
    time = time_ns(schema, df, row_label(tie_break))
    if time is None or not all(d.time_attribute for d in schema.event_types.values()):
        raise CeqlError("a stream is ordered by event time: every event type needs a primary_time attribute")
    from ceql.spark.batch import absence_routing, absence_splits_by_key

    # NOT FOLLOWED BY per key only where that is exact (the batch plan's rule); keyed by an
    # equality only with a window of time (n EVENTS counts the whole stream's events).
    routing = absence_routing(query) if facts.window_kind != "events" else None
    partitioned = routing is not None or (
        bool(facts.partition_groups) and facts.consume != "ANY" and absence_splits_by_key(query)
    )
    if partitioned and facts.window_kind == "events":
        raise CeqlError(
            "WITHIN n EVENTS with PARTITION BY counts events of the whole stream, which a stream split "
            "by key does not see: use a time window, or run it in batch"
        )
    delay = lateness_ms(schema, allowed_lateness)
    prepared = df.withColumn(TIME, time).withColumn(
        MILLIS, F.floor(F.col(TIME) / F.lit(1_000_000)).cast("long")
    )
    # Spark's first watermark is 0 and registering a timer at the watermark is an error: shift
    # the event-time column by 1 ms (the evaluator reads the real times).
    prepared = prepared.withColumn(TS, F.timestamp_millis(F.col(MILLIS) + F.lit(1)))
    # The watermark column is dropped before the stateful operator so that Spark does not drop
    # late rows silently: the processor decides lateness and reports every late event.
    prepared = prepared.withWatermark(TS, f"{delay} milliseconds").drop(TS)
    if partitioned:
        from ceql.spark.batch import _with_partition_keys, _with_routing_keys

        if routing is not None:
            prepared, keys = _with_routing_keys(prepared, routing)
        else:
            prepared, keys = _with_partition_keys(prepared, query)
        renamed = {k: f"{KEY}{i}" for i, k in enumerate(keys)}
        for old, new in renamed.items():
            prepared = prepared.withColumnRenamed(old, new)
        keys = list(renamed.values())
    else:
        prepared = prepared.withColumn(f"{KEY}0", F.lit(0))
        keys = [f"{KEY}0"]
    columns = list(dict.fromkeys([*df.columns, TIME, MILLIS]))
    input_fields = {f.name: f for f in prepared.schema.fields}
    input_schema = to_arrow_schema(T.StructType([input_fields[c] for c in columns]))
    spec, out_schema = output_spec(query, df.schema, name=name, id_columns=id_columns, positions=False)
    if late == "rows":
        late_type = T.StructType([input_fields[c] for c in user_columns])
        out_schema = T.StructType([*out_schema.fields, T.StructField(LATE, late_type)])
    setup = {
        "text": query.text,
        "declaration": schema.text(),
        "spec": spec,
        "columns": columns,
        "input_schema": input_schema,
        "order": [TIME, *tie_break],
        "late": late,
        "user_columns": user_columns,
        "max_matches": max_matches,
        "delay_ms": delay,
        "deadlines": facts.deadlines,
    }
    return prepared, keys, setup, out_schema


def stream_end(df, query, declaration=None, *, checkpoint: str, late: str = "fail", **options: Any):
    """What a finished stream still owes, as batch reports it at the end of the input: the
    events still buffered (the last ``allowed_lateness`` of event time) evaluated, and the
    NOT FOLLOWED BY complex events whose deadline falls after the last event. A batch
    DataFrame with the schema of ``find`` on the stream, read from the state in ``checkpoint``
    (Spark's state data source) once the streaming query that wrote it has stopped, e.g. after
    ``trigger(availableNow=True)``; ``df``, ``query`` and the options are those of that
    ``find``. Append it to the stream's output when the input is over for good: a stream that
    goes on later would report these complex events by itself, or cancel them."""
    from ceql.spark.batch import prepare_stream

    if not df.isStreaming:
        raise CeqlError("stream_end takes the streaming DataFrame given to find (for its columns and order)")
    compiled, prepared, settings = prepare_stream(df, query, declaration, **options)
    _, _, setup, out_schema = _streaming_plan(prepared, compiled, late=late, **settings)
    state = df.sparkSession.read.format("statestore").option("path", checkpoint).option("stateVarName", "ceql").load()
    values = state.select("value.*")

    def finish(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        processor = _processor_class()(setup)
        for batch in batches:
            for row in batch.to_pylist():
                for frame in _finish_key(processor, setup, row):
                    yield pa.RecordBatch.from_pandas(frame, schema=out_arrow, preserve_index=False)

    from pyspark.sql.pandas.types import to_arrow_schema

    out_arrow = to_arrow_schema(out_schema)
    return values.mapInArrow(finish, out_schema)


def _finish_key(processor, setup: dict[str, Any], row: dict[str, Any]) -> list[pd.DataFrame]:
    """One key's state at the end of the input: its buffered events evaluated in order, then
    the evaluator's end (``Evaluator.finish``)."""
    data = {
        "buffer": _bytes(row["buffer"]),
        "evaluator": _bytes(row["evaluator"]),
        "frontier": _bytes(row["frontier"]),
        "timers": list(row["timers"] or ()),
    }
    outputs = []
    buffered = _read_ipc(data["buffer"])
    if buffered is not None and buffered.num_rows:
        buffered = buffered.take(pa.array(_order(buffered, setup["order"])))
        outputs.extend(processor._evaluate(data, buffered))
    if data["evaluator"] is not None:
        evaluator = _compiled(setup["text"], setup["declaration"]).evaluator()
        evaluator.import_state(data["evaluator"])
        outputs.extend(processor._collect(evaluator.finish(detailed=True)))
    return outputs


def write_stream(
    df,
    query,
    declaration=None,
    *,
    path: str,
    late_path: str,
    checkpoint: str,
    output_format: str = "parquet",
    writer_options: dict[str, str] | None = None,
    trigger: dict[str, Any] | None = None,
    progress: bool = False,
    **options: Any,
):
    """Start a streaming query that writes the matches of ``query`` to ``path`` and the late
    events to ``late_path`` (both exactly once: each micro-batch goes to ``batch=<id>``
    subdirectories, rewritten if Spark replays the batch after a restart; a micro-batch with
    no matches, or no late events, writes nothing there). ``writer_options`` go to each write
    (``DataFrameWriter.options``, e.g. ``{"compression": "zstd"}``); ``options`` are those of
    ``find``; ``trigger`` those of ``DataStreamWriter.trigger`` (default: ``availableNow``).
    ``progress=True`` prints a line per micro-batch on standard error. Returns the
    ``StreamingQuery``."""
    from ceql.spark.batch import prepare_stream

    if not df.isStreaming:
        raise CeqlError("write_stream needs a streaming DataFrame (spark.readStream...); use find for batch")
    compiled, prepared, settings = prepare_stream(df, query, declaration, **options)
    records = find_streaming(prepared, compiled, late="rows", **settings)
    extra = dict(writer_options or {})

    def write(batch, batch_id: int) -> None:
        batch.persist()
        try:
            for frame, folder in zip(split_late(batch), (path, late_path)):
                if frame.isEmpty():
                    continue
                target = f"{folder.rstrip('/')}/batch={batch_id}"
                frame.write.mode("overwrite").format(output_format).options(**extra).save(target)
        finally:
            batch.unpersist()

    writer = records.writeStream.foreachBatch(write).option("checkpointLocation", checkpoint)
    if progress:
        import uuid

        unique = f"ceql-{settings['name']}-{uuid.uuid4().hex[:8]}"
        report_batches(df.sparkSession, unique, settings["name"])
        writer = writer.queryName(unique)
    return writer.trigger(**(trigger or {"availableNow": True})).start()


_REPORTED: dict[str, tuple] = {}  # streaming query name -> (the name its lines show, where they go)
_LISTENING: set[int] = set()  # the sessions (ids) that have the listener


def report_batches(spark, query_name: str, label: str, write=None) -> None:
    """Print a line per micro-batch of the streaming query named ``query_name`` (its input
    rows, duration and watermark) on standard error, or pass it to ``write``; call before the
    query starts."""
    import sys

    from pyspark.sql.streaming import StreamingQueryListener

    emit = write or (lambda line: print(line, file=sys.stderr, flush=True))

    class BatchLines(StreamingQueryListener):
        def onQueryStarted(self, event) -> None:
            pass

        def onQueryProgress(self, event) -> None:
            progress = event.progress
            if (progress.name or "") not in _REPORTED:
                return
            shown, emit = _REPORTED[progress.name]
            watermark = (progress.eventTime or {}).get("watermark", "-")
            emit(
                f"ceql stream {shown}: batch {progress.batchId}: {progress.numInputRows} rows in "
                f"{progress.batchDuration / 1000:.1f} s (watermark {watermark})"
            )

        def onQueryIdle(self, event) -> None:
            pass

        def onQueryTerminated(self, event) -> None:
            pass

    _REPORTED[query_name] = (label, emit)
    if id(spark) not in _LISTENING:
        _LISTENING.add(id(spark))
        spark.streams.addListener(BatchLines())
