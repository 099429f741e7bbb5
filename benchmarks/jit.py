"""JIT compile time of the compiled kernel: ``python -m benchmarks.jit``.

A user's first ``query.run(table, output="arrow")`` in a process loads the kernel's numba
functions from numba's on-disk cache, or compiles them when the cache is empty (a fresh
install, or a new ceql version). Each query below is timed in a fresh process with an empty
cache directory ("cold"), then in another fresh process with the cache that run filled
("cached"). The time is the first call's, on a small input (2,000 events), so it is almost all
JIT loading or compiling; importing ceql is not included.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: (name, declaration key in workloads.DECLARATIONS, [generator, events], query text)
QUERIES = [
    (
        "stocks q1",
        "stocks",
        ["stocks", 2_000],
        (ROOT / "benchmarks" / "queries" / "stocks" / "q1_none.txt").read_text(),
    ),
    (
        "A : B : C PARTITION BY [k]",
        "keyed",
        ["keyed", 2_000],
        "SELECT * FROM S WHERE A : B : C PARTITION BY [k]",
    ),
    (
        "(AA; AB+; AC) WITHIN 100 EVENTS",
        "synthetic",
        ["uniform", 2_000],
        "SELECT ALL * FROM S WHERE (AA; AB+; AC) WITHIN 100 EVENTS CONSUME BY ANY",
    ),
]

_CODE = """
import json, sys, time
from benchmarks import generators
from benchmarks.workloads import DECLARATIONS
import ceql
from ceql.runtime.kernel import unsupported
declaration, data, text = json.loads(sys.argv[1])
query = ceql.compile(text, ceql.declare(DECLARATIONS[declaration]))
assert unsupported(query.plan) is None, unsupported(query.plan)
table = getattr(generators, data[0])(data[1])
wall, cpu = time.perf_counter(), time.process_time()
query.run(table, output="arrow")
print(json.dumps([time.perf_counter() - wall, time.process_time() - cpu]))
"""


def first_calls(declaration: str, data: list, text: str) -> dict[str, tuple[float, float]]:
    """(wall, CPU) seconds of the first kernel call: with an empty numba cache, then cached."""
    import json

    out = {}
    with tempfile.TemporaryDirectory(prefix="ceql-numba-") as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache, PYTHONPATH=str(ROOT))
        for label in ("cold", "cached"):
            done = subprocess.run(
                [sys.executable, "-c", _CODE, json.dumps([declaration, data, text])],
                env=env,
                capture_output=True,
                text=True,
                check=True,
                cwd=ROOT,
            )
            wall, cpu = json.loads(done.stdout.strip().splitlines()[-1])
            out[label] = (wall, cpu)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.jit", description=__doc__.splitlines()[0])
    parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores\n")
    print("| query | cold: wall s | cold: CPU s | cached: wall s | cached: CPU s |")
    print("|---|---:|---:|---:|---:|")
    for name, declaration, data, text in QUERIES:
        times = first_calls(declaration, data, text)
        (cold_wall, cold_cpu), (cached_wall, cached_cpu) = times["cold"], times["cached"]
        print(
            f"| {name} | {cold_wall:.2f} | {cold_cpu:.2f} | {cached_wall:.2f} | {cached_cpu:.2f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
