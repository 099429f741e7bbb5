"""Spark batch throughput on a partitioned stock-style query, with local[1] and local[2].

    python -m benchmarks.spark [--events 1000000]

Each run starts its own Spark session (a separate process) on the same seeded data written once
as Parquet; the time covers reading, numbering, the evaluation and writing the matches.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

QUERY = """SELECT * FROM S
WHERE (SELL AS msft; (BUY OR SELL) AS oracle; (BUY OR SELL) AS csco; SELL AS amat)
FILTER msft[name = 'MSFT'] AND oracle[name = 'ORCL'] AND csco[name = 'CSCO'] AND amat[name = 'AMAT']
PARTITION BY [volume]
WITHIN 10000 [stock_time]"""


def run_once(master: str, data: str, out: str) -> dict:
    from benchmarks.generators import STOCK_DECLARATION
    from ceql.spark import find, session

    spark = session(master)
    started = time.perf_counter()
    frame = spark.read.parquet(data)
    found = find(frame, QUERY, STOCK_DECLARATION)
    found.write.mode("overwrite").parquet(out)
    seconds = time.perf_counter() - started
    events = frame.count()
    matches = spark.read.parquet(out).count()
    spark.stop()
    return {
        "master": master,
        "events": events,
        "matches": matches,
        "seconds": round(seconds, 2),
        "events_per_s": round(events / seconds),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--one", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(run_once(*args.one)))
        return
    import pyarrow.parquet as pq

    from benchmarks.generators import stocks

    root = Path(tempfile.mkdtemp(prefix="ceql-spark-bench-"))
    data = root / "events.parquet"
    pq.write_table(stocks(args.events), data)
    print("| master | events | matches | seconds | events/s |\n|---|---:|---:|---:|---:|")
    for master in ("local[1]", "local[2]"):
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "benchmarks.spark",
                "--one",
                master,
                str(data),
                str(root / f"out-{master[-2]}"),
            ],
            capture_output=True,
            text=True,
            cwd=Path(__file__).resolve().parents[1],
        )
        if result.returncode:
            print(f"| {master} | error: {result.stderr.strip().splitlines()[-1]} ||||")
            continue
        row = json.loads(result.stdout.strip().splitlines()[-1])
        print(
            f"| {row['master']} | {row['events']:,} | {row['matches']:,} | {row['seconds']} | {row['events_per_s']:,} |"
        )


if __name__ == "__main__":
    main()
