"""Match objects against the Arrow output, side by side in one process, CPU time.

``python -m benchmarks.matches [--quick] [--only TEXT] [--reps N]``

For CORE's queries and the synthetic workloads (benchmarks/workloads.py), each on its generated
data in memory as Arrow, and a keyed workload with labels and partitions on both engine paths
(family ``output``): ``query.run(table, output="arrow")``, ``for m in query.run(table)`` (the
default API: Match objects, iterated), and the same reading every match's positions. The three
alternate ``--reps`` times; the best CPU time of each is reported (wall time in brackets), with
the ratio of Match objects to Arrow.
"""

from __future__ import annotations

import argparse
import time

from benchmarks.measure import load
from benchmarks.workloads import DECLARATIONS, rows_of

CLOCK = time.process_time


def _arrow(query, table, engine: str) -> int:
    return query.run(table, output="arrow", engine=engine).num_rows


def _matches(query, table, engine: str) -> int:
    count = 0
    for _ in query.run(table, engine=engine):
        count += 1
    return count


def _positions(query, table, engine: str) -> int:
    count = 0
    for match in query.run(table, engine=engine):
        count += len(match.positions)
    return count


MODES = {"arrow": _arrow, "matches": _matches, "matches+positions": _positions}


def measure(row: dict, reps: int) -> dict:
    """Best CPU (and wall) seconds of each mode on one row."""
    import ceql
    from ceql.runtime.kernel import unsupported

    declaration = row.get("declaration_text") or DECLARATIONS[row["declaration"]]
    query = ceql.compile(row["text"], ceql.declare(declaration))
    table = row["table"] if "table" in row else load(row["data"])
    engine = row.get("engine", "auto")
    query.run(table.slice(0, min(2_000, table.num_rows)), output="arrow", engine=engine)  # JIT load
    best: dict[str, tuple[float, float, int]] = {}
    for _ in range(reps):
        for mode, run in MODES.items():
            started, cpu = time.perf_counter(), CLOCK()
            count = run(query, table, engine)
            taken = (CLOCK() - cpu, time.perf_counter() - started, count)
            if mode not in best or taken[0] < best[mode][0]:
                best[mode] = taken
    reason = unsupported(query.plan) if engine != "python" else "engine='python'"
    return {
        "workload": row["workload"],
        "query": row["query"],
        "path": "kernel" if reason is None else f"python ({reason})",
        "events": table.num_rows,
        "count": best["arrow"][2],
        **{mode: best[mode][:2] for mode in MODES},
    }


def output_family(quick: bool) -> list[dict]:
    """A keyed workload with AS labels and a reported partition (what Match objects carry the
    most of), on the kernel and on the Python path."""
    from benchmarks.kernel import KEYED_DECLARATION, contiguous_keyed

    text = "SELECT * FROM S WHERE A AS a; B AS b PARTITION BY [k] WITHIN 100 EVENTS"
    size = 20_000 if quick else 200_000
    keyed = contiguous_keyed(size, keys=20)
    common = {"declaration_text": KEYED_DECLARATION, "text": text, "mode": "run"}
    return [
        {**common, "workload": "keyed", "query": "a; b by k (kernel)", "table": keyed, "engine": "compiled"},
        {
            **common,
            "workload": "keyed",
            "query": "a; b by k (python)",
            "table": keyed.slice(0, size // 5),
            "engine": "python",
        },
    ]


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.matches", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes")
    parser.add_argument("--only", help="rows whose workload or query contains this text")
    parser.add_argument("--reps", type=int, default=3, help="alternations of the three modes (default 3)")
    parser.add_argument(
        "--families", default="output,core,synthetic", help="families (default output,core,synthetic)"
    )
    args = parser.parse_args()
    families = args.families.split(",")
    rows = [r for r in rows_of([f for f in families if f != "output"], args.quick) if r.get("mode") == "run"]
    if "output" in families:
        rows += output_family(args.quick)
    if args.only:
        rows = [r for r in rows if args.only in r["workload"] or args.only in r["query"]]
    print("| workload | query | path | events | matches | Arrow CPU s | Match CPU s | ratio | Match+positions CPU s | ratio |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        r = measure(row, args.reps)
        arrow, matches, positions = r["arrow"], r["matches"], r["matches+positions"]
        print(
            f"| {r['workload']} | {r['query']} | {r['path']} | {r['events']:,} | {r['count']:,} "
            f"| {arrow[0]:.3f} ({arrow[1]:.3f}) | {matches[0]:.3f} ({matches[1]:.3f}) "
            f"| {matches[0] / arrow[0]:.2f} | {positions[0]:.3f} ({positions[1]:.3f}) "
            f"| {positions[0] / arrow[0]:.2f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
