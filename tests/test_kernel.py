"""The compiled kernel agrees with the Python evaluator and the reference on generated queries.

Every generated case runs twice through the kernel: with its usual array sizes, and with every
array starting at its smallest size (so that each resume path of the compiled loop is taken:
growing, compacting after every batch, handing out the output one match at a time).
"""

from __future__ import annotations

import dataclasses
from collections import Counter

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

import ceql
from ceql.lang import ast, print_query
from ceql.runtime.kernel import KernelEvaluator, PlanKernel, engine, unsupported, values
from tests.support.agreement import check_case, compile_valid
from tests.support.cross_strategies import cross_queries, extended_matching_queries
from tests.support.strategies import TEST_DECLARATION, cases, defined_labels, queries, streams

SCHEMA = ceql.declare(TEST_DECLARATION)
CASES = settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
#: Generated cases with conditions and measures (the differential suites run them too).
SOME = settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))
MANY = settings(max_examples=3000, deadline=None, suppress_health_check=list(HealthCheck))
EPOCH_NS = 1_700_000_000_000_000_000  # times near today's epoch nanoseconds (floats lose them)
KERNEL_OPERATORS = ("seq", "cseq", "or", "iter", "citer", "as", "filter", "not", "and", "all", "unless")
KERNEL_STRATEGIES = (None, "ALL", "ANY", "STRICT", "NEXT", "LAST", "MAX")
TINY = {name: 1 for name in engine.INITIAL}


@pytest.fixture
def tiny_arrays(monkeypatch):
    """Start every kernel array at its smallest size and hand out output one match at a time;
    prune the kept values after every batch, and keep batches of more than 2 events as their
    own segments (smaller ones in a growing tail)."""
    monkeypatch.setattr(engine, "INITIAL", TINY)
    monkeypatch.setattr(engine, "MAX_CHUNK_MATCHES", 1)
    monkeypatch.setattr(engine, "COMPACT_MIN", 1)
    monkeypatch.setattr(values, "PRUNE_MIN", 0)
    monkeypatch.setattr(values, "SMALL_BATCH", 3)


def by_trigger(matches) -> dict[int, Counter]:
    out: dict[int, Counter] = {}
    for match in matches:
        out.setdefault(match.trigger, Counter())[match.key()] += 1
    return out


def compiled_or_skip(query: ast.Query) -> ceql.Query:
    try:
        compiled = ceql.compile(print_query(query), SCHEMA)
    except ceql.UnsupportedQueryError:
        assume(False)
        raise
    assume(unsupported(compiled.plan) is None)
    return compiled


def kernel_matches(compiled: ceql.Query, events: list[dict], cuts: list[int] = ()) -> list[ceql.Match]:
    """The kernel's matches, feeding the events in pieces split at ``cuts``."""
    runner = PlanKernel(compiled.plan)
    out: list[ceql.Match] = []
    bounds = [0, *sorted(c for c in cuts if 0 < c < len(events)), len(events)]
    for lo, hi in zip(bounds, bounds[1:]):
        out.extend(runner.matches(events[lo:hi]))
    return out


def assert_agrees(
    query: ast.Query, compiled: ceql.Query, got: list[ceql.Match], events: list[dict], python: bool = True
) -> None:
    """``got`` equals the reference's matches (candidate sets for ANY and LIMIT) and, if
    ``python``, the Python evaluator's."""
    text = print_query(query)
    engine_result = by_trigger(got)
    chooses = query.limit is not None or query.strategy == "ANY"
    if python and not chooses:
        assert engine_result == by_trigger(compiled.run(events)), text
    relaxed = dataclasses.replace(
        query, limit=None, strategy="ALL" if query.strategy == "ANY" else query.strategy
    )
    reference = by_trigger(ceql.reference.run(ceql.check(print_query(relaxed), SCHEMA), events))
    if not chooses:
        assert engine_result == reference, text
        return
    assert set(engine_result) == set(reference), text
    for trigger, candidates in reference.items():
        found = engine_result[trigger]
        assert all(count == 1 for count in found.values()), text
        assert set(found) <= set(candidates), text
        expected = 1 if query.strategy == "ANY" else len(candidates)
        if query.limit is not None:
            expected = min(expected, query.limit)
        assert sum(found.values()) == expected, text


def check(query: ast.Query, events: list[dict], cuts: list[int] = (), python: bool = True) -> None:
    compiled = compiled_or_skip(query)
    got = kernel_matches(compiled, events, cuts)
    event("matches" if got else "no match")
    assert_agrees(query, compiled, got, events, python)


kernel_queries = queries(depth=3, operators=KERNEL_OPERATORS, strategies_=KERNEL_STRATEGIES, cross=False)
cuts = st.lists(st.integers(1, 12), max_size=3)


@CASES
@given(kernel_queries, streams(min_size=4, max_size=12), cuts)
def test_kernel_matches_python_and_reference(query, events, cut) -> None:
    check(query, events, cut)


@CASES
@given(kernel_queries, streams(min_size=4, max_size=12), cuts)
def test_kernel_with_smallest_arrays(tiny_arrays, query, events, cut) -> None:
    check(query, events, cut)


def _kernel_case(case) -> None:
    """A generated case on the kernel alone (batches, a state round trip), against the
    reference; cases the kernel leaves to the Python path are not counted."""
    compiled = compile_valid(case.query, SCHEMA)
    assume(compiled is not None and unsupported(compiled.plan) is None)
    check_case(case.query, SCHEMA, case.events, case.cuts, case.save_at, engines=("compiled",))


@SOME
@given(cases(cross_queries(), nulls=True))
def test_kernel_conditions_across_events(case) -> None:
    """Conditions across events the kernel checks per complex event (over the whole formula,
    PARTITION BY over labels), with measures and missing values."""
    _kernel_case(case)


@SOME
@given(cases(extended_matching_queries(), nulls=True))
def test_kernel_extended_constructs_with_smallest_arrays(tiny_arrays, case) -> None:
    """Measures, STRICT, repeats, quantifiers, renaming, PROJECT ... with every array at its
    smallest size and the kept values pruned after every batch."""
    _kernel_case(case)


@SOME
@given(cases(cross_queries(), nulls=True))
def test_kernel_conditions_with_smallest_arrays(tiny_arrays, case) -> None:
    _kernel_case(case)


@pytest.mark.slow
@MANY
@given(cases(extended_matching_queries(), nulls=True))
def test_kernel_extended_constructs_with_smallest_arrays_many(tiny_arrays, case) -> None:
    _kernel_case(case)


@pytest.mark.slow
@MANY
@given(cases(cross_queries(), nulls=True))
def test_kernel_conditions_with_smallest_arrays_many(tiny_arrays, case) -> None:
    _kernel_case(case)


@st.composite
def sequence_queries(draw):
    """Sequences and iterations over A/B/C that match often, with every clause the kernel
    supports (windows, partitions, CONSUME BY, ANY, LIMIT, projections)."""
    parts = []
    for _ in range(draw(st.integers(2, 3))):
        node: ast.Formula = ast.EventType(draw(st.sampled_from("ABC")))
        if draw(st.booleans()):
            node = ast.Label(node, draw(st.sampled_from(["x", "y"])))
        if draw(st.integers(0, 3)) == 0:
            node = ast.Iteration(node, draw(st.booleans()))
        parts.append(node)
    formula: ast.Formula = ast.Sequence(tuple(parts), draw(st.integers(0, 3)) == 0)
    base = draw(queries(depth=0, strategies_=KERNEL_STRATEGIES, cross=False))
    # Windows wide enough for the short streams to match often.
    within = draw(
        st.one_of(
            st.none(),
            st.builds(ast.Within, st.just("events"), st.integers(4, 12)),
            st.builds(ast.Within, st.just("time"), st.integers(6, 20)),
            st.builds(ast.Within, st.just("attribute"), st.integers(6, 20), st.just("t")),
        )
    )
    base = dataclasses.replace(base, within=within)
    projection = draw(st.sampled_from([ast.Projection("star"), ast.Projection("star"), base.projection]))
    if projection.kind == "list":
        label = draw(st.sampled_from(sorted(defined_labels(formula))))
        projection = ast.Projection("list", (ast.ProjectionItem(label),))
    return dataclasses.replace(base, formula=formula, projection=projection)


@CASES
@given(sequence_queries(), streams(min_size=8, max_size=16, types=("A", "B", "C")), cuts)
def test_kernel_on_sequences_that_match(query, events, cut) -> None:
    check(query, events, cut)


def shift_times(events: list[dict]) -> list[dict]:
    return [{**e, "t": e["t"] + EPOCH_NS} for e in events]


@CASES
@given(sequence_queries(), streams(min_size=8, max_size=16, types=("A", "B", "C")), cuts, st.integers(6, 20))
def test_time_windows_in_epoch_nanoseconds(query, events, cut, window) -> None:
    """int64 measures: windows of a few nanoseconds over times near 1.7e18 are exact (the
    Python evaluator's float measures are not, so only the reference is compared)."""
    kind = ast.Within("time", window) if window % 2 else ast.Within("attribute", window, "t")
    query = dataclasses.replace(query, within=kind)
    check(query, shift_times(events), cut, python=False)


@CASES
@given(
    sequence_queries(),
    streams(min_size=2, max_size=10, types=("A", "B", "C")),
    streams(min_size=1, max_size=8, types=("A", "B", "C")),
)
def test_state_round_trip(query, first, second) -> None:
    """A kernel restored from exported arrays continues exactly like the original."""
    compiled = compiled_or_skip(query)
    for e in second:
        e["t"] += first[-1]["t"]
    whole = PlanKernel(compiled.plan)
    list(whole.matches(first))
    expected = sorted(m.key() for m in whole.matches(second))
    part = PlanKernel(compiled.plan)
    list(part.matches(first))
    state = part.export_state()
    assert all(
        isinstance(v, np.ndarray)
        for n, v in state.items()
        if n not in ("det_states", "label_sets", "partition_keys", "query")
    )
    fresh = ceql.compile(print_query(query), SCHEMA)  # another automaton: states are remapped
    restored = PlanKernel(fresh.plan)
    restored.import_state(state)
    assert sorted(m.key() for m in restored.matches(second)) == expected


def test_evaluator_switch_and_pickle(monkeypatch) -> None:
    """CEQL_KERNEL=1 runs supported plans on the kernel, also through pickling."""
    import pickle

    monkeypatch.setenv("CEQL_KERNEL", "1")
    query = ceql.compile("SELECT * WHERE A AS x; B+; C PARTITION BY [id] WITHIN 6 EVENTS", SCHEMA)
    events = [{"event_type": t, "id": i % 2, "v": 0, "s": "a", "t": i} for i, t in enumerate("AABBCCAABBCC")]
    evaluator = query.evaluator()
    assert evaluator._kernel is not None
    first = evaluator.push_batch(events[:6])
    restored = pickle.loads(pickle.dumps(evaluator))
    assert restored._kernel is not None
    rest = restored.push_batch(events[6:])
    monkeypatch.delenv("CEQL_KERNEL")
    expected = list(query.run(events))
    assert sorted(m.key() for m in first + rest) == sorted(m.key() for m in expected)
    assert len(expected) > 3


def test_arrow_output_layout() -> None:
    query = ceql.compile("SELECT x, y WHERE A AS x; B+ AS y; C PARTITION BY [id] WITHIN 6 EVENTS", SCHEMA)
    events = [{"event_type": t, "id": i % 2, "v": 0, "s": "a", "t": i} for i, t in enumerate("AABBCCAABBCC")]
    table = PlanKernel(query.plan).arrow(pa.Table.from_pylist(events))
    assert table.column_names == ["query", "trigger", "positions", "labels", "partition"]
    assert table.schema == query.output_schema()
    assert table.schema.field("partition").type == pa.struct([("id", pa.int64())])
    rows = [
        ceql.Match(
            r["trigger"],
            tuple(r["positions"]),
            {k: tuple(v) for k, v in r["labels"].items() if v},
            (r["partition"]["id"],),
        )
        for r in table.to_pylist()
    ]
    assert sorted(rows) == sorted(query.run(events))
    assert len(rows) > 3
    empty = PlanKernel(query.plan).arrow([])
    assert empty.num_rows == 0 and empty.column_names == table.column_names


def test_kernel_evaluator_arrays() -> None:
    """The array API: symbols, positions, measures and key codes in, flat complex events out."""
    query = ceql.compile("SELECT * WHERE A; B WITHIN 3 EVENTS CONSUME BY ANY", SCHEMA)
    plan = query.plan
    kernel = KernelEvaluator(plan.det, window=3, consume="ANY")
    a = plan.symbols.symbol(plan.type_names.index("A"), 0)
    b = plan.symbols.symbol(plan.type_names.index("B"), 0)
    symbols = np.array([a, a, b, b, a, b])
    positions = np.arange(6)
    out = kernel.process(symbols, positions, positions)
    # B at 2 reports A0;B2 and A1;B2 and consumes; B at 3 finds nothing; A4;B5.
    assert out.trigger.tolist() == [2, 2, 5]
    assert sorted(tuple(out.positions[out.offsets[i] : out.offsets[i + 1]]) for i in range(2)) == [
        (0, 2),
        (1, 2),
    ]
    assert out.positions[out.offsets[2] : out.offsets[3]].tolist() == [4, 5]


def test_partitions_are_dropped_when_nothing_is_live() -> None:
    query = ceql.compile("SELECT * WHERE A; B PARTITION BY [id] WITHIN 4 EVENTS", SCHEMA)
    runner = PlanKernel(query.plan)
    events = [{"event_type": "A", "id": i, "v": 0, "s": "a", "t": i} for i in range(5000)]
    list(runner.matches(events))
    runner.kernel.compact()
    assert runner.kernel.live_partitions() <= 4
    assert runner.kernel.live_nodes() <= 8


def test_unsupported_plans_say_why() -> None:
    for text, reason in [
        ("SELECT MAX * WHERE A AS x; B+; C AS y FILTER y.v > x.v", "strategy MAX on a pattern with many candidates"),
        ("SELECT NEXT * WHERE (A AS x; B+; C AS y) UNLESS (B AS z ; D FILTER D.v = x.v)", "strategy NEXT on a pattern with many candidates"),
    ]:
        assert reason in (unsupported(ceql.compile(text, SCHEMA).plan) or ""), text
    # NEXT and LAST alone are chosen over the tECS; a right side of UNLESS of several events
    # with conditions is decided by replaying the register programs (issue 40).
    # With a condition across events, NEXT and LAST are ranked (the first candidate that passes).
    for text in (
        "SELECT NEXT * WHERE A; B+; C",
        "SELECT LAST * WHERE A; B+; C WITHIN 5 EVENTS",
        "SELECT MAX * WHERE A; B+; C",
        "SELECT * WHERE (A AS x; C AS y) UNLESS (B AS z ; D FILTER D.v = x.v)",
        "SELECT NEXT * WHERE A AS x; B+; C AS y FILTER y.v > x.v",
        "SELECT LAST * WHERE A AS x; B+; C AS y FILTER y.v > x.v WITHIN 5 EVENTS",
    ):
        assert unsupported(ceql.compile(text, SCHEMA).plan) is None, text
    with pytest.raises(ceql.UnsupportedQueryError, match="strategy MAX"):
        # (MAX alone is chosen over the tECS; with a condition across events it is not.)
        PlanKernel(ceql.compile("SELECT MAX * WHERE A AS x; B+; C AS y FILTER y.v > x.v", SCHEMA).plan)


def test_out_of_order_times_are_refused() -> None:
    query = ceql.compile("SELECT * WHERE A; B WITHIN 5 SECONDS", SCHEMA)
    events = [{"event_type": "A", "id": 0, "v": 0, "s": "a", "t": EPOCH_NS + d} for d in (5, 3)]
    with pytest.raises(ceql.EventError, match="out of order") as error:
        list(PlanKernel(query.plan).matches(events))
    assert error.value.row == 1


def test_missing_attribute_measure_leaves_the_window() -> None:
    """A null window measure (non-time attribute) puts the complex events that start or end
    at that event outside the window. (Events lacking an attribute the query reads are bad
    input on the public paths, issue #11; a typed table with nulls still reaches the kernel.)"""
    from ceql.runtime.arrow import MatchRows

    declaration = "CREATE STREAM S { EVENT A { k:int }, EVENT B { k:int } }"
    query = ceql.compile("SELECT * WHERE A; B WITHIN 5 [k]", ceql.declare(declaration))
    events = [
        {"event_type": "A", "k": 1},
        {"event_type": "A"},
        {"event_type": "B", "k": 3},
        {"event_type": "B"},
    ]
    with pytest.raises(ceql.EventError, match="row 1: missing field k"):
        list(PlanKernel(query.plan).matches(events))
    table = pa.table({"event_type": ["A", "A", "B", "B"], "k": pa.array([1, None, 3, None], pa.int64())})
    runner = PlanKernel(query.plan)
    got = sorted(
        m.positions
        for chunk in runner.process_table(table)
        for m in MatchRows(runner.columns(chunk), None, False)
    )
    assert got == [(0, 2)]


def test_compaction_keeps_complex_events_reported_by_skipping(tiny_arrays) -> None:
    """After ``A; NOT(B)`` a run reports its complex event at later events without adding to
    it: compaction may not prune it by the current time (only by its own last event)."""
    text = "SELECT * WHERE A; NOT(B) WITHIN 1 EVENTS"
    events = [{"event_type": "A", "id": 0, "v": 0, "s": "a", "t": 0}] * 5
    runner = PlanKernel(ceql.compile(text, SCHEMA).plan)
    got = [m for e in events for m in runner.matches([e])]  # one batch (and compaction) per event
    expected = ceql.reference.run(ceql.check(text, SCHEMA), events)
    assert sorted(got) == sorted(expected)
    assert len(expected) == 10


def test_memory_is_bounded_by_the_window() -> None:
    """Live tECS nodes stay proportional to the window over a long stream."""
    text = "SELECT * WHERE A; B; C WITHIN 20 EVENTS"
    rng = np.random.default_rng(7)
    runner = PlanKernel(ceql.compile(text, SCHEMA).plan)
    sizes = []
    for _ in range(4):
        types = rng.choice(["A", "B", "C", "D"], size=50_000)
        table = pa.table(
            {"event_type": types, "id": np.zeros(50_000, np.int64), "t": np.zeros(50_000, np.int64)}
        )
        for _ in runner.record_batches(table):
            pass
        sizes.append(runner.kernel.live_nodes())
    assert max(sizes) < 2_000, sizes
