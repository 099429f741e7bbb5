"""The same MATCH_RECOGNIZE SQL text on Flink (PyFlink 2.3, ``flink_sql_worker.py``) and on
ceql, row for row: the Flink side of tests/test_sql_flink.py.

Inputs are Arrow tables with a BIGINT millisecond column (``time``) that Flink turns into its
row time ``rt`` (``TO_TIMESTAMP_LTZ(time, 3)`` with a watermark); ceql gets the same table with
``rt`` as a timestamp column (milliseconds, UTC), so that the query text is the same. Times must
be strictly increasing in input order (Flink orders rows of equal time arbitrarily and drops
rows that arrive behind the watermark).
"""

from __future__ import annotations

import json
import math
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from benchmarks.flink_side import HERE, PYTHON, available  # noqa: F401 - re-exported

_FLINK_TYPES = {
    "int64": "BIGINT",
    "int32": "INT",
    "double": "DOUBLE",
    "string": "STRING",
    "large_string": "STRING",
    "bool": "BOOLEAN",
}


@dataclass
class Job:
    query: str
    table: pa.Table  # without rt
    time: str  # the BIGINT millisecond column
    name: str = "data"


def with_rowtime(table: pa.Table, time: str) -> pa.Table:
    """ceql's input: the table with ``rt`` (Flink's row time) as a timestamp column."""
    return table.append_column("rt", table.column(time).cast(pa.timestamp("ms", tz="UTC")))


def flink_type(arrow_type: pa.DataType) -> str:
    if pa.types.is_timestamp(arrow_type):
        return "TIMESTAMP_LTZ(3)"
    return _FLINK_TYPES[str(arrow_type)]


def run_flink(jobs: list[Job], outputs: list[pa.Schema], timeout: float = 1800) -> list[dict]:
    """Each job's rows on Flink (as dicts), or its error."""
    with tempfile.TemporaryDirectory(prefix="ceql-flink-sql-") as tmp:
        specs = []
        for i, (job, schema) in enumerate(zip(jobs, outputs)):
            rows = Path(tmp) / f"rows_{i}.json"
            rows.write_text("".join(json.dumps(r) + "\n" for r in job.table.to_pylist()))
            specs.append(
                {
                    "table": job.name,
                    "rows": str(rows),
                    "columns": ", ".join(f"`{f.name}` {flink_type(f.type)}" for f in job.table.schema),
                    "time": job.time,
                    "query": job.query,
                    "outputs": [(f.name, flink_type(f.type)) for f in schema],
                }
            )
        (Path(tmp) / "jobs.json").write_text(json.dumps(specs))
        subprocess.run(
            [str(PYTHON), str(HERE / "flink_sql_worker.py"), str(Path(tmp) / "jobs.json"), str(Path(tmp) / "out.json")],
            capture_output=True,
            text=True,
            cwd=tmp,
            timeout=timeout,
            check=True,
        )
        return json.loads((Path(tmp) / "out.json").read_text())


def canonical_rows(rows: list[dict], schema: pa.Schema) -> list[tuple]:
    """Rows as sorted tuples of comparable values (Flink writes no row order; doubles rounded to
    12 significant digits, timestamps as milliseconds)."""
    out = []
    for row in rows:
        values = []
        for field in schema:
            value = row.get(field.name)
            if isinstance(value, float):
                value = float(f"{value:.12g}") if math.isfinite(value) else value
            values.append(value)
        out.append(tuple(values))
    return sorted(out, key=repr)


def ceql_rows(table: pa.Table) -> list[dict]:
    rows = table.to_pylist()
    for row in rows:
        for key, value in row.items():
            if hasattr(value, "timestamp"):
                row[key] = int(value.timestamp() * 1000)
    return rows


# ---------------------------------------------------------------------------- the benchmark
#
#     .venv/bin/python -m benchmarks.flink_sql [--events N] [--no-flink] [--json FILE]
#
# The MATCH_RECOGNIZE queries of `python -m benchmarks flink` (flink_side.SQL), from the SQL text
# Flink runs, unchanged, through ceql.sql; beside their CEQL equivalent (flink_side.WORKLOADS)
# on the compiled kernel, and Flink itself, on the same 1M generated events; the rows of all three
# are checked equal.

SQL_GENERATOR = {"t": "keyed", "stock_time": "stocks"}


def flink_text(name: str) -> str:
    """The SELECT that flink_worker.py sends to Flink for workload ``name`` (without INSERT)."""
    from benchmarks.flink_side import SQL

    _, body, measures = SQL[name]
    selected = ", ".join(f"CAST(`{m}` AS BIGINT)" for m in measures)
    return f"SELECT {selected} FROM ev MATCH_RECOGNIZE ({body})"


def _clock(run, repeat: int) -> tuple[float, float, object]:
    """Best CPU seconds (and the wall seconds of that run) over ``repeat`` runs."""
    import time

    best = None
    for _ in range(repeat):
        cpu, wall = time.process_time(), time.perf_counter()
        result = run()
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        if best is None or cpu < best[0]:
            best = (cpu, wall, result)
    assert best is not None
    return best


def _ceql_canonical(name: str, result: pa.Table) -> list[tuple]:
    """The CEQL query's matches in the shape of the Flink measures (flink_side.canonical; with
    the match's measures when it takes them, as for a workload whose measures are values)."""
    import inspect

    from benchmarks.flink_side import canonical

    if len(inspect.signature(canonical).parameters) > 2:
        return sorted(canonical(name, tuple(row["positions"]), row) for row in result.to_pylist())
    return sorted(canonical(name, tuple(p)) for p in result.column("positions").to_pylist())


def measure(name: str, events: int, flink: bool, repeat: int = 3) -> dict:
    """One workload: ceql.sql on the Flink SQL text, its CEQL equivalent, and Flink."""
    import ceql
    from benchmarks import generators
    from benchmarks.flink_side import SQL, WORKLOADS
    from benchmarks.flink_side import run as run_flink_workload
    from benchmarks.workloads import DECLARATIONS

    time_column = SQL[name][0]
    generator = SQL_GENERATOR[time_column]
    table = getattr(generators, generator)(events=events)
    data = with_rowtime(table, time_column)
    text = flink_text(name)
    _, declaration, _, ceql_text = WORKLOADS[name]
    query = ceql.compile(ceql_text, ceql.declare(DECLARATIONS[declaration]))
    # JIT load from numba's cache, untimed (as in `python -m benchmarks`)
    ceql.sql(text, ev=data.slice(0, 2000))
    query.run(table.slice(0, 2000), output="arrow")
    sql_cpu, sql_wall, sql_result = _clock(lambda: ceql.sql(text, ev=data), repeat)
    ceql_cpu, ceql_wall, ceql_result = _clock(lambda: query.run(table, output="arrow"), repeat)
    sql_rows = sorted(tuple(row.values()) for row in sql_result.to_pylist())
    ceql_rows = _ceql_canonical(name, ceql_result) if "positions" in ceql_result.column_names else None
    out = {
        "workload": name,
        "events": events,
        "rows": len(sql_rows),
        "sql_cpu": sql_cpu,
        "sql_wall": sql_wall,
        "ceql_cpu": ceql_cpu,
        "ceql_wall": ceql_wall,
        "ceql_rows": ceql_result.num_rows,
        "same_as_ceql": ceql_rows == sql_rows if ceql_rows is not None else None,
        "text": text,
    }
    if flink and available():
        result = run_flink_workload(table, f"{generator}-events={events}", name, timeout=1800)
        if "error" in result:
            out["flink_error"] = result["error"]
        else:
            out["flink_seconds"] = result["seconds"]
            out["flink_startup"] = result["startup_seconds"]
            out["same_as_flink"] = sorted(result["matches"]) == sql_rows
    return out


def main(argv: list[str] | None = None) -> int:
    import argparse

    from benchmarks.flink_side import SQL

    parser = argparse.ArgumentParser(prog="python -m benchmarks.flink_sql", description=__doc__)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--no-flink", action="store_true")
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    rows = [measure(name, args.events, not args.no_flink) for name in SQL]
    print("| workload | events | rows | ceql.sql CPU s (wall) | CEQL kernel CPU s (wall) | SQL / CEQL | Flink s (start-up) | Flink / ceql.sql (wall) | same rows |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in rows:
        flink = f"{r['flink_seconds']:.1f} ({r['flink_startup']:.1f})" if "flink_seconds" in r else r.get("flink_error", "n/a")
        speedup = f"{r['flink_seconds'] / r['sql_wall']:.0f}x" if "flink_seconds" in r else ""
        same = "CEQL: " + str(r["same_as_ceql"]) + (f", Flink: {r['same_as_flink']}" if "same_as_flink" in r else "")
        print(
            f"| {r['workload']} | {r['events']:,} | {r['rows']:,} | {r['sql_cpu']:.3f} ({r['sql_wall']:.3f}) | "
            f"{r['ceql_cpu']:.3f} ({r['ceql_wall']:.3f}) | {r['sql_cpu'] / r['ceql_cpu']:.2f} | {flink} | {speedup} | {same} |"
        )
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
