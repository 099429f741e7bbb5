"""Outputs never destroy inputs with ``--engine spark`` either; zero matches and the match limit.

The refusals happen before Spark starts; the other tests run the CLI in this process on the
shared local Spark session (paths are absolute: the JVM does not follow the test's chdir)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ceql.cli import main
from tests.test_outputs import snapshot

DECLARATION = "CREATE STREAM S { EVENT A { x:int }, EVENT B { x:int } }"
QUERY = "SELECT * FROM S WHERE A ; B"
EVENTS = "event_type,x\nA,1\nB,2\nA,3\nB,4\n"


@pytest.fixture
def work(tmp_path):
    (tmp_path / "decl.core").write_text(DECLARATION)
    (tmp_path / "query.ceql").write_text(QUERY)
    data = tmp_path / "data"
    data.mkdir()
    (data / "a.csv").write_text(EVENTS)
    (data / "b.csv").write_text(EVENTS)
    return tmp_path


def spark_run(work: Path, *args: str) -> list[str]:
    return ["run", "--engine", "spark", "-d", str(work / "decl.core"), *args]


@pytest.mark.parametrize(
    "args, cause",
    [
        (["-i", "{w}/data/a.csv", "-o", "{w}/data/a.csv"], "is the input {w}/data/a.csv"),
        (["-i", "{w}/data/*.csv", "-o", "{w}/data"], "contains the input {w}/data/a.csv; writing the folder"),
        (["-i", "{w}/data/*.csv", "-o", "{w}"], "contains the input"),
        (["-i", "{w}/data/a.csv", "-o", "{w}/out", "--dead-letter", "{w}/out"], "is the --output folder"),
        (
            ["-i", "{w}/data/a.csv", "-o", "{w}/out", "--dead-letter", "{w}/out/dead"],
            "lies inside the --output",
        ),
        (["-i", "{w}/data/a.csv", "-o", "{w}/decl.core", "--overwrite"], "is the declaration"),
        (["-q", "{w}/query.ceql", "-i", "{w}/data/a.csv", "-o", "{w}/query.ceql"], "is the query file"),
        (["-i", "{w}/data/a.csv", "-o", "{w}/old"], "the folder exists and is not empty; use --overwrite"),
        (
            ["-i", "{w}/data/a.csv", "-o", "{w}/file.txt", "--overwrite"],
            "is a file; this engine writes a folder",
        ),
        (["-i", "{w}/data/a.csv", "-o", "{w}/missing/out"], "the folder {w}/missing does not exist"),
    ],
)
def test_spark_refuses_outputs_that_would_destroy_something(work, capsys, args, cause) -> None:
    (work / "old").mkdir()
    (work / "old" / "part-0.json").write_text("{}\n")
    (work / "file.txt").write_text("keep")
    args = [a.format(w=work) for a in args]
    if "-q" not in args:
        args = ["-q", QUERY, *args]
    before = snapshot(work)
    status = main(spark_run(work, *args))
    err = capsys.readouterr().err
    assert status == 2, err
    assert cause.format(w=work) in err and "Traceback" not in err
    assert snapshot(work) == before


def written(folder: Path) -> list[dict]:
    return [
        json.loads(line)
        for path in sorted(folder.glob("part-*.json*"))
        for line in path.read_text().splitlines()
    ]


def no_temporary_files(work: Path) -> bool:
    return not [p for p in work.iterdir() if p.name.startswith(".")]


def test_spark_zero_matches_in_every_format(spark, work, capsys) -> None:
    for fmt in ("jsonl", "parquet"):
        out = work / f"none-{fmt}"
        status = main(
            spark_run(
                work,
                "-q",
                "SELECT * FROM S WHERE B ; B ; B",
                "-i",
                str(work / "data/a.csv"),
                "-o",
                str(out),
                "-f",
                fmt,
            )
        )
        err = capsys.readouterr().err
        assert status == 0, err
        assert "0 matches (q1: 0)" in err
        assert out.is_dir() and (out / "_SUCCESS").exists()
    assert written(work / "none-jsonl") == []
    assert spark.read.parquet(str(work / "none-parquet")).count() == 0
    assert no_temporary_files(work)


def test_spark_replaces_a_folder_only_with_overwrite_and_only_on_success(spark, work, capsys) -> None:
    out = work / "out"
    out.mkdir()
    (out / "part-old.json").write_text('{"old": true}\n')
    inputs = snapshot(work / "data")
    args = ["-q", QUERY, "-i", str(work / "data/a.csv"), "-o", str(out), "-f", "jsonl", "--overwrite"]
    bad = work / "bad.csv"
    bad.write_text("event_type,x\nA,1\nB,oops\n")
    status = main(spark_run(work, "-q", QUERY, "-i", str(bad), "-o", str(out), "-f", "jsonl", "--overwrite"))
    assert status == 2 and "cannot read 'oops' as an integer" in capsys.readouterr().err
    assert written(out) == [{"old": True}]  # a failed run keeps the old results
    assert main(spark_run(work, *args)) == 0, capsys.readouterr().err
    assert sorted(r["positions"] for r in written(out)) == [[0, 1], [0, 3], [2, 3]]
    assert snapshot(work / "data") == inputs
    assert no_temporary_files(work)


def test_spark_stops_at_max_matches_and_writes_nothing(spark, work, capsys) -> None:
    events = work / "many.csv"
    events.write_text("event_type,x\n" + "".join(f"A,{i}\n" for i in range(16)))
    out = work / "out"
    status = main(
        spark_run(
            work, "-q", "SELECT * FROM S WHERE A+", "-i", str(events), "-o", str(out), "--max-matches", "100"
        )
    )
    err = capsys.readouterr().err
    assert status == 2, err
    assert "more than 100 matches: stopped at the limit --max-matches (100); no output was written" in err
    assert not out.exists() and no_temporary_files(work)
    status = main(
        spark_run(
            work,
            "-q",
            "SELECT * FROM S WHERE A+",
            "-i",
            str(events),
            "-o",
            str(out),
            "--max-matches",
            "0",
            "-f",
            "jsonl",
        )
    )
    assert status == 0, capsys.readouterr().err
    assert len(written(out)) == 2**16 - 1


def test_spark_dead_letter_folder_is_written_with_the_results(spark, work, capsys) -> None:
    bad = work / "bad.csv"
    bad.write_text("event_type,x\nA,1\nB,oops\nB,2\n")
    out, dead = work / "out", work / "dead"
    args = ["-q", QUERY, "-i", str(bad), "-o", str(out), "-f", "jsonl", "--on-error", "dead-letter"]
    assert main(spark_run(work, *args, "--dead-letter", str(dead))) == 0, capsys.readouterr().err
    assert [r["reason"] for r in written(dead)] == ["column x: cannot read 'oops' as an integer"]
    assert [r["positions"] for r in written(out)] == [[0, 1]]
    assert no_temporary_files(work)
