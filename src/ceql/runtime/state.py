"""Evaluator state as data: a versioned, validated JSON document (never pickle).

``export_state`` flattens the live tECS into a node table and writes determinized states as
the sets of automaton states they stand for, so a state saved by one process loads in another
(Spark streaming stores one per key). ``import_state`` checks everything before using it: the
format version, the query fingerprint, every automaton state, every node index and position, and
raises ``StateError`` on anything impossible instead of inventing matches or dropping runs.
"""

from __future__ import annotations

import hashlib
import json
import math
import zlib
from typing import TYPE_CHECKING, Any

from ceql.compile.registers import POISON
from ceql.compile.values import MISSING
from ceql.errors import CeqlError
from ceql.runtime import nodes

if TYPE_CHECKING:
    from ceql.runtime.evaluator import Evaluator

FORMAT = "ceql-evaluator-state"
VERSION = 2
MAX_BYTES = 1 << 30


class StateError(CeqlError):
    """A saved evaluator state that cannot be loaded (corrupt, hostile, or another query's)."""


def fingerprint(evaluator: Evaluator) -> str:
    """Identifies the query and schema a state belongs to."""
    checked = evaluator.plan.checked
    schema = repr(sorted((name, repr(decl)) for name, decl in checked.schema.event_types.items()))
    return hashlib.sha256((checked.text + "\x00" + schema).encode()).hexdigest()


# ---------------------------------------------------------------------------------- values


def _encode(value: Any) -> Any:
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if math.isnan(value):
            return ["n"]
        if math.isinf(value):
            return ["i", 1 if value > 0 else -1]
        return value
    if isinstance(value, tuple):
        return ["t", [_encode(v) for v in value]]
    if isinstance(value, frozenset):
        return ["f", sorted((_encode(v) for v in value), key=repr)]
    if value is POISON:
        return ["p"]
    if value is MISSING:
        return ["m"]
    raise StateError(f"cannot save a value of type {type(value).__name__}")


def _decode(value: Any, depth: int = 0) -> Any:
    if depth > 100:
        raise StateError("saved state nests too deeply")
    if value is None or isinstance(value, (bool, str, int, float)):
        return value
    if not isinstance(value, list) or not value or not isinstance(value[0], str):
        raise StateError(f"malformed saved value {str(value)[:60]!r}")
    tag = value[0]
    if tag == "t" and len(value) == 2 and isinstance(value[1], list):
        return tuple(_decode(v, depth + 1) for v in value[1])
    if tag == "f" and len(value) == 2 and isinstance(value[1], list):
        try:
            return frozenset(_decode(v, depth + 1) for v in value[1])
        except TypeError:
            raise StateError("malformed saved set") from None
    if tag == "n" and len(value) == 1:
        return math.nan
    if tag == "i" and len(value) == 2 and value[1] in (1, -1):
        return math.inf * value[1]
    if tag == "p" and len(value) == 1:
        return POISON
    if tag == "m" and len(value) == 1:
        return MISSING
    raise StateError(f"unknown saved value tag {tag!r}")


# ---------------------------------------------------------------------------------- export


def export_state(evaluator: Evaluator) -> bytes:
    """The evaluator's dynamic state as compressed JSON."""
    det = evaluator.plan.det
    runs = evaluator.runs
    index: dict[int, int] = {}
    table: list = []
    keep: list = []

    def flatten(root: tuple) -> int:
        stack = [(root, False)]
        while stack:
            node, expanded = stack.pop()
            if id(node) in index:
                continue
            size = len(node)
            if size == nodes.BOTTOM_SIZE:
                entry: list = ["B"]
            elif not expanded:
                stack.append((node, True))
                children = (node[nodes.LEFT], node[nodes.RIGHT]) if size == nodes.UNION_SIZE else (node[nodes.CHILD],)
                stack.extend((child, False) for child in children if id(child) not in index)
                continue
            elif size == nodes.UNION_SIZE:
                entry = ["U", index[id(node[nodes.LEFT])], index[id(node[nodes.RIGHT])]]
            else:
                entry = [
                    "O",
                    node[nodes.POS],
                    list(node[nodes.LABELS]),
                    index[id(node[nodes.CHILD])],
                    _encode(node[nodes.MEASURE]),
                    _encode(node[nodes.DATA]),
                ]
            index[id(node)] = len(table)
            table.append(entry)
            keep.append(node)
        return index[id(root)]

    partitions = []
    used: set[int] = set()
    for key, active in runs.partitions.items():
        classes = []
        for state, registers, node in runs.classes(active, key):
            used.add(state)
            classes.append([state, _encode(runs.portable(registers)), flatten(node)])
        partitions.append([_encode(key), classes])
    document = {
        "format": FORMAT,
        "version": VERSION,
        "query": fingerprint(evaluator),
        "position": evaluator.position,
        "states": {str(state): _encode(frozenset(det.subsets[state])) for state in sorted(used)},
        "nodes": table,
        "partitions": partitions,
        "consumed_at": runs.consumed_at,
        "partition_consumed": [[_encode(k), v] for k, v in runs.partition_consumed.items()],
        "last_time": _encode(evaluator.ingest.last_time),
        "local_counts": [[_encode(k), v] for k, v in evaluator.ingest.local_counts.items()],
    }
    return zlib.compress(json.dumps(document, separators=(",", ":")).encode(), 6)


# ---------------------------------------------------------------------------------- import


def _int(value: Any, what: str, low: int = -1, high: int | None = None) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < low or (high is not None and value >= high):
        raise StateError(f"saved state has an impossible {what}: {value!r}")
    return value


def import_state(evaluator: Evaluator, blob: bytes) -> None:
    """Load a state made by ``export_state`` for the same query; StateError if it is not one."""
    if not isinstance(blob, (bytes, bytearray)):
        raise StateError("a saved state is bytes")
    try:
        raw = zlib.decompressobj().decompress(bytes(blob), MAX_BYTES)
        document = json.loads(raw)
    except (zlib.error, ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise StateError(f"not a saved ceql evaluator state ({type(exc).__name__})") from None
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise StateError("not a saved ceql evaluator state")
    if document.get("version") != VERSION:
        raise StateError(f"saved state has format version {document.get('version')!r}; this ceql reads {VERSION}")
    if document.get("query") != fingerprint(evaluator):
        raise StateError("the saved state belongs to another query or schema")
    plan = evaluator.plan
    det = plan.det
    machine = plan.compiled.machine
    position = _int(document.get("position"), "position", 0)
    try:
        states = document["states"]
        table = document["nodes"]
        partitions = document["partitions"]
    except (KeyError, TypeError):
        raise StateError("saved state lacks a required field") from None
    if not isinstance(states, dict) or not isinstance(table, list) or not isinstance(partitions, list):
        raise StateError("saved state has a malformed structure")
    remap: dict[str, int] = {}
    for name, encoded in states.items():
        subset = _decode(encoded)
        if not isinstance(subset, frozenset) or not subset:
            raise StateError("saved state has a malformed automaton state")
        for machine_state in subset:
            if not machine.valid(machine_state):
                raise StateError(f"saved state names an automaton state this query does not have: {machine_state!r}")
        remap[name] = det.intern(subset)
    built: list[tuple] = []
    for number, entry in enumerate(table):
        if not isinstance(entry, list) or not entry:
            raise StateError("saved state has a malformed node")
        kind = entry[0]
        if kind == "B" and len(entry) == 1:
            node = nodes.BOTTOM
        elif kind == "U" and len(entry) == 3:
            left = built[_int(entry[1], "node index", 0, number)]
            right = built[_int(entry[2], "node index", 0, number)]
            node = nodes.union(left, right)
        elif kind == "O" and len(entry) == 6:
            pos = _int(entry[1], "position", 0, position)
            labels = entry[2]
            if not isinstance(labels, list) or not labels or not all(isinstance(x, str) for x in labels):
                raise StateError("saved state has malformed labels")
            child = built[_int(entry[3], "node index", 0, number)]
            measure = _decode(entry[4])
            if isinstance(measure, bool) or not isinstance(measure, (int, float)):
                raise StateError(f"saved state has an impossible window measure: {measure!r}")
            data = _decode(entry[5])
            node = nodes.output(pos, tuple(labels), child, measure, data)
        else:
            raise StateError(f"saved state has an unknown node kind {kind!r}")
        built.append(node)
    runs = evaluator.runs
    loaded: dict = {}
    for item in partitions:
        if not isinstance(item, list) or len(item) != 2 or not isinstance(item[1], list):
            raise StateError("saved state has a malformed partition")
        key = _decode(item[0])
        classes = []
        for entry in item[1]:
            if not isinstance(entry, list) or len(entry) != 3 or str(entry[0]) not in remap:
                raise StateError("saved state has a malformed run class")
            registers = runs.restore(_decode(entry[1]))
            if registers is None or not runs.valid_registers(registers):
                raise StateError("saved state has malformed register values")
            node = built[_int(entry[2], "node index", 0, len(built))]
            classes.append((remap[str(entry[0])], registers, node))
        loaded[key] = runs.from_classes(classes)
    runs.partitions = loaded
    runs.consumed_at = _int(document.get("consumed_at", -1), "consumed position", -1)
    runs.partition_consumed = {_decode(k): _int(v, "consumed position") for k, v in document.get("partition_consumed", [])}
    evaluator.position = position
    evaluator.ingest.last_time = _decode(document.get("last_time"))
    evaluator.ingest.local_counts = {
        _decode(k): _int(v, "event count", 0) for k, v in document.get("local_counts", [])
    }
