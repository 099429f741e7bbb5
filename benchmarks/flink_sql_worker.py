"""Run SQL queries on a local Flink (PyFlink 2.3) and write their rows as JSON: the Flink side
of the MATCH_RECOGNIZE differential tests (``benchmarks/flink_sql.py``).

    benchmarks/.venv-flink/bin/python benchmarks/flink_sql_worker.py JOBS_JSON OUT_JSON

JOBS_JSON is a list of jobs, each: ``table`` (its name in FROM), ``rows`` (a JSON Lines file),
``columns`` (Flink column declarations), ``time`` (the BIGINT millisecond column that becomes
the row time ``rt``), ``query`` (the SQL text, reading ``rt``), ``outputs`` (result column names
and Flink types). The queries Flink's planner accepts run together, up to 100 per Flink job. OUT_JSON gets, per job,
either ``{"rows": [...]}`` (values as JSON) or ``{"error": "..."}`` (Flink's message: an
unsupported construct is reported, not fatal).
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

BATCH = 100


def main() -> None:
    jobs = json.loads(Path(sys.argv[1]).read_text())
    from pyflink.table import EnvironmentSettings, TableEnvironment

    env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    env.get_config().set("parallelism.default", "1")
    results: list[dict] = [{} for _ in jobs]
    work = Path(tempfile.mkdtemp(prefix="ceql-flink-sql-"))
    inserts = []
    started = time.perf_counter()
    for index, job in enumerate(jobs):
        source = f"src_{index}"
        sink = f"out_{index}"
        try:
            env.execute_sql(
                f"""CREATE TABLE {source} ({job["columns"]},
                    rt AS TO_TIMESTAMP_LTZ(`{job["time"]}`, 3),
                    WATERMARK FOR rt AS rt)
                WITH ('connector' = 'filesystem', 'path' = '{job["rows"]}', 'format' = 'json')"""
            )
            columns = ", ".join(f"`{name}` {kind}" for name, kind in job["outputs"])
            env.execute_sql(
                f"""CREATE TABLE {sink} ({columns})
                WITH ('connector' = 'filesystem', 'path' = '{work / sink}', 'format' = 'json')"""
            )
            query = job["query"].replace(f"FROM {job['table']} ", f"FROM {source} ", 1)
            insert = f"INSERT INTO {sink} {query}"
            env.explain_sql(insert)  # Flink's planner rejects what it does not support here
            inserts.append((index, insert))
        except Exception as exc:  # noqa: BLE001 - Flink's refusal is a result of the test
            results[index] = {"error": _cause(exc)}
    # One Flink job runs up to BATCH accepted queries (a job's start-up costs seconds; a job
    # with hundreds of pipelines times out in a small mini-cluster).
    done = []
    for first in range(0, len(inserts), BATCH):
        batch = inserts[first : first + BATCH]
        statements = env.create_statement_set()
        for _, insert in batch:
            statements.add_insert_sql(insert)
        try:
            statements.execute().wait()
            done.extend(batch)
        except Exception as exc:  # noqa: BLE001
            for index, _ in batch:
                results[index] = {"error": "the job failed: " + _cause(exc)}
    for index, _ in done:
        rows = []
        for part in sorted((work / f"out_{index}").rglob("*")):
            if part.is_file() and not part.name.startswith("."):
                rows.extend(json.loads(line) for line in part.read_text().splitlines() if line.strip())
        results[index] = {"rows": rows}
    for result in results:
        result["seconds"] = time.perf_counter() - started
    Path(sys.argv[2]).write_text(json.dumps(results))


def _cause(exc: Exception) -> str:
    lines = str(exc).strip().splitlines()
    causes = [line for line in lines if "Exception:" in line or "Error" in line] or lines or [repr(exc)]
    return causes[-1].strip()[:500]


if __name__ == "__main__":
    main()
