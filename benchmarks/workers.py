"""Every core: ``Query.run(..., workers=N)`` side by side with one core, in one run.

``python -m benchmarks.workers [--events N] [--repeat R] [--workers N] [--counts 1,2,4,8,16]
[--duckdb] [--only keys,shards]``

Workloads (generated, seeded, in memory as Arrow; output as one Arrow table):

- ``keys``: ``A : B : C PARTITION BY [k]`` (1,000 integer keys): the workers split the keys;
- ``shards``: ``A ; B ; C WITHIN 2 MILLISECONDS`` over a time attribute (an event every 0.1 ms on
  average): the workers split time, each reading the window before its shard;
- ``strings``: the keyed query over a string key (``s``, 1,000 values);
- ``measures``: the keyed query with measures (``a.id``, ``c.t - a.t``) computed per match;
- ``cross``: the keyed query with a condition across events checked per match;
- ``absence``: ``A AS a NOT FOLLOWED BY B PARTITION BY [k] WITHIN 200 MILLISECONDS``: each
  worker waits for its keys' deadlines, which pass at the events of the whole stream;
- ``small``: the keyed query over 1,000 events (stays on one core: no slower).

Each row gives best-of-R wall time and the CPU time of that run (all threads) for 1 and N workers,
checks that both outputs are equal, and reports the wall-time ratio and the load average at the
time (the machine is shared: wall time includes the other processes' use of the cores).
"calling" is the CPU time of the calling thread during the N-worker run (``time.thread_time``)
as a share of the one-core run's CPU time: what stays serial (Amdahl's law). "busiest" is the
CPU time of the busiest thread of the N-worker run, and "cpu ratio" the one-core CPU time over
it: the speed-up an idle machine would show if the threads never waited for each other. "cpu
N/1" is the N-worker run's CPU time (every thread) over the one-core run's: what splitting costs
(<= 1.08 leaves >= 1.85x on an idle 2-core machine; best of R runs each, as the machine is
shared and wall time is noisy). The
"machine now" line is the control: N compiled loops in N threads against one after another
(about N on idle cores; about 1 when other processes take the cores).

``--counts 1,2,4,8,16`` also runs the keys and shards workloads with each worker count, beside
DuckDB with as many threads (``--duckdb``; ``pip install -c constraints.txt duckdb==2.0.0``):
the keyed query as LAG() per key, the sharded one as a self-join on time buckets counting its
matches (both checked against ceql's match count).
"""

from __future__ import annotations

import argparse
import os
import threading
import time

import numpy as np
import pyarrow as pa
from numba import njit

import ceql
from ceql.runtime.parallel import ParallelKernel, cores, use_workers

DECLARATION = (
    "CREATE STREAM S { "
    + ", ".join(f"EVENT {t} {{ id:int, k:int, s:string, t:primary_time }}" for t in "ABCD")
    + " }"
)
QUERIES = {
    "keys": "SELECT * FROM S WHERE A : B : C PARTITION BY [k]",
    "shards": "SELECT * FROM S WHERE A ; B ; C WITHIN 2 MILLISECONDS",
    "strings": "SELECT * FROM S WHERE A : B : C PARTITION BY [s]",
    "measures": "SELECT a.id AS first, c.t - a.t AS took FROM S WHERE A AS a : B : C AS c PARTITION BY [k]",
    "cross": "SELECT * FROM S WHERE (A AS a : B AS b : C AS c) FILTER a.id + 2000 > c.id PARTITION BY [k]",
    "absence": "SELECT * FROM S WHERE A AS a NOT FOLLOWED BY B PARTITION BY [k] WITHIN 200 MILLISECONDS",
}
WINDOW_NS = 2_000_000  # the shards query's window


def events(count: int, keys: int = 1000, seed: int = 6) -> pa.Table:
    """A/B/C/D events uniformly, keys ``k`` (and ``s``, the same as text) uniformly, times
    increasing by 0-200 us."""
    rng = np.random.default_rng(seed)
    k = rng.integers(0, keys, size=count)
    names = pa.array([f"key-{i}" for i in range(keys)])
    return pa.table(
        {
            "event_type": pa.array(np.array(["A", "B", "C", "D"])[rng.integers(0, 4, size=count)]),
            "id": pa.array(np.arange(count)),
            "k": pa.array(k),
            "s": names.take(pa.array(k)),
            "t": pa.array(np.cumsum(rng.integers(0, 200_000, size=count))),
        }
    )


def measure(query: ceql.Query, table: pa.Table, workers: int, repeat: int) -> dict:
    """Best-of-``repeat`` wall time, with that run's CPU time (all threads), the calling
    thread's CPU time, the CPU time of the busiest thread and the output. Workers run as
    ``Query.run`` runs them (a ParallelKernel over the query's evaluator)."""
    best: dict = {"wall": float("inf")}
    least = float("inf")
    for _ in range(repeat):
        runner = None
        if workers > 1 and use_workers(query.plan, table, workers, {}):
            runner = ParallelKernel(query.plan, workers, evaluator=query.evaluator())
        calling, cpu, wall = time.thread_time(), time.process_time(), time.perf_counter()
        if runner is not None:
            out = runner.arrow(table)
        else:
            out = query.run(table, output="arrow", engine="compiled")
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        calling = time.thread_time() - calling
        threads = runner.thread_cpu if runner is not None else []
        busiest = max(threads + [calling])
        if wall < best["wall"]:
            best = {"wall": wall, "cpu": cpu, "calling": calling, "busiest": busiest, "out": out}
        least = min(least, cpu)
    best["least"] = least  # the least CPU of the runs (the machine's other load adds to it)
    return best


@njit(nogil=True, cache=True)
def _spin(n: int) -> int:
    s = 0
    for i in range(n):
        s = (s * 31 + i) % 1000003
    return s


def machine(workers: int, n: int = 100_000_000) -> float:
    """What the machine gives this process now: the wall-time ratio of ``workers`` compiled
    loops run one after another to the same loops in ``workers`` threads (about ``workers`` on
    idle cores; about 1 when the other processes take the cores)."""
    _spin(10)
    wall = time.perf_counter()
    for _ in range(workers):
        _spin(n)
    one = time.perf_counter() - wall
    threads = [threading.Thread(target=_spin, args=(n,)) for _ in range(workers)]
    wall = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return one / (time.perf_counter() - wall)


# ---------------------------------------------------------------------- DuckDB, the same

DUCKDB = {
    "keys": """SELECT count(*) FROM (
        SELECT event_type, LAG(event_type, 1) OVER w AS t1, LAG(event_type, 2) OVER w AS t0
        FROM ev WINDOW w AS (PARTITION BY k ORDER BY id)
    ) WHERE event_type = 'C' AND t1 = 'B' AND t0 = 'A'""",
    # A band join as two equi-joins on time buckets of the window's size (an event within the
    # window after a's time is in a's bucket or the next): hash joins, not a nested loop.
    "shards": f"""
    WITH a AS (SELECT id, t, t // {WINDOW_NS} AS g FROM ev WHERE event_type = 'A'),
         b AS (SELECT id, t, t // {WINDOW_NS} AS g FROM ev WHERE event_type = 'B'),
         c AS (SELECT id, t, t // {WINDOW_NS} AS g FROM ev WHERE event_type = 'C'),
         ab AS (SELECT a.id AS ai, a.t AS at, a.g AS ag, b.id AS bi FROM a JOIN b ON b.g = a.g
                WHERE b.id > a.id AND b.t < a.t + {WINDOW_NS}
                UNION ALL
                SELECT a.id, a.t, a.g, b.id FROM a JOIN b ON b.g = a.g + 1
                WHERE b.id > a.id AND b.t < a.t + {WINDOW_NS})
    SELECT (SELECT count(*) FROM ab JOIN c ON c.g = ab.ag WHERE c.id > ab.bi AND c.t < ab.at + {WINDOW_NS})
         + (SELECT count(*) FROM ab JOIN c ON c.g = ab.ag + 1 WHERE c.id > ab.bi AND c.t < ab.at + {WINDOW_NS})""",
}


def duckdb_run(table: pa.Table, name: str, threads: int, repeat: int) -> tuple[float, int]:
    """Best-of-``repeat`` wall time of DuckDB's query ``name`` with ``threads`` threads, and
    its match count."""
    import duckdb

    con = duckdb.connect()
    con.execute(f"PRAGMA threads={threads}")
    con.register("ev", table)
    best, count = float("inf"), -1
    for _ in range(repeat):
        wall = time.perf_counter()
        count = con.execute(DUCKDB[name]).fetchone()[0]
        best = min(best, time.perf_counter() - wall)
    con.close()
    return best, int(count)


def scaling(schema, table: pa.Table, counts: list[int], repeat: int, duck: bool) -> None:
    """The keys and shards workloads at each worker count, beside DuckDB's threads."""
    print(f"\nscaling, {table.num_rows:,} events, best of {repeat}, wall s (ceql: calling thread's CPU share)")
    print(f"{'workload':8} {'engine':7} " + " ".join(f"{c:>16}" for c in counts))
    for name in ("keys", "shards"):
        query = ceql.compile(QUERIES[name], schema)
        query.run(table.slice(0, 200_000), output="arrow", engine="compiled")
        cells, found = [], None
        base = None
        for count in counts:
            got = measure(query, table, count, repeat)
            base = base or got
            found = got["out"].num_rows
            assert got["out"].equals(base["out"]), f"{name}: {count} workers differ"
            cells.append(f"{got['wall']:7.2f} ({100 * got['calling'] / base['cpu']:4.1f}%)")
        print(f"{name:8} {'ceql':7} " + " ".join(f"{c:>16}" for c in cells))
        if duck:
            cells = []
            for count in counts:
                wall, matches = duckdb_run(table, name, count, repeat)
                assert matches == found, f"{name}: DuckDB found {matches:,}, ceql {found:,}"
                cells.append(f"{wall:7.2f}")
            print(f"{name:8} {'duckdb':7} " + " ".join(f"{c:>16}" for c in cells))
    print(f"load {os.getloadavg()[0]:.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=4_000_000)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--workers", type=int, default=max(2, cores()))
    parser.add_argument("--only", default="", help="workloads to run, comma-separated (default: all)")
    parser.add_argument("--counts", default="", help="worker counts (and DuckDB threads) for the scaling table")
    parser.add_argument("--duckdb", action="store_true", help="DuckDB beside ceql in the scaling table")
    args = parser.parse_args()
    schema = ceql.declare(DECLARATION)
    big = events(args.events)
    small = events(1000)
    only = set(filter(None, args.only.split(","))) or set(QUERIES) | {"small"}
    rows = [(name, QUERIES[name], big) for name in QUERIES if name in only]
    if "small" in only:
        rows.append(("small", QUERIES["keys"], small))
    print(
        f"{args.workers} workers, {os.cpu_count()} cores, best of {args.repeat} (wall s; CPU s of all threads; "
        "calling thread: its CPU s and its share of the one-core CPU; busiest thread)"
    )
    print(
        f"machine now: {machine(args.workers):.2f}x for {args.workers} threads of pure compiled work, "
        f"load {os.getloadavg()[0]:.1f}"
    )
    print(
        f"{'workload':8} {'events':>10} {'matches':>9} {'1 core wall (cpu)':>19} "
        f"{'N wall (cpu; calling, share; busiest)':>40} {'ratio':>6} {'cpu ratio':>9} {'cpu N/1':>7} load"
    )
    for name, text, table in rows:
        query = ceql.compile(text, schema)
        warm = table.slice(0, 200_000)
        query.run(warm, output="arrow", engine="compiled")  # JIT and caches, both paths
        measure(query, warm, args.workers, 1)
        one = measure(query, table, 1, args.repeat)
        many = measure(query, table, args.workers, args.repeat)
        assert one["out"].equals(many["out"]), f"{name}: outputs differ"
        load = os.getloadavg()[0]
        share = 100 * many["calling"] / one["cpu"]
        print(
            f"{name:8} {table.num_rows:>10,} {one['out'].num_rows:>9,} {one['wall']:>8.3f}s ({one['cpu']:6.3f}) "
            f"{many['wall']:>8.3f}s ({many['cpu']:6.3f}; {many['calling']:5.3f}, {share:4.1f}%; "
            f"{many['busiest']:6.3f}) {one['wall'] / many['wall']:>5.2f}x {one['cpu'] / many['busiest']:>8.2f}x "
            f"{many['least'] / one['least']:>6.3f}x {load:.1f}"
        )
    if args.counts:
        scaling(schema, big, [int(c) for c in args.counts.split(",")], args.repeat, args.duckdb)


if __name__ == "__main__":
    main()
