"""Fuzzing: hostile query texts, input files, saved states and output paths give clear errors
only, and values at the int64 and double edges give the reference's results on every path.

A short, derandomized part of each fuzzer runs in CI; the long runs are marked slow.

Query texts, three ways: valid random queries mutated token by token (grammar-aware), soups of
CEQL tokens and hostile fragments (huge literals, long chains, deep nesting, odd regexes), and
random text. Each goes through parse, analysis and compilation; what compiles also runs on a
small random stream (under a match limit). Allowed outcomes: success or a CeqlError
(QueryError, EventError, LimitError) with a message. Anything else, or a case running longer
than its time limit, fails the test.

Input files: random bytes, and valid files mutated byte by byte, as CSV, JSON Lines and Parquet,
through ``ceql run`` (local engine) with every error policy. Allowed: exit 0, or exit 2 with a
one-line ``error:`` message; never a traceback.

Saved states (both engines): bits flipped in a saved state give StateError; fields forged and
re-sealed (size and digest recomputed, as an attacker would) give StateError or a state that
runs on without a crash, a raw exception or a malformed match (positions outside the stream,
out of order, labels on events the match does not have).

Edges: the time-boxed differential fuzz of ``tests/support/fuzz_differential.py`` (Python path, kernel,
Arrow output, push with a state round trip, the command line; values at the int64 and double
edges) against the reference.

Special files: outputs that are FIFOs, sockets, devices, links to them, this process's standard
streams, folders, inputs, links to regular files, dangling links, with and without
``--overwrite``: refused with one message (and left as they were) or replaced only when a
regular file may be.

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
from tests.support.strategies import TEST_DECLARATION, extended_queries, queries, streams

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
    "'\ud800'",  # a lone surrogate (a Python string, or argv bytes that are not UTF-8)
    "`x\udfff`",
    "'a\udcff'",
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
    st.binary(max_size=200).map(lambda b: b.decode("utf-8", errors="surrogateescape")),  # as argv
    st.text(alphabet="SELECT*FROMWHEREAB;:+()[]{}<>=!.,'`-/ \n", max_size=200),
)
FUZZ = settings(max_examples=1500, deadline=None, suppress_health_check=list(HealthCheck), database=None)


@pytest.mark.slow
@FUZZ
@given(text=mutated_queries(), events=streams(max_size=10))
def test_fuzz_mutated_queries(text, events) -> None:
    try_query(text, events, "mutated")


@pytest.mark.slow
@FUZZ
@given(text=token_soups, events=streams(max_size=10))
def test_fuzz_token_soups(text, events) -> None:
    try_query(text, events, "tokens")


@pytest.mark.slow
@FUZZ
@given(text=random_texts)
def test_fuzz_random_texts(text) -> None:
    try_query(text, [], "random")


@pytest.mark.slow
def test_fuzz_hostile_fragments() -> None:
    for fragment in HOSTILE:
        for text in (
            fragment,
            f"SELECT * FROM S WHERE {fragment}",
            f"SELECT * FROM S WHERE A AS x FILTER x[v > {fragment}]",
            f"SELECT * FROM S WHERE A AS x FILTER x[s LIKE {fragment}]",
            f"SELECT * FROM S WHERE A AS x FILTER x[s = {fragment}]",
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


@pytest.mark.slow
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


# --------------------------------------------------------------------------- saved states

from ceql.runtime import kernel as _kernel  # noqa: E402
from ceql.runtime.state import StateError  # noqa: E402
from tests.support import fuzz_differential  # noqa: E402
from tests.support.agreement import compile_valid  # noqa: E402
from tests.support.states import open_state, reseal  # noqa: E402

EDGE_VALUES = [-(2**63), -(2**63) - 1, 2**63 - 1, 2**63, 2**64, -1, 0, 1, 10**20, 7]
ODD_VALUES = [None, True, "x", "", [], {}, 1.5, -0.0, ["t", []], ["f", [0]], ["n"], ["m"], ["p"], ["i", 1]]


def _mutate_json(value, draw, depth: int = 0):
    """``value`` with one random change somewhere inside it."""
    import base64

    import numpy as np

    if isinstance(value, str) and len(value) % 4 == 0 and value and depth == 1:
        try:  # a kernel array: change one element, or the length
            raw = base64.b64decode(value, validate=True)
        except ValueError:
            raw = None
        if raw is not None and len(raw) % 8 == 0:
            array = np.frombuffer(raw, dtype="<i8").copy()
            action = draw(st.sampled_from(["element", "element", "shorter", "longer"]))
            if action == "element" and len(array):
                array[draw(st.integers(0, len(array) - 1))] = draw(
                    st.sampled_from([-(2**63), 2**63 - 1, -1, 0, 1, 2, 3, 10**12, -(10**12)])
                )
            elif action == "shorter" and len(array):
                array = array[:-1]
            else:
                array = np.concatenate([array, array[-1:] if len(array) else np.zeros(1, np.int64)])
            return base64.b64encode(array.tobytes()).decode()
    if isinstance(value, dict) and value and draw(st.integers(0, 3)):
        key = draw(st.sampled_from(sorted(value)))
        return dict(value, **{key: _mutate_json(value[key], draw, depth + 1)})
    if isinstance(value, list) and value and draw(st.integers(0, 3)):
        index = draw(st.integers(0, len(value) - 1))
        action = draw(st.sampled_from(["inside", "inside", "drop", "twice"]))
        if action == "drop":
            return value[:index] + value[index + 1 :]
        if action == "twice":
            return value[: index + 1] + value[index:]
        return value[:index] + [_mutate_json(value[index], draw, depth + 1)] + value[index + 1 :]
    if isinstance(value, int) and not isinstance(value, bool) and draw(st.booleans()):
        return value + draw(st.sampled_from([-2, -1, 1, 2, 1000]))
    return draw(st.sampled_from(EDGE_VALUES + ODD_VALUES))


def _well_formed(match, start: int, end: int, labels: set[str]) -> bool:
    positions = list(match.positions)
    if any(not isinstance(p, int) or not 0 <= p < end for p in positions):
        return False
    if positions != sorted(set(positions)) or not start <= match.trigger < end:
        return False
    if positions and match.trigger < positions[-1]:
        return False
    return all(label in labels and set(ps) <= set(positions) for label, ps in match.labels.items())


def check_saved_state(case, data) -> None:
    """The case's saved state on every path that runs it, each damaged one way (see the module
    docstring)."""
    compiled = compile_valid(case.query, SCHEMA)
    if compiled is None:
        return
    for engine in ("python", "compiled") if _kernel.unsupported(compiled.plan) is None else ("python",):
        _check_saved_state(compiled, case, engine, data)


def _check_saved_state(compiled, case, engine: str, data) -> None:
    first = compiled.evaluator(engine=engine)
    try:
        first.push_batch(case.events[: case.save_at])
        blob = first.export_state()
    except CeqlError:
        COUNTS["state/input refused"] += 1
        return
    how = data.draw(st.sampled_from(["flip", "flip", "forge", "forge", "forge", "truncate"]))
    COUNTS[f"state/{engine}/{how}"] += 1
    if how == "flip":
        import zlib

        raw = bytearray(zlib.decompress(blob))
        for where in data.draw(st.lists(st.integers(0, len(raw) - 1), min_size=1, max_size=3, unique=True)):
            raw[where] ^= 1 << data.draw(st.integers(0, 7))
        with pytest.raises(StateError):
            compiled.evaluator(engine=engine).import_state(zlib.compress(bytes(raw)))
        return
    if how == "truncate":
        with pytest.raises(StateError):
            compiled.evaluator(engine=engine).import_state(blob[: data.draw(st.integers(0, len(blob) - 1))])
        return
    header, body = open_state(blob)
    forged = _mutate_json(body, data.draw)
    second = compiled.evaluator(engine=engine)
    try:
        second.import_state(reseal(header, forged))
    except StateError:
        COUNTS["state/forged: refused"] += 1
        return
    except (ValueError, TypeError) as error:  # seal() refuses what JSON cannot hold
        assert "JSON" in str(error) or "Out of range float" in str(error), error
        return
    COUNTS["state/forged: loaded"] += 1
    labels = set(compiled.checked.label_types)
    start = second._kernel.position if second._kernel is not None else second.position  # as loaded
    rest = case.events[case.save_at :]
    try:
        for match in second.push_batch(rest):
            assert _well_formed(match, start, start + len(rest), labels), (print_query(case.query), match)
    except CeqlError as error:
        assert clear(error)
        COUNTS["state/forged: run stopped with a clear error"] += 1


STATE_SECONDS = 120  # a case may compile the kernel's functions first (seconds on a loaded machine)
STATE_SETTINGS = dict(deadline=None, suppress_health_check=list(HealthCheck), database=None)


@settings(max_examples=60, derandomize=True, **STATE_SETTINGS)
@given(case=fuzz_differential.edge_cases(), data=st.data())
def test_fuzz_saved_states(case, data) -> None:
    with time_limit(STATE_SECONDS, case):
        check_saved_state(case, data)


@pytest.mark.slow
@settings(max_examples=2000, **STATE_SETTINGS)
@given(case=fuzz_differential.edge_cases(), data=st.data())
def test_fuzz_saved_states_long(case, data) -> None:
    with time_limit(STATE_SECONDS, case):
        check_saved_state(case, data)


# --------------------------------------------------------------------------- int64 and double edges


def test_fuzz_edges_differential() -> None:
    """The differential fuzz, briefly, from fixed seeds (tests/support/fuzz_differential.py)."""
    counts = fuzz_differential.run(0, examples=25, derandomize=True)
    COUNTS.update({f"edges/{k}": v for k, v in counts.items()})
    assert counts["cases"] >= 25


@pytest.mark.slow
def test_fuzz_edges_differential_long() -> None:
    """Three minutes of new cases (``python -m tests.support.fuzz_differential --minutes 10`` for more)."""
    counts = fuzz_differential.run(180)
    COUNTS.update({f"edges-long/{k}": v for k, v in counts.items()})


# --------------------------------------------------------------------------- special output files

TARGET_KINDS = [
    "missing", "regular", "folder", "fifo", "socket", "link to a regular file", "link to a FIFO",
    "link to the null device", "link to the standard output", "link to a folder", "dangling link",
    "the input", "a link to the input", "a hard link to the input", "the declaration",
]  # fmt: skip
SPECIAL = {"fifo", "socket", "link to a FIFO", "link to the null device", "link to the standard output"}
PROTECTED = {"the input", "a link to the input", "a hard link to the input", "the declaration"}


def _make_target(folder: Path, kind: str) -> Path:
    import os
    import socket

    path = folder / "target.jsonl"
    if kind == "regular":
        path.write_text("old\n")
    elif kind == "folder":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "socket":
        server = socket.socket(socket.AF_UNIX)
        server.bind(str(path))
        server.close()
    elif kind == "link to a regular file":
        (folder / "elsewhere").write_text("old\n")
        path.symlink_to(folder / "elsewhere")
    elif kind == "link to a FIFO":
        os.mkfifo(folder / "pipe")
        path.symlink_to(folder / "pipe")
    elif kind == "link to the null device":
        path.symlink_to("/dev/null")
    elif kind == "link to the standard output":
        path.symlink_to("/proc/self/fd/1")
    elif kind == "link to a folder":
        (folder / "sub").mkdir()
        path.symlink_to(folder / "sub")
    elif kind == "dangling link":
        path.symlink_to(folder / "nothing")
    elif kind == "the input":
        return folder / "events.csv"
    elif kind == "a link to the input":
        path.symlink_to(folder / "events.csv")
    elif kind == "a hard link to the input":
        os.link(folder / "events.csv", path)
    elif kind == "the declaration":
        return folder / "decl.core"
    return path


def _snapshot(path: Path) -> tuple:
    import os
    import stat

    if not os.path.lexists(path):
        return ("absent",)
    mode = os.lstat(path).st_mode
    if stat.S_ISLNK(mode):
        return ("link", os.readlink(path))
    if stat.S_ISREG(mode):
        return ("file", path.read_bytes())
    return ("other", stat.S_IFMT(mode))


def check_output_target(folder: Path, kind: str, option: str, overwrite: bool) -> None:
    (folder / "decl.core").write_text(DECLARATION)
    (folder / "events.csv").write_bytes(VALID_CSV)
    target = _make_target(folder, kind)
    before = _snapshot(target)
    input_before = (folder / "events.csv").read_bytes()
    other = str(folder / "other.jsonl")
    args = ["run", "-d", str(folder / "decl.core"), "-q", "SELECT * FROM S WHERE A AS a ; B", "-i", str(folder / "events.csv")]
    args += ["--quiet", option, str(target)]
    if option == "--dead-letter":
        args += ["--on-error", "dead-letter", "-o", other]
    if overwrite:
        args.append("--overwrite")
    COUNTS[f"outputs/{kind}"] += 1
    with time_limit(CASE_SECONDS, (kind, option, overwrite)):
        status, err = run_cli(args)
    assert "Traceback" not in err, err
    assert (folder / "events.csv").read_bytes() == input_before, "the input changed"
    assert not list(folder.glob("*.ceql-tmp")), "a temporary output was left"
    refused = kind in SPECIAL | PROTECTED | {"folder", "link to a folder"} or (
        kind in {"regular", "link to a regular file", "dangling link"} and not overwrite
    )
    if refused:
        assert status == 2 and err.count("error:") == 1, (kind, err)
        assert "--overwrite" not in err or kind in {"regular", "link to a regular file", "dangling link"}, err
        assert _snapshot(target) == before, f"{kind} was changed"
        return
    assert status == 0, (kind, err)
    assert _snapshot(target)[0] == "file", kind  # a regular file now (a link itself is replaced)
    for line in target.read_text().splitlines():
        json.loads(line)
    if kind == "link to a regular file":
        assert (folder / "elsewhere").read_text() == "old\n"  # what the link pointed to is untouched


@settings(max_examples=40, derandomize=True, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(kind=st.sampled_from(TARGET_KINDS), option=st.sampled_from(["-o", "--dead-letter"]), overwrite=st.booleans())
def test_fuzz_special_output_files(tmp_path_factory, kind, option, overwrite) -> None:
    check_output_target(tmp_path_factory.mktemp("target"), kind, option, overwrite)


@pytest.mark.slow
def test_fuzz_special_output_files_exhaustive(tmp_path_factory) -> None:
    import itertools

    for kind, option, overwrite in itertools.product(TARGET_KINDS, ["-o", "--dead-letter"], [False, True]):
        check_output_target(tmp_path_factory.mktemp("target"), kind, option, overwrite)


def test_fuzz_report() -> None:
    """Prints how many cases ran (with ``-s``); runs last in this module."""
    print("\nfuzz cases:", dict(sorted(COUNTS.items())))
