"""Seeded generators of the benchmark streams, as Arrow tables (CORE's schemas and synthetic ones).

Every generator is deterministic for a given size and seed. Positions are row indexes, and every
schema starts with an ``id`` attribute equal to the position, so that the competitors' outputs
(CORE++ prints events, not positions) can be compared with ceql's positions.

The CORE data sets are not available here, so their schemas are filled with synthetic values
chosen to make CORE's benchmark queries *match* at realistic rates: the tickers, households and
zones the queries name are among the frequent ones, windows span about a hundred (stocks) to a
few hundred events, and the long sequences (6 to 24 steps), which random data essentially never
contains, are planted: every few thousand events the query's whole chain is written into the
stream at nearby positions, with the stream's ordinary events in between (so skip-till-any still
finds several ways through each occurrence).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

# ----------------------------------------------------------------------------------------- stocks

# The time attributes are declared ``primary_time``, as in CORE's own declarations: the generated
# times never decrease, so a ``WITHIN n [time]`` window lets both engines drop expired partial
# matches. (Declared ``int``, the window is over a non-monotone attribute for ceql: nothing can
# be pruned and long streams cost quadratic time.) Integer times are taken as they are.
STOCK_DECLARATION = """CREATE STREAM S {
EVENT BUY { id:int, name:string, volume:int, price:double, stock_time:primary_time },
EVENT SELL { id:int, name:string, volume:int, price:double, stock_time:primary_time }
}"""
# The tickers the CORE queries use (the busy NASDAQ names of the early 2000s) and their share of
# the trades; the rest is spread over a long tail of other tickers.
QUERY_TICKERS = {
    "INTC": 0.030,
    "MSFT": 0.030,
    "CSCO": 0.030,
    "QQQ": 0.030,
    "ORCL": 0.020,
    "DELL": 0.015,
    "YHOO": 0.015,
    "AMAT": 0.015,
    "RIMM": 0.010,
    "IPIX": 0.005,
}
OTHER_TICKERS = [f"T{i:03d}" for i in range(290)]
STOCK_VOLUMES = [100, 200, 500, 1000, 2000, 4000]
# q5's chain (q1-q4 are its prefixes): (event type, ticker) per step.
_STOCK_CHAIN = ["INTC", "RIMM", "QQQ", "IPIX", "AMAT", "CSCO", "YHOO", "DELL", "ORCL", "MSFT", "INTC", "RIMM"]
STOCK_CHAIN = [("SELL" if i % 3 == 0 else "BUY", name) for i, name in enumerate(_STOCK_CHAIN * 2)]
# other-q1..q6: MSFT sold, ORCL and CSCO traded, AMAT sold (planted with one common volume).
OTHER_CHAIN = [("SELL", "MSFT"), ("BUY", "ORCL"), ("BUY", "CSCO"), ("SELL", "AMAT")]
STOCK_MEAN_GAP = 100  # mean stock_time step (strictly increasing): WITHIN 10000 [stock_time] ~ 100 events


def _plant(rng: np.random.Generator, events: int, every: int, length: int, span: int):
    """Positions (one row per plant, sorted) of chains of ``length`` steps, each spread over
    ``span`` positions, one in every block of ``every`` events (so plants never overlap)."""
    if every < span + 1 or events < every:
        return np.zeros((0, length), dtype=np.int64)
    count = events // every
    starts = np.arange(count) * every + rng.integers(0, every - span, size=count)
    offsets = np.sort(np.array([rng.choice(span, size=length, replace=False) for _ in range(count)]), axis=1)
    return starts[:, None] + offsets


def stocks(events: int = 224_473, seed: int = 1, plant_every: int = 4_000) -> pa.Table:
    """BUY/SELL trades in CORE's stock schema; q5's chain and the other-q chain are planted."""
    rng = np.random.default_rng(seed)
    names = list(QUERY_TICKERS) + OTHER_TICKERS
    head = np.array(list(QUERY_TICKERS.values()))
    tail = np.full(len(OTHER_TICKERS), (1.0 - head.sum()) / len(OTHER_TICKERS))
    name_index = rng.choice(len(names), size=events, p=np.concatenate([head, tail]))
    is_sell = rng.random(events) < 0.5
    volume = rng.choice(STOCK_VOLUMES, size=events)
    code = {n: i for i, n in enumerate(names)}
    for rows in _plant(rng, events, plant_every, len(STOCK_CHAIN), 60):
        for row, (kind, name) in zip(rows, STOCK_CHAIN):
            is_sell[row], name_index[row] = kind == "SELL", code[name]
    for rows in _plant(rng, events, plant_every // 2, len(OTHER_CHAIN), 40):
        common = rng.choice(STOCK_VOLUMES)
        for row, (kind, name) in zip(rows, OTHER_CHAIN):
            is_sell[row], name_index[row], volume[row] = kind == "SELL", code[name], common
    return pa.table(
        {
            "event_type": pa.array(np.where(is_sell, "SELL", "BUY")),
            "id": pa.array(np.arange(events)),
            "name": pa.array(np.array(names)[name_index]),
            "volume": pa.array(volume),
            "price": pa.array(np.round(rng.uniform(5, 60, size=events), 2)),
            "stock_time": pa.array(np.cumsum(rng.integers(1, 2 * STOCK_MEAN_GAP, size=events))),
        }
    )


# ------------------------------------------------------------------------------------ smart homes

HOMES_DECLARATION = """CREATE STREAM S {
EVENT LOAD { id:int, plug_timestamp:primary_time, value:double, plug_id:int, household_id:int }
}"""
HOMES_CHAIN = [0, 2, 4, 6, 9, 10, 12, 14, 15, 4, 9, 10] * 2  # q5's households (q1-q4: prefixes)
HOMES_PER_SECOND = 40  # readings per plug_timestamp: WITHIN 10 [plug_timestamp] spans 400 events


def smart_homes(events: int = 1_000_000, seed: int = 2, plant_every: int = 20_000) -> pa.Table:
    """Smart-plug load readings (DEBS 2014 schema); q5's chain of high loads is planted."""
    rng = np.random.default_rng(seed)
    household = rng.integers(0, 40, size=events)
    # About 3% of the readings exceed the queries' threshold of 76.
    value = np.round(rng.exponential(22, size=events), 3)
    for rows in _plant(rng, events, plant_every, len(HOMES_CHAIN), 120):
        household[rows] = HOMES_CHAIN
        value[rows] = np.round(rng.uniform(77, 150, size=len(rows)), 3)
    return pa.table(
        {
            "event_type": pa.array(np.full(events, "LOAD")),
            "id": pa.array(np.arange(events)),
            "plug_timestamp": pa.array(np.arange(events) // HOMES_PER_SECOND),
            "value": pa.array(value),
            "plug_id": pa.array(rng.integers(0, 12, size=events)),
            "household_id": pa.array(household),
        }
    )


# ------------------------------------------------------------------------------------------ taxis

TAXI_DECLARATION = """CREATE STREAM S {
EVENT TRIP {
    id:int, medallion:string, hack_license:string,
    pickup_datetime:int, dropoff_datetime:primary_time,
    long_time_in_secs:int, trip_distance:double,
    pickup_zone:string, dropoff_zone:string,
    payment_type:string, fare_amount:double,
    surcharge:double, mta_tax:double,
    tip_amount:double, tolls_amount:double, total_amount:double }
}"""
QUERY_ZONES = [
    "East Harlem North",
    "Midwood",
    "Gravesend",
    "West Brighton",
    "Lincoln Square West",
    "Sutton Place/Turtle Bay North",
    "East Concourse/Concourse Village",
]
TAXI_ZONES = QUERY_ZONES + [f"Zone {i}" for i in range(250)]
_TAXI_HOPS = [0, 1, 2, 3, 4, 5, 6, 0, 0, 2, 1, 1, 2]  # zone indexes visited by q5's chain of trips
TAXI_CHAIN = [(QUERY_ZONES[a], QUERY_ZONES[b]) for a, b in zip(_TAXI_HOPS, _TAXI_HOPS[1:])] * 2


def taxis(events: int = 585_762, seed: int = 3, plant_every: int = 10_000) -> pa.Table:
    """Taxi trips (DEBS 2015 schema with zone names); q5's chain of trips is planted."""
    rng = np.random.default_rng(seed)
    zones = np.array(TAXI_ZONES)
    # The queries' zones are busy ones: 2% of pickups and of drop-offs each.
    weights = np.concatenate([np.full(len(QUERY_ZONES), 0.02), np.full(250, 0.86 / 250)])
    pick = rng.choice(len(zones), size=events, p=weights)
    drop = rng.choice(len(zones), size=events, p=weights)
    code = {z: i for i, z in enumerate(TAXI_ZONES)}
    for rows in _plant(rng, events, plant_every, len(TAXI_CHAIN), 150):
        for row, (a, b) in zip(rows, TAXI_CHAIN):
            pick[row], drop[row] = code[a], code[b]
    dropoff = np.cumsum(rng.integers(0, 3, size=events))  # WITHIN 1000 [dropoff_datetime]: ~1000 trips
    fare = np.round(rng.uniform(3, 60, size=events), 2)
    return pa.table(
        {
            "event_type": pa.array(np.full(events, "TRIP")),
            "id": pa.array(np.arange(events)),
            "medallion": pa.array(np.char.add("M", rng.integers(0, 9999, size=events).astype(str))),
            "hack_license": pa.array(np.char.add("H", rng.integers(0, 9999, size=events).astype(str))),
            "pickup_datetime": pa.array(dropoff - rng.integers(60, 1800, size=events)),
            "dropoff_datetime": pa.array(dropoff),
            "long_time_in_secs": pa.array(rng.integers(60, 1800, size=events)),
            "trip_distance": pa.array(np.round(rng.uniform(0.2, 20, size=events), 2)),
            "pickup_zone": pa.array(zones[pick]),
            "dropoff_zone": pa.array(zones[drop]),
            "payment_type": pa.array(rng.choice(["CRD", "CSH"], size=events)),
            "fare_amount": pa.array(fare),
            "surcharge": pa.array(np.round(rng.uniform(0, 1, size=events), 2)),
            "mta_tax": pa.array(np.full(events, 0.5)),
            "tip_amount": pa.array(np.round(rng.uniform(0, 10, size=events), 2)),
            "tolls_amount": pa.array(np.zeros(events)),
            "total_amount": pa.array(fare + 1.0),
        }
    )


# -------------------------------------------------------------------------- synthetic (the papers')


def synthetic_types(count: int) -> list[str]:
    """AA, AB, ... skipping the keywords AS and AT, as CORE's scripts do."""
    out = []
    for first in "ABCDEFGHIJKLMNOPQRSTUVWXY":
        for second in "ABCDEFGHIJKLMNOPQRSTUVWXYZ":
            name = first + second
            if name.upper() in ("AS", "AT", "BY", "IN", "OR"):
                continue
            out.append(name)
            if len(out) == count:
                return out
    return out


def synthetic_declaration(types: list[str]) -> str:
    events = ", ".join(f"EVENT {t} {{ id:int }}" for t in types)
    return f"CREATE STREAM S {{ {events} }}"


def uniform(events: int, types: list[str] | None = None, seed: int = 4) -> pa.Table:
    """Event types drawn uniformly (the papers' synthetic streams; by default AA..AJ, 9 types)."""
    types = types or synthetic_types(9)
    rng = np.random.default_rng(seed)
    return pa.table(
        {
            "event_type": pa.array(np.array(types)[rng.integers(0, len(types), size=events)]),
            "id": pa.array(np.arange(events)),
        }
    )


STRESS_DECLARATION = (
    "CREATE STREAM S { EVENT A { id:int }, EVENT B { id:int }, EVENT C { id:int }, "
    "EVENT D { id:int }, EVENT E { id:int } }"
)


def stress(
    events: int, seed: int = 5, last: str = "D", alphabet: tuple[str, ...] = ("A", "B", "C", "E")
) -> pa.Table:
    """The Foundations stress test: uniformly random non-firing types, then one firing event."""
    rng = np.random.default_rng(seed)
    kinds = np.array(alphabet)[rng.integers(0, len(alphabet), size=events - 1)]
    return pa.table({"event_type": pa.array(np.append(kinds, last)), "id": pa.array(np.arange(events))})


# ---------------------------------------------------------- contiguous patterns per key (DuckDB, Flink)

KEYED_DECLARATION = (
    "CREATE STREAM S { EVENT A { id:int, k:int, v:int, t:int }, EVENT B { id:int, k:int, v:int, t:int }, "
    "EVENT C { id:int, k:int, v:int, t:int }, EVENT D { id:int, k:int, v:int, t:int } }"
)


def keyed(events: int = 1_000_000, keys: int = 1_000, seed: int = 6) -> pa.Table:
    """Types A-D uniformly, a key out of ``keys``, a value 0-999 and a time that grows by 1 or 2
    per event (strictly increasing, so that row-time orders such as Flink's have no ties)."""
    rng = np.random.default_rng(seed)
    return pa.table(
        {
            "event_type": pa.array(np.array(["A", "B", "C", "D"])[rng.integers(0, 4, size=events)]),
            "id": pa.array(np.arange(events)),
            "k": pa.array(rng.integers(0, keys, size=events)),
            "v": pa.array(rng.integers(0, 1000, size=events)),
            "t": pa.array(np.cumsum(rng.integers(1, 3, size=events))),
        }
    )


# ------------------------------------------------------------------ equality correlation (tweets)

TWEETS_DECLARATION = (
    "CREATE STREAM S { EVENT T { id:int, user:int }, EVENT R { id:int, tweet:int, user:int } }"
)


def tweets(events: int = 200_000, seed: int = 7, reach: int = 30_000) -> pa.Table:
    """Tweets (T) and replies (R, ``tweet`` = the ``id`` of the tweet replied to); ids are positions.

    Half of the events are replies; a reply answers the latest tweet posted at least a uniformly
    random 1 to ``reach`` events earlier, so a window of n events sees about n / reach of them."""
    rng = np.random.default_rng(seed)
    is_reply = rng.random(events) < 0.5
    is_reply[0] = False
    position = np.arange(events)
    tweet_rows = np.flatnonzero(~is_reply)
    target_position = np.maximum(position - rng.integers(1, reach + 1, size=events), 0)
    # The latest tweet at or before the target position (there is one: row 0 is a tweet).
    target = tweet_rows[np.searchsorted(tweet_rows, target_position, side="right") - 1]
    return pa.table(
        {
            "event_type": pa.array(np.where(is_reply, "R", "T")),
            "id": pa.array(position),
            "tweet": pa.array(target, mask=~is_reply),  # tweets have none (null)
            "user": pa.array(rng.integers(0, 5_000, size=events)),
        }
    )


THREADS_DECLARATION = (
    "CREATE STREAM S { EVENT T { id:int, user:int }, EVENT R { id:int, tweet:int, user:int, kind:int } }"
)


def threads(events: int = 20_000, seed: int = 9, recent: int = 50, stops: float = 0.05) -> pa.Table:
    """Tweets (T) and replies (R) for the PART-BY paper's Example 4 (nested PART-BY): half of the
    events are tweets; a reply answers one of the ``recent`` latest tweets (uniformly) from one
    of 1,000 users; a fraction ``stops`` of the replies have ``kind`` 1 (the paper's #stop), the
    others 0 (#ihate). Every tweet stays a live partial match (no window), while the work an
    event asks for stays constant: the live partial matches grow with the stream."""
    rng = np.random.default_rng(seed)
    is_reply = rng.random(events) < 0.5
    is_reply[0] = False
    position = np.arange(events)
    tweet_rows = np.flatnonzero(~is_reply)
    # The number of tweets before each event, then one of the ``recent`` latest of them.
    before = np.searchsorted(tweet_rows, position, side="left")
    back = rng.integers(1, recent + 1, size=events)
    target = tweet_rows[np.maximum(before - back, 0)]
    kind = (rng.random(events) < stops).astype(np.int64)
    return pa.table(
        {
            "event_type": pa.array(np.where(is_reply, "R", "T")),
            "id": pa.array(position),
            "tweet": pa.array(target, mask=~is_reply),
            "user": pa.array(rng.integers(0, 1_000, size=events)),
            "kind": pa.array(kind, mask=~is_reply),
        }
    )


# ------------------------------------------------------------ cross-event conditions, strategies

VALUES_DECLARATION = (
    "CREATE STREAM S { EVENT A { id:int, v:int }, EVENT B { id:int, v:int }, EVENT C { id:int, v:int } }"
)


def values(events: int = 3_000, seed: int = 8, extremes: float = 0.03) -> pa.Table:
    """A, B, C uniformly with a value 0-999 (the cross-event condition workload of issue 12);
    a fraction ``extremes`` of the A events get a value of at least 995 and of the C events at
    most 4, so that ``a.v > c.v + 990`` holds for a few nearby pairs."""
    rng = np.random.default_rng(seed)
    kinds = np.array(["A", "B", "C"])[rng.integers(0, 3, size=events)]
    value = rng.integers(0, 1000, size=events)
    extreme = rng.random(events) < extremes
    value = np.where(extreme & (kinds == "A"), rng.integers(995, 1000, size=events), value)
    value = np.where(extreme & (kinds == "C"), rng.integers(0, 5, size=events), value)
    return pa.table({"event_type": pa.array(kinds), "id": pa.array(np.arange(events)), "v": pa.array(value)})


def a_then_b(a_events: int, b_events: int = 200) -> pa.Table:
    """``a_events`` A-events, then ``b_events`` B-events (selection-strategy cost per B-event)."""
    total = a_events + b_events
    return pa.table(
        {
            "event_type": pa.array(["A"] * a_events + ["B"] * b_events),
            "id": pa.array(np.arange(total)),
            "v": pa.array(np.arange(total) % 1000),
        }
    )
