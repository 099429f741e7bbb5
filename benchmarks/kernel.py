"""The compiled kernel side by side with the Python evaluator (and DuckDB where it applies).

``python -m benchmarks.kernel [--quick] [--only NAME] [--profile]``

Input is generated (seeded) and in memory as Arrow. The kernel's output is an Arrow table
(``PlanKernel.arrow``); the Python evaluator's is Match objects, counted. Each row checks that
both give the same number of matches (and DuckDB the same match set). JIT compile time is
measured in fresh processes: once with an empty numba cache, once with the cache filled.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa

from benchmarks import generators as g

#: CPU time of this process (all threads): on a shared machine, wall time mostly measures the
#: other processes; the engine is single-threaded, so on an idle core CPU time is its wall time.
CLOCK = time.process_time


def contiguous_keyed(events: int, keys: int = 1000, seed: int = 6) -> pa.Table:
    """A/B/C/D events uniformly, each with one of ``keys`` partition keys ``k``."""
    rng = np.random.default_rng(seed)
    return pa.table(
        {
            "event_type": pa.array(np.array(["A", "B", "C", "D"])[rng.integers(0, 4, size=events)]),
            "id": pa.array(np.arange(events)),
            "k": pa.array(rng.integers(0, keys, size=events)),
        }
    )


KEYED_DECLARATION = "CREATE STREAM S { " + ", ".join(f"EVENT {t} {{ id:int, k:int }}" for t in "ABCD") + " }"
CONTIGUOUS_DUCKDB = """
SELECT id AS trigger, id2, id1, id, k FROM (
  SELECT id, k, event_type,
         lag(event_type, 1) OVER w AS t1, lag(event_type, 2) OVER w AS t2,
         lag(id, 1) OVER w AS id1, lag(id, 2) OVER w AS id2
  FROM events WINDOW w AS (PARTITION BY k ORDER BY id))
WHERE event_type = 'C' AND t1 = 'B' AND t2 = 'A'
"""


def workloads(quick: bool) -> list[dict]:
    size = 100_000 if quick else 1_000_000
    synthetic = g.synthetic_declaration(g.synthetic_types(9) + ["ZZ"])
    items = [
        {
            "name": "sequence",
            "text": "SELECT ALL * FROM S WHERE (AA; AB; AC) WITHIN 100 EVENTS CONSUME BY ANY",
            "declaration": synthetic,
            "data": ("uniform", size),
        },
        {
            "name": "kleene",
            "text": "SELECT ALL * FROM S WHERE (AA; AB+; AC) WITHIN 100 EVENTS CONSUME BY ANY",
            "declaration": synthetic,
            "data": ("uniform", size),
        },
        {
            "name": "sequence-5",
            "text": "SELECT ALL * FROM S WHERE (AA; AB; AC; AD; AE) WITHIN 100 EVENTS CONSUME BY ANY",
            "declaration": synthetic,
            "data": ("uniform", size),
        },
        {
            "name": "contiguous A:B:C by k",
            "text": "SELECT * FROM S WHERE A : B : C PARTITION BY [k]",
            "declaration": KEYED_DECLARATION,
            "data": ("keyed", size),
            "duckdb": CONTIGUOUS_DUCKDB,
        },
        {
            "name": "stress Q2 n=2000",
            "text": "SELECT * FROM S WHERE A; B; C; D",
            "declaration": "CREATE STREAM S { "
            + ", ".join(f"EVENT {t} {{ id:int }}" for t in "ABCDE")
            + " }",
            "data": ("stress", 2000),
            "stress": True,
        },
    ]
    for dataset, declaration, events in [
        ("stocks", g.STOCK_DECLARATION, 224_473),
        ("smart_homes", g.HOMES_DECLARATION, 1_000_000),
        ("taxis", g.TAXI_DECLARATION, 585_762),
    ]:
        folder = os.path.join(os.path.dirname(__file__), "queries", dataset)
        names = sorted(os.listdir(folder), key=lambda n: (len(n), n))
        if quick:
            names = names[:2]
        for name in names:
            with open(os.path.join(folder, name)) as handle:
                text = handle.read()
            items.append(
                {
                    "name": f"{dataset} {name.removesuffix('.txt').replace('_none', '')}",
                    "text": text,
                    "declaration": declaration,
                    "data": (dataset, events if not quick else events // 10),
                }
            )
    return items


def _data(kind: str, size: int) -> pa.Table:
    if kind == "uniform":
        return g.uniform(size, g.synthetic_types(9))
    if kind == "keyed":
        return contiguous_keyed(size)
    if kind == "stress":
        return g.stress(size)
    return {"stocks": g.stocks, "smart_homes": g.smart_homes, "taxis": g.taxis}[kind](size)


def timed(function, *args):
    """(result, wall seconds, CPU seconds of this process)."""
    wall, cpu = time.perf_counter(), CLOCK()
    result = function(*args)
    return result, time.perf_counter() - wall, CLOCK() - cpu


def run_one(item: dict, profile: bool) -> dict:
    import ceql
    from ceql.runtime.kernel import PlanKernel, unsupported

    schema = ceql.declare(item["declaration"])
    table = _data(*item["data"])
    row: dict = {"name": item["name"], "events": table.num_rows}
    query = ceql.compile(item["text"], schema)
    reason = unsupported(query.plan)
    if reason:
        row["kernel"] = f"unsupported: {reason}"
        return row
    PlanKernel(query.plan).arrow(table.slice(0, 100))  # load the compiled functions
    if item.get("stress"):
        runner = PlanKernel(query.plan)
        head, last = table.slice(0, table.num_rows - 1), table.slice(table.num_rows - 1)
        _, _, update = timed(runner.arrow, head)
        result, wall, enumeration = timed(runner.arrow, last)
        row.update(kernel_cpu=update + enumeration, kernel_wall=None, kernel_update=update)
        row.update(kernel_enumeration=enumeration, complex_events=result.num_rows)
        row["kernel_ces_per_s"] = result.num_rows / enumeration
        evaluator = ceql.compile(item["text"], schema).evaluator()
        _, _, python_update = timed(lambda t: list(evaluator.process(t)), head)
        count, _, python_enumeration = timed(lambda t: sum(1 for _ in evaluator.process(t)), last)
        row["python_cpu"] = python_update + python_enumeration
        row["python_ces_per_s"] = count / python_enumeration
        row["same_count"] = count == result.num_rows
        return row
    result, row["kernel_wall"], row["kernel_cpu"] = timed(PlanKernel(query.plan).arrow, table)
    row["complex_events"] = result.num_rows
    python = ceql.compile(item["text"], schema)
    count, row["python_wall"], row["python_cpu"] = timed(lambda t: sum(1 for _ in python.run(t)), table)
    row["same_count"] = count == result.num_rows
    if "duckdb" in item:
        import duckdb

        connection = duckdb.connect()
        connection.register("events", table)
        duck, row["duckdb_wall"], row["duckdb_cpu"] = timed(
            lambda q: connection.execute(q).to_arrow_table(), item["duckdb"]
        )
        connection.execute("SET threads = 1")
        _, row["duckdb_1thread_wall"], row["duckdb_1thread_cpu"] = timed(
            lambda q: connection.execute(q).to_arrow_table(), item["duckdb"]
        )
        ours = sorted(
            zip(result.column("trigger").to_pylist(), map(tuple, result.column("positions").to_pylist()))
        )
        theirs = sorted(
            zip(
                duck.column("trigger").to_pylist(),
                zip(*(duck.column(c).to_pylist() for c in ("id2", "id1", "id"))),
            )
        )
        row["same_as_duckdb"] = ours == theirs
    if profile:
        row["profile"] = profile_kernel(query.plan, table)
    return row


def profile_kernel(plan, table: pa.Table) -> dict:
    """Where the kernel path spends its time on one table (seconds per phase)."""
    from ceql.runtime.arrow import record_batch
    from ceql.runtime.batches import builder_for, iter_tables
    from ceql.runtime.kernel import PlanKernel

    runner = PlanKernel(plan)
    schema = runner.output_schema()
    phases = dict.fromkeys(["normalise", "symbols", "measures", "keys", "kernel", "arrow"], 0.0)
    clock = CLOCK()
    for batch in iter_tables(table, builder_for(plan)):
        now = CLOCK()
        phases["normalise"] += now - clock
        types, symbols = runner._symbols(batch)
        clock, now = now, CLOCK()
        phases["symbols"] += now - clock
        measures = runner._measures(batch, types, runner.position)
        if plan.ordered_time:
            runner._check_order(types, measures, runner.position)
        clock, now = now, CLOCK()
        phases["measures"] += now - clock
        relevant = np.nonzero(~runner._irrelevant[symbols])[0]
        codes = runner.keys.encode(batch, relevant, types) if runner.keys is not None else None
        clock, now = now, CLOCK()
        phases["keys"] += now - clock
        chunks = list(
            runner.kernel.process_chunks(
                symbols[relevant], relevant + runner.position, measures[relevant], codes
            )
        )
        runner.position += batch.num_rows
        clock, now = now, CLOCK()
        phases["kernel"] += now - clock
        for chunk in chunks:
            record_batch(schema, runner.columns(chunk))
        clock, now = now, CLOCK()
        phases["arrow"] += now - clock
        clock = CLOCK()
    return {k: round(v, 4) for k, v in phases.items()}


#: Issue 25's targets: the same pattern without and with measures, and with a condition across
#: events (1M events of Flink's ``a b+ c`` per key workload), and equality correlation.
PATTERN = "A AS a : B:+ AS b : C AS c PARTITION BY [k]"
TARGETS = {
    "pattern": f"SELECT * FROM S WHERE {PATTERN}",
    "measures": "SELECT *, a.t AS a_ts, FIRST(b).t AS b_first, COUNT(b) AS nb, SUM(b.v) AS sb, MIN(b.v) AS mnb, "
    f"MAX(b.v) AS mxb, AVG(b.v) AS avb, c.v - a.v AS d FROM S WHERE {PATTERN}",
    "condition": "SELECT * FROM S WHERE (A AS a : B:+ AS b : C AS c) FILTER c.v > a.v PARTITION BY [k]",
}
#: Targets also run through the default API (Match objects), against their Arrow output.
MATCH_OBJECTS = ("pattern", "measures")
CORRELATION = "SELECT * FROM S WHERE (T AS x ; R AS y) FILTER x.id = y.tweet WITHIN 20000 EVENTS"


def _best(function, repeats: int) -> tuple[object, float, float]:
    """(result, least CPU seconds, least wall seconds) over ``repeats`` calls."""
    best_cpu = best_wall = float("inf")
    result = None
    for _ in range(repeats):
        result, wall, cpu = timed(function)
        best_cpu, best_wall = min(best_cpu, cpu), min(best_wall, wall)
    return result, best_cpu, best_wall


def targets(events: int = 1_000_000, repeats: int = 5) -> list[dict]:
    """Issue 25's ratios, measured side by side in this process (least of ``repeats`` runs)."""
    import ceql
    from benchmarks.duckdb_side import correlation_sql

    rows = []
    schema = ceql.declare(g.KEYED_DECLARATION)
    table = g.keyed(events)
    queries = {name: ceql.compile(text, schema) for name, text in TARGETS.items()}
    for query in queries.values():
        query.run(table.slice(0, 2_000), output="arrow")  # load the compiled functions
    results: dict[str, list] = {name: [] for name in queries}
    results.update({f"{name}, Match objects": [] for name in MATCH_OBJECTS})
    for _ in range(repeats):  # interleaved, so that load on the machine hits all alike
        for name, query in queries.items():
            out, wall, cpu = timed(lambda q=query: q.run(table, output="arrow"))
            results[name].append((cpu, wall, out.num_rows))
            if name in MATCH_OBJECTS:  # the default API: Match objects, each one's positions read
                found, wall, cpu = timed(lambda q=query: sum(len(m.positions) > 0 for m in q.run(table)))
                results[f"{name}, Match objects"].append((cpu, wall, found))
    base = min(r[0] for r in results["pattern"])
    for name, runs in results.items():
        cpu, wall = min(r[0] for r in runs), min(r[1] for r in runs)
        row = {"target": name, "events": events, "matches": runs[0][2], "cpu": cpu, "wall": wall, "ratio": cpu / base}
        if name.endswith(", Match objects"):
            arrow = name[: -len(", Match objects")]
            row["arrow_ratio"] = cpu / min(r[0] for r in results[arrow])
        rows.append(row)
    import duckdb

    tweets_schema = ceql.declare(g.TWEETS_DECLARATION)
    query = ceql.compile(CORRELATION, tweets_schema)
    for size in (200_000, 2_000_000):
        tweets = g.tweets(size)
        query.run(tweets.slice(0, 2_000), output="arrow")
        connection = duckdb.connect()
        connection.execute("SET threads = 1")
        connection.register("ev", tweets)
        sql = correlation_sql(20_000)
        tries = max(2, repeats // (size // 200_000))
        ours, cpu, wall = _best(lambda t=tweets: query.run(t, output="arrow"), tries)
        theirs, duck_cpu, duck_wall = _best(lambda c=connection, q=sql: c.execute(q).fetchnumpy(), tries)
        rows.append(
            {
                "target": f"correlation {size:,}",
                "events": size,
                "matches": ours.num_rows,
                "cpu": cpu,
                "wall": wall,
                "duckdb_1thread_cpu": duck_cpu,
                "duckdb_1thread_wall": duck_wall,
                "same_count": ours.num_rows == len(theirs["p0"]),
                "ratio": duck_cpu / cpu,
            }
        )
    return rows


def first_query() -> dict:
    """The first query after install: ``A : B : C PARTITION BY [k]`` on 10,000 events in a
    fresh process with an empty numba cache (benchmarks/jit.py), import included."""
    from benchmarks import jit

    spec = {"declaration": "keyed", "generator": "keyed", "text": jit.QUERIES[1][3], "events": 10_000, "engine": "auto"}
    with tempfile.TemporaryDirectory(prefix="ceql-numba-") as cache:
        wall, cpu = jit._run(spec, cache, background=True)
    return {"target": "JIT: first query, 10k events", "events": 10_000, "matches": None, "cpu": cpu, "wall": wall,
            "first_query_wall": wall}


def compile_times() -> dict:
    """Seconds for a first call with an empty numba cache, then with the cache filled."""
    code = (
        "import time; t = time.process_time(); import ceql; from ceql.runtime.kernel import PlanKernel; "
        "s = ceql.declare('CREATE STREAM S { EVENT A { v:int }, EVENT B { v:int } }'); "
        "q = ceql.compile('SELECT * WHERE A; B+ WITHIN 3 EVENTS', s); "
        "i = time.process_time(); PlanKernel(q.plan).arrow([{'event_type': 'A'}, {'event_type': 'B'}]); "
        "r = PlanKernel(q.plan); r.kernel.compact(); "
        "q2 = ceql.compile('SELECT NONE WHERE A; B', s); PlanKernel(q2.plan).arrow([{'event_type': 'A'}, {'event_type': 'B'}]*2); "
        "print(time.process_time() - i)"
    )
    out = {}
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache)
        for label in ("cold", "cached"):
            done = subprocess.run(
                [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
            )
            out[label] = round(float(done.stdout.strip().splitlines()[-1]), 2)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.kernel", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", help="run only workloads whose name contains this")
    parser.add_argument("--profile", action="store_true", help="time the kernel path's phases")
    parser.add_argument("--json", metavar="FILE")
    parser.add_argument("--targets", action="store_true", help="issue 25's ratios only (side by side)")
    args = parser.parse_args()
    if args.targets:
        rows = targets(100_000 if args.quick else 1_000_000)
        rows.append(first_query())
        print(f"load average: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; least of 5 runs, interleaved")
        print("| target | events | matches | CPU s | wall s | ratio |")
        print("|---|---:|---:|---:|---:|---|")
        for row in rows:
            if "duckdb_1thread_cpu" in row:
                ratio = (
                    f"DuckDB 1 thread {row['duckdb_1thread_cpu']:.3f} CPU s ({row['duckdb_1thread_wall']:.3f} wall): "
                    f"ceql {row['ratio']:.2f}x DuckDB's speed{'' if row['same_count'] else ' (COUNTS DIFFER)'}"
                )
            elif "arrow_ratio" in row:
                ratio = f"{row['arrow_ratio']:.2f}x its Arrow output's CPU time"
            elif "first_query_wall" in row:
                ratio = "first query after install (empty numba cache, import included), wall s"
            else:
                ratio = f"{row['ratio']:.2f}x the pattern's CPU time"
            print(
                f"| {row['target']} | {row['events']:,} | {'-' if row['matches'] is None else format(row['matches'], ',')} | {row['cpu']:.3f} | {row['wall']:.3f} | {ratio} |"
            )
        if args.json:
            with open(args.json, "w") as handle:
                json.dump(rows, handle, indent=1)
        return
    rows = []
    if not args.only:
        times = compile_times()
        print(
            f"JIT compile (first call, empty cache): {times['cold']} s; with the cache: {times['cached']} s"
        )
    for item in workloads(args.quick):
        if args.only and args.only not in item["name"]:
            continue
        row = run_one(item, args.profile)
        rows.append(row)
        print(json.dumps(row), file=sys.stderr)
    print(f"load average: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; times are CPU seconds")
    print(
        "| workload | events | complex events | kernel s | events/s (kernel) | Python s | speed-up | same |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    for row in rows:
        if "kernel_cpu" not in row:
            print(f"| {row['name']} | {row['events']:,} | | {row.get('kernel')} |||||")
            continue
        same = row["same_count"] and row.get("same_as_duckdb", True)
        print(
            f"| {row['name']} | {row['events']:,} | {row['complex_events']:,} | {row['kernel_cpu']:.3f} | "
            f"{row['events'] / row['kernel_cpu']:,.0f} | {row['python_cpu']:.3f} | "
            f"{row['python_cpu'] / row['kernel_cpu']:.1f}x | {'yes' if same else 'NO'} |"
        )
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(rows, handle, indent=1)


if __name__ == "__main__":
    main()
