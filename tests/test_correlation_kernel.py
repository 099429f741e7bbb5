"""Equality correlation as a hash join and chains of consecutive events column-wise (issue 34):
exact against the reference on generated streams (ids that repeat, null keys, int and double
keys that are equal, ties in time, NaN and nulls in compared values), fed in pieces, through
saved states, and with memory bounded by the window."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ceql
from ceql.runtime.kernel import PlanKernel, joins
from ceql.runtime.kernel.saved import export_json, import_json
from ceql.runtime.state import StateError

INT_KEYS = ceql.declare(
    "CREATE STREAM S { EVENT T { id:int, v:double, t:primary_time }, EVENT R { id:int, v:double, t:primary_time },"
    " EVENT U { id:int, v:double, t:primary_time } }"
)
# R's id is a double: 3.0 is the key 3 of a T event; 2.5 and NaN equal no int.
MIXED_KEYS = ceql.declare(
    "CREATE STREAM S { EVENT T { id:int, v:double, t:primary_time }, EVENT R { id:double, v:double, t:primary_time },"
    " EVENT U { id:int, v:double, t:primary_time } }"
)
# p: a second integer attribute (a product), compared between labels beyond the key.
LINKED = ceql.declare(
    "CREATE STREAM S { EVENT T { id:int, p:int, v:double, t:primary_time }, EVENT R { id:int, p:int, v:double,"
    " t:primary_time }, EVENT U { id:int, v:double, t:primary_time } }"
)
SECOND = 1_000_000_000

JOINS = [
    "SELECT * FROM S WHERE T AS x ; R AS y FILTER x.id = y.id WITHIN {w} EVENTS",
    "SELECT * FROM S WHERE (T AS x ; R AS y) PARTITION BY [x.id, y.id] WITHIN {w} EVENTS",
    "SELECT * FROM S WHERE T AS x ; T AS y FILTER x.id = y.id WITHIN {w} EVENTS",
    "SELECT * FROM S WHERE T AS x ; R AS y ; T AS z FILTER x.id = y.id AND z.id = y.id WITHIN {w} EVENTS",
    "SELECT * FROM S WHERE T AS x ; R AS y FILTER x.id = y.id WITHIN {w} SECONDS",
]
# Joins keyed by a reported PARTITION BY, or with equalities beyond the key (checked on probe):
# the web shop's funnel (a view, an add-to-cart of the same product, a purchase, per user).
LINKED_JOINS = [
    "SELECT * FROM S WHERE (T AS x ; R AS y) PARTITION BY [id] WITHIN {w} EVENTS",
    "SELECT * FROM S WHERE (T AS v ; R AS c ; U AS b) FILTER v.p = c.p PARTITION BY [id] WITHIN {w} SECONDS",
    "SELECT * FROM S WHERE T AS x ; R AS y FILTER x.id = y.id AND x.p = y.p WITHIN {w} EVENTS",
    "SELECT * FROM S WHERE (T AS x ; T AS y ; R AS z) FILTER x.p = z.p AND y.p = x.p PARTITION BY [id] "
    "WITHIN {w} EVENTS",
    "SELECT * FROM S WHERE (T AS x ; R AS y ; T AS z) FILTER y.p = x.id PARTITION BY [id] WITHIN {w} EVENTS",
    "SELECT * FROM S WHERE (T AS x ; R AS y ; U AS z) FILTER x.p = y.p AND x.id = z.id AND y.id = z.id "
    "WITHIN {w} EVENTS",
]
CHAINS = [
    "SELECT * FROM S WHERE (T AS a : T AS b : T AS c) FILTER b.v < a.v AND c.v > b.v PARTITION BY [id]",
    "SELECT * FROM S WHERE (T AS a : R AS b) FILTER a.v <= b.v AND b.t != a.t",
    "SELECT * FROM S WHERE (T AS a : T AS b : R AS c) FILTER b.v >= a.v AND c.v = b.v PARTITION BY [id] "
    "WITHIN {w} EVENTS",
    "SELECT * FROM S WHERE (T AS a : T AS b) FILTER b.v <> a.v PARTITION BY [id] WITHIN {w} SECONDS",
]
CASES = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))


@st.composite
def streams(draw, mixed: bool = False, max_size: int = 30, linked: bool = False) -> list[dict]:
    """Events of T, R and U with ids from a few values (repeats), some null; R's ids are
    doubles with ``mixed`` (some equal to an int, some not, NaN); values with ties, nulls and
    NaN; times that never decrease, with ties; with ``linked``, T and R have a product ``p``
    (a few values, some null)."""
    n = draw(st.integers(0, max_size))
    events, t = [], 0
    for _ in range(n):
        kind = draw(st.sampled_from("TTRRU"))
        key = draw(st.one_of(st.none(), st.integers(0, 3)))
        if mixed and kind == "R" and key is not None:
            key = draw(st.sampled_from([float(key), key + 0.5, float("nan")]))
        value = draw(st.one_of(st.none(), st.just(float("nan")), st.integers(0, 3).map(float)))
        t += draw(st.sampled_from([0, 0, SECOND, 2 * SECOND]))
        events.append({"event_type": kind, "id": key, "v": value, "t": t})
        if linked and kind != "U":
            events[-1]["p"] = draw(st.one_of(st.none(), st.integers(0, 2)))
    return events


def by_trigger(matches) -> dict[int, Counter]:
    out: dict[int, Counter] = {}
    for match in matches:
        out.setdefault(match.trigger, Counter())[match.key()] += 1
    return out


def run_in_pieces(plan, events: list[dict], cuts: list[int], saved: bool) -> list:
    """The kernel's matches over ``events`` fed in pieces; with ``saved``, each piece goes to a
    fresh kernel that loads the state the previous one saved (through the JSON envelope)."""
    kernel = PlanKernel(plan)
    out: list = []
    bounds = [0, *sorted({c for c in cuts if 0 < c < len(events)}), len(events)]
    for lo, hi in zip(bounds, bounds[1:]):
        out.extend(kernel.matches(events[lo:hi]))
        if saved:
            blob = export_json(kernel)
            kernel = PlanKernel(plan)
            import_json(kernel, blob)
    return out


def check(text: str, schema, events: list[dict], cuts: list[int], path: str) -> None:
    compiled = ceql.compile(text, schema)
    kernel = PlanKernel(compiled.plan)
    assert getattr(kernel, path) is not None, f"{text} does not take the {path} path"
    expected = by_trigger(ceql.reference.run(ceql.check(text, schema), events))
    for saved in (False, True):
        got = by_trigger(run_in_pieces(compiled.plan, events, cuts, saved))
        assert got == expected, (text, saved)
    if events:  # the same table as the automaton's, in the same order
        automaton = PlanKernel(compiled.plan)
        setattr(automaton, path, None)
        assert kernel.arrow(events).equals(automaton.arrow(events)), text


cuts = st.lists(st.integers(1, 29), max_size=3)


@CASES
@given(st.sampled_from(JOINS), st.integers(1, 6), streams(), cuts)
def test_joins_agree_with_the_reference(query, window, events, cut) -> None:
    check(query.format(w=window), INT_KEYS, events, cut, "join")


@CASES
@given(st.sampled_from(LINKED_JOINS), st.integers(1, 6), streams(linked=True), cuts)
def test_partitioned_and_linked_joins_agree_with_the_reference(query, window, events, cut) -> None:
    """A reported PARTITION BY key and equalities beyond the key (nulls equal nothing)."""
    check(query.format(w=window), LINKED, events, cut, "join")


@CASES
@given(st.sampled_from(JOINS[:2]), st.integers(1, 6), streams(mixed=True), cuts)
def test_joins_equate_double_and_int_keys(query, window, events, cut) -> None:
    """A double key equal to an int key is that key (dense codes), NaN and 2.5 are no int."""
    check(query.format(w=window), MIXED_KEYS, events, cut, "join")


@CASES
@given(st.sampled_from(CHAINS), st.integers(1, 6), streams(), cuts)
def test_chains_agree_with_the_reference(query, window, events, cut) -> None:
    check(query.format(w=window), INT_KEYS, events, cut, "chain")


def test_join_with_smallest_arrays(monkeypatch) -> None:
    """Entry arrays and output buffers that start tiny: every resume path of the loop. (150
    events give each query 200 to 300 matches, a hundred times the chunk; 400 cost the
    reference 30 s of CPU on the three-event join.)"""
    monkeypatch.setattr(joins, "INITIAL_ENTRIES", 1)
    monkeypatch.setattr(joins, "INITIAL_BITS", 1)
    monkeypatch.setattr(joins, "INITIAL_MATCHES", 1)
    monkeypatch.setattr(joins, "MAX_CHUNK_MATCHES", 2)
    rng = np.random.default_rng(3)
    events = [
        {"event_type": str(rng.choice(["T", "R"])), "id": int(rng.integers(0, 5)), "v": 0.0, "t": i}
        for i in range(150)
    ]
    for text in JOINS[:4]:
        check(text.format(w=30), INT_KEYS, events, [57, 120], "join")
    for event in events:
        event["p"] = int(rng.integers(0, 2))
    for text in LINKED_JOINS[2:4]:
        check(text.format(w=30), LINKED, events, [57, 120], "join")


def test_paths_are_chosen_only_where_exact() -> None:
    """Joins and chains take plans of their shape only; others keep the automaton."""
    automaton = [
        "SELECT * FROM S WHERE T AS x ; R+ AS y FILTER x.id = y.id WITHIN 5 EVENTS",  # iteration
        "SELECT ANY * FROM S WHERE T AS x ; R AS y FILTER x.id = y.id WITHIN 5 EVENTS",  # a strategy
        "SELECT * FROM S WHERE T AS x ; R AS y FILTER x.id = y.id",  # no window: nothing expires
        "SELECT * FROM S WHERE T AS x ; R AS y FILTER x.id = y.id AND x[v > 1] WITHIN 5 EVENTS",
    ]
    for text in automaton:
        kernel = PlanKernel(ceql.compile(text, INT_KEYS).plan)
        assert kernel.join is None and kernel.chain is None, text
    not_linked = [
        "SELECT * FROM S WHERE (T AS x ; R AS y) FILTER x.p < y.p PARTITION BY [id] WITHIN 5 EVENTS",  # not =
        "SELECT * FROM S WHERE (T AS x ; R AS y) FILTER x.v = y.v PARTITION BY [id] WITHIN 5 EVENTS",  # doubles
        "SELECT * FROM S WHERE (T AS x ; R AS y) FILTER x.p = x.id PARTITION BY [id] WITHIN 5 EVENTS",  # one event
        "SELECT * FROM S WHERE (T AS x ; R AS y) FILTER x.p = y.p OR x.id = 1 PARTITION BY [id] WITHIN 5 EVENTS",
        "SELECT * FROM S WHERE (T AS x ; R AS y) FILTER x.p = y.p AND x[v > 1] PARTITION BY [id] WITHIN 5 EVENTS",
        "SELECT LAST * FROM S WHERE (T AS x ; R AS y) FILTER x.p = y.p PARTITION BY [id] WITHIN 5 EVENTS",
        "SELECT * FROM S WHERE (T AS x ; R AS y) FILTER x.p = y.p PARTITION BY [id] WITHIN 5 EVENTS LIMIT 1",
    ]
    for text in not_linked:
        kernel = PlanKernel(ceql.compile(text, LINKED).plan)
        assert kernel.join is None, text
    chains_not = [
        "SELECT * FROM S WHERE (T AS a : T AS b) FILTER b.v < a.v + 1 PARTITION BY [id]",  # arithmetic
        "SELECT * FROM S WHERE (T AS a ; T AS b) FILTER b.v < a.v PARTITION BY [id]",  # not contiguous
        "SELECT NEXT * FROM S WHERE (T AS a : T AS b) FILTER b.v < a.v",
    ]
    for text in chains_not:
        compiled = ceql.compile(text, INT_KEYS)
        if ceql.runtime.kernel.unsupported(compiled.plan) is None:
            assert PlanKernel(compiled.plan).chain is None, text


def test_explain_names_the_kernel_path() -> None:
    """explain (text and DOT) names the join or chain path the kernel takes, and why; the path
    it names is the one PlanKernel takes."""
    cases = [
        (JOINS[0].format(w=5), "join", "hash join inside the window"),
        (JOINS[1].format(w=5), "join", "T: [id]"),
        (CHAINS[0], "chain", "b.v < a.v AND c.v > b.v"),
        ("SELECT * FROM S WHERE T AS x ; R+ AS y FILTER x.id = y.id WITHIN 5 EVENTS", "automaton", "neither"),
    ]
    for text, path, why in cases:
        compiled = ceql.compile(text, INT_KEYS)
        kernel = PlanKernel(compiled.plan)
        taken = "join" if kernel.join is not None else "chain" if kernel.chain is not None else "automaton"
        assert taken == path, text
        line = next(line for line in compiled.explain().splitlines() if "kernel path:" in line)
        assert line.startswith(f"  kernel path: {path}: ") and why in line, line
        dot = compiled.explain(dot=True)
        assert (f"kernel path: {path}, not this automaton" in dot) == (path != "automaton"), text


def test_join_memory_is_bounded_by_the_window() -> None:
    """Ids that never repeat far apart: the entries kept are those of the window, not every id."""
    n = 200_000
    ids = np.arange(n) // 2
    table = pa.table(
        {
            "event_type": pa.array(np.where(np.arange(n) % 2 == 0, "T", "R")),
            "id": pa.array(ids),
            "v": pa.array(np.zeros(n)),
            "t": pa.array(np.arange(n)),
        }
    )
    compiled = ceql.compile(JOINS[0].format(w=100), INT_KEYS)
    kernel = PlanKernel(compiled.plan)
    assert kernel.arrow(table).num_rows == n // 2
    assert kernel.join.compact() <= 100
    assert len(kernel.join.ent) <= 4096


def _ids_table(n: int, ids: np.ndarray) -> pa.Table:
    """T and R events alternating, with ``ids``, values 0 and times 0, 1, ..."""
    return pa.table(
        {
            "event_type": pa.array(np.where(np.arange(n) % 2 == 0, "T", "R")),
            "id": pa.array(ids),
            "v": pa.array(np.zeros(n)),
            "t": pa.array(np.arange(n)),
        }
    )


@pytest.mark.parametrize("output", ["arrow", "matches"])
def test_join_and_chain_honour_max_nodes(output) -> None:
    """The join's entries and the chain's carried events count against max_nodes as the
    automaton's stored nodes do: the same LimitError past the bound; a window that keeps them
    below it runs through, with the same results as the automaton."""
    n = 60_000
    table = _ids_table(n, np.arange(n) // 2)
    wide = ceql.compile(JOINS[0].format(w=50_000), INT_KEYS)
    assert PlanKernel(wide.plan, max_nodes=5_000).join is not None
    with pytest.raises(ceql.errors.LimitError, match="max_nodes") as caught:
        list(wide.run(table, output=output, engine="compiled", max_nodes=5_000))
    assert caught.value.limit == "max_nodes" and caught.value.value == 5_000
    narrow = ceql.compile(JOINS[0].format(w=100), INT_KEYS)
    assert narrow.run(table, output="arrow", engine="compiled", max_nodes=5_000).num_rows == n // 2
    # A chain per key without a window carries k-1 events per key: every id is a key here.
    chain = ceql.compile(CHAINS[0], INT_KEYS)
    assert PlanKernel(chain.plan, max_nodes=5_000).chain is not None
    with pytest.raises(ceql.errors.LimitError, match="max_nodes"):
        list(chain.run(_ids_table(n, np.arange(n)), output=output, engine="compiled", max_nodes=5_000))
    few = _ids_table(n, np.arange(n) % 100)
    assert chain.run(few, output="arrow", engine="compiled", max_nodes=5_000).equals(
        chain.run(few, output="arrow", engine="compiled")
    )


def test_join_honours_max_matches() -> None:
    """max_matches stops a join's run with the automaton's error."""
    table = _ids_table(20_000, np.arange(20_000) // 2)
    compiled = ceql.compile(JOINS[0].format(w=100), INT_KEYS)
    for output in ("arrow", "matches"):
        with pytest.raises(ceql.errors.LimitError, match="max_matches"):
            list(compiled.run(table, output=output, engine="compiled", max_matches=9_999))
        assert len(compiled.run(table, output="arrow", engine="compiled", max_matches=10_000)) == 10_000


def test_recycled_key_codes_stay_bounded() -> None:
    """On the automaton path, the codes of routed integer keys are given back once their
    partition has no live run: codes and slots bounded by the window, results unchanged."""
    n = 100_000
    table = pa.table(
        {
            "event_type": pa.array(np.where(np.arange(n) % 2 == 0, "T", "R")),
            "id": pa.array(np.arange(n) // 2),
            "v": pa.array(np.zeros(n)),
            "t": pa.array(np.arange(n)),
        }
    )
    text = "SELECT * FROM S WHERE T AS x ; (R OR U) AS y FILTER x.id = y.id WITHIN 100 EVENTS"
    kernel = PlanKernel(ceql.compile(text, INT_KEYS).plan)
    assert kernel.join is None
    assert kernel.arrow(table).num_rows == n // 2
    assert kernel.keys.count < 70_000  # codes in use at once: at most about a batch's keys
    assert len(kernel.kernel.slot_of) < 140_000


def test_saved_join_state_is_validated() -> None:
    compiled = ceql.compile(JOINS[0].format(w=10), INT_KEYS)
    kernel = PlanKernel(compiled.plan)
    list(kernel.matches([{"event_type": "T", "id": 1, "v": 0.0, "t": 0}, {"event_type": "T", "id": 2, "v": 0.0, "t": 0}]))
    state = kernel.export_state()
    from ceql.runtime.kernel.saved import check_state

    check_state(kernel, state)
    for name, value in [
        ("join.role", np.array([1, 0])),  # the last role is never stored
        ("join.position", np.array([1, 0])),  # decreasing
        ("join.position", np.array([0, 5])),  # beyond the stream read
        ("join.measure", np.array([0, 7])),  # an events window's measure is the position
        ("join.now", np.array([-1])),
    ]:
        broken = dict(state)
        broken[name] = value
        with pytest.raises(StateError):
            check_state(kernel, broken)
    other = PlanKernel(ceql.compile(CHAINS[0], INT_KEYS).plan)
    with pytest.raises(StateError):
        check_state(other, state)


def test_saved_chain_state_is_validated() -> None:
    compiled = ceql.compile(CHAINS[0], INT_KEYS)
    kernel = PlanKernel(compiled.plan)
    events = [{"event_type": "T", "id": i % 2, "v": float(i), "t": i} for i in range(6)]
    list(kernel.matches(events))
    state = kernel.export_state()
    from ceql.runtime.kernel.saved import check_state

    check_state(kernel, state)
    assert len(state["chain.position"]) == 4  # two events per key
    for name, value in [
        ("chain.code", np.array([0, 0, 0, 1])),  # three of one key: more than k - 1
        ("chain.position", np.array([2, 3, 4, 9])),  # beyond the stream read
        ("chain.type", np.array([0, 0, 0, 7])),
        ("chain.value.v", np.array([1, 2, 3, 4])),  # ints for a double attribute
    ]:
        broken = dict(state)
        broken[name] = value
        with pytest.raises(StateError):
            check_state(kernel, broken)


def test_correlation_benchmark_engines_agree() -> None:
    """benchmarks.correlation's engines find the same complex events (peers that are not
    installed are reported as skipped, not failed)."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from benchmarks import correlation

    results = correlation.rows([20_000], repeat=1)
    assert {row["workload"] for row in results} == {
        "(a) W=1,000", "(a) W=20,000", "(a) PARTITION BY W=1,000", "(d) stock V", "(f) web shop funnel"
    }
    for row in results:
        assert row["engines"]["ceql"]["complex_events"] > 0, row["workload"]
        for engine, entry in row["engines"].items():
            assert "skipped" in entry or entry.get("same", True), (row["workload"], engine)
    assert "| (d) stock V | 20,000 |" in correlation.table(results)


def test_no_complex_event_is_an_empty_table() -> None:
    """An input where a join or a chain finds nothing gives the output schema's empty table."""
    events = [{"event_type": "U", "id": 1, "v": 0.0, "t": 0}]
    for text, path in ((JOINS[0].format(w=3), "join"), (CHAINS[0], "chain")):
        compiled = ceql.compile(text, INT_KEYS)
        kernel = PlanKernel(compiled.plan)
        assert getattr(kernel, path) is not None
        out = kernel.arrow(events)
        assert out.num_rows == 0 and out.schema == compiled.run(events, output="arrow").schema


def test_push_and_batches_mixed_on_a_joined_plan_agree_with_the_reference() -> None:
    """push on the kernel of a plan the batch path runs as a hash join with recycled window
    codes (found at the merge: push used its own codes and the automaton, so matches across a
    batch/push boundary were lost)."""
    import random

    schema = ceql.declare("CREATE STREAM S { EVENT A { k:int, v:int }, EVENT B { k:int, v:int } }")
    query = ceql.compile("SELECT * FROM S WHERE A AS a ; B AS b FILTER a.k = b.k WITHIN 5 EVENTS", schema)
    rng = random.Random(1)
    events = [{"event_type": rng.choice("AB"), "k": rng.randrange(4), "v": i} for i in range(400)]
    expected = sorted(m.positions for m in ceql.reference.run(query, events))
    pushed = query.evaluator(engine="compiled")
    assert sorted(m.positions for e in events for m in pushed.push(e)) == expected
    first = query.evaluator(engine="compiled")
    got = [m.positions for m in first.process(events[:200])] + [m.positions for e in events[200:] for m in first.push(e)]
    assert sorted(got) == expected
    second = query.evaluator(engine="compiled")
    got = [m.positions for e in events[:200] for m in second.push(e)] + [m.positions for m in second.process(events[200:])]
    assert sorted(got) == expected


@pytest.mark.parametrize("text", [LINKED_JOINS[1], LINKED_JOINS[2]])
def test_linked_joins_through_push_and_workers_agree_with_the_reference(text) -> None:
    """The funnel (a reported PARTITION BY key, an equality beyond it) and a routed key with
    a second equality: pushed one event at a time after a batch, and split over workers,
    the matches (partition included) are the reference's."""
    import random

    query = ceql.compile(text.format(w=20), LINKED)
    assert PlanKernel(query.plan).join is not None
    rng = random.Random(7)
    events, t = [], 0
    for _ in range(300):
        t += rng.choice([0, SECOND])
        kind = rng.choice("TTRRU")
        event = {"event_type": kind, "id": rng.choice([None, 0, 1, 2, 3]), "v": 0.0, "t": t}
        if kind != "U":
            event["p"] = rng.choice([None, 0, 1])
        events.append(event)
    expected = by_trigger(ceql.reference.run(query, events))
    assert sum(sum(c.values()) for c in expected.values()) > 20  # (many, across the split)
    mixed = query.evaluator(engine="compiled")
    got = list(mixed.process(events[:150])) + [m for e in events[150:] for m in mixed.push(e)]
    assert by_trigger(got) == expected
    assert by_trigger(query.run(events, engine="compiled", workers=2)) == expected


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.lists(st.integers(-(2**63), 2**63 - 1) | st.integers(-40, 40), max_size=40), min_size=1, max_size=6),
    st.lists(st.booleans(), max_size=400),
)
def test_key_tables_are_a_dict(batches, alive) -> None:
    """The compiled key tables (keys.py: ``hash_codes`` growing by ``hash_insert``; WindowCodes'
    ``window_codes`` and ``recycle_codes``) give the codes of a dict model: first appearance
    order, and recycled codes taken back from the top of the stack of the codes not live; one
    key at a time (``encode_one``) as in batches."""
    from ceql.runtime.kernel.keys import IntCodes, WindowCodes

    ints, model, next_code = IntCodes(bits=2), {}, 0  # (2 bits: the table grows, rehashed)
    window, wmodel, free, fresh = WindowCodes(bits=2), {}, [], 0
    for number, batch in enumerate(batches):
        values = np.array(batch, dtype=np.int64)
        codes, next_code, _ = ints.encode(values, None, next_code)
        for value, code in zip(batch, codes.tolist()):
            assert model.setdefault(value, code) == code
        assert sorted(model.values()) == list(range(next_code))
        # (every other batch one key at a time: push's encode_one)
        got = window.encode(values, None).tolist() if number % 2 else [window.encode_one(v) for v in batch]
        for value, code in zip(batch, got):
            if value not in wmodel:
                if free:
                    wmodel[value] = free.pop()
                else:
                    wmodel[value], fresh = fresh, fresh + 1
            assert code == wmodel[value]
        # Give back the codes whose partition is not alive (the kernel's slot_of: -1).
        slot_of = np.array([0 if alive[c % len(alive)] else -1 for c in range(fresh)] if alive else [], dtype=np.int64)
        window.recycle(slot_of)
        wmodel = {k: c for k, c in wmodel.items() if c < len(slot_of) and slot_of[c] >= 0}
        free = [c for c in range(fresh) if c >= len(slot_of) or slot_of[c] < 0]
        assert window.live == len(wmodel)
