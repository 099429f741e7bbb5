"""Seeded generators of the benchmark streams, as Arrow tables (CORE's schemas)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

STOCK_DECLARATION = """CREATE STREAM S {
EVENT BUY { id:int, name:string, volume:int, price:double, stock_time:int },
EVENT SELL { id:int, name:string, volume:int, price:double, stock_time:int }
}"""
# The tickers the CORE queries use, among many others (a long tail, as in a real trade trace).
QUERY_TICKERS = ["INTC", "RIMM", "QQQ", "IPIX", "AMAT", "CSCO", "YHOO", "DELL", "ORCL", "MSFT"]
OTHER_TICKERS = [f"T{i:03d}" for i in range(290)]

HOMES_DECLARATION = """CREATE STREAM S {
EVENT LOAD { id:int, plug_timestamp:int, value:double, plug_id:int, household_id:int }
}"""

TAXI_DECLARATION = """CREATE STREAM S {
EVENT TRIP {
    id:int, medallion:string, hack_license:string,
    pickup_datetime:int, dropoff_datetime:int,
    long_time_in_secs:int, trip_distance:double,
    pickup_zone:string, dropoff_zone:string,
    payment_type:string, fare_amount:double,
    surcharge:double, mta_tax:double,
    tip_amount:double, tolls_amount:double, total_amount:double }
}"""
TAXI_ZONES = [
    "East Harlem North",
    "Midwood",
    "Gravesend",
    "West Brighton",
    "Lincoln Square West",
    "Sutton Place/Turtle Bay North",
    "East Concourse/Concourse Village",
] + [f"Zone {i}" for i in range(250)]


def stocks(events: int = 224_473, seed: int = 1) -> pa.Table:
    rng = np.random.default_rng(seed)
    tickers = np.array(QUERY_TICKERS + OTHER_TICKERS)
    weights = np.concatenate([np.full(len(QUERY_TICKERS), 0.5), np.full(len(OTHER_TICKERS), 1.0)])
    names = tickers[rng.choice(len(tickers), size=events, p=weights / weights.sum())]
    return pa.table(
        {
            "event_type": pa.array(np.where(rng.random(events) < 0.5, "BUY", "SELL")),
            "id": pa.array(np.arange(events)),
            "name": pa.array(names),
            "volume": pa.array(rng.choice([100, 200, 500, 1000, 2000, 4000], size=events)),
            "price": pa.array(np.round(rng.uniform(5, 60, size=events), 2)),
            "stock_time": pa.array(np.cumsum(rng.integers(0, 60, size=events))),
        }
    )


def smart_homes(events: int = 1_000_000, seed: int = 2) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table(
        {
            "event_type": pa.array(np.full(events, "LOAD")),
            "id": pa.array(np.arange(events)),
            "plug_timestamp": pa.array(np.arange(events) // 40),
            "value": pa.array(np.round(rng.exponential(30, size=events), 3)),
            "plug_id": pa.array(rng.integers(0, 12, size=events)),
            "household_id": pa.array(rng.integers(0, 40, size=events)),
        }
    )


def taxis(events: int = 585_762, seed: int = 3) -> pa.Table:
    rng = np.random.default_rng(seed)
    zones = np.array(TAXI_ZONES)
    weights = np.concatenate([np.full(7, 3.0), np.ones(len(TAXI_ZONES) - 7)])
    pick = zones[rng.choice(len(zones), size=events, p=weights / weights.sum())]
    drop = zones[rng.choice(len(zones), size=events, p=weights / weights.sum())]
    dropoff = np.cumsum(rng.integers(0, 3, size=events))
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
            "pickup_zone": pa.array(pick),
            "dropoff_zone": pa.array(drop),
            "payment_type": pa.array(rng.choice(["CRD", "CSH"], size=events)),
            "fare_amount": pa.array(fare),
            "surcharge": pa.array(np.round(rng.uniform(0, 1, size=events), 2)),
            "mta_tax": pa.array(np.full(events, 0.5)),
            "tip_amount": pa.array(np.round(rng.uniform(0, 10, size=events), 2)),
            "tolls_amount": pa.array(np.zeros(events)),
            "total_amount": pa.array(fare + 1.0),
        }
    )


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


def uniform(events: int, types: list[str], seed: int = 4) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table(
        {
            "event_type": pa.array(np.array(types)[rng.integers(0, len(types), size=events)]),
            "id": pa.array(np.arange(events)),
        }
    )


def stress(
    events: int, seed: int = 5, last: str = "D", alphabet: tuple[str, ...] = ("A", "B", "C", "E")
) -> pa.Table:
    """The Foundations stress test: uniformly random non-firing types, then one firing event."""
    rng = np.random.default_rng(seed)
    kinds = np.array(alphabet)[rng.integers(0, len(alphabet), size=events - 1)]
    return pa.table({"event_type": pa.array(np.append(kinds, last)), "id": pa.array(np.arange(events))})
