"""Latency of ``Evaluator.push(event)``, one event at a time: ``python -m benchmarks latency``.

The way a consumer loop uses ceql: events arrive one by one as dicts (as decoded from JSON)
and each ``push`` returns the matches that event triggers. Per query shape and engine path
(the default evaluator, which runs the Python path for push; and ``engine="compiled"``, the
numba kernel, where it supports the query), the table gives the mean CPU time per event (the
basis of comparison, ``time.process_time`` over the whole loop), the wall time of each push
(p50, p99, p99.9, max; ``time.perf_counter_ns`` around each call), the sustained rate on one
core (events per CPU second; per wall second in brackets), and, measured in the same process
on the same events, the older path (a batch of one event per push, on the first 1,000 events)
and ``query.run`` over the whole list, per event. The events are generated (seeded) before any
clock starts; the first 2,000 events warm up the evaluator (the JIT cache of the kernel, the
lazily built automaton) and are not timed. The first row times, in the same loop, a call that
only burns 7 µs of CPU: the machine's own noise (on a shared machine, the tail of every row is
mostly that).

``--quick`` is the CI smoke run (small sizes); ``--only TEXT`` runs the shapes whose name
contains TEXT; ``--json FILE`` writes the rows.
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import time
from pathlib import Path

import ceql

DECLARATION = (
    "CREATE STREAM S { EVENT A { k:int, v:int, s:string, ts:primary_time }, "
    "EVENT B { k:int, v:int, s:string, ts:primary_time }, EVENT C { k:int, v:int, s:string, ts:primary_time } }"
)
ISSUE = "SELECT * FROM S WHERE A AS a ; B AS b ; C AS c FILTER a[v > 500] PARTITION BY [k] WITHIN 100 EVENTS"

#: (name, query, keys, how times are given)
SHAPES = [
    ("issue query, 1,000 keys", ISSUE, 1000, "int"),
    ("issue query, 10 keys (matches)", ISSUE, 10, "int"),
    (
        "measures + condition across events, 1,000 keys",
        "SELECT *, a.v AS av, COUNT(b) AS n FROM S WHERE A AS a ; B+ AS b ; C AS c "
        "FILTER a[v > 500] AND c.v > a.v PARTITION BY [k] WITHIN 100 EVENTS",
        1000,
        "int",
    ),
    (
        "measures + condition across events, 10 keys (matches)",
        "SELECT *, a.v AS av, COUNT(b) AS n FROM S WHERE A AS a ; B+ AS b ; C AS c "
        "FILTER a[v > 500] AND c.v > a.v PARTITION BY [k] WITHIN 100 EVENTS",
        10,
        "int",
    ),
    (
        "time window, ISO-8601 times, LIKE and IN, 100 keys",
        "SELECT * FROM S WHERE A AS a ; B AS b FILTER a[s LIKE 'x.*' AND v IN {1, 2, 3, 5, 8, 13, 21, 34}] "
        "AND b[v < 100] PARTITION BY [k] WITHIN 2 SECONDS",
        100,
        "iso",
    ),
    (
        "NOT FOLLOWED BY (deadlines), 100 keys",
        "SELECT * FROM S WHERE A AS a FILTER a[v > 900] NOT FOLLOWED BY B AS b FILTER b[v > 500] "
        "PARTITION BY [k] WITHIN 500 MILLISECONDS",
        100,
        "int",
    ),
    (
        "NOT FOLLOWED BY, an equality links the events (docs/recipes.md's form), 1,000 keys",
        "SELECT * FROM S WHERE A AS a NOT FOLLOWED BY B AS b FILTER b.k = a.k WITHIN 500 MILLISECONDS",
        1000,
        "int",
    ),
    (
        "NOT FOLLOWED BY ... PARTITION BY [k], 1,000 keys",
        "SELECT * FROM S WHERE A AS a NOT FOLLOWED BY B PARTITION BY [k] WITHIN 500 MILLISECONDS",
        1000,
        "int",
    ),
    (
        "NOT FOLLOWED BY with measures (the recipe's SELECT), 1,000 keys",
        "SELECT a.k AS key, a.v AS v, a.ts + INTERVAL '500' MILLISECONDS AS due FROM S WHERE A AS a "
        "NOT FOLLOWED BY B AS b FILTER b.k = a.k WITHIN 500 MILLISECONDS",
        1000,
        "int",
    ),
]


def events(count: int, keys: int, times: str, seed: int = 7) -> list[dict]:
    """A, B, C uniformly, ``keys`` partition keys, v in 0..999, s among 'x1', 'x2', 'y',
    a time 1 ms apart on average (integers in ns, or ISO-8601 text)."""
    rng = random.Random(seed)
    out = []
    ns = 1_709_283_600 * 10**9  # 2024-03-01T09:00:00Z
    for _ in range(count):
        ns += rng.randrange(0, 2_000_000)
        if times == "iso":
            seconds, nanos = divmod(ns, 10**9)
            stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{nanos:09d}Z"
        else:
            stamp = ns
        out.append(
            {
                "event_type": rng.choice("ABC"),
                "k": rng.randrange(keys),
                "v": rng.randrange(1000),
                "s": rng.choice(("x1", "x2", "y")),
                "ts": stamp,
            }
        )
    return out


def _percentile(ordered: list[int], fraction: float) -> float:
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] / 1000


def measure(name: str, text: str, keys: int, times: str, engine: str, count: int) -> dict:
    """One row: ``count`` pushes after a warm-up, timed one by one."""
    schema = ceql.declare(DECLARATION)
    query = ceql.compile(text, schema)
    warm = 2000
    stream = events(warm + count, keys, times)
    options = {} if engine == "default" else {"engine": engine}
    evaluator = query.evaluator(**options)
    row: dict = {"shape": name, "engine": engine, "events": count}
    if engine == "compiled":
        from ceql.runtime import kernel

        reason = kernel.unsupported(query.plan)
        if reason is not None:
            return {**row, "skipped": f"the kernel does not evaluate {reason}"}
    for event in stream[:warm]:
        evaluator.push(event)
    timed = stream[warm:]
    walls = [0] * count
    matches = 0
    clock = time.perf_counter_ns
    push = evaluator.push
    cpu0, wall0 = time.process_time(), time.perf_counter()
    for index, event in enumerate(timed):
        start = clock()
        matches += len(push(event))
        walls[index] = clock() - start
    cpu = time.process_time() - cpu0
    wall = time.perf_counter() - wall0
    walls.sort()
    row.update(
        {
            "matches": matches,
            "mean_cpu_us": cpu / count * 1e6,
            "mean_wall_us": wall / count * 1e6,
            "p50_us": _percentile(walls, 0.5),
            "p99_us": _percentile(walls, 0.99),
            "p999_us": _percentile(walls, 0.999),
            "max_us": walls[-1] / 1000,
            "events_per_cpu_s": count / cpu,
            "events_per_wall_s": count / wall,
        }
    )
    # Side by side, same process, same events: a batch of one per event (the path push took
    # before), and query.run over the whole list.
    old = query.evaluator(**options)
    for event in stream[:warm]:
        old.push_batch([event])
    sample = timed[:1000]
    cpu0 = time.process_time()
    for event in sample:
        old.push_batch([event])
    row["batch_of_one_cpu_us"] = (time.process_time() - cpu0) / len(sample) * 1e6
    cpu0 = time.process_time()
    ran = sum(1 for _ in query.run(stream, **options))
    row["run_cpu_us"] = (time.process_time() - cpu0) / len(stream) * 1e6
    row["run_matches"] = ran
    return row


def noise_floor(count: int, spin_ns: int = 7_000) -> dict:
    """The same timed loop around a call that only burns ``spin_ns`` of CPU (about what a push
    costs): what the machine (scheduling, other processes, the timer) adds to every figure,
    the tail above all."""
    stream = events(count, 10, "int")
    walls = [0] * count
    clock = time.perf_counter_ns
    cpu_clock = time.process_time_ns

    def push(event: dict) -> list:
        start = cpu_clock()
        while cpu_clock() - start < spin_ns:
            pass
        return []

    cpu0, wall0 = time.process_time(), time.perf_counter()
    for index, event in enumerate(stream):
        start = clock()
        push(event)
        walls[index] = clock() - start
    cpu = time.process_time() - cpu0
    wall = time.perf_counter() - wall0
    walls.sort()
    return {
        "shape": "a call that burns 7 µs of CPU (the machine's noise)",
        "engine": "-",
        "events": count,
        "matches": 0,
        "mean_cpu_us": cpu / count * 1e6,
        "mean_wall_us": wall / count * 1e6,
        "p50_us": _percentile(walls, 0.5),
        "p99_us": _percentile(walls, 0.99),
        "p999_us": _percentile(walls, 0.999),
        "max_us": walls[-1] / 1000,
        "events_per_cpu_s": count / cpu if cpu else float("inf"),
        "events_per_wall_s": count / wall,
        "batch_of_one_cpu_us": float("nan"),
        "run_cpu_us": float("nan"),
    }


def table(rows: list[dict]) -> str:
    """The rows as a Markdown table."""
    head = (
        "| shape | engine | events | matches | CPU µs/event | wall p50 | p99 | p99.9 | max | events/s (CPU; wall) "
        "| batch of one, CPU µs | run, CPU µs/event |\n"
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    )
    lines = [head]
    for r in rows:
        if "skipped" in r:
            lines.append(f"| {r['shape']} | {r['engine']} | n/a: {r['skipped']} |" + " |" * 9)
            continue
        lines.append(
            f"| {r['shape']} | {r['engine']} | {r['events']:,} | {r['matches']:,} | {r['mean_cpu_us']:.1f} "
            f"| {r['p50_us']:.1f} | {r['p99_us']:.1f} | {r['p999_us']:.1f} | {r['max_us']:,.0f} "
            f"| {r['events_per_cpu_s']:,.0f} ({r['events_per_wall_s']:,.0f}) "
            f"| {_cell(r['batch_of_one_cpu_us'], 0)} | {_cell(r['run_cpu_us'], 1)} |"
        )
    return "\n".join(lines)


def _cell(value: float, digits: int) -> str:
    return "-" if value != value else f"{value:.{digits}f}"


def run(quick: bool = False, only: str | None = None) -> list[dict]:
    """Measure every shape on both paths; returns the rows."""
    count = 3_000 if quick else 200_000
    rows = [noise_floor(count)]
    for name, text, keys, times in SHAPES:
        if only and only not in name:
            continue
        for engine in ("default", "compiled"):
            gc.collect()
            rows.append(measure(name, text, keys, times, engine, count))
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks latency", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only")
    parser.add_argument("--json", metavar="FILE")
    args = parser.parse_args(argv)
    rows = run(args.quick, args.only)
    print(table(rows))
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows}, indent=1))


if __name__ == "__main__":
    main()
