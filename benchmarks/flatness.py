"""Per-event cost against the number of live partial matches (issue 25), side by side in one run.

Each workload processes a prefix that leaves n live partial matches (n = 1k, 2k, 4k, 8k, 16k),
untimed, then a tail of events of the same kind, timed: CPU microseconds per tail event (wall in
brackets), the complex events per tail event, and the CPU per reported position (where the
output itself grows with n, as MAX's does, that is the figure that must stay flat). A cost that
does not grow with n is flat: the last column is the ratio of the last size to the first.

    .venv/bin/python -m benchmarks.flatness            # every workload
    .venv/bin/python -m benchmarks.flatness --only NEXT --sizes 1000,16000
"""

from __future__ import annotations

import argparse
import gc
import time

import pyarrow as pa

import ceql
from benchmarks import generators as g
from benchmarks import workloads

SIZES = (1_000, 2_000, 4_000, 8_000, 16_000)
NEVER = 10_000_000  # a window that never cuts

EXAMPLE4 = workloads.EXAMPLE4


def _a_then_b(n: int, tail: int) -> pa.Table:
    return g.a_then_b(n, tail)


def _a_then_bc(n: int, tail: int) -> pa.Table:
    """n A-events, then B and C alternately: every A stays a live partial match of A ; B+ ; C."""
    types = ["A"] * n + ["B", "C"] * (tail // 2)
    return pa.table({"event_type": types, "id": list(range(len(types))), "v": [i % 1000 for i in range(len(types))]})


def _buys(n: int, tail: int) -> pa.Table:
    """B's with an A every fourth event, no key: the run of ``B+`` with no PARTITION BY keeps a
    union chain of every B of the prefix (until a compaction), which a window of 4 events cuts."""
    types = ["A" if i % 4 == 0 else "B" for i in range(n + tail)]
    return pa.table({"event_type": types, "id": list(range(len(types))), "v": [i % 7 for i in range(len(types))]})


def _threads(n: int, tail: int) -> pa.Table:
    # n events leave about n live partial matches (half of them tweets, each one alive).
    return g.threads(n + tail)


#: name -> (declaration, query, events(n, tail), tail events)
WORKLOADS: dict[str, tuple[str, str, object, int]] = {
    "Example 4 (nested PART-BY)": (g.THREADS_DECLARATION, EXAMPLE4, _threads, 2_000),
    "NEXT A;B, no window": (g.VALUES_DECLARATION, "SELECT NEXT * FROM S WHERE A AS a ; B AS b", _a_then_b, 200),
    "NEXT A;B, window never cuts": (
        g.VALUES_DECLARATION, f"SELECT NEXT * FROM S WHERE A AS a ; B AS b WITHIN {NEVER} EVENTS", _a_then_b, 200,
    ),
    "LAST A;B, window never cuts": (
        g.VALUES_DECLARATION, f"SELECT LAST * FROM S WHERE A AS a ; B AS b WITHIN {NEVER} EVENTS", _a_then_b, 200,
    ),
    "NEXT A;B+;C, window never cuts": (
        g.VALUES_DECLARATION,
        f"SELECT NEXT * FROM S WHERE A AS a ; B+ AS b ; C AS c WITHIN {NEVER} EVENTS",
        _a_then_bc,
        200,
    ),
    "LAST A;B+;C, window never cuts": (
        g.VALUES_DECLARATION,
        f"SELECT LAST * FROM S WHERE A AS a ; B+ AS b ; C AS c WITHIN {NEVER} EVENTS",
        _a_then_bc,
        200,
    ),
    "MAX A+;B (one maximal complex event of every A)": (
        g.VALUES_DECLARATION, "SELECT MAX * FROM S WHERE A+ AS a ; B AS b", _a_then_b, 50,
    ),
    "MAX A;B, window never cuts": (
        g.VALUES_DECLARATION, f"SELECT MAX * FROM S WHERE A AS a ; B AS b WITHIN {NEVER} EVENTS", _a_then_b, 200,
    ),
}

#: The same workloads on the compiled kernel, which chooses NEXT and LAST over its tECS (issue 40),
#: on a tail of 2,000 events: one call's fixed cost (about a millisecond) over 200 would hide
#: the per-event cost.
KERNEL = "(kernel)"
#: (NEXT / LAST on A ; B with a window has few candidates per start: the kernel enumerates and
#: compares them, which costs what the twin with ALL costs, and grows with the window.)
for _name in ("NEXT A;B+;C, window never cuts", "LAST A;B+;C, window never cuts"):
    WORKLOADS[f"{_name} {KERNEL}"] = (*WORKLOADS[_name][:3], 2_000)
for _name in ("MAX A+;B (one maximal complex event of every A)", "MAX A;B, window never cuts"):
    WORKLOADS[f"{_name} {KERNEL}"] = WORKLOADS[_name]
#: NEXT / LAST with a condition across events (ranked: the first candidate that passes; here
#: the best one does, so what must stay flat is the walk to it and the stop after it).
for _strategy in ("NEXT", "LAST"):
    WORKLOADS[f"{_strategy} A;B+;C FILTER c.id > a.id, window never cuts {KERNEL}"] = (
        g.VALUES_DECLARATION,
        f"SELECT {_strategy} * FROM S WHERE A AS a ; B+ AS b ; C AS c FILTER c.id > a.id WITHIN {NEVER} EVENTS",
        _a_then_bc,
        200,
    )
#: (The enumeration walked that chain down to its empty complex event at every trigger.)
WORKLOADS[f"B+ WITHIN 4 EVENTS, no partition {KERNEL}"] = (
    g.VALUES_DECLARATION, "SELECT * FROM S WHERE B+ AS b WITHIN 4 EVENTS", _buys, 2_000,
)
WORKLOADS[f"B+ FILTER b.v > PREV(b.v) WITHIN 4 EVENTS, no partition {KERNEL}"] = (
    g.VALUES_DECLARATION, "SELECT * FROM S WHERE B+ AS b FILTER b.v > PREV(b.v) WITHIN 4 EVENTS", _buys, 2_000,
)


def measure(declaration: str, text: str, make, n: int, tail: int, engine: str = "python") -> tuple[float, float, int, int]:
    """(CPU us, wall us) per tail event after a prefix of n events, the tail's matches and the
    positions they report."""
    query = ceql.compile(text, ceql.declare(declaration))
    table = make(n, tail)
    split = table.num_rows - tail
    evaluator = query.evaluator(engine=engine)
    evaluator.arrow(table.slice(0, split))
    gc.collect()
    cpu, wall = time.process_time(), time.perf_counter()
    result = evaluator.arrow(table.slice(split))
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    positions = sum(len(p) for p in result.column("positions").to_pylist())
    return cpu / tail * 1e6, wall / tail * 1e6, result.num_rows, positions


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="workloads whose name contains this text")
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)))
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    print("| workload | " + " | ".join(f"n={n:,}" for n in sizes) + " | last / first |")
    print("|---|" + "---|" * (len(sizes) + 1))
    for name, (declaration, text, make, tail) in WORKLOADS.items():
        if args.only not in name:
            continue
        cells, first, last = [], None, None
        for n in sizes:
            engine = "compiled" if name.endswith(KERNEL) else "python"
            cpu, wall, matches, positions = measure(declaration, text, make, n, tail, engine)
            per = f", {cpu * tail / positions:,.2f} us/pos" if positions else ""
            cells.append(f"{cpu:,.1f} ({wall:,.1f}) us, {matches / tail:.2f} CE/ev{per}")
            first = cpu if first is None else first
            last = cpu
        print(f"| {name} | " + " | ".join(cells) + f" | {last / first:.2f}x |", flush=True)


if __name__ == "__main__":
    main()
