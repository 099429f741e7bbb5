"""A time-boxed differential fuzz: every way to run a query agrees with ``ceql.reference``.

Per generated case (a query with every clause, or every construct of the semantics, over a
stream whose values are often at the int64 and double edges: -2**63, 2**63 - 1, +-2**62, NaN,
+-inf, -0.0, 1e20, nulls, ids and times near both ends of int64), it checks:

- the Python evaluator and the compiled kernel (where it runs the query), each fed in random
  batches with the state saved and loaded into a fresh evaluator half-way (``push`` with a state
  round trip), against the reference (tests/support/agreement.py);
- Arrow output (``Query.run(output="arrow")``) against the same path's matches;
- the command line (``ceql run`` in this process, JSON Lines in, JSON Lines out, with
  ``--evaluator python`` and ``compiled``) against the same path's matches.

Run ``python -m tests.support.fuzz_differential --minutes 10`` (``--cpu``: 10 minutes of CPU time, for a
busy machine; it prints its case counts and the time taken; exit status 1
and the shrunk case on the first disagreement). ``tests/test_fuzz.py`` runs it briefly in CI
and for a few minutes in the slow suite.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import os
import sys
import tempfile
import time
from collections import Counter

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ceql
from ceql.cli import main as cli_main
from ceql.lang import print_query
from tests.support.agreement import (
    assert_agrees,
    compile_valid,
    engine_paths,
    known_bug,
    reference_matches,
    run_engine,
)
from tests.support.cross_strategies import extended_matching_queries
from tests.support.strategies import (
    CORE_OPERATORS,
    TEST_DECLARATION,
    WINDOWS,
    Case,
    matching_streams,
    positive_types,
    shaped_queries,
)

SCHEMA = ceql.declare(TEST_DECLARATION)
I64 = 1 << 63
INT_EDGES = [-I64, -I64 + 1, -(2**62) - 1, -(2**62), -1, 0, 1, 2, 2**62, 2**62 + 1, I64 - 2, I64 - 1]
#: v is int for A, B, D and double for C (TEST_DECLARATION): stored as double, so an int v has
#: an exact double only up to 2**53 (beyond, the row is refused by design; id and t take all of int64).
V_EDGES = [-(2**53), -(2**53) + 1, -1, 0, 1, 2, 2**53 - 1, 2**53]
DOUBLE_EDGES = [-math.inf, -1e300, -(2.0**63), -1e20, -0.5, -0.0, 0.0, 0.5, 1.0, 1e20, 2.0**62, 2.0**63, math.inf, math.nan]
TIME_BASES = [0, 0, -I64 + 10, I64 - 200, -(2**62), 2**62]
COUNTS: Counter = Counter()

clause_queries = shaped_queries(
    3,
    CORE_OPERATORS + ("and", "all", "unless"),
    clauses=True,
    strategies_=(None, None, "ALL", "ANY", "NEXT", "LAST", "MAX", "STRICT"),
    windows=WINDOWS,
)


@st.composite
def edge_cases(draw) -> Case:
    """A query and a stream of its types with values at the edges (and nulls)."""
    query = draw(st.one_of(clause_queries, extended_matching_queries()))
    types = tuple(sorted(positive_types(query.formula))) or ("A", "B", "C")
    events = draw(matching_streams(types, 4, 9, nulls=True))
    base = draw(st.sampled_from(TIME_BASES))
    edgy = draw(st.sampled_from([0.0, 0.3, 0.7]))
    for event in events:
        event["t"] += base
        if draw(st.floats(0, 1)) < edgy:
            event["v"] = draw(st.sampled_from(DOUBLE_EDGES if event["event_type"] == "C" else V_EDGES))
        if draw(st.floats(0, 1)) < edgy / 2:
            event["id"] = draw(st.sampled_from(INT_EDGES))
    cuts = tuple(draw(st.lists(st.integers(1, max(1, len(events) - 1)), max_size=3)))
    save_at = draw(st.integers(1, max(1, len(events) - 1)))
    return Case(query, events, cuts, save_at)


def _keys(matches) -> Counter:
    return Counter((m.trigger, tuple(m.positions)) for m in matches)


def _arrow_keys(table) -> Counter:
    return Counter(zip(table.column("trigger").to_pylist(), map(tuple, table.column("positions").to_pylist())))


def _beyond_int64(matches) -> bool:
    """Whether a measure holds an integer Arrow's int64 cannot (then Arrow output refuses)."""

    def big(value) -> bool:
        if isinstance(value, tuple):
            return any(big(v) for v in value)
        return isinstance(value, int) and not isinstance(value, bool) and not -I64 <= value < I64

    return any(big(v) for m in matches for v in m.measures.values())


def _cli(folder: str, text: str, events: list[dict], path: str) -> Counter | str:
    """``ceql run`` in this process: the matches' (trigger, positions), or the error text."""
    source = os.path.join(folder, "events.jsonl")
    with open(source, "w") as handle:
        for event in events:
            handle.write(json.dumps(event) + "\n")
    declaration = os.path.join(folder, "decl.core")
    if not os.path.exists(declaration):
        with open(declaration, "w") as handle:
            handle.write(TEST_DECLARATION)
    output = os.path.join(folder, "out.jsonl")
    args = ["run", "-d", declaration, "-q", text, "-i", source, "-o", output, "--overwrite", "--quiet"]
    args += ["--evaluator", path, "--max-matches", "0"]
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        status = cli_main(args)
    if status != 0:
        return err.getvalue()
    with open(output) as handle:  # strict JSON: a bare NaN or Infinity is an error
        rows = [json.loads(line, parse_constant=_invalid_json) for line in handle]
    return Counter((r["trigger"], tuple(r["positions"])) for r in rows)


def _invalid_json(constant: str):
    raise AssertionError(f"JSON Lines output holds {constant}, which is not JSON")


def check(case: Case, folder: str) -> None:
    """One case through every path (see the module docstring)."""
    COUNTS["cases"] += 1
    compiled = compile_valid(case.query, SCHEMA)
    if compiled is None:
        COUNTS["invalid query"] += 1
        return
    text = print_query(case.query)
    try:
        list(compiled.run(case.events, engine="python"))
    except ceql.EventError as error:
        # An input the engine refuses by its rules (v is int for A and double for C, and an int
        # beyond 2**53 has no exact double): every path refuses it, with the same reason.
        for path in engine_paths(compiled):
            try:
                list(compiled.run(case.events, engine=path))
            except ceql.EventError as other:
                assert other.reason == error.reason, f"{text}\n{other} != {error}"
            else:
                raise AssertionError(f"[{path}] accepted what the Python path refused: {error}")
            found = _cli(folder, text, case.events, path)
            assert isinstance(found, str) and "error:" in found and "Traceback" not in found, found
        COUNTS["input refused by every path"] += 1
        return
    reference = reference_matches(case.query, SCHEMA, case.events)
    COUNTS["with matches" if reference else "no match"] += 1
    for path in engine_paths(compiled):
        if known_bug(case.query, path, case.save_at) is not None:  # tests/test_known_bugs.py
            COUNTS["known bug skipped"] += 1
            continue
        COUNTS[f"path {path}"] += 1
        pushed = run_engine(compiled, case.events, path, case.cuts, case.save_at)
        assert_agrees(case.query, SCHEMA, pushed, reference, f"{path}, cuts {list(case.cuts)}, saved at {case.save_at}")
        whole = list(compiled.run(case.events, engine=path))
        assert_agrees(case.query, SCHEMA, whole, reference, f"{path}, one batch")
        deterministic = case.query.limit is None and case.query.strategy != "ANY"
        try:
            table = compiled.run(case.events, engine=path, output="arrow")
        except ceql.errors.CeqlError as error:
            assert "does not fit" in str(error) and _beyond_int64(whole), f"{text}\n{error}"
            COUNTS["arrow: measure beyond int64 refused"] += 1
        else:
            COUNTS["arrow"] += 1
            if deterministic:
                assert _arrow_keys(table) == _keys(whole), f"[arrow, {path}] {text}"
            else:
                assert table.num_rows == len(whole), f"[arrow, {path}] {text}"
        found = _cli(folder, text, case.events, path)
        assert not isinstance(found, str) or "Traceback" not in found, found
        if isinstance(found, str) and "does not fit" in found:
            assert _beyond_int64(whole), f"[cli, {path}] {text}\n{found}"
            COUNTS["cli: measure beyond int64 refused"] += 1
            continue
        if isinstance(found, str):
            # The command line types every declared column (the API only those the query
            # reads): an int beyond 2**53 in v, a double for C, is a bad row there.
            assert "cannot be stored exactly as a double" in found, f"[cli, {path}] {text}\n{found}"
            COUNTS["cli: a column the query does not read refused"] += 1
            continue
        COUNTS["cli"] += 1
        if deterministic:
            assert found == _keys(whole), f"[cli, {path}] {text}\n{found}\n{_keys(whole)}"
        else:
            assert sum(found.values()) == len(whole), f"[cli, {path}] {text}"


def run(seconds: float, examples: int = 100, derandomize: bool = False, clock=time.monotonic) -> Counter:
    """Run cases for about ``seconds`` of ``clock`` (in rounds of ``examples`` generated cases)."""
    deadline = clock() + seconds
    with tempfile.TemporaryDirectory() as folder:

        @settings(
            max_examples=examples,
            deadline=None,
            database=None,
            derandomize=derandomize,
            suppress_health_check=list(HealthCheck),
        )
        @given(edge_cases())
        def one_round(case: Case) -> None:
            check(case, folder)

        while True:
            one_round()
            COUNTS["rounds"] += 1
            if derandomize or clock() >= deadline:
                break
    return COUNTS


def cli() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--cpu", action="store_true", help="count CPU time, not wall time (a busy machine)")
    args = parser.parse_args()
    started, cpu = time.monotonic(), time.process_time()
    try:
        counts = run(args.minutes * 60, clock=time.process_time if args.cpu else time.monotonic)
    finally:
        elapsed = time.monotonic() - started
        print(f"differential fuzz: {elapsed:.0f} s ({time.process_time() - cpu:.0f} s CPU)", file=sys.stderr)
        print(json.dumps(dict(sorted(COUNTS.items())), indent=1), file=sys.stderr)
    return 0 if counts else 1


if __name__ == "__main__":
    sys.exit(cli())
