"""No cliff (issue 40): ``engine="auto"`` picks the compiled kernel whatever the input's form
(Arrow, a RecordBatchReader, an iterator of batches or dicts, a list of dicts), decides in one
place (runtime/backend.py), and says once when a query cannot run on the kernel."""

from __future__ import annotations

import logging
import warnings

import pyarrow as pa
import pytest

import ceql
from ceql.errors import SlowPathWarning
from ceql.runtime import backend
from ceql.runtime.kernel import warm

SCHEMA = ceql.declare(
    "CREATE STREAM S { EVENT A { k:int, v:int, t:primary_time }, EVENT B { k:int, v:int, t:primary_time }, "
    "EVENT C { k:int, v:int, t:primary_time } }"
)
QUERY = "SELECT * FROM S WHERE A AS a ; B AS b ; C AS c FILTER c.v > a.v PARTITION BY [k] WITHIN 20 EVENTS"
ROWS = 3_000


def events(n: int = ROWS) -> list[dict]:
    return [
        {"event_type": "ABC"[(i * i + i // 3) % 3], "k": i % 3, "v": (i * 13) % 11, "t": i} for i in range(n)
    ]


def table(n: int = ROWS) -> pa.Table:
    return pa.Table.from_pylist(events(n))


def keyed(matches) -> list:
    return [(m.trigger, m.positions, m.labels) for m in matches]


@pytest.fixture
def small_thresholds(monkeypatch):
    """Thresholds small enough for test inputs; the kernel's machine code counts as ready."""
    monkeypatch.setattr(backend, "KERNEL_MIN_ROWS", 1_000)
    monkeypatch.setattr(warm, "ready", lambda: True)


def expected() -> list:
    return keyed(ceql.compile(QUERY, SCHEMA).run(events(), engine="python"))


@pytest.mark.parametrize(
    "form",
    [
        "table",
        "reader",
        "batches",
        "dict iterator",
        "dict list",
    ],
)
def test_every_input_form_runs_on_the_kernel(small_thresholds, form) -> None:
    data = {
        "table": lambda: table(),
        "reader": lambda: pa.RecordBatchReader.from_batches(table().schema, table().to_batches(max_chunksize=500)),
        "batches": lambda: iter(table().to_batches(max_chunksize=500)),
        "dict iterator": lambda: iter(events()),
        "dict list": lambda: events(),
    }[form]()
    evaluator = ceql.compile(QUERY, SCHEMA).evaluator()
    found = keyed(evaluator.run(data))
    assert evaluator.backend.name == "kernel"
    assert found == expected() and found


def test_arrow_output_of_a_reader_runs_on_the_kernel(small_thresholds) -> None:
    evaluator = ceql.compile(QUERY, SCHEMA).evaluator()
    reader = pa.RecordBatchReader.from_batches(table().schema, table().to_batches(max_chunksize=500))
    out = evaluator.arrow(reader)
    assert evaluator.backend.name == "kernel"
    assert out.num_rows == len(expected())


def test_a_short_stream_stays_on_python(small_thresholds) -> None:
    evaluator = ceql.compile(QUERY, SCHEMA).evaluator()
    few = events(200)
    found = keyed(evaluator.run(iter(few)))
    assert evaluator.backend.name == "python"
    assert found == keyed(ceql.compile(QUERY, SCHEMA).run(few, engine="python"))


def test_a_cold_kernel_compiles_for_a_long_stream(monkeypatch) -> None:
    """While the machine code is not ready, a stream is read ahead up to COLD_MAX_ROWS events:
    reaching it starts the kernel (compiling now) instead of staying on Python."""
    monkeypatch.setattr(backend, "KERNEL_MIN_ROWS", 1_000)
    monkeypatch.setattr(warm, "COLD_MAX_ROWS", 2_000)
    monkeypatch.setattr(warm, "ready", lambda: False)
    monkeypatch.setattr(warm, "warm_in_background", lambda: False)
    evaluator = ceql.compile(QUERY, SCHEMA).evaluator()
    found = keyed(evaluator.run(iter(table().to_batches(max_chunksize=500))))
    assert evaluator.backend.name == "kernel"
    assert found == expected()


def test_a_stream_of_small_batches_moves_to_the_kernel(small_thresholds) -> None:
    """Pushed in small batches, the evaluator starts on Python and moves to the kernel between
    batches once the stream is long and no partial match is in progress; the matches are the
    same as on one path."""
    query = "SELECT * FROM S WHERE A AS a ; B AS b FILTER b.v > a.v WITHIN 3 EVENTS"
    rows = events()
    evaluator = ceql.compile(query, SCHEMA).evaluator()
    found = []
    paths = set()
    for start in range(0, len(rows), 100):
        found += keyed(evaluator.push_batch(rows[start : start + 100]))
        paths.add(evaluator.backend.name)
    assert paths == {"python", "kernel"}
    assert found == keyed(ceql.compile(query, SCHEMA).run(rows, engine="python")) and found


def test_a_query_off_the_kernel_is_announced_once(small_thresholds, caplog) -> None:
    query = ceql.compile("SELECT MAX * FROM S WHERE A AS a ; B+ ; C AS c FILTER c.v > a.v WITHIN 3 EVENTS", SCHEMA)
    with warnings.catch_warnings(record=True) as caught, caplog.at_level(logging.INFO, logger="ceql"):
        warnings.simplefilter("always")
        list(query.run(events(50)))
        list(query.run(events(50)))
    slow = [w for w in caught if issubclass(w.category, SlowPathWarning)]
    assert len(slow) == 1 and "strategy MAX" in str(slow[0].message)
    notices = [r for r in caplog.records if r.name == "ceql" and "not the compiled kernel" in r.getMessage()]
    assert len(notices) == 1
    assert "strategy MAX" in query.explain()


def test_the_python_engine_is_not_announced(caplog) -> None:
    query = ceql.compile("SELECT * FROM S WHERE A AS a NOT FOLLOWED BY B WITHIN 3 EVENTS", SCHEMA)
    with warnings.catch_warnings():
        warnings.simplefilter("error", SlowPathWarning)
        list(query.run(events(50), engine="python"))


# ------------------------------------------------------------------ newly compiled constructs

EDGE = ceql.declare(
    "CREATE STREAM S { EVENT A { k:int, v:int, n:int, x:double }, EVENT B { k:int, v:int, n:int, x:double }, "
    "EVENT C { k:int, v:int, n:int, x:double } }"
)
#: Shapes issue 40 moved onto the kernel: conditions across events on patterns with many
#: candidates (strategy ALL), nested PARTITION BY, aggregates, windows over a double attribute.
NEWLY_COMPILED = [
    "SELECT * FROM S WHERE A AS a ; B+ AS b ; C AS c FILTER c.v > a.v PARTITION BY [k]",
    "SELECT * FROM S WHERE B+ AS b FILTER b.v > PREV(b.v) PARTITION BY [k]",
    "SELECT * FROM S WHERE A AS a ; (B+ AS b PARTITION BY [n]) PARTITION BY [k]",
    "SELECT * FROM S WHERE A AS a ; B+ AS b ; C AS c FILTER COUNT(b) >= 2",
    "SELECT * FROM S WHERE A AS a ; B+ AS b FILTER b.v > a.v",
    "SELECT * FROM S WHERE A+ AS a ; B AS b FILTER a.v < b.v PARTITION BY [k]",
    "SELECT * FROM S WHERE A AS a ; B+ AS b ; C AS c FILTER SUM(b.v) > c.v",
    "SELECT a, c FROM S WHERE A AS a ; B+ AS b ; C AS c FILTER c.v > a.v",
    "SELECT * FROM S WHERE A AS a ; B+ AS b ; C AS c FILTER c.v > a.v CONSUME BY ANY",
    "SELECT * FROM S WHERE A AS a ; B AS b WITHIN 3 [x]",
    "SELECT * FROM S WHERE A AS a ; B+ AS b PARTITION BY [k] WITHIN 2 [x]",
    "SELECT LAST * FROM S WHERE A AS a ; B AS b WITHIN 1 [x]",
    "SELECT * FROM S WHERE A OR NOT(A) WITHIN 1 [x]",
]
BIG = 2**62
DOUBLES = [0.5, 1.0, 1.5, 2.0, 2.9999999999999996, 3.0, -0.5, float("nan"), None, 1e300, -1e300,
           float("inf"), -float("inf"), float(2**62), 9007199254740993.0]


def edge_events(seed: int, n: int = 14) -> list[dict]:
    import random

    rng = random.Random(seed)
    ints = [0, 1, 2, -1, BIG, -BIG, 2**63 - 1, -(2**63), None]
    return [
        {
            "event_type": rng.choice("ABBC"),
            "k": rng.randrange(2),
            "v": rng.choice(ints) if rng.random() < 0.2 else rng.randrange(-3, 4),
            "n": rng.randrange(2),
            "x": rng.choice(DOUBLES) if rng.random() < 0.4 else float(rng.randrange(6)),
        }
        for _ in range(n)
    ]


@pytest.mark.parametrize("text", NEWLY_COMPILED)
def test_newly_compiled_shapes_agree_with_the_reference(text) -> None:
    """On the kernel (unsupported() is None), in batches with a saved-state round trip, the
    matches are the reference's, at the type edges (int64 ends, NaN, nulls, infinities)."""
    from collections import Counter

    from ceql.reference import run as reference
    from ceql.runtime import kernel
    from tests.support.agreement import run_engine

    query = ceql.compile(text, EDGE)
    assert kernel.unsupported(query.plan) is None, kernel.unsupported(query.plan)
    matched = 0
    for seed in range(12):
        events = edge_events(seed)
        expected = Counter(m.key() for m in reference(query, events))
        got = run_engine(query, events, "compiled", cuts=(3, 9), save_at=6)
        assert Counter(m.key() for m in got) == expected, (text, seed)
        matched += len(expected)
    assert matched, text


def test_a_stream_read_ahead_keeps_bad_rows_in_stream_order(small_thresholds) -> None:
    """Reading a stream ahead does not type it ahead: under on_error="skip", a row out of
    time order against an earlier batch is still skipped, as on the Python path."""
    rows = events()
    # The first row of the second batch (read ahead), earlier than the batch before it.
    rows[500] = dict(rows[500], event_type="A", t=3)
    query = ceql.compile(
        "SELECT * FROM S WHERE A AS a ; B AS b FILTER b.v > a.v PARTITION BY [k] WITHIN 50 NANOSECONDS", SCHEMA
    )
    batches = pa.Table.from_pylist(rows).to_batches(max_chunksize=500)
    evaluator = query.evaluator(on_error="skip")
    found = keyed(evaluator.process(iter(batches), on_error="skip"))
    assert evaluator.backend.name == "kernel"
    expected = query.run(rows, engine="python", on_error="skip")
    assert found == keyed(expected) and found
    assert evaluator.errors.rejected == expected.rejected == 1
