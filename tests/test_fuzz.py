"""Fuzzing (slow suite): hostile query texts and hostile input files give clear errors only.

Query texts, three ways: valid random queries mutated token by token (grammar-aware), soups of
CEQL tokens and hostile fragments (huge literals, long chains, deep nesting, odd regexes), and
random text. Each goes through parse, analysis and compilation; what compiles also runs on a
small random stream (under a match limit). Allowed outcomes: success or a CeqlError
(QueryError, EventError, LimitError) with a message. Anything else, or a case running longer
than its time limit, fails the test.

Input files: random bytes, and valid files mutated byte by byte, as CSV, JSON Lines and Parquet,
through ``ceql run`` (local engine) with every error policy. Allowed: exit 0, or exit 2 with a
one-line ``error:`` message; never a traceback.

Run with ``pytest -m slow tests/test_fuzz.py -s`` to see how many cases ran.
"""

from __future__ import annotations

import contextlib
import io
import json
import signal
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ceql
from ceql.cli import main
from ceql.errors import CeqlError
from ceql.lang.printer import print_query
from tests.strategies import TEST_DECLARATION, extended_queries, queries, streams

pytestmark = pytest.mark.slow

SCHEMA = ceql.declare(TEST_DECLARATION)
CASE_SECONDS = 20  # per case; generous on a loaded machine, but a hang still fails
COUNTS: Counter = Counter()


class Hang(Exception):
    """A fuzz case ran past its time limit."""


@contextlib.contextmanager
def time_limit(seconds: int, case: object):
    def expire(signum, frame):
        raise Hang(f"no answer after {seconds} s: {case!r}")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def clear(error: CeqlError) -> bool:
    return bool(str(error).strip()) and "Traceback" not in str(error)


def try_query(text: str, events: list[dict], kind: str) -> None:
    """Compile ``text`` and run it: success or a clear CeqlError, within the time limit."""
    COUNTS[f"query/{kind}"] += 1
    with time_limit(CASE_SECONDS, text):
        try:
            query = ceql.compile(text, SCHEMA)
        except CeqlError as error:
            assert clear(error), text
            COUNTS[f"query/{kind}/rejected"] += 1
            return
        COUNTS[f"query/{kind}/compiled"] += 1
        try:
            for _ in query.run(events, max_matches=10_000):
                pass
        except CeqlError as error:
            assert clear(error), text


# --------------------------------------------------------------------------- query texts

HOSTILE = [
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775808",
    "1e400",
    "100000000000000000000000000000",
    "0.0",
    "'",
    "''''",
    "'.*(a|b)*\\\\'",
    "'(?P<x>a)'",
    "'[[:alpha:]'",
    "`weird name`",
    "/*",
    "--",
    "\x00",
    "é",
    "((((((((((",
    "))))",
    " ; ".join(["A"] * 300),
    " OR ".join(["A"] * 300),
    "(" * 300 + "A" + ")" * 300,
    "x[" + " + ".join(["v"] * 200) + " > 0]",
    "{" + ", ".join(str(i) for i in range(500)) + "}",
]
TOKENS = [
    "SELECT", "*", "NONE", "ALL", "ANY", "NEXT", "LAST", "MAX", "STRICT", "FROM", "S", "WHERE",
    "A", "B", "C", "D", "X", "S>A", "AS", "x", "y", "z", "+", ":+", ";", ":", "OR", "AND",
    "UNLESS", "FILTER", "NOT", "(", ")", "[", "]", "{", "}", "..", ",", ".", "v", "s", "id", "t",
    "=", "!=", "<>", "<", "<=", ">", ">=", "==", "-", "/", "%", "LIKE", "IN", "RANGE", "0", "1",
    "2.5", "'a'", "true", "PARTITION", "BY", "WITHIN", "EVENTS", "SECONDS", "MINUTES", "HOURS",
    "CONSUME", "LIMIT", "?", "{2}", "{1,3}", "{2,}", "COUNT", "SUM", "AVG", "PREV", "FIRST",
    "START", "PROJECT", "->", *HOSTILE,
]  # fmt: skip


@st.composite
def mutated_queries(draw) -> str:
    """A random query (every construct), printed, then changed at a few token positions."""
    tokens = print_query(draw(st.one_of(queries(), extended_queries()))).split()
    for _ in range(draw(st.integers(0, 4))):
        where = draw(st.integers(0, len(tokens)))
        action = draw(st.sampled_from(["insert", "delete", "replace", "duplicate", "split"]))
        if action == "insert":
            tokens.insert(where, draw(st.sampled_from(TOKENS)))
        elif tokens and where < len(tokens):
            if action == "delete":
                del tokens[where]
            elif action == "replace":
                tokens[where] = draw(st.sampled_from(TOKENS))
            elif action == "duplicate":
                tokens[where:where] = tokens[where : where + draw(st.integers(1, 5))]
            else:
                cut = draw(st.integers(0, len(tokens[where])))
                tokens[where : where + 1] = [tokens[where][:cut], tokens[where][cut:]]
    return " ".join(tokens)


token_soups = (
    st.lists(st.sampled_from(TOKENS), min_size=1, max_size=40)
    .map(" ".join)
    .map(lambda body: body if body.startswith("SELECT") else "SELECT * FROM S WHERE " + body)
)
random_texts = st.one_of(
    st.text(max_size=200),
    st.binary(max_size=200).map(lambda b: b.decode("utf-8", errors="replace")),
    st.text(alphabet="SELECT*FROMWHEREAB;:+()[]{}<>=!.,'`-/ \n", max_size=200),
)
FUZZ = settings(max_examples=1500, deadline=None, suppress_health_check=list(HealthCheck), database=None)


@FUZZ
@given(text=mutated_queries(), events=streams(max_size=10))
def test_fuzz_mutated_queries(text, events) -> None:
    try_query(text, events, "mutated")


@FUZZ
@given(text=token_soups, events=streams(max_size=10))
def test_fuzz_token_soups(text, events) -> None:
    try_query(text, events, "tokens")


@FUZZ
@given(text=random_texts)
def test_fuzz_random_texts(text) -> None:
    try_query(text, [], "random")


def test_fuzz_hostile_fragments() -> None:
    for fragment in HOSTILE:
        for text in (
            fragment,
            f"SELECT * FROM S WHERE {fragment}",
            f"SELECT * FROM S WHERE A AS x FILTER x[v > {fragment}]",
            f"SELECT * FROM S WHERE A AS x FILTER x[s LIKE {fragment}]",
            f"SELECT * FROM S WHERE A AS x FILTER x[v IN {fragment}]",
            f"SELECT * FROM S WHERE A WITHIN {fragment} EVENTS",
            f"SELECT * FROM S WHERE A LIMIT {fragment}",
        ):
            try_query(text, [{"event_type": "A", "id": 1, "v": 2, "s": "a", "t": 3}], "hostile")


# --------------------------------------------------------------------------- input files

DECLARATION = "CREATE STREAM S { EVENT A { id:int, v:double, s:string, t:primary_time }, EVENT B { id:int } }"
VALID_CSV = b"event_type,id,v,s,t\nA,1,2.5,x,10\nB,2,,,\nA,3,-1e3,y z,20\nB,4,,,\n"
VALID_JSONL = (
    b'{"event_type": "A", "id": 1, "v": 2.5, "s": "x", "t": 10}\n{"event_type": "B", "id": 2}\n'
    b'{"event_type": "A", "id": 3, "v": -1000.0, "s": "y", "t": 20}\n{"event_type": "B", "id": 4}\n'
)


def _parquet_bytes(table: pa.Table) -> bytes:
    sink = io.BytesIO()
    pq.write_table(table, sink)
    return sink.getvalue()


VALID_PARQUET = _parquet_bytes(
    pa.table(
        {
            "event_type": ["A", "B", "A"],
            "id": [1, 2, 3],
            "v": [2.5, None, 1.0],
            "s": ["x", None, "y"],
            "t": [1, None, 5],
        }
    )
)
VALID = {"csv": VALID_CSV, "jsonl": VALID_JSONL, "parquet": VALID_PARQUET}


@st.composite
def mutated_bytes(draw, base: bytes) -> bytes:
    data = bytearray(base)
    for _ in range(draw(st.integers(1, 8))):
        where = draw(st.integers(0, len(data)))
        action = draw(st.sampled_from(["flip", "insert", "delete", "truncate", "repeat"]))
        if action == "insert":
            data[where:where] = draw(st.binary(min_size=1, max_size=8))
        elif action == "truncate":
            del data[where:]
        elif action == "repeat":
            data[where:where] = data[where : where + draw(st.integers(1, 40))] * draw(st.integers(1, 5))
        elif where < len(data):
            if action == "flip":
                data[where] = draw(st.integers(0, 255))
            else:
                del data[where]
    return bytes(data)


@st.composite
def odd_parquet(draw) -> bytes:
    """A well-formed Parquet file with surprising columns and types."""
    n = draw(st.integers(0, 5))
    columns = {
        "event_type": draw(st.lists(st.sampled_from(["A", "B", "C", "", None]), min_size=n, max_size=n))
    }
    for name in draw(st.lists(st.sampled_from(["id", "v", "s", "t", "extra"]), unique=True, max_size=5)):
        columns[name] = draw(
            st.sampled_from(
                [
                    pa.array([1] * n, pa.int64()),
                    pa.array([2**63 - 1] * n, pa.int64()),
                    pa.array([1.5] * n, pa.float64()),
                    pa.array([float("nan")] * n, pa.float64()),
                    pa.array(["7"] * n, pa.string()),
                    pa.array([True] * n, pa.bool_()),
                    pa.array([None] * n, pa.null()),
                    pa.array([[1]] * n, pa.list_(pa.int64())),
                ]
            )
        )
    return _parquet_bytes(pa.table(columns))


def input_files():
    kinds = st.sampled_from(["csv", "jsonl", "parquet"])
    return kinds.flatmap(
        lambda kind: st.tuples(
            st.just(kind),
            st.one_of(
                st.binary(max_size=300),
                mutated_bytes(VALID[kind]),
                *([odd_parquet()] if kind == "parquet" else []),
            ),
        )
    )


def run_cli(args: list[str]) -> tuple[int, str]:
    """``main(args)`` with its output captured; an exception escaping main is a traceback."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(args)
    return status, err.getvalue()


@settings(max_examples=600, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(file=input_files(), policy=st.sampled_from(["fail", "skip", "dead-letter"]), sort=st.booleans())
def test_fuzz_input_files(tmp_path_factory, file, policy, sort) -> None:
    kind, data = file
    folder = tmp_path_factory.mktemp("fuzz")
    (folder / "decl.core").write_text(DECLARATION)
    events = folder / f"events.{kind}"
    events.write_bytes(data)
    args = ["run", "-d", str(folder / "decl.core"), "-q", "SELECT * FROM S WHERE A AS a ; B+ WITHIN 3 EVENTS"]
    args += ["-i", str(events), "-o", str(folder / "out.jsonl"), "--on-error", policy, "--quiet"]
    if policy == "dead-letter":
        args += ["--dead-letter", str(folder / "dead.jsonl")]
    if sort:
        args.append("--sort")
    COUNTS[f"input/{kind}"] += 1
    with time_limit(CASE_SECONDS, (kind, data[:80], policy)):
        status, err = run_cli(args)
    assert status in (0, 2), err
    if status == 2:
        COUNTS[f"input/{kind}/rejected"] += 1
        assert "ceql run: error: " in err and "Traceback" not in err, err  # warnings may come first
        assert not (folder / "out.jsonl").exists()
    else:
        for line in (folder / "out.jsonl").read_text().splitlines():
            json.loads(line)
    assert Path(events).read_bytes() == data  # the input is never touched


def test_fuzz_report() -> None:
    """Prints how many cases ran (with ``-s``); runs last in this module."""
    print("\nfuzz cases:", dict(sorted(COUNTS.items())))
