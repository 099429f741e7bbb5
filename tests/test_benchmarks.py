"""The benchmark runner's quick mode works (CI smoke run; figures are not asserted), the
generators make CORE's queries match, and the competitors' translations are exact."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import corepp, generators  # noqa: E402
from benchmarks.workloads import DECLARATIONS, FAMILIES, NO_OUTPUT, rows_of  # noqa: E402

import ceql  # noqa: E402


def test_quick_benchmarks_run(tmp_path) -> None:
    out = tmp_path / "results.json"
    result = subprocess.run(
        [sys.executable, "-m", "benchmarks", "stress", "--quick", "--json", str(out)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    rows = json.loads(out.read_text())["rows"]
    assert {row["family"] for row in rows} == {"stress"}
    assert "### stress" in result.stdout and "| stress | Q2 n=200 |" in result.stdout
    for row in rows:
        assert row["events"] in (200, 400) and row["complex_events"] > 0


def test_quick_rows_cover_every_family() -> None:
    rows = rows_of(list(FAMILIES), quick=True)
    assert {row["family"] for row in rows} == set(FAMILIES)
    assert {row["workload"] for row in rows if row["family"] == "core"} == {"stocks", "smart_homes", "taxis"}


def test_every_core_query_matches_unless_labelled() -> None:
    """The generated data makes every CORE query produce complex events, except the queries
    whose last step names a value that never occurs (labelled as such)."""
    tables = {}
    for row in rows_of(["core"], quick=True):
        schema = ceql.declare(DECLARATIONS[row["declaration"]])
        generator, kwargs = row["data"]
        key = (generator, tuple(sorted(kwargs.items())))
        if key not in tables:
            tables[key] = getattr(generators, generator)(**kwargs)
        count = sum(1 for _ in ceql.compile(row["text"], schema).run(tables[key]))
        if row["note"] == NO_OUTPUT:
            assert count == 0, row["query"]
        else:
            assert count > 0, (row["workload"], row["query"])


def test_long_core_queries_match_on_the_full_stock_data() -> None:
    schema = ceql.declare(generators.STOCK_DECLARATION)
    table = generators.stocks(60_000)
    text = (ROOT / "benchmarks" / "queries" / "stocks" / "q5_none.txt").read_text()  # 24 steps
    assert sum(1 for _ in ceql.compile(text, schema).run(table)) > 0


def test_memory_stays_flat_with_a_window_and_short_lived_keys() -> None:
    from benchmarks.memory import run

    rows = run(1_200_000, report_every=200_000, out=lambda row: None)
    assert rows[-1]["matches"] > 0
    early, late = rows[1], rows[-1]
    # Live state is bounded by the window and the active keys, not by the stream.
    assert late["live_nodes"] <= 2 * early["live_nodes"] + 1000
    if late["partitions"] is not None:  # the Python path's count (the kernel has none to give)
        assert late["partitions"] <= 2 * early["partitions"] + 50


def test_stress_count_is_exact() -> None:
    table = generators.stress(300)
    kinds = table.column("event_type").to_pylist()
    a = ab = abc = 0
    for kind in kinds[:-1]:  # number of increasing (A, B, C) triples, by dynamic programming
        if kind == "A":
            a += 1
        elif kind == "B":
            ab += a
        elif kind == "C":
            abc += ab
    schema = ceql.declare(generators.STRESS_DECLARATION)
    query = ceql.compile("SELECT * FROM S WHERE A; B; C; D", schema)
    matches = list(query.run(table))
    assert len(matches) == abc and {m.trigger for m in matches} == {299}


def test_tweets_replies_point_back_to_tweets() -> None:
    table = generators.tweets(5_000).to_pydict()
    kinds, tweet = table["event_type"], table["tweet"]
    for position, kind in enumerate(kinds):
        if kind == "R":
            assert 0 <= tweet[position] < position and kinds[tweet[position]] == "T"


def test_corepp_translation_and_comparison() -> None:
    query, reason = corepp.translate("SELECT * FROM S WHERE A; B WITHIN 100 EVENTS")
    assert query == "SELECT * FROM S WHERE A; B WITHIN 99 EVENTS" and reason == ""
    assert corepp.translate("SELECT LAST * FROM S WHERE A; B")[0] is None
    same = "SELECT * FROM S WHERE A; B"
    assert corepp.compare([(1, 2), (1, 3)], [(1, 3), (1, 2)], same, 1) == "equal"
    assert corepp.compare([(1, 2)], [(1, 3)], same, 1).startswith("DIFFERENT")
    assert corepp.compare([(1, 2)], [(1, 3)], same + " LIMIT 1", 1).startswith("n/a")


@pytest.mark.parametrize("query", ["stock-q1", "contiguous", "correlation-1000"])
def test_duckdb_finds_the_same_complex_events(query) -> None:
    pytest.importorskip("duckdb")
    from benchmarks import duckdb_side

    texts = {
        "stock-q1": (
            "stocks",
            generators.stocks(30_000),
            (ROOT / "benchmarks/queries/stocks/q1_none.txt").read_text(),
        ),
        "contiguous": ("keyed", generators.keyed(30_000), "SELECT * FROM S WHERE A : B : C PARTITION BY [k]"),
        "correlation-1000": (
            "tweets",
            generators.tweets(3_000),
            "SELECT * FROM S WHERE (T AS x ; R AS y) FILTER x.id = y.tweet WITHIN 1000 EVENTS",
        ),
    }
    declaration, table, text = texts[query]
    ours = sorted(m.positions for m in ceql.compile(text, ceql.declare(DECLARATIONS[declaration])).run(table))
    theirs = sorted(duckdb_side.run(table, query)["matches"])
    assert ours and ours == theirs


def test_cross_condition_workload_count_is_exact() -> None:
    """``(A AS a ; B+ ; C AS c) FILTER a.v > c.v + 990``: every qualifying (a, c) pair gives one
    complex event per non-empty subset of the B events between them."""
    columns = generators.values(1_500).to_pydict()
    kinds, value = columns["event_type"], columns["v"]
    window, expected = 20, 0
    for i, kind in enumerate(kinds):
        for j in range(i + 1, min(len(kinds), i + window)):
            if kind == "A" and kinds[j] == "C" and value[i] > value[j] + 990:
                expected += 2 ** kinds[i + 1 : j].count("B") - 1
    text = f"SELECT * FROM S WHERE (A AS a ; B+ ; C AS c) FILTER a.v > c.v + 990 WITHIN {window} EVENTS"
    query = ceql.compile(text, ceql.declare(generators.VALUES_DECLARATION))
    assert expected > 0 and sum(1 for _ in query.run(generators.values(1_500))) == expected


def test_time_attributes_are_primary_time_and_never_decrease() -> None:
    """The CORE schemas declare their time as ``primary_time`` (as CORE does), which is right
    only because the generated times never decrease."""
    for declaration, table, attribute in [
        (generators.STOCK_DECLARATION, generators.stocks(20_000), "stock_time"),
        (generators.HOMES_DECLARATION, generators.smart_homes(20_000), "plug_timestamp"),
        (generators.TAXI_DECLARATION, generators.taxis(20_000), "dropoff_datetime"),
    ]:
        assert f"{attribute}:primary_time" in declaration
        times = table.column(attribute).to_numpy()
        assert (times[1:] >= times[:-1]).all(), attribute


def test_every_row_compiles_and_names_its_path() -> None:
    """Every row of every family compiles against its declaration (the measures rows too), and
    the path it reports is the one ``query.run(..., output="arrow")`` takes."""
    from benchmarks.measure import _path

    for row in rows_of(list(FAMILIES), quick=True):
        query = ceql.compile(row["text"], ceql.declare(DECLARATIONS[row["declaration"]]))
        path = _path(query, row.get("engine", "auto"))
        if row.get("measures_of"):  # measures run on the kernel (issue 25)
            assert path == "kernel" or (row.get("engine") == "python" and path.startswith("python"))
        if row.get("engine") == "python":
            assert path.startswith("python")
    schema = ceql.declare(generators.STOCK_DECLARATION)
    q1 = (ROOT / "benchmarks/queries/stocks/q1_none.txt").read_text()
    assert _path(ceql.compile(q1, schema), "auto") == "kernel"


def test_report_table_has_the_path_and_cpu_columns() -> None:
    from benchmarks.report import table

    row = {
        "family": "core",
        "workload": "stocks",
        "query": "q1",
        "note": "",
        "events": 10,
        "complex_events": 2,
        "seconds": 0.5,
        "cpu_seconds": 0.4,
        "events_per_s": 20.0,
        "peak_mb": 1.0,
        "path": "kernel",
        "competitors": {"duckdb:q": {"seconds": 1.0, "cpu_seconds": 1.8, "threads": 2, "same": "equal"}},
    }
    text = table([row])
    header, rule, line = text.splitlines()
    assert header.count("|") == rule.count("|") == line.count("|")
    assert "| CPU s |" in header and "| path |" in header
    assert (
        "| 0.400 |" in line
        and "1.000 (2 threads, 1.800 CPU s) | 4.5x (wall 2.0x) | equal" in line
        and "| kernel |" in line
    )


def test_latency_rows_measure_push() -> None:
    """``python -m benchmarks latency`` (smoke run): each row pushes events one at a time and
    reports its figures; the table names every shape."""
    from benchmarks import latency

    rows = latency.run(quick=True, only="issue query, 10 keys")
    measured = [row for row in rows if row["engine"] != "-"]
    assert [row["engine"] for row in measured] == ["default", "compiled"]
    for row in measured:
        assert row["matches"] > 0 and row["mean_cpu_us"] > 0 and row["p50_us"] <= row["p99_us"] <= row["max_us"]
    assert "| issue query, 10 keys (matches) | compiled |" in latency.table(rows)


def test_latency_of_deadlines() -> None:
    """The NOT FOLLOWED BY rows report matches at their deadlines as events are pushed, the
    same on the Python path and the kernel (runtime/kernel/absence.py)."""
    from benchmarks import latency

    rows = [row for row in latency.run(quick=True, only="NOT FOLLOWED BY") if row["engine"] != "-"]
    assert len(rows) == 8
    for default, compiled in zip(rows[::2], rows[1::2]):
        assert (default["engine"], compiled["engine"]) == ("default", "compiled")
        assert default["matches"] > 0 and default["run_matches"] >= default["matches"]
        assert compiled["matches"] == default["matches"] and compiled["run_matches"] == default["run_matches"]


def test_absence_beside_its_twin() -> None:
    """benchmarks/absence.py: NOT FOLLOWED BY on the kernel, the same matches as the Python path."""
    from benchmarks import absence

    rows = absence.run(quick=True)
    assert len(rows) == len(absence.SHAPES)
    for row in rows:
        assert row["matches"] == row["python_matches"] > 0 and row["seconds"] > 0 and row["twin_matches"] > 0
    assert "| equality (the recipe's form) |" in absence.table(rows)
