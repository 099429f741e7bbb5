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
from ceql.runtime import parallel, parallel_keys
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
    # (several pieces to a batch, more than the workers: a keyed worker makes a kernel call per
    # group of ``count`` pieces, ParallelKernel._groups)
    runner = ParallelKernel(query.plan, count, batch_size=batch, piece=max(1, batch // 3))
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
    # Measures and checks per complex event (kept values at the worker's positions).
    ("keys", "SELECT a.id AS first, COUNT(b) AS n, LAST(b).t AS at FROM S WHERE A AS a ; B+ AS b ; C PARTITION BY [k] WITHIN 30 EVENTS"),
    ("keys", "SELECT * FROM S WHERE (A AS a ; B AS b ; C AS c) FILTER a.id + 20 > c.id PARTITION BY [k] WITHIN 90 EVENTS"),
    ("keys", "SELECT LAST * FROM S WHERE A ; B ; C PARTITION BY [k] WITHIN 60 EVENTS"),
    ("keys", "SELECT STRICT * FROM S WHERE A ; B ; C PARTITION BY [k]"),
    ("keys", "SELECT * FROM S WHERE (A AS a ; B AS b) FILTER a.t < b.t PARTITION BY [k] WITHIN 40 [t] CONSUME BY PARTITION"),
    ("shards", "SELECT a.id AS first, COUNT(b) AS n FROM S WHERE A AS a ; B+ AS b ; C WITHIN 9 EVENTS"),
    ("shards", "SELECT * FROM S WHERE (A AS a ; B AS b ; C AS c) FILTER a.id + 4 > c.id WITHIN 8 [t]"),
    ("shards", "SELECT NEXT * FROM S WHERE A ; (B OR D) ; C WITHIN 7 EVENTS"),
    ("shards", "SELECT MAX * FROM S WHERE A ; (B OR D)+ ; C WITHIN 7 EVENTS"),  # (MAX over the tECS: issue 40)
    # NEXT / LAST with a condition on many candidates: ranked over the tECS (issue 40).
    ("shards", "SELECT NEXT * FROM S WHERE (A AS a ; (B OR D)+ ; C AS c) FILTER c.id > a.id WITHIN 7 EVENTS"),
    ("keys", "SELECT LAST * FROM S WHERE (A AS a ; (B OR D)+ ; C AS c) FILTER c.id > a.id PARTITION BY [k] WITHIN 30 EVENTS"),
    (None, "SELECT MAX * FROM S WHERE (A AS a ; (B OR D)+ ; C AS c) FILTER c.id > a.id WITHIN 7 EVENTS"),
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
    assert runner._overlaps([0, 20, 40], 0, None) == [0, None]  # into the batch before: one run
    assert runner._overlaps([0, 200, 400], 0, None) == [0, 149]
    three = ParallelKernel(query.plan, 3, batch_size=120)
    assert three._overlaps([0, 40, 80, 120], 0, None) == [0, None, 29]  # the second run joins the first
    assert workers(query, table, arrow=True, count=3, batch=120).equals(one_core(query, table, arrow=True))


MIXED = (
    "CREATE STREAM S { EVENT A { s:string, v:double, k:int, t:primary_time }, "
    "EVENT B { s:string, v:double, k:int, t:primary_time }, EVENT C { s:string, w:int, k:int, t:primary_time } }"
)


def mixed_events(count: int, seed: int = 3) -> pa.Table:
    """String, double (integral, fractional, NaN, null) and int keys, with nulls."""
    rng = np.random.default_rng(seed)
    strings = np.array(["x", "y", "zé", "", "w"], dtype=object)[rng.integers(0, 5, size=count)]
    doubles = rng.integers(0, 6, size=count).astype(float)
    doubles[rng.random(count) < 0.2] += 0.5
    doubles[rng.random(count) < 0.05] = np.nan
    return pa.table(
        {
            "event_type": pa.array(np.array(["A", "B", "C"])[rng.integers(0, 3, size=count)]),
            "s": pa.array([None if i % 17 == 0 else v for i, v in enumerate(strings)], pa.string()),
            "v": pa.array(doubles),
            "w": pa.array(rng.integers(0, 6, size=count)),
            "k": pa.array(rng.integers(0, 7, size=count)),
            "t": pa.array(np.cumsum(rng.integers(0, 3, size=count))),
        }
    )


@pytest.mark.parametrize(
    "text",
    [
        "SELECT * FROM S WHERE A ; B ; C PARTITION BY [s] WITHIN 30 EVENTS",
        "SELECT * FROM S WHERE A : B PARTITION BY [s, k]",
        "SELECT * FROM S WHERE A ; B+ PARTITION BY [v] WITHIN 20 [t]",
        "SELECT * FROM S WHERE A ; C PARTITION BY [v], [w] WITHIN 25 EVENTS",  # 3.0 is 3
    ],
)
@pytest.mark.parametrize("count", [2, 3])
def test_string_double_and_multi_attribute_keys_split(text, count) -> None:
    query = ceql.compile(text, ceql.declare(MIXED))
    assert split_of(query.plan) == "keys"
    table = mixed_events(1200)
    one = one_core(query, table, arrow=True)
    assert one.num_rows > 0
    assert workers(query, table, arrow=True, count=count, batch=100).equals(one)
    assert workers(query, table, arrow=False, count=count, batch=100) == one_core(query, table, arrow=False)


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


# (With a per-match FILTER, the one-core kernel does not check time order today: no error to
# compare.)
@pytest.mark.parametrize(
    "text", [text for split, text in QUERIES if split is not None and "[t]" in text and "FILTER" not in text]
)
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


# ------------------------------------------------------------------ saying how it splits


def test_explain_says_how_a_query_splits_and_why_not() -> None:
    def said(text: str) -> str:
        lines = ceql.compile(text, KEYED_SCHEMA).explain().splitlines()
        return next(line.strip() for line in lines if line.strip().startswith("workers:"))

    assert said(QUERIES[0][1]).startswith("workers: split by the partition key [k]")
    assert said("SELECT * FROM S WHERE A ; B ; C WITHIN 10 EVENTS").startswith("workers: split by runs of events")
    assert said("SELECT * FROM S WHERE A ; B ; C") == (
        "workers: one core: no PARTITION BY and no WITHIN window: a complex event may span the whole stream"
    )
    assert "CONSUME BY ANY" in said("SELECT * FROM S WHERE A ; B WITHIN 10 EVENTS CONSUME BY ANY")


def test_workers_that_cannot_be_used_are_named_once(monkeypatch, caplog) -> None:
    import logging
    import warnings

    monkeypatch.setattr(parallel, "MIN_ROWS", 1000)
    query = ceql.compile("SELECT * FROM S WHERE A : B", KEYED_SCHEMA)
    table = keyed_events(3000)
    with warnings.catch_warnings(record=True) as caught, caplog.at_level(logging.INFO, logger="ceql"):
        warnings.simplefilter("always")
        expected = query.run(table, output="arrow", engine="compiled")
        # (the ceql logger also says which engine runs: only the workers' records count here)
        assert not caught and not [r for r in caplog.records if "workers" in r.getMessage()]
        assert query.run(table, output="arrow", workers=4).equals(expected)
    said = [r for r in caplog.records if "workers" in r.getMessage()]
    assert len(caught) == 1 and len(said) == 1
    assert "workers=4 not used, the query runs on one core: no PARTITION BY" in str(caught[0].message)
    assert said[0].getMessage() == str(caught[0].message)
    splits = ceql.compile(QUERIES[0][1], KEYED_SCHEMA)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        splits.run(table.slice(0, 10), output="arrow", workers=4)  # small: one core, by design
    assert not caught
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        splits.run(table, output="arrow", workers=2, on_error="skip")
    assert [str(w.message) for w in caught] == ["workers=2 not used, the query runs on one core: on_error='skip' runs on one core"]
    assert caught[0].filename == __file__


def test_cli_says_once_why_asked_workers_are_not_used(tmp_path, monkeypatch, capsys) -> None:
    import pyarrow.parquet as pq

    from ceql.cli import main

    monkeypatch.setattr(parallel, "CHUNK_MIN_ROWS", 100)
    declaration = tmp_path / "s.ceql"
    declaration.write_text(KEYED)
    data = tmp_path / "e.parquet"
    pq.write_table(keyed_events(3000), data, row_group_size=500)
    args = ["run", "-d", str(declaration), "-q", "SELECT * FROM S WHERE A : B", "-i", str(data), "--quiet"]
    assert main(args + ["--workers", "2", "-o", str(tmp_path / "a.jsonl")]) == 0
    err = capsys.readouterr().err
    assert err.count("--workers 2 not used, the query runs on one core: no PARTITION BY") == 1
    assert main(args + ["-o", str(tmp_path / "b.jsonl")]) == 0  # the default: every core where it helps
    assert "not used" not in capsys.readouterr().err


def test_a_shard_whose_first_rows_have_no_time_looks_back_past_the_batch() -> None:
    """Rows of a type the window does not concern start the batch: the window before the cut
    reaches into the batch before (found by the generated cases)."""
    query = ceql.compile("SELECT * FROM S WHERE A OR (A AS x ALL C AS x) AS x WITHIN 2 NANOSECONDS", SCHEMA)
    kinds = "DCAABAACDA"
    times = [1, 3, 3, 3, 3, 3, 3, 3, 3, 3]
    events = [{"event_type": k, "id": i, "v": 1, "s": "x", "t": t} for i, (k, t) in enumerate(zip(kinds, times))]
    one = one_core(query, events, arrow=False)
    assert (1, 6) in [m.positions for m in one]
    assert workers(query, events, arrow=False, count=2, batch=4) == one


# ------------------------------------------------------------------ splitting a piece


def _owners(table: pa.Table, types: np.ndarray, groups: list, count: int) -> np.ndarray:
    """The worker of each row, as ``split_rows`` groups them (checking the grouping)."""
    rows, bounds = parallel_keys.split_rows(table, types, groups, count)
    assert bounds[0] == 0 and bounds[-1] == table.num_rows and np.all(np.diff(bounds) >= 0)
    owner = np.full(table.num_rows, -1)
    for w in range(count):
        mine = rows[bounds[w] : bounds[w + 1]]
        assert np.all(np.diff(mine) > 0)  # ascending: each worker sees its rows in stream order
        owner[mine] = w
    assert (owner >= 0).all()  # every row once
    return owner


@pytest.mark.parametrize("count", [2, 3, 5])
def test_a_key_goes_to_one_worker_whatever_its_piece_holds(count) -> None:
    """The worker of a key is a function of the key alone: an int key column with nulls in one
    piece and none in the next, and string columns sliced at any offset, route alike."""
    rng = np.random.default_rng(count)
    n = 3000
    ints = rng.integers(-50, 50, size=n)
    words = np.array(["a", "b", "zé", "", "longer key", "ü" * 9], dtype=object)[rng.integers(0, 6, size=n)]
    table = pa.table({"k": pa.array(ints), "s": pa.array(words, pa.string())})
    with_nulls = pa.table(
        {"k": pa.array(ints, mask=np.arange(n) % 7 == 0), "s": pa.array(words, pa.string(), mask=np.arange(n) % 5 == 0)}
    )
    types = np.zeros(n, dtype=np.int64)
    for attribute, column in (("k", ints), ("s", words)):
        groups = [((attribute,), np.array([0]))]
        seen: dict = {}
        for source in (table, with_nulls):
            for start in range(0, n, 700):  # slices: string offsets that do not start at 0
                piece = source.slice(start, 700)
                owner = _owners(piece, types[: piece.num_rows], groups, count)
                valid = piece.column(attribute).is_valid().to_numpy(zero_copy_only=False)
                assert (owner[~valid] == 0).all()  # no key: worker 0, which skips it
                for value, w in zip(column[start : start + 700][valid], owner[valid]):
                    assert seen.setdefault(value, w) == w, (attribute, value)
        assert len(set(seen.values())) > 1  # the keys do spread over the workers


def test_a_key_column_with_nulls_in_some_pieces_gives_the_one_core_result() -> None:
    query = ceql.compile("SELECT * FROM S WHERE A : B : C PARTITION BY [k]", KEYED_SCHEMA)
    table = keyed_events(4000, keys=9)
    mask = np.zeros(table.num_rows, dtype=bool)
    mask[1000:1200:13] = True  # nulls in a few pieces only
    table = table.set_column(2, "k", pa.array(table.column("k").to_numpy(), mask=mask))
    one = one_core(query, table, arrow=True)
    assert one.num_rows > 0
    for count in (2, 3):
        assert workers(query, table, arrow=True, count=count, batch=200).equals(one)


MIXED_INT = (
    "CREATE STREAM S { EVENT A { v:int, k:int, u:primary_time }, EVENT B { v:double, k:int, w:primary_time }, "
    "EVENT C { v:int, k:int, u:primary_time }, EVENT D { v:int, k:int, u:primary_time } }"
)


@pytest.mark.parametrize(
    "text",
    [
        # v is int in A and C, double in B: the predicate reads each row's event type
        "SELECT * FROM S WHERE A AS a ; B AS b ; C AS c FILTER a[v / 2 = 1] AND b[v / 2 > 1] PARTITION BY [k] WITHIN 40 EVENTS",
        # a window over a different attribute per type, checked per match: read by event type
        "SELECT * FROM S WHERE (A AS a ; B AS b) FILTER a.v < b.v PARTITION BY [k] WITHIN 6 NANOSECONDS",
    ],
)
@pytest.mark.filterwarnings("ignore::ceql.errors.InputWarning")
def test_a_worker_reads_event_types_where_the_kernel_does(text) -> None:
    """A worker's rows come with event_type rebuilt from the type indexes (parallel._share):
    predicates over an attribute of mixed types, windows of several attributes and events of
    types the query does not name read it as one core does."""
    rng = np.random.default_rng(11)
    n = 3000
    table = pa.table(
        {
            "event_type": pa.array(np.array(["A", "B", "C", "D"])[rng.integers(0, 4, size=n)]),
            "v": pa.array(rng.integers(0, 8, size=n)),
            "k": pa.array(rng.integers(0, 5, size=n)),
            "u": pa.array(np.arange(n) * 2),
            "w": pa.array(np.arange(n) * 2 + 1),
        }
    )
    query = ceql.compile(text, ceql.declare(MIXED_INT))
    assert split_of(query.plan) == "keys"
    one = one_core(query, table, arrow=True)
    assert one.num_rows > 0
    for count in (2, 3):
        assert workers(query, table, arrow=True, count=count, batch=300).equals(one)


def test_merged_parts_read_each_workers_keys_by_its_own_codes() -> None:
    """The merge shifts each worker's partition codes to its key list in a chain (no key
    copied): every complex event keeps its own key, parts sharing a list share its codes."""
    from ceql.runtime.arrow import MatchColumns
    from ceql.runtime.parallel_merge import ChainedKeys, merge

    def part(triggers: list[int], codes: list[int], keys: list[tuple]) -> MatchColumns:
        n = len(triggers)
        return MatchColumns(
            np.array(triggers), np.arange(n + 1), np.array(triggers), {}, np.array(codes), keys
        )

    first, second = [("a",), ("b",)], [("c",), ("d",), ("e",)]
    parts = [part([1, 4], [1, -1], first), part([2, 3], [2, 0], second), part([6], [0], first), part([5], [1], [("f",), ("g",)])]
    merged = merge(parts)
    assert merged.trigger.tolist() == [1, 2, 3, 4, 5, 6]
    assert isinstance(merged.keys, ChainedKeys)
    got = [None if c < 0 else merged.keys[int(c)] for c in merged.partition]
    assert got == [("b",), ("e",), ("c",), None, ("g",), ("a",)]
    assert len(merged.keys) == 7  # each list once: the parts of ``first`` share it
