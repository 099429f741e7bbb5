"""ceql on Spark Structured Streaming: ``transformWithStateInPandas`` keyed by partition key.

Each key's events are buffered in list state and released to the evaluator in (time, position)
order when the event-time watermark passes them (an event-time timer per distinct time); the
evaluator's state is kept as plain bytes in value state, and both are cleared when the key holds
no live run. The watermark's delay is the allowed lateness (``CREATE QUARANTINE FIXED_TIME`` or
the ``allowed_lateness`` option): events later than that are dropped by Spark before they reach
the operator is late: earlier events were already evaluated, so it cannot take its place any
more; it is reported in the output as a record whose query is ``<name>:late`` (trigger and
positions give its stream position), so nothing vanishes. Matches of a time instant are complete
when the watermark passes it, so the last instant of a finished input is released when a later
event arrives (or the query restarts).
Positions are those of the whole stream, taken from ``position_column`` (an input sequence
number), so that streaming results equal batch results. With a checkpoint, a restarted query
resumes with no lost and no duplicated matches (state, timers and output commit together).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from ceql.errors import CeqlError
from ceql.lang.schema import Schema
from ceql.spark.batch import _arrow_output_schema, _Collector, _compiled, event_struct, output_schema

# transformWithStateInPandas renames columns that start with underscores: plain names here.
TIME = "ceql_time_ms"
SPOS = "ceql_position"
TS = "ceql_event_time"


def _processor_class():
    from pyspark.sql.streaming import StatefulProcessor
    from pyspark.sql.types import BinaryType, LongType, StructField, StructType

    class CeqlProcessor(StatefulProcessor):
        """Buffers a key's events and evaluates them in order as the watermark passes."""

        def __init__(
            self,
            text: str,
            blob: bytes,
            name: str,
            with_events: bool,
            columns: list[str],
            buffer_schema,
            event_fields: list[str],
            arrow_schema: pa.Schema,
        ) -> None:
            self.text, self.blob, self.name = text, blob, name
            self.with_events = with_events
            self.columns = columns
            self.buffer_schema = buffer_schema
            self.event_fields = event_fields
            self.arrow_schema = arrow_schema

        def init(self, handle) -> None:
            self.handle = handle
            self.buffer = handle.getListState("buffer", self.buffer_schema)
            self.state = handle.getValueState("evaluator", StructType([StructField("blob", BinaryType())]))
            self.registered = handle.getValueState("timers", StructType([StructField("latest", LongType())]))

        def handleInputRows(self, key, rows, timerValues):
            watermark = timerValues.getCurrentWatermarkInMs()
            late_positions: list[int] = []
            for frame in rows:
                frame = frame[self.columns]
                shifted = frame[TIME].astype("int64") + 1  # shifted like the watermark column
                late = (shifted <= watermark).to_numpy()
                if late.any():
                    # Behind the watermark: earlier events were already evaluated, so this one
                    # cannot take its place any more. It goes to the output as a late record.
                    late_positions.extend(int(p) for p in frame[SPOS][late])
                    frame, shifted = frame[~late], shifted[~late]
                if not len(frame):
                    continue
                self.buffer.appendList(list(frame.itertuples(index=False, name=None)))
                for millis in sorted(set(shifted.tolist())):
                    self.handle.registerTimer(millis)
            if not late_positions:
                return iter([])
            late_rows = pd.DataFrame(
                {
                    "query": [f"{self.name}:late"] * len(late_positions),
                    "trigger": late_positions,
                    "positions": [[p] for p in late_positions],
                    "labels": [{} for _ in late_positions],
                    "partition": [None] * len(late_positions),
                }
            )
            if self.with_events:
                late_rows["events"] = [None] * len(late_positions)
            return iter([late_rows])

        def handleExpiredTimer(self, key, timerValues, expiredTimerInfo):
            limit = expiredTimerInfo.getExpiryTimeInMs() - 1  # timers are shifted by 1 ms
            buffered = list(self.buffer.get()) if self.buffer.exists() else []
            ready = [r for r in buffered if r[-1] <= limit]
            rest = [r for r in buffered if r[-1] > limit]
            if not ready:
                return iter([])
            position = self.columns.index(SPOS)
            ready.sort(key=lambda r: (r[-1], r[position]))  # (time, stream position)
            query = _compiled(self.text, self.blob)
            evaluator = query.evaluator()
            if self.state.exists():
                evaluator.import_state(self.state.get()[0])
            frame = pd.DataFrame(ready, columns=self.columns)
            table = pa.Table.from_pandas(frame.drop(columns=[TIME, SPOS]), preserve_index=False)
            positions = frame[SPOS].to_numpy(dtype=np.int64)
            payload = None
            if self.with_events:
                values = frame.to_dict("records")

                def payload(index: int) -> dict[str, Any]:
                    row = {
                        k: (None if _missing(v) else v)
                        for k, v in values[index].items()
                        if k in self.event_fields
                    }
                    row["position"] = int(positions[index])
                    return row

            collector = _Collector(self.name, self.arrow_schema, self.with_events, self.event_fields)
            for match, events in evaluator.process_at(table, positions, payload):
                collector.add(match, events if self.with_events else None)
            if rest:
                self.buffer.put(rest)
            else:
                self.buffer.clear()
            if evaluator.partitions:
                self.state.update((evaluator.export_state(),))
            else:
                self.state.clear()  # no live run: nothing to keep for this key
            output = collector.flush().to_pandas()
            if not len(output):
                return iter([])
            output["labels"] = output["labels"].apply(dict)  # pandas maps are dicts
            return iter([output])

        def close(self) -> None:
            pass

    return CeqlProcessor


def _missing(value: Any) -> bool:
    try:
        return value is None or (isinstance(value, float) and np.isnan(value))
    except TypeError:
        return False


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


def prepare(df, query, schema: Schema, position_column: str, allowed_lateness: str | None):
    """The input with the event-time column, the watermark, positions and the grouping key."""
    from pyspark.sql import functions as F

    from ceql.spark.batch import time_expression

    time = time_expression(schema)
    if time is None:
        raise CeqlError("streaming needs event time: declare a primary_time attribute")
    if position_column not in df.columns:
        raise CeqlError(
            f"streaming needs the position of each event in the whole stream: column {position_column!r} "
            "(an input sequence number; set position_column=...)"
        )
    # One millisecond more than the allowed lateness: Spark treats rows at the watermark as late,
    # but events with the same time as the latest one seen are still in order.
    delay = lateness_ms(schema, allowed_lateness) + 1
    df = df.withColumn(SPOS, F.col(position_column).cast("long"))
    df = df.withColumn(TIME, (time / F.lit(1_000_000)).cast("long"))
    # Spark's first watermark is the epoch and rows at the watermark count as late: shift the
    # watermark column by 1 ms so that events at time 0 are kept (the evaluator uses real times).
    df = df.withColumn(TS, F.timestamp_millis(F.col(TIME) + F.lit(1)))
    df = df.withWatermark(TS, f"{delay} milliseconds")
    plan = query.plan
    if query.checked.query.partition_by and plan.consume != "ANY":
        from ceql.spark.batch import _with_partition_keys

        df, keys = _with_partition_keys(df, query)
    else:
        df = df.withColumn("__ceql_key0", F.lit("all"))
        keys = ["__ceql_key0"]
    return df, keys


def find_streaming(
    df,
    query,
    schema: Schema,
    order_by=None,
    with_events: bool = False,
    name: str = "query",
    position_column: str = "seq",
    allowed_lateness: str | None = None,
):
    """The streaming form of ``ceql.spark.find`` (see the module docstring)."""
    import pickle

    from pyspark.sql import types as T

    if order_by:
        raise CeqlError("streaming orders events by time and position_column; order_by is for batch")
    prepared, keys = prepare(df, query, schema, position_column, allowed_lateness)
    event_fields = [f.name for f in event_struct(schema).fields if f.name != "position"]
    columns = (
        ["event_type"]
        + [c for c in event_fields if c != "event_type" and c in prepared.columns]
        + [SPOS, TIME]
    )
    kinds = {f.name: f.dataType for f in prepared.schema.fields}
    buffer_schema = T.StructType([T.StructField(c, kinds[c]) for c in columns])
    processor = _processor_class()(
        query.text,
        pickle.dumps(schema),
        name,
        with_events,
        columns,
        buffer_schema,
        event_fields,
        _arrow_output_schema(schema, with_events),
    )
    return prepared.groupBy(*keys).transformWithStateInPandas(
        statefulProcessor=processor,
        outputStructType=output_schema(schema, with_events),
        outputMode="Append",
        timeMode="EventTime",
    )
