"""ceql installs and runs on every supported Python (slow: a fresh virtual environment each).

The wheel is built once from this checkout; each interpreter gets a new venv, installs the wheel
with constraints.txt (the pins CI uses), and then imports ceql, runs a query, runs the ``ceql``
command, and finds ``py.typed``. The core install must not bring in Spark.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SUPPORTED = ["3.10", "3.11", "3.12", "3.13"]

SMOKE = """
import importlib.util, pathlib, ceql
schema = ceql.declare("CREATE STREAM S { EVENT A { v:int }, EVENT B { v:int } }")
query = ceql.compile("SELECT * FROM S WHERE A AS a ; B AS b FILTER a[v > 0]", schema)
events = [{"event_type": "A", "v": 1}, {"event_type": "A", "v": 0}, {"event_type": "B", "v": 2}]
print([m.positions for m in query.run(events)])
print((pathlib.Path(ceql.__file__).parent / "py.typed").is_file())
print(importlib.util.find_spec("pyspark") is None)
try:
    import ceql.spark
except ImportError as error:
    print(error)
"""


# The first query after installing: 10,000 events to an Arrow table, import included. The
# kernel's machine code is not compiled yet, so the input runs on the Python path and the kernel
# compiles in a background process (ceql.runtime.kernel.warm).
FIRST_QUERY = """
import json, time
wall, cpu = time.perf_counter(), time.process_time()
import pyarrow as pa
import ceql
schema = ceql.declare("CREATE STREAM S { EVENT A { k:int }, EVENT B { k:int }, EVENT C { k:int }, EVENT D { k:int } }")
query = ceql.compile("SELECT * FROM S WHERE A : B : C PARTITION BY [k]", schema)
n = 10_000
table = pa.table({"event_type": ["ABCD"[i % 4] for i in range(n)], "k": [(i // 4) % 50 for i in range(n)]})
out = query.run(table, output="arrow")
print(json.dumps([time.perf_counter() - wall, time.process_time() - cpu, out.num_rows]))
"""
KERNEL_READY = """
import ceql
from ceql.runtime.kernel import warm
print(warm.ready())
"""


def _interpreter(version: str) -> str | None:
    """A working python3.X: from a pyenv installation, or from PATH (a pyenv shim on PATH may
    not be active, so each candidate must run and report the right version)."""
    pyenv_root = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    candidates = sorted(
        glob.glob(os.path.join(pyenv_root, "versions", f"{version}.*", "bin", f"python{version}"))
    )
    candidates.reverse()  # newest patch release first
    on_path = shutil.which(f"python{version}")
    if on_path:
        candidates.append(on_path)
    for candidate in candidates:
        probe = subprocess.run(
            [candidate, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True,
            text=True,
        )
        if probe.returncode == 0 and probe.stdout.strip() == version:
            return candidate
    return None


def _run(*command: str | Path, **kwargs) -> subprocess.CompletedProcess:
    result = subprocess.run([str(c) for c in command], capture_output=True, text=True, timeout=1200, **kwargs)
    assert result.returncode == 0, (
        f"{' '.join(map(str, command))}\n{result.stdout[-2000:]}\n{result.stderr[-4000:]}"
    )
    return result


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    _run(sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", out, ROOT)
    (built,) = out.glob("ceql-*.whl")
    return built


@pytest.mark.slow
@pytest.mark.parametrize("version", SUPPORTED)
def test_install_and_run(version: str, wheel: Path, tmp_path: Path) -> None:
    python = _interpreter(version)
    if python is None:
        pytest.skip(f"no Python {version} on this machine")
    venv = tmp_path / "venv"
    _run(python, "-m", "venv", venv)
    bin_dir = venv / "bin"
    _run(bin_dir / "python", "-m", "pip", "install", "--quiet", "-c", ROOT / "constraints.txt", wheel)
    smoke = _run(bin_dir / "python", "-c", SMOKE, cwd=tmp_path).stdout.splitlines()
    assert smoke[:3] == ["[(0, 2)]", "True", "True"]
    assert "pip install 'ceql[spark]'" in smoke[3]
    first = json.loads(_run(bin_dir / "python", "-c", FIRST_QUERY, cwd=tmp_path).stdout.splitlines()[-1])
    assert first[1] < 2.0, f"first query after install: {first[0]:.2f} s wall, {first[1]:.2f} s CPU"
    assert first[2] > 0
    deadline = time.time() + 600  # the background compilation fills the kernel's cache
    while _run(bin_dir / "python", "-c", KERNEL_READY, cwd=tmp_path).stdout.strip() != "True":
        assert time.time() < deadline, "the kernel was not compiled in the background"
        time.sleep(2)
    version_line = _run(bin_dir / "ceql", "--version").stdout.strip()
    assert version_line.startswith("ceql ")
    reported = _run(bin_dir / "python", "-c", "import sys; print(sys.version_info[:2])").stdout.strip()
    assert reported == str(tuple(int(p) for p in version.split(".")))
