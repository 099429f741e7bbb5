"""Workers split NOT FOLLOWED BY by key (``runtime/parallel_absence.py``): the one-core
compiled result in the same order (deadlines of many keys falling due at one event included),
with the same errors, and the reference's matches; ``ceql run`` reports the last ones at the
end of the input.

The one-core run takes the same batches as the workers' pieces (NOT FOLLOWED BY checks f's
times before g's within a batch, so the first error can depend on the batch)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import ceql
from ceql.lang import ast, print_query
from ceql.runtime import parallel
from ceql.runtime.parallel import ParallelKernel, plan_split, split_of
from tests.support.agreement import assert_agrees, compile_valid, reference_matches
from tests.support.strategies import TEST_DECLARATION, absence_queries, cases

SCHEMA = ceql.declare(TEST_DECLARATION)
FAST = settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))

KEYED = "CREATE STREAM S { " + ", ".join(f"EVENT {t} {{ id:int, k:int, s:string, t:primary_time }}" for t in "ABCD") + " }"
KEYED_SCHEMA = ceql.declare(KEYED)

#: Shapes that split (PARTITION BY of one attribute, any type; the equality form), each with a
#: short window so that many keys fall due at one event.
SPLITS = [
    "SELECT * FROM S WHERE A AS a NOT FOLLOWED BY B AS b PARTITION BY [k] WITHIN 20 NANOSECONDS",
    "SELECT * FROM S WHERE A AS a NOT FOLLOWED BY B AS b PARTITION BY [s] WITHIN 20 NANOSECONDS",
    "SELECT * FROM S WHERE A AS a ; C AS c NOT FOLLOWED BY B AS b PARTITION BY [k] WITHIN 20 NANOSECONDS",
    "SELECT * FROM S WHERE A AS a ; C NOT FOLLOWED BY B AS b PARTITION BY [k] WITHIN 10 EVENTS",
    "SELECT a.id AS first, COUNT(*) AS n FROM S WHERE A AS a ; C+ NOT FOLLOWED BY B PARTITION BY [k] WITHIN 30 NANOSECONDS",
    "SELECT * FROM S WHERE A AS a FILTER a[id > 10] NOT FOLLOWED BY B AS b FILTER b[id < 25] PARTITION BY [k] "
    "WITHIN 25 NANOSECONDS",
    "SELECT * FROM S WHERE A AS a NOT FOLLOWED BY B AS b FILTER b.id = a.id WITHIN 30 NANOSECONDS",
    "SELECT * FROM S WHERE A AS a NOT FOLLOWED BY B AS b FILTER b.k = a.id WITHIN 10 EVENTS",
]


def keyed_events(count: int, seed: int, keys: int = 20) -> pa.Table:
    rng = np.random.default_rng(seed)
    k = rng.integers(0, keys, size=count)
    return pa.table(
        {
            "event_type": pa.array(np.array(list("ABCD"))[rng.integers(0, 4, size=count)]),
            "id": pa.array(rng.integers(0, 30, size=count)),
            "k": pa.array(k),
            "s": pa.array([f"key-{v}" for v in (k * 7919) % keys]),
            "t": pa.array(np.cumsum(rng.integers(0, 3, size=count))),
        }
    )


def collect(matches) -> tuple[list, tuple | None]:
    """The matches until an error, and the error (its type, row and reason)."""
    got: list = []
    try:
        for match in matches:
            got.append(match)
    except ceql.EventError as error:
        return got, (type(error).__name__, error.row, str(error))
    return got, None


def one_core(query: ceql.Query, events, batch: int):
    """The one-core compiled run in batches of ``batch`` events, then the end of the input."""
    evaluator = query.evaluator(engine="compiled")
    rows = events.num_rows if isinstance(events, pa.Table) else len(events)
    for start in range(0, rows, batch):
        part = events.slice(start, batch) if isinstance(events, pa.Table) else events[start : start + batch]
        yield from evaluator.process(part)
    yield from evaluator.finish()


def workers(query: ceql.Query, events, count: int, batch: int, piece: int | None = None):
    """The workers' matches; by default batches of several pieces. An input error ends the run
    after the matches of the pieces before its piece: ``piece`` the one-core batch gives the
    one-core matches before it."""
    return ParallelKernel(query.plan, count, batch_size=batch, piece=piece or max(1, batch // 3)).matches(events)


# ------------------------------------------------------------------ generated cases


@st.composite
def keyed_absence_queries(draw) -> ast.Query:
    """NOT FOLLOWED BY queries, half of them given ``PARTITION BY [id]`` and no CONSUME BY or
    LIMIT (most generated ones split only then)."""
    query = draw(absence_queries(strategies_=(None, "ALL", "STRICT")))
    if draw(st.booleans()):
        query = dataclasses.replace(query, partition_by=(("id",),), consume=None, limit=None)
    return query


@FAST
@given(
    cases(keyed_absence_queries(), max_size=16),
    st.integers(1, 6),
    st.integers(2, 3),
)
def test_generated_not_followed_by_agrees_with_one_core_and_the_reference(case, batch, count) -> None:
    query = compile_valid(case.query, SCHEMA)
    if query is None:
        return
    split = split_of(query.plan)
    event(f"split: {split}" if split else f"one core: {plan_split(query.plan)[1][:60]}")
    if split is None:
        return
    one = collect(one_core(query, case.events, batch))
    many = collect(workers(query, case.events, count, batch))
    assert many == one, f"{print_query(case.query)}\nbatch {batch}, {count} workers"
    if one[1] is None:
        reference = reference_matches(case.query, SCHEMA, case.events)
        assert_agrees(case.query, SCHEMA, many[0], reference, "workers")


@pytest.mark.parametrize("text", SPLITS)
@pytest.mark.parametrize("seed", [1, 2])
def test_many_keys_due_at_one_event_keep_the_one_core_order(text, seed) -> None:
    query = ceql.compile(text, KEYED_SCHEMA)
    assert split_of(query.plan) == "keys", plan_split(query.plan)
    table = keyed_events(3000, seed)
    one = list(query.run(table, engine="compiled"))
    triggers = [m.trigger for m in one]
    assert len(triggers) > len(set(triggers))  # (some event passes several deadlines)
    for count, batch in ((2, 64), (3, 500), (4, 4096)):
        assert list(workers(query, table, count, batch)) == one, (count, batch)
        arrow = ParallelKernel(query.plan, count, batch_size=batch).arrow(table)
        assert arrow.equals(query.run(table, output="arrow", engine="compiled")), (count, batch)


@pytest.mark.parametrize("text", SPLITS[:3])
def test_the_same_error_after_the_same_matches(text) -> None:
    """Time out of order in a later batch: the matches before it, then the one-core error."""
    query = ceql.compile(text, KEYED_SCHEMA)
    table = keyed_events(3000, 3)
    times = table.column("t").to_numpy().copy()
    times[2500] = times[2400] - 1
    bad = table.set_column(4, "t", pa.array(times))
    for batch in (1000, 4096):
        one = collect(one_core(query, bad, batch))
        assert one[1] is not None and one[1][1] == 2500
        assert collect(workers(query, bad, 2, batch, piece=batch)) == one


# ------------------------------------------------------------------ what does not split, and says so


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("SELECT ANY * FROM S WHERE A AS a NOT FOLLOWED BY B AS b PARTITION BY [k] WITHIN 20 NANOSECONDS", "split_keys"),
        ("SELECT * FROM S WHERE A AS a NOT FOLLOWED BY B AS b PARTITION BY [k, s] WITHIN 20 NANOSECONDS", "several"),
        ("SELECT a FROM S WHERE A AS a NOT FOLLOWED BY B AS b FILTER b.id = a.id WITHIN 30 NANOSECONDS", "projection"),
        ("SELECT * FROM S WHERE A AS a NOT FOLLOWED BY B AS b WITHIN 30 NANOSECONDS", "split_keys"),
    ],
)
def test_what_does_not_split_says_why_once(text, why, monkeypatch) -> None:
    query = ceql.compile(text, KEYED_SCHEMA)
    split, reason = plan_split(query.plan)
    assert split is None and why in reason
    assert f"workers: one core: {reason}" in query.explain() or reason in query.explain()
    monkeypatch.setattr(parallel, "MIN_ROWS", 100)
    table = keyed_events(500, 4)
    with pytest.warns(RuntimeWarning) as caught:
        many = query.run(table, output="arrow", workers=2)
    assert [str(w.message) for w in caught] == [f"workers=2 not used, the query runs on one core: {reason}"]
    assert many.equals(query.run(table, output="arrow"))


@pytest.fixture()
def made(monkeypatch) -> list:
    """The ParallelKernels made meanwhile (their arguments)."""
    made: list = []
    original = ParallelKernel.__init__
    monkeypatch.setattr(ParallelKernel, "__init__", lambda self, *a, **k: made.append(a) or original(self, *a, **k))
    return made


def test_query_run_uses_the_workers(monkeypatch, made) -> None:
    monkeypatch.setattr(parallel, "MIN_ROWS", 1000)
    query = ceql.compile(SPLITS[0], KEYED_SCHEMA)
    table = keyed_events(5000, 5)
    assert query.run(table, output="arrow", workers=2).equals(query.run(table, output="arrow", engine="compiled"))
    assert list(query.run(table, workers=3)) == list(query.run(table, engine="compiled"))
    assert len(made) == 2


@pytest.mark.parametrize("text", [SPLITS[0], SPLITS[6]])
def test_cli_workers_write_the_one_core_output(tmp_path, monkeypatch, made, text) -> None:
    """``ceql run --workers 2``: the deadlines passed in the stream, then those still waiting at
    the end of the input (``ParallelKernel.finish``), as with ``--workers 1``."""
    import pyarrow.parquet as pq

    from ceql.cli import main

    declaration = tmp_path / "s.ceql"
    declaration.write_text(KEYED)
    data = tmp_path / "e.parquet"
    pq.write_table(keyed_events(6000, 6), data, row_group_size=2500)
    monkeypatch.setattr(parallel, "CHUNK_MIN_ROWS", 2000)
    outputs = {}
    for count in ("1", "2"):
        out = tmp_path / f"out{count}.jsonl"
        # (--evaluator compiled: the Python path orders the matches due at one event otherwise)
        args = ["run", "--declaration", str(declaration), "-q", text, "--input", str(data), "--quiet"]
        assert main(args + ["--evaluator", "compiled", "--workers", count, "-o", str(out)]) == 0
        outputs[count] = out.read_text()
    assert outputs["2"] == outputs["1"]
    assert outputs["1"].count("\n") > 100
    assert len(made) == 1


def test_max_matches_counts_the_matches_at_the_end_too(monkeypatch) -> None:
    from ceql.errors import LimitError

    monkeypatch.setattr(parallel, "MIN_ROWS", 1000)
    query = ceql.compile(SPLITS[0], KEYED_SCHEMA)
    table = keyed_events(5000, 7)
    total = query.run(table, output="arrow", engine="compiled").num_rows
    at_end = total - sum(1 for m in query.run(table, engine="compiled") if m.trigger < table.num_rows)
    assert at_end > 0  # (some complex events still wait at the end of the input)
    assert query.run(table, output="arrow", workers=2, max_matches=total).num_rows == total
    for lazy in (False, True):
        with pytest.raises(LimitError):
            if lazy:
                list(query.run(table, workers=2, max_matches=total - 1))
            else:
                query.run(table, output="arrow", workers=2, max_matches=total - 1)


@pytest.mark.parametrize("seed", [0, 2, 4])
def test_a_deadline_beyond_int64_is_the_one_core_error(seed) -> None:
    """An error a worker raises (several keys' deadlines overflow in one piece): the matches
    before that piece, then the error of the earliest row, as one core."""
    query = ceql.compile(SPLITS[0], KEYED_SCHEMA)
    table = keyed_events(3000, seed, keys=40)
    times = table.column("t").to_numpy().copy()
    times[1500 + 100 * seed :] += (1 << 63) - 10 - int(times[-1])  # the last events' deadlines overflow
    late = table.set_column(4, "t", pa.array(times))
    for batch in (50, 200):
        one = collect(one_core(query, late, batch))
        assert one[1] is not None and "int64" in one[1][2]
        for count in (2, 3, 4):
            assert collect(workers(query, late, count, batch, piece=batch)) == one, (batch, count)
        # Several pieces to a batch: a batch whose deadlines may overflow runs piece by piece
        one = collect(one_core(query, late, batch // 2))
        assert collect(workers(query, late, 2, batch, piece=batch // 2)) == one, batch
