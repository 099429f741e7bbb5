"""End-to-end command line tests (in this process through tests.support.cli.run_cli; a child process where one is needed): formats, policies, ordering, user errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.support.cli import run_cli

ROOT = Path(__file__).resolve().parents[1]
DECL = ROOT / "examples" / "stocks" / "declaration.core"
QUERY = (
    "SELECT * FROM S WHERE SELL AS x; BUY AS y FILTER x[name = 'INTC'] AND y[name = 'RIMM'] WITHIN 5 EVENTS"
)
TIMED = "CREATE STREAM S { EVENT A { id:int, ts:primary_time }, EVENT B { id:int, ts:primary_time } }"
HEADER = "event_type,id,name,volume,price,stock_time\n"
ROWS = [
    "SELL,0,INTC,100,1.5,1",
    "BUY,1,RIMM,100,2.5,2",
    "BUY,2,QQQ,100,3.5,3",
    "SELL,3,INTC,200,1.5,4",
    "BUY,4,RIMM,200,2.5,5",
]


def ceql(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    """``ceql *args`` from the repository root, in this process (tests.support.cli: a child
    process costs a second of CPU; test_csv_to_jsonl runs the real ``python -m ceql``)."""
    return run_cli(*args, cwd=ROOT, stdin=stdin)


def ceql_process(*args: str) -> subprocess.CompletedProcess:
    """``python -m ceql *args`` in a child process, as a user runs it."""
    return subprocess.run(
        [sys.executable, "-m", "ceql", *args], capture_output=True, text=True, cwd=ROOT, timeout=300
    )


def _csv(tmp_path: Path, rows=ROWS, name="events.csv") -> Path:
    path = tmp_path / name
    path.write_text(HEADER + "\n".join(rows) + "\n")
    return path


def _matches(text: str) -> list[tuple]:
    return [(r["trigger"], tuple(r["positions"])) for r in map(json.loads, text.splitlines())]


EXPECTED = [(1, (0, 1)), (4, (0, 4)), (4, (3, 4))]


def test_csv_to_jsonl(tmp_path) -> None:
    result = ceql_process("run", "-d", str(DECL), "-q", QUERY, "-i", str(_csv(tmp_path)))
    assert result.returncode == 0, result.stderr
    assert sorted(_matches(result.stdout)) == EXPECTED
    assert "5 events read, 0 rejected, 3 matches" in result.stderr


def test_jsonl_and_parquet_inputs_give_the_same_matches(tmp_path) -> None:
    rows = [dict(zip(HEADER.strip().split(","), r.split(","))) for r in ROWS]
    for row in rows:
        for key in ("id", "volume", "stock_time"):
            row[key] = int(row[key])
        row["price"] = float(row["price"])
    jsonl = tmp_path / "events.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in rows))
    parquet = tmp_path / "events.parquet"
    pq.write_table(pa.Table.from_pylist(rows), parquet)
    for path in (jsonl, parquet):
        result = ceql("run", "-d", str(DECL), "-q", QUERY, "-i", str(path), "--quiet")
        assert result.returncode == 0, result.stderr
        assert sorted(_matches(result.stdout)) == EXPECTED
    stdin = ceql(
        "run",
        "-d",
        str(DECL),
        "-q",
        QUERY,
        "-i",
        "-",
        "--input-format",
        "jsonl",
        "--quiet",
        stdin=jsonl.read_text(),
    )
    assert sorted(_matches(stdin.stdout)) == EXPECTED


def test_output_formats(tmp_path) -> None:
    events = _csv(tmp_path)
    out = tmp_path / "out.parquet"
    assert (
        ceql(
            "run", "-d", str(DECL), "-q", QUERY, "-i", str(events), "-o", str(out), "--with-events"
        ).returncode
        == 0
    )
    table = pq.read_table(out)
    assert (
        sorted(zip(table.column("trigger").to_pylist(), map(tuple, table.column("positions").to_pylist())))
        == EXPECTED
    )
    assert table.column("events")[0].as_py()[0]["name"] == "INTC"  # a typed list of structs
    core = ceql("run", "-d", str(DECL), "-q", QUERY, "-i", str(events), "--format", "core", "--quiet")
    assert core.stdout.splitlines()[0] == (
        "[0,1], ((id: 1 attributes: [0 INTC 100 1.500000 1 ]) (id: 0 attributes: [1 RIMM 100 2.500000 2 ]) )"
    )
    with_events = ceql("run", "-d", str(DECL), "-q", QUERY, "-i", str(events), "--with-events", "--quiet")
    first = json.loads(with_events.stdout.splitlines()[0])
    # Each event points back to its line in the file (1-based; line 1 is the header).
    assert [e["row"] for e in first["events"]] == [p + 2 for p in first["positions"]]
    assert first["events"][0]["source"] == str(events)


def test_several_queries_in_one_pass(tmp_path) -> None:
    result = ceql(
        "run",
        "-d",
        str(DECL),
        "-q",
        QUERY,
        "-q",
        "SELECT * FROM S WHERE BUY AS b FILTER b[name = 'QQQ']",
        "-i",
        str(_csv(tmp_path)),
        "--quiet",
    )
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert {r["query"] for r in records} == {"q1", "q2"}
    assert [r["positions"] for r in records if r["query"] == "q2"] == [[2]]


BAD = ROWS[:2] + ["FOO,9,X,1,1.0,9", "BUY,x,RIMM,1,1.0,9", "SELL,7,INTC,1,1.0"] + ROWS[2:]


def test_bad_input_fail(tmp_path) -> None:
    result = ceql("run", "-d", str(DECL), "-q", QUERY, "-i", str(_csv(tmp_path, BAD)))
    assert result.returncode == 2
    # Line 4 of the file (line 1 is the header).
    assert "line 4: unknown event type 'FOO'" in result.stderr and "Traceback" not in result.stderr


def test_bad_input_skip_counts(tmp_path) -> None:
    result = ceql("run", "-d", str(DECL), "-q", QUERY, "-i", str(_csv(tmp_path, BAD)), "--on-error", "skip")
    assert result.returncode == 0
    assert "8 events read, 3 rejected (1 bad value, 1 unknown event type, 1 wrong field count)" in result.stderr, result.stderr
    assert sorted(_matches(result.stdout)) == EXPECTED


def test_bad_input_dead_letter(tmp_path) -> None:
    dead = tmp_path / "dead.jsonl"
    result = ceql(
        "run",
        "-d",
        str(DECL),
        "-q",
        QUERY,
        "-i",
        str(_csv(tmp_path, BAD)),
        "--on-error",
        "dead-letter",
        "--dead-letter",
        str(dead),
    )
    assert result.returncode == 0
    rejected = [json.loads(line) for line in dead.read_text().splitlines()]
    assert [(r["line"], r["reason"], r["input"]) for r in rejected] == [
        (4, "unknown event type 'FOO'", "FOO,9,X,1,1.0,9"),
        (5, "column id: cannot read 'x' as an integer", "BUY,x,RIMM,1,1.0,9"),
        (6, "5 fields where the header has 6", "SELL,7,INTC,1,1.0"),
    ]


def test_an_empty_field_is_a_missing_value(tmp_path) -> None:
    """An empty int field is a missing value, not a bad row: every comparison on it is false."""
    rows = ROWS[:1] + ["BUY,1,RIMM,,2.5,2"] + ROWS[1:]
    query = "SELECT * FROM S WHERE SELL AS x; BUY AS y FILTER y[volume > 0] WITHIN 3 EVENTS"
    result = ceql("run", "-d", str(DECL), "-q", query, "-i", str(_csv(tmp_path, rows)))
    assert result.returncode == 0 and "6 events read, 0 rejected" in result.stderr, result.stderr
    assert sorted(_matches(result.stdout)) == [(2, (0, 2)), (5, (4, 5))]


def _timed(tmp_path: Path, times: list[int]) -> Path:
    path = tmp_path / "timed.csv"
    path.write_text("event_type,id,ts\n" + "".join(f"{'AB'[i % 2]},{i},{t}\n" for i, t in enumerate(times)))
    return path


def test_out_of_order_without_quarantine_is_bad_input(tmp_path) -> None:
    decl = tmp_path / "timed.core"
    decl.write_text(TIMED)
    events = _timed(tmp_path, [10, 20, 15, 30])
    result = ceql("run", "-d", str(decl), "-q", "SELECT * WHERE A ; B", "-i", str(events))
    assert result.returncode == 2 and "line 4: out of order: time 15 after 20" in result.stderr
    skip = ceql("run", "-d", str(decl), "-q", "SELECT * WHERE A ; B", "-i", str(events), "--on-error", "skip")
    assert "1 rejected (1 out of order)" in skip.stderr
    ordered = ceql(
        "run", "-d", str(decl), "-q", "SELECT * WHERE A ; B", "-i", str(events), "--sort", "--quiet"
    )
    assert ordered.returncode == 0 and _matches(ordered.stdout)


def test_quarantine_reorders_within_the_allowed_lateness(tmp_path) -> None:
    decl = tmp_path / "timed.core"
    decl.write_text(TIMED + "\nCREATE QUARANTINE { FIXED_TIME 10 seconds {S} }")
    second = 10**9
    events = _timed(tmp_path, [0, 5 * second, 3 * second, 40 * second, 1 * second])  # the last is too late
    result = ceql(
        "run",
        "-d",
        str(decl),
        "-q",
        "SELECT * WHERE A AS a ; B AS b",
        "-i",
        str(events),
        "--on-error",
        "skip",
        "--with-events",
    )
    assert "1 rejected (1 late)" in result.stderr
    records = [json.loads(line) for line in result.stdout.splitlines()]
    # stream order after reordering: lines 2 (A,0s), 4 (A,3s), 3 (B,5s), 5 (B,40s)
    assert sorted((tuple(r["positions"]), tuple(e["row"] for e in r["events"])) for r in records) == [
        ((0, 2), (2, 3)),
        ((0, 3), (2, 5)),
        ((1, 2), (4, 3)),
        ((1, 3), (4, 5)),
    ]


@pytest.mark.parametrize(
    "args, message",
    [
        (["-q", "SELECT * FROM S WHERE SELL AS x; BOY"], "unknown event type BOY"),
        (["-q", "SELECT * FROM S WHERE (SELL"], "line 1, column 28: expected ')' or an operator"),
        (["-q", QUERY, "-i", "missing.csv"], "input not found: missing.csv"),
        (["-q", "missing.ceql"], "query file not found: missing.ceql"),
        (["-q", QUERY, "--format", "parquet"], "--format parquet needs --output FILE"),
    ],
)
def test_user_errors_exit_2_with_a_message(tmp_path, args, message) -> None:
    events = str(_csv(tmp_path))
    if "-i" not in args:
        args = [*args, "-i", events]
    result = ceql("run", "-d", str(DECL), *args)
    assert result.returncode == 2
    assert message in result.stderr and "Traceback" not in result.stderr


def test_bad_declaration_and_check_and_explain(tmp_path) -> None:
    bad = tmp_path / "bad.core"
    bad.write_text("CREATE STREAM S { EVENT A { x:integr } }")
    result = ceql("check", "-d", str(bad), "-q", "SELECT * WHERE A")
    assert result.returncode == 2 and "unknown type integr" in result.stderr
    check = ceql("check", "-d", str(DECL), "-q", QUERY)
    assert check.returncode == 0 and "labels:" in check.stdout
    explain = ceql("explain", "-d", str(DECL), "-q", QUERY)
    assert "automaton:" in explain.stdout and "p0: name = 'INTC'" in explain.stdout
    dot = ceql("explain", "-d", str(DECL), "-q", QUERY, "--dot")
    assert dot.stdout.startswith("digraph ceql {")
    assert "usage" in ceql("--help").stdout.lower()


def test_engine_bounds_from_the_command_line(tmp_path) -> None:
    """--max-classes, --max-states and --max-work reach the evaluator; each stops with an error
    naming its bound (exit 2, no output file); 0 lifts a bound; --evaluator picks the path."""
    decl = tmp_path / "decl.core"
    decl.write_text("CREATE STREAM S { EVENT A { x:int, t:primary_time } }")
    events = tmp_path / "events.csv"
    events.write_text("event_type,x,t\n" + "".join(f"A,{i % 5},{i}\n" for i in range(60)))
    base = ["run", "-d", str(decl), "-i", str(events), "--quiet"]
    correlated = "SELECT * FROM S WHERE (A AS a ; A AS b) FILTER a.t + 30 < b.t"
    out = tmp_path / "out.jsonl"
    result = ceql(*base, "-q", correlated, "-o", str(out), "--max-classes", "3")
    assert result.returncode == 2 and "more than 3 live partial-match classes" in result.stderr
    assert "--max-classes" in result.stderr and not out.exists()
    result = ceql(*base, "-q", correlated, "-o", str(out), "--max-classes", "0")
    assert result.returncode == 0, result.stderr
    assert len(out.read_text().splitlines()) == sum(1 for a in range(60) for b in range(a + 1, 60) if a + 30 < b)
    alls = " ALL ".join(f"(A FILTER A[x = {k}])" for k in range(4))
    for flag in ("--max-states", "--max-work"):
        result = ceql(*base, "-q", f"SELECT * FROM S WHERE {alls} WITHIN 10 EVENTS", flag, "5")
        assert result.returncode == 2 and "grew past its bounds" in result.stderr, result.stderr
        assert "the ALL in the query" in result.stderr
    plain = "SELECT * FROM S WHERE A AS a ; A AS b FILTER a[x = 0] AND b[x = 1] WITHIN 3 EVENTS"
    found = {
        path: sorted(_matches(ceql(*base, "-q", plain, "--evaluator", path).stdout))
        for path in ("python", "compiled", "auto")
    }
    assert found["python"] == found["compiled"] == found["auto"] and found["python"]


def test_a_header_csv_cannot_read_is_bad_input_not_a_traceback(tmp_path) -> None:
    """Found by the input-file fuzzer: a carriage return inside the header line."""
    path = tmp_path / "events.csv"
    path.write_bytes(b"event_type,id\rx,name,volume,price,stock_time\nSELL,0,INTC,100,1.5,1\n")
    result = ceql("run", "-d", str(DECL), "-q", QUERY, "-i", str(path))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "line 2: the header (line 1) cannot be read as CSV" in result.stderr
