"""Spark Structured Streaming: ordered by (time, tie-break) with no sequence column, the same
matches as batch (the last instant of a finished input included), late events in their own
output, exactly once across a killed and restarted driver."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import ceql
from ceql.spark import find, write_stream
from tests.support.strategies import TEST_DECLARATION

SCHEMA = ceql.declare(TEST_DECLARATION)
ROOT = Path(__file__).resolve().parents[1]
SECOND = 10**9


def _events(n: int, seed: int) -> list[dict]:
    """Events in stream order: times in ns, often equal (the tie-break ``seq`` orders them)."""
    rng = random.Random(seed)
    events, now = [], 0
    for index in range(n):
        now += rng.randint(0, 2) * SECOND
        events.append(
            {
                "event_type": rng.choice("ABCD"),
                "id": rng.randint(0, 1),
                "v": rng.randint(0, 4),
                "s": rng.choice("ab"),
                "t": now,
                "seq": index,
            }
        )
    return events


def _write_files(directory: Path, events: list[dict], per_file: int, start: int = 0) -> None:
    """Files in arrival order; the file source takes them by modification time, so set it.
    Within a file the rows are shuffled: only (time, seq) orders them."""
    for number in range(0, len(events), per_file):
        index = start + number // per_file
        chunk = events[number : number + per_file]
        random.Random(index).shuffle(chunk)
        path = directory / f"part{index:04d}.jsonl"
        path.write_text("".join(json.dumps(e) + "\n" for e in chunk))
        os.utime(path, (1_700_000_000 + index, 1_700_000_000 + index))


def input_schema():
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


def _stream(spark, source: Path):
    return spark.readStream.schema(input_schema()).option("maxFilesPerTrigger", 1).json(str(source))


def _ids(rows) -> list[tuple]:
    """Matches by their events' ids and per-label ids: positions play no part."""
    found = []
    for row in rows:
        labels = (
            tuple(sorted((k, tuple(e.seq for e in v)) for k, v in row.ids.asDict().items()))
            if row.ids
            else ()
        )
        found.append((tuple(e.seq for e in row.events), labels))
    return sorted(found)


def _local(text: str, events: list[dict]) -> list[tuple]:
    found = []
    for m in ceql.compile(text, SCHEMA).run(events):
        labels = tuple(sorted((k, tuple(events[p]["seq"] for p in v)) for k, v in m.labels.items()))
        found.append((tuple(events[p]["seq"] for p in m.positions), labels))
    return sorted(found)


@pytest.mark.parametrize(
    "text",
    [
        "SELECT * WHERE A AS x; B+ AS y PARTITION BY [id] WITHIN 5 SECONDS",
        "SELECT * WHERE A AS x; B AS y; C AS z WITHIN 8 EVENTS",
        "SELECT * WHERE A AS x; B AS y PARTITION BY [id] CONSUME BY ANY",
    ],
)
def test_streaming_equals_batch_and_local_including_the_last_instant(spark, tmp_path, text) -> None:
    events = _events(60, seed=len(text))
    for event, kind in zip(events[-3:], "ABC"):  # the last instant triggers matches: they must come out
        event.update(event_type=kind, id=0, t=events[-1]["t"])
    source = tmp_path / "in"
    source.mkdir()
    _write_files(source, events, per_file=30)
    query = (
        find(_stream(spark, source), text, SCHEMA, tie_break="seq", id_columns=["seq"])
        .writeStream.format("parquet")
        .option("path", str(tmp_path / "out"))
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    streamed = _ids(spark.read.parquet(str(tmp_path / "out")).collect())
    batch_frame = spark.read.schema(input_schema()).json(str(source))
    batch = _ids(find(batch_frame, text, SCHEMA, tie_break="seq", id_columns=["seq"]).collect())
    local = _local(text, events)
    last = {e["seq"] for e in events if e["t"] == events[-1]["t"]}
    assert any(max(ids) in last for ids, _ in local), "the last instant must trigger a match"
    assert streamed == batch == local


def test_late_events_go_to_their_own_output_never_to_the_matches(spark, tmp_path) -> None:
    arrivals = [  # (type, time in s): one file, one micro-batch each
        [("A", 0), ("B", 5)],
        [("A", 20), ("B", 21)],
        [("B", 3)],  # after the watermark passed 5 s: late
        [("B", 22), ("A", 1)],  # the A at 1 s is late too
    ]
    source = tmp_path / "in"
    source.mkdir()
    seq = 0
    for index, rows in enumerate(arrivals):
        batch = []
        for kind, second in rows:
            batch.append({"event_type": kind, "id": 0, "v": 1, "s": "a", "t": second * SECOND, "seq": seq})
            seq += 1
        _write_files(source, batch, per_file=len(batch), start=index)
    out, late = tmp_path / "out", tmp_path / "late"
    running = write_stream(
        _stream(spark, source),
        "SELECT * WHERE A; B",
        SCHEMA,
        tie_break="seq",
        id_columns=["seq"],
        path=str(out),
        late_path=str(late),
        checkpoint=str(tmp_path / "checkpoint"),
    )
    running.awaitTermination()
    matches = sorted(tuple(e.seq for e in r.events) for r in spark.read.parquet(str(out)).collect())
    assert matches == [(0, 1), (0, 3), (0, 5), (2, 3), (2, 5)]
    late_rows = spark.read.parquet(str(late)).collect()
    assert sorted((r.seq, r.event_type, r.t) for r in late_rows) == [(4, "B", 3 * SECOND), (6, "A", SECOND)]
    # ``find`` alone has no side output: a late event stops the query, naming the event.
    failing = (
        find(_stream(spark, source), "SELECT * WHERE A; B", SCHEMA, tie_break="seq")
        .writeStream.format("noop")
        .option("checkpointLocation", str(tmp_path / "checkpoint2"))
        .trigger(availableNow=True)
        .start()
    )
    with pytest.raises(Exception, match="late event") as caught:
        failing.awaitTermination()
    assert "'seq': 4" in str(caught.value)


def test_streams_need_a_tie_break_and_whole_stream_event_windows_need_one_key(spark, tmp_path) -> None:
    (tmp_path / "in").mkdir()
    stream = _stream(spark, tmp_path / "in")
    with pytest.raises(ceql.CeqlError, match=r"a stream needs tie_break="):
        find(stream, "SELECT * WHERE A; B", SCHEMA)
    with pytest.raises(ceql.CeqlError, match=r"WITHIN n EVENTS with PARTITION BY"):
        find(stream, "SELECT * WHERE A; B PARTITION BY [id] WITHIN 5 EVENTS", SCHEMA, tie_break="seq")


def _job(source: Path, out: Path, late: Path, checkpoint: Path, text: str) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.support.spark_stream_job",
            str(source),
            str(out),
            str(late),
            str(checkpoint),
            text,
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,  # its own process group: the kill takes the JVM with it
    )


@pytest.mark.slow  # two driver processes with their own JVMs
def test_killed_driver_restarts_from_the_checkpoint_without_loss_or_duplicates(spark, tmp_path) -> None:
    text = "SELECT * WHERE A AS x; B+ AS y PARTITION BY [id] WITHIN 6 SECONDS"
    events = _events(120, seed=7)
    source, out, late, checkpoint = (tmp_path / name for name in ("in", "out", "late", "checkpoint"))
    source.mkdir()
    _write_files(source, events, per_file=10)
    job = _job(source, out, late, checkpoint, text)
    commits = checkpoint / "commits"
    deadline = time.monotonic() + 240
    while not (commits.exists() and len([p for p in commits.iterdir() if p.name.isdigit()]) >= 2):
        assert job.poll() is None, job.stderr.read().decode()[-2000:]
        assert time.monotonic() < deadline, "the job did not commit two micro-batches"
        time.sleep(0.2)
    os.killpg(job.pid, signal.SIGKILL)  # the driver dies mid-stream, its JVM with it
    job.wait()
    done = sorted(int(p.name) for p in commits.iterdir() if p.name.isdigit())
    assert done and done[-1] < 12, "the kill must come before the end of the input"
    restarted = _job(source, out, late, checkpoint, text)
    _, err = restarted.communicate(timeout=300)
    assert restarted.returncode == 0, err.decode()[-2000:]
    rows = spark.read.parquet(str(out)).collect()
    assert _ids(rows) == _local(text, events)  # no loss, and no duplicates (a list, not a set)
    assert spark.read.parquet(str(late)).count() == 0


def _late_arrivals(source: Path) -> None:
    """Four micro-batches; the B at 3 s and the A at 1 s arrive after the watermark passed them."""
    arrivals = [[("A", 0), ("B", 5)], [("A", 20), ("B", 21)], [("B", 3)], [("B", 22), ("A", 1)]]
    source.mkdir()
    seq = 0
    for index, rows in enumerate(arrivals):
        batch = []
        for kind, second in rows:
            batch.append({"event_type": kind, "id": 0, "v": 1, "s": "a", "t": second * SECOND, "seq": seq})
            seq += 1
        _write_files(source, batch, per_file=len(batch), start=index)


def test_a_plain_session_gets_the_rocksdb_state_store(spark, tmp_path) -> None:
    """A session without ceql's settings: ``find`` on a stream sets the state store it needs
    (a runtime setting) instead of failing when the query starts."""
    from ceql.spark.streaming import ROCKSDB

    key = "spark.sql.streaming.stateStore.providerClass"
    hdfs = "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"
    spark.conf.set(key, hdfs)
    try:
        source = tmp_path / "in"
        _late_arrivals(source)
        found = find(
            _stream(spark, source),
            "SELECT * WHERE A; B WITHIN 4 SECONDS",
            SCHEMA,
            tie_break="seq",
            id_columns=["seq"],
        )
        assert spark.conf.get(key) == ROCKSDB
        query = (
            found.writeStream.format("parquet")
            .option("path", str(tmp_path / "out"))
            .option("checkpointLocation", str(tmp_path / "checkpoint"))
            .trigger(availableNow=True)
            .start()
        )
        with pytest.raises(Exception, match="late event"):
            query.awaitTermination()
    finally:
        spark.conf.set(key, ROCKSDB)


def test_late_rows_reach_a_foreach_batch_sink(spark, tmp_path) -> None:
    """``find(..., late="rows")``: a foreachBatch sink of the user's own gets the late events,
    apart from the matches (``split_late``), and the query does not stop."""
    from ceql.spark.streaming import split_late

    source = tmp_path / "in"
    _late_arrivals(source)
    seen: dict[str, list] = {"matches": [], "late": []}

    def sink(batch, batch_id: int) -> None:
        matches, late = split_late(batch)
        seen["matches"] += [tuple(e.seq for e in row.events) for row in matches.collect()]
        seen["late"] += [(row.seq, row.event_type) for row in late.collect()]

    found = find(
        _stream(spark, source),
        "SELECT * WHERE A; B",
        SCHEMA,
        tie_break="seq",
        id_columns=["seq"],
        late="rows",
    )
    running = (
        found.writeStream.foreachBatch(sink)
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    running.awaitTermination()
    assert sorted(seen["matches"]) == [(0, 1), (0, 3), (0, 5), (2, 3), (2, 5)]
    assert sorted(seen["late"]) == [(4, "B"), (6, "A")]
    with pytest.raises(ceql.CeqlError, match="late= must be 'fail' or 'rows'"):
        find(_stream(spark, source), "SELECT * WHERE A; B", SCHEMA, tie_break="seq", late="drop")
    with pytest.raises(ceql.CeqlError, match="are for streaming DataFrames"):
        find(spark.read.schema(input_schema()).json(str(source)), "SELECT * WHERE A; B", SCHEMA, late="rows")


def test_write_stream_takes_writer_options_and_writes_no_empty_batches(spark, tmp_path, capsys) -> None:
    source = tmp_path / "in"
    _late_arrivals(source)
    out, late = tmp_path / "out", tmp_path / "late"
    running = write_stream(
        _stream(spark, source),
        "SELECT * WHERE A; B",
        SCHEMA,
        tie_break="seq",
        id_columns=["seq"],
        path=str(out),
        late_path=str(late),
        checkpoint=str(tmp_path / "checkpoint"),
        writer_options={"compression": "gzip"},
        progress=True,
    )
    running.awaitTermination()
    files = [p for p in out.rglob("*.parquet")] + [p for p in late.rglob("*.parquet")]
    assert files and all(p.name.endswith(".gz.parquet") for p in files)
    # Batches 0 and 1 have matches, 3 has them after 2's late event...; no folder is empty.
    for folder in (out, late):
        batches = sorted(p for p in folder.iterdir() if p.name.startswith("batch="))
        assert batches and all(list(b.glob("*.parquet")) for b in batches), batches
    assert sorted(p.name for p in late.iterdir() if p.name.startswith("batch=")) == ["batch=2", "batch=3"]
    assert sorted((r.seq, r.event_type) for r in spark.read.parquet(str(late)).collect()) == [
        (4, "B"),
        (6, "A"),
    ]
    lines = [
        line for line in capsys.readouterr().err.splitlines() if line.startswith("ceql stream query: batch ")
    ]
    assert len(lines) >= 4 and "rows in" in lines[0]


@pytest.mark.parametrize(
    "text, lateness",
    [
        ("SELECT * WHERE A AS x NOT FOLLOWED BY B PARTITION BY [id] WITHIN 4 SECONDS", None),
        ("SELECT * WHERE A AS x; C NOT FOLLOWED BY B PARTITION BY [id] WITHIN 6 SECONDS", "3 seconds"),
        # keyed by the equality (compile.plan.split_keys), no PARTITION BY
        ("SELECT * WHERE (A OR C) AS x NOT FOLLOWED BY B AS y FILTER y.id = x.id WITHIN 4 SECONDS", None),
        ("SELECT * WHERE C AS x NOT FOLLOWED BY B AS y FILTER y.id = x.id WITHIN 6 SECONDS", "3 seconds"),
    ],
)
def test_a_finished_stream_with_its_end_equals_batch_not_followed_by_included(spark, tmp_path, text, lateness) -> None:
    """A bounded stream never sees its end; ``stream_end`` reads what the state still owes
    (deadlines after the last event, events held back by the allowed lateness) so that the
    stream and its end give what batch and the local engine give."""
    from ceql.spark import stream_end

    events = _events(60, seed=7)
    # f completes at the last event: its deadline is after the end (and with an allowed
    # lateness, its events are still held back when the stream stops).
    events[-2].update(event_type="A", id=0)
    events[-1].update(event_type="C", id=0, t=events[-2]["t"])
    source = tmp_path / "in"
    source.mkdir()
    _write_files(source, events, per_file=30)
    options = {"tie_break": "seq", "id_columns": ["seq"], "allowed_lateness": lateness}
    query = (
        find(_stream(spark, source), text, SCHEMA, **options)
        .writeStream.format("parquet")
        .option("path", str(tmp_path / "out"))
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    streamed = spark.read.parquet(str(tmp_path / "out")).collect()
    end = stream_end(_stream(spark, source), text, SCHEMA, checkpoint=str(tmp_path / "checkpoint"), **options).collect()
    local = _local(text, events)
    assert end and len(_ids(streamed)) < len(local)  # the stream alone misses some
    assert _ids(streamed + end) == local
    batch_frame = spark.read.schema(input_schema()).json(str(source))
    assert _ids(find(batch_frame, text, SCHEMA, tie_break="seq", id_columns=["seq"]).collect()) == local
