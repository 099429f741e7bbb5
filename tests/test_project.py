"""The project as a user and a contributor meet it: version, packaging metadata, the main job,
and a repository that reads nothing outside itself."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

import ceql

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]


def _ceql(*args: str, block_pyspark: bool = False) -> subprocess.CompletedProcess:
    """Run the command line in a fresh interpreter (optionally as if PySpark were not installed)."""
    code = "import sys\n"
    if block_pyspark:
        code += "sys.modules['pyspark'] = None\n"
    code += "from ceql.cli import main\nsys.exit(main(sys.argv[1:]))\n"
    return subprocess.run(
        [sys.executable, "-c", code, *args], cwd=ROOT, capture_output=True, text=True, timeout=120
    )


def test_version() -> None:
    result = _ceql("--version")
    assert result.returncode == 0
    assert result.stdout.strip() == f"ceql {ceql.__version__}"
    assert metadata.version("ceql") == ceql.__version__


def test_package_is_typed() -> None:
    assert (Path(ceql.__file__).parent / "py.typed").is_file()
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "py.typed" in pyproject["tool"]["setuptools"]["package-data"]["ceql"]


def _requirements() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    found = [Requirement(r) for r in project["dependencies"]]
    for extra in project["optional-dependencies"].values():
        found.extend(Requirement(r) for r in extra)
    return found


def _pins() -> dict[str, list[Requirement]]:
    pins: dict[str, list[Requirement]] = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            pin = Requirement(line)
            specs = list(pin.specifier)
            assert len(specs) == 1 and specs[0].operator == "==", f"constraints.txt pins exactly: {line}"
            pins.setdefault(canonicalize_name(pin.name), []).append(pin)
    return pins


def test_dependencies_are_ranges_and_constraints_pin_inside_them() -> None:
    pins = _pins()
    for requirement in _requirements():
        assert not any(s.operator == "==" for s in requirement.specifier), (
            f"pyproject.toml: {requirement} is an exact pin; declare a range (pins go in constraints.txt)"
        )
        chosen = pins.get(canonicalize_name(requirement.name))
        assert chosen, f"constraints.txt has no pin for {requirement.name}"
        for pin in chosen:
            version = next(iter(pin.specifier)).version
            assert requirement.specifier.contains(version, prereleases=True), (
                f"constraints.txt pins {pin} outside pyproject.toml's {requirement}"
            )


def test_local_engine_does_not_need_spark() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    core = {canonicalize_name(Requirement(r).name) for r in project["dependencies"]}
    assert "pyspark" not in core and "protobuf" not in core
    spark = {canonicalize_name(Requirement(r).name) for r in project["optional-dependencies"]["spark"]}
    assert spark == {"pyspark", "protobuf"}


def test_spark_without_the_extra_says_how_to_install_it() -> None:
    result = _ceql(
        "run",
        "--engine",
        "spark",
        "-d",
        "examples/stocks/declaration.core",
        "-q",
        "examples/stocks/sell_then_buys.ceql",
        "-i",
        "examples/stocks/events.csv",
        block_pyspark=True,
    )
    assert result.returncode == 2
    assert "pip install 'ceql[spark]'" in result.stderr
    assert "Traceback" not in result.stderr
    local = _ceql(
        "check",
        "-d",
        "examples/stocks/declaration.core",
        "-q",
        "examples/stocks/sell_then_buys.ceql",
        block_pyspark=True,
    )
    assert local.returncode == 0, local.stderr


def _tracked_files() -> list[Path]:
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout
        return [ROOT / name for name in listed.split("\0") if name]
    except (OSError, subprocess.CalledProcessError):  # not a git checkout: every file but build output
        skip = {".git", ".venv", "build", "dist", "out", "__pycache__", ".pytest_cache", ".hypothesis"}
        return [p for p in ROOT.rglob("*") if p.is_file() and not skip & set(p.relative_to(ROOT).parts)]


def test_nothing_reads_or_links_outside_the_repository() -> None:
    """No file refers to the sibling folder the project was once developed beside."""
    sibling = "shared"
    patterns = ["../" + sibling, "/work/" + sibling]  # spelled in pieces so this file does not match
    offenders = []
    for path in _tracked_files():
        if not path.is_file():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        offenders.extend(f"{path.relative_to(ROOT)}: {p}" for p in patterns if p in text)
    assert offenders == []


@pytest.mark.slow
def test_main_job_spark_pipeline_equals_the_local_engine(tmp_path: Path) -> None:
    """`bash scripts/main.sh` (the README's first command) runs over several input files, and its
    Spark results are the local engine's on the same files, and on the single file they split."""
    out = tmp_path / "matches"
    env = {**os.environ, "CEQL_SHUFFLE_PARTITIONS": "4"}
    job = subprocess.run(
        ["bash", "scripts/main.sh", "--output", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1800,
        env=env,
    )
    assert job.returncode == 0, job.stderr[-3000:]
    assert "5000 events read, 0 rejected" in job.stderr
    import pyarrow.parquet as pq

    spark_rows = pq.read_table(out).to_pylist()

    def local(inputs: str) -> list[dict]:
        result = _ceql(
            "run",
            "-d",
            "examples/stocks/declaration.core",
            "-q",
            "examples/stocks/sell_then_buys.ceql",
            "-q",
            "examples/stocks/same_volume.ceql",
            "-i",
            inputs,
            "--quiet",
        )
        assert result.returncode == 0, result.stderr
        return [json.loads(line) for line in result.stdout.splitlines()]

    def key(row: dict) -> tuple:
        return (row["query"], row["trigger"], tuple(row["positions"]))

    local_rows = local("examples/stocks/parts/*.csv")
    assert len(local_rows) > 0
    assert sorted(map(key, local_rows)) == sorted(map(key, local("examples/stocks/events.csv")))
    assert sorted(map(key, spark_rows)) == sorted(map(key, local_rows))
