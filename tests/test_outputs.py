"""Outputs never destroy inputs (local engine): every refusal leaves every file byte-for-byte
intact and names the cause; results appear only when a run succeeds."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ceql.cli import main
from ceql.io.outputs import Outputs, Protected, Target, check_outputs

ROOT = Path(__file__).resolve().parents[1]
DECLARATION = "CREATE STREAM S { EVENT A { x:int }, EVENT B { x:int } }"
QUERY = "SELECT * FROM S WHERE A ; B"
EVENTS = "event_type,x\nA,1\nB,2\nA,3\nB,4\n"


@pytest.fixture
def work(tmp_path, monkeypatch):
    """A folder with a declaration, a query file and an input; the test runs inside it."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "decl.core").write_text(DECLARATION)
    (tmp_path / "query.ceql").write_text(QUERY)
    (tmp_path / "in.csv").write_text(EVENTS)
    return tmp_path


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (relative name -> content); symbolic links as their target."""
    files = {}
    for path in sorted(folder.rglob("*")):
        if path.is_symlink():
            files[str(path.relative_to(folder))] = b"-> " + os.readlink(path).encode()
        elif path.is_file():
            files[str(path.relative_to(folder))] = path.read_bytes()
    return files


def run(capsys, *args: str) -> tuple[int, str, str]:
    status = main(["run", "-d", "decl.core", *args])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def refused(capsys, work: Path, *args: str, cause: str) -> None:
    """The run exits 2 with ``cause`` in the message, and no file changed or appeared."""
    before = snapshot(work)
    status, out, err = run(capsys, *args)
    assert status == 2, err
    assert cause in err, err
    assert "Traceback" not in err and out == ""
    assert snapshot(work) == before


def test_output_on_the_input_is_refused(work, capsys) -> None:
    refused(
        capsys,
        work,
        "-q",
        QUERY,
        "-i",
        "in.csv",
        "-o",
        "in.csv",
        cause="--output in.csv: is the input in.csv",
    )
    # --overwrite does not lift it
    refused(capsys, work, "-q", QUERY, "-i", "in.csv", "-o", "in.csv", "--overwrite", cause="is the input")


@pytest.mark.parametrize("spelling", ["./in.csv", "sub/../in.csv", "{abs}", "link.csv", "hard.csv"])
def test_output_on_the_input_under_another_name_is_refused(work, capsys, spelling) -> None:
    (work / "sub").mkdir()
    (work / "link.csv").symlink_to("in.csv")
    os.link(work / "in.csv", work / "hard.csv")
    output = spelling.format(abs=work / "in.csv")
    refused(capsys, work, "-q", QUERY, "-i", "in.csv", "-o", output, "--overwrite", cause="is the input")


def test_output_on_an_input_matched_by_a_glob_is_refused(work, capsys) -> None:
    (work / "more.csv").write_text(EVENTS)
    refused(
        capsys,
        work,
        "-q",
        QUERY,
        "-i",
        "*.csv",
        "-o",
        "more.csv",
        "--overwrite",
        cause="is the input more.csv",
    )


def test_dead_letter_on_the_input_is_refused(work, capsys) -> None:
    refused(
        capsys,
        work,
        *("-q", QUERY, "-i", "in.csv", "--on-error", "dead-letter", "--dead-letter", "in.csv"),
        cause="--dead-letter in.csv: is the input in.csv",
    )


def test_output_and_dead_letter_on_one_file_are_refused(work, capsys) -> None:
    refused(
        capsys,
        work,
        *("-q", QUERY, "-i", "in.csv", "-o", "out.jsonl", "--on-error", "dead-letter"),
        *("--dead-letter", "./out.jsonl"),
        cause="--dead-letter ./out.jsonl: is the --output file out.jsonl",
    )


def test_output_on_the_declaration_or_the_query_file_is_refused(work, capsys) -> None:
    refused(
        capsys,
        work,
        "-q",
        "query.ceql",
        "-i",
        "in.csv",
        "-o",
        "decl.core",
        "--overwrite",
        cause="is the declaration",
    )
    refused(
        capsys,
        work,
        "-q",
        "query.ceql",
        "-i",
        "in.csv",
        "-o",
        "query.ceql",
        "--overwrite",
        cause="is the query file",
    )


def test_existing_output_needs_overwrite(work, capsys) -> None:
    (work / "out.jsonl").write_text("keep me\n")
    refused(
        capsys, work, "-q", QUERY, "-i", "in.csv", "-o", "out.jsonl", cause="the file exists; use --overwrite"
    )
    status, _, err = run(capsys, "-q", QUERY, "-i", "in.csv", "-o", "out.jsonl", "--overwrite", "--quiet")
    assert status == 0, err
    assert [json.loads(line)["positions"] for line in (work / "out.jsonl").read_text().splitlines()] == [
        [0, 1],
        [0, 3],
        [2, 3],
    ]
    assert (work / "in.csv").read_text() == EVENTS
    assert sorted(p.name for p in work.iterdir()) == ["decl.core", "in.csv", "out.jsonl", "query.ceql"]


@pytest.mark.parametrize(
    "output, cause",
    [
        ("missing/out.jsonl", "the folder {work}/missing does not exist"),
        ("folder", "--output folder: is a folder; --output needs a file name"),
        ("newfolder/", "is a folder name"),
        ("in.csv/out.jsonl", "{work}/in.csv is not a folder"),
    ],
)
def test_missing_folders_and_folders_as_files_are_clear_errors(work, capsys, output, cause) -> None:
    (work / "folder").mkdir()
    refused(capsys, work, "-q", QUERY, "-i", "in.csv", "-o", output, cause=cause.format(work=work))


def test_a_failed_run_leaves_no_output_and_keeps_the_old_one(work, capsys) -> None:
    (work / "bad.csv").write_text("event_type,x\nA,1\nB,oops\n")
    refused(capsys, work, "-q", QUERY, "-i", "bad.csv", "-o", "new.jsonl", cause="line 3")
    (work / "old.jsonl").write_text("previous results\n")
    refused(capsys, work, "-q", QUERY, "-i", "bad.csv", "-o", "old.jsonl", "--overwrite", cause="line 3")
    refused(
        capsys,
        work,
        *("-q", QUERY, "-i", "bad.csv", "-o", "new.parquet", "--dead-letter", "dead.jsonl"),
        cause="cannot read 'oops'",
    )


def test_dead_letter_and_parquet_are_written_on_success(work, capsys) -> None:
    (work / "bad.csv").write_text("event_type,x\nA,1\nB,oops\nB,2\n")
    status, _, err = run(
        capsys,
        *("-q", QUERY, "-i", "bad.csv", "-o", "out.parquet", "--on-error", "dead-letter"),
        *("--dead-letter", "dead.jsonl", "--quiet"),
    )
    assert status == 0, err
    import pyarrow.parquet as pq

    assert pq.read_table(work / "out.parquet").column("positions").to_pylist() == [[0, 1]]
    assert [json.loads(line)["line"] for line in (work / "dead.jsonl").read_text().splitlines()] == [3]
    assert not [p for p in work.iterdir() if p.name.startswith(".")]


def test_output_file_permissions_follow_the_umask(work, capsys) -> None:
    old = os.umask(0o022)
    try:
        assert run(capsys, "-q", QUERY, "-i", "in.csv", "-o", "out.jsonl", "--quiet")[0] == 0
    finally:
        os.umask(old)
    assert (work / "out.jsonl").stat().st_mode & 0o777 == 0o644


def test_dash_is_standard_output(work, capsys) -> None:
    status, out, _ = run(capsys, "-q", QUERY, "-i", "in.csv", "-o", "-", "--quiet")
    assert status == 0 and len(out.splitlines()) == 3


def test_svg_may_not_replace_the_query_or_declaration(work, capsys) -> None:
    before = snapshot(work)
    status = main(["explain", "-d", "decl.core", "-q", "query.ceql", "--svg", "query.ceql", "--overwrite"])
    err = capsys.readouterr().err
    assert status == 2 and "--svg query.ceql: is the query file query.ceql" in err
    status = main(["explain", "-d", "decl.core", "-q", QUERY, "--svg", "decl.core"])
    assert status == 2 and "is the declaration" in capsys.readouterr().err
    assert snapshot(work) == before


def test_sigterm_removes_the_temporary_output(work) -> None:
    """A killed run leaves neither a result nor a temporary file (stdin keeps it running)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "ceql", "run", "-d", "decl.core", "-q", QUERY, "-i", "-", "-o", "out.jsonl"],
        stdin=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=work,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
    )
    process.stdin.write(b"event_type,x\nA,1\n")
    process.stdin.flush()
    deadline = time.time() + 120
    while not [p for p in work.iterdir() if p.name.startswith(".out.jsonl")] and time.time() < deadline:
        time.sleep(0.1)
    assert [p for p in work.iterdir() if p.name.startswith(".out.jsonl")], "the run never started writing"
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=300)
    assert process.returncode == 128 + signal.SIGTERM
    assert sorted(p.name for p in work.iterdir()) == ["decl.core", "in.csv", "query.ceql"]


# --------------------------------------------------------------------------- the rules as a library


def test_folder_targets_may_not_contain_or_sit_inside_inputs(tmp_path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "a.csv").write_text(EVENTS)
    inputs = [Protected("the input", str(data / "a.csv"))]
    with pytest.raises(Exception, match="contains the input"):
        check_outputs([Target("--output", str(data), folder=True)], inputs, overwrite=True)
    folder_input = [Protected("the input", str(data))]
    with pytest.raises(Exception, match="lies inside the input"):
        check_outputs([Target("--output", str(data / "out"), folder=True)], folder_input)
    with pytest.raises(Exception, match="is a file; this engine writes a folder"):
        check_outputs([Target("--output", str(data / "a.csv"), folder=True)], [])
    with pytest.raises(Exception, match="lies inside the --output folder"):
        check_outputs(
            [
                Target("--output", str(tmp_path / "out"), True),
                Target("--dead-letter", str(tmp_path / "out/d"), True),
            ],
            [],
        )
    check_outputs([Target("--output", str(tmp_path / "empty"), folder=True)], inputs)  # fine


def test_folders_are_replaced_only_on_commit_and_only_with_overwrite(tmp_path) -> None:
    target = tmp_path / "results"
    target.mkdir()
    (target / "old.txt").write_text("old")
    with Outputs(overwrite=True) as outputs:
        temp = Path(outputs.folder(str(target)))
        temp.mkdir()
        (temp / "new.txt").write_text("new")
        assert (target / "old.txt").exists()  # nothing replaced before the commit
        outputs.commit()
    assert sorted(p.name for p in target.iterdir()) == ["new.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results"]
    with Outputs(overwrite=False) as outputs:
        temp = Path(outputs.folder(str(target)))
        temp.mkdir()
        with pytest.raises(Exception, match="not empty; use --overwrite"):
            outputs.commit()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results"]  # the temporary folder is gone
    assert (target / "new.txt").read_text() == "new"


def test_a_file_that_appears_during_the_run_is_not_replaced(tmp_path) -> None:
    target = tmp_path / "out.jsonl"
    with Outputs(overwrite=False) as outputs:
        Path(outputs.file(str(target))).write_text("result")
        target.write_text("someone else's")
        with pytest.raises(Exception, match="appeared during the run"):
            outputs.commit()
    assert target.read_text() == "someone else's"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.jsonl"]
