"""Evaluator state as data: a sealed, versioned, validated JSON document (never pickle).

``export_state`` flattens the live tECS into a node table and writes determinized states as
the sets of automaton states they stand for, so a state saved by one process loads in another
(Spark streaming stores one per key). Both engines' states share one envelope (``seal`` and
``unseal``): a header line naming the format, its version, the digest of the query and schema
it belongs to, the size of the body and the body's SHA-256, then the body (JSON), all
compressed. Loading decompresses at most ``MAX_BYTES`` (checked against the size the header
claims before anything is parsed) and refuses a body whose digest differs (a flipped bit).
The digest finds accidents, not forgeries: whoever edits a state can recompute it. A state that
crosses a trust boundary is sealed with the user's key as well (``keyed_seal``: HMAC-SHA256).

``import_state`` then checks the body against the query it is loaded into (``_load``, the one
place that validates a Python-path state): every automaton state, node index, position (below
the evaluator's position and increasing along every path), label set, window measure, register
value, partition key (of the declared types), consumed marker and count. Anything impossible
raises ``StateError``; nothing is trusted to invent a match or silently drop a run.
"""

from __future__ import annotations

import hashlib
import json
import math
import zlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ceql.compile import automata
from ceql.compile.registers import POISON
from ceql.compile.values import MISSING
from ceql.errors import CeqlError
from ceql.runtime import nodes

if TYPE_CHECKING:
    from ceql.compile.plan import Plan
    from ceql.lang.analysis import CheckedQuery
    from ceql.runtime.evaluator import Evaluator

FORMAT = "ceql-evaluator-state"
VERSION = 3
MAX_BYTES = 1 << 30  # decompressed size of a saved state (docs/limits.md)
HEADER_BYTES = 4096  # the header line is read before the body is decompressed
INT64 = 1 << 63
MAX_POSITION = 1 << 62  # a stream position in a saved state (positions after it stay in int64)


class StateError(CeqlError):
    """A saved evaluator state that cannot be loaded (corrupt, hostile, or another query's)."""


def fingerprint(checked: CheckedQuery) -> str:
    """Identifies the query text and schema a state belongs to."""
    schema = repr(sorted((name, repr(decl)) for name, decl in checked.schema.event_types.items()))
    return hashlib.sha256((checked.text + "\x00" + schema).encode()).hexdigest()


# ---------------------------------------------------------------------------------- envelope


def seal(format_name: str, version: int, query: str, body: dict) -> bytes:
    """A state body in its envelope: header line (format, version, query digest, body size and
    SHA-256), the body, compressed."""
    payload = json.dumps(body, separators=(",", ":"), allow_nan=False).encode()
    header = {
        "format": format_name,
        "version": version,
        "query": query,
        "size": len(payload),
        "digest": hashlib.sha256(payload).hexdigest(),
    }
    return zlib.compress(json.dumps(header, separators=(",", ":")).encode() + b"\n" + payload, 6)


def read_header(blob: Any) -> dict | None:
    """The header of a saved state (decompressing at most a few kilobytes), or None when the
    bytes are not a state in this envelope."""
    if not isinstance(blob, (bytes, bytearray, memoryview)):
        return None
    try:
        head = zlib.decompressobj().decompress(bytes(blob[: 1 << 16]), HEADER_BYTES)
    except zlib.error:
        return None
    line, newline, _ = head.partition(b"\n")
    if not newline:
        return None
    try:
        header = json.loads(line)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    return header if isinstance(header, dict) and isinstance(header.get("format"), str) else None


def unseal(blob: Any, format_name: str, version: int, query: str) -> Any:
    """The body of a sealed state, after checking its header against what the caller expects
    (format, version, query digest) and its size and digest against the bytes present.
    Decompression stops at the size the header claims (at most ``MAX_BYTES``)."""
    if not isinstance(blob, (bytes, bytearray, memoryview)):
        raise StateError("a saved state is bytes")
    header = read_header(blob)
    if header is None:
        raise StateError("not a saved ceql evaluator state")
    if header.get("format") != format_name:
        raise StateError(
            f"the saved state is a {str(header.get('format'))[:40]!r} state, not a {format_name!r} one"
        )
    if header.get("version") != version:
        raise StateError(
            f"saved state has format version {str(header.get('version'))[:20]}; this ceql reads {version}"
        )
    if header.get("query") != query:
        raise StateError("the saved state belongs to another query or schema")
    size, digest = header.get("size"), header.get("digest")
    if (
        not isinstance(size, int)
        or isinstance(size, bool)
        or not 0 <= size <= MAX_BYTES
        or not isinstance(digest, str)
    ):
        raise StateError(
            f"saved state claims an impossible size {str(size)[:30]} (at most {MAX_BYTES:,} bytes)"
        )
    prefix = len(json.dumps(header, separators=(",", ":")).encode()) + 1
    decompressor = zlib.decompressobj()
    try:
        raw = decompressor.decompress(bytes(blob), prefix + size + 1)
        finished = decompressor.eof and not decompressor.unused_data
    except zlib.error:
        raise StateError("saved state is corrupt (decompression failed)") from None
    if len(raw) != prefix + size or not finished:
        raise StateError("saved state is truncated or longer than its header says")
    payload = raw[prefix:]
    if hashlib.sha256(payload).hexdigest() != digest:
        raise StateError("saved state is corrupt (its digest does not match its contents)")
    try:
        return json.loads(payload)
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise StateError("saved state is corrupt (not JSON)") from None


# ---------------------------------------------------------------------------------- keyed seal

#: The first bytes of a state sealed with a key (``keyed_seal``): never those of a zlib stream.
KEYED_MAGIC = b"ceql-keyed-state/1\n"
_TAG_BYTES = 32  # HMAC-SHA256
MIN_KEY_BYTES = 16


def _key_bytes(key: Any) -> bytes:
    """A seal key as bytes (a str is taken as UTF-8); too short a key is refused."""
    from ceql.errors import UsageError

    if isinstance(key, str):
        key = key.encode("utf-8")
    if not isinstance(key, (bytes, bytearray, memoryview)):
        raise UsageError(f"a state key is bytes or str, not {type(key).__name__}")
    key = bytes(key)
    if len(key) < MIN_KEY_BYTES:
        raise UsageError(
            f"a state key needs at least {MIN_KEY_BYTES} bytes ({len(key)} given); use 32 random bytes "
            "(secrets.token_bytes(32)) kept where the states are not"
        )
    return key


def is_keyed(blob: Any) -> bool:
    """Whether a saved state is sealed with a key."""
    return isinstance(blob, (bytes, bytearray, memoryview)) and bytes(blob[: len(KEYED_MAGIC)]) == KEYED_MAGIC


def keyed_seal(blob: bytes, key: Any) -> bytes:
    """A saved state (any envelope: the Python path's, the kernel's, NOT FOLLOWED BY's) sealed
    with an HMAC-SHA256 of the user's key: whoever lacks the key cannot make a state that
    ``keyed_unseal`` accepts, however consistent (the envelope's SHA-256 only finds accidents)."""
    import hmac

    tag = hmac.new(_key_bytes(key), KEYED_MAGIC + bytes(blob), hashlib.sha256).digest()
    return KEYED_MAGIC + tag + bytes(blob)


def keyed_unseal(blob: Any, key: Any) -> bytes:
    """The state inside a keyed seal, after checking its HMAC with ``key`` (StateError if the
    state is not sealed with a key, or with another key, or was changed)."""
    import hmac

    secret = _key_bytes(key)
    if not isinstance(blob, (bytes, bytearray, memoryview)):
        raise StateError("a saved state is bytes")
    if not is_keyed(blob):
        raise StateError(
            "the saved state is not sealed with a key (export_state(key=...) seals it); refusing it, "
            "since a key was given"
        )
    data = bytes(blob)
    tag, inner = data[len(KEYED_MAGIC) : len(KEYED_MAGIC) + _TAG_BYTES], data[len(KEYED_MAGIC) + _TAG_BYTES :]
    expected = hmac.new(secret, KEYED_MAGIC + inner, hashlib.sha256).digest()
    if len(tag) != _TAG_BYTES or not hmac.compare_digest(tag, expected):
        raise StateError("the saved state's seal does not match the key: it was changed, or sealed with another key")
    return inner


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
    if tag == "i" and len(value) == 2 and value[1] in (1, -1) and not isinstance(value[1], bool):
        return math.inf * value[1]
    if tag == "p" and len(value) == 1:
        return POISON
    if tag == "m" and len(value) == 1:
        return MISSING
    raise StateError(f"unknown saved value tag {tag[:20]!r}")


def _int(value: Any, what: str, low: int = -1, high: int | None = None) -> int:
    """An int in [low, high) (high: exclusive), else StateError naming ``what``."""
    if (
        not isinstance(value, int)
        or isinstance(value, bool)
        or value < low
        or (high is not None and value >= high)
    ):
        raise StateError(f"saved state has an impossible {what}: {str(value)[:40]}")
    return value


def _list(value: Any, what: str) -> list:
    if not isinstance(value, list):
        raise StateError(f"saved state has a malformed {what}")
    return value


# ---------------------------------------------------------------------------------- checks shared by both engines


def label_vocabulary(plan: Plan) -> frozenset[str]:
    """Every label a node of this query may carry: the query's labels (event types included)
    and the private labels its automaton uses (found on the machines)."""
    found: set[str] = set(plan.checked.label_types)
    stack: list[Any] = [plan.compiled.machine]
    seen: set[int] = set()
    while stack:
        item = stack.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, str):
            if item.startswith("\x00"):
                found.add(item)
        elif isinstance(item, automata.Machine):
            stack.extend(vars(item).values())
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, (list, tuple, set, frozenset)):
            stack.extend(item)
    return frozenset(found)


def check_machine_state(machine: Any, subset: Any, what: str) -> None:
    """A saved automaton state: a non-empty frozenset of states of the query's ``machine``,
    else StateError (``what``: the kind of state, first words of the message)."""
    if not isinstance(subset, frozenset) or not subset:
        raise StateError(f"{what} has a malformed automaton state")
    for item in subset:
        try:
            valid = machine.valid(item)
        except (TypeError, ValueError, IndexError, KeyError, AttributeError):  # (a forged item)
            valid = False
        if not valid:
            raise StateError(f"{what} names an automaton state this query does not have: {str(item)[:40]}")


def check_labels(labels: Any, vocabulary: frozenset[str], public: bool = True) -> tuple[str, ...]:
    """A saved label set: a non-empty list of distinct known labels, one of them public (nodes
    exist only for events a transition reports) unless ``public`` is false (the kernel also
    records the event a NOT(E FILTER c) reads, when c is checked per complex event)."""
    if (
        not isinstance(labels, (list, tuple))
        or not labels
        or not all(isinstance(x, str) and x in vocabulary for x in labels)
        or len(set(labels)) != len(labels)
        or (public and not any(not x.startswith("\x00") for x in labels))
    ):
        raise StateError(f"saved state has a label set this query does not use: {str(labels)[:60]}")
    return tuple(sorted(labels))


def check_key(plan: Plan, key: Any) -> Any:
    """A saved partition key: None without PARTITION BY; else a tuple with one value per
    attribute of one of the query's key groups, each of that attribute's declared kind (NaN
    and missing values are no key)."""
    if not plan.partition_groups:
        if key is not None:
            raise StateError("saved state has a partition key, but the query has no PARTITION BY")
        return None
    if isinstance(key, list):
        key = tuple(key)
    if not isinstance(key, tuple):
        raise StateError(f"saved state has a malformed partition key {str(key)[:60]}")
    types = plan.catalog.arrow_types if plan.catalog is not None else {}
    for group in plan.partition_groups:
        if len(group) == len(key) and all(_value_fits(types.get(a), v) for a, v in zip(group, key)):
            return key
    raise StateError(f"saved state has a partition key of the wrong kind for this query: {str(key)[:60]}")


def _value_fits(arrow_type: Any, value: Any) -> bool:
    import pyarrow as pa

    if value is None or value is MISSING or value is POISON:
        return False
    if arrow_type is None:
        return isinstance(value, (bool, int, float, str))
    if pa.types.is_boolean(arrow_type):
        return isinstance(value, bool)
    if pa.types.is_integer(arrow_type) or pa.types.is_timestamp(arrow_type):
        return isinstance(value, int) and not isinstance(value, bool) and -INT64 <= value < INT64
    if pa.types.is_floating(arrow_type):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return False
        return not (isinstance(value, float) and math.isnan(value))
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        return isinstance(value, str)
    return isinstance(value, (bool, int, float, str))


def check_measure(plan: Plan, measure: Any, pos: int) -> Any:
    """A saved window measure of the event at ``pos``: its position for an event window (and
    without a window), an int64 time for a time window, the attribute's value (a number, or
    NaN when the event has none) for an attribute window."""
    kind = plan.window_kind
    if kind is None or kind == "events":
        if measure != pos or isinstance(measure, bool) or not isinstance(measure, int):
            raise StateError(
                f"saved state has an impossible window measure {str(measure)[:40]} at position {pos}"
            )
        return measure
    missing = measure is None or (isinstance(measure, float) and math.isnan(measure))
    if missing and kind == "attribute" and not plan.ordered_time:
        return math.nan  # the event has no value (ingest.NAN)
    if isinstance(measure, bool) or not isinstance(measure, (int, float)):
        raise StateError(f"saved state has an impossible window measure: {str(measure)[:40]}")
    if isinstance(measure, int) and not -INT64 <= measure < INT64:
        raise StateError(f"saved state has a window measure beyond int64: {str(measure)[:40]}")
    if isinstance(measure, float) and math.isnan(measure):
        raise StateError("saved state has a NaN window measure")
    return measure


def _scalar_tree(value: Any, depth: int = 0) -> bool:
    """Whether a decoded value is made of what registers and event values hold."""
    if depth > 100:
        return False
    if value is None or value is POISON or value is MISSING or isinstance(value, (bool, int, float, str)):
        return True
    if isinstance(value, (tuple, frozenset)):
        return all(_scalar_tree(v, depth + 1) for v in value)
    return False


# ---------------------------------------------------------------------------------- export


def export_state(evaluator: Evaluator) -> bytes:
    """The evaluator's dynamic state as a sealed, compressed JSON document."""
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
                children = (
                    (node[nodes.LEFT], node[nodes.RIGHT])
                    if size == nodes.UNION_SIZE
                    else (node[nodes.CHILD],)
                )
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
    body = {
        "position": evaluator.position,
        "states": {str(state): _encode(frozenset(det.subsets[state])) for state in sorted(used)},
        "nodes": table,
        "partitions": partitions,
        "consumed_at": runs.consumed_at,
        "partition_consumed": [[_encode(k), v] for k, v in runs.partition_consumed.items()],
        "last_time": _encode(evaluator.ingest.last_time),
        "local_counts": [[_encode(k), v] for k, v in evaluator.ingest.local_counts.items()],
    }
    return seal(FORMAT, VERSION, fingerprint(evaluator.plan.checked), body)


# ---------------------------------------------------------------------------------- import


@dataclass
class _Loaded:
    position: int
    partitions: dict
    consumed_at: int
    partition_consumed: dict
    last_time: Any
    local_counts: dict


BODY_FIELDS = frozenset(
    {
        "position",
        "states",
        "nodes",
        "partitions",
        "consumed_at",
        "partition_consumed",
        "last_time",
        "local_counts",
    }
)


def import_state(evaluator: Evaluator, blob: bytes) -> None:
    """Load a state made by ``export_state`` for the same query; StateError if it is not one.
    Nothing of the evaluator changes unless the whole state is valid."""
    body = unseal(blob, FORMAT, VERSION, fingerprint(evaluator.plan.checked))
    loaded = _load(evaluator, body)
    runs = evaluator.runs
    runs.partitions = loaded.partitions
    runs.consumed_at = loaded.consumed_at
    runs.partition_consumed = loaded.partition_consumed
    evaluator.position = loaded.position
    evaluator.ingest.last_time = loaded.last_time
    evaluator.ingest.local_counts = loaded.local_counts


def _load(evaluator: Evaluator, body: Any) -> _Loaded:
    """Validate a Python-path state body against the evaluator's query and build its runs.
    Every field is checked here (one place: a new field is validated here or refused)."""
    if not isinstance(body, dict) or set(body) != BODY_FIELDS:
        raise StateError("saved state has missing or unknown fields")
    plan = evaluator.plan
    det = plan.det
    machine = plan.compiled.machine
    position = _int(body["position"], "position", 0, MAX_POSITION)
    states = body["states"]
    if not isinstance(states, dict):
        raise StateError("saved state has a malformed automaton state table")
    remap: dict[str, int] = {}
    for name, encoded in states.items():
        subset = _decode(encoded)
        check_machine_state(machine, subset, "saved state")
        try:
            remap[name] = det.intern(subset)
        except CeqlError as exc:  # the determinized automaton's bound
            raise StateError(f"saved state has too many automaton states ({exc})") from None
    vocabulary = label_vocabulary(plan)
    width = len(plan.value_attributes)
    needs_local = evaluator.ingest.needs_local
    keep_values = bool(evaluator.ingest.keep_values)
    built: list[tuple] = []
    latest: list[int] = []  # the largest position of each node's complex events (-1: none)
    local_of: list[int] = []  # the largest local index of each node's events (-1: none)
    table = _list(body["nodes"], "node table")
    if len(table) - 1 > evaluator.max_nodes:  # (one entry is the shared empty node)
        raise StateError(
            f"saved state holds {len(table) - 1:,} nodes, more than the bound max_nodes ({evaluator.max_nodes:,})"
        )
    for number, entry in enumerate(table):
        if not isinstance(entry, list) or not entry:
            raise StateError("saved state has a malformed node")
        kind = entry[0]
        if kind == "B" and len(entry) == 1:
            node, last, local = nodes.BOTTOM, -1, -1
        elif kind == "U" and len(entry) == 3:
            left = _int(entry[1], "node index", 0, number)
            right = _int(entry[2], "node index", 0, number)
            node = nodes.union(built[left], built[right])
            last, local = max(latest[left], latest[right]), max(local_of[left], local_of[right])
        elif kind == "O" and len(entry) == 6:
            pos = _int(entry[1], "position", 0, position)
            labels = check_labels(entry[2], vocabulary)
            child = _int(entry[3], "node index", 0, number)
            if pos <= latest[child]:
                raise StateError(f"saved state has events out of order ({pos} after {latest[child]})")
            measure = check_measure(plan, _decode(entry[4]), pos)
            data = _decode(entry[5])
            local = _check_data(data, keep_values, width, needs_local, local_of[child])
            node = nodes.output(pos, labels, built[child], measure, data)
            last = pos
        else:
            raise StateError(f"saved state has an unknown node kind {str(kind)[:20]!r}")
        built.append(node)
        latest.append(last)
        local_of.append(local)
    runs = evaluator.runs
    partitions: dict = {}
    largest_local: dict = {}
    for item in _list(body["partitions"], "partition list"):
        if not isinstance(item, list) or len(item) != 2 or not isinstance(item[1], list):
            raise StateError("saved state has a malformed partition")
        key = check_key(plan, _decode(item[0]))
        if key in partitions:
            raise StateError(f"saved state has the partition {str(key)[:40]} twice")
        classes = []
        for entry in item[1]:
            if (
                not isinstance(entry, list)
                or len(entry) != 3
                or not isinstance(entry[0], int)
                or str(entry[0]) not in remap
            ):
                raise StateError("saved state has a malformed run class")
            registers = _decode(entry[1])
            if not _scalar_tree(registers):
                raise StateError("saved state has malformed register values")
            try:
                registers = runs.restore(registers)
            except CeqlError as exc:
                raise StateError(f"saved state has impossible register values ({exc})") from None
            if (
                registers is None
                or not runs.valid_registers(registers)
                or not _ranked_ok(runs, registers, plan, position)
            ):
                raise StateError("saved state has malformed register values")
            index = _int(entry[2], "node index", 0, len(built))
            largest_local[key] = max(largest_local.get(key, -1), local_of[index])
            classes.append((remap[str(entry[0])], registers, built[index]))
        partitions[key] = runs.from_classes(classes)
    consumed_at = _int(body["consumed_at"], "consumed position", -1, position)
    partition_consumed = {}
    for item in _list(body["partition_consumed"], "consumed positions"):
        if not isinstance(item, list) or len(item) != 2:
            raise StateError("saved state has a malformed consumed position")
        key = check_key(plan, _decode(item[0]))
        partition_consumed[key] = _int(item[1], "consumed position", -1, position)
    last_time = _decode(body["last_time"])
    if last_time is not None and not (
        isinstance(last_time, (int, float)) and not isinstance(last_time, bool) and last_time == last_time
    ):
        raise StateError(f"saved state has an impossible last time: {str(last_time)[:40]}")
    local_counts: dict = {}
    for item in _list(body["local_counts"], "event counts"):
        if not isinstance(item, list) or len(item) != 2:
            raise StateError("saved state has a malformed event count")
        raw = _decode(item[0])
        key = None if raw is None else check_key(plan, raw)  # events without a key count too
        if key in local_counts:
            raise StateError("saved state counts a partition twice")
        local_counts[key] = _int(item[1], "event count", 0, position + 1)
    for key, local in largest_local.items():
        if local >= 0 and local >= local_counts.get(key, 0):
            raise StateError("saved state has an event index beyond its partition's event count")
    return _Loaded(position, partitions, consumed_at, partition_consumed, last_time, local_counts)


def _check_data(data: Any, keep_values: bool, width: int, needs_local: bool, below: int) -> int:
    """An output node's event data: (values or None, payload, local index or None), or None when
    the query keeps nothing per event; returns the local index (-1 without). Local indexes
    increase along a path as positions do."""
    if data is None:
        if keep_values or needs_local:
            raise StateError("saved state lacks the values of an event")
        return -1
    # data[1] is the event's payload: None, or plain values (Spark streaming's id columns).
    if not isinstance(data, tuple) or len(data) != 3 or not (data[1] is None or _scalar_tree(data[1])):
        raise StateError("saved state has malformed event data")
    values, _, local = data
    if keep_values:
        if not (isinstance(values, tuple) and len(values) == width and _scalar_tree(values)):
            raise StateError("saved state has malformed event values")
    elif values is not None:
        raise StateError("saved state has event values this query does not keep")
    if not needs_local:
        if local is not None:
            raise StateError("saved state has an event index this query does not use")
        return -1
    index = _int(local, "event index", 0, INT64)
    if index <= below:
        raise StateError("saved state has event indexes out of order")
    return index


def _ranked_ok(runs: Any, registers: Any, plan: Plan, position: int) -> bool:
    """NEXT/LAST classes also carry a rank and the first and last measures."""
    from ceql.runtime.ranked import RankedRuns

    if not isinstance(runs, RankedRuns):
        return True
    rank, _, start, last = registers
    if isinstance(rank, bool) or not isinstance(rank, int) or not 0 <= rank < INT64:
        return False
    for measure in (start, last):
        if measure is None:
            continue
        if isinstance(measure, bool) or not isinstance(measure, (int, float)) or measure != measure:
            return False
    return True
