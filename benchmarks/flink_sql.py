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
