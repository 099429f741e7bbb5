"""Measure one benchmark row: ceql first (time, complex events, memory), then its competitors.

Input is generated and already in memory as Arrow before any clock starts; ceql runs as a user
runs it on Arrow input, ``query.run(table, output="arrow")``, and the clock stops when the Arrow
table of complex events is built (positions are read from it afterwards, when a competitor's
match set is compared). Peak memory is the growth of the process' peak RSS during ceql's run, so it
is meaningful when the row runs in a fresh process (the default).
"""

from __future__ import annotations

import os
import resource
import signal
import time
from collections import Counter
from typing import Any

import pyarrow as pa

from benchmarks import generators
from benchmarks.workloads import DECLARATIONS

_TABLES: dict[str, pa.Table] = {}


class Timeout(Exception):
    """ceql's part of a row ran past the time limit."""


def data_name(data: list) -> str:
    generator, kwargs = data
    return generator + "".join(f"-{k}={v}" for k, v in sorted(kwargs.items()))


def load(data: list) -> pa.Table:
    """The row's events (generated once per process)."""
    name = data_name(data)
    if name not in _TABLES:
        generator, kwargs = data
        _TABLES[name] = getattr(generators, generator)(**kwargs)
    return _TABLES[name]


def rss_mb() -> float:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _on_alarm(signum, frame):  # pragma: no cover - depends on timing
    raise Timeout


def _path(query, engine: str) -> str:
    """Which evaluator runs the query with ``output="arrow"``: the compiled kernel, or the
    Python path (with the kernel's reason when it does not support the plan)."""
    from ceql.runtime.kernel import unsupported

    if engine == "python":
        return "python (engine='python')"
    reason = unsupported(query.plan)
    return "kernel" if reason is None else f"python ({reason})"


def run_ceql(row: dict, timeout: float) -> dict[str, Any]:
    """Run ceql on the row the way a user does on Arrow input, ``query.run(table,
    output="arrow")`` (engine "auto" unless the row says otherwise); returns the measured fields
    (``error`` or ``timeout`` on failure)."""
    import ceql
    from ceql.errors import CeqlError

    schema = ceql.declare(DECLARATIONS[row["declaration"]])
    engine = row.get("engine", "auto")
    started = time.perf_counter()
    try:
        query = ceql.compile(row["text"], schema)
    except CeqlError as error:
        return {"error": str(error).splitlines()[0]}
    compile_seconds = time.perf_counter() - started
    table = load(row["data"])
    keep = bool(row["competitors"])
    path = _path(query, engine)
    out: dict[str, Any] = {"events": table.num_rows, "compile_seconds": compile_seconds, "path": path}
    if path == "kernel":
        # The first call in a process loads the JIT-compiled functions from numba's cache (or
        # compiles them): timed apart, on the row's first events (same types, same signatures).
        started = time.perf_counter()
        query.run(table.slice(0, min(2_000, table.num_rows // 4)), output="arrow", engine=engine)
        out["first_call_seconds"] = time.perf_counter() - started
    before, peak_before = rss_mb(), _peak_mb()
    evaluator = query.evaluator(engine=engine)
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    # Python code only: a call inside the kernel ends when the row's process is stopped.
    signal.setitimer(signal.ITIMER_REAL, timeout)
    started, cpu = time.perf_counter(), time.process_time()
    try:
        if row["mode"] == "stress":
            evaluator.arrow(table.slice(0, table.num_rows - 1))
            update = time.perf_counter() - started
            memory = rss_mb() - before
            started_last, cpu_last = time.perf_counter(), time.process_time()
            result = evaluator.arrow(table.slice(table.num_rows - 1))
            enumeration = time.perf_counter() - started_last
            out["ces_per_cpu_s"] = result.num_rows / (time.process_time() - cpu_last)
            out.update(
                update_seconds=update,
                enumeration_seconds=enumeration,
                memory_before_last_mb=memory,
                events_per_s=(table.num_rows - 1) / update,
                ces_per_s=result.num_rows / enumeration,
            )
        elif row["mode"] == "tail":
            split = row["split"]
            evaluator.arrow(table.slice(0, split))
            started, cpu = time.perf_counter(), time.process_time()
            result = evaluator.arrow(table.slice(split))
            out["tail_events"] = table.num_rows - split
        else:
            result = query.run(table, output="arrow", engine=engine)
        seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu
    except Timeout:
        return {"events": table.num_rows, "path": path, "timeout": timeout}
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    count = result.num_rows
    out.update(
        complex_events=count,
        seconds=seconds,
        cpu_seconds=cpu_seconds,
        peak_mb=max(0.0, _peak_mb() - peak_before),
    )
    out.setdefault("events_per_s", out.get("tail_events", table.num_rows) / seconds if seconds else None)
    if row["mode"] == "stress":
        out["seconds"] = out["update_seconds"] + out["enumeration_seconds"]
    if keep:
        out["_positions"] = [tuple(p) for p in result.column("positions").to_pylist()]
        names = query.plan.measures.names if query.plan.measures is not None else ()
        columns = {name: result.column(name).to_pylist() for name in names}
        out["_measures"] = [{name: column[i] for name, column in columns.items()} for i in range(count)]
        out["_per_trigger_max"] = max(Counter(result.column("trigger").to_pylist()).values(), default=0)
    return out


def run_competitor(row: dict, name: str, ours: dict, timeout: float) -> dict[str, Any]:
    """One competitor on the same events; ``same`` says whether the match sets are equal."""
    from benchmarks import corepp, duckdb_side, flink_side

    table = load(row["data"])
    kind, _, query = name.partition(":")
    if kind == "core":
        if not corepp.available():
            return {"skipped": "not installed (bash benchmarks/setup_core.sh)"}
        result = corepp.run(
            table, data_name(row["data"]), DECLARATIONS[row["declaration"]], row["text"], timeout
        )
    elif kind == "duckdb":
        if not duckdb_side.available():
            return {"skipped": "not installed (pip install -e '.[bench]')"}
        result = duckdb_side.run(table, query)
    elif kind == "flink":
        if not flink_side.available():
            return {"skipped": "not installed (bash benchmarks/setup_flink.sh)"}
        result = flink_side.run(table, data_name(row["data"]), query, timeout)
    else:
        raise ValueError(f"unknown competitor {name!r}")
    matches = result.pop("matches", None)
    if matches is not None and "_positions" in ours:
        if kind == "core":
            result["same"] = corepp.compare(
                ours["_positions"], matches, row["text"], ours["_per_trigger_max"]
            )
        elif kind == "flink":
            measures = ours.get("_measures") or [None] * len(ours["_positions"])
            result["same"] = compare(
                [flink_side.canonical(query, p, m) for p, m in zip(ours["_positions"], measures)], matches
            )
        else:
            result["same"] = compare(ours["_positions"], matches)
    elif matches is not None:
        result["same"] = "not checked (ceql did not finish)"
    return result


def compare(ours: list[tuple[int, ...]], theirs: list[tuple[int, ...]]) -> str:
    mine, other = Counter(ours), Counter(theirs)
    if mine == other:
        return "equal"
    return f"DIFFERENT: {sum((mine - other).values())} only in ceql, {sum((other - mine).values())} only in competitor"


def measure(row: dict, timeout: float, competitors: bool = True) -> dict[str, Any]:
    """The row's result: ceql's fields plus one entry per competitor."""
    result = {
        "family": row["family"],
        "workload": row["workload"],
        "query": row["query"],
        "note": row["note"],
    }
    for key in ("measures_of", "engine"):
        if row.get(key):
            result[key] = row[key]
    ours = run_ceql(row, timeout)
    result["competitors"] = {}
    if competitors:
        for name in row["competitors"]:
            try:
                result["competitors"][name] = run_competitor(row, name, ours, timeout)
            except Exception as error:  # a competitor's failure is reported, not fatal
                result["competitors"][name] = {"error": f"{type(error).__name__}: {error}"}
    result.update({k: v for k, v in ours.items() if not k.startswith("_")})
    return result
