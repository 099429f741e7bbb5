"""``benchmarks/device_scaling.sh`` (issue 33's 16-core table in one device call) runs here on a
small input with 1 and 2 workers and writes its tables to $OUT."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_the_device_script_writes_the_scaling_table(tmp_path) -> None:
    env = dict(os.environ, PYTHON=sys.executable, EVENTS="120000", COUNTS="1,2", WORKERS="2", REPEAT="1", OUT=str(tmp_path))
    done = subprocess.run(
        ["bash", str(ROOT / "benchmarks" / "device_scaling.sh")], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    versions = (tmp_path / "versions.txt").read_text()
    assert "numba" in versions and "pyarrow" in versions
    table = (tmp_path / "scaling.txt").read_text()
    assert "scaling, 120,000 events" in table
    for workload in ("keys", "shards", "strings", "measures", "cross", "absence"):
        assert f"\n{workload} " in table, workload
    duckdb = subprocess.run([sys.executable, "-c", "import duckdb"], capture_output=True).returncode == 0
    assert ("duckdb" in table) == duckdb
