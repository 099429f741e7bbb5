"""The benchmark runner's quick mode works (CI smoke run; figures are not asserted)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_quick_benchmarks_run(tmp_path) -> None:
    out = tmp_path / "results.json"
    result = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--quick", "--only", "stress", "--json", str(out)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    rows = json.loads(out.read_text())["rows"]
    assert {row["workload"] for row in rows} == {"stress"}
    for row in rows:
        n = row["events"]
        # The stress stream's last event fires every (A, B, C) triple before it: an exact count.
        assert row["complex_events"] > 0 and "| stress |" in result.stdout and n in (200, 1000)


def test_quick_benchmarks_cover_every_workload() -> None:
    sys.path.insert(0, str(ROOT))
    from benchmarks.__main__ import workloads

    assert {w["workload"] for w in workloads(quick=True)} == {
        "stocks",
        "smart_homes",
        "taxis",
        "synthetic",
        "stress",
    }
