"""What ceql costs on Spark, side by side in one run: a floor job, ``find()``, the local engine,
and streaming against batch on the same files, with local[1] and local[2].

    python -m benchmarks.spark_cost [--events 1000000]

- floor: read the Parquet files, group by the partition key, ``applyInArrow`` returning a
  count per group, write: the least any per-key evaluation on Spark costs;
- find: ``ceql.spark.find`` on the partitioned stock query (PARTITION BY [volume], WITHIN
  10000 [stock_time]), written as Parquet;
- local: the local engine on the same events (one Python process, no Spark);
- batch (time) / stream (time): the query with a time window (stock_time as primary_time in
  ms, tie-break ``id``), once by ``find`` on the files and once as a stream over the same files
  (``trigger(availableNow=True)``), both written as Parquet.

Each master runs in its own process with its own session; a small warm-up job runs first so
that no figure pays for starting the JVM or the Python workers.
"""

from __future__ import annotations

import argparse
import json
import shutil
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
TIME_QUERY = QUERY.replace("WITHIN 10000 [stock_time]", "WITHIN 10 SECONDS")
TIME_DECLARATION = """CREATE STREAM S {
EVENT BUY { id:int, name:string, volume:int, price:double, stock_time:primary_time(ms) },
EVENT SELL { id:int, name:string, volume:int, price:double, stock_time:primary_time(ms) }
}"""
FILES = 8


def _timed(action) -> float:
    started = time.perf_counter()
    action()
    seconds = round(time.perf_counter() - started, 2)
    print(f"{getattr(action, '__name__', 'step')}: {seconds} s", file=sys.stderr, flush=True)
    return seconds


def run_master(master: str, data: str, out: str) -> dict:
    """Every Spark figure for one master, in this process."""
    import pyarrow as pa

    from benchmarks.generators import STOCK_DECLARATION
    from ceql.spark import find, session

    spark = session(master, **{"spark.sql.shuffle.partitions": master[6:-1] if master[6:-1].isdigit() else "4"})
    frame = spark.read.parquet(data)
    schema = frame.schema

    def count_group(table: pa.Table) -> pa.Table:
        return pa.table({"volume": [table.column("volume")[0].as_py()], "n": [table.num_rows]})

    def floor() -> None:
        counted = frame.groupBy("volume").applyInArrow(count_group, "volume long, n long")
        counted.write.mode("overwrite").parquet(f"{out}/floor")

    def batch(query: str, declaration: str, target: str, **options) -> None:
        find(frame, query, declaration, **options).write.mode("overwrite").parquet(f"{out}/{target}")

    def stream(source_path: str = data, target: str = "stream") -> None:
        source = spark.readStream.schema(schema).parquet(source_path)
        running = (
            find(source, TIME_QUERY, TIME_DECLARATION, tie_break="id", id_columns=["id"])
            .writeStream.format("parquet")
            .option("path", f"{out}/{target}")
            .option("checkpointLocation", f"{out}/{target}-checkpoint")
            .trigger(availableNow=True)
            .start()
        )
        running.awaitTermination()

    # Warm-up: the JVM, the Python workers, the query compiled in them, the state store.
    small = frame.limit(1000)
    small.write.parquet(f"{out}/warm-up-input")
    find(small, QUERY, STOCK_DECLARATION, order_by="id").count()
    small.groupBy("volume").applyInArrow(count_group, "volume long, n long").count()
    stream(f"{out}/warm-up-input", "warm-up-stream")
    figures = {
        "master": master,
        "floor": _timed(floor),
        # Several files have no input order in Spark (small files are packed in any order):
        # the stream order is the trades' id.
        "find": _timed(lambda: batch(QUERY, STOCK_DECLARATION, "find", order_by="id")),
        "batch_time": _timed(lambda: batch(TIME_QUERY, TIME_DECLARATION, "batch", tie_break="id", id_columns=["id"])),
        "stream_time": _timed(stream),
    }
    figures["matches"] = spark.read.parquet(f"{out}/find").count()
    figures["batch_matches"] = spark.read.parquet(f"{out}/batch").count()
    figures["stream_matches"] = spark.read.parquet(f"{out}/stream").count()
    spark.stop()
    return figures


def run_local(data: str) -> tuple[float, int]:
    """The local engine over the same events (read from the same files)."""
    import pyarrow.parquet as pq

    import ceql
    from benchmarks.generators import STOCK_DECLARATION

    query = ceql.compile(QUERY, ceql.declare(STOCK_DECLARATION))
    started = time.perf_counter()
    table = pq.read_table(data)
    matches = query.run(table, output="arrow").num_rows
    return round(time.perf_counter() - started, 2), matches


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--one", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(run_master(*args.one)))
        return
    import pyarrow.parquet as pq

    from benchmarks.generators import stocks

    root = Path(tempfile.mkdtemp(prefix="ceql-spark-cost-"))
    data = root / "events"
    data.mkdir()
    table = stocks(args.events)
    step = -(-table.num_rows // FILES)
    for index in range(FILES):  # several files: the stream and the batch read the same ones
        pq.write_table(table.slice(index * step, step), data / f"part-{index}.parquet")
    local_seconds, local_matches = run_local(str(data))
    print(f"{args.events} events; local engine: {local_seconds} s, {local_matches} matches\n")
    print("| master | floor s | find() s | find/floor | local s | batch (time) s | stream (time) s | stream/batch |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for master in ("local[1]", "local[2]"):
        result = subprocess.run(
            [sys.executable, "-m", "benchmarks.spark_cost", "--one", master, str(data), str(root / f"out-{master[-2]}")],
            capture_output=True,
            text=True,
            cwd=Path(__file__).resolve().parents[1],
        )
        if result.returncode:
            print(f"| {master} | error: {result.stderr.strip().splitlines()[-1]} |||||||")
            continue
        f = json.loads(result.stdout.strip().splitlines()[-1])
        assert f["matches"] == local_matches and f["batch_matches"] == f["stream_matches"], f
        print(
            f"| {master} | {f['floor']} | {f['find']} | {f['find'] / f['floor']:.2f} | {local_seconds} "
            f"| {f['batch_time']} | {f['stream_time']} | {f['stream_time'] / f['batch_time']:.2f} |"
        )
    shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
