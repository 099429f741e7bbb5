"""Run one MATCH_RECOGNIZE workload on a local Flink and write the matches to CSV.

    benchmarks/.venv-flink/bin/python benchmarks/flink_worker.py SPEC_JSON OUT_DIR

Runs inside PyFlink's own environment (see flink_side.py). SPEC_JSON names the events' CSV
(no header, columns in the given order), the column list, the time column (milliseconds,
strictly increasing) and the MATCH_RECOGNIZE body. The last line of stdout is a JSON summary:
``startup_seconds`` (JVM and table environment), ``query_seconds`` (source, match, sink, until
the job finished) and ``seconds`` (their sum).
"""

from __future__ import annotations

import json
import sys
import time


def main() -> None:
    spec = json.loads(open(sys.argv[1]).read())
    out = sys.argv[2]
    started = time.perf_counter()
    from pyflink.table import EnvironmentSettings, TableEnvironment

    env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    env.get_config().set("parallelism.default", "2")
    startup = time.perf_counter() - started
    started = time.perf_counter()
    env.execute_sql(
        f"""CREATE TABLE ev ({spec["columns"]},
            rt AS TO_TIMESTAMP_LTZ(`{spec["time"]}`, 3),
            WATERMARK FOR rt AS rt)
        WITH ('connector' = 'filesystem', 'path' = '{spec["events"]}', 'format' = 'csv')"""
    )
    columns = ", ".join(f"`{m}` BIGINT" for m in spec["measures"])
    env.execute_sql(
        f"""CREATE TABLE found ({columns})
        WITH ('connector' = 'filesystem', 'path' = '{out}', 'format' = 'csv')"""
    )
    selected = ", ".join(f"CAST(`{m}` AS BIGINT)" for m in spec["measures"])
    env.execute_sql(f"INSERT INTO found SELECT {selected} FROM ev MATCH_RECOGNIZE ({spec['body']})").wait()
    query = time.perf_counter() - started
    print(json.dumps({"startup_seconds": startup, "query_seconds": query, "seconds": startup + query}))


if __name__ == "__main__":
    main()
