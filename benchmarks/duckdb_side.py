"""DuckDB (2.0.0, ``pip install duckdb``; the optional extra ``ceql[bench]``) as a competitor.

DuckDB has no MATCH_RECOGNIZE, so each workload's complex events are written the way an analyst
would: sequences of single events as self-joins (an inequality join on positions and the
window), strictly contiguous patterns per key with window functions (LAG over the key's rows in
stream order), equality correlation as an equi-join. Each query returns the positions of every
complex event, so the match sets are compared with ceql's. Only workloads whose semantics
coincide are listed. The Arrow table is registered (zero copy) before the clock starts; the time
covers running the query and fetching the positions as numpy arrays. DuckDB uses every core
(ceql one); the table says how many.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
import pyarrow as pa


def available() -> bool:
    try:
        import duckdb  # noqa: F401
    except ImportError:
        return False
    return True


def stock_sequence_sql(window: int = 10_000) -> str:
    """q1: SELL INTC, then BUY RIMM, then BUY QQQ, WITHIN ``window`` [stock_time] (self-joins).

    The window is also stated between consecutive steps (implied, since times do not decrease),
    so that each join is a band join; without it DuckDB joins two steps on positions alone and
    is 10-30x slower."""
    return f"""
    WITH s AS (SELECT id, stock_time FROM ev WHERE event_type = 'SELL' AND name = 'INTC'),
         b AS (SELECT id, stock_time FROM ev WHERE event_type = 'BUY' AND name = 'RIMM'),
         q AS (SELECT id, stock_time FROM ev WHERE event_type = 'BUY' AND name = 'QQQ')
    SELECT s.id AS p0, b.id AS p1, q.id AS p2
    FROM s
    JOIN b ON b.id > s.id AND b.stock_time < s.stock_time + {window}
    JOIN q ON q.id > b.id AND q.stock_time < b.stock_time + {window} AND q.stock_time < s.stock_time + {window}
    """


CONTIGUOUS_SQL = """
    SELECT p0, p1, id AS p2 FROM (
        SELECT id, event_type,
               LAG(event_type, 1) OVER w AS t1, LAG(event_type, 2) OVER w AS t0,
               LAG(id, 1) OVER w AS p1, LAG(id, 2) OVER w AS p0
        FROM ev WINDOW w AS (PARTITION BY k ORDER BY id)
    ) WHERE event_type = 'C' AND t1 = 'B' AND t0 = 'A'
"""


def correlation_sql(window: int) -> str:
    """``(T AS x ; R AS y) FILTER x.id = y.tweet WITHIN window EVENTS`` as an equi-join."""
    return f"""
    SELECT x.id AS p0, y.id AS p1
    FROM ev AS x JOIN ev AS y ON y.tweet = x.id
    WHERE x.event_type = 'T' AND y.event_type = 'R' AND y.id > x.id AND y.id - x.id < {window}
    """


QUERIES: dict[str, Callable[[], str]] = {
    "stock-q1": stock_sequence_sql,
    "contiguous": lambda: CONTIGUOUS_SQL,
    "correlation-100": lambda: correlation_sql(100),
    "correlation-1000": lambda: correlation_sql(1_000),
    "correlation-20000": lambda: correlation_sql(20_000),
}


def run(table: pa.Table, name: str) -> dict:
    """Time DuckDB's query ``name`` over ``table``; positions of every complex event."""
    import duckdb

    con = duckdb.connect()
    con.register("ev", table)
    threads = con.execute("SELECT current_setting('threads')").fetchone()[0]
    sql = QUERIES[name]()
    started, cpu = time.perf_counter(), time.process_time()
    columns = con.execute(sql).fetchnumpy()
    seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu
    con.close()
    stacked = np.column_stack([np.asarray(columns[c]) for c in columns]) if columns else np.zeros((0, 0))
    matches = [tuple(sorted(row)) for row in stacked.tolist()]
    return {
        "seconds": seconds,
        "cpu_seconds": cpu_seconds,  # all of DuckDB's threads
        "complex_events": len(matches),
        "matches": matches,
        "threads": threads,
    }
