"""Benchmark runner: ``python -m benchmarks [FAMILY ...] [--quick] [--only TEXT] [--json FILE]``.

Families (one table each): core (CORE's queries on the stock, smart-home and taxi schemas, with
CORE++ side by side), synthetic (the CORE paper's synthetic streams, with CORE++), stress
(Foundations' enumeration stress test), duckdb (workloads DuckDB expresses exactly, side by side),
issues (correlation, cross-event conditions under +, selection-strategy cost per event,
measures), flink (Flink SQL MATCH_RECOGNIZE side by side), latency (``Evaluator.push`` one
event at a time: p50/p99/p99.9 and events/s per query shape, benchmarks/latency.py). Without
FAMILY: every family but flink and latency. Each row runs in a fresh process (so peak memory is its own); competitors that are not
installed are reported as such. ``--quick`` is the CI smoke run (small sizes, one process).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.workloads import FAMILIES, rows_of

HERE = Path(__file__).resolve().parent


def _isolated(row: dict, timeout: float, competitors: bool) -> dict:
    """Measure ``row`` in a fresh process (its own peak memory); a crash becomes an error row."""
    args = [sys.executable, "-m", "benchmarks", "--one", json.dumps(row), "--timeout", str(timeout)]
    if not competitors:
        args.append("--no-competitors")
    try:
        result = subprocess.run(
            args, capture_output=True, text=True, cwd=HERE.parent, timeout=4 * timeout + 600
        )
    except subprocess.TimeoutExpired:
        return {**_identity(row), "error": "the row's process did not finish"}
    if result.returncode != 0:
        lines = result.stderr.strip().splitlines() or [f"exit {result.returncode}"]
        return {**_identity(row), "error": lines[-1]}
    return json.loads(result.stdout.strip().splitlines()[-1])


def _identity(row: dict) -> dict:
    return {k: row[k] for k in ("family", "workload", "query", "note")}


def _progress(row: dict) -> str:
    if "seconds" in row:
        text = f"{row['complex_events']:,} CEs in {row['seconds']:.3f} s"
    else:
        text = row.get("error") or row.get("skipped") or f"timeout after {row.get('timeout')} s"
    for name, entry in row.get("competitors", {}).items():
        text += f"; {name}: " + (
            f"{entry['seconds']:.3f} s, {entry.get('same', '')}" if "seconds" in entry else str(entry)
        )
    return f"{row['family']:9} {row['workload']:11} {row['query'][:44]:44} {text}"


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.splitlines()[0])
    parser.add_argument(
        "families",
        nargs="*",
        choices=[[], *FAMILIES, "latency"],
        metavar="FAMILY",
        help=f"tables to run, among {', '.join(FAMILIES)}, latency (default: all but flink and latency)",
    )
    parser.add_argument("--quick", action="store_true", help="small sizes, in one process (CI smoke run)")
    parser.add_argument("--only", help="run only rows whose workload or query contains this text")
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per engine run (default 600)")
    parser.add_argument("--no-competitors", action="store_true", help="time ceql only")
    parser.add_argument("--in-process", action="store_true", help="do not isolate rows in subprocesses")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    competitors = not args.no_competitors
    if args.one:
        from benchmarks.measure import measure

        print(json.dumps(measure(json.loads(args.one), args.timeout, competitors)))
        return
    if "latency" in args.families:
        from benchmarks import latency

        latency_rows = latency.run(args.quick, args.only)
        print("### latency (Evaluator.push, one event at a time)\n")
        print(latency.table(latency_rows))
        if args.json:
            Path(args.json).write_text(json.dumps({"machine": _machine(), "rows": latency_rows}, indent=1))
        if args.families == ["latency"]:
            return
        args.families = [f for f in args.families if f != "latency"]
    families = args.families or [f for f in FAMILIES if f != "flink"]
    rows = rows_of(families, args.quick)
    if args.only:
        rows = [r for r in rows if args.only in r["workload"] or args.only in r["query"]]
    results = []
    for row in rows:
        if args.in_process or args.quick:
            from benchmarks.measure import measure

            result = measure(row, args.timeout, competitors)
        else:
            result = _isolated(row, args.timeout, competitors)
        results.append(result)
        print(_progress(result), file=sys.stderr, flush=True)
    _print(results, families)
    if args.json:
        Path(args.json).write_text(json.dumps({"machine": _machine(), "rows": results}, indent=1))


def _machine() -> str:
    # The engine's version: the last commit that changed src/ (not the benchmarks' own commits).
    commit = subprocess.run(
        ["git", "log", "-1", "--format=%h", "--", "src"], capture_output=True, text=True, cwd=HERE.parent
    )
    return (
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
        f"engine (src/) at commit {commit.stdout.strip() or 'unknown'}; {time.strftime('%Y-%m-%d')}"
    )


def _print(results: list[dict], families: list[str]) -> None:
    from benchmarks.report import table

    print(_machine())
    for family in families:
        rows = [r for r in results if r["family"] == family]
        if rows:
            print(f"\n### {family}\n")
            print(table(rows))


if __name__ == "__main__":
    main()
