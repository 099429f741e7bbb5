"""Benchmark runner: ``python -m benchmarks [--quick] [--only NAME] [--json FILE]``.

One row per (workload, query): events, complex events, seconds, events/s, CEs/s, peak memory
(RSS growth of an isolated process), and the ratio of engine time to a pure columnar scan of the
query's predicates over the same Arrow data (the practical limit). Input is generated (seeded)
and already in memory as Arrow; output is consumed by counting.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _queries(dataset: str, names: list[str] | None = None) -> list[tuple[str, str]]:
    files = sorted((HERE / "queries" / dataset).glob("*.txt"), key=lambda p: (len(p.stem), p.stem))
    out = [(p.stem.replace("_none", ""), p.read_text()) for p in files]
    return [q for q in out if names is None or q[0] in names]


def workloads(quick: bool) -> list[dict]:
    """Every benchmark: name, data generator call, declaration, query."""

    scale = 0.1 if quick else 1.0
    items = []
    stock_names = ["q1", "q6", "other-q1", "other-q3"] if quick else None
    for name, text in _queries("stocks", stock_names):
        items.append(
            {
                "workload": "stocks",
                "query": name,
                "text": text,
                "declaration": "stocks",
                "data": ("stocks", int(224_473 * scale)),
            }
        )
    # The cost of a cross-event condition on a selective stock query (q1 plus a price relation).
    cross = (
        "SELECT * FROM S WHERE (SELL as T1; BUY as T2; BUY as T3) FILTER T1[name = 'INTC'] AND "
        "T2[name = 'RIMM'] AND T3[name = 'QQQ'] AND T1.price < T3.price WITHIN 10000 [stock_time]"
    )
    items.append(
        {
            "workload": "stocks",
            "query": "q1+cross",
            "text": cross,
            "declaration": "stocks",
            "data": ("stocks", int(224_473 * scale)),
        }
    )
    homes_names = ["q1", "q6"] if quick else None
    for name, text in _queries("smart_homes", homes_names):
        items.append(
            {
                "workload": "smart_homes",
                "query": name,
                "text": text,
                "declaration": "homes",
                "data": ("smart_homes", int(1_000_000 * scale)),
            }
        )
    taxi_names = ["q1", "q6"] if quick else None
    for name, text in _queries("taxis", taxi_names):
        items.append(
            {
                "workload": "taxis",
                "query": name,
                "text": text,
                "declaration": "taxis",
                "data": ("taxis", int(585_762 * scale)),
            }
        )
    size = int(1_000_000 * scale)
    synthetic = [
        ("sequence", "SELECT ALL * FROM S WHERE (AA; AB; AC) WITHIN 100 EVENTS CONSUME BY ANY"),
        ("kleene", "SELECT ALL * FROM S WHERE (AA; AB+; AC) WITHIN 100 EVENTS CONSUME BY ANY"),
        ("sequence-5", "SELECT ALL * FROM S WHERE (AA; AB; AC; AD; AE) WITHIN 100 EVENTS CONSUME BY ANY"),
        ("disjunction", "SELECT ALL * FROM S WHERE (AA; (AB OR AC); AD) WITHIN 100 EVENTS CONSUME BY ANY"),
    ]
    for strategy in ("ALL", "NEXT", "LAST", "MAX"):
        synthetic.append(
            (f"no-last-{strategy}", f"SELECT {strategy} * FROM S WHERE (AA; AB; AC; ZZ) WITHIN 100 EVENTS")
        )
    for name, text in synthetic:
        items.append(
            {
                "workload": "synthetic",
                "query": name,
                "text": text,
                "declaration": "synthetic",
                "data": ("uniform", size),
            }
        )
    for length in [200, 1000] if quick else [200, 400, 800, 1200, 1600, 2000]:
        items.append(
            {
                "workload": "stress",
                "query": f"Q2 n={length}",
                "text": "SELECT * FROM S WHERE A; B; C; D",
                "declaration": "stress",
                "data": ("stress", length),
            }
        )
    return items


def _declaration(kind: str) -> str:
    from benchmarks import generators as g

    if kind == "stocks":
        return g.STOCK_DECLARATION
    if kind == "homes":
        return g.HOMES_DECLARATION
    if kind == "taxis":
        return g.TAXI_DECLARATION
    if kind == "stress":
        return "CREATE STREAM S { EVENT A { id:int }, EVENT B { id:int }, EVENT C { id:int }, EVENT D { id:int }, EVENT E { id:int } }"
    types = g.synthetic_types(9) + ["ZZ"]
    return g.synthetic_declaration(types)


def _data(kind: str, size: int):
    from benchmarks import generators as g

    if kind == "stocks":
        return g.stocks(size)
    if kind == "smart_homes":
        return g.smart_homes(size)
    if kind == "taxis":
        return g.taxis(size)
    if kind == "stress":
        return g.stress(size)
    return g.uniform(size, g.synthetic_types(9))


def _rss_mb() -> float:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def run_one(item: dict) -> dict:
    """Measure one benchmark in this process."""
    import ceql

    schema = ceql.declare(_declaration(item["declaration"]))
    query = ceql.compile(item["text"], schema)
    table = _data(*item["data"])
    # The practical limit: evaluating the query's predicate columns over the same data.
    started = time.perf_counter()
    query.plan.compiled.predicates.evaluate(table)
    table.column("event_type").to_numpy(zero_copy_only=False)
    scan = time.perf_counter() - started
    before = _rss_mb()
    row = {"workload": item["workload"], "query": item["query"], "events": table.num_rows}
    if item["workload"] == "stress":
        evaluator = query.evaluator()
        started = time.perf_counter()
        list(evaluator.process(table.slice(0, table.num_rows - 1)))
        update = time.perf_counter() - started
        memory = _rss_mb() - before
        started = time.perf_counter()
        count = sum(1 for _ in evaluator.process(table.slice(table.num_rows - 1)))
        enumerate_seconds = time.perf_counter() - started
        row.update(
            complex_events=count,
            seconds=update + enumerate_seconds,
            update_seconds=update,
            enumeration_seconds=enumerate_seconds,
            events_per_s=(table.num_rows - 1) / update if update else None,
            ces_per_s=count / enumerate_seconds if enumerate_seconds else None,
            memory_before_last_mb=round(memory, 1),
        )
    else:
        started = time.perf_counter()
        count = sum(1 for _ in query.run(table))
        seconds = time.perf_counter() - started
        row.update(
            complex_events=count,
            seconds=seconds,
            events_per_s=table.num_rows / seconds,
            ces_per_s=count / seconds,
        )
    row["peak_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 - before, 1)
    row["scan_seconds"] = scan
    row["vs_scan"] = row["seconds"] / scan if scan else None
    return row


def _isolated(item: dict) -> dict:
    result = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--one", json.dumps(item)],
        capture_output=True,
        text=True,
        cwd=HERE.parent,
        timeout=3600,
    )
    if result.returncode != 0:
        return {
            "workload": item["workload"],
            "query": item["query"],
            "error": result.stderr.strip().splitlines()[-1],
        }
    return json.loads(result.stdout.strip().splitlines()[-1])


def _fmt(value, digits: int = 0) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return f"{value:,}"


def table_markdown(rows: list[dict]) -> str:
    lines = [
        "| workload | query | events | complex events | seconds | events/s | CEs/s | peak MB | vs scan |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        if "error" in row:
            lines.append(f"| {row['workload']} | {row['query']} | error: {row['error']} |||||||")
            continue
        lines.append(
            f"| {row['workload']} | {row['query']} | {_fmt(row['events'])} | {_fmt(row['complex_events'])} | "
            f"{_fmt(row['seconds'], 3)} | {_fmt(row['events_per_s'])} | {_fmt(row['ces_per_s'])} | "
            f"{_fmt(row['peak_mb'], 1)} | {_fmt(row['vs_scan'], 1)}x |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes and a few queries (CI smoke run)")
    parser.add_argument("--only", help="run only workloads or queries whose name contains this")
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    parser.add_argument("--in-process", action="store_true", help="do not isolate benchmarks in subprocesses")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(run_one(json.loads(args.one))))
        return
    items = workloads(args.quick)
    if args.only:
        items = [i for i in items if args.only in i["workload"] or args.only in i["query"]]
    rows = []
    for item in items:
        row = run_one(item) if args.in_process or args.quick else _isolated(item)
        rows.append(row)
        print(
            f"{row['workload']:12} {row['query']:18} "
            + (
                f"{_fmt(row.get('events_per_s'))} events/s, {_fmt(row.get('complex_events'))} CEs"
                if "error" not in row
                else row["error"]
            ),
            file=sys.stderr,
        )
    header = (
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
        f"{time.strftime('%Y-%m-%d')}"
    )
    print(header)
    print(table_markdown(rows))
    if args.json:
        Path(args.json).write_text(json.dumps({"machine": header, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
