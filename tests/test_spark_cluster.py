"""The Spark pipeline on a standalone cluster (a master and two workers on 127.0.0.1, started
and stopped by scripts/cluster.sh), not only in local mode: the same matches as the local
engine. Its own driver process: the shared local session of the other Spark tests stays out."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
STOCKS = ROOT / "examples" / "stocks"

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def _run(*args: str, env: dict | None = None, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)


def _matches(*files: Path) -> list[tuple]:
    rows = [json.loads(line) for path in files for line in path.read_text().splitlines()]
    return sorted((r["query"], r["trigger"], tuple(r["positions"])) for r in rows)


def test_the_pipeline_runs_on_a_standalone_cluster(tmp_path) -> None:
    events = tmp_path / "events.csv"
    events.write_text("".join((STOCKS / "events.csv").read_text().splitlines(keepends=True)[:1501]))
    env = dict(os.environ, CEQL_CLUSTER_DIR=str(tmp_path / "cluster"), CEQL_CLUSTER_PORT="7177")
    started = _run("bash", "scripts/cluster.sh", "start", env=env)
    try:
        assert started.returncode == 0, started.stderr[-2000:]
        master = started.stdout.strip().splitlines()[-1]
        assert master == "spark://127.0.0.1:7177"
        ceql = [sys.executable, "-m", "ceql", "run", "-d", str(STOCKS / "declaration.core")]
        for query in ("same_volume.ceql", "sell_then_buys.ceql"):
            ceql += ["-q", str(STOCKS / query)]
        ceql += ["-i", str(events), "-f", "jsonl"]
        on_cluster = _run(*ceql, "--engine", "spark", "--master", master, "-o", str(tmp_path / "cluster-out"))
        assert on_cluster.returncode == 0, on_cluster.stderr[-3000:]
        local = _run(*ceql, "-o", str(tmp_path / "local.jsonl"))
        assert local.returncode == 0, local.stderr[-2000:]
        expected = _matches(tmp_path / "local.jsonl")
        assert expected and _matches(*sorted((tmp_path / "cluster-out").glob("part-*.json*"))) == expected
        # The application really ran on the cluster's two workers (each keeps its executor's logs).
        apps = [p for p in (tmp_path / "cluster").glob("work*/app-*")]
        assert len({p.parent.name for p in apps}) == 2, apps
    finally:
        stopped = _run("bash", "scripts/cluster.sh", "stop", env=env)
        assert stopped.returncode == 0, stopped.stderr
