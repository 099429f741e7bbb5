"""Workers (runtime/parallel.py): several compiled kernels in threads give exactly the one-core
result, in the same order, with the same errors and bounds.

The generated cases are the differential suite's (tests/support/strategies.py): each runs on one core
(``PlanKernel``) and with 2 workers over small batches (so that shards and their overlaps
occur within a short stream); both must be equal match for match, in order, and agree with
``ceql.reference``.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import ceql
from ceql.errors import LimitError
from ceql.runtime import parallel
from ceql.runtime.kernel import PlanKernel
from ceql.runtime.parallel import ParallelKernel, split_of
from tests.support.agreement import assert_agrees, compile_valid, reference_matches
from tests.support.strategies import CORE_OPERATORS, TEST_DECLARATION, cases, shaped_queries

SCHEMA = ceql.declare(TEST_DECLARATION)
FAST = settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
ALL_STRATEGIES = (None, None, "ALL", "ANY", "NEXT", "LAST", "MAX", "STRICT")

clause_cases = cases(
    shaped_queries(3, CORE_OPERATORS + ("and", "all", "unless"), clauses=True, strategies_=ALL_STRATEGIES),
    max_size=20,
)

KEYED = (
    "CREATE STREAM S { " + ", ".join(f"EVENT {t} {{ id:int, k:int, t:primary_time }}" for t in "ABCD") + " }"
)
KEYED_SCHEMA = ceql.declare(KEYED)


def keyed_events(count: int, keys: int = 50, seed: int = 1) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table(
        {
            "event_type": pa.array(np.array(["A", "B", "C", "D"])[rng.integers(0, 4, size=count)]),
            "id": pa.array(np.arange(count)),
            "k": pa.array(rng.integers(0, keys, size=count)),
            "t": pa.array(np.cumsum(rng.integers(0, 5, size=count))),
        }
    )


def one_core(query: ceql.Query, events, arrow: bool):
    runner = PlanKernel(query.plan)
    return runner.arrow(events) if arrow else list(runner.matches(events))


def workers(query: ceql.Query, events, arrow: bool, count: int = 2, batch: int = 64):
    runner = ParallelKernel(query.plan, count, batch_size=batch)
    return runner.arrow(events) if arrow else list(runner.matches(events))


# ------------------------------------------------------------------ generated cases


@FAST
@given(clause_cases, st.integers(2, 8), st.integers(2, 3))
def test_workers_agree_with_one_core_and_the_reference(case, batch, count) -> None:
    compiled = compile_valid(case.query, SCHEMA)
    if compiled is None:
        return
    split = split_of(compiled.plan)
    event(f"split: {split}")
    if split is None:
        return
    one = one_core(compiled, case.events, arrow=False)
    many = workers(compiled, case.events, arrow=False, count=count, batch=batch)
    assert many == one, f"{ceql.lang.print_query(case.query)}\nbatch {batch}, {count} workers"
    assert_agrees(case.query, SCHEMA, many, reference_matches(case.query, SCHEMA, case.events), "workers")


@pytest.mark.property
def test_the_generated_cases_split() -> None:
    """Enough generated queries split by keys and by shards for the test above to mean
    something."""
    found = {"keys": 0, "shards": 0, None: 0}

    @settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
    @given(clause_cases)
    def count(case) -> None:
        compiled = compile_valid(case.query, SCHEMA)
        if compiled is not None:
            found[split_of(compiled.plan)] += 1

    count()
    assert found["keys"] >= 8 and found["shards"] >= 8, found


# ------------------------------------------------------------------ chosen queries

QUERIES = [
    ("keys", "SELECT * FROM S WHERE A : B : C PARTITION BY [k]"),
    ("keys", "SELECT * FROM S WHERE A ; B+ ; C PARTITION BY [k] WITHIN 30 EVENTS"),
    ("keys", "SELECT * FROM S WHERE A ; B ; C PARTITION BY [k] WITHIN 40 [t] CONSUME BY PARTITION"),
    ("keys", "SELECT ANY * FROM S WHERE A ; B ; C PARTITION BY [k] WITHIN 200 EVENTS LIMIT 1"),
    ("shards", "SELECT * FROM S WHERE A ; B ; C WITHIN 10 EVENTS"),
    ("shards", "SELECT * FROM S WHERE A ; (B OR D)+ ; C WITHIN 12 [t]"),
    ("shards", "SELECT ANY * FROM S WHERE A ; B ; C WITHIN 9 EVENTS"),
    ("shards", "SELECT * FROM S WHERE A : B WITHIN 3 EVENTS LIMIT 1"),
    (None, "SELECT * FROM S WHERE A ; B ; C"),
    (None, "SELECT * FROM S WHERE A ; B WITHIN 10 EVENTS CONSUME BY ANY"),
]


@pytest.mark.parametrize(("split", "text"), QUERIES)
def test_split_of(split, text) -> None:
    assert split_of(ceql.compile(text, KEYED_SCHEMA).plan) == split


@pytest.mark.parametrize("text", [text for split, text in QUERIES if split is not None])
@pytest.mark.parametrize("batch", [7, 500])
@pytest.mark.parametrize("count", [2, 3])
def test_chosen_queries_same_result_same_order(text, batch, count) -> None:
    query = ceql.compile(text, KEYED_SCHEMA)
    table = keyed_events(1500)
    one = one_core(query, table, arrow=True)
    assert one.num_rows > 0
    assert workers(query, table, arrow=True, count=count, batch=batch).equals(one)
    assert workers(query, table.slice(0, 800), arrow=False, count=count, batch=batch) == one_core(
        query, table.slice(0, 800), arrow=False
    )


def test_a_window_longer_than_a_batch_runs_on_the_carrying_worker() -> None:
    query = ceql.compile("SELECT * FROM S WHERE A ; B ; C WITHIN 50 EVENTS", KEYED_SCHEMA)
    table = keyed_events(2000)
    assert workers(query, table, arrow=True, batch=40).equals(one_core(query, table, arrow=True))
    runner = ParallelKernel(query.plan, 2, batch_size=40)
    assert runner._overlaps([0, 20, 40], 0, None) is None  # the window reaches into the batch before
    assert runner._overlaps([0, 200, 400], 0, None) == [0, 149]


def test_string_keys_run_on_one_core() -> None:
    schema = ceql.declare("CREATE STREAM S { EVENT A { k:string }, EVENT B { k:string } }")
    assert split_of(ceql.compile("SELECT * FROM S WHERE A ; B PARTITION BY [k]", schema).plan) is None


# ------------------------------------------------------------------ the API


def test_run_with_workers_uses_them_on_large_inputs(monkeypatch) -> None:
    query = ceql.compile("SELECT * FROM S WHERE A : B : C PARTITION BY [k]", KEYED_SCHEMA)
    table = keyed_events(5000)
    made = []
    original = ParallelKernel.__init__

    def spy(self, *args, **kwargs):
        made.append(args)
        original(self, *args, **kwargs)

    monkeypatch.setattr(ParallelKernel, "__init__", spy)
    monkeypatch.setattr(parallel, "MIN_ROWS", 1000)
    expected = query.run(table, output="arrow", engine="compiled")
    assert not made
    assert query.run(table, output="arrow", workers=2).equals(expected)
    assert len(made) == 1
    assert list(query.run(table, workers=2)) == list(query.run(table, engine="compiled"))
    assert len(made) == 2
    # Small inputs, workers=1 and the Python engine stay on one core.
    query.run(table.slice(0, 999), output="arrow", workers=2)
    query.run(table, output="arrow", workers=1)
    query.run(table, output="arrow", workers=2, engine="python")
    assert len(made) == 2


def test_max_matches_with_workers(monkeypatch) -> None:
    monkeypatch.setattr(parallel, "MIN_ROWS", 1000)
    query = ceql.compile("SELECT * FROM S WHERE A ; B ; C WITHIN 10 EVENTS", KEYED_SCHEMA)
    table = keyed_events(5000)
    total = query.run(table, output="arrow", engine="compiled").num_rows
    with pytest.raises(LimitError):
        query.run(table, output="arrow", workers=2, max_matches=total - 1)
    assert query.run(table, output="arrow", workers=2, max_matches=total).num_rows == total
    with pytest.raises(LimitError):
        list(query.run(table, workers=2, max_matches=total - 1))


@pytest.mark.parametrize("text", [text for split, text in QUERIES if split is not None and "[t]" in text])
def test_the_same_error_after_the_same_matches(text) -> None:
    """Out-of-order time in a later batch: the matches of the earlier batches, then the
    one-core run's error (row and reason)."""
    query = ceql.compile(text, KEYED_SCHEMA)
    table = keyed_events(3000)
    times = table.column("t").to_numpy().copy()
    times[2500] = times[2400] - 1
    times[2700] = times[2400] - 5
    bad = table.set_column(3, "t", pa.array(times))

    def collect(matches):
        got = []
        try:
            for match in matches:
                got.append(match)
        except ceql.EventError as error:
            return got, (error.row, str(error))
        raise AssertionError("no error")

    one = collect(PlanKernel(query.plan).matches(bad))
    many = collect(ParallelKernel(query.plan, 2, batch_size=65_536).matches(bad))
    assert one[1][0] in (2500, 2700)  # the first out-of-order event of a type the query reads
    assert many[1] == one[1]
    small = collect(ParallelKernel(query.plan, 2, batch_size=1000).matches(bad))
    reference = collect(_batched(query.plan, bad, 1000))
    assert small == reference


def _batched(plan, table: pa.Table, size: int):
    runner = PlanKernel(plan)
    for start in range(0, table.num_rows, size):
        yield from runner.matches(table.slice(start, size))


# ------------------------------------------------------------------ ceql run --workers


@pytest.mark.parametrize("text", [QUERIES[0][1], QUERIES[5][1]])
def test_cli_workers_write_the_one_core_output(tmp_path, monkeypatch, text) -> None:
    import pyarrow.parquet as pq

    from ceql.cli import main

    declaration = tmp_path / "s.ceql"
    declaration.write_text(KEYED)
    data = tmp_path / "e.parquet"
    pq.write_table(keyed_events(6000), data, row_group_size=2500)
    made = []
    original = ParallelKernel.__init__

    def spy(self, *args, **kwargs):
        made.append(args)
        original(self, *args, **kwargs)

    monkeypatch.setattr(ParallelKernel, "__init__", spy)
    monkeypatch.setattr(parallel, "CHUNK_MIN_ROWS", 2000)
    outputs = {}
    for count in ("1", "2", "0"):
        out = tmp_path / f"out{count}.jsonl"
        args = ["run", "--declaration", str(declaration), "-q", text, "--input", str(data), "--quiet"]
        assert main(args + ["--workers", count, "-o", str(out)]) == 0
        outputs[count] = out.read_text()
    assert outputs["1"] and outputs["2"] == outputs["1"] == outputs["0"]
    assert len(made) == (2 if parallel.cores() > 1 else 1)  # --workers 2, and 0 (every core)
