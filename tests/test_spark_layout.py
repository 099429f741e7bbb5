"""Spark gives the local engine's matches whatever the data layout: every plan (single,
partitioned, sharded; positions, WITHIN n EVENTS, time windows; several queries in one job), on
data in 1, 8 and 200 Spark partitions, from one file or several, adaptive execution on and off.

The events have many equal times, also across file boundaries: with files and no ``tie_break``,
ties are broken by the input order (the files in the order of their paths, then the row in the
file), as the local engine reads them; a DataFrame without files (``createDataFrame``, then
``repartition``) has no input order left, so it names its ``tie_break``. The local engine
(``ceql.compile(...).run(events)``) is the oracle, match for match."""

from __future__ import annotations

import contextlib
import json
import random
from pathlib import Path

import pytest

import ceql
from ceql.spark import find, plan_kind
from tests.support.strategies import TEST_DECLARATION

SCHEMA = ceql.declare(TEST_DECLARATION)
SECOND = 10**9  # the declaration's times are nanoseconds

# name -> (query, options, plan): one query per plan and per way of numbering events.
QUERIES = {
    "single": ("SELECT * WHERE A AS x; NOT(D); B AS y WITHIN 6 EVENTS", {}, "single"),
    "single_pos": (
        "SELECT * WHERE A AS x; B AS y; C AS z WITHIN 5 EVENTS CONSUME BY ANY",
        {"positions": True},
        "single",
    ),
    "keyed_time": (
        "SELECT * WHERE A AS x; B AS y; C AS z PARTITION BY [id] WITHIN 3 SECONDS",
        {},
        "partitioned",
    ),
    "keyed_time_pos": (
        "SELECT * WHERE A AS x; B AS y PARTITION BY [id] WITHIN 2 SECONDS",
        {"positions": True},
        "partitioned",
    ),
    "keyed_events": ("SELECT * WHERE A AS x; B AS y PARTITION BY [id] WITHIN 12 EVENTS", {}, "partitioned"),
    "sharded_events": ("SELECT * WHERE A AS x; B AS y; C AS z WITHIN 7 EVENTS", {}, "sharded"),
    "sharded_time_pos": ("SELECT * WHERE A AS x; C AS z WITHIN 2 SECONDS", {"positions": True}, "sharded"),
}


def make_events(n: int, seed: int) -> list[dict]:
    """Events in stream order, ``seq`` their index: times advance by 0 or 1 second, so most times
    are shared by several events (only the input order tells them apart)."""
    rng = random.Random(seed)
    events, now = [], 0
    for index in range(n):
        now += rng.choice((0, 0, 1))
        events.append(
            {
                "event_type": rng.choice("ABCD"),
                "id": rng.randint(0, 4),
                "v": rng.randint(0, 4),
                "s": rng.choice("ab"),
                "t": now * SECOND,
                "seq": index,
            }
        )
    return events


def expected(events: list[dict], names=QUERIES) -> dict[str, list]:
    """The local engine's matches: each match as its events' ``seq`` (= positions here)."""
    found = {}
    for name in names:
        text, _, _ = QUERIES[name]
        found[name] = sorted(tuple(m.positions) for m in ceql.compile(text, SCHEMA).run(events))
    return found


def spark_matches(frame, names=QUERIES, **common) -> dict[str, list]:
    """Every query on ``frame`` in one Spark job (a union), by query name; checks that the
    positions (where asked for) are the local engine's too."""
    from pyspark.sql import functions as F

    results = None
    for name in names:
        text, options, kind = QUERIES[name]
        query = ceql.compile(text, SCHEMA)
        assert plan_kind(query) == kind, name
        found = find(frame, query, SCHEMA, id_columns=["seq"], name=name, **common, **options)
        positions = F.col("positions") if options.get("positions") else F.lit(None).cast("array<long>")
        found = found.select("query", F.col("events.seq").alias("seqs"), positions.alias("positions"))
        results = found if results is None else results.unionByName(found)
    got: dict[str, list] = {name: [] for name in names}
    for row in results.collect():
        if row.positions is not None:
            assert list(row.positions) == list(row.seqs), (row.query, row)
        got[row.query].append(tuple(row.seqs))
    return {name: sorted(matches) for name, matches in got.items()}


@contextlib.contextmanager
def spark_conf(spark, **conf):
    """Runtime SQL settings for one test (restored after it): keys with dots as underscores."""
    keys = {k.replace("_", "."): str(v) for k, v in conf.items()}
    before = {k: spark.conf.get(k, None) for k in keys}
    try:
        for key, value in keys.items():
            spark.conf.set(key, value)
        yield
    finally:
        for key, value in before.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


def layout(spark, partitions: int, adaptive: bool, total_bytes: int = 0):
    """Shuffle partitions, adaptive execution, and file splits small enough that the input is
    read in about ``partitions`` tasks."""
    split = max(64, total_bytes // partitions) if total_bytes else 128 * 1024 * 1024
    return spark_conf(
        spark,
        spark_sql_shuffle_partitions=partitions,
        spark_sql_adaptive_enabled=str(adaptive).lower(),
        spark_sql_files_maxPartitionBytes=split,
        spark_sql_files_openCostInBytes=min(split, 4 * 1024 * 1024),
    )


def write_files(folder: Path, events: list[dict], files: int, fmt: str) -> int:
    """``events`` split into ``files`` files named in stream order, of unequal sizes (Spark packs
    file splits by size, not name); equal times straddle the file boundaries. Returns the bytes."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder.mkdir(parents=True, exist_ok=True)
    n = len(events)
    tied = [i for i in range(n // 10, n - n // 10) if events[i - 1]["t"] == events[i]["t"]]
    cuts = [0] + sorted(random.Random(files).sample(tied, files - 1)) + [n]
    for index in range(files):
        chunk = events[cuts[index] : cuts[index + 1]]
        path = folder / f"part-{index:03d}.{fmt}"
        if fmt == "parquet":
            pq.write_table(pa.Table.from_pylist(chunk), path, row_group_size=37)
        else:
            path.write_text("".join(json.dumps(e) + "\n" for e in chunk))
    return sum(p.stat().st_size for p in folder.iterdir())


def read_files(spark, folder: Path, fmt: str):
    if fmt == "parquet":
        return spark.read.parquet(str(folder))
    return spark.read.schema("event_type string, id long, v long, s string, t long, seq long").json(
        str(folder)
    )


# The CI matrix: every partition count with adaptive execution on and off, each with a
# different input (a DataFrame, Parquet files, JSON Lines files, one file or several).
MATRIX = [
    (1, True, "frame", 1),
    (1, False, "parquet", 1),
    (8, True, "json", 3),
    (8, False, "parquet", 4),
    (8, False, "frame", 1),
    (200, True, "parquet", 5),
    (200, False, "json", 2),
]


def run_layout(
    spark, tmp_path: Path, partitions: int, adaptive: bool, source: str, files: int, n: int, seed: int
):
    events = make_events(n, seed)
    if source == "frame":
        import pandas as pd

        with layout(spark, partitions, adaptive):
            frame = spark.createDataFrame(pd.DataFrame(events)).repartition(partitions)
            return spark_matches(frame, tie_break="seq"), events
    size = write_files(tmp_path / "in", events, files, source)
    with layout(spark, partitions, adaptive, size):
        frame = read_files(spark, tmp_path / "in", source)
        assert frame.rdd.getNumPartitions() >= min(partitions, files), "the input must be split"
        return spark_matches(frame), events


@pytest.mark.parametrize("partitions, adaptive, source, files", MATRIX)
def test_every_plan_equals_the_local_engine_at_any_layout(
    spark, tmp_path, partitions, adaptive, source, files
):
    got, events = run_layout(
        spark, tmp_path, partitions, adaptive, source, files, n=1500, seed=partitions + files
    )
    want = expected(events)
    assert all(want.values()), {k: len(v) for k, v in want.items()}
    for name in QUERIES:
        assert got[name] == want[name], (name, len(got[name]), len(want[name]))


@pytest.mark.slow
@pytest.mark.parametrize("partitions", [1, 8, 200])
@pytest.mark.parametrize("adaptive", [True, False])
@pytest.mark.parametrize(
    "source, files", [("frame", 1), ("parquet", 1), ("parquet", 6), ("json", 1), ("json", 6)]
)
def test_the_whole_layout_matrix_on_more_events(spark, tmp_path, partitions, adaptive, source, files):
    got, events = run_layout(
        spark, tmp_path, partitions, adaptive, source, files, n=6000, seed=files * 7 + partitions
    )
    assert got == expected(events)


def test_the_same_answer_on_every_run(spark, tmp_path):
    """Run twice on the same layout: the same matches (no run-to-run variation)."""
    events = make_events(1200, seed=5)
    size = write_files(tmp_path / "in", events, 4, "parquet")
    names = ["keyed_events", "sharded_events"]
    with layout(spark, 8, False, size):
        frame = read_files(spark, tmp_path / "in", "parquet")
        first, second = spark_matches(frame, names), spark_matches(frame, names)
    assert first == second == expected(events, names)


# ``ceql run --engine spark`` over several files, every query in one job: its matches and
# positions are those of ``ceql run`` (the local engine) on the same files.
CLI_LAYOUTS = [(1, True), (8, False), (200, True)]


def write_csv_files(folder: Path, events: list[dict], files: int) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    n = len(events)
    tied = [i for i in range(n // 10, n - n // 10) if events[i - 1]["t"] == events[i]["t"]]
    cuts = [0] + sorted(random.Random(files).sample(tied, files - 1)) + [n]
    paths = []
    for index in range(files):
        path = folder / f"events-{index}.csv"
        rows = events[cuts[index] : cuts[index + 1]]
        path.write_text(
            "event_type,id,v,s,t\n"
            + "".join(f"{e['event_type']},{e['id']},{e['v']},{e['s']},{e['t']}\n" for e in rows)
        )
        paths.append(path)
    return paths


def cli_matches(path: Path) -> list[tuple]:
    rows = [
        json.loads(line)
        for p in sorted([path] if path.is_file() else path.glob("part-*.jsonl"))
        for line in p.read_text().splitlines()
    ]
    return sorted((r["query"], r["trigger"], tuple(r["positions"])) for r in rows)


def run_cli(spark, tmp_path: Path, monkeypatch, capsys, partitions: int, adaptive: bool, n: int) -> None:
    from ceql.cli import main

    events = make_events(n, seed=partitions)
    write_csv_files(tmp_path / "in", events, 3)
    (tmp_path / "decl.core").write_text(TEST_DECLARATION)
    queries = [arg for name in QUERIES for arg in ("-q", QUERIES[name][0])]
    common = ["run", "-d", str(tmp_path / "decl.core"), *queries, "-i", str(tmp_path / "in" / "*.csv")]
    assert main([*common, "-o", str(tmp_path / "local.jsonl")]) == 0, capsys.readouterr().err
    monkeypatch.setenv("CEQL_SHUFFLE_PARTITIONS", str(partitions))
    with spark_conf(spark, spark_sql_adaptive_enabled=str(adaptive).lower()):
        status = main([*common, "--engine", "spark", "-f", "jsonl", "-o", str(tmp_path / "spark")])
    assert status == 0, capsys.readouterr().err
    want = cli_matches(tmp_path / "local.jsonl")
    assert len({q for q, _, _ in want}) == len(QUERIES)
    assert cli_matches(tmp_path / "spark") == want


@pytest.mark.parametrize("partitions, adaptive", CLI_LAYOUTS)
def test_the_cli_over_several_files_equals_the_local_engine(
    spark, tmp_path, monkeypatch, capsys, partitions, adaptive
):
    run_cli(spark, tmp_path, monkeypatch, capsys, partitions, adaptive, n=1500)


@pytest.mark.slow
@pytest.mark.parametrize("partitions", [1, 8, 200])
@pytest.mark.parametrize("adaptive", [True, False])
def test_the_cli_layout_matrix_on_more_events(spark, tmp_path, monkeypatch, capsys, partitions, adaptive):
    run_cli(spark, tmp_path, monkeypatch, capsys, partitions, adaptive, n=6000)


LOCAL_ONE = """
import sys, tempfile
from pathlib import Path
from ceql.spark import session
from tests.test_spark_layout import expected, run_layout
spark = session("local[1]", progress=False)
for partitions, adaptive, source, files in [(8, False, "parquet", 3), (200, True, "json", 2), (8, True, "frame", 1)]:
    got, events = run_layout(spark, Path(tempfile.mkdtemp()), partitions, adaptive, source, files, n=1500, seed=3)
    assert got == expected(events), (partitions, adaptive, source)
print("ok")
"""


@pytest.mark.slow
def test_the_layouts_on_one_core_local_1():
    """``local[1]``: one task at a time (its own driver process and session)."""
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    result = subprocess.run(
        [sys.executable, "-c", LOCAL_ONE], cwd=root, capture_output=True, text=True, timeout=3000,
        env=dict(os.environ, PYTHONPATH=str(root)),
    )  # fmt: skip
    assert result.returncode == 0 and result.stdout.strip().endswith("ok"), result.stderr[-3000:]
