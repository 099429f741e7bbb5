"""Runaway output is bounded and said out loud: --max-matches / max_matches, growth warnings."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

import ceql
from ceql.cli import main
from ceql.errors import LimitError
from ceql.lang import ast
from ceql.runtime.limits import DEFAULT_MAX_MATCHES, _estimate, growth_warnings, limit_matches

SCHEMA = ceql.declare("CREATE STREAM S { EVENT A { x:int }, EVENT B { x:int }, EVENT C { x:int } }")
EVENTS = [{"event_type": "A", "x": i} for i in range(12)]  # A+ has 2^12 - 1 = 4095 matches


# --------------------------------------------------------------------------- API


def test_query_run_stops_after_max_matches() -> None:
    query = ceql.compile("SELECT * FROM S WHERE A+", SCHEMA)
    seen = []
    with pytest.raises(LimitError) as caught:
        for match in query.run(EVENTS, max_matches=100):
            seen.append(match)
    assert len(seen) == 100
    assert caught.value.limit == "max_matches" and caught.value.value == 100
    message = str(caught.value)
    assert "more than 100 matches" in message and "max_matches=N" in message and "max_matches=None" in message
    assert seen == list(itertools.islice(query.run(EVENTS), 100))  # the same first matches


@pytest.mark.parametrize("limit", [None, 0, 4095])
def test_no_limit_or_a_limit_not_reached_gives_every_match(limit) -> None:
    query = ceql.compile("SELECT * FROM S WHERE A+", SCHEMA)
    assert sum(1 for _ in query.run(EVENTS, max_matches=limit)) == 4095


def test_limit_matches_is_lazy() -> None:
    def endless():
        yield from itertools.count()

    assert list(itertools.islice(limit_matches(endless(), 10), 5)) == [0, 1, 2, 3, 4]


# --------------------------------------------------------------------------- CLI


@pytest.fixture
def files(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "decl.core").write_text("CREATE STREAM S { EVENT A { x:int }, EVENT B { x:int } }")
    (tmp_path / "in.csv").write_text("event_type,x\n" + "".join(f"A,{i}\n" for i in range(12)))
    return tmp_path


def test_cli_stops_at_max_matches_and_writes_nothing(files, capsys) -> None:
    before = (files / "in.csv").read_bytes()
    status = main(
        [
            "run",
            "-d",
            "decl.core",
            "-q",
            "SELECT * FROM S WHERE A+",
            "-i",
            "in.csv",
            "-o",
            "out.jsonl",
            "--max-matches",
            "50",
        ]
    )
    err = capsys.readouterr().err
    assert status == 2
    assert "more than 50 matches: stopped at the limit --max-matches (50); no output was written" in err
    assert "--max-matches 0" in err and "Traceback" not in err
    assert sorted(p.name for p in files.iterdir()) == ["decl.core", "in.csv"]
    assert (files / "in.csv").read_bytes() == before


def test_cli_on_standard_output_says_what_was_written(files, capsys) -> None:
    status = main(
        ["run", "-d", "decl.core", "-q", "SELECT * FROM S WHERE A+", "-i", "in.csv", "--max-matches", "7"]
    )
    captured = capsys.readouterr()
    assert status == 2 and "the first 7 were written to standard output" in captured.err
    assert len(captured.out.splitlines()) == 7


def test_cli_max_matches_zero_turns_the_limit_off(files, capsys) -> None:
    status = main(
        [
            "run",
            "-d",
            "decl.core",
            "-q",
            "SELECT * FROM S WHERE A+",
            "-i",
            "in.csv",
            "-o",
            "o.jsonl",
            "--max-matches",
            "0",
            "--quiet",
        ]
    )
    assert status == 0
    assert len((files / "o.jsonl").read_text().splitlines()) == 4095


def test_cli_limit_is_on_by_default_and_counts_every_query(files, capsys) -> None:
    from ceql.cli import build_parser

    args = build_parser().parse_args(["run", "-d", "d", "-q", "q", "-i", "i"])
    assert args.max_matches == DEFAULT_MAX_MATCHES > 0
    status = main(
        [
            "run",
            "-d",
            "decl.core",
            "-q",
            "SELECT * FROM S WHERE A",
            "-q",
            "SELECT * FROM S WHERE A",
            "-i",
            "in.csv",
            "--max-matches",
            "20",
        ]
    )
    captured = capsys.readouterr()
    assert status == 2 and "more than 20 matches" in captured.err  # 12 + 12 matches in all
    assert len(captured.out.splitlines()) == 20


@pytest.mark.parametrize("value", ["-1", "many"])
def test_cli_rejects_a_bad_limit(files, capsys, value) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(
            [
                "run",
                "-d",
                "decl.core",
                "-q",
                "SELECT * FROM S WHERE A",
                "-i",
                "in.csv",
                "--max-matches",
                value,
            ]
        )
    assert exit_.value.code == 2
    assert "--max-matches" in capsys.readouterr().err


# --------------------------------------------------------------------------- growth warnings


def warnings_of(where: str, select: str = "SELECT *") -> list[str]:
    return growth_warnings(ceql.check(f"{select} FROM S WHERE {where}", SCHEMA))


def test_kleene_plus_without_bound_warns_with_its_position() -> None:
    (warning,) = warnings_of("A ; B+ ; C")
    assert warning.startswith("line 1, column 27: the iteration B+")
    assert "2^n complex events per trigger" in warning and "no window or LIMIT" in warning


@pytest.mark.parametrize(
    "where, select",
    [
        ("A+ WITHIN 10 EVENTS", "SELECT *"),
        ("A+ LIMIT 5", "SELECT *"),
        ("A+", "SELECT NEXT *"),
        ("A+", "SELECT LAST *"),
        ("A+", "SELECT ANY *"),
        ("A+", "SELECT STRICT *"),
        ("A+", "SELECT MAX *"),
        ("A :+", "SELECT *"),
        ("A ; B", "SELECT *"),
        ("A : B : C", "SELECT *"),
        ("A ; B ; C WITHIN 100 EVENTS", "SELECT *"),
        ("A+ AND B", "SELECT *"),
        ("NOT(A)+", "SELECT *"),
    ],
)
def test_bounded_queries_do_not_warn(where, select) -> None:
    assert warnings_of(where, select) == []


def test_a_large_event_window_does_not_silence_kleene() -> None:
    (warning,) = warnings_of("A+ WITHIN 40 EVENTS")
    assert "WITHIN 40 EVENTS allows up to 2^39 per trigger" in warning


def test_polynomial_growth_names_its_degree() -> None:
    (warning,) = warnings_of("A ; B ; C")
    assert "grow as n^2" in warning and "the sequence A; B; C at line 1, column 23" in warning
    chain = " ALL ".join(f"(A FILTER A[x = {i}])" for i in range(11))
    (warning,) = warnings_of(chain)
    assert "grow as n^10" in warning and "ALL in" in warning
    assert warnings_of(chain + " WITHIN 5 EVENTS") != []  # 5^10 per trigger is still a lot
    assert warnings_of("A ALL B ALL C WITHIN 3 EVENTS") == []


def test_contiguous_iteration_of_a_sequence_still_explodes() -> None:
    (warning,) = warnings_of("(A ; B):+")
    assert "the iteration (A; B):+" in warning


def test_quantifiers_grow_like_their_rewriting() -> None:
    (warning,) = warnings_of("B ; A* ; C")
    assert warning.startswith("line 1, column 27: the repetition A*")
    assert "grow as n^3" in warnings_of("A{3} ; B")[0]
    assert warnings_of("A : A{2,} : B") == []  # contiguous: one complex event per start
    a = ast.EventType("A")
    assert _estimate(ast.Repeat(a, 3, 3), True).degree == 2  # A ; A ; A
    assert _estimate(ast.Repeat(a, 3, 3, contiguous=True), True).degree == 0  # A : A : A
    assert _estimate(ast.Repeat(a, 2, None), True).degree == float("inf")  # A ; A+
    assert _estimate(ast.Repeat(a, 0, 1), True).degree == 0  # A?


def test_growth_estimate_does_not_recurse() -> None:
    formula: ast.Formula = ast.EventType("A")
    for _ in range(5000):
        formula = ast.Label(formula, "x")
    assert _estimate(formula, True).degree == 0


def test_check_prints_the_warnings(tmp_path, capsys) -> None:
    declaration = Path(tmp_path / "decl.core")
    declaration.write_text("CREATE STREAM S { EVENT A { x:int } }")
    assert main(["check", "-d", str(declaration), "-q", "SELECT * FROM S WHERE A+"]) == 0
    out = capsys.readouterr().out
    assert "warnings:\n  line 1, column 23: the iteration A+" in out
    assert main(["check", "-d", str(declaration), "-q", "SELECT * FROM S WHERE A+ LIMIT 1"]) == 0
    assert "warnings:" not in capsys.readouterr().out
    json.dumps(out)  # printable text
