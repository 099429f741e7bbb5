"""Spark tells the user what it is doing and why it failed: progress lines from ``ceql run
--engine spark``, one message naming the cause of a failed job (not a Py4J trace),
``explain_plan`` on query text, and bad times named with their column and row."""

from __future__ import annotations

import pandas as pd
import pyarrow as pa
import pyarrow.csv  # noqa: F401 - pa.csv
import pyarrow.parquet as pq
import pytest

import ceql
from ceql.cli import main
from ceql.spark import explain_plan, find
from ceql.spark.progress import job_failure
from tests.support.strategies import TEST_DECLARATION

SCHEMA = ceql.declare(TEST_DECLARATION)

PYTHON_TRACE = """An error occurred while calling o1234.parquet.
: org.apache.spark.SparkException: Job aborted due to stage failure: Task 4 in stage 51.0 failed 1 times, most recent failure: Lost task 4.0 in stage 51.0 (TID 218) (host executor driver): org.apache.spark.api.python.PythonException: Traceback (most recent call last):
  File "/work/src/ceql/spark/batch.py", line 188, in evaluate_group
    return _evaluate_group(table, job=job)
           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/work/src/ceql/runtime/kernel/runner.py", line 320, in _check_order
    raise EventError(
ceql.errors.EventError: row 480: out of order: time 2868 after 2891 (a time window needs events in time order)

\tat org.apache.spark.api.python.BasePythonRunner$ReaderIterator.handlePythonException(PythonRunner.scala:624)
\tat org.apache.spark.sql.execution.python.PythonArrowOutput$$anon$1.read(PythonArrowOutput.scala:118)
Driver stacktrace:
\tat org.apache.spark.scheduler.DAGScheduler.failJobAndIndependentStages(DAGScheduler.scala:2935)
"""

OTHER_PYTHON = """An exception was thrown from the Python worker. Please see the stack trace below.
Traceback (most recent call last):
  File "/x/pyspark/worker.py", line 10, in main
    import ceql
ModuleNotFoundError: No module named 'ceql'
"""

HIDDEN_TRACE = """
  An exception was thrown from the Python worker. Please see the stack trace below.
ceql.errors.EventError: row 1: out of order: time 3 after 5 (the event with seq=2)
"""

JOB_ABORTED = """An error occurred while calling o99.collectToPython.
: org.apache.spark.SparkException: Job aborted due to stage failure: Task 0 in stage 5.0 failed 1 times, most recent failure: Lost task 0.0 in stage 5.0 (TID 3) (192.0.2.2 executor driver): org.apache.spark.api.python.PythonException: ceql.errors.LimitError: more than 3 matches

\tat org.apache.spark.api.python.BasePythonRunner$ReaderIterator.handlePythonException(PythonRunner.scala:645)
"""

RAISED = """[USER_RAISED_EXCEPTION] the time column 't' of a A event is missing (null) in the row {"seq":7} SQLSTATE: P0001
== DataFrame ==
"parquet" was called from
"""


@pytest.mark.parametrize(
    "text, message",
    [
        (
            PYTHON_TRACE,
            "row 480: out of order: time 2868 after 2891 (a time window needs events in time order)",
        ),
        (OTHER_PYTHON, "a Spark task failed: ModuleNotFoundError: No module named 'ceql'"),
        (HIDDEN_TRACE, "row 1: out of order: time 3 after 5 (the event with seq=2)"),
        (JOB_ABORTED, "more than 3 matches"),
        (RAISED, """the time column 't' of a A event is missing (null) in the row {"seq":7}"""),
        (
            "[PATH_NOT_FOUND] Path does not exist: file:/nowhere.\nmore",
            "the Spark job failed: [PATH_NOT_FOUND] Path does not exist: file:/nowhere.",
        ),
    ],
)
def test_a_failed_job_is_one_message_naming_its_cause(text, message) -> None:
    error = job_failure(RuntimeError(text))
    assert str(error) == message
    assert isinstance(error, ceql.CeqlError)


def _csv(path, rows) -> None:
    path.write_text("event_type,id,v,s,t\n" + "".join(f"{k},{i},1,a,{t}\n" for k, i, t in rows))


def test_the_cli_shows_progress_lines_and_the_cause_of_a_failed_task(spark, tmp_path, capsys) -> None:
    (tmp_path / "decl.core").write_text(TEST_DECLARATION)
    _csv(tmp_path / "ok.csv", [("A", 1, 1), ("B", 1, 2), ("A", 2, 3), ("B", 2, 4)])
    common = ["run", "--engine", "spark", "-d", str(tmp_path / "decl.core"), "-f", "jsonl"]
    query = "SELECT * WHERE A; B PARTITION BY [id] WITHIN 5 SECONDS"
    status = main([*common, "-q", query, "-i", str(tmp_path / "ok.csv"), "-o", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert status == 0, err
    lines = err.splitlines()
    assert any("] reading the input: stage " in line and " done (" in line for line in lines), err
    assert any("] finding and writing the matches: stage " in line for line in lines), err
    assert "4 events read, 0 rejected, 2 matches" in lines[-1]
    # A task fails (a Parquet file whose footer reads but whose pages do not, so the driver
    # splits it and the task that reads it fails): one line, as the local engine reports it.
    bad = tmp_path / "bad.parquet"
    frame = pa.table({"event_type": ["A", "B"] * 50, "id": [1] * 100, "v": [1] * 100, "s": ["a"] * 100, "t": list(range(100))})
    pq.write_table(frame, bad)
    data = bytearray(bad.read_bytes())
    data[4:200] = b"\xff" * 196  # the first page header
    bad.write_bytes(bytes(data))
    status = main([*common, "-q", query, "-i", str(bad), "-o", str(tmp_path / "out2"), "--quiet"])
    err = capsys.readouterr().err
    assert status == 2, err
    assert err.count("\n") == 1 and err.startswith("ceql run: error: "), err
    assert "cannot read the Parquet file" in err and "Traceback" not in err and "py4j" not in err.lower()
    local = main(["run", "-d", str(tmp_path / "decl.core"), "-q", query, "-i", str(bad), "--quiet"])
    assert local == 2 and "cannot read the Parquet file" in capsys.readouterr().err


def test_explain_plan_takes_query_text_like_find(spark) -> None:
    text = "SELECT * WHERE A AS x; B AS y PARTITION BY [id] WITHIN 5 SECONDS"
    assert explain_plan(text, TEST_DECLARATION).startswith("partitioned")
    assert explain_plan(ceql.compile(text, SCHEMA)).startswith("partitioned")
    frame = spark.createDataFrame(pd.DataFrame({"event_type": ["A"], "id": [1], "t": [1]}))
    assert explain_plan("SELECT * WHERE A; B WITHIN 3 EVENTS", df=frame, time_column="t").startswith(
        "sharded"
    )
    with pytest.raises(ceql.CeqlError, match="needs the declaration"):
        explain_plan(text)


def _frame(spark, times, kind="long"):
    rows = list(zip(["A", "B", "A", "B"], [1, 1, 1, 1], [10, 11, 12, 13], times))
    return spark.createDataFrame(rows, f"event_type string, id long, seq long, t {kind}")


@pytest.mark.parametrize(
    "times, kind, shown",
    [
        ([1, 2, None, 4], "long", "is missing (null)"),
        (
            ["2024-01-01T00:00:01", "2024-01-01T00:00:02", "yesterday", "2024-01-01T00:00:04"],
            "string",
            "'yesterday'",
        ),
    ],
)
def test_a_missing_or_unreadable_time_names_the_column_and_the_row(spark, times, kind, shown) -> None:
    found = find(
        _frame(spark, times, kind),
        "SELECT * WHERE A; B PARTITION BY [id]",
        time_column="t",
        id_columns=["seq"],
    )
    with pytest.raises(Exception) as caught:
        found.collect()
    error = job_failure(caught.value)
    assert (
        "the time column 't' of a row of type A" in str(error)
        and '"seq":12' in str(error)
        and shown in str(error)
    ), str(error)


def test_a_time_column_of_another_type_is_refused_by_find(spark) -> None:
    frame = _frame(spark, [1.0, 2.0, 3.0, 4.0], "double")
    declared = "CREATE STREAM S { EVENT A { id:int, t:primary_time }, EVENT B { id:int, t:primary_time } }"
    with pytest.raises(ceql.CeqlError, match="primary_time 't' of A is a Spark double column"):
        find(frame, "SELECT * FROM S WHERE A; B PARTITION BY [id]", declared)


def _Stage(stage_id: int, done: int, active: int, total: int):  # noqa: N802 - as Spark's type
    """A stage as Spark's status tracker gives it (its own type: no start time in it)."""
    from pyspark.status import SparkStageInfo

    return SparkStageInfo(stage_id, 0, "collect at <stdin>:1", total, active, done, 0)


class _Tracker:
    def __init__(self, stages) -> None:
        self.stages = {s.stageId: s for s in stages}

    def getJobIdsForGroup(self, group):  # noqa: N802 - Spark's names
        return [0]

    def getJobInfo(self, job_id):  # noqa: N802
        return type("Job", (), {"stageIds": list(self.stages)})()

    def getStageInfo(self, stage_id):  # noqa: N802
        return self.stages.get(stage_id)

    def getActiveStageIds(self):  # noqa: N802
        return list(self.stages)


class _Context:
    def __init__(self, tracker) -> None:
        self.tracker = tracker

    def statusTracker(self):  # noqa: N802
        return self.tracker

    def setLogLevel(self, level) -> None:  # noqa: N802
        pass

    def setJobGroup(self, group, name) -> None:  # noqa: N802
        pass


def test_a_long_task_is_never_silent() -> None:
    """One task that runs for minutes finishes no stage and no tenth of one: the heartbeat says
    that it runs, every ``heartbeat`` seconds, at the CLI (the run's steps) and for a session."""
    import time

    from ceql.spark.progress import Progress

    lines: list[str] = []
    stage = _Stage(7, 0, 1, 1)
    cli = Progress(write=lines.append, heartbeat=0.05)
    cli.context = _Context(_Tracker([stage]))
    cli.step("finding and writing the matches")
    cli._poll()
    time.sleep(0.06)
    cli._poll()
    cli._poll()  # right after a line: quiet
    assert len(lines) == 1 and "finding and writing the matches: stage 7: 0/1 tasks done, 1 running" in lines[0]
    cli.context = _Context(_Tracker([]))  # between stages (the driver plans, workers start)
    time.sleep(0.06)
    cli._poll()
    assert len(lines) == 2 and lines[1].endswith("finding and writing the matches: preparing the next Spark stage")
    session_lines: list[str] = []
    watcher = Progress(prefix="ceql", write=session_lines.append, heartbeat=0.05, every_job=True)
    watcher.context = _Context(_Tracker([stage]))
    watcher._poll()  # stage 7 seen running from now
    assert session_lines == []
    time.sleep(0.06)
    watcher.context = _Context(_Tracker([stage, _Stage(8, 0, 2, 2)]))
    watcher._poll()
    # The stage that just started stays quiet (short jobs print nothing).
    assert session_lines == [session_lines[0]] and session_lines[0].startswith("ceql: [") and "collect: stage 7" in session_lines[0]


def test_the_jvm_start_is_never_silent() -> None:
    """The JVM's start has no stage to poll: ``ticking`` says it still runs every ``every``
    seconds while its block lasts, and nothing once it is over (or when it fails)."""
    import time

    from ceql.spark.progress import ticking

    lines: list[str] = []
    with ticking("starting Spark", lines.append, every=0.05):
        time.sleep(0.28)
    assert 3 <= len(lines) <= 6
    assert all(line.startswith("ceql run: [") and line.endswith("] starting Spark: still running") for line in lines)
    seen = len(lines)
    with pytest.raises(RuntimeError), ticking("starting Spark", lines.append, every=0.05):
        raise RuntimeError("no Java")
    time.sleep(0.15)
    assert len(lines) == seen


SQL_QUERY = (
    "SELECT * FROM ev MATCH_RECOGNIZE (PARTITION BY p ORDER BY t, seq MEASURES FIRST(A.seq) AS a, "
    "LAST(B.seq) AS b, COUNT(B.*) AS n ONE ROW PER MATCH PATTERN (A B+) DEFINE A AS A.k = 'a', "
    "B AS B.v >= PREV(B.v))"
)


def test_ceql_sql_on_spark_equals_local_and_fails_in_one_line(spark, tmp_path, capsys) -> None:
    """``ceql sql --engine spark`` (with ``--conf``) writes the local engine's rows; a runtime
    error in a task (division by zero) is one line, not a Python and a Java trace."""
    import random

    rng = random.Random(5)
    rows = [{"p": rng.randint(1, 3), "t": i // 2, "k": rng.choice("ab"), "v": rng.randint(0, 4), "seq": i} for i in range(80)]
    pa.csv.write_csv(pa.Table.from_pylist(rows), tmp_path / "ev.csv")
    common = ["sql", SQL_QUERY, "-i", str(tmp_path / "ev.csv")]
    assert main([*common, "-o", str(tmp_path / "local.jsonl")]) == 0
    spark_run = [*common, "--engine", "spark", "--conf", "spark.sql.shuffle.partitions=3"]
    assert main([*spark_run, "-o", str(tmp_path / "spark.jsonl")]) == 0
    local = sorted((tmp_path / "local.jsonl").read_text().splitlines())
    assert local and sorted((tmp_path / "spark.jsonl").read_text().splitlines()) == local
    capsys.readouterr()
    failing = SQL_QUERY.replace("B.v >= PREV(B.v)", "B.v / (B.v - B.v) > 0")
    status = main(["sql", failing, "-i", str(tmp_path / "ev.csv"), "--engine", "spark"])
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1 and "division by zero" in err, err
    assert "Traceback" not in err and "\tat " not in err
    assert main([*spark_run, "--conf", "novalue"]) == 2
    assert "--conf takes KEY=VALUE" in capsys.readouterr().err


def test_ceql_sql_on_spark_ticks_while_spark_starts(spark, tmp_path, capsys, monkeypatch) -> None:
    """``ceql sql --engine spark`` is not silent while the JVM starts: its ``ceql sql:`` ticker
    lines (printed by ``ceql.spark.session``, the one place that ticks) come while the session
    is being made (here a slow start: the shared session, late), and none after."""
    import functools
    import time

    from pyspark.sql import SparkSession

    import ceql.spark.progress as progress

    real_get = SparkSession.Builder.getOrCreate

    def slow_get(self):
        time.sleep(0.3)
        return real_get(self)

    monkeypatch.setattr(SparkSession.Builder, "getOrCreate", slow_get)
    monkeypatch.setattr(progress, "ticking", functools.partial(progress.ticking, every=0.05))
    pa.csv.write_csv(pa.Table.from_pylist([{"p": 1, "t": 1, "k": "a", "v": 1, "seq": 0}]), tmp_path / "ev.csv")
    capsys.readouterr()
    assert main(["sql", SQL_QUERY, "-i", str(tmp_path / "ev.csv"), "--engine", "spark", "-o", str(tmp_path / "o.jsonl")]) == 0
    lines = capsys.readouterr().err.splitlines()
    assert 3 <= len(lines) <= 8, lines
    assert all(line.startswith("ceql sql: [") and line.endswith("] starting Spark: still running") for line in lines)
