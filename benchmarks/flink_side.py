"""Flink SQL MATCH_RECOGNIZE (PyFlink, apache-flink 2.3.0) as a competitor.

PyFlink needs older pandas/pyarrow than ceql pins and its own py4j, so it lives in its own
environment (``bash benchmarks/setup_flink.sh`` creates ``benchmarks/.venv-flink``; Java 17 must
be installed) and runs in a subprocess (``flink_worker.py``): one Flink mini-cluster per
workload, reading the events from a CSV file and writing the matches to a CSV sink. The time is
end to end: Flink's start-up (the JVM and the table environment, reported apart) plus reading,
matching and writing.

MATCH_RECOGNIZE matches contiguous rows of a partition in time order and reports one row per
match, so the workloads are the patterns where that is exactly ceql's ``:`` per key
(``PARTITION BY [k]`` is CORE's sub-stream semantics): with ``AFTER MATCH SKIP TO NEXT ROW``
every match is found, and ``B+`` between two other types is deterministic. Row times are
strictly increasing (no ties to order).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv

HERE = Path(__file__).resolve().parent
PYTHON = HERE / ".venv-flink" / "bin" / "python"
DATA = HERE / ".data"

_TYPES = {pa.int64(): "BIGINT", pa.float64(): "DOUBLE", pa.string(): "STRING", pa.large_string(): "STRING"}

# name -> (workload, declaration key, generator, ceql query)
WORKLOADS = {
    "A : B : C per key": (
        "keyed",
        "keyed",
        "keyed",
        "SELECT * FROM S WHERE A : B : C PARTITION BY [k]",
    ),
    "stock rise per ticker, 20 s": (
        "stocks",
        "stocks",
        "stocks",
        "SELECT * FROM S WHERE (SELL AS s : BUY AS b1 : BUY AS b2) "
        "FILTER b1.price > s.price AND b2.price > b1.price PARTITION BY [name] WITHIN 20000 [stock_time]",
    ),
    "A : B:+ : C per key": (
        "keyed",
        "keyed",
        "keyed",
        "SELECT * FROM S WHERE A : B :+ : C PARTITION BY [k]",
    ),
    # Measures q1: the same pattern with measures over its events (both engines compute them).
    "measures q1: A : B:+ : C per key": (
        "keyed",
        "keyed",
        "keyed",
        "SELECT *, a.t AS a_ts, FIRST(b).t AS b_first, COUNT(b) AS nb, SUM(b.v) AS sb, MIN(b.v) AS mnb, "
        "MAX(b.v) AS mxb, AVG(b.v) AS avb, c.v - a.v AS d FROM S WHERE A AS a : B:+ AS b : C AS c PARTITION BY [k]",
    ),
}

# name -> (time column, MATCH_RECOGNIZE body, measures as output columns)
SQL = {
    "A : B : C per key": (
        "t",
        """PARTITION BY k ORDER BY rt
        MEASURES A.id AS p0, B.id AS p1, C.id AS p2
        ONE ROW PER MATCH AFTER MATCH SKIP TO NEXT ROW
        PATTERN (A B C)
        DEFINE A AS A.event_type = 'A', B AS B.event_type = 'B', C AS C.event_type = 'C'""",
        ["p0", "p1", "p2"],
    ),
    "stock rise per ticker, 20 s": (
        "stock_time",
        """PARTITION BY name ORDER BY rt
        MEASURES S.id AS p0, B1.id AS p1, B2.id AS p2
        ONE ROW PER MATCH AFTER MATCH SKIP TO NEXT ROW
        PATTERN (S B1 B2) WITHIN INTERVAL '20' SECOND
        DEFINE S AS S.event_type = 'SELL',
               B1 AS B1.event_type = 'BUY' AND B1.price > S.price,
               B2 AS B2.event_type = 'BUY' AND B2.price > B1.price""",
        ["p0", "p1", "p2"],
    ),
    "A : B:+ : C per key": (
        "t",
        """PARTITION BY k ORDER BY rt
        MEASURES A.id AS p0, FIRST(B.id) AS b0, LAST(B.id) AS b1, COUNT(B.id) AS bn, C.id AS p2
        ONE ROW PER MATCH AFTER MATCH SKIP TO NEXT ROW
        PATTERN (A B+ C)
        DEFINE A AS A.event_type = 'A', B AS B.event_type = 'B', C AS C.event_type = 'C'""",
        ["p0", "b0", "b1", "bn", "p2"],
    ),
    "measures q1: A : B:+ : C per key": (
        "t",
        """PARTITION BY k ORDER BY rt
        MEASURES A.id AS p0, FIRST(B.id) AS b0, LAST(B.id) AS b1, COUNT(B.id) AS bn, C.id AS p2,
                 A.t AS a_ts, FIRST(B.t) AS b_first, SUM(B.v) AS sb, MIN(B.v) AS mnb, MAX(B.v) AS mxb,
                 AVG(CAST(B.v AS DOUBLE)) * 1000 AS avb, C.v - A.v AS d
        ONE ROW PER MATCH AFTER MATCH SKIP TO NEXT ROW
        PATTERN (A B+ C)
        DEFINE A AS A.event_type = 'A', B AS B.event_type = 'B', C AS C.event_type = 'C'""",
        ["p0", "b0", "b1", "bn", "p2", "a_ts", "b_first", "sb", "mnb", "mxb", "avb", "d"],
    ),
}


def available() -> bool:
    return PYTHON.exists() and shutil.which("java") is not None


def canonical(name: str, positions: tuple[int, ...], measures: dict | None = None) -> tuple[int, ...]:
    """ceql's complex event (and its measures) in the shape of Flink's measures for workload
    ``name``."""
    if name.endswith("A : B:+ : C per key"):
        middle = positions[1:-1]
        out = (positions[0], middle[0], middle[-1], len(middle), positions[-1])
        if name.startswith("measures") and measures is not None:
            m = measures
            # Flink's row has BIGINT columns: the average times 1000, truncated.
            out += (m["a_ts"], m["b_first"], m["sb"], m["mnb"], m["mxb"], int(m["avb"] * 1000), m["d"])
        return out
    return tuple(positions)


def _csv(table: pa.Table, name: str) -> Path:
    DATA.mkdir(exist_ok=True)
    path = DATA / f"{name}.noheader.csv"
    if not path.exists():
        tmp = path.with_suffix(".tmp")
        pacsv.write_csv(table, tmp, pacsv.WriteOptions(include_header=False, quoting_style="none"))
        tmp.rename(path)
    return path


def run(table: pa.Table, data_name: str, name: str, timeout: float) -> dict:
    """Run workload ``name`` on Flink; seconds end to end, start-up, and the matches."""
    time_column, body, measures = SQL[name]
    columns = ", ".join(f"`{f.name}` {_TYPES[f.type]}" for f in table.schema)
    spec = {
        "events": str(_csv(table, data_name)),
        "columns": columns,
        "time": time_column,
        "body": body,
        "measures": measures,
    }
    with tempfile.TemporaryDirectory(prefix="ceql-flink-") as tmp:
        (Path(tmp) / "spec.json").write_text(json.dumps(spec))
        try:
            result = subprocess.run(
                [
                    str(PYTHON),
                    str(HERE / "flink_worker.py"),
                    str(Path(tmp) / "spec.json"),
                    str(Path(tmp) / "out"),
                ],
                capture_output=True,
                text=True,
                cwd=tmp,
                timeout=timeout,
            )
        except subprocess.TimeoutExpired:
            return {"error": f"timeout after {timeout:.0f} s"}
        if result.returncode != 0:
            lines = (result.stderr or result.stdout).strip().splitlines()
            causes = (
                [line for line in lines if "Exception:" in line] or lines or [f"exit {result.returncode}"]
            )
            return {"error": causes[-1].strip()[:300]}
        summary = json.loads(result.stdout.strip().splitlines()[-1])
        matches = []
        for part in sorted((Path(tmp) / "out").rglob("*")):
            if part.is_file() and not part.name.startswith("."):
                for line in part.read_text().splitlines():
                    if line:
                        matches.append(tuple(int(v) for v in line.split(",")))
    summary["matches"] = matches
    summary["complex_events"] = len(matches)
    return summary
