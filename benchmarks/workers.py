"""Every core: ``Query.run(..., workers=N)`` side by side with one core, in one run.

``python -m benchmarks.workers [--events N] [--repeat R] [--workers N]``

Workloads (generated, seeded, in memory as Arrow; output as one Arrow table):

- ``keys``: ``A : B : C PARTITION BY [k]`` (1,000 keys): the workers split the keys;
- ``shards``: ``A ; B ; C WITHIN 2 MILLISECONDS`` over a time attribute (an event every 0.1 ms on
  average): the workers split time, each reading the window before its shard;
- ``small``: the keyed query over 1,000 events (stays on one core: no slower).

Each row gives best-of-R wall time and the CPU time of that run (all threads) for 1 and N workers,
checks that both outputs are equal, and reports the wall-time ratio and the load average at the
time (the machine is shared: wall time includes the other processes' use of the cores). The
"machine now" line measures what the cores give this process at that time (N compiled loops in
N threads against one after another), and "cpu ratio" is the one-core CPU time over the CPU time
of the busiest thread of the N-worker run: the speed-up an idle machine would show if the
threads never waited for each other (the GIL), which wall time on idle cores confirms.
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


def measure(query: ceql.Query, table: pa.Table, workers: int, repeat: int) -> dict:
    """Best-of-``repeat`` wall time, with that run's CPU time (all threads), the CPU time of its
    busiest thread (workers: the critical path on an idle machine) and the output."""
    best: dict = {"wall": float("inf")}
    for _ in range(repeat):
        runner = (
            ParallelKernel(query.plan, workers)
            if workers > 1 and use_workers(query.plan, table, workers, {})
            else None
        )
        cpu, wall = time.process_time(), time.perf_counter()
        if runner is not None:
            out = runner.arrow(table)
        else:
            out = query.run(table, output="arrow", engine="compiled", workers=workers)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        threads = runner.thread_cpu if runner is not None else []
        busiest = max(threads + [cpu - sum(threads)])
        if wall < best["wall"]:
            best = {"wall": wall, "cpu": cpu, "busiest": busiest, "out": out}
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
    print(
        f"{args.workers} workers, {os.cpu_count()} cores, best of {args.repeat} (wall s; CPU s of all threads; busiest thread)"
    )
    print(
        f"machine now: {machine(args.workers):.2f}x for {args.workers} threads of pure compiled work, load {os.getloadavg()[0]:.1f}"
    )
    print(
        f"{'workload':8} {'events':>10} {'matches':>9} {'1 core wall (cpu)':>20} {'N wall (cpu; busiest)':>26} {'ratio':>6} {'cpu ratio':>9} load"
    )
    for name, text, table in rows:
        query = ceql.compile(text, schema)
        warm = table.slice(0, 200_000)
        query.run(warm, output="arrow", engine="compiled")  # JIT and caches, both paths
        query.run(warm, output="arrow", engine="compiled", workers=args.workers)
        one = measure(query, table, 1, args.repeat)
        many = measure(query, table, args.workers, args.repeat)
        assert one["out"].equals(many["out"]), f"{name}: outputs differ"
        load = os.getloadavg()[0]
        print(
            f"{name:8} {table.num_rows:>10,} {one['out'].num_rows:>9,} {one['wall']:>9.3f}s ({one['cpu']:6.3f}) "
            f"{many['wall']:>8.3f}s ({many['cpu']:6.3f}; {many['busiest']:6.3f}) {one['wall'] / many['wall']:>5.2f}x "
            f"{one['cpu'] / many['busiest']:>8.2f}x {load:.1f}"
        )


if __name__ == "__main__":
    main()
