"""Evaluator state is plain, picklable data: a restored evaluator continues exactly; a corrupt or
forged state is refused (StateError), never trusted."""

from __future__ import annotations

import json
import pickle
import tracemalloc
import zlib

import pytest
from hypothesis import HealthCheck, assume, given, settings

import ceql
from ceql.lang import print_query
from ceql.runtime import kernel as kernel_module
from ceql.runtime import state as state_module
from ceql.runtime.state import StateError
from tests.support.states import array, forge, open_state, reseal, with_array
from tests.support.strategies import TEST_DECLARATION, queries, streams

SCHEMA = ceql.declare(TEST_DECLARATION)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(queries(depth=3), streams(min_size=2, max_size=10), streams(min_size=1, max_size=6))
def test_pickled_evaluator_continues_like_the_original(query, first, second) -> None:
    try:
        compiled = ceql.compile(print_query(query), SCHEMA)
    except ceql.UnsupportedQueryError:
        assume(False)
        return
    for event in second:
        event["t"] += first[-1]["t"]
    whole = compiled.evaluator()
    whole.push_batch(first)
    expected = whole.push_batch(second)
    part = compiled.evaluator()
    part.push_batch(first)
    restored = pickle.loads(pickle.dumps(part))
    # Order within one trigger is unspecified; the multiset of matches must agree.
    assert sorted(m.key() for m in restored.push_batch(second)) == sorted(m.key() for m in expected)


def test_deep_state_pickles_without_recursion() -> None:
    query = ceql.compile("SELECT * WHERE A+ ; B", SCHEMA)
    evaluator = query.evaluator()
    evaluator.push_batch([{"event_type": "A", "id": 0, "v": 1, "s": "a", "t": i} for i in range(20_000)])
    restored = pickle.loads(pickle.dumps(evaluator))
    assert restored.live_nodes() == evaluator.live_nodes()


# --------------------------------------------------------------------------- hostile states
#
# A saved state is data from outside: a flipped bit or a forged field gives StateError, never a
# crash, a raw exception or an invented match (issue 27). Forged states are re-sealed (size and
# digest recomputed), so the validation itself is what refuses them.

ABC = ceql.declare(
    "CREATE STREAM S { EVENT A { x:int, k:int, s:string }, EVENT B { x:int, k:int, s:string }, EVENT C { x:int, k:int, s:string } }"
)
ABC_EVENTS = [{"event_type": t, "x": 1, "k": 7, "s": "a"} for t in ("A", "B", "B")]


def _saved(text: str, engine: str, events=ABC_EVENTS) -> tuple[ceql.Query, bytes]:
    query = ceql.compile(text, ABC)
    evaluator = query.evaluator(engine=engine)
    evaluator.push_batch(events)
    assert (evaluator._kernel is not None) == (engine == "compiled")
    return query, evaluator.export_state()


def _load(query: ceql.Query, blob: bytes, engine: str) -> list:
    evaluator = query.evaluator(engine=engine)
    evaluator.import_state(blob)
    return [m.positions for m in evaluator.push_batch([{"event_type": "C", "x": 1, "k": 7, "s": "a"}])]


def _kernel_forged(blob: bytes, name: str, row: int, value: int) -> bytes:
    header, body = open_state(blob)
    values = array(body, name)
    values[row] = value
    return reseal(header, with_array(body, name, values))


def test_saved_states_round_trip_on_both_paths() -> None:
    for engine in ("python", "compiled"):
        query, blob = _saved("SELECT * FROM S WHERE A ; B+ ; C", engine)
        assert sorted(_load(query, blob, engine)) == [(0, 1, 2, 3), (0, 1, 3), (0, 2, 3)]


@pytest.mark.parametrize(
    "name, row, value",
    [
        ("node_left", 6, -(10**12)),  # segfaulted the process
        ("node_left", 6, 6),  # a node its own child
        ("node_right", 4, 5),  # a child after its parent
        ("node_position", 1, -5),  # invented the match (-5, 1, 3)
        ("node_position", 1, 77),  # a position beyond the stream
        ("node_position", 2, 0),  # positions not increasing along a path
        ("node_label_set", 2, -1),  # gave wrong labels
        ("node_label_set", 2, 9),
        ("node_kind", 3, 7),
        ("node_kind", 0, 1),
        ("node_has_empty", 2, 1),
        ("node_max_first", 5, 1),
        ("node_measure", 3, 5),  # no window: measures are 0
        ("entry_state", 0, 99),  # an automaton state the state does not list
        ("entry_node", 1, 7),
        ("entry_node", 1, -1),
        ("partition_code", 0, 5),  # no such partition
        ("partition_code", 0, 10**8),  # would allocate 10^8 slots
        ("partition_consumed", 0, 9),
        ("partition_offsets", 1, 2),
        ("consumed_at", 0, 3),
        ("position", 0, -1),
        ("now", 0, 5),  # no window: no last measure
        ("version", 0, 2),
    ],
)
def test_forged_kernel_state_fields_are_refused(name, row, value) -> None:
    query, blob = _saved("SELECT * FROM S WHERE A ; B+ ; C", "compiled")
    with pytest.raises(StateError):
        _load(query, _kernel_forged(blob, name, row, value), "compiled")


def test_forged_kernel_state_tables_are_refused() -> None:
    query, blob = _saved("SELECT * FROM S WHERE A ; B+ ; C", "compiled")
    header, body = open_state(blob)
    forgeries = [
        dict(body, det_states=[["f", [0]], ["f", [987654]], ["f", [2, 4]]]),  # no such automaton state
        dict(body, det_states=[["f", []], ["f", [2]], ["f", [2, 4]]]),
        dict(body, det_states=[["f", [0]], ["f", [2]]]),  # fewer states than ids
        dict(body, label_sets=[["A"], ["zzz"]]),  # a label the query does not have
        dict(body, label_sets=[["A"], ["A"]]),
        dict(body, label_sets=[["A"], ["\x00forged"]]),
        dict(body, partition_keys=[["t", [1]]]),  # a key, but no PARTITION BY
        dict(body, last_time="AQAAAAAAAAA="),  # a time, but no time window
        dict(body, extra=1),  # a field this version does not have
        {k: v for k, v in body.items() if k != "node_measure"},
        with_array(body, "node_kind", array(body, "node_kind")[:-1]),  # arrays of different lengths
        dict(body, node_kind="not base64!"),
        dict(body, det_states="x"),
    ]
    for forged in forgeries:
        with pytest.raises(StateError):
            _load(query, reseal(header, forged), "compiled")


def test_forged_kernel_partition_keys_are_refused() -> None:
    query, blob = _saved("SELECT * FROM S WHERE A ; B+ ; C PARTITION BY [k]", "compiled")
    header, body = open_state(blob)
    assert body["partition_keys"] == [["t", [7]]]
    assert _load(query, blob, "compiled")
    for keys in (
        [["t", ["7"]]],
        [["t", [7, 8]]],
        [["t", [7]], ["t", [7]]],
        [["t", [True]]],
        [["t", [2**70]]],
        [None],
    ):
        with pytest.raises(StateError):
            _load(query, reseal(header, dict(body, partition_keys=keys)), "compiled")


def test_forged_python_state_fields_are_refused() -> None:
    query, blob = _saved("SELECT * FROM S WHERE A ; B+ ; C PARTITION BY [k]", "python")
    assert sorted(_load(query, blob, "python")) == [(0, 1, 2, 3), (0, 1, 3), (0, 2, 3)]
    _, body = open_state(blob)
    table = body["nodes"]
    output = next(i for i, entry in enumerate(table) if entry[0] == "O" and entry[1] == 1)
    first = next(i for i, entry in enumerate(table) if entry[0] == "O" and entry[1] == 0)

    def node(i: int, field: int, value) -> list:
        nodes = [list(entry) for entry in table]
        nodes[i][field] = value
        return nodes

    forgeries = [
        {"partition_consumed": 5},  # raised TypeError
        {"partition_consumed": [[["t", [7]], 99]]},
        {"consumed_at": 3},
        {"local_counts": 3},
        {"nodes": node(output, 2, ["zzz"])},  # a label the query does not have (was accepted)
        {"nodes": node(output, 2, ["A", "A"])},
        {"nodes": node(output, 2, [])},
        {"nodes": node(output, 1, 0)},  # positions not increasing along the path
        {"nodes": node(output, 1, -5)},
        {"nodes": node(output, 1, 3)},  # beyond the stream read so far
        {"nodes": node(output, 3, output)},  # a node its own child
        {"nodes": node(output, 4, 77)},  # no window: the measure is the position
        {"nodes": node(first, 0, "Q")},
        {"partitions": [[["t", ["7"]], body["partitions"][0][1]]]},  # a key of the wrong kind (lost runs)
        {"partitions": [[["t", [7.5]], body["partitions"][0][1]]]},
        {"partitions": [[None, body["partitions"][0][1]]]},
        {"partitions": body["partitions"] * 2},  # one key twice
        {"partitions": [[["t", [7]], [[12345, ["t", []], 0]]]]},  # an automaton state not listed
        {"position": 2**70},
        {"last_time": "soon"},
        {"states": {"0": ["f", [987654]]}},
        {"extra": 1},
    ]
    for fields in forgeries:
        with pytest.raises(StateError):
            _load(query, forge(blob, **fields), "python")


@pytest.mark.parametrize("engine", ["python", "compiled"])
def test_flipped_bits_in_a_state_are_refused(engine) -> None:
    query, blob = _saved("SELECT * FROM S WHERE A ; B+ ; C", engine)
    raw = bytearray(zlib.decompress(blob))
    header_end = raw.index(b"\n")
    for where in range(header_end + 1, len(raw), max(1, len(raw) // 60)):
        for bit in (0, 3, 6):
            flipped = bytearray(raw)
            flipped[where] ^= 1 << bit
            with pytest.raises(StateError):
                _load(query, zlib.compress(bytes(flipped)), engine)


def test_a_state_of_another_query_schema_or_format_is_refused() -> None:
    query, blob = _saved("SELECT * FROM S WHERE A ; B+ ; C", "compiled")
    other = ceql.compile("SELECT * FROM S WHERE A ; B+ ; C ", ABC)  # another text
    with pytest.raises(StateError, match="another query"):
        _load(other, blob, "compiled")
    schema = ceql.declare(
        "CREATE STREAM S { EVENT A { x:int, k:int, s:string }, EVENT B { x:int, k:int, s:string }, EVENT C { x:double, k:int, s:string } }"
    )
    with pytest.raises(StateError, match="another query"):
        _load(ceql.compile("SELECT * FROM S WHERE A ; B+ ; C", schema), blob, "compiled")
    header, body = open_state(blob)
    with pytest.raises(StateError, match="version"):
        _load(query, reseal(dict(header, version=1), body), "compiled")
    for junk in (b"", b"\x80\x04not a state", zlib.compress(b'{"format": "ceql-kernel-state"}'), "text"):
        with pytest.raises(StateError):
            _load(query, junk, "compiled")


def test_decompression_is_bounded_before_parsing(monkeypatch) -> None:
    """A small blob that inflates to 64 MB (and a header that claims more than the bound) is
    refused after decompressing at most what the header claims (at most MAX_BYTES)."""
    query, blob = _saved("SELECT * FROM S WHERE A ; B+ ; C", "compiled")
    header, _ = open_state(blob)
    line = json_line(dict(header, size=10))
    bomb = zlib.compress(line + b"\n" + b"0" * (64 << 20), 9)
    assert len(bomb) < 100_000
    tracemalloc.start()
    try:
        assert kernel_module.is_kernel_state(bomb)
        with pytest.raises(StateError, match="longer than its header"):
            _load(query, bomb, "compiled")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20, peak
    monkeypatch.setattr(state_module, "MAX_BYTES", 1 << 20)
    claims = zlib.compress(json_line(dict(header, size=2 << 20)) + b"\n" + b"0" * (2 << 20), 9)
    with pytest.raises(StateError, match="impossible size"):
        _load(query, claims, "compiled")
    assert not kernel_module.is_kernel_state(zlib.compress(b"0" * (64 << 20)))


def json_line(header: dict) -> bytes:
    return json.dumps(header, separators=(",", ":")).encode()


@pytest.mark.parametrize("engine", ["python", "compiled"])
def test_a_state_larger_than_max_nodes_is_refused(engine) -> None:
    """A state is loaded under the evaluator's node bound: a small blob cannot make it build
    more nodes than max_nodes (a 874 KB kernel state claiming 10^8 nodes took 2.5 GB)."""
    query, blob = _saved("SELECT * FROM S WHERE A ; B+ ; C", engine)
    evaluator = query.evaluator(engine=engine)
    evaluator.import_state(blob)
    stored = evaluator.live_nodes()
    assert stored >= 4
    small = query.evaluator(engine=engine, max_nodes=stored - 1)
    with pytest.raises(StateError, match="max_nodes"):
        small.import_state(blob)
    enough = query.evaluator(engine=engine, max_nodes=stored + 1)
    enough.import_state(blob)
    assert len(enough.push_batch([{"event_type": "C", "x": 1, "k": 7, "s": "a"}])) == 3


def test_kept_values_of_a_kernel_state_round_trip_and_forgeries_are_refused() -> None:
    """A query whose measures read attributes saves the values of the events its nodes refer
    to; a state whose kept values are missing, of another type, for another attribute or for
    positions no node needs is refused (issue 27 with the kernel's measures of issue 25)."""
    text = "SELECT MAX(b.x) AS m, a.s AS s FROM S WHERE A AS a ; B+ AS b ; C"
    query, blob = _saved(text, "compiled")
    evaluator = query.evaluator(engine="compiled")
    evaluator.import_state(blob)
    got = evaluator.push_batch([{"event_type": "C", "x": 1, "k": 7, "s": "a"}])
    expected = query.run(ABC_EVENTS + [{"event_type": "C", "x": 1, "k": 7, "s": "a"}], engine="python")
    assert sorted((m.positions, m.measures) for m in got) == sorted((m.positions, m.measures) for m in expected)
    header, body = open_state(blob)
    extra = body["extra"]
    assert "kept.positions" in extra and "kept.s.data" in extra
    forgeries = [
        dict(body, extra={}),  # the nodes' events without their values
        dict(body, extra={k: v for k, v in extra.items() if k != "kept.positions"}),
        dict(body, extra=dict(extra, **{"kept.s.data": extra["kept.x.data"]})),  # ints for strings
        dict(body, extra=dict(extra, **{"kept.zzz.data": extra["kept.x.data"]})),  # not read
        dict(body, extra=dict(extra, **{"kept.s.data": ["strings", [1, 2, 3]]})),
        dict(body, extra=dict(extra, **{"kept.s.data": ["float128", ""]})),
        dict(body, extra=dict(extra, sub_stream_counts=extra["kept.positions"])),  # not STRICT
    ]
    for forged in forgeries:
        with pytest.raises(StateError):
            _load(query, reseal(header, forged), "compiled")


def test_payloads_of_plain_values_survive_a_saved_state() -> None:
    """Spark streaming keeps each event's id columns as its payload across micro-batches: a
    saved state carries them (plain values only)."""
    import pyarrow as pa

    query = ceql.compile("SELECT * FROM S WHERE A ; B+ PARTITION BY [k]", ABC)
    first = query.evaluator(engine="python")
    list(first.process_table(pa.table({"event_type": ["A", "B"], "k": [1, 1]}), payload=[(10, "x"), (11, "y")]))
    second = query.evaluator(engine="python")
    second.import_state(first.export_state())
    found = list(second.process_table(pa.table({"event_type": ["B"], "k": [1]}), payload=[(12, "z")]))
    assert sorted(rows for _, rows in found) == [[(10, "x"), (11, "y"), (12, "z")], [(10, "x"), (12, "z")]]
