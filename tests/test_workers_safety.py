"""Workers are safe: a lazy run holds about one core's memory, ``ceql run`` with the default
workers stops with the one-core errors, and Ctrl-C or SIGTERM end a threaded run at once.

The shape is the issue's: ``A AS a; B+ AS b PARTITION BY [k] WITHIN 100000 NANOSECONDS`` over
events 2 ns apart on average, 50 keys: about 250 B events per key in a window, so a trigger has
astronomically many complex events, and only a lazy, bounded run can hand out the first ones.
Memory is measured as peak RSS in a subprocess (under an address-space limit, so that a run
that materializes its output fails there instead of exhausting the machine).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import ceql
from ceql.runtime import parallel

ROOT = Path(__file__).resolve().parent.parent
KEYED = (
    "CREATE STREAM S { " + ", ".join(f"EVENT {t} {{ id:int, k:int, t:primary_time }}" for t in "ABCD") + " }"
)
EXPLOSIVE = "SELECT * FROM S WHERE A AS a; B+ AS b PARTITION BY [k] WITHIN 100000 NANOSECONDS"


def explosive_events(count: int, seed: int = 6) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table(
        {
            "event_type": pa.array(np.array(["A", "B", "C", "D"])[rng.integers(0, 4, size=count)]),
            "id": pa.array(np.arange(count)),
            "k": pa.array(rng.integers(0, 50, size=count)),
            "t": pa.array(np.cumsum(rng.integers(0, 5, size=count))),
        }
    )


PEAK = """
import itertools, resource, sys, tracemalloc
sys.path.insert(0, {root!r})
import ceql
from ceql.runtime import parallel
from tests.test_workers_safety import EXPLOSIVE, KEYED, explosive_events
workers, count, take = {workers}, {count}, {take}
parallel.MIN_ROWS = 1000
query = ceql.compile(EXPLOSIVE, ceql.declare(KEYED))
table = explosive_events(count)
for w in (1, workers):  # compiled code and caches first, on a small input
    list(itertools.islice(query.run(table.slice(0, 20_000), workers=w), 1000))
resource.setrlimit(resource.RLIMIT_AS, ({limit}, {limit}))
tracemalloc.start()  # numpy's and Python's allocations (not Arrow's pool)
got = sum(1 for _ in itertools.islice(query.run(table, workers=workers), take))
print(got, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, tracemalloc.get_traced_memory()[1] // 1024)
"""


def _peaks(workers: int, count: int, take: int) -> tuple[int, int, int]:
    """(matches taken, peak RSS, peak of the traced allocations during the run; KiB) of a lazy
    run in a fresh process."""
    script = PEAK.format(root=str(ROOT), workers=workers, count=count, take=take, limit=6 * 2**30)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    got, rss, traced = done.stdout.split()
    return int(got), int(rss), int(traced)


def test_a_lazy_run_with_workers_holds_about_one_cores_memory() -> None:
    """Before: 2 workers materialized each batch's output (gigabytes before the first match)."""
    take = 2_000_000
    one = _peaks(1, 300_000, take)
    two = _peaks(2, 300_000, take)
    assert one[0] == two[0] == take
    assert two[1] <= 1.5 * one[1], (one, two)  # the process's peak RSS
    assert two[2] <= 1.5 * one[2], (one, two)  # the run's peak of numpy's and Python's memory


def test_the_lazy_merge_gives_the_one_core_matches_first() -> None:
    query = ceql.compile(EXPLOSIVE, ceql.declare(KEYED))
    table = explosive_events(150_000)
    take = 300_000
    one = [m.positions for m in _first(query.run(table, engine="compiled"), take)]
    runner = parallel.ParallelKernel(query.plan, 3, batch_size=50_000)
    assert [m.positions for m in _first(runner.matches(table), take)] == one


def _first(matches, count: int) -> list:
    import itertools

    return list(itertools.islice(matches, count))


# ------------------------------------------------------------------ ceql run


@pytest.fixture()
def explosive_input(tmp_path: Path) -> tuple[Path, Path]:
    import pyarrow.parquet as pq

    declaration = tmp_path / "s.ceql"
    declaration.write_text(KEYED)
    data = tmp_path / "e.parquet"
    pq.write_table(explosive_events(300_000), data)
    return declaration, data


def test_cli_default_workers_give_the_one_core_max_matches_error(explosive_input, tmp_path, monkeypatch, capsys) -> None:
    """Before: the default workers died with a raw numpy MemoryError."""
    from ceql.cli import main

    monkeypatch.setattr(parallel, "cores", lambda: 2)
    made = []
    original = parallel.ParallelKernel.__init__
    monkeypatch.setattr(parallel.ParallelKernel, "__init__", lambda self, *a, **k: made.append(a) or original(self, *a, **k))
    declaration, data = explosive_input
    errors = {}
    for workers in ("1", "0"):
        out = tmp_path / f"out{workers}.jsonl"
        args = ["run", "-d", str(declaration), "-q", EXPLOSIVE, "-i", str(data), "--quiet", "-o", str(out)]
        code = main(args + ["--workers", workers, "--max-matches", "200000"])
        errors[workers] = (code, capsys.readouterr().err)
    assert len(made) == 1  # the default run used the workers
    assert errors["0"] == errors["1"]
    assert errors["1"][0] != 0 and "more than 200,000 matches" in errors["1"][1]


def _written(folder: Path) -> int:
    """Bytes of output written so far (``ceql run`` writes a temporary file, then renames it;
    an interrupted run removes it)."""
    total = 0
    for path in folder.glob(".out.jsonl*"):
        try:
            total += path.stat().st_size
        except OSError:  # removed meanwhile
            continue
    return total


@pytest.mark.parametrize("number", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_ends_a_threaded_run_within_a_second(explosive_input, tmp_path, number) -> None:
    declaration, data = explosive_input
    out = tmp_path / "out.jsonl"
    command = [sys.executable, "-m", "ceql", "run", "-d", str(declaration), "-q", EXPLOSIVE, "-i", str(data)]
    command += ["--workers", "2", "--max-matches", "0", "-o", str(out), "--quiet"]
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        deadline = time.monotonic() + 120
        while _written(tmp_path) < 1 << 20:  # matches are coming: the workers are busy
            assert process.poll() is None, process.communicate()[1][-2000:]
            assert time.monotonic() < deadline, "the run did not start"
            time.sleep(0.05)
        assert process.poll() is None
        sent = time.monotonic()
        process.send_signal(number)
        while _written(tmp_path):  # the run stopped and removed its temporary output
            assert time.monotonic() - sent < 10
            time.sleep(0.005)
        took = time.monotonic() - sent
        process.wait(timeout=30)  # then the interpreter's own shutdown (as long on one core)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode in (130, 128 + number), process.returncode
    print(f"signal {number}: {took:.3f} s")
    assert took < 1.0, f"{took:.2f} s after the signal"


@pytest.mark.parametrize("fault", ["late", "missing"])
def test_cli_default_workers_give_the_one_core_bad_row_error(tmp_path, monkeypatch, capsys, fault) -> None:
    """A time out of order, or a missing time, in a later chunk: the default workers stop with
    the one-core error (status, row and reason), after the same matches."""
    import pyarrow.parquet as pq

    from ceql.cli import main

    monkeypatch.setattr(parallel, "cores", lambda: 2)
    monkeypatch.setattr(parallel, "CHUNK_MIN_ROWS", 2000)
    made = []
    original = parallel.ParallelKernel.__init__
    monkeypatch.setattr(parallel.ParallelKernel, "__init__", lambda self, *a, **k: made.append(a) or original(self, *a, **k))
    declaration = tmp_path / "s.ceql"
    declaration.write_text(KEYED)
    table = explosive_events(30_000)
    times = table.column("t").to_pylist()
    times[21_000] = None if fault == "missing" else times[20_000] - 1
    data = tmp_path / "e.parquet"
    pq.write_table(table.set_column(3, "t", pa.array(times, pa.int64())), data, row_group_size=5000)
    query = "SELECT * FROM S WHERE A ; B ; C PARTITION BY [k] WITHIN 100 NANOSECONDS"
    results = {}
    for workers in ("1", "0"):
        out = tmp_path / f"out{workers}.jsonl"
        args = ["run", "-d", str(declaration), "-q", query, "-i", str(data), "--quiet", "-o", str(out)]
        code = main(args + ["--workers", workers, "--evaluator", "compiled"])
        results[workers] = (code, capsys.readouterr().err, out.read_text() if out.exists() else None)
    assert len(made) == 1  # the default run used the workers
    assert results["0"] == results["1"]
    assert results["1"][0] != 0 and " 21001: " in results["1"][1], results["1"][1]  # (rows and lines 1-based)


def test_ctrl_c_while_gathering_a_batch_ends_the_wait() -> None:
    """``output="arrow"`` waits for a batch's jobs: Ctrl-C there (the wait raises
    KeyboardInterrupt) ends it at once rather than after the other jobs."""
    import threading

    interrupted = parallel._failed(KeyboardInterrupt())
    never = parallel._Result()  # a job that does not end
    raised: list = []

    def gather() -> None:
        try:
            parallel._gather([interrupted, never])
        except BaseException as error:  # noqa: BLE001 - what the wait raised
            raised.append(error)

    thread = threading.Thread(target=gather, daemon=True)
    thread.start()
    thread.join(timeout=5)
    assert raised and isinstance(raised[0], KeyboardInterrupt)
