"""Spark batch = local engine = reference, for every plan (partitioned, sharded, single)."""

from __future__ import annotations

import pytest

import ceql
from ceql.spark import find, plan_kind
from tests.strategies import TEST_DECLARATION

SCHEMA = ceql.declare(TEST_DECLARATION)


def _stream(n: int = 60, seed: int = 3) -> list[dict]:
    import random

    rng = random.Random(seed)
    events, time = [], 0
    for _ in range(n):
        time += rng.randint(0, 3)
        kind = rng.choice("ABCD")
        events.append(
            {
                "event_type": kind,
                "id": rng.randint(0, 2),
                "v": float(rng.randint(0, 4)) if kind == "C" else rng.randint(0, 4),
                "s": rng.choice(["a", "b"]),
                "t": time,
            }
        )
    return events


def _frame(spark, events):
    import pandas as pd

    frame = pd.DataFrame(events)
    frame["v"] = frame["v"].astype(float)
    return spark.createDataFrame(frame)


QUERIES = [
    ("SELECT * WHERE A AS x; B AS y FILTER x[v > 1] PARTITION BY [id] WITHIN 10 EVENTS", "partitioned"),
    ("SELECT * WHERE A AS x; B+ AS y; C PARTITION BY [id] CONSUME BY PARTITION", "partitioned"),
    ("SELECT * WHERE A AS x; B AS y PARTITION BY [id] WITHIN 4 SECONDS CONSUME BY NONE", "partitioned"),
    ("SELECT * WHERE A AS x; B AS y; C WITHIN 8 EVENTS", "sharded"),
    ("SELECT * WHERE (A ; B) OR (B ; C) WITHIN 5 [t]", "sharded"),
    ("SELECT * WHERE A ; C WITHIN 3 EVENTS CONSUME BY ANY", "single"),
    ("SELECT * WHERE A ; NOT(B) ; C WITHIN 6 EVENTS", "single"),
    ("SELECT * WHERE A AS x; B AS y PARTITION BY [id] CONSUME BY ANY", "single"),
    ("SELECT LAST * WHERE A+ ; B", "single"),
]


@pytest.mark.parametrize("text, kind", QUERIES)
def test_spark_batch_equals_engine_and_reference(spark, text, kind) -> None:
    events = _stream()
    query = ceql.compile(text, SCHEMA)
    assert plan_kind(query) == kind
    rows = find(_frame(spark, events), query, SCHEMA).collect()
    spark_matches = sorted(
        (r.trigger, tuple(r.positions), tuple(sorted((k, tuple(v)) for k, v in r.labels.items())))
        for r in rows
    )
    local = sorted((m.trigger, m.positions, tuple(sorted(m.labels.items()))) for m in query.run(events))
    reference = sorted(
        (m.trigger, m.positions, tuple(sorted(m.labels.items()))) for m in ceql.reference.run(query, events)
    )
    assert spark_matches == local == reference


def test_sharded_plan_equals_single_task(spark) -> None:
    events = _stream(200, seed=11)
    text = "SELECT * WHERE A AS x; B AS y; C AS z FILTER x[v < 3] WITHIN 12 EVENTS"
    query = ceql.compile(text, SCHEMA)
    frame = _frame(spark, events)
    sharded = sorted((r.trigger, tuple(r.positions)) for r in find(frame, query, SCHEMA, shards=7).collect())
    single = sorted((m.trigger, m.positions) for m in query.run(events))
    assert len(single) > 20 and sharded == single


def test_positions_follow_order_by_and_events_are_attached(spark) -> None:
    events = _stream(40, seed=5)
    for index, event in enumerate(events):
        event["seq"] = index
    shuffled = list(reversed(events))  # input order differs from stream order
    query = ceql.compile("SELECT * WHERE A AS x; B AS y WITHIN 5 EVENTS", SCHEMA)
    rows = find(_frame(spark, shuffled), query, SCHEMA, order_by="seq", with_events=True).collect()
    expected = sorted((m.trigger, m.positions) for m in query.run(events))
    assert expected and sorted((r.trigger, tuple(r.positions)) for r in rows) == expected
    for row in rows:
        assert [e["position"] for e in row.events] == list(row.positions)
        assert [e["event_type"] for e in row.events] == ["A", "B"]
        assert [e["t"] for e in row.events] == [events[p]["t"] for p in row.positions]


def test_bad_rows_are_typed_by_the_catalog_with_their_lines(spark, tmp_path) -> None:
    from pathlib import Path

    from pyspark.sql import functions as F

    from ceql.spark.cli import ACCEPTED, FILE, INPUT, KIND, LINE, REASON, REJECTED, read_events

    root = Path(__file__).resolve().parents[1]
    schema = ceql.declare((root / "examples" / "stocks" / "declaration.core").read_text())
    path = tmp_path / "events.csv"
    path.write_text(
        "event_type,id,name,volume,price,stock_time\n"
        "SELL,0,INTC,100,1.5,1\nFOO,1,X,1,1.0,2\nBUY,x,RIMM,1,1.0,3\nSELL,3,,,1.0,4\nBUY,4,RIMM,100,2.5,5\n"
    )
    parsed = read_events(spark, [str(path)], schema, None)
    rejected = parsed.where(F.col(KIND) == REJECTED).orderBy(LINE).collect()
    assert [(r[LINE], r[REASON]) for r in rejected] == [
        (3, "unknown event type 'FOO'"),
        (4, "column id: cannot read 'x' as an integer"),
        (5, "missing field volume"),
    ]
    accepted = parsed.where(F.col(KIND) == ACCEPTED).drop(FILE, LINE, KIND, REASON, INPUT)
    assert dict(accepted.dtypes)["id"] == "bigint" and accepted.count() == 2
    query = ceql.compile("SELECT * FROM S WHERE SELL AS x; BUY AS y", schema)
    rows = find(accepted, query, schema).collect()
    assert [(r.trigger, list(r.positions)) for r in rows] == [(1, [0, 1])]


def test_find_names_a_missing_column(spark) -> None:
    frame = _frame(spark, _stream(10)).withColumnRenamed("v", "vv")
    query = ceql.compile("SELECT * WHERE A AS x FILTER x[v > 1]", SCHEMA)
    with pytest.raises(ceql.CeqlError, match=r"the input has no column v \(declared by A, B, C, D\)"):
        find(frame, query, SCHEMA)
