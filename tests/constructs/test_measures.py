"""Measures in every output: Match, Arrow (both engine paths), JSON Lines and Parquet from the
CLI; ``SELECT x[a, b]`` restricts the attributes reported for x's events."""

from __future__ import annotations

import json

import pyarrow.parquet as pq

import ceql
from ceql.cli import main
from tests.support.cli import run_cli
from tests.support.examples import SCHEMA, ev, letters, run

DECL = "CREATE STREAM S { EVENT BUY { id:int, name:string, price:double }, EVENT SELL { id:int, name:string, price:double } }"
QUERY = "SELECT s[price], b, AVG(b.price) AS avg_b, COUNT(b) AS n, b.price AS prices FROM S WHERE SELL AS s ; BUY+ AS b"
EVENTS = [
    {"event_type": "SELL", "id": 1, "name": "INTC", "price": 10.5},
    {"event_type": "BUY", "id": 2, "name": "RIMM", "price": 3.0},
    {"event_type": "BUY", "id": 3, "name": "QQQ", "price": 4.0},
]


def test_measures_in_matches_and_arrow() -> None:
    query = ceql.compile(QUERY, ceql.declare(DECL))
    matches = list(query.run(EVENTS))
    assert sorted(matches) == sorted(ceql.reference.run(query, EVENTS))
    last = [m for m in matches if m.positions == (0, 1, 2)][0]
    assert last.measures == {"avg_b": 3.5, "n": 2, "prices": (3.0, 4.0)}
    table = query.run(EVENTS, output="arrow")
    assert table.column_names == ["query", "trigger", "positions", "labels", "avg_b", "n", "prices"]
    assert table.schema.field("labels").type.names == ["b", "s"]
    assert str(table.schema.field("n").type) == "int64"
    assert str(table.schema.field("prices").type) == "list<element: double>"
    rows = table.to_pylist()  # the order of one trigger's matches is not specified
    assert [r["prices"] for r in rows if r["positions"] == [0, 1, 2]] == [[3.0, 4.0]]


def test_measures_and_typed_events_from_the_cli(tmp_path, capsys) -> None:
    decl = tmp_path / "decl.core"
    decl.write_text(DECL)
    events = tmp_path / "events.jsonl"
    events.write_text("\n".join(json.dumps(e) for e in EVENTS) + "\n")
    assert main(["run", "-d", str(decl), "-q", QUERY, "-i", str(events), "--with-events", "--quiet"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert list(lines[-1]) == ["query", "trigger", "positions", "labels", "avg_b", "n", "prices", "events"]
    assert {k: lines[-1][k] for k in ("avg_b", "n", "prices")} == {"avg_b": 3.5, "n": 2, "prices": [3.0, 4.0]}
    sell = lines[-1]["events"][0]
    assert sell["event_type"] == "SELL" and sell["name"] is None and sell["price"] == 10.5  # s[price]
    assert lines[-1]["events"][1]["name"] == "RIMM"  # b: every attribute
    out = tmp_path / "out.parquet"
    assert main(["run", "-d", str(decl), "-q", QUERY, "-i", str(events), "--with-events", "-o", str(out), "--quiet"]) == 0
    table = pq.read_table(out)
    assert str(table.schema.field("avg_b").type) == "double"
    event_fields = {f.name: str(f.type) for f in table.schema.field("events").type.value_type}
    assert event_fields["price"] == "double" and event_fields["id"] == "int64"
    assert table.column("n").to_pylist() == [1, 1, 2]


def test_times_are_shown_as_the_input_gave_them(tmp_path) -> None:
    """ISO-8601 (or timestamp) input times come out as timestamps, in --with-events and in
    timestamp measures, on JSON Lines (ISO text) and Parquet (timestamp[ns, UTC]); integer
    input times stay integers, in their declared unit. Durations (differences of times) are
    nanoseconds either way."""
    import json

    import pyarrow.parquet as pq

    decl = tmp_path / "decl.core"
    decl.write_text("CREATE STREAM S { EVENT A { id:int, ts:primary_time(ms) }, EVENT B { id:int, ts:primary_time(ms) } }")
    query = "SELECT a.ts AS start, b.ts - a.ts AS gap FROM S WHERE A AS a ; B AS b WITHIN 10 SECONDS"
    iso = tmp_path / "iso.csv"
    iso.write_text("event_type,id,ts\nA,1,2024-01-01T00:00:00Z\nB,1,2024-01-01T00:00:01.5Z\n")
    ints = tmp_path / "ints.csv"
    ints.write_text("event_type,id,ts\nA,1,1704067200000\nB,1,1704067201500\n")

    def run(path, *extra):
        result = run_cli("run", "-d", str(decl), "-q", query, "-i", str(path), "--with-events", "--quiet", *extra)
        assert result.returncode == 0, result.stderr
        return result.stdout

    (record,) = map(json.loads, run(iso).splitlines())
    assert (record["start"], record["gap"]) == ("2024-01-01T00:00:00Z", 1_500_000_000)
    assert [e["ts"] for e in record["events"]] == ["2024-01-01T00:00:00Z", "2024-01-01T00:00:01.5Z"]
    (record,) = map(json.loads, run(ints).splitlines())
    assert (record["start"], record["gap"]) == (1704067200000, 1_500_000_000)  # ms in, ms out
    assert [e["ts"] for e in record["events"]] == [1704067200000, 1704067201500]
    out = tmp_path / "out.parquet"
    run(iso, "-f", "parquet", "-o", str(out))
    table = pq.read_table(out)
    assert str(table.schema.field("start").type) == "timestamp[ns, tz=UTC]"
    assert table.schema.field("gap").type == "int64"
    (row,) = table.to_pylist()
    assert [e["ts"].isoformat() for e in row["events"]] == ["2024-01-01T00:00:00+00:00", "2024-01-01T00:00:01.500000+00:00"]
    run(ints, "-f", "parquet", "-o", str(out), "--overwrite")
    assert pq.read_table(out).schema.field("start").type == "int64"


def test_measures_of_one_and_many_event_labels() -> None:
    # a holds one event (a value), b may hold several (a tuple in stream order).
    stream = [ev("A", 3), ev("B", 4), ev("B", 2)]
    matches = run("SELECT a.v AS av, b.v AS bv WHERE A AS a ; B+ AS b", stream)
    assert [(m.trigger, m.positions, dict(m.measures)) for m in matches] == [
        (1, (0, 1), {"av": 3, "bv": (4,)}),
        (2, (0, 1, 2), {"av": 3, "bv": (4, 2)}),
        (2, (0, 2), {"av": 3, "bv": (2,)}),
    ]
    checked = ceql.check("SELECT a.v AS av, b.v AS bv, AVG(b.v) AS m WHERE A AS a ; B+ AS b", SCHEMA)
    assert checked.measure_types == {"av": "int", "bv": "list<int>", "m": "double"}


def test_all_aggregates_as_measures() -> None:
    stream = [ev("A", 3), ev("B", 4, p=1.5), ev("B", 2, p=2.5), ev("B", 6, p=-1.0), ev("C")]
    query = (
        "SELECT FIRST(b).v AS f, LAST(b).v AS l, MIN(b.v) AS lo, MAX(b.v) AS hi, SUM(b.v) AS s, "
        "SUM(b.p) AS sp, AVG(b.v) AS m, COUNT(b) AS n, COUNT(*) AS everything, MAX(b.s) "
        "WHERE A ; B+ AS b ; C FILTER COUNT(b) = 3"
    )
    (match,) = run(query, stream)
    assert dict(match.measures) == {
        "f": 4, "l": 6, "lo": 2, "hi": 6, "s": 12, "sp": 3.0, "m": 4.0, "n": 3, "everything": 5, "MAX(b.s)": "",
    }  # fmt: skip


def test_measures_never_change_which_complex_events_are_reported() -> None:
    # At 2 there are two CEs ({0,2}: one b, {0,1,2}: two b's): two results with NONE + COUNT,
    # one with NONE alone (equal results are reported once).
    stream = letters("ABB")
    with_count = run("SELECT NONE, COUNT(b) AS n WHERE A ; B+ AS b", stream)
    assert [(m.trigger, m.positions, dict(m.measures)) for m in with_count] == [
        (1, (), {"n": 1}),
        (2, (), {"n": 1}),
        (2, (), {"n": 2}),
    ]
    assert [(m.trigger, m.positions) for m in run("SELECT NONE WHERE A ; B+ AS b", stream)] == [
        (1, ()),
        (2, ()),
    ]


def test_measures_see_the_whole_complex_event_not_only_the_projection() -> None:
    matches = run("SELECT a, COUNT(b) AS n WHERE A AS a ; B+ AS b", letters("ABB"))
    assert [(m.positions, dict(m.labels), dict(m.measures)) for m in matches] == [
        ((0,), {"a": (0,)}, {"n": 1}),
        ((0,), {"a": (0,)}, {"n": 1}),
        ((0,), {"a": (0,)}, {"n": 2}),
    ]
