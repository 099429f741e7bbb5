"""One bad-row policy: the Python API's ``on_error`` (skip, dead-letter, counts) with the command
line's reasons and record format; dead-letter records in input order, with the time as the
input gave it and an ``input`` always; integer times in a declared unit scaled once."""

from __future__ import annotations

import io
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import ceql
from ceql.cli import main

DECL = "CREATE STREAM S { EVENT A { id:int, ts:primary_time(ms) }, EVENT B { id:int, ts:primary_time(ms) } }"
SCHEMA = ceql.declare(DECL)
WINDOWED = ceql.compile("SELECT * FROM S WHERE A AS a ; B AS b FILTER b[id > 0] WITHIN 10 SECONDS", SCHEMA)
EVENTS = [
    {"event_type": "A", "id": 1, "ts": 1000},
    {"event_type": "B", "id": "two", "ts": 1500},  # a bad value
    {"event_type": "B", "id": 3, "ts": 500},  # out of order (the window needs time order)
    {"event_type": "Z"},  # an unknown type
    {"event_type": "B", "id": 4, "ts": 2000},
    7,  # not an event
]


def test_fail_raises_at_the_first_bad_row_as_before() -> None:
    with pytest.raises(ceql.EventError, match="row 5: an event must be a dict"):
        list(WINDOWED.run(EVENTS))
    with pytest.raises(ceql.EventError, match="row 1: column id: cannot read 'two' as an integer"):
        list(WINDOWED.run(EVENTS[:5]))


def test_skip_leaves_bad_rows_out_and_counts_them_as_the_cli_does() -> None:
    matches = WINDOWED.run(EVENTS, on_error="skip")
    assert [m.positions for m in matches] == [(0, 1)]  # positions count the events kept
    assert matches.rejected == 4
    assert matches.reasons == {"bad value": 1, "out of order": 1, "unknown event type": 1, "other": 1}
    assert matches.summary() == "4 rejected (1 bad value, 1 other, 1 out of order, 1 unknown event type)"
    table = WINDOWED.run(EVENTS, output="arrow", on_error="skip")
    assert table.column("positions").to_pylist() == [[0, 1]]


def test_dead_letter_records_go_to_a_function_a_stream_or_a_file(tmp_path) -> None:
    records: list[dict] = []
    assert len(list(WINDOWED.run(EVENTS, on_error="dead-letter", dead_letter=records.append))) == 1
    assert [(r["row"], r["reason"].split(":")[0]) for r in records] == [
        (1, "column id"),
        (2, "out of order"),
        (3, "unknown event type 'Z'"),
        (5, "an event must be a dict, not int"),
    ]
    assert all(list(r) == ["source", "row", "reason", "input"] for r in records)
    assert records[2]["input"] == '{"event_type": "Z"}'
    # The time as the input gave it: milliseconds here, not the engine's nanoseconds.
    assert records[1]["reason"].startswith("out of order: time 500 after 1000")
    stream = io.StringIO()
    list(WINDOWED.run(EVENTS, on_error="dead-letter", dead_letter=stream))
    assert [json.loads(line) for line in stream.getvalue().splitlines()] == records
    path = tmp_path / "dead.jsonl"
    list(WINDOWED.run(EVENTS, on_error="dead-letter", dead_letter=path))
    assert [json.loads(line) for line in path.read_text().splitlines()] == records
    with pytest.raises(ValueError, match="needs a file"):
        WINDOWED.run(EVENTS, on_error="dead-letter")


def test_push_takes_the_policy_per_call() -> None:
    evaluator = WINDOWED.evaluator()
    assert evaluator.push(EVENTS[0]) == []
    with pytest.raises(ceql.EventError, match="cannot read 'two'"):
        evaluator.push(EVENTS[1])
    assert evaluator.push(EVENTS[1], on_error="skip") == []
    assert evaluator.push(EVENTS[2], on_error="skip") == []
    assert [m.positions for m in evaluator.push(EVENTS[4], on_error="skip")] == [(0, 1)]
    assert evaluator.errors.rejected == 2
    records: list[dict] = []
    keeper = WINDOWED.evaluator(on_error="dead-letter", dead_letter=records.append)
    keeper.push(EVENTS[0])
    keeper.push(EVENTS[3])
    assert [r["reason"] for r in records] == ["unknown event type 'Z'"]


def test_integer_times_in_a_declared_unit_are_scaled_once_on_every_path(tmp_path) -> None:
    """1000 ms and 2500 ms are 1.5 s apart: inside WITHIN 2 SECONDS, outside WITHIN 1 SECOND
    (the command line scaled its readers' nanoseconds again, the reference not at all)."""
    events = [{"event_type": "A", "id": 1, "ts": 1000}, {"event_type": "B", "id": 1, "ts": 2500}]
    decl = tmp_path / "decl.core"
    decl.write_text(DECL)
    csv = tmp_path / "events.csv"
    csv.write_text("event_type,id,ts\nA,1,1000\nB,1,2500\n")
    for seconds, expected in ((2, [(0, 1)]), (1, [])):
        text = f"SELECT * FROM S WHERE A AS a ; B AS b WITHIN {seconds} SECONDS"
        query = ceql.compile(text, SCHEMA)
        assert [m.positions for m in query.run(events)] == expected
        assert [m.positions for m in ceql.reference.run(query, events)] == expected
        for evaluator in ("python", "compiled"):
            out = tmp_path / f"out-{seconds}-{evaluator}.jsonl"
            args = ["run", "-d", str(decl), "-q", text, "-i", str(csv), "-o", str(out), "--quiet"]
            assert main([*args, "--evaluator", evaluator]) == 0
            assert [tuple(json.loads(line)["positions"]) for line in out.read_text().splitlines()] == expected


def test_cli_dead_letter_records_come_in_line_order_with_their_input(tmp_path) -> None:
    """An out-of-order row is found after later lines were parsed; its record still comes
    first, shows the time as the input gave it, and carries the row as its input."""
    decl = tmp_path / "decl.core"
    decl.write_text(DECL)
    csv = tmp_path / "events.csv"
    csv.write_text("event_type,id,ts\nA,1,2024-01-01T00:00:02Z\nB,2,2024-01-01T00:00:01Z\nB,x,2024-01-01T00:00:03Z\n")
    dead = tmp_path / "dead.jsonl"
    args = ["run", "-d", str(decl), "-q", "SELECT * FROM S WHERE A ; B", "-i", str(csv), "--quiet"]
    assert main([*args, "-o", str(tmp_path / "out.jsonl"), "--on-error", "dead-letter", "--dead-letter", str(dead)]) == 0
    records = [json.loads(line) for line in dead.read_text().splitlines()]
    assert [r["line"] for r in records] == [3, 4]
    assert all(list(r) == ["source", "line", "reason", "input"] for r in records)
    assert records[0]["reason"].startswith("out of order: time 2024-01-01T00:00:01Z after 2024-01-01T00:00:02Z")
    assert json.loads(records[0]["input"]) == {"event_type": "B", "id": 2, "ts": "2024-01-01T00:00:01Z"}
    assert records[1]["input"] == "B,x,2024-01-01T00:00:03Z"


def test_several_queries_write_one_schema(tmp_path) -> None:
    """The union of the queries' columns; each query's rows leave the others' null."""
    decl = tmp_path / "decl.core"
    decl.write_text(DECL)
    csv = tmp_path / "events.csv"
    csv.write_text("event_type,id,ts\nA,1,1000\nB,1,2500\n")
    out = tmp_path / "out.parquet"
    queries = [
        "SELECT a.ts AS start FROM S WHERE A AS a ; B AS b PARTITION BY [id]",
        "SELECT COUNT(*) AS start_count FROM S WHERE A AS x ; B",
    ]
    args = ["run", "-d", str(decl), "-q", queries[0], "-q", queries[1], "-i", str(csv), "-o", str(out), "--quiet"]
    assert main(args) == 0
    table = pq.read_table(out)
    assert table.column_names == ["query", "trigger", "positions", "labels", "partition", "start", "start_count"]
    assert table.schema.field("labels").type.names == ["a", "b", "x"]
    rows = sorted(table.to_pylist(), key=lambda r: r["query"])
    assert [r["query"] for r in rows] == ["q1", "q2"]
    assert rows[0]["start"] == 1000 and rows[0]["start_count"] is None and rows[0]["labels"]["x"] is None
    assert rows[1]["partition"] is None and rows[1]["start_count"] == 2 and rows[1]["labels"]["x"] == [0]
    assert table.schema.field("partition").type == pa.struct([("id", pa.int64())])
