"""NOT FOLLOWED BY on the compiled kernel beside its twin: ``python -m benchmarks.absence``.

For the shapes of issue 40's table (docs/recipes.md's alerting query, with an equality or a
PARTITION BY), the CPU seconds of ``Query.evaluator(engine="compiled").arrow(table)`` over
keyed events (best of several runs, one process), events per CPU second, and the same for the
twin query with ``;`` instead of ``NOT FOLLOWED BY`` (also on the kernel); the Python path's
rate for comparison. ``--quick`` is the CI smoke run (small sizes)."""

from __future__ import annotations

import argparse
import random
import time

import pyarrow as pa

import ceql

DECLARATION = (
    "CREATE STREAM S { EVENT A { k:int, v:int, ts:primary_time }, EVENT B { k:int, v:int, ts:primary_time }, "
    "EVENT C { k:int, v:int, ts:primary_time } }"
)
#: (name, NOT FOLLOWED BY query, its twin)
SHAPES = [
    (
        "equality (the recipe's form)",
        "SELECT * FROM S WHERE A AS a NOT FOLLOWED BY B AS b FILTER b.k = a.k WITHIN 5 SECONDS",
        "SELECT * FROM S WHERE A AS a ; B AS b FILTER b.k = a.k WITHIN 5 SECONDS",
    ),
    (
        "PARTITION BY [k]",
        "SELECT * FROM S WHERE A AS a NOT FOLLOWED BY B PARTITION BY [k] WITHIN 5 SECONDS",
        "SELECT * FROM S WHERE A AS a ; B PARTITION BY [k] WITHIN 5 SECONDS",
    ),
    (
        "equality, measures",
        "SELECT a.k AS key, a.v AS v FROM S WHERE A AS a NOT FOLLOWED BY B AS b FILTER b.k = a.k WITHIN 5 SECONDS",
        "SELECT a.k AS key, a.v AS v FROM S WHERE A AS a ; B AS b FILTER b.k = a.k WITHIN 5 SECONDS",
    ),
]


def events(count: int, keys: int = 1000, seed: int = 1) -> pa.Table:
    """A, B, C uniformly over ``keys`` keys, 1 ms apart on average (int nanoseconds)."""
    rng = random.Random(seed)
    ts, rows = 0, []
    for _ in range(count):
        ts += rng.randrange(0, 2_000_000)
        rows.append({"event_type": rng.choice("ABC"), "k": rng.randrange(keys), "v": rng.randrange(1000), "ts": ts})
    return pa.Table.from_pylist(rows)


def cpu_seconds(query: ceql.Query, table: pa.Table, engine: str, repeat: int) -> tuple[float, int]:
    """Best CPU seconds of ``repeat`` runs, and the number of matches."""
    best, rows = float("inf"), 0
    for _ in range(repeat):
        start = time.process_time()
        rows = query.evaluator(engine=engine).arrow(table).num_rows
        best = min(best, time.process_time() - start)
    return best, rows


def run(quick: bool = False) -> list[dict]:
    """One row per shape."""
    count, repeat = (5_000, 1) if quick else (200_000, 7)
    schema = ceql.declare(DECLARATION)
    table = events(count)
    out = []
    for name, text, twin in SHAPES:
        query, other = ceql.compile(text, schema), ceql.compile(twin, schema)
        seconds, matches = cpu_seconds(query, table, "compiled", repeat)
        twin_seconds, twin_matches = cpu_seconds(other, table, "compiled", repeat)
        python_seconds, python_matches = cpu_seconds(query, table, "python", 1)
        out.append(
            {
                "shape": name,
                "events": count,
                "matches": matches,
                "python_matches": python_matches,
                "seconds": seconds,
                "twin_seconds": twin_seconds,
                "twin_matches": twin_matches,
                "python_seconds": python_seconds,
                "slower_than_twin": seconds / twin_seconds if twin_seconds else float("nan"),
            }
        )
    return out


def table(rows: list[dict]) -> str:
    """The rows as a Markdown table."""
    lines = [
        "| shape | events | matches | kernel CPU s | events/s | twin CPU s | twin events/s | x twin | Python path events/s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['shape']} | {r['events']:,} | {r['matches']:,} | {r['seconds']:.3f} | {r['events'] / r['seconds']:,.0f} "
            f"| {r['twin_seconds']:.3f} | {r['events'] / r['twin_seconds']:,.0f} | {r['slower_than_twin']:.2f} "
            f"| {r['events'] / r['python_seconds']:,.0f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.absence", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    print(table(run(args.quick)))


if __name__ == "__main__":
    main()
