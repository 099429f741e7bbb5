"""Memory over a long stream: a windowed, partitioned query whose keys come and go.

    python -m benchmarks.memory [--events 10000000]

Prints, every million events, the live tECS nodes, the live partitions and the process RSS;
with a window, both stay flat however long the stream (state is pruned and idle keys dropped).
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import pyarrow as pa

DECLARATION = "CREATE STREAM S { EVENT A { k:int }, EVENT B { k:int }, EVENT C { k:int }, EVENT X { k:int } }"
QUERY = "SELECT * FROM S WHERE A; B; C PARTITION BY [k] WITHIN 500 EVENTS"


def batches(events: int, batch: int = 100_000, seed: int = 9):
    """Events whose keys drift: at any time about 50 keys are active, each for ~5,000 events."""
    rng = np.random.default_rng(seed)
    for start in range(0, events, batch):
        n = min(batch, events - start)
        index = np.arange(start, start + n)
        keys = index // 100 + rng.integers(0, 50, size=n)
        kinds = np.array(["A", "B", "C", "X"])[rng.integers(0, 4, size=n)]
        yield pa.table({"event_type": pa.array(kinds), "k": pa.array(keys)})


def rss_mb() -> float:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def run(events: int, report_every: int = 1_000_000, out=print) -> list[dict]:
    import ceql

    query = ceql.compile(QUERY, ceql.declare(DECLARATION))
    evaluator = query.evaluator()
    rows = []
    seen = matches = 0
    started = time.perf_counter()
    for table in batches(events):
        matches += sum(1 for _ in evaluator.process(table))
        seen += table.num_rows
        if seen % report_every == 0 or seen == events:
            row = {
                "events": seen,
                "matches": matches,
                "live_nodes": evaluator.live_nodes(),
                # The Python path's live partitions; the kernel does not expose its own.
                "partitions": len(evaluator.partitions) if evaluator._kernel is None else None,
                "path": "python" if evaluator._kernel is None else "kernel",
                "rss_mb": round(rss_mb(), 1),
                "seconds": round(time.perf_counter() - started, 1),
            }
            rows.append(row)
            out(row)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=10_000_000)
    args = parser.parse_args()
    run(args.events)


if __name__ == "__main__":
    main()
