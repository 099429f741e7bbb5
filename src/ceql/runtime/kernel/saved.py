"""The compiled kernel's saved state: encoding, and the one function that validates it.

A kernel state travels in the envelope of ``runtime/state.py`` (header with format, version,
query digest, body size and SHA-256; decompression bounded before parsing). Its body holds the
kernel's arrays (``KernelEvaluator.export_state`` plus the runner's position, last time and
partition keys) as typed fields: int64 and bool arrays as base64 of their little-endian bytes (no
Python object per element when loading), determinized states as sets of automaton states,
label sets as label names, partition keys as values. Queries whose checks or measures read
attribute values also keep the values of the events live nodes refer to (``extra``: the
``kept.*`` columns of ``values.KeptValues``) and, with STRICT, the events seen per partition.

``check_state`` validates every field against the query it is loaded into before the kernel
sees any of it: node children before parents and in range, positions non-negative, below the
evaluator's position and increasing along paths, the first-measure bounds recomputed, label-set
ids in range, automaton states that this query's automaton has, partition keys of the declared
types, consumed markers in range, and array sizes consistent with each other before anything is
allocated from them. A field not listed in ``FIELDS`` is refused: new state must be added there
and validated in ``check_state``.
"""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Any

import numpy as np
from numba import njit

from ceql.runtime.kernel import compiled as k
from ceql.runtime.kernel.contiguous import STATE_PREFIX as CHAIN_PREFIX
from ceql.runtime.kernel.engine import STATE_VERSION
from ceql.runtime.kernel.joins import STATE_FIELDS as JOIN_FIELDS
from ceql.runtime.kernel.joins import STATE_PREFIX as JOIN_PREFIX
from ceql.runtime.kernel.values import STATE_PREFIX as KEPT_PREFIX
from ceql.runtime.state import (
    MAX_BYTES,
    MAX_POSITION,
    StateError,
    _decode,
    _encode,
    check_key,
    check_labels,
    check_machine_state,
    fingerprint,
    label_vocabulary,
    read_header,
    seal,
    unseal,
)

if TYPE_CHECKING:
    from ceql.runtime.kernel.runner import PlanKernel

FORMAT = "ceql-kernel-state"
VERSION = 2  # of the envelope's body (v1: unsealed JSON with the query text)
INT64 = 1 << 63

#: Every field of a kernel state body and its kind. ``int64``/``bool``: arrays; ``subsets``:
#: determinized states as sets of automaton states; ``labels``: label sets; ``keys``: partition
#: keys.
FIELDS = {
    "version": "int64",
    "consumed_at": "int64",
    "now": "int64",
    "partition_code": "int64",
    "partition_consumed": "int64",
    "partition_offsets": "int64",
    "entry_state": "int64",
    "entry_node": "int64",
    "node_kind": "int64",
    "node_has_empty": "bool",
    "node_position": "int64",
    "node_label_set": "int64",
    "node_left": "int64",
    "node_right": "int64",
    "node_max_first": "int64",
    "node_min_first": "int64",
    "node_measure": "int64",
    "det_state_ids": "int64",
    "det_states": "subsets",
    "label_sets": "labels",
    "position": "int64",
    "last_time": "int64",
    "partition_keys": "keys",
}
_DTYPES = {"int64": np.dtype("<i8"), "bool": np.dtype("?")}
#: The optional fields (``extra``): kept attribute values and STRICT's per-partition counts.
_EXTRA_DTYPES = {"int64": np.dtype("<i8"), "float64": np.dtype("<f8"), "bool": np.dtype("?")}
_KEPT_DTYPES = {"int": "int64", "double": "float64", "boolean": "bool"}
COUNTS = "sub_stream_counts"


def is_kernel_state(blob: Any) -> bool:
    """Whether an evaluator state was saved by the kernel (reads its header only)."""
    header = read_header(blob)
    return header is not None and header.get("format") == FORMAT


def export_json(runner: PlanKernel) -> bytes:
    """The runner's state, sealed (see the module docstring)."""
    state = runner.export_state()
    body: dict = {}
    for name, kind in FIELDS.items():
        value = state[name]
        if kind in _DTYPES:
            array = np.ascontiguousarray(value, dtype=_DTYPES[kind])
            body[name] = base64.b64encode(array.tobytes()).decode("ascii")
        elif kind == "subsets":
            body[name] = [_encode(frozenset(v)) for v in value]
        elif kind == "labels":
            body[name] = [list(v) for v in value]
        else:
            body[name] = [_encode(tuple(v)) for v in value]
    body["extra"] = _encode_extra(state)
    return seal(FORMAT, VERSION, fingerprint(runner.plan.checked), body)


def import_json(runner: PlanKernel, blob: Any) -> None:
    """Load a state made by ``export_json`` for the same query: StateError if it is not one,
    and then nothing of the runner changes."""
    body = unseal(blob, FORMAT, VERSION, fingerprint(runner.plan.checked))
    kinds = body.get("node_kind") if isinstance(body, dict) else None
    if isinstance(kinds, str) and len(kinds) * 3 // 32 > runner.max_nodes + 1:  # before decoding
        raise StateError(f"saved kernel state holds more nodes than the bound max_nodes ({runner.max_nodes:,})")
    state = decode(body)
    check_state(runner, state)
    runner.import_state(state)


def _encode_extra(state: dict) -> dict:
    extra: dict = {}
    for name, value in state.items():
        if not (name.startswith((KEPT_PREFIX, JOIN_PREFIX, CHAIN_PREFIX)) or name == COUNTS):
            continue
        if isinstance(value, np.ndarray):
            dtype = "bool" if value.dtype == np.bool_ else "float64" if value.dtype.kind == "f" else "int64"
            array = np.ascontiguousarray(value, dtype=_EXTRA_DTYPES[dtype])
            extra[name] = [dtype, base64.b64encode(array.tobytes()).decode("ascii")]
        else:  # a kept string column
            extra[name] = ["strings", list(value)]
    return extra


def _decode_extra(value: Any) -> dict:
    if not isinstance(value, dict):
        raise StateError("saved kernel state has malformed kept values")
    out: dict = {}
    for name, item in value.items():
        if not (isinstance(name, str) and isinstance(item, list) and len(item) == 2):
            raise StateError("saved kernel state has malformed kept values")
        kind, payload = item
        if kind == "strings":
            if not isinstance(payload, list) or not all(v is None or isinstance(v, str) for v in payload):
                raise StateError(f"saved kernel state has malformed kept values {name[:40]!r}")
            out[name] = payload
            continue
        message = f"saved kernel state has malformed kept values {name[:40]!r}"
        if not isinstance(kind, str) or kind not in _EXTRA_DTYPES:  # (a forged list is unhashable)
            raise StateError(message)
        out[name] = _decode_array(payload, _EXTRA_DTYPES[kind], message)
    return out


def _decode_array(text: Any, dtype: np.dtype, message: str) -> np.ndarray:
    """An array saved as base64 of ``dtype`` (a bool's bytes 0 or 1), as int64, float64 or
    bool; StateError(``message``) when it is none."""
    if not isinstance(text, str):
        raise StateError(message)
    try:
        raw = base64.b64decode(text.encode("ascii"), validate=True)
    except (ValueError, UnicodeEncodeError):
        raise StateError(message) from None
    if len(raw) % dtype.itemsize or (dtype.kind == "b" and not np.isin(np.frombuffer(raw, dtype=np.uint8), (0, 1)).all()):
        raise StateError(message)
    return np.frombuffer(raw, dtype=dtype).astype(bool if dtype.kind == "b" else np.float64 if dtype.kind == "f" else np.int64)


def decode(body: Any) -> dict:
    """The typed fields of a state body (no validation against a query yet)."""
    if isinstance(body, dict) and "extra" in body:
        body = dict(body)
        extra = _decode_extra(body.pop("extra"))
    else:
        extra = {}
    if not isinstance(body, dict) or set(body) != set(FIELDS):
        unknown = sorted(set(body) - set(FIELDS)) if isinstance(body, dict) else []
        raise StateError(
            "saved kernel state has missing or unknown fields"
            + (f": {', '.join(unknown)[:80]}" if unknown else "")
        )
    state: dict = {}
    for name, kind in FIELDS.items():
        value = body[name]
        if kind in _DTYPES:
            state[name] = _decode_array(value, _DTYPES[kind], f"saved kernel state has a malformed {name}")
        elif not isinstance(value, list):
            raise StateError(f"saved kernel state has a malformed {name}")
        elif kind == "subsets":
            state[name] = [_decode(v) for v in value]
        elif kind == "labels":
            state[name] = value
        else:
            state[name] = [_decode(v) for v in value]
    state.update(extra)
    return state


# ---------------------------------------------------------------------------------- validation


def _scalar(state: dict, name: str, low: int, high: int) -> int:
    array = state[name]
    if len(array) != 1 or not low <= int(array[0]) < high:
        raise StateError(
            f"saved kernel state has an impossible {name.replace('_', ' ')}: {array[:2].tolist()}"
        )
    return int(array[0])


def check_state(runner: PlanKernel, state: dict) -> None:
    """Validate a decoded kernel state against the runner's query (StateError if anything is
    impossible). This is the one place that validates a kernel state: a new field is checked
    here."""
    plan = runner.plan
    kernel = runner.kernel
    if len(state["version"]) != 1 or int(state["version"][0]) != STATE_VERSION:
        raise StateError("saved kernel state has an unknown array layout version")
    position = _scalar(state, "position", 0, MAX_POSITION)
    consumed_at = _scalar(state, "consumed_at", -1, max(position, 0))
    if len(state["last_time"]) > 1:
        raise StateError("saved kernel state has a malformed last time")
    if len(state["last_time"]) and not plan.ordered_time:
        raise StateError("saved kernel state has a last time, but the query's window needs none")

    # Automaton states and label sets.
    ids, subsets = state["det_state_ids"], state["det_states"]
    if len(ids) != len(subsets) or len(np.unique(ids)) != len(ids) or (len(ids) and ids.min() < 0):
        raise StateError("saved kernel state has a malformed automaton state table")
    machine = plan.compiled.machine
    for subset in subsets:
        check_machine_state(machine, subset, "saved kernel state")
    vocabulary = label_vocabulary(plan)
    public = runner.post is None  # per-complex-event checks also record private-only events
    label_sets = [check_labels(labels, vocabulary, public) for labels in state["label_sets"]]
    if len(set(label_sets)) != len(label_sets):
        raise StateError("saved kernel state lists a label set twice")

    # Nodes: sizes first, then every row (children before parents, in range, positions
    # increasing along paths, first-measure bounds recomputed).
    node_fields = [name for name in FIELDS if name.startswith("node_")]
    n = len(state["node_kind"])
    if n < 1 or any(len(state[name]) != n for name in node_fields):
        raise StateError("saved kernel state has node arrays of different lengths")
    if n - 1 > runner.max_nodes:
        raise StateError(
            f"saved kernel state holds {n - 1:,} nodes, more than the bound max_nodes ({runner.max_nodes:,})"
        )
    window = plan.window_kind
    code, row = _check_nodes(
        state["node_kind"],
        state["node_has_empty"].astype(np.int64),
        state["node_position"],
        state["node_label_set"],
        state["node_left"],
        state["node_right"],
        state["node_max_first"],
        state["node_min_first"],
        state["node_measure"],
        position,
        len(label_sets),
        0 if window is None else 1 if window == "events" else 2,
        window == "attribute" and not plan.ordered_time,
    )
    if code:
        raise StateError(f"saved kernel state has an impossible node {row}: {_NODE_ERRORS[code]}")
    now = int(_scalar(state, "now", -INT64, INT64))
    prune = window is not None and plan.monotone
    if now != k.MISSING and (not prune or (window == "events" and not 0 <= now < position)):
        raise StateError(f"saved kernel state has an impossible last measure: {now}")

    # Partitions and their entries.
    codes, offsets = state["partition_code"], state["partition_offsets"]
    consumed = state["partition_consumed"]
    entry_state, entry_node = state["entry_state"], state["entry_node"]
    keys = state["partition_keys"]
    if runner.partitioned:
        checked_keys = [check_key(plan, key) for key in keys]
        if len(set(checked_keys)) != len(checked_keys):
            raise StateError("saved kernel state lists a partition key twice")
        if len(codes) and (codes.min() < 0 or codes.max() >= len(keys)):
            raise StateError("saved kernel state has a partition code without a key")
    else:
        if keys or len(codes) != 1 or int(codes[0]) != 0:
            raise StateError("saved kernel state of an unpartitioned query must have one partition, code 0")
    if len(np.unique(codes)) != len(codes):
        raise StateError("saved kernel state has a partition twice")
    if len(consumed) != len(codes) or len(consumed) and (consumed.min() < -1 or consumed.max() > consumed_at):
        raise StateError("saved kernel state has impossible consumed positions")
    if (
        len(offsets) != len(codes) + 1
        or offsets[0] != 0
        or np.any(np.diff(offsets) < 0)
        or offsets[-1] != len(entry_state)
        or len(entry_node) != len(entry_state)
    ):
        raise StateError("saved kernel state has malformed partition offsets")
    if len(entry_node) and (entry_node.min() < 0 or entry_node.max() >= n):
        raise StateError("saved kernel state has an entry that refers to a missing node")
    if not np.isin(entry_state, ids).all():
        raise StateError("saved kernel state has an entry in an automaton state it does not list")
    for slot in range(len(codes)):
        lo, hi = int(offsets[slot]), int(offsets[slot + 1])
        if len(np.unique(entry_state[lo:hi])) != hi - lo:
            raise StateError("saved kernel state has a partition with one automaton state twice")
    width = int(np.diff(offsets).max()) if len(codes) else 0
    if max(len(codes), 16) * max(width, 8) * 16 > MAX_BYTES:
        raise StateError("saved kernel state's partition table would exceed the 1 GiB bound")
    _check_extra(runner, state, position)
    _check_join(runner, state, position)
    _check_chain(runner, state, position)
    del kernel  # (the kernel's arrays are replaced by import_state only after these checks)


def _check_extra(runner: PlanKernel, state: dict, position: int) -> None:
    """The kept values (those this query keeps, of the right types, for increasing positions
    read so far, covering every event a node refers to) and STRICT's counts."""
    kept = runner.kept
    names = {name for name in state if name.startswith(KEPT_PREFIX)}
    if kept is None:
        if names:
            raise StateError("saved kernel state keeps values this query does not read")
    else:
        expected = {f"{KEPT_PREFIX}positions"}
        for attribute, storage in kept.storages.items():
            key = f"{KEPT_PREFIX}{attribute}"
            expected |= {f"{key}.data", f"{key}.valid"}
            if attribute in kept.int_types:
                expected.add(f"{key}.as_int")
            data = state.get(f"{key}.data")
            wanted = _KEPT_DTYPES.get(storage)
            if data is not None and (
                (wanted is None and not isinstance(data, list))
                or (wanted is not None and (not isinstance(data, np.ndarray) or data.dtype != np.dtype(wanted)))
            ):
                raise StateError(f"saved kernel state keeps values of {attribute[:40]!r} of the wrong type")
            for suffix in (".valid", ".as_int"):
                flags = state.get(f"{key}{suffix}")
                if flags is not None and (not isinstance(flags, np.ndarray) or flags.dtype != np.bool_):
                    raise StateError(f"saved kernel state has malformed kept values of {attribute[:40]!r}")
        if not names <= expected:
            raise StateError("saved kernel state keeps values this query does not read")
        positions = state.get(f"{KEPT_PREFIX}positions")
        if positions is None:
            positions = np.zeros(0, dtype=np.int64)
        if not isinstance(positions, np.ndarray) or positions.dtype != np.int64:
            raise StateError("saved kernel state has malformed kept positions")
        if len(positions) and (positions[0] < 0 or positions[-1] >= position or np.any(np.diff(positions) <= 0)):
            raise StateError("saved kernel state has impossible kept positions")
        for name in names - {f"{KEPT_PREFIX}positions"}:
            if len(state[name]) != len(positions):
                raise StateError("saved kernel state has kept values that do not match their positions")
        kinds = state["node_kind"]
        referred = state["node_position"][(kinds == 1) | (kinds == 3)]
        if not np.isin(referred, positions).all():
            raise StateError("saved kernel state has a node that refers to an event without kept values")
    counts = state.get(COUNTS)
    if counts is not None:
        strict = runner.post is not None and runner.post.strict and runner.keys is not None
        if (
            not strict
            or not isinstance(counts, np.ndarray)
            or counts.dtype != np.int64
            or len(counts) > len(state["partition_keys"])
            or (len(counts) and (counts.min() < 0 or counts.max() > position))
        ):
            raise StateError("saved kernel state has impossible per-partition event counts")


def _int_arrays(state: dict, prefix: str, names: tuple[str, ...], what: str) -> dict[str, np.ndarray]:
    arrays = {}
    for name in names:
        array = state.get(f"{prefix}{name}")
        if not isinstance(array, np.ndarray) or array.dtype != np.int64:
            raise StateError(f"saved kernel state has malformed {what}")
        arrays[name] = array
    return arrays


def _check_join(runner: PlanKernel, state: dict, position: int) -> None:
    """An equality join's entries (joins.py): the events of the window that later events may
    join, oldest first, each in a role before the last, keyed as this query keys them."""
    names = {name for name in state if name.startswith(JOIN_PREFIX)}
    join = runner.join
    if join is None:
        if names:
            raise StateError("saved kernel state has join entries, but this query is not a join")
        return
    if names != {f"{JOIN_PREFIX}{name}" for name in join.state_fields}:
        raise StateError("saved kernel state of a join lacks its entries")
    arrays = _int_arrays(state, JOIN_PREFIX, join.state_fields, "join entries")
    pos, meas, key, role, now = (arrays[name] for name in JOIN_FIELDS)
    n = len(pos)
    linked = [arrays[name] for name in join.state_fields[len(JOIN_FIELDS) :]]
    if any(len(array) != n for array in [meas, key, role, *linked]) or len(now) != 1:
        raise StateError("saved kernel state has join entries of different lengths")
    if any(name.startswith("valid.") and np.any((arrays[name] != 0) & (arrays[name] != 1)) for name in arrays):
        raise StateError("saved kernel state has a join entry whose validity is neither 0 nor 1")
    if n * 48 > MAX_BYTES:
        raise StateError("saved kernel state's join entries would exceed the 1 GiB bound")
    if n and (pos[0] < 0 or pos[-1] >= position or np.any(np.diff(pos) < 0)):
        raise StateError("saved kernel state has join entries at impossible positions")
    if n and (role.min() < 0 or role.max() >= join.roles - 1):
        raise StateError("saved kernel state has a join entry in a role it cannot have")
    if n and np.any(np.diff(meas) < 0):
        raise StateError("saved kernel state has join entries whose measures decrease")
    if runner.plan.window_kind == "events" and np.any(meas != pos):
        raise StateError("saved kernel state has a join entry whose measure is not its position")
    if n and (int(now[0]) == k.MISSING or int(now[0]) < int(meas[-1])):
        raise StateError("saved kernel state has an impossible last measure for its join entries")
    if not join.shape.int_keys and n and (key.min() < 0 or key.max() >= len(state["partition_keys"])):
        raise StateError("saved kernel state has a join entry whose key is not listed")
    if n and len(np.unique(np.stack([pos, role]), axis=1)[0]) != n:
        raise StateError("saved kernel state has a join entry twice")


def _check_chain(runner: PlanKernel, state: dict, position: int) -> None:
    """A contiguous chain's carried events (contiguous.py): at most k - 1 per key, in stream
    order, of the query's event types, with the compared values of the right storage."""
    names = {name for name in state if name.startswith(CHAIN_PREFIX)}
    chain = runner.chain
    if chain is None:
        if names:
            raise StateError("saved kernel state carries chain events, but this query has no chain")
        return
    expected = {f"{CHAIN_PREFIX}{name}" for name in chain.carry}
    if names != expected:
        raise StateError("saved kernel state of a chain lacks its carried events")
    arrays = _int_arrays(state, CHAIN_PREFIX, ("position", "code", "type", "measure"), "chain events")
    pos, code = arrays["position"], arrays["code"]
    n = len(pos)
    if any(len(array) != n for array in arrays.values()):
        raise StateError("saved kernel state has chain events of different lengths")
    if n and (pos[0] < 0 or pos[-1] >= position or np.any(np.diff(pos) <= 0)):
        raise StateError("saved kernel state has chain events at impossible positions")
    keys = len(state["partition_keys"])
    if n and (code.min() < 0 or (code.max() >= keys if runner.partitioned else code.max() != 0)):
        raise StateError("saved kernel state has a chain event whose key is not listed")
    if n and np.bincount(code).max() > chain.k - 1:
        raise StateError("saved kernel state carries more chain events per key than the chain needs")
    if n and (arrays["type"].min() < 0 or arrays["type"].max() >= len(runner.plan.type_names)):
        raise StateError("saved kernel state has a chain event of an unknown type")
    if runner.plan.window_kind == "events" and np.any(arrays["measure"] != pos):
        raise StateError("saved kernel state has a chain event whose measure is not its position")
    storages = runner.plan.catalog.columns
    for attribute in chain.shape.attributes:
        data = state[f"{CHAIN_PREFIX}value.{attribute}"]
        valid = state[f"{CHAIN_PREFIX}valid.{attribute}"]
        wanted = np.float64 if storages[attribute].storage == "double" else np.int64
        if not isinstance(data, np.ndarray) or data.dtype != wanted or len(data) != n:
            raise StateError(f"saved kernel state carries values of {attribute[:40]!r} of the wrong type")
        if not isinstance(valid, np.ndarray) or valid.dtype != np.bool_ or len(valid) != n:
            raise StateError(f"saved kernel state carries malformed values of {attribute[:40]!r}")


_NODE_ERRORS = {
    1: "the first row is not the empty set",
    2: "unknown node kind",
    3: "a child that is not an earlier row",
    4: "a position outside the stream read so far",
    5: "positions that do not increase along a path",
    6: "a label-set id out of range",
    7: "a window measure this query cannot have",
    8: "first-measure bounds that do not match its children",
    9: "an empty-set flag that does not match its children",
    10: "fields a union node does not have",
}


@njit(cache=True)
def _check_nodes(
    kind, empty, pos, lab, left, right, mf, minf, meas, position, labels, window, gone_ok
):  # pragma: no cover - compiled
    """(error code, row) of the first impossible node, (0, 0) if all are possible. ``window``:
    0 none (measures 0), 1 events (measures are positions), 2 time or attribute (any int64);
    ``gone_ok``: an output node may have no measure (an attribute window)."""
    lowest = np.iinfo(np.int64).min
    highest = np.iinfo(np.int64).max
    n = len(kind)
    latest = np.empty(n, np.int64)  # the largest position of each node's complex events
    if kind[0] != 0 or empty[0] != 1 or pos[0] != 0 or lab[0] != 0 or left[0] != 0 or right[0] != 0:
        return 1, 0
    if mf[0] != lowest or minf[0] != highest or meas[0] != 0:
        return 1, 0
    latest[0] = -1
    for x in range(1, n):
        kx = kind[x]
        a = left[x]
        if a < 0 or a >= x:
            return 3, x
        if kx == 2:  # union
            b = right[x]
            if b < 0 or b >= x:
                return 3, x
            if pos[x] != 0 or lab[x] != 0 or meas[x] != 0:
                return 10, x
            if empty[x] != (empty[a] | empty[b]):
                return 9, x
            if mf[x] != max(mf[a], mf[b]) or minf[x] != min(minf[a], minf[b]):
                return 8, x
            latest[x] = max(latest[a], latest[b])
        elif kx == 1 or kx == 3:  # an output node (3: its event has no window measure)
            if right[x] != 0:
                return 3, x
            p = pos[x]
            if p < 0 or p >= position:
                return 4, x
            if p <= latest[a]:
                return 5, x
            if lab[x] < 0 or lab[x] >= labels:
                return 6, x
            if empty[x] != 0:
                return 9, x
            m = meas[x]
            if kx == 3:
                if not gone_ok or m != 0:
                    return 7, x
            elif (window == 0 and m != 0) or (window == 1 and m != p):
                return 7, x
            if empty[a] == 1 and kx == 1:
                expected_max, expected_min = max(mf[a], m), min(minf[a], m)
            else:
                expected_max, expected_min = mf[a], minf[a]
            if mf[x] != expected_max or minf[x] != expected_min:
                return 8, x
            latest[x] = p
        else:
            return 2, x
    return 0, 0
