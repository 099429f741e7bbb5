"""``Evaluator.push`` (the per-event path, runtime/single.py) gives exactly what ``run`` and the
reference give: generated queries and streams pushed one event at a time, on every engine path,
mixed with ``push_batch`` and with the state saved and loaded into a fresh evaluator in the
middle; and its parts (the row typing, the scalar predicates) agree with the batch path's."""

from __future__ import annotations

import math
import warnings

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import event as note
from hypothesis import strategies as st

import ceql
from ceql.compile.predicates import compile_scalar
from ceql.errors import EventError, InputWarning
from ceql.lang import ast, print_query
from ceql.runtime.batches import BatchBuilder
from ceql.runtime.rowtype import RowTyper
from tests.support.agreement import assert_agrees, by_trigger, compile_valid, engine_paths, reference_matches
from tests.support.cross_strategies import extended_matching_queries
from tests.support.strategies import CORE_OPERATORS, TEST_DECLARATION, absence_queries, cases, shaped_queries

SCHEMA = ceql.declare(TEST_DECLARATION)
FAST = settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
STRATEGIES = (None, None, "ALL", "ANY", "NEXT", "LAST", "MAX", "STRICT")


def pushed(compiled: ceql.Query, events: list[dict], engine: str, cuts, save_at) -> list[ceql.Match]:
    """Events pushed one at a time, except the segments after an odd number of cuts, which go
    through ``push_batch``; at ``save_at`` the state moves to a fresh evaluator."""
    evaluator = compiled.evaluator(engine=engine)
    bounds = sorted({0, len(events), *(c for c in cuts if 0 < c < len(events))})
    if save_at is not None and 0 < save_at < len(events):
        bounds = sorted(set(bounds) | {save_at})
    out: list[ceql.Match] = []
    for index, (lo, hi) in enumerate(zip(bounds, bounds[1:])):
        if lo == save_at:
            blob = evaluator.export_state()
            evaluator = compiled.evaluator(engine=engine)
            evaluator.import_state(blob)
        if index % 2 == 1:
            out.extend(evaluator.push_batch(events[lo:hi]))
        else:
            for event in events[lo:hi]:
                out.extend(evaluator.push(event))
    out.extend(evaluator.finish())
    return out


def check_push(case) -> None:
    compiled = compile_valid(case.query, SCHEMA)
    if compiled is None:
        return
    reference = reference_matches(case.query, SCHEMA, case.events)
    exact = case.query.limit is None and case.query.strategy != "ANY"
    for engine in engine_paths(compiled):
        got = pushed(compiled, case.events, engine, case.cuts, case.save_at)
        run = list(compiled.run(case.events, engine=engine))
        if exact:
            assert by_trigger(got) == by_trigger(run), print_query(case.query)
        try:
            assert_agrees(case.query, SCHEMA, run, reference, "run")
        except AssertionError:
            # The batch path disagrees with the reference: an engine bug that
            # tests/test_differential.py reports; here push must only equal run.
            note("run disagrees with the reference")
            continue
        assert_agrees(
            case.query, SCHEMA, got, reference, f"push, {engine}, cuts {case.cuts}, saved at {case.save_at}"
        )


@FAST
@given(
    cases(
        shaped_queries(3, CORE_OPERATORS + ("and", "all", "unless"), clauses=True, strategies_=STRATEGIES),
        max_size=11,
    )
)
def test_push_agrees_with_run_and_reference(case) -> None:
    check_push(case)


@FAST
@given(cases(extended_matching_queries(), nulls=True))
def test_push_agrees_on_every_construct(case) -> None:
    check_push(case)


@FAST
@given(cases(absence_queries(), max_size=12))
def test_push_agrees_on_not_followed_by(case) -> None:
    check_push(case)


def test_push_applies_limit_after_a_projection_on_the_kernel() -> None:
    """``SELECT A ... LIMIT 1``: the kernel's per-event path gives one match per trigger, as
    the batch path does (it gave every projected complex event; found by the test above)."""
    compiled = ceql.compile("SELECT A WHERE A AS x:+ LIMIT 1", SCHEMA)
    events = [{"event_type": "A", "id": 0, "v": 0, "s": "a", "t": 0}] * 5
    for engine in ("compiled", "python"):
        evaluator = compiled.evaluator(engine=engine)
        got = [match for event in events for match in evaluator.push(event)]
        assert [match.trigger for match in got] == [0, 1, 2, 3, 4], engine
        assert by_trigger(got).keys() == by_trigger(compiled.run(events, engine=engine)).keys()


# ------------------------------------------------------------------ the kernel keeps its state


def test_push_continues_the_compiled_kernel_and_its_state() -> None:
    """An evaluator that started the kernel on a large batch goes on with it event by event,
    through a saved state, with the same matches as one run."""
    schema = ceql.declare("CREATE STREAM S { EVENT A { k:int, v:int }, EVENT B { k:int, v:int } }")
    query = ceql.compile(
        "SELECT * WHERE A AS a ; B AS b FILTER a[v > 2] PARTITION BY [k] WITHIN 30 EVENTS", schema
    )
    events = [{"event_type": "AB"[i % 3 % 2], "k": i % 7, "v": i % 5} for i in range(25_000)]
    expected = list(query.run(events, engine="python"))
    evaluator = query.evaluator()
    got = evaluator.push_batch(pa.Table.from_pylist(events[:21_000]))
    assert evaluator._kernel is not None  # the large first batch started the kernel
    for event in events[21_000:23_000]:
        got.extend(evaluator.push(event))
    fresh = query.evaluator()
    fresh.import_state(evaluator.export_state())
    assert fresh._kernel is not None
    for event in events[23_000:]:
        got.extend(fresh.push(event))
    assert got == expected


# ------------------------------------------------------------------ errors, as on the batch path


ERRORS = ceql.declare(
    "CREATE STREAM S { EVENT A { k:int, t:primary_time(ms), s:string }, EVENT B { k:double } }"
)


@pytest.mark.parametrize(
    "event",
    [
        {"k": 1, "t": 1, "s": "x"},
        {"event_type": " ", "k": 1, "t": 1, "s": "x"},
        {"event_type": "Z", "k": 1},
        {"event_type": 7, "k": 1},
        {"event_type": "A", "k": 1, "s": "x"},
        {"event_type": "A", "k": 1, "t": None, "s": "x"},
        {"event_type": "A", "k": 1.5, "t": 1, "s": "x"},
        {"event_type": "A", "k": 2**63, "t": 1, "s": "x"},
        {"event_type": "A", "k": "12", "t": "2024-02-30T00:00:00Z", "s": "x"},
        {"event_type": "A", "k": 1, "t": 2**62, "s": "x"},
        {"event_type": "A", "k": 1, "t": 1, "s": 3},
        {"event_type": "A", "k": True, "t": 1, "s": "x"},
        {"event_type": "B", "k": "abc"},
        {"event_type": "B", "k": [1]},
        {"event_type": "A", "k": 1, "t": "2024-03-01T09:00:00Z", "s": None},
        {"event_type": "A", "k": "+12", "t": "1970-01-01T00:00:00.001Z", "s": "xy", "zz": 1},
        ["A", 1],
    ],
)
@pytest.mark.parametrize("engine", ["python", "compiled"])
def test_bad_events_are_the_same_errors(event, engine) -> None:
    """Rejected with the batch path's message (or accepted by both), the state untouched."""
    query = ceql.compile("SELECT * WHERE A ; A FILTER A[k > 0 AND s LIKE 'x.*'] WITHIN 5 SECONDS", ERRORS)
    ok = {"event_type": "A", "k": 1, "t": 0, "s": "x"}
    late = {"event_type": "A", "k": 1, "t": "2100-01-01T00:00:00Z", "s": "x"}

    def outcome(feed) -> str:
        evaluator = query.evaluator(engine=engine)
        evaluator.push(ok)
        try:
            found = feed(evaluator)
        except EventError as error:
            return f"error {error}; then {evaluator.push(late)}"
        return f"{found}; then {evaluator.push(late)}"

    assert outcome(lambda e: e.push(event)) == outcome(lambda e: e.push_batch([event]))


@pytest.mark.parametrize("engine", ["python", "compiled"])
def test_out_of_order_time_is_the_same_error(engine) -> None:
    query = ceql.compile("SELECT * WHERE A ; A WITHIN 5 SECONDS", ERRORS)
    events = [{"event_type": "A", "k": 1, "t": t, "s": "x"} for t in (5, 9, 7)]
    with pytest.raises(EventError) as batch:
        query.evaluator(engine=engine).push_batch(events)
    evaluator = query.evaluator(engine=engine)
    evaluator.push(events[0])
    evaluator.push(events[1])
    with pytest.raises(EventError) as single:
        evaluator.push(events[2])
    assert str(single.value) == str(batch.value)


# ------------------------------------------------------------------ typing one row

TYPES = ceql.declare(
    "CREATE STREAM S { EVENT A { i:int, d:double, s:string, b:boolean, t:primary_time(ms), m:int }, "
    "EVENT B { m:double, u:primary_time } }"
)
RAW = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**64), 2**64),
    st.sampled_from([0, 1, -1, 2**53, 2**53 + 1, 2**63 - 1, -(2**63), 2**62 // 1000, 9_223_372_036_854_776]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.5, 2.0**53, 2.0**53 + 2, -3.0, 1e300]),
    st.text(max_size=6),
    st.sampled_from(
        [
            "12",
            " 12",
            "+7",
            "007",
            "1e3",
            "nan",
            "true",
            "0",
            "",
            "2024-03-01T09:00:00Z",
            "2024-03-01 09:00:00.123456789+01:00",
            "2024-03-01T09:00",
            "2024-02-29",
            "2023-02-29",
            "2024-03-01T24:00:00Z",
            "2024-03-01T09:00:00+2400",
            "1677-09-21T00:12:43Z",
            "2262-04-11T23:47:17Z",
            "99999999999999999999",
        ]
    ),
)
NAMES = ("i", "d", "s", "b", "t", "m", "u", "x")


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    st.sampled_from(["A", "B"]),
    st.dictionaries(st.sampled_from(NAMES), RAW, max_size=7),
)
def test_one_row_is_typed_as_a_batch_of_one(type_name, fields) -> None:
    """Accepted or rejected alike (same reason), and the same stored values."""
    catalog = ceql.compile(
        "SELECT * WHERE A FILTER A[i > 0 OR d > 0 OR s = 'a' OR b = TRUE OR m > 0] WITHIN 1 SECOND", TYPES
    ).plan.catalog
    event = {"event_type": type_name, **fields}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InputWarning)
        try:
            table = BatchBuilder(catalog).from_rows([event])
        except EventError as error:
            with pytest.raises(EventError) as single:
                RowTyper(BatchBuilder(catalog)).type(event)
            assert str(single.value) == str(error)
            return
        got_type, values = RowTyper(BatchBuilder(catalog)).type(event)
    row = table.to_pylist()[0]
    assert got_type == row.pop("event_type")
    for name, value in row.items():
        mine = values.get(name)
        assert type(mine) is type(value) and (mine == value or (mine != mine and value != value)), (
            name,
            mine,
            value,
        )


# ------------------------------------------------------------------ predicates on one event

PREDS = ceql.declare(
    "CREATE STREAM S { EVENT A { x:int, y:int, f:double, s:string, m:int }, EVENT B { m:double } }"
)
EDGES = [0, 1, -1, 2, -3, 7, 2**63 - 1, -(2**63), 2**53, 2**53 + 1, -(2**53) - 1, 3037000500]
FLOATS = [0.0, -0.0, 0.5, -2.5, 2.0**53, 1e300, math.inf, -math.inf, math.nan]
PREDICATE_TEXTS = [
    "x + y > 0",
    "x * y >= x",
    "x / y = 0",
    "x % y < 1",
    "-x < y",
    "x / 0 = 0 OR NOT (x % 0 = 1)",
    "x + f > y",
    "f * x != 1",
    "x / f < 2",
    "f % 2 = 0.5",
    "x = f",
    "x != f",
    "f IN {0.5, 1, 9007199254740993}",
    "x IN {1, 2.0, 2.5, 9007199254740993}",
    "x NOT IN {0, 1, 2, 3, 4, 5, 7}",
    "s IN {'a', 'b', 'c', 'd', 'e', 'f'}",
    "f NOT IN {0.5}",
    "f IN {0..1}",
    "x NOT IN {..9007199254740992}",
    "f IN {9007199254740993..}",
    "x IN RANGE(y, f)",
    "s LIKE 'a.*' OR s LIKE '(b|c)+'",
    "s < 'b' AND s >= ''",
    "m / 2 = 1",
    "m % 3 = 1 AND m > 0",
]


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    st.sampled_from(PREDICATE_TEXTS),
    st.lists(
        st.tuples(
            st.sampled_from(["A", "A", "B"]),
            st.one_of(st.none(), st.sampled_from(EDGES)),
            st.one_of(st.none(), st.sampled_from(EDGES)),
            st.one_of(st.none(), st.sampled_from(FLOATS)),
            st.one_of(st.none(), st.sampled_from(["", "a", "ab", "b", "bc", "c", "é"])),
            st.one_of(st.none(), st.sampled_from([-7, -2, 0, 1, 2, 3, 4, 5])),
        ),
        min_size=1,
        max_size=8,
    ),
)
def test_scalar_predicates_agree_with_the_column_wise_ones(text, rows) -> None:
    query = ceql.compile(f"SELECT * WHERE (A OR B) AS e FILTER e[{text}]", PREDS)
    plan = query.plan
    events = []
    for type_name, x, y, f, s, m in rows:
        if type_name == "A":
            events.append({"event_type": "A", "x": x, "y": y, "f": f, "s": s, "m": m})
        else:
            events.append({"event_type": "B", "m": None if m is None else m + 0.5 * (m % 2)})
    table = BatchBuilder(plan.catalog).from_rows(events)
    columns = plan.compiled.predicates.evaluate(table)
    from ceql.runtime.rowtype import RowTyper
    from ceql.runtime.single import _shared

    typer, scalar = RowTyper(BatchBuilder(plan.catalog)), _shared(plan)
    for index, event in enumerate(events):
        type_name, values = typer.type(event)
        declared = frozenset(c for c, col in plan.catalog.columns.items() if type_name in col.declared)
        constant, live = scalar.for_type(type_name, declared)
        mask = constant
        for bit, holds in live:
            if holds(values):
                mask |= bit
        expected = sum(1 << bit for bit, column in enumerate(columns) if column[index])
        assert mask == expected, (text, event)


def test_like_uses_re2() -> None:
    """RE2 syntax that Python's re reads differently: the same answer as the batch path."""
    pred = ast.Like(ast.Attr("s"), r"\pL+")
    assert compile_scalar(pred)({"s": "abc"}) is True
    assert compile_scalar(pred)({"s": "a1"}) is False
    assert compile_scalar(pred)({}) is False


