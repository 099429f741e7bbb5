"""Every core: ``Query.run(..., workers=N)`` side by side with one core, in one run.

``python -m benchmarks.workers [--events N] [--repeat R] [--workers N]``

Workloads (generated, seeded, in memory as Arrow; output as one Arrow table):

- ``keys``: ``A : B : C PARTITION BY [k]`` (1,000 keys): the workers split the keys;
- ``shards``: ``A ; B ; C WITHIN 2 MILLISECONDS`` over a time attribute (an event every 0.1 ms on
  average): the workers split time, each reading the window before its shard;
- ``small``: the keyed query over 1,000 events (stays on one core: no slower).

Each row gives best-of-R wall time and the CPU time of that run (all threads) for 1 and N workers,
checks that both outputs are equal, and reports the wall-time ratio and the load average at the
time (the machine is shared: wall time includes the other processes' use of the cores).
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import pyarrow as pa

import ceql
from ceql.runtime.parallel import cores

DECLARATION = (
    "CREATE STREAM S { " + ", ".join(f"EVENT {t} {{ id:int, k:int, t:primary_time }}" for t in "ABCD") + " }"
)
QUERIES = {
    "keys": "SELECT * FROM S WHERE A : B : C PARTITION BY [k]",
    "shards": "SELECT * FROM S WHERE A ; B ; C WITHIN 2 MILLISECONDS",
}


def events(count: int, keys: int = 1000, seed: int = 6) -> pa.Table:
    """A/B/C/D events uniformly, keys ``k`` uniformly, times increasing by 0-200 us."""
    rng = np.random.default_rng(seed)
    return pa.table(
        {
            "event_type": pa.array(np.array(["A", "B", "C", "D"])[rng.integers(0, 4, size=count)]),
            "id": pa.array(np.arange(count)),
            "k": pa.array(rng.integers(0, keys, size=count)),
            "t": pa.array(np.cumsum(rng.integers(0, 200_000, size=count))),
        }
    )


def measure(query: ceql.Query, table: pa.Table, workers: int, repeat: int) -> tuple[float, float, pa.Table]:
    """Best-of-``repeat`` wall time, the CPU time of that run, and the output."""
    best = (float("inf"), 0.0)
    out = None
    for _ in range(repeat):
        cpu, wall = time.process_time(), time.perf_counter()
        out = query.run(table, output="arrow", engine="compiled", workers=workers)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        best = min(best, (wall, cpu))
    assert out is not None
    return best[0], best[1], out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=10_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--workers", type=int, default=cores())
    args = parser.parse_args()
    schema = ceql.declare(DECLARATION)
    big = events(args.events)
    small = events(1000)
    rows = [
        ("keys", QUERIES["keys"], big),
        ("shards", QUERIES["shards"], big),
        ("small", QUERIES["keys"], small),
    ]
    print(f"{args.workers} workers, {os.cpu_count()} cores, best of {args.repeat}")
    print(
        f"{'workload':8} {'events':>10} {'matches':>9} {'1 core wall (cpu)':>20} {'N wall (cpu)':>18} {'ratio':>6} load"
    )
    for name, text, table in rows:
        query = ceql.compile(text, schema)
        warm = table.slice(0, 200_000)
        query.run(warm, output="arrow", engine="compiled")  # JIT and caches, both paths
        query.run(warm, output="arrow", engine="compiled", workers=args.workers)
        one_wall, one_cpu, one = measure(query, table, 1, args.repeat)
        many_wall, many_cpu, many = measure(query, table, args.workers, args.repeat)
        assert one.equals(many), f"{name}: outputs differ"
        load = os.getloadavg()[0]
        print(
            f"{name:8} {table.num_rows:>10,} {one.num_rows:>9,} {one_wall:>9.3f}s ({one_cpu:6.3f}) "
            f"{many_wall:>8.3f}s ({many_cpu:6.3f}) {one_wall / many_wall:>5.2f}x {load:.1f}"
        )


if __name__ == "__main__":
    main()
