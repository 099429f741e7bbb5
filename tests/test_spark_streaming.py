"""Spark Structured Streaming: same results as batch and local, exactly once across a restart."""

from __future__ import annotations

import json
import os
import random

import pytest

import ceql
from ceql.spark import find
from tests.strategies import TEST_DECLARATION

SCHEMA = ceql.declare(TEST_DECLARATION)


def _events(n: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    events, time = [], 0
    for index in range(n):
        time += rng.randint(0, 2) * 10**9
        events.append(
            {
                "event_type": rng.choice("ABCD"),
                "id": rng.randint(0, 1),
                "v": rng.randint(0, 4),
                "s": rng.choice("ab"),
                "t": time,
                "seq": index,
            }
        )
    return events


def _closing_event(events: list[dict]) -> dict:
    """An event far later than the others: it moves the watermark past them (ends the input)."""
    return {"event_type": "D", "id": 9, "v": 0, "s": "z", "t": events[-1]["t"] + 10**12, "seq": len(events)}


def _write_files(directory, events, per_file: int, start: int = 0) -> None:
    """Files in stream order; the file source takes them by modification time, so set it."""
    for number in range(0, len(events), per_file):
        index = start + number // per_file
        path = directory / f"part{index:04d}.jsonl"
        path.write_text("".join(json.dumps(e) + "\n" for e in events[number : number + per_file]))
        os.utime(path, (1_700_000_000 + index, 1_700_000_000 + index))


def _input_schema():
    from pyspark.sql import types as T

    return T.StructType(
        [
            T.StructField("event_type", T.StringType()),
            T.StructField("id", T.LongType()),
            T.StructField("v", T.DoubleType()),
            T.StructField("s", T.StringType()),
            T.StructField("t", T.LongType()),
            T.StructField("seq", T.LongType()),
        ]
    )


def _run_stream(spark, source, text, output, checkpoint) -> None:
    stream = spark.readStream.schema(_input_schema()).option("maxFilesPerTrigger", 1).json(str(source))
    query = (
        find(stream, text, SCHEMA)
        .writeStream.format("parquet")
        .option("path", str(output))
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()


def _keys(rows) -> list[tuple]:
    return sorted(
        (r.trigger, tuple(r.positions), tuple(sorted((k, tuple(v)) for k, v in r.labels.items())))
        for r in rows
    )


@pytest.mark.parametrize(
    "text",
    [
        "SELECT * WHERE A AS x; B AS y PARTITION BY [id] WITHIN 5 SECONDS",
        "SELECT * WHERE A AS x; B+ AS y; C WITHIN 6 SECONDS",
        "SELECT * WHERE A AS x; C AS y PARTITION BY [id] WITHIN 8 EVENTS CONSUME BY PARTITION",
        "SELECT * WHERE A AS x; B AS y WITHIN 4000000000 [t] CONSUME BY ANY",
        "SELECT * WHERE A AS x; B AS y PARTITION BY [id] CONSUME BY ANY",
    ],
)
def test_streaming_equals_batch_local_and_reference(spark, tmp_path, text) -> None:
    events = _events(60, seed=len(text))
    source = tmp_path / "in"
    source.mkdir()
    _write_files(source, events + [_closing_event(events)], per_file=15)
    _run_stream(spark, source, text, tmp_path / "out", tmp_path / "checkpoint")
    streamed = _keys(spark.read.parquet(str(tmp_path / "out")).collect())
    batch = _keys(
        find(spark.read.schema(_input_schema()).json(str(source)), text, SCHEMA, order_by="seq")
        .where(f"trigger < {len(events)}")
        .collect()
    )
    query = ceql.compile(text, SCHEMA)
    local = sorted((m.trigger, m.positions, tuple(sorted(m.labels.items()))) for m in query.run(events))
    reference = sorted(
        (m.trigger, m.positions, tuple(sorted(m.labels.items()))) for m in ceql.reference.run(query, events)
    )
    assert local, "the stream must produce matches"
    assert streamed == batch, (len(streamed), len(batch))
    assert batch == local == reference


def test_restart_from_checkpoint_loses_and_duplicates_nothing(spark, tmp_path) -> None:
    text = "SELECT * WHERE A AS x; B AS y PARTITION BY [id] WITHIN 6 SECONDS"
    events = _events(80, seed=7)
    source, output, checkpoint = tmp_path / "in", tmp_path / "out", tmp_path / "checkpoint"
    source.mkdir()
    _write_files(source, events[:40], per_file=10)
    _run_stream(spark, source, text, output, checkpoint)  # stops after the first files
    first = spark.read.parquet(str(output)).count()
    _write_files(source, events[40:] + [_closing_event(events)], per_file=10, start=4)  # more files arrive
    _run_stream(spark, source, text, output, checkpoint)  # restarted from the checkpoint
    rows = spark.read.parquet(str(output)).collect()
    expected = sorted(
        (m.trigger, m.positions, tuple(sorted(m.labels.items())))
        for m in ceql.compile(text, SCHEMA).run(events)
    )
    assert 0 < first < len(rows)
    assert _keys(rows) == expected  # the union is the batch result, with no duplicates


def test_late_events_are_routed_to_the_output_not_dropped(spark, tmp_path) -> None:
    second = 10**9
    batches = [
        [("A", 0, 0), ("B", 0, 5 * second)],
        [("A", 0, 20 * second), ("B", 0, 3 * second), ("B", 0, 21 * second)],  # the B at 3 s is late
        [("D", 0, 100 * second)],
    ]
    source = tmp_path / "in"
    source.mkdir()
    seq = 0
    for index, rows in enumerate(batches):
        events = []
        for kind, key, time in rows:
            events.append({"event_type": kind, "id": key, "v": 1, "s": "a", "t": time, "seq": seq})
            seq += 1
        path = source / f"part{index}.jsonl"
        path.write_text("".join(json.dumps(e) + "\n" for e in events))
        os.utime(path, (1_700_000_000 + index, 1_700_000_000 + index))
    _run_stream(spark, source, "SELECT * WHERE A; B", tmp_path / "out", tmp_path / "checkpoint")
    rows = spark.read.parquet(str(tmp_path / "out")).collect()
    late = sorted(tuple(r.positions) for r in rows if r.query.endswith(":late"))
    matches = sorted(tuple(r.positions) for r in rows if not r.query.endswith(":late"))
    assert late == [(3,)]
    assert matches == [(0, 1), (0, 4), (2, 4)]
