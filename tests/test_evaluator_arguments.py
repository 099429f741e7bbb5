"""push, advance and finish take what they document and refuse the rest with a CeqlError
(issue 38): after ``finish()`` no more events; ``advance`` with a time beyond int64 or given as
bytes; ``"0x10"`` is no int and ``b"A"`` no event type; a lone surrogate is a bad value on every
path (push on the Python path and on the kernel, batches, files)."""

from __future__ import annotations

import json

import pytest

import ceql
from ceql.errors import CeqlError, EventError, UsageError

SCHEMA = ceql.declare(
    "CREATE STREAM S { EVENT A { v:int, s:string, ts:primary_time }, EVENT B { v:int, s:string, ts:primary_time } }"
)
WINDOWED = ceql.compile("SELECT * FROM S WHERE A AS a ; B AS b FILTER a[v > 0] WITHIN 10 SECONDS", SCHEMA)
ENGINES = ["python", "compiled"]


@pytest.mark.parametrize("engine", ENGINES)
def test_no_events_after_finish(engine) -> None:
    evaluator = WINDOWED.evaluator(engine=engine)
    evaluator.push({"event_type": "A", "v": 1, "ts": 1})
    assert evaluator.finish() == []
    for call in (
        lambda: evaluator.push({"event_type": "B", "v": 1, "ts": 2}),
        lambda: evaluator.push_batch([{"event_type": "B", "v": 1, "ts": 2}]),
        lambda: list(evaluator.process([{"event_type": "B", "v": 1, "ts": 2}])),
        lambda: evaluator.advance(5),
    ):
        with pytest.raises(UsageError, match="after finish"):
            call()
    assert evaluator.finish() == []  # a second finish reports nothing new


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("time", [2**63, -(2**63) - 1, b"123", bytearray(b"1"), True, "x", None])
def test_advance_refuses_what_is_no_time(engine, time) -> None:
    evaluator = WINDOWED.evaluator(engine=engine)
    with pytest.raises(UsageError, match=r"advance\(\) needs a time"):
        evaluator.advance(time)
    assert isinstance(UsageError("x"), (CeqlError, ValueError))
    # The same on a query without a time window (nothing to advance, but no bad time accepted).
    plain = ceql.compile("SELECT * FROM S WHERE A ; B", SCHEMA).evaluator(engine=engine)
    with pytest.raises(UsageError):
        plain.advance(time)


@pytest.mark.parametrize("engine", ENGINES)
def test_advance_takes_the_int64_edges_and_iso_text(engine) -> None:
    evaluator = WINDOWED.evaluator(engine=engine)
    assert evaluator.advance(-(2**63)) == []
    assert evaluator.advance("2024-01-01T00:00:00Z") == []
    assert evaluator.advance(2**63 - 1) == []


BAD_EVENTS = [
    ({"event_type": "A", "v": "0x10", "ts": 1}, "column v: cannot read '0x10' as an integer"),
    ({"event_type": "A", "v": 1, "ts": "0x10"}, "column ts: cannot read '0x10' as a time"),
    ({"event_type": b"A", "v": 1, "ts": 1}, "event_type: cannot read a bytes value as a string"),
    ({"event_type": "A", "v": 1, "s": b"x", "ts": 1}, "column s: cannot read a bytes value as a string"),
    ({"event_type": "A", "v": 1, "s": "a\ud800", "ts": 1}, "column s: 'a\\ud800' holds a lone surrogate"),
    ({"event_type": "\udc00", "v": 1, "ts": 1}, "event_type: '\\udc00' holds a lone surrogate"),
]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("event, reason", BAD_EVENTS)
def test_one_rule_for_a_bad_value_on_every_path(engine, event, reason) -> None:
    with pytest.raises(EventError, match="row 0: " + reason.replace("(", r"\(").replace("\\u", "\\\\u")):
        WINDOWED.evaluator(engine=engine).push(event)
    with pytest.raises(EventError) as batch:
        list(WINDOWED.run([event], engine=engine))
    assert batch.value.reason.startswith(reason)
    records: list[dict] = []
    assert WINDOWED.evaluator(engine=engine, on_error="dead-letter", dead_letter=records.append).push(event) == []
    assert records[0]["reason"].startswith(reason)


def test_hexadecimal_text_is_no_int_in_files_either(tmp_path) -> None:
    """Arrow's cast reads "0x10" as 16: the readers of every format do not."""
    from ceql.cli import main

    (tmp_path / "decl.core").write_text(SCHEMA.text())
    (tmp_path / "ev.csv").write_text("event_type,v,ts\nA,0x10,1\nB,1,2\n")
    (tmp_path / "ev.jsonl").write_text(json.dumps({"event_type": "A", "v": "0X1F", "ts": 1}) + "\n")
    for name in ("ev.csv", "ev.jsonl"):
        status = main(["run", "-d", str(tmp_path / "decl.core"), "-q", "SELECT * FROM S WHERE A", "-i", str(tmp_path / name), "--quiet"])
        assert status == 2
