"""``ceql sql`` and ``ceql check --sql``: named inputs (CSV, JSON Lines, Parquet), the output
formats, the plan, and errors as one line with exit status 2."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq
import pytest

from ceql.cli import main

QUERY = (
    "SELECT * FROM r MATCH_RECOGNIZE (PARTITION BY k ORDER BY t MEASURES A.v AS low, B.v AS high, "
    "B.at AS at PATTERN (A B) DEFINE B AS B.v > A.v)"
)


@pytest.fixture
def readings(tmp_path: Path) -> pa.Table:
    table = pa.table(
        {
            "k": [1, 1, 1, 2, 2],
            "t": [1, 2, 3, 1, 2],
            "v": [5, 3, 8, 4, 9],
            "at": pa.array([0, 1, 2, 3, 4], pa.timestamp("us", tz="Europe/Paris")),
        }
    )
    pcsv.write_csv(table, tmp_path / "readings.csv")
    pq.write_table(table, tmp_path / "readings.parquet")
    (tmp_path / "readings.jsonl").write_text(
        "".join(json.dumps({**r, "at": r["at"].isoformat()}) + "\n" for r in table.to_pylist())
    )
    return table


@pytest.mark.parametrize("suffix", ["csv", "parquet", "jsonl"])
def test_sql_reads_each_format(tmp_path: Path, readings, capsys, suffix: str) -> None:
    query = QUERY if suffix != "jsonl" else QUERY.replace(", B.at AS at", "")
    assert main(["sql", query, "--input", f"r={tmp_path / f'readings.{suffix}'}"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(r["k"], r["low"], r["high"]) for r in rows] == [(1, 3, 8), (2, 4, 9)]


def test_sql_writes_parquet_keeping_types(tmp_path: Path, readings) -> None:
    out = tmp_path / "out.parquet"
    assert main(["sql", QUERY, "--input", str(tmp_path / "readings.parquet"), "--output", str(out)]) == 0
    table = pq.read_table(out)
    assert table.schema.field("at").type == pa.timestamp("us", tz="Europe/Paris")
    assert table.column("high").to_pylist() == [8, 9]


def test_sql_query_from_a_file_and_csv_output(tmp_path: Path, readings, capsys) -> None:
    (tmp_path / "q.sql").write_text(QUERY)
    assert main(["sql", str(tmp_path / "q.sql"), "-i", f"r={tmp_path / 'readings.parquet'}", "--format", "csv"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == '"k","low","high","at"'


def test_check_sql_and_explain_show_the_plan(tmp_path: Path, readings, capsys) -> None:
    assert main(["check", "--sql", QUERY, "--input", f"r={tmp_path / 'readings.csv'}"]) == 0
    plan = capsys.readouterr().out
    assert "CEQL equivalent" in plan and "row masks" in plan and "MATCH 0" in plan
    assert main(["sql", QUERY, "--input", f"r={tmp_path / 'readings.csv'}", "--explain"]) == 0
    assert capsys.readouterr().out == plan


def test_errors_are_one_message_and_exit_2(tmp_path: Path, readings, capsys) -> None:
    bad = QUERY.replace("B.v > A.v", "B.nope > A.v")
    assert main(["sql", bad, "--input", f"r={tmp_path / 'readings.csv'}"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ceql sql: error: in query <query text>: line 1, column") and "no such column: nope" in err
    assert main(["sql", QUERY, "--input", f"r={tmp_path / 'missing.csv'}"]) == 2
    assert "input not found" in capsys.readouterr().err
    assert main(["sql", QUERY]) == 2
    assert "give the input table r" in capsys.readouterr().err
    assert main(["check", "--query", "x"]) == 2  # a CEQL check still needs its declaration
    assert "needs --declaration" in capsys.readouterr().err


def test_json_lines_follow_the_output_contract(tmp_path: Path, readings, capsys) -> None:
    """Timestamps as ISO-8601 text in their zone, integers exact (docs/guide.md, "Output")."""
    table = pa.table({"t": [1, 2], "v": [2**62, 2**62 + 1], "at": pa.array([0, 10**9], pa.timestamp("us", tz="UTC"))})
    pq.write_table(table, tmp_path / "big.parquet")
    query = "SELECT * FROM r MATCH_RECOGNIZE (ORDER BY t MEASURES LAST(v) AS v, LAST(at) AS at PATTERN (A B))"
    assert main(["sql", query, "--input", f"r={tmp_path / 'big.parquet'}"]) == 0
    assert json.loads(capsys.readouterr().out) == {"v": 2**62 + 1, "at": "1970-01-01T00:16:40Z"}


def test_sql_runs_the_query_around_match_recognize(tmp_path: Path, readings, capsys) -> None:
    query = QUERY + " ORDER BY 2 DESC"
    assert main(["sql", query, "--input", str(tmp_path / "readings.csv")]) == 0  # an unnamed input: the table named
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert rows and rows == sorted(rows, key=lambda r: list(r.values())[1], reverse=True)
