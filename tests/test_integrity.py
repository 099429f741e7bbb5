"""Regression tests of issue 27: exact at the int64 and double edges on every path, an empty
window value, special output files, bounds that fire before memory runs out, and clear errors
instead of tracebacks. (Saved states: tests/test_state.py; generated cases: tests/test_fuzz.py.)"""

from __future__ import annotations

import itertools
import json
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ceql
from ceql.runtime import kernel
from tests.support.cli import run_cli

ROOT = Path(__file__).resolve().parents[1]
I64 = 1 << 63
EDGE = ceql.declare("CREATE STREAM S { EVENT A { x:int, d:double }, EVENT B { x:int, d:double } }")
INT_EDGES = [-I64, -I64 + 1, -I64 + 2, -(2**62) - 1, -(2**62), -1, 0, 1, 2**62, 2**62 + 1, I64 - 2, I64 - 1]
DOUBLE_EDGES = [
    -math.inf, -1e300, -(2.0**63), -(2.0**62), -1e20, -0.5, -0.0, 0.0, 0.5, 1.0, 1e20, 2.0**53 + 2,
    2.0**62, 2.0**63, 1e300, math.inf, math.nan,
]  # fmt: skip


def engines(text: str, events: list[dict], schema=EDGE) -> dict[str, list]:
    """The matches of every path that evaluates the query: the reference, the Python evaluator,
    the compiled kernel (when it runs the query), Arrow output, and push with a state saved and
    reloaded half-way."""
    query = ceql.compile(text, schema)
    out = {"reference": sorted(m.positions for m in ceql.reference.run(query.checked, events))}
    out["python"] = sorted(m.positions for m in query.run(events, engine="python"))
    if kernel.unsupported(query.plan) is None:
        out["compiled"] = sorted(m.positions for m in query.run(events, engine="compiled"))
        table = query.run(events, output="arrow", engine="compiled")
        out["arrow"] = sorted(tuple(p) for p in table.column("positions").to_pylist())
    for engine in ("python", "compiled"):
        half = len(events) // 2
        first = query.evaluator(engine=engine)
        found = first.push_batch(events[:half])
        second = query.evaluator(engine=engine)
        second.import_state(first.export_state())
        found += second.push_batch(events[half:])
        out[f"{engine}+state"] = sorted(m.positions for m in found)
    return out


def assert_all_agree(text: str, events: list[dict], schema=EDGE) -> list:
    found = engines(text, events, schema)
    expected = found["reference"]
    for name, matches in found.items():
        assert matches == expected, f"{name} differs from the reference on {text}: {matches} != {expected}"
    return expected


# --------------------------------------------------------------------------- int64 and double edges


def test_int64_edge_window_values_on_every_path() -> None:
    # A measure of -2**63 was the kernel's "missing" marker: the match was lost.
    assert assert_all_agree(
        "SELECT * FROM S WHERE A ; B WITHIN 2 [x]",
        [{"event_type": "A", "x": -I64, "d": 0.0}, {"event_type": "B", "x": -I64 + 1, "d": 0.0}],
    ) == [(0, 1)]
    # Values beyond +-2**62 raised EventError on the kernel.
    assert assert_all_agree(
        "SELECT * FROM S WHERE A ; B WITHIN 2 [x]",
        [{"event_type": "A", "x": I64 - 2, "d": 0.0}, {"event_type": "B", "x": I64 - 1, "d": 0.0}],
    ) == [(0, 1)]
    # The difference of the extremes does not fit in int64: exact, not wrapped around.
    for first, last, expected in [(-I64, I64 - 1, []), (I64 - 1, -I64, [(0, 1)])]:
        events = [{"event_type": "A", "x": first, "d": 0.0}, {"event_type": "B", "x": last, "d": 0.0}]
        assert assert_all_agree("SELECT * FROM S WHERE A ; B WITHIN 5 [x]", events) == expected


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    values=st.lists(st.sampled_from(INT_EDGES), min_size=2, max_size=7),
    types=st.lists(st.sampled_from("AB"), min_size=7, max_size=7),
    window=st.sampled_from([1, 2, 3, 2**32, 2**61 - 1, 2**62, I64 - 1]),
    shape=st.sampled_from(["A ; B", "A+ ; B", "A ; B+", "(A OR B)+"]),
)
def test_int64_edges_generated(values, types, window, shape) -> None:
    events = [{"event_type": t, "x": v, "d": 0.0} for v, t in zip(values, types)]
    assert_all_agree(f"SELECT * FROM S WHERE {shape} WITHIN {window} [x]", events)


def test_double_window_values_are_exact() -> None:
    # |d| >= 2**62: every match was dropped (d - window rounds back to d).
    for d in (1e20, -1e20, 2.0**62, -1e300):
        events = [{"event_type": "A", "x": 0, "d": d}, {"event_type": "B", "x": 0, "d": d}]
        assert assert_all_agree("SELECT * FROM S WHERE A ; B WITHIN 1 [d]", events) == [(0, 1)]
    # The exact difference is 2**53 + 1.5 < 2**53 + 2, though the rounded one equals it.
    events = [{"event_type": "A", "x": 0, "d": 0.5}, {"event_type": "B", "x": 0, "d": 2.0**53 + 2}]
    assert assert_all_agree(f"SELECT * FROM S WHERE A ; B WITHIN {2**53 + 2} [d]", events) == [(0, 1)]


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    values=st.lists(st.sampled_from(DOUBLE_EDGES), min_size=2, max_size=6),
    types=st.lists(st.sampled_from("AB"), min_size=6, max_size=6),
    window=st.sampled_from([1, 2, 2**53 + 2, 2**62, I64 - 1]),
    shape=st.sampled_from(["A ; B", "A+ ; B", "(A OR B)+"]),
)
def test_double_edges_generated(values, types, window, shape) -> None:
    events = [{"event_type": t, "x": 0, "d": v} for v, t in zip(values, types)]
    assert_all_agree(f"SELECT * FROM S WHERE {shape} WITHIN {window} [d]", events)


@pytest.mark.parametrize(
    "condition, value, expected",
    [
        ("d IN {0}", -0.0, [(0,)]),  # as d = 0
        ("d = 0", -0.0, [(0,)]),
        ("d IN {-0.0}", 0.0, [(0,)]),
        ("d IN {0, 1}", -0.0, [(0,)]),
        ("d NOT IN {0}", -0.0, []),
        ("d NOT IN {0}", math.nan, []),  # NaN is missing: NOT IN is false too
        ("d NOT IN {1..2}", math.nan, []),
        ("d IN {0}", math.nan, []),
        ("NOT (d IN {0})", math.nan, [(0,)]),
        ("d NOT IN {0}", None, []),
    ],
)
def test_in_with_signed_zero_and_nan_on_every_path(condition, value, expected) -> None:
    events = [{"event_type": "A", "x": 0, "d": value}]
    assert assert_all_agree(f"SELECT * FROM S WHERE A FILTER A[{condition}]", events) == expected


def test_a_nan_measure_is_reported_as_missing() -> None:
    """NaN is a missing value, and a missing value is reported as None (the engine said nan;
    found by the differential fuzz)."""
    schema = ceql.declare("CREATE STREAM S { EVENT A { d:double }, EVENT B { d:double } }")
    events = [{"event_type": "A", "d": 1.0}, {"event_type": "A", "d": math.nan}, {"event_type": "B", "d": 2.0}]
    query = ceql.compile("SELECT SUM(a.d) AS s, FIRST(a).d AS f, LAST(a).d AS l, a.d AS every WHERE A+ AS a ; B", schema)
    engine = sorted((m.positions, dict(m.measures)) for m in query.run(events))
    assert engine == sorted((m.positions, dict(m.measures)) for m in ceql.reference.run(query.checked, events))
    assert engine[0] == ((0, 1, 2), {"every": (1.0, None), "f": 1.0, "l": None, "s": 1.0})
    assert query.run(events, output="arrow").column("l").to_pylist() == [None, 1.0, None]


# --------------------------------------------------------------------------- empty window values


@pytest.mark.parametrize("attribute", ["x", "d"])
def test_an_empty_window_value_puts_no_complex_event_in_the_window(attribute) -> None:
    """A missing value (null, NaN) in the window attribute: a complex event whose first or last
    event has it is in no window (a comparison with a missing value is false); as a middle
    event it does not matter. It was a TypeError traceback on every engine."""
    rows = [(1, 1.0), (None, None), (2, 2.0), (3, 3.0), (None, math.nan)]
    events = [{"event_type": t, "x": x, "d": d} for t, (x, d) in zip("ABABB", rows)]
    assert assert_all_agree(f"SELECT * FROM S WHERE A ; B WITHIN 5 [{attribute}]", events) == [(0, 3), (2, 3)]
    assert assert_all_agree(f"SELECT * FROM S WHERE A ; A ; B WITHIN 5 [{attribute}]", events) == [(0, 2, 3)]
    assert assert_all_agree(f"SELECT * FROM S WHERE A ; B ; A ; B WITHIN 5 [{attribute}]", events) == [(0, 1, 2, 3)]


@pytest.mark.parametrize("policy", ["fail", "skip", "dead-letter"])
def test_an_empty_window_value_in_csv_under_every_policy(tmp_path, policy) -> None:
    (tmp_path / "decl.core").write_text("CREATE STREAM S { EVENT A { d:double, x:int }, EVENT B { d:double, x:int } }")
    (tmp_path / "ev.csv").write_text("event_type,d,x\nA,1.0,1\nA,,2\nB,,\nB,3.0,3\n")
    for attribute, evaluator in itertools.product("dx", ("python", "compiled")):
        args = ["run", "-d", "decl.core", "-q", f"SELECT * FROM S WHERE A ; B WITHIN 5 [{attribute}]", "-i", "ev.csv"]
        args += ["--on-error", policy, "--evaluator", evaluator, "--quiet"]
        if policy == "dead-letter":
            args += ["--dead-letter", "dead.jsonl", "--overwrite"]
        result = run_cli(*args, cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        expected = [(3, [0, 3])] if attribute == "d" else [(3, [0, 3]), (3, [1, 3])]  # row 1 has an x
        assert [(m["trigger"], m["positions"]) for m in map(json.loads, result.stdout.splitlines())] == expected


# --------------------------------------------------------------------------- special output files

DECLARATION = "CREATE STREAM S { EVENT A { d:double, x:int }, EVENT B { d:double, x:int } }"
EVENTS_CSV = "event_type,d,x\nA,1.0,1\nB,2.0,2\n"


def _run_cli(folder: Path, *args: str, stdin=None, **options) -> subprocess.CompletedProcess:
    """``ceql run`` of A ; B in ``folder``: in this process (tests.support.cli), or in a child
    where the test gives it its own standard input or output (what only a process has)."""
    (folder / "decl.core").write_text(DECLARATION)
    command = ["run", "-d", "decl.core", "-q", "SELECT * FROM S WHERE A ; B", *args]
    if stdin is None and not options:
        return run_cli(*command, cwd=folder)
    streams = options or {"capture_output": True}
    return subprocess.run([sys.executable, "-m", "ceql", *command], cwd=folder, text=True, timeout=300, stdin=stdin, **streams)


def _special_files(folder: Path) -> dict[str, Path]:
    import os
    import socket

    fifo = folder / "fifo"
    os.mkfifo(fifo)
    # A reader, so that a writer that wrongly opens the FIFO (in this process) fails the test
    # instead of waiting for one forever.
    os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    null_link = folder / "null-link"
    null_link.symlink_to("/dev/null")
    fifo_link = folder / "fifo-link"
    fifo_link.symlink_to(fifo)
    sock = folder / "sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(sock))
    server.close()
    return {"FIFO": fifo, "character device": null_link, "FIFO ": fifo_link, "socket": sock}


@pytest.mark.parametrize("overwrite", [False, True])
def test_special_files_are_never_replaced(tmp_path, overwrite) -> None:
    (tmp_path / "ev.csv").write_text(EVENTS_CSV)
    for what, path in _special_files(tmp_path).items():
        for option in ("-o", "--dead-letter"):
            args = ["-i", "ev.csv", option, path.name] + (["--overwrite"] if overwrite else [])
            if option == "--dead-letter":
                args += ["--on-error", "dead-letter", "-o", "out.jsonl"]
            result = _run_cli(tmp_path, *args)
            assert result.returncode == 2, result.stderr
            assert f"is a {what.strip()}" in result.stderr and "--overwrite" not in result.stderr, result.stderr
            assert "Traceback" not in result.stderr
        assert path.is_symlink() or not path.is_file()  # still what it was
    assert (tmp_path / "null-link").readlink() == Path("/dev/null")
    assert not list(tmp_path.glob("*.ceql-tmp"))


def test_the_null_device_is_refused_without_suggesting_overwrite(tmp_path) -> None:
    (tmp_path / "ev.csv").write_text(EVENTS_CSV)
    result = _run_cli(tmp_path, "-i", "ev.csv", "-o", "/dev/null")  # (never with --overwrite here)
    assert result.returncode == 2
    assert "is a character device" in result.stderr and "--overwrite" not in result.stderr, result.stderr


def test_a_link_to_the_own_standard_output_is_refused(tmp_path) -> None:
    (tmp_path / "ev.csv").write_text(EVENTS_CSV)
    (tmp_path / "my-stdout").symlink_to("/proc/self/fd/1")  # standard output is a regular file here
    with open(tmp_path / "captured", "w") as captured:
        result = _run_cli(tmp_path, "-i", "ev.csv", "-o", "my-stdout", "--overwrite", stdout=captured, stderr=subprocess.PIPE)
    assert result.returncode == 2 and "standard output" in result.stderr, result.stderr
    assert (tmp_path / "my-stdout").is_symlink()


def test_an_input_read_from_standard_input_is_not_replaced(tmp_path) -> None:
    events = tmp_path / "in.csv"
    events.write_text(EVENTS_CSV)
    with open(events) as stdin:
        result = _run_cli(tmp_path, "-i", "-", "--input-format", "csv", "-o", "in.csv", "--overwrite", stdin=stdin)
    assert result.returncode == 2 and "standard input" in result.stderr, result.stderr
    assert events.read_text() == EVENTS_CSV


@pytest.mark.parametrize("signal_name", ["SIGINT", "SIGTERM", "SIGHUP"])
def test_every_signal_that_ends_a_run_removes_its_temporary_output(tmp_path, signal_name) -> None:
    import signal
    import time

    (tmp_path / "decl.core").write_text(DECLARATION)
    (tmp_path / "out.jsonl").write_text("previous result\n")
    process = subprocess.Popen(
        [sys.executable, "-m", "ceql", "run", "-d", "decl.core", "-q", "SELECT * FROM S WHERE A ; B"]
        + ["-i", "-", "--input-format", "csv", "-o", "out.jsonl", "--overwrite"],
        cwd=tmp_path,
        stdin=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        process.stdin.write(EVENTS_CSV)
        process.stdin.flush()
        deadline = time.monotonic() + 120
        while not list(tmp_path.glob("*.ceql-tmp")):
            assert time.monotonic() < deadline and process.poll() is None, "the run did not start"
            time.sleep(0.1)
        process.send_signal(getattr(signal, signal_name))
        status = process.wait(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
    assert status != 0
    assert "Traceback" not in process.stderr.read()
    assert not list(tmp_path.glob("*.ceql-tmp"))
    assert (tmp_path / "out.jsonl").read_text() == "previous result\n"


# --------------------------------------------------------------------------- bounds before memory


@pytest.mark.parametrize("operands, window", [(14, ""), (30, " WITHIN 3 EVENTS"), (16, " WITHIN 2 EVENTS")])
def test_the_determinizer_bound_fires_while_it_builds_a_product(operands, window) -> None:
    """(In a child process capped at 1.5 GB: without the bound, this takes gigabytes.)"""
    text = "SELECT * FROM S WHERE " + " ALL ".join(["A"] * operands) + window
    program = (
        "import resource, sys\n"
        "resource.setrlimit(resource.RLIMIT_AS, (3 << 29, 3 << 29))\n"
        "import ceql\n"
        "from ceql.compile.determinize import AutomatonTooLarge\n"
        "schema = ceql.declare('CREATE STREAM S { EVENT A { x:int, d:double }, EVENT B { x:int, d:double } }')\n"
        f"query = ceql.compile({text!r}, schema)\n"
        "try:\n"
        "    list(query.run([{'event_type': 'A', 'x': i, 'd': 0.0} for i in range(5)], engine='python'))\n"
        "except AutomatonTooLarge as error:\n"
        "    print(error)\n"
    )
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]  # was a MemoryError after gigabytes
    assert "grew past its bounds" in result.stdout and f"ALL of {operands} operands" in result.stdout


def _unending(chunk: int = 20_000):
    """A then B forever: ``A ; B+ ; C`` never matches, and every B extends every partial match."""
    import pyarrow as pa

    start = 0
    while True:
        types = ["A" if (start + i) % 100 == 0 else "B" for i in range(chunk)]
        yield pa.table({"event_type": types, "x": list(range(start, start + chunk))})
        start += chunk


@pytest.mark.parametrize("engine", ["python", "compiled"])
def test_stored_partial_matches_are_bounded(engine) -> None:
    """``A ; B+ ; C`` without a window over an unending stream stops with the bound's error
    (max_nodes), never MemoryError."""
    schema = ceql.declare("CREATE STREAM S { EVENT A { x:int }, EVENT B { x:int }, EVENT C { x:int } }")
    evaluator = ceql.compile("SELECT * FROM S WHERE A ; B+ ; C", schema).evaluator(engine=engine, max_nodes=200_000)
    with pytest.raises(ceql.errors.LimitError, match="max_nodes") as caught:
        for table in _unending():
            assert not evaluator.push_batch(table)
            assert evaluator.position < 2_000_000, "the bound did not fire"
    assert caught.value.limit == "max_nodes" and caught.value.value == 200_000
    # A window expires partial matches: the same stream runs within the same bound.
    windowed = ceql.compile("SELECT * FROM S WHERE A ; B+ ; C WITHIN 50 EVENTS", schema).evaluator(engine=engine, max_nodes=200_000)
    for table, _ in zip(_unending(), range(30)):
        assert not windowed.push_batch(table)


def test_the_node_bound_on_the_command_line(tmp_path) -> None:
    (tmp_path / "decl.core").write_text("CREATE STREAM S { EVENT A { x:int }, EVENT B { x:int }, EVENT C { x:int } }")
    rows = "".join(f"{'A' if i % 100 == 0 else 'B'},{i}\n" for i in range(300_000))
    (tmp_path / "ev.csv").write_text("event_type,x\n" + rows)
    for evaluator in ("python", "compiled"):
        result = run_cli(
            "run", "-d", "decl.core", "-q", "SELECT * FROM S WHERE A ; B+ ; C", "-i", "ev.csv", "-o", "out.jsonl",
            "--max-nodes", "100000", "--evaluator", evaluator, cwd=tmp_path,
        )  # fmt: skip
        assert result.returncode == 2, result.stderr
        assert "max_nodes" in result.stderr and "--max-nodes" in result.stderr and "Traceback" not in result.stderr
        assert not (tmp_path / "out.jsonl").exists()


# --------------------------------------------------------------------------- clear errors, no tracebacks


@pytest.mark.parametrize("policy", ["fail", "skip", "dead-letter"])
def test_a_lone_surrogate_escape_in_json_is_a_bad_row(tmp_path, policy) -> None:
    lines = [
        '{"event_type": "A", "d": 1.0, "x": 1}',
        '{"event_type": "B", "d": "\\ud800", "x": 2}',  # valid JSON, but not a character
        '{"event_type": "\\udc00", "x": 3}',
        '{"event_type": "B", "d": 2.0, "x": 4, "\\ud83d\\ude00": 5}',  # a pair is a character
    ]
    (tmp_path / "ev.jsonl").write_text("\n".join(lines) + "\n")
    args = ["-i", "ev.jsonl", "--on-error", policy, "--quiet"]
    if policy == "dead-letter":
        args += ["--dead-letter", "dead.jsonl"]
    result = _run_cli(tmp_path, *args)
    assert "Traceback" not in result.stderr
    if policy == "fail":
        assert result.returncode == 2 and "line 2" in result.stderr and "surrogate" in result.stderr
        return
    assert result.returncode == 0, result.stderr
    assert [json.loads(line)["positions"] for line in result.stdout.splitlines()] == [[0, 1]]
    if policy == "dead-letter":
        dead = [json.loads(line) for line in (tmp_path / "dead.jsonl").read_text().splitlines()]
        assert [d["line"] for d in dead] == [2, 3] and all("surrogate" in d["reason"] for d in dead)


def test_a_lone_surrogate_in_python_events_is_an_event_error() -> None:
    query = ceql.compile("SELECT * FROM S WHERE A", ceql.declare("CREATE STREAM S { EVENT A { s:string } }"))
    for events in ([{"event_type": "\ud800"}], [{"event_type": "A", "s": "x"}, {"event_type": "A", "s": "\udfff"}]):
        with pytest.raises(ceql.EventError, match="lone surrogate") as caught:
            list(ceql.compile("SELECT * FROM S WHERE A FILTER A[s = 'x']", query.checked.schema).run(events))
        assert caught.value.row == len(events) - 1


def test_a_lone_surrogate_in_a_query_is_a_syntax_error(tmp_path) -> None:
    """A string literal with a lone surrogate was a UnicodeEncodeError traceback where the
    predicate was built (the API, and the command line given bytes that are not UTF-8)."""
    schema = ceql.declare("CREATE STREAM S { EVENT A { s:string } }")
    for text, lone in (
        ("SELECT * FROM S WHERE A FILTER A[s = '\ud800']", "\ud800"),
        ("SELECT * FROM S WHERE A FILTER A[s IN {'a', 'b\udfff'}]", "\udfff"),
    ):
        with pytest.raises(ceql.QuerySyntaxError, match="lone surrogate") as caught:
            ceql.compile(text, schema)
        assert (caught.value.line, caught.value.column) == (1, text.index(lone) + 1)
    (tmp_path / "decl.core").write_text("CREATE STREAM S { EVENT A { s:string } }")
    (tmp_path / "ev.csv").write_text("event_type,s\nA,x\n")
    (tmp_path / "bad.ceql").write_bytes(b"SELECT * FROM S\nWHERE A FILTER A[s = '\xff']")
    (tmp_path / "bad.core").write_bytes(b"CREATE STREAM S { EVENT A { s:string } }\n\xff")
    for args in (
        [b"-d", b"decl.core", b"-q", b"SELECT * FROM S WHERE A FILTER A[s = '\xed\xa0\x80']"],
        [b"-d", b"decl.core", b"-q", b"bad.ceql"],
        [b"-d", b"bad.core", b"-q", b"SELECT * FROM S WHERE A"],
    ):
        result = subprocess.run(
            [sys.executable.encode(), b"-m", b"ceql", b"run", *args, b"-i", b"ev.csv"],
            cwd=tmp_path,
            capture_output=True,
            timeout=300,
        )
        err = result.stderr.decode("utf-8", "backslashreplace")
        assert result.returncode == 2 and "error:" in err and "Traceback" not in err, err
        assert "lone surrogate" in err or "line 2: byte" in err


def test_measures_beyond_int64_in_arrow_and_parquet_are_one_message(tmp_path) -> None:
    events = [{"event_type": "A", "x": I64 - 1, "d": 0.0}, {"event_type": "A", "x": I64 - 1, "d": 0.0}]
    for text in ("SELECT SUM(a.x) AS t WHERE A+ AS a", "SELECT a.x * 2 AS t WHERE A AS a"):
        query = ceql.compile(text, EDGE)
        assert max(m.measures["t"] for m in query.run(events)) >= I64  # exact as Python ints
        for engine in ("python", "compiled"):
            with pytest.raises(ceql.errors.CeqlError, match="measure t: .* does not fit its int64 column in the output"):
                query.run(events, output="arrow", engine=engine)
    (tmp_path / "ev.csv").write_text(f"event_type,d,x\nA,1.0,{I64 - 1}\nA,2.0,{I64 - 1}\n")
    (tmp_path / "decl.core").write_text(DECLARATION)
    for out in ("out.parquet", "out.jsonl"):
        result = run_cli("run", "-d", "decl.core", "-q", "SELECT SUM(a.x) AS t WHERE A+ AS a", "-i", "ev.csv", "-o", out, cwd=tmp_path)
        assert result.returncode == 2 and "measure t" in result.stderr and "Traceback" not in result.stderr
        assert not (tmp_path / out).exists() and not list(tmp_path.glob("*.ceql-tmp"))


def test_a_double_partition_key_beyond_int64_in_arrow_output() -> None:
    events = [{"event_type": "A", "x": 1, "d": 2.0**63}, {"event_type": "B", "x": 2, "d": 2.0**63}]
    query = ceql.compile("SELECT * FROM S WHERE A ; B PARTITION BY [d]", EDGE)
    for engine in ("python", "compiled"):
        table = query.run(events, output="arrow", engine=engine)
        assert table.column("partition").to_pylist() == [{"d": 2.0**63}]
        assert [m.partition for m in query.run(events, engine=engine)] == [(2.0**63,)]


def test_a_full_disk_is_one_message(tmp_path, monkeypatch) -> None:
    """ENOSPC while writing (JSON Lines, Parquet): exit 2, the cause, no temporary file left."""
    import contextlib
    import errno
    import io

    import pyarrow.parquet as pq

    from ceql.cli import main
    from ceql.io import writers

    (tmp_path / "decl.core").write_text(DECLARATION)
    (tmp_path / "ev.csv").write_text(EVENTS_CSV)

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.chdir(tmp_path)
    for output, target in (("out.jsonl", (writers.JsonLinesWriter, "write")), ("out.parquet", (pq.ParquetWriter, "write_table"))):
        with monkeypatch.context() as patch:
            patch.setattr(*target, full)
            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                status = main(["run", "-d", "decl.core", "-q", "SELECT * FROM S WHERE A ; B", "-i", "ev.csv", "-o", output])
        assert status == 2 and "No space left on device" in err.getvalue() and "full" in err.getvalue()
        assert not (tmp_path / output).exists() and not list(tmp_path.glob("*.ceql-tmp"))


def test_a_real_full_disk(tmp_path) -> None:
    """The same on a small tmpfs (needs the right to mount; skipped elsewhere)."""
    small = tmp_path / "small"
    small.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(small)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        rows = "".join(f"A,1.0,{i}\n" for i in range(20_000))
        (tmp_path / "many.csv").write_text("event_type,d,x\n" + rows)
        (tmp_path / "decl.core").write_text(DECLARATION)
        for output in ("out.jsonl", "out.parquet"):
            result = subprocess.run(
                [sys.executable, "-m", "ceql", "run", "-d", "decl.core", "-q", "SELECT * FROM S WHERE A"]
                + ["-i", "many.csv", "-o", str(small / output)],
                cwd=tmp_path,
                capture_output=True,
                text=True,
                timeout=300,
            )
            assert result.returncode == 2 and "No space left on device" in result.stderr, result.stderr
            assert "Traceback" not in result.stderr and not list(small.iterdir())
    finally:
        subprocess.run(["umount", str(small)], capture_output=True)


def test_a_header_of_a_million_columns_is_refused_before_allocating(tmp_path) -> None:
    header = "event_type,d,x," + ",".join(f"c{i}" for i in range(1_000_000))
    (tmp_path / "wide.csv").write_text(header + "\nA,1.0,1" + "," * 1_000_000 + "\n")
    for source in ("file", "stdin"):
        with open(tmp_path / "wide.csv") as stdin:
            args = ["-i", "wide.csv"] if source == "file" else ["-i", "-"]
            command = [sys.executable, "-c", "import resource, sys; resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30)); "
                       "from ceql.cli import main; sys.exit(main(sys.argv[1:]))", "run", "-d", "decl.core",
                       "-q", "SELECT * FROM S WHERE A", *args]  # fmt: skip
            (tmp_path / "decl.core").write_text(DECLARATION)
            result = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=300, stdin=stdin)
        assert result.returncode == 2, result.stderr
        assert "1,000,003 columns; at most 10,000" in result.stderr and "Traceback" not in result.stderr


def test_the_command_line_accepts_iso_times_at_the_edge_of_the_range(tmp_path) -> None:
    (tmp_path / "decl.core").write_text("CREATE STREAM S { EVENT A { t:primary_time }, EVENT B { t:primary_time } }")
    edge = [("A", "2262-04-11T23:47:16Z"), ("B", "2262-04-11T23:47:16.854775807Z"), ("A", "1677-09-21T00:12:43.145224192Z")]
    (tmp_path / "ev.csv").write_text("event_type,t\n" + "".join(f"{t},{v}\n" for t, v in edge[:2]))
    api = ceql.compile("SELECT * FROM S WHERE A ; B", ceql.declare((tmp_path / "decl.core").read_text()))
    assert [m.positions for m in api.run([{"event_type": t, "t": v} for t, v in edge[:2]])] == [(0, 1)]
    result = subprocess.run(
        [sys.executable, "-m", "ceql", "run", "-d", "decl.core", "-q", "SELECT * FROM S WHERE A ; B", "-i", "ev.csv"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert [json.loads(line)["positions"] for line in result.stdout.splitlines()] == [[0, 1]]


# --------------------------------------------------------------------------- Spark

SPARK_DECLARATION = "CREATE STREAM S { EVENT A { id:int, t:primary_time, d:double }, EVENT B { id:int, t:primary_time, d:double } }"


def _spark_positions(spark, text: str, rows: list[tuple], **options) -> list:
    from ceql.spark import find

    frame = spark.createDataFrame(rows, "event_type string, id long, t long, d double")
    return sorted(tuple(r["positions"]) for r in find(frame, text, SPARK_DECLARATION, positions=True, **options).collect())


def _reference_positions(text: str, rows: list[tuple]) -> list:
    events = [dict(zip(("event_type", "id", "t", "d"), row)) for row in rows]
    checked = ceql.check(text, ceql.declare(SPARK_DECLARATION))
    return sorted(m.positions for m in ceql.reference.run(checked, events))


def test_spark_at_the_int64_and_double_edges(spark) -> None:
    # Times at both ends of int64: the shard split overflowed a long.
    rows = [("A", 1, -I64 + 1, 0.0), ("B", 2, -I64 + 2, 0.0), ("A", 3, I64 - 3, 0.0), ("B", 4, I64 - 1, 0.0)]
    for text in ("SELECT * FROM S WHERE A ; B WITHIN 5 NANOSECONDS", "SELECT * FROM S WHERE A ; B WITHIN 5 [t]"):
        assert _spark_positions(spark, text, rows, shards=4) == _reference_positions(text, rows) == [(0, 1), (2, 3)]
    rows = [("A", 1, 1, -0.0), ("A", 2, 2, math.nan), ("B", 3, 3, None), ("B", 4, 4, 1.0), ("A", 5, 5, 1e20), ("B", 6, 6, 1e20)]
    for text in (
        "SELECT * FROM S WHERE A FILTER A[d IN {0}]",
        "SELECT * FROM S WHERE A FILTER A[d NOT IN {0}]",
        "SELECT * FROM S WHERE A ; B WITHIN 5 [d]",  # an empty window value, and |d| >= 2**62
        "SELECT * FROM S WHERE A ; B WITHIN 1 [d]",
    ):
        assert _spark_positions(spark, text, rows) == _reference_positions(text, rows), text


def test_spark_names_the_bad_event(spark) -> None:
    from pyspark.errors import PythonException

    rows = [("A", 1, 1, 0.0), ("Q", 2, 2, 0.0), ("B", 4, 4, 0.0)]
    with pytest.raises(PythonException, match=r"unknown event type 'Q' \(the event with event_type='Q'"):
        # (named by the columns the tasks read: Spark ships only those, issue 23)
        _spark_positions(spark, "SELECT * FROM S WHERE A ; B", rows)
    rows = [("A", 1, 1, 0.0), (None, 2, 2, 0.0), ("B", 4, 4, 0.0)]
    with pytest.raises(PythonException, match=r"event has no event_type \(the event with event_type=None"):
        _spark_positions(spark, "SELECT * FROM S WHERE A ; B", rows)
    # A null time: Query.run keeps the input order, find() orders by time: refused, not sorted first.
    rows = [("A", 1, 5, 0.0), ("B", 2, None, 0.0), ("B", 3, 7, 0.0)]
    # (refused in the Spark plan itself, naming the column and the row: issue 23)
    with pytest.raises(Exception, match=r"the time column 't' of a row of type B is missing .*\"id\":2"):
        _spark_positions(spark, "SELECT * FROM S WHERE A ; B", rows)
    # Ordered by another column, a missing time is a bad row as on every path (issue 38: the
    # local engine rejects it too), left out under on_error="skip".
    with pytest.raises(PythonException, match=r"missing field t \(the event with id=2"):
        _spark_positions(spark, "SELECT * FROM S WHERE A ; B", rows, order_by=["id"])
    assert _spark_positions(spark, "SELECT * FROM S WHERE A ; B", rows, order_by=["id"], on_error="skip") == [(0, 1)]
    local = ceql.compile("SELECT * FROM S WHERE A ; B", ceql.declare(SPARK_DECLARATION))
    events = [dict(zip(("event_type", "id", "t", "d"), row)) for row in rows]
    assert sorted(m.positions for m in local.run(events, on_error="skip")) == [(0, 1)]


@pytest.mark.spark
def test_ctrl_c_on_spark_ends_as_interrupted(tmp_path) -> None:
    import contextlib
    import signal
    import time

    from ceql.spark.session import java_available

    if not java_available():
        pytest.fail("Spark tests need Java 17+")
    (tmp_path / "decl.core").write_text(DECLARATION)
    (tmp_path / "ev.csv").write_text("event_type,d,x\n" + "".join(f"{'AB'[i % 2]},1.0,{i}\n" for i in range(50_000)))
    import os

    log = open(tmp_path / "stderr", "w+")
    process = subprocess.Popen(
        [sys.executable, "-m", "ceql", "run", "-d", "decl.core", "-q", "SELECT * FROM S WHERE A ; B WITHIN 3 EVENTS"]
        + ["-i", "ev.csv", "-o", "out", "--engine", "spark", "--master", "local[1]"],
        cwd=tmp_path,
        stderr=log,
        stdout=subprocess.DEVNULL,
        start_new_session=True,  # its own process group, as a terminal's Ctrl-C signals one
    )
    try:
        deadline = time.monotonic() + 240
        while "setLogLevel" not in (tmp_path / "stderr").read_text():  # the Spark session is up
            assert time.monotonic() < deadline and process.poll() is None
            time.sleep(0.2)
        time.sleep(3)  # the job runs: Py4J calls are under way
        os.killpg(process.pid, signal.SIGINT)
        process.wait(timeout=240)
        err = (tmp_path / "stderr").read_text()
    finally:
        if process.poll() is None:
            process.kill()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)  # nothing of it may outlive the test
        log.close()
    assert process.returncode == 130, err[-3000:]
    assert "ceql: interrupted" in err and "Traceback" not in err and "Py4J" not in err, err[-3000:]
    assert not list(tmp_path.glob("*.ceql-tmp")) and not (tmp_path / "out").exists()


def test_spark_reads_a_lone_surrogate_as_a_bad_row(spark, tmp_path) -> None:
    from ceql.compile.catalog import Catalog
    from ceql.spark.cli import read_events

    (tmp_path / "ev.jsonl").write_text('{"event_type": "A", "d": 1.0, "x": 1}\n{"event_type": "B", "d": "\\ud800", "x": 2}\n')
    schema = ceql.declare(DECLARATION)
    rows = read_events(spark, [str(tmp_path / "ev.jsonl")], schema, None, Catalog.of_schema(schema)).collect()
    reasons = [r for r in (row.asDict() for row in rows) if any("surrogate" in str(v) for v in r.values())]
    assert len(reasons) == 1


def test_a_ceql_error_on_a_spark_worker_is_one_message() -> None:
    from ceql.spark.cli import worker_error

    trace = (
        "An exception was thrown from the Python worker.\nTraceback (most recent call last):\n"
        '  File "output_schema.py", line 231, in from_raw\n'
        "ceql.errors.CeqlError: measure t: 18446744073709551612 does not fit its int64 column in the output\n"
    )
    error = worker_error(RuntimeError(trace))
    assert isinstance(error, ceql.errors.CeqlError)
    assert str(error) == "on a Spark worker: measure t: 18446744073709551612 does not fit its int64 column in the output"
    assert worker_error(RuntimeError("java.lang.OutOfMemoryError")) is None


def test_a_measure_beyond_int64_on_spark_is_one_message(spark, tmp_path, capsys) -> None:
    """It was the worker's traceback and exit 1 (the SUM is exact in Match objects only)."""
    from ceql.cli import main

    (tmp_path / "decl.core").write_text(DECLARATION)
    (tmp_path / "ev.csv").write_text(f"event_type,d,x\nA,1.0,{I64 - 1}\nA,2.0,{I64 - 1}\n")
    out = tmp_path / "out"
    status = main(
        ["run", "--engine", "spark", "-d", str(tmp_path / "decl.core"), "-q", "SELECT SUM(a.x) AS t WHERE A+ AS a"]
        + ["-i", str(tmp_path / "ev.csv"), "-o", str(out)]
    )
    err = capsys.readouterr().err
    assert status == 2, err
    assert re.search(r"error: on a Spark worker: measure t: \d{20} does not fit", err) and "Traceback" not in err, err
    assert not out.exists() and not list(tmp_path.glob("*.ceql-tmp*"))


@pytest.mark.parametrize("evaluator", ["python", "compiled"])
def test_edge_values_in_every_output_format(tmp_path, evaluator) -> None:
    """int64 extremes, NaN, the infinities and -0.0 through the writers of the output contract:
    JSON Lines stays valid JSON (NaN and infinities as strings, a NaN measure null), Parquet
    keeps the values, both exact at the int64 ends."""
    import pyarrow.parquet as pq

    (tmp_path / "decl.core").write_text(DECLARATION)
    rows = [("A", "NaN", -I64), ("B", "Infinity", I64 - 1), ("A", "-Infinity", 0), ("B", "-0.0", 1)]
    (tmp_path / "ev.jsonl").write_text(
        "".join(f'{{"event_type": "{t}", "d": {d}, "x": {x}}}\n' for t, d, x in rows)
    )
    text = "SELECT a.x AS ax, b.x AS bx, a.d AS ad, b.d AS bd, MAX(b.x) AS m FROM S WHERE A AS a ; B AS b"
    for out in ("out.jsonl", "out.parquet"):
        result = subprocess.run(
            [sys.executable, "-m", "ceql", "run", "-d", "decl.core", "-q", text, "-i", "ev.jsonl", "-o", out]
            + ["--with-events", "--evaluator", evaluator, "--quiet"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert result.returncode == 0, result.stderr
    lines = (tmp_path / "out.jsonl").read_text().splitlines()

    def strict(constant: str):
        raise AssertionError(f"{constant} is not JSON")

    found = [json.loads(line, parse_constant=strict) for line in lines]
    measures = [(r["positions"], r["ax"], r["bx"], r["ad"], r["bd"], r["m"]) for r in found]
    assert measures == [
        ([0, 1], -I64, I64 - 1, None, "Infinity", I64 - 1),
        ([0, 3], -I64, 1, None, -0.0, 1),
        ([2, 3], 0, 1, "-Infinity", -0.0, 1),
    ]
    assert [e["d"] for e in found[0]["events"]] == ["NaN", "Infinity"]
    table = pq.read_table(tmp_path / "out.parquet").to_pylist()
    assert [(r["positions"], r["ax"], r["bx"], r["ad"], r["bd"], r["m"]) for r in table] == [
        (p, ax, bx, None if ad is None else float(ad), float(bd), m) for p, ax, bx, ad, bd, m in measures
    ]
    assert math.copysign(1, table[1]["bd"]) == -1 and math.isnan(table[0]["events"][0]["d"])
