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


def test_memory_stays_flat_with_a_window_and_short_lived_keys() -> None:
    sys.path.insert(0, str(ROOT))
    from benchmarks.memory import run

    rows = run(1_200_000, report_every=200_000, out=lambda row: None)
    assert rows[-1]["matches"] > 0
    early, late = rows[1], rows[-1]
    # Live state is bounded by the window and the active keys, not by the stream.
    assert late["live_nodes"] <= 2 * early["live_nodes"] + 1000
    assert late["partitions"] <= 2 * early["partitions"] + 50


def test_stress_count_is_exact() -> None:
    sys.path.insert(0, str(ROOT))
    from benchmarks.generators import stress

    import ceql

    table = stress(300)
    kinds = table.column("event_type").to_pylist()
    a = ab = abc = 0
    for kind in kinds[:-1]:  # number of increasing (A, B, C) triples, by dynamic programming
        if kind == "A":
            a += 1
        elif kind == "B":
            ab += a
        elif kind == "C":
            abc += ab
    schema = ceql.declare(
        "CREATE STREAM S { EVENT A { id:int }, EVENT B { id:int }, EVENT C { id:int }, "
        "EVENT D { id:int }, EVENT E { id:int } }"
    )
    query = ceql.compile("SELECT * FROM S WHERE A; B; C; D", schema)
    matches = list(query.run(table))
    assert len(matches) == abc and {m.trigger for m in matches} == {299}
