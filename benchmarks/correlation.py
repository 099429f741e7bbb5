"""Correlation side by side (issue 34): ceql's kernel beside DuckDB (one thread) and polars.

    .venv/bin/python -m benchmarks.correlation                  # 200k and 2M events
    .venv/bin/python -m benchmarks.correlation --sizes 200000,2000000,10000000
    .venv/bin/python -m benchmarks.correlation --only "(d)"     # one workload
    .venv/bin/python -m benchmarks.correlation --only flat      # W = 1,000 against 20,000 only

Workloads:

- **(a)** equality correlation, ``T AS x ; R AS y FILTER x.id = y.id WITHIN W EVENTS``
  (W = 1,000; also W = 20,000 for flatness): DuckDB and polars as an equi-join with a band on
  positions.
- **(d)** stock V, ``(T AS s : T AS d : T AS b : T AS u) FILTER d.price < s.price AND
  b.price < d.price AND u.price > b.price PARTITION BY [sym]``: DuckDB with LAG per symbol,
  polars with shifts over the symbol's rows; also ceql.sql's MATCH_RECOGNIZE on the same
  pattern.
- **(a) PARTITION BY**: (a) written ``(T AS x ; R AS y) PARTITION BY [x.id, y.id] WITHIN 1000
  EVENTS``, against the same DuckDB and polars queries.
- **(f)** a web shop's funnel, ``(View AS v ; Cart AS c ; Purchase AS p) FILTER v.product =
  c.product PARTITION BY [user] WITHIN 30 MINUTES`` (a view, then an add-to-cart of the same
  product, then a purchase, per user): DuckDB and polars as two equi-joins with the time band.

Every engine gets the same Arrow table (polars converts it before the clock starts); its result
is reduced to the sorted positions of every complex event and compared with ceql's. Times are
CPU seconds of this process (``time.process_time``; DuckDB is set to one thread, polars' pool to
one thread through ``POLARS_MAX_THREADS`` before it is imported) and wall seconds, the least of
``--repeat`` runs (default 3: on a busy machine, other processes only add time). An engine that
is not installed is reported as skipped.
"""

from __future__ import annotations

import argparse
import gc
import os
import resource
import sys
import time
from collections.abc import Callable

import numpy as np
import pyarrow as pa

os.environ.setdefault("POLARS_MAX_THREADS", "1")  # before polars is imported

import ceql  # noqa: E402

CORRELATION_DECLARATION = "CREATE STREAM S { EVENT T { seq:int, id:int }, EVENT R { seq:int, id:int } }"
STOCK_DECLARATION = "CREATE STREAM S { EVENT T { seq:int, sym:int, price:double } }"
SHOP_DECLARATION = (
    "CREATE STREAM Shop { EVENT View { seq:int, user:int, product:int, ts:primary_time }, "
    "EVENT Cart { seq:int, user:int, product:int, ts:primary_time }, EVENT Purchase { seq:int, user:int, ts:primary_time } }"
)
FUNNEL_MINUTES = 30


def correlation_query(window: int) -> str:
    return f"SELECT * FROM S WHERE T AS x ; R AS y FILTER x.id = y.id WITHIN {window} EVENTS"


def partitioned_query(window: int) -> str:
    """(a) written with PARTITION BY over the labels' ids."""
    return f"SELECT * FROM S WHERE (T AS x ; R AS y) PARTITION BY [x.id, y.id] WITHIN {window} EVENTS"


FUNNEL = (
    "SELECT * FROM Shop WHERE (View AS v ; Cart AS c ; Purchase AS p) FILTER v.product = c.product "
    f"PARTITION BY [user] WITHIN {FUNNEL_MINUTES} MINUTES"
)

STOCK_V = (
    "SELECT * FROM S WHERE (T AS s : T AS d : T AS b : T AS u) FILTER d.price < s.price AND "
    "b.price < d.price AND u.price > b.price PARTITION BY [sym]"
)
STOCK_V_SQL = """
SELECT * FROM S MATCH_RECOGNIZE (
  PARTITION BY sym ORDER BY seq
  MEASURES s.seq AS p0, d.seq AS p1, b.seq AS p2, u.seq AS p3
  ONE ROW PER MATCH
  AFTER MATCH SKIP TO NEXT ROW
  PATTERN (s d b u)
  DEFINE d AS d.price < PREV(d.price), b AS b.price < PREV(b.price), u AS u.price > PREV(u.price)
)
"""


# ------------------------------------------------------------------------------------- streams


def correlation_events(events: int, seed: int = 34, spread: int = 5_000, per_id: int = 5) -> pa.Table:
    """T and R events (half each) whose ``id`` repeats ``per_id`` times on average, at positions
    spread over about ``spread`` events (so a window of 1,000 events sees a few of an id's
    events, one of 20,000 all of them); ``seq`` is the position. One id in a thousand is null."""
    rng = np.random.default_rng(seed)
    position = np.arange(events, dtype=np.int64)
    ids = (position + rng.integers(0, spread, events)) // per_id
    valid = rng.random(events) >= 0.001
    types = np.where(rng.random(events) < 0.5, "T", "R")
    return pa.table(
        {
            "event_type": pa.array(types, pa.string()),
            "seq": pa.array(position),
            "id": pa.array(ids, mask=~valid),
        }
    )


def stock_events(events: int, seed: int = 34, symbols: int = 500) -> pa.Table:
    """One event type T: a random walk of prices per symbol (``symbols`` of them, uniformly
    interleaved); ``seq`` is the position."""
    rng = np.random.default_rng(seed)
    sym = rng.integers(0, symbols, events)
    price = np.round(100 + rng.normal(0, 1, events), 2)
    return pa.table(
        {
            "event_type": pa.array(np.full(events, "T"), pa.string()),
            "seq": pa.array(np.arange(events, dtype=np.int64)),
            "sym": pa.array(sym.astype(np.int64)),
            "price": pa.array(price),
        }
    )


def shop_events(events: int, seed: int = 34) -> pa.Table:
    """A web shop's clicks over two days: views (75%), add-to-carts (18%) and purchases (7%) of
    ``events // 200`` users (about two of a user's events in half an hour) and 20 products;
    ``ts`` in nanoseconds, never decreasing."""
    rng = np.random.default_rng(seed)
    kinds = rng.choice(np.array(["View", "Cart", "Purchase"]), events, p=[0.75, 0.18, 0.07])
    step = 2 * 2 * 24 * 3600 * 10**9 // events + 1  # two days on average
    ts = np.cumsum(rng.integers(0, step, events)).astype(np.int64)
    return pa.table(
        {
            "event_type": pa.array(kinds, pa.string()),
            "seq": pa.array(np.arange(events, dtype=np.int64)),
            "user": pa.array(rng.integers(0, max(events // 200, 1), events)),
            "product": pa.array(rng.integers(0, 20, events), mask=kinds == "Purchase"),  # (not declared)
            "ts": pa.array(ts),
        }
    )


# ------------------------------------------------------------------------------------- engines


def _positions(columns: list[np.ndarray]) -> np.ndarray:
    """Rows of positions, sorted (lexicographically), as one int64 array of shape (n, k)."""
    stacked = np.column_stack([np.asarray(c, dtype=np.int64) for c in columns])
    order = np.lexsort(stacked.T[::-1])
    return stacked[order]


def ceql_run(table: pa.Table, declaration: str, query: str) -> pa.Table:
    """ceql's Arrow output (the complex events' positions are read out of it by ``_normal``)."""
    compiled = ceql.compile(query, ceql.declare(declaration))
    return compiled.run(table, output="arrow", engine="compiled")


def ceql_positions(out: pa.Table) -> np.ndarray:
    """The sorted position rows of ceql's Arrow output."""
    positions = out.column("positions").combine_chunks()
    width = len(positions[0]) if len(positions) else 0
    flat = positions.flatten().to_numpy().reshape(-1, max(width, 1))
    return _positions([flat[:, i] for i in range(width)]) if width else np.zeros((0, 0), np.int64)


def _normal(result: object) -> np.ndarray:
    """An engine's result (ceql's Arrow table, or a list of position columns) as sorted
    position rows: done after the clock stops, the same for every engine."""
    if isinstance(result, pa.Table):
        return ceql_positions(result)
    return _positions(result)  # type: ignore[arg-type]


def duckdb_correlation(table: pa.Table, window: int) -> np.ndarray:
    import duckdb

    con = duckdb.connect(config={"threads": 1})
    con.register("ev", table)
    columns = con.execute(
        f"""SELECT x.seq AS p0, y.seq AS p1 FROM ev AS x JOIN ev AS y ON y.id = x.id
        WHERE x.event_type = 'T' AND y.event_type = 'R' AND y.seq > x.seq AND y.seq - x.seq < {window}"""
    ).fetchnumpy()
    con.close()
    return [columns["p0"], columns["p1"]]


def polars_correlation(frame, window: int) -> np.ndarray:
    import polars as pl

    x = frame.filter(pl.col("event_type") == "T").select(pl.col("seq").alias("p0"), "id")
    y = frame.filter(pl.col("event_type") == "R").select(pl.col("seq").alias("p1"), "id")
    joined = x.join(y, on="id").filter((pl.col("p1") > pl.col("p0")) & (pl.col("p1") - pl.col("p0") < window))
    return [joined["p0"].to_numpy(), joined["p1"].to_numpy()]


FUNNEL_NS = FUNNEL_MINUTES * 60 * 10**9
DUCKDB_FUNNEL = f"""
SELECT v.seq AS p0, c.seq AS p1, p.seq AS p2 FROM ev AS v
JOIN ev AS c ON c.user = v.user AND c.product = v.product AND c.seq > v.seq AND c.ts - v.ts < {FUNNEL_NS}
JOIN ev AS p ON p.user = v.user AND p.seq > c.seq AND p.ts - v.ts < {FUNNEL_NS}
WHERE v.event_type = 'View' AND c.event_type = 'Cart' AND p.event_type = 'Purchase'
"""


def duckdb_funnel(table: pa.Table) -> list[np.ndarray]:
    import duckdb

    con = duckdb.connect(config={"threads": 1})
    con.register("ev", table)
    columns = con.execute(DUCKDB_FUNNEL).fetchnumpy()
    con.close()
    return [columns["p0"], columns["p1"], columns["p2"]]


def polars_funnel(frame) -> list[np.ndarray]:
    import polars as pl

    def of(kind: str, name: str, time: str):
        return frame.filter(pl.col("event_type") == kind).select(pl.col("seq").alias(name), "user", "product", pl.col("ts").alias(time))

    v, c = of("View", "p0", "t0"), of("Cart", "p1", "t1")
    p = of("Purchase", "p2", "t2").drop("product")
    vc = v.join(c, on=["user", "product"]).filter((pl.col("p1") > pl.col("p0")) & (pl.col("t1") - pl.col("t0") < FUNNEL_NS))
    vcp = vc.join(p, on="user").filter((pl.col("p2") > pl.col("p1")) & (pl.col("t2") - pl.col("t0") < FUNNEL_NS))
    return [vcp["p0"].to_numpy(), vcp["p1"].to_numpy(), vcp["p2"].to_numpy()]


DUCKDB_STOCK_V = """
SELECT p0, p1, p2, seq AS p3 FROM (
    SELECT seq, price,
           LAG(price, 1) OVER w AS b, LAG(price, 2) OVER w AS d, LAG(price, 3) OVER w AS s,
           LAG(seq, 1) OVER w AS p2, LAG(seq, 2) OVER w AS p1, LAG(seq, 3) OVER w AS p0
    FROM ev WINDOW w AS (PARTITION BY sym ORDER BY seq)
) WHERE d < s AND b < d AND price > b
"""


def duckdb_stock(table: pa.Table) -> np.ndarray:
    import duckdb

    con = duckdb.connect(config={"threads": 1})
    con.register("ev", table)
    columns = con.execute(DUCKDB_STOCK_V).fetchnumpy()
    con.close()
    return [columns[f"p{i}"] for i in range(4)]


def polars_stock(frame) -> np.ndarray:
    import polars as pl

    price, seq = pl.col("price"), pl.col("seq")
    shifted = frame.sort(["sym", "seq"]).with_columns(
        *(price.shift(k).over("sym").alias(f"v{k}") for k in (1, 2, 3)),
        *(seq.shift(k).over("sym").alias(f"p{k}") for k in (1, 2, 3)),
    )
    kept = shifted.filter((pl.col("v2") < pl.col("v3")) & (pl.col("v1") < pl.col("v2")) & (price > pl.col("v1")))
    return [kept["p3"].to_numpy(), kept["p2"].to_numpy(), kept["p1"].to_numpy(), kept["seq"].to_numpy()]


def sql_stock(table: pa.Table) -> np.ndarray:
    """ceql.sql's MATCH_RECOGNIZE (one row per match, the four positions as measures)."""
    import ceql.sql

    out = ceql.sql.run(STOCK_V_SQL, {"S": table})
    return [out.column(f"p{i}").to_numpy() for i in range(4)]


def _available(module: str) -> bool:
    try:
        __import__(module)
    except ImportError:
        return False
    return True


def _timed(function: Callable, data: object, repeat: int) -> tuple[float, float, np.ndarray]:
    """The least CPU and wall seconds of ``repeat`` runs (a busy machine only adds time), and
    the result as sorted position rows. The clock covers the engine's run up to its own result
    (ceql's Arrow table, DuckDB's fetched numpy columns, polars' columns), not the sorting that
    makes the results comparable."""
    best_cpu = best_wall = float("inf")
    result = None
    for _ in range(repeat):
        result = None
        gc.collect()
        cpu, wall = time.process_time(), time.perf_counter()
        result = function(data)
        best_cpu = min(best_cpu, time.process_time() - cpu)
        best_wall = min(best_wall, time.perf_counter() - wall)
    return best_cpu, best_wall, _normal(result)


def rows(sizes: list[int], only: str | None = None, repeat: int = 3) -> list[dict]:
    """Every (workload, size) row: CPU and wall seconds per engine, and whether it agrees."""
    out = []
    workloads: list[tuple[str, str, Callable[[int], pa.Table], dict[str, Callable]]] = []
    for window in (1_000, 20_000):
        workloads.append(
            (
                f"(a) W={window:,}",
                correlation_query(window),
                correlation_events,
                {
                    "ceql": lambda t, w=window: ceql_run(t, CORRELATION_DECLARATION, correlation_query(w)),
                    "duckdb": lambda t, w=window: duckdb_correlation(t, w),
                    "polars": lambda f, w=window: polars_correlation(f, w),
                },
            )
        )
    workloads.append(
        (
            "(a) PARTITION BY W=1,000",
            partitioned_query(1_000),
            correlation_events,
            {
                "ceql": lambda t: ceql_run(t, CORRELATION_DECLARATION, partitioned_query(1_000)),
                "duckdb": lambda t: duckdb_correlation(t, 1_000),
                "polars": lambda f: polars_correlation(f, 1_000),
            },
        )
    )
    workloads.append(
        (
            "(d) stock V",
            STOCK_V,
            stock_events,
            {
                "ceql": lambda t: ceql_run(t, STOCK_DECLARATION, STOCK_V),
                "ceql.sql": sql_stock,
                "duckdb": duckdb_stock,
                "polars": polars_stock,
            },
        )
    )
    workloads.append(
        (
            "(f) web shop funnel",
            FUNNEL,
            shop_events,
            {
                "ceql": lambda t: ceql_run(t, SHOP_DECLARATION, FUNNEL),
                "duckdb": duckdb_funnel,
                "polars": polars_funnel,
            },
        )
    )
    for name, query, generate, engines in workloads:
        if only and (only not in name or only == "flat"):
            continue
        for size in sizes:
            table = generate(size)
            row: dict = {"workload": name, "events": size, "query": query, "engines": {}}
            reference = None
            for engine, function in engines.items():
                module = engine.split(".")[0]
                if engine in ("duckdb", "polars") and not _available(module):
                    row["engines"][engine] = {"skipped": f"{module} is not installed"}
                    continue
                data = table
                if engine == "polars":
                    import polars as pl

                    data = pl.from_arrow(table)
                cpu, wall, result = _timed(function, data, repeat)
                entry = {"cpu": cpu, "wall": wall, "complex_events": len(result)}
                if reference is None:
                    reference = result
                else:
                    entry["same"] = bool(result.shape == reference.shape and (result == reference).all())
                row["engines"][engine] = entry
                print(f"{name} {size:,} {engine}: {entry}", file=sys.stderr, flush=True)
            out.append(row)
    return out


def table(results: list[dict]) -> str:
    """A Markdown table: CPU s (wall s) per engine; a mismatch is flagged."""
    engines = ["ceql", "ceql.sql", "duckdb", "polars"]
    lines = ["| workload | events | complex events | " + " | ".join(engines) + " |", "|---|---|---|" + "---|" * len(engines)]
    for row in results:
        cells = []
        for engine in engines:
            entry = row["engines"].get(engine)
            if entry is None:
                cells.append("")
            elif "skipped" in entry:
                cells.append("not installed")
            else:
                mark = "" if entry.get("same", True) else " **differs**"
                cells.append(f"{entry['cpu']:.3f} ({entry['wall']:.3f}){mark}")
        ces = row["engines"]["ceql"]["complex_events"]
        lines.append(f"| {row['workload']} | {row['events']:,} | {ces:,} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def flatness(sizes: list[int], repeat: int = 3) -> str:
    """ceql's CPU seconds for (a) at W = 1,000 and W = 20,000 events, on (a)'s stream (where the
    larger window reports about 2.8 times the complex events) and on one whose ids repeat only
    within 800 events (both windows report the same ones: the ratio is the window's own cost)."""
    lines = [
        "| stream | events | W=1,000: CEs, CPU s | W=20,000: CEs, CPU s | ratio | CPU per CE ratio |",
        "|---|---|---|---|---|---|",
    ]
    for name, spread in (("(a): ids within ~5,000 events", 5_000), ("ids within 800 events", 800)):
        for size in sizes:
            table = correlation_events(size, spread=spread)
            figures = []
            for window in (1_000, 20_000):
                run = lambda t, w=window: ceql_run(t, CORRELATION_DECLARATION, correlation_query(w))  # noqa: E731
                cpu, _, result = _timed(run, table, repeat)
                figures.append((len(result), cpu))
            (n1, c1), (n2, c2) = figures
            per = (c2 / max(n2, 1)) / (c1 / max(n1, 1))
            lines.append(f"| {name} | {size:,} | {n1:,}, {c1:.3f} | {n2:,}, {c2:.3f} | {c2 / c1:.2f} | {per:.2f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.correlation", description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="200000,2000000", help="comma-separated event counts")
    parser.add_argument("--only", help="run only workloads whose name contains this text")
    parser.add_argument("--repeat", type=int, default=3, help="runs per engine; the least time is shown")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    # Load the compiled functions first (not timed; each engine's import and set-up is not
    # timed either): enough events that every function of the paths runs once.
    ceql_run(correlation_events(100_000), CORRELATION_DECLARATION, correlation_query(1_000))
    ceql_run(stock_events(100_000), STOCK_DECLARATION, STOCK_V)
    ceql_run(correlation_events(100_000), CORRELATION_DECLARATION, partitioned_query(1_000))
    ceql_run(shop_events(100_000), SHOP_DECLARATION, FUNNEL)
    sql_stock(stock_events(2_000))
    results = rows(sizes, args.only, args.repeat)
    print(f"load: {os.getloadavg()}, peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
    print(table(results))
    if not args.only or "flat" in args.only:
        print()
        print(flatness(sizes, args.repeat))


if __name__ == "__main__":
    main()
