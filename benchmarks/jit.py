"""The compiled kernel's JIT and a user's first query: ``python -m benchmarks.jit``.

numba compiles the kernel's functions on their first call and caches them on disk; a fresh
installation has no cache. Each query is timed in fresh processes, each with its own cache
directory:

- **first query** (what a user sees after ``pip install``): an empty cache, the default engine
  ("auto"), ``query.run(table, output="arrow")`` on 10,000 events; the time includes
  ``import ceql`` and everything the process does until the table is returned (the kernel is
  not ready, so the input runs on the Python path and the kernel compiles in a background
  process: ceql.runtime.kernel.warm);
- **compile**: an empty cache, ``engine="compiled"`` (the kernel's first call compiles it), the
  first call's time on 2,000 events;
- **cached**: the same after ``python -m ceql.runtime.kernel.warm`` filled the cache: the first
  call loads the machine code.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: (name, declaration key in workloads.DECLARATIONS, generator, query text)
QUERIES = [
    ("stocks q1", "stocks", "stocks", (ROOT / "benchmarks" / "queries" / "stocks" / "q1_none.txt").read_text()),
    ("A : B : C PARTITION BY [k]", "keyed", "keyed", "SELECT * FROM S WHERE A : B : C PARTITION BY [k]"),
    (
        "(AA; AB+; AC) WITHIN 100 EVENTS",
        "synthetic",
        "uniform",
        "SELECT ALL * FROM S WHERE (AA; AB+; AC) WITHIN 100 EVENTS CONSUME BY ANY",
    ),
]

# Data is generated before the clock starts (in the first-query case, before importing ceql).
_CODE = """
import json, sys, time
spec = json.loads(sys.argv[1])
from benchmarks import generators
table = getattr(generators, spec["generator"])(spec["events"])
from benchmarks.workloads import DECLARATIONS
declaration = DECLARATIONS[spec["declaration"]]
for name in [m for m in sys.modules if m == "ceql" or m.startswith("ceql.")]:
    del sys.modules[name]
wall, cpu = time.perf_counter(), time.process_time()
import ceql
query = ceql.compile(spec["text"], ceql.declare(declaration))
out = query.run(table, output="arrow", engine=spec["engine"])
print(json.dumps([time.perf_counter() - wall, time.process_time() - cpu, out.num_rows]))
"""


def _run(spec: dict, cache: str, warm_first: bool = False, background: bool = False) -> tuple[float, float]:
    env = dict(os.environ, NUMBA_CACHE_DIR=cache, PYTHONPATH=str(ROOT), CEQL_JIT_WARM="1" if background else "0")
    if warm_first:
        subprocess.run([sys.executable, "-m", "ceql.runtime.kernel.warm"], env=env, check=True, capture_output=True)
    done = subprocess.run(
        [sys.executable, "-c", _CODE, json.dumps(spec)], env=env, capture_output=True, text=True, check=True, cwd=ROOT
    )
    wall, cpu, _ = json.loads(done.stdout.strip().splitlines()[-1])
    if background:  # let the background compilation finish before the next measurement
        deadline = time.time() + 300
        while any(Path(cache).rglob("ceql-kernel-warming.lock")) and time.time() < deadline:
            time.sleep(0.5)
    return wall, cpu


def measure(declaration: str, generator: str, text: str) -> dict[str, tuple[float, float]]:
    """(wall, CPU) seconds: first query after install, compile, cached load."""
    out = {}
    base = {"declaration": declaration, "generator": generator, "text": text}
    with tempfile.TemporaryDirectory(prefix="ceql-numba-") as cache:
        out["first query"] = _run(dict(base, events=10_000, engine="auto"), cache, background=True)
    with tempfile.TemporaryDirectory(prefix="ceql-numba-") as cache:
        out["compile"] = _run(dict(base, events=2_000, engine="compiled"), cache)
    with tempfile.TemporaryDirectory(prefix="ceql-numba-") as cache:
        out["cached"] = _run(dict(base, events=2_000, engine="compiled"), cache, warm_first=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.jit", description=__doc__.splitlines()[0])
    parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores\n")
    print(
        "| query | first query, 10k events (import included): wall s | CPU s | compile (2k events): wall s | CPU s "
        "| cached: wall s | CPU s |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, declaration, generator, text in QUERIES:
        times = measure(declaration, generator, text)
        cells = " | ".join(f"{times[k][0]:.2f} | {times[k][1]:.2f}" for k in ("first query", "compile", "cached"))
        print(f"| {name} | {cells} |", flush=True)


if __name__ == "__main__":
    main()
