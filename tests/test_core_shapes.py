"""Real timestamps: the CORE data sets' shapes with epoch-nanosecond primary_time.

For each CORE suite (stocks, smart homes, taxis, crypto, Bluesky: their declarations with the
time attribute as primary_time, and one of their benchmark queries), a seeded stream whose times
are nanoseconds since 1970 must give the same complex events as the same stream with its times
rebased to small numbers: through the Python API, the command line, and Spark. Consecutive
events are an eighth of the query's window apart (neighbours a window apart for the contiguous
crypto query), give or take a few nanoseconds, so whether a
complex event fits in its window is decided at the nanosecond: a float on the way (whose
spacing near 1.7e18 is 256 ns) changes the result.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv
import pytest

import ceql
from ceql.cli import main

BASE = 1_704_067_200_000_000_123  # 2024-01-01T00:00:00.000000123Z (not a multiple of 256)
SECOND = 10**9


@dataclass(frozen=True)
class Suite:
    declaration: str
    query: str
    time: str  # the primary_time attribute
    window_ns: int
    make: object  # (rng) -> attributes of one event, with its event type
    per_window: int = 8  # events per window (1 for contiguous patterns: pairs of neighbours)


def _stock(rng: random.Random) -> dict:
    return {
        "event_type": rng.choice(["BUY", "SELL"]),
        "id": rng.randrange(10**6),
        "name": rng.choice(["INTC", "RIMM", "QQQ", "MSFT"]),
        "volume": rng.choice([100, 200]),
        "price": round(rng.uniform(5, 60), 2),
    }


def _load(rng: random.Random) -> dict:
    return {
        "event_type": "LOAD",
        "id": rng.randrange(10**6),
        "value": round(rng.uniform(0, 150), 3),
        "plug_id": rng.randrange(12),
        "household_id": rng.choice([0, 2, 4, 5]),
    }


ZONES = ["East Harlem North", "Midwood", "Gravesend", "West Brighton"]


LEGS = [("East Harlem North", "Midwood"), ("Midwood", "Gravesend"), ("Gravesend", "West Brighton")]


def _trip(rng: random.Random) -> dict:
    pickup, dropoff = rng.choice(LEGS) if rng.random() < 0.75 else (rng.choice(ZONES), rng.choice(ZONES))
    return {
        "event_type": "TRIP",
        "id": rng.randrange(10**6),
        "medallion": f"M{rng.randrange(50)}",
        "hack_license": f"H{rng.randrange(50)}",
        "pickup_datetime": rng.randrange(10**6),
        "long_time_in_secs": rng.randrange(60, 1800),
        "trip_distance": round(rng.uniform(0.2, 20), 2),
        "pickup_zone": pickup,
        "dropoff_zone": dropoff,
        "payment_type": rng.choice(["CRD", "CSH"]),
        "fare_amount": round(rng.uniform(3, 60), 2),
        "surcharge": 0.5,
        "mta_tax": 0.5,
        "tip_amount": 1.0,
        "tolls_amount": 0.0,
        "total_amount": 10.0,
    }


def _ticker(rng: random.Random) -> dict:
    values = {name: round(rng.uniform(1, 3000), 4) for name in TICKER_NUMBERS}
    return {
        "event_type": rng.choice(["Buy", "Sell"]),
        "product_id": rng.choice(["ETH-USD", "BTC-USD"]),
        **values,
    }


TICKER_NUMBERS = [
    "price", "open24h", "volume_24h", "low_24h", "high_24h", "volume_30d",
    "best_bid", "best_bid_size", "best_ask", "best_ask_size", "last_size",
]  # fmt: skip


def _post(rng: random.Random) -> dict:
    kind = rng.choice(["CreatePost", "CreatePost", "CreateLike"])
    event = {
        "event_type": kind,
        "did": f"did:plc:{rng.randrange(4)}",
        "kind": "commit",
        "time_str": "",
        "cid": f"c{rng.randrange(10**6)}",
        "operation": "create",
        "record_type": "app.bsky.feed.post" if kind == "CreatePost" else "app.bsky.feed.like",
    }
    if kind == "CreatePost":
        event.update(langs=rng.choice(["en", "", "ja"]), text=rng.choice(["hi", "", "a,b", 'say "x"']))
    else:
        event.update(subject_cid="s", subject_uri="at://s")
    return event


SUITES = {
    "stocks": Suite(
        """CREATE STREAM S {
        EVENT BUY { id:int, name:string, volume:int, price:double, stock_time:primary_time },
        EVENT SELL { id:int, name:string, volume:int, price:double, stock_time:primary_time } }""",
        "SELECT * FROM S WHERE (SELL AS T1; BUY AS T2; BUY AS T3) "
        "FILTER T1[name = 'INTC'] AND T2[name = 'RIMM'] AND T3[name = 'QQQ'] WITHIN 10000 [stock_time]",
        "stock_time",
        10_000,
        _stock,
    ),
    "smart_homes": Suite(
        """CREATE STREAM S { EVENT LOAD {
        id:int, plug_timestamp:primary_time, value:double, plug_id:int, household_id:int } }""",
        "SELECT * FROM S WHERE (LOAD AS H1; LOAD AS H2; LOAD AS H3) AS H FILTER H[value > 40] "
        "AND H1[household_id = 0] AND H2[household_id = 2] AND H3[household_id = 4] WITHIN 10 SECONDS",
        "plug_timestamp",
        10 * SECOND,
        _load,
    ),
    "taxis": Suite(
        """CREATE STREAM S { EVENT TRIP {
        id:int, medallion:string, hack_license:string, pickup_datetime:int, dropoff_datetime:primary_time,
        long_time_in_secs:int, trip_distance:double, pickup_zone:string, dropoff_zone:string,
        payment_type:string, fare_amount:double, surcharge:double, mta_tax:double,
        tip_amount:double, tolls_amount:double, total_amount:double } }""",
        "SELECT * FROM S WHERE (TRIP AS loc1; TRIP AS loc2; TRIP AS loc3) FILTER "
        "loc1[pickup_zone = 'East Harlem North' AND dropoff_zone = 'Midwood'] AND "
        "loc2[pickup_zone = 'Midwood' AND dropoff_zone = 'Gravesend'] AND "
        "loc3[pickup_zone = 'Gravesend' AND dropoff_zone = 'West Brighton'] WITHIN 1000 SECONDS",
        "dropoff_datetime",
        1000 * SECOND,
        _trip,
    ),
    "crypto": Suite(
        "CREATE STREAM TICKER {\n"
        + ",\n".join(
            f"EVENT {kind} {{ product_id:string, {', '.join(n + ':double' for n in TICKER_NUMBERS)}, "
            "time:primary_time }"
            for kind in ("Buy", "Sell")
        )
        + "\n}",
        "SELECT * FROM TICKER WHERE (Buy AS X : Sell AS X) OR (Sell AS X : Buy AS X) "
        "FILTER X[product_id = 'ETH-USD'] WITHIN 5000000000 [time]",
        "time",
        5 * SECOND,
        _ticker,
        per_window=1,
    ),
    "bluesky": Suite(
        """CREATE STREAM Bluesky {
        EVENT CreatePost { did:string, kind:string, time:primary_time, time_str:string, cid:string,
            operation:string, record_type:string, langs:string, text:string },
        EVENT CreateLike { did:string, kind:string, time:primary_time, time_str:string, cid:string,
            operation:string, record_type:string, subject_cid:string, subject_uri:string } }""",
        "SELECT * FROM Bluesky WHERE CreatePost ; CreatePost ; CreatePost PARTITION BY [did] WITHIN 10 SECONDS",
        "time",
        10 * SECOND,
        _post,
    ),
}


def stream(suite: Suite, base: int, events: int = 240, seed: int = 7) -> list[dict]:
    """Events an eighth of the window apart (a whole window for contiguous patterns), give or
    take up to 3 ns; the same draws for any base."""
    rng = random.Random(seed)
    time = base
    out = []
    for _ in range(events):
        event = suite.make(rng)
        time += suite.window_ns // suite.per_window + rng.randint(-3, 3)
        event[suite.time] = time
        if suite.time == "time" and "time_str" in event:
            event["time_str"] = str(time)
        out.append(event)
    return out


def _key(matches) -> list[tuple]:
    return sorted((m.trigger, tuple(m.positions), tuple(sorted(m.labels.items()))) for m in matches)


def _records(text: str) -> list[tuple]:
    rows = [json.loads(line) for line in text.splitlines() if line.strip()]
    return sorted((r["trigger"], tuple(r["positions"])) for r in rows)


@pytest.fixture(scope="module", params=sorted(SUITES))
def suite(request) -> tuple[str, Suite]:
    return request.param, SUITES[request.param]


def test_api_gives_the_same_complex_events_on_real_timestamps(suite) -> None:
    name, shape = suite
    schema = ceql.declare(shape.declaration)
    query = ceql.compile(shape.query, schema)
    rebased = _key(query.run(stream(shape, 0)))
    assert rebased, f"{name}: the stream must have complex events"
    epoch = stream(shape, BASE)
    assert _key(query.run(epoch)) == rebased
    assert _key(query.run(pa.Table.from_pylist(epoch))) == rebased
    evaluator = query.evaluator()
    assert _key(m for event in epoch for m in evaluator.push(event)) == rebased


def _csv(path: Path, events: list[dict]) -> Path:
    pacsv.write_csv(pa.Table.from_pylist(events), path)
    return path


def _run_cli(tmp_path: Path, shape: Suite, events: list[dict], tag: str, capsys, *extra: str) -> list[tuple]:
    decl = tmp_path / "decl.core"
    decl.write_text(shape.declaration)
    data = _csv(tmp_path / f"{tag}.csv", events)
    out = tmp_path / f"out-{tag}"
    capsys.readouterr()
    code = main(
        ["run", "-d", str(decl), "-q", shape.query, "-i", str(data), "-o", str(out), "-f", "jsonl", *extra]
    )
    captured = capsys.readouterr()
    assert code == 0, captured.err
    if out.is_dir():
        return _records("\n".join(p.read_text() for p in sorted(out.glob("part-*"))))
    return _records(out.read_text())


def test_command_line_gives_the_same_complex_events_on_real_timestamps(suite, tmp_path, capsys) -> None:
    _, shape = suite
    rebased = _run_cli(tmp_path, shape, stream(shape, 0), "rebased", capsys)
    assert rebased
    assert _run_cli(tmp_path, shape, stream(shape, BASE), "epoch", capsys) == rebased


def test_spark_gives_the_same_complex_events_on_real_timestamps(spark, suite, tmp_path, capsys) -> None:
    _, shape = suite
    rebased = _run_cli(tmp_path, shape, stream(shape, 0), "rebased", capsys)
    epoch = _run_cli(
        tmp_path, shape, stream(shape, BASE), "spark", capsys, "--engine", "spark", "--master", "local[2]"
    )
    assert rebased and epoch == rebased
