"""Spark batch = local engine = reference, for every plan (partitioned, sharded, single); the
result is lazy, joinable and typed; the declaration may come from the DataFrame."""

from __future__ import annotations

import pytest

import ceql
from ceql.spark import explain_plan, find, matcher, plan_kind
from tests.support.strategies import TEST_DECLARATION

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
    rows = find(_frame(spark, events), query, SCHEMA, positions=True).collect()
    spark_matches = sorted((r.trigger, tuple(r.positions), _labels(r)) for r in rows)
    local = sorted((m.trigger, m.positions, tuple(sorted(m.labels.items()))) for m in query.run(events))
    reference = sorted(
        (m.trigger, m.positions, tuple(sorted(m.labels.items()))) for m in ceql.reference.run(query, events)
    )
    assert spark_matches == local == reference


def _labels(row) -> tuple:
    """The labels of a result row (a struct, one field per label; absent without labels), as
    Match.labels has them: the labels that label events, sorted."""
    labels = row.asDict().get("labels")
    found = labels.asDict() if labels is not None else {}
    return tuple(sorted((k, tuple(v)) for k, v in found.items() if v))


def test_sharded_plan_equals_single_task(spark) -> None:
    events = _stream(200, seed=11)
    text = "SELECT * WHERE A AS x; B AS y; C AS z FILTER x[v < 3] WITHIN 12 EVENTS"
    query = ceql.compile(text, SCHEMA)
    frame = _frame(spark, events)
    sharded = sorted(
        (r.trigger, tuple(r.positions))
        for r in find(frame, query, SCHEMA, shards=7, positions=True).collect()
    )
    single = sorted((m.trigger, m.positions) for m in query.run(events))
    assert len(single) > 20 and sharded == single


def test_positions_follow_order_by_and_events_are_attached(spark) -> None:
    events = _stream(40, seed=5)
    for index, event in enumerate(events):
        event["seq"] = index
    shuffled = list(reversed(events))  # input order differs from stream order
    query = ceql.compile("SELECT * WHERE A AS x; B AS y WITHIN 5 EVENTS", SCHEMA)
    found = find(_frame(spark, shuffled), query, SCHEMA, order_by="seq", with_events=True, positions=True)
    rows = found.collect()
    expected = sorted((m.trigger, m.positions) for m in query.run(events))
    assert expected and sorted((r.trigger, tuple(r.positions)) for r in rows) == expected
    assert [f.name for f in found.schema["events"].dataType.elementType.fields] == list(events[0])
    for row in rows:
        assert [e["seq"] for e in row.events] == list(row.positions)
        assert [e["event_type"] for e in row.events] == ["A", "B"]
        assert [e["t"] for e in row.events] == [events[p]["t"] for p in row.positions]
        assert [e["seq"] for e in row.ids.x] == list(row.labels["x"])


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
    ]  # empty fields are missing values (null), as in the local engine
    accepted = parsed.where(F.col(KIND) == ACCEPTED).drop(FILE, LINE, KIND, REASON, INPUT)
    assert dict(accepted.dtypes)["id"] == "bigint" and accepted.count() == 3
    query = ceql.compile("SELECT * FROM S WHERE SELL AS x; BUY AS y", schema)
    rows = find(accepted, query, schema, positions=True).collect()
    assert sorted((r.trigger, list(r.positions)) for r in rows) == [(2, [0, 2]), (2, [1, 2])]


def test_find_names_a_missing_column(spark) -> None:
    frame = _frame(spark, _stream(10)).withColumnRenamed("v", "vv")
    query = ceql.compile("SELECT * WHERE A AS x FILTER x[v > 1]", SCHEMA)
    with pytest.raises(ceql.CeqlError, match=r"the input has no column v \(declared by A, B, C, D\)"):
        find(frame, query, SCHEMA)


@pytest.mark.parametrize(
    "text, options",
    [
        ("SELECT * WHERE A AS x; B AS y PARTITION BY [id] WITHIN 10 EVENTS", {"positions": True}),
        ("SELECT * WHERE A AS x; B AS y; C WITHIN 8 EVENTS", {}),
        ("SELECT * WHERE (A ; B) OR (B ; C) WITHIN 5 [t]", {"positions": True}),
        ("SELECT LAST * WHERE A+ ; B", {"with_events": True}),
    ],
)
def test_find_is_lazy(spark, text, options) -> None:
    """Building the result runs no Spark job (numbering, shard bounds: all inside the plan)."""
    import uuid

    frame = _frame(spark, _stream(40))
    group = f"ceql-lazy-{uuid.uuid4()}"
    spark.sparkContext.setJobGroup(group, "find must not run jobs")
    try:
        found = find(frame, text, SCHEMA, **options)
        assert spark.sparkContext.statusTracker().getJobIdsForGroup(group) == []
        assert found.count() >= 0  # an action runs jobs in that group
        assert spark.sparkContext.statusTracker().getJobIdsForGroup(group)
    finally:
        spark.sparkContext.setJobGroup(None, None)


def test_results_join_back_to_the_input_on_id_columns(spark) -> None:
    from pyspark.sql import functions as F

    events = _stream(80, seed=8)
    for index, event in enumerate(events):
        event["event_id"] = 1000 + index
    frame = _frame(spark, events)
    text = "SELECT * WHERE A AS x; B+ AS y FILTER x[v > 0] PARTITION BY [id] WITHIN 6 EVENTS"
    found = find(frame, text, SCHEMA, id_columns=["event_id"], positions=True)
    exploded = found.select("trigger", F.posexplode("ids.y").alias("i", "e")).select(
        "trigger", "i", "e.event_id"
    )
    joined = exploded.join(frame, "event_id").select("trigger", "i", "event_id", "event_type", "id")
    rows = joined.collect()
    query = ceql.compile(text, SCHEMA)
    expected = sorted(
        (m.trigger, i, 1000 + p, "B", events[p]["id"])
        for m in query.run(events)
        for i, p in enumerate(m.labels["y"])
    )
    assert expected and sorted(tuple(r) for r in rows) == expected


def test_declaration_from_the_dataframe_schema(spark) -> None:
    events = _stream(60, seed=4)
    frame = _frame(spark, events).withColumnRenamed("event_type", "kind")
    text = "SELECT * WHERE A AS x; C AS y FILTER y[v >= 1.5] PARTITION BY [id] WITHIN 4 SECONDS"
    derived = find(frame, text, event_type="kind", time_column="t", time_unit="s", id_columns=["t", "kind"])
    declared = ceql.declare(
        "CREATE STREAM S { EVENT A { id:int, v:double, s:string, t:primary_time(s) },"
        " EVENT C { id:int, v:double, s:string, t:primary_time(s) } }"
    )
    subset = [e for e in events if e["event_type"] in "AC"]
    expected = sorted(
        tuple((subset[p]["t"], subset[p]["event_type"]) for p in m.positions)
        for m in ceql.compile(text, declared).run(subset)
    )
    got = sorted(tuple((e.t, e.kind) for e in r.events) for r in derived.collect())
    assert expected and got == expected


@pytest.mark.parametrize(
    "call, message",
    [
        (
            lambda f: find(f.drop("event_type"), "SELECT * WHERE A ; B", time_column="t"),
            r"no event-type column 'event_type'",
        ),
        (lambda f: find(f, "SELECT * WHERE A AS x; B FILTER x[vv > 1]", time_column="t"), r"vv"),
        (lambda f: find(f, "SELECT * WHERE A AS x; B FILTER x[vv > 1]", SCHEMA), r"unknown attribute|vv"),
        (
            lambda f: find(f, "SELECT * WHERE A ; B", SCHEMA, id_columns=["nope"]),
            r"id_columns names no column.*nope",
        ),
        (
            lambda f: find(f, "SELECT * WHERE A ; B", time_column="when"),
            r"time_column='when' is not a column",
        ),
    ],
)
def test_errors_name_the_users_columns(spark, call, message) -> None:
    frame = _frame(spark, _stream(10))
    with pytest.raises(ceql.CeqlError, match=message) as caught:
        call(frame)
    assert "__ceql" not in str(caught.value)


def test_matcher_with_transform_and_typed_measures(spark) -> None:
    events = _stream(60, seed=9)
    text = "SELECT x, COUNT(y) AS n, AVG(y.v) AS mean, x.s AS label WHERE A AS x; B+ AS y PARTITION BY [id] WITHIN 5 EVENTS"
    found = _frame(spark, events).transform(matcher(text, SCHEMA, positions=True))
    kinds = dict(found.dtypes)
    assert (kinds["n"], kinds["mean"], kinds["label"]) == ("bigint", "double", "string")
    query = ceql.compile(text, SCHEMA)
    local = query.run(events, output="arrow")
    expected = sorted(
        zip(
            local.column("trigger").to_pylist(),
            local.column("n").to_pylist(),
            local.column("mean").to_pylist(),
        )
    )
    assert expected and sorted((r.trigger, r.n, r.mean) for r in found.collect()) == expected


def test_iso_text_times_and_double_windows_agree_with_the_local_engine(spark) -> None:
    """Known defects: ISO-8601 text times were not ordered (cast to long gave null) and the
    sharded plan decided shard boundaries with doubles."""
    import datetime as dt

    events = _stream(120, seed=13)
    base = dt.datetime(2024, 3, 1, tzinfo=dt.timezone.utc)
    iso = [dict(e, t=(base + dt.timedelta(seconds=e["t"], microseconds=7)).isoformat()) for e in events]
    schema = ceql.declare(TEST_DECLARATION)
    for text in (
        "SELECT * WHERE A AS x; B AS y; C WITHIN 9 SECONDS",
        "SELECT * WHERE A AS x; C AS y WITHIN 2 [v]",
        "SELECT * WHERE A AS x; B AS y PARTITION BY [id] WITHIN 6 SECONDS",
    ):
        query = ceql.compile(text, schema)
        expected = sorted((m.trigger, m.positions) for m in query.run(iso))
        got = find(_frame(spark, iso), query, positions=True, shards=9).collect()
        assert expected and sorted((r.trigger, tuple(r.positions)) for r in got) == expected, text


ABSENCE_QUERIES = [
    # time window: a key's deadlines pass at its own events, the trigger is the stream's
    ("SELECT * WHERE A AS x NOT FOLLOWED BY B AS y PARTITION BY [id] WITHIN 3 SECONDS", "partitioned"),
    ("SELECT * WHERE A AS x; C AS z NOT FOLLOWED BY B AS y FILTER y[v > 1] PARTITION BY [id] WITHIN 5 SECONDS", "partitioned"),
    # n EVENTS: the deadline is a position of the whole stream
    ("SELECT * WHERE A AS x NOT FOLLOWED BY B PARTITION BY [id] WITHIN 6 EVENTS", "partitioned"),
    # an attribute window
    ("SELECT * WHERE A AS x NOT FOLLOWED BY (B ; D) PARTITION BY [id] WITHIN 4 [t]", "partitioned"),
    # what acts on the complex events of one trigger: kept whole
    ("SELECT * WHERE A AS x NOT FOLLOWED BY B PARTITION BY [id] WITHIN 3 SECONDS LIMIT 1", "single"),
    ("SELECT ANY * WHERE A+ AS x NOT FOLLOWED BY B PARTITION BY [id] WITHIN 3 SECONDS", "single"),
    ("SELECT * WHERE A AS x NOT FOLLOWED BY B PARTITION BY [id] WITHIN 3 SECONDS CONSUME BY PARTITION", "single"),
    ("SELECT * WHERE A AS x NOT FOLLOWED BY B WITHIN 3 SECONDS", "single"),
    # no PARTITION BY: split by the equality linking g to f's one event (compile.plan.split_keys)
    ("SELECT * WHERE A AS x NOT FOLLOWED BY B AS y FILTER y.id = x.id WITHIN 3 SECONDS", "partitioned"),
    ("SELECT * WHERE (A OR C) AS x NOT FOLLOWED BY B AS y FILTER y.id = x.id WITHIN 5 EVENTS", "partitioned"),
    (
        "SELECT * WHERE A AS x FILTER x[v > 1] NOT FOLLOWED BY (B AS y ; D AS w) FILTER y.id = x.id AND w.id = x.id "
        "WITHIN 4 [t]",
        "partitioned",
    ),
    # keys of two column types (id bigint, v double in the DataFrame): equal values, one bucket
    ("SELECT * WHERE A AS x NOT FOLLOWED BY B AS y FILTER y.v = x.id WITHIN 4 SECONDS", "partitioned"),
    # f of two events, or a projection: one task
    ("SELECT * WHERE A AS x ; C AS z NOT FOLLOWED BY B AS y FILTER y.id = x.id WITHIN 3 SECONDS", "single"),
    ("SELECT x WHERE A AS x NOT FOLLOWED BY B AS y FILTER y.id = x.id WITHIN 3 SECONDS", "single"),
]


@pytest.mark.parametrize("text, kind", ABSENCE_QUERIES)
def test_not_followed_by_splits_by_key_and_equals_the_engine(spark, text, kind) -> None:
    events = _stream(120, seed=5)
    query = ceql.compile(text, SCHEMA)
    assert plan_kind(query) == kind
    frame = _frame(spark, events)
    local = sorted((m.trigger, m.positions, tuple(sorted(m.labels.items()))) for m in query.run(events))
    assert local  # the data has complex events, some at the end of the input
    rows = find(frame, query, SCHEMA, positions=True).collect()
    assert sorted((r.trigger, tuple(r.positions), _labels(r)) for r in rows) == local
    # Without positions (no trigger shown): the same complex events, no trigger step.
    plain = find(frame, query, SCHEMA, id_columns=["t", "s"]).collect()
    assert len(plain) == len(local)


def test_not_followed_by_split_by_an_equality_keeps_events_without_a_key(spark) -> None:
    """Orders by id, payments by order (int and double columns): an order without an id is
    never cancelled and is still reported, at the stream's trigger; 0.0 and -0.0 are one key."""
    import pandas as pd

    shop = ceql.declare(
        "CREATE STREAM Shop { EVENT Order { id:int, ts:primary_time }, EVENT Payment { order:double, ts:primary_time } }"
    )
    text = "SELECT * FROM Shop WHERE Order AS o NOT FOLLOWED BY Payment AS p FILTER p.order = o.id WITHIN 10 SECONDS"
    query = ceql.compile(text, shop)
    assert plan_kind(query) == "partitioned"
    assert "Order by [id]" in explain_plan(query)
    second = 10**9
    events = []
    for i in range(40):  # orders 0..9 paid, some late; orders without id; a -0.0 payment for order 0
        events.append({"event_type": "Order", "id": None if i % 7 == 3 else i % 10, "order": None, "ts": i * second})
        paid = -0.0 if i % 10 == 0 else float(i % 10)
        events.append({"event_type": "Payment", "id": None, "order": paid, "ts": (i + (i % 3) * 6) * second})
    events.sort(key=lambda e: e["ts"])
    frame = pd.DataFrame(events)
    frame["id"] = frame["id"].astype("Int64")
    frame["order"] = frame["order"].astype(float)
    local = sorted((m.trigger, m.positions) for m in query.run(events))
    assert local and any(events[m[1][0]]["id"] is None for m in local)
    rows = find(spark.createDataFrame(frame), query, shop, positions=True).collect()
    assert sorted((r.trigger, tuple(r.positions)) for r in rows) == local


def test_find_without_a_declaration_refuses_an_event_type_the_data_lacks(spark) -> None:
    """A misspelt type would match nothing: find refuses it, as the CLI refuses a type its
    declaration lacks, and names the types the data has."""
    frame = _frame(spark, _stream(30))
    with pytest.raises(ceql.CeqlError, match=r"event type AA \(did you mean A\?\), which no row .* \(it has: A, B, C, D\)"):
        find(frame, "SELECT * WHERE AA; B PARTITION BY [id]", time_column="t")
    # Present types: accepted (and a declaration may name types the data lacks).
    assert find(frame, "SELECT * WHERE A; B PARTITION BY [id]", time_column="t").count() > 0
    declared = "CREATE STREAM S { EVENT A { id:int, t:primary_time }, EVENT E { id:int, t:primary_time } }"
    only_a = frame.where("event_type = 'A'").select("event_type", "id", "t")
    assert find(only_a, "SELECT * FROM S WHERE A; E PARTITION BY [id]", declared).count() == 0


def test_find_names_an_unknown_option() -> None:
    """find passes its stream options on to prepare_stream: a misspelt one is refused by name,
    before anything reads the DataFrame."""
    with pytest.raises(TypeError, match=r"find\(\) got an unexpected keyword argument 'tie_brake'"):
        find(None, "SELECT * WHERE A; B", SCHEMA, tie_brake="s")
