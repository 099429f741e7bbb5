"""Forged NOT FOLLOWED BY states (issue 38): every field, bombs, depth and sizes. Each forgery is
refused with a StateError or loads to the unforged result; none crashes, hangs or invents a
match. Both engine paths' states (``ceql-absence-state``, ``ceql-absence-kernel-state``)."""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import zlib
from collections.abc import Callable

import numpy as np
import pytest

import ceql
from ceql.runtime.state import StateError, fingerprint, seal, unseal
from tests.constructs.test_not_followed_by import EXPECTED, ORDERS, SHOP, UNPAID, summary

CUT = 4  # orders 2 and 3 wait (order 1 is paid)


def _saved(engine: str) -> tuple[ceql.Query, bytes, list]:
    query = ceql.compile(UNPAID, SHOP)
    evaluator = query.evaluator(engine=engine)
    before = evaluator.push_batch(ORDERS[:CUT])
    return query, evaluator.export_state(), before


def _body(blob: bytes) -> tuple[dict, dict]:
    raw = zlib.decompress(blob)
    header, _, payload = raw.partition(b"\n")
    return json.loads(header), json.loads(payload)


def _reseal(header: dict, body: object) -> bytes:
    return seal(header["format"], header["version"], header["query"], body)  # a valid digest


def _payload(header: dict, payload: bytes, size: int | None = None) -> bytes:
    head = dict(header, size=len(payload) if size is None else size, digest=hashlib.sha256(payload).hexdigest())
    return zlib.compress(json.dumps(head, separators=(",", ":")).encode() + b"\n" + payload)


def _outcome(query: ceql.Query, engine: str, blob: bytes, before: list) -> str:
    evaluator = query.evaluator(engine=engine)
    try:
        evaluator.import_state(blob)
    except StateError:
        return "refused"
    got = before + evaluator.push_batch(ORDERS[CUT:]) + evaluator.finish()
    assert summary(got) == EXPECTED, "a forgery changed the result"
    return "unforged"


def _entry_forgeries() -> dict[str, Callable[[dict], None]]:
    """Python path: forgeries of the waiting list's fields (``body`` changed in place)."""

    def event(field: int, value):
        def forge(body: dict) -> None:
            body["waiting"][0][2][0][field] = value

        return forge

    def entry(field: int, value):
        def forge(body: dict) -> None:
            body["waiting"][0][field] = value

        return forge

    def top(name: str, value):
        def forge(body: dict) -> None:
            body[name] = value

        return forge

    out: dict[str, Callable[[dict], None]] = {}
    for value in (1.9, "1", True, None, -1, CUT, 2**200, [1]):
        out[f"position {value!r}"] = event(0, value)
    for value in ([], ["x"], ["p"], ["\x00absent"], ["o", "o"], "o", [1], None):
        out[f"labels {value!r}"] = event(1, value)
    for value in (["n"], 2**200, "1", True, 1.5, None, ["t", [1]], ["z"]):
        out[f"measure {value!r}"] = event(3, value)
        out[f"deadline {value!r}"] = entry(0, value)
    out["deadline one earlier"] = lambda body: body["waiting"][0].__setitem__(0, body["waiting"][0][0] - 1)
    out["deadline one later"] = lambda body: body["waiting"][0].__setitem__(0, body["waiting"][0][0] + 1)
    out["deadline passed, first measure too"] = lambda body: (
        body["waiting"][0].__setitem__(0, 0),
        body["waiting"][0][2][0].__setitem__(3, -10 * 60 * 10**9),
    )
    for value in (1, ["t", [1]], "k", ["n"]):
        out[f"key {value!r}"] = entry(1, value)
    out["events empty"] = entry(2, [])
    out["events not a list"] = entry(2, "x")
    out["an event too short"] = lambda body: body["waiting"][0][2].__setitem__(0, [1])
    out["an entry too short"] = lambda body: body["waiting"].__setitem__(0, [1, 2])
    out["the same complex event twice"] = lambda body: body["waiting"].append(copy.deepcopy(body["waiting"][0]))
    out["a second event, earlier"] = lambda body: body["waiting"][0][2].insert(0, copy.deepcopy(body["waiting"][0][2][0]))
    out["waiting not a list"] = top("waiting", {"a": 1})
    out["nothing waits"] = top("waiting", [])  # (a consistent forgery: reports nothing: refused? no: see below)
    for value in (1.9, "1", True, 10**9, -2, None):
        out[f"last_any {value!r}"] = top("last_any", value)
    out["last_by_key forged"] = top("last_by_key", [[None, 0]])
    out["last_by_key not a list"] = top("last_by_key", 3)
    out["own state garbage"] = top("own", "!!!")
    out["own state not base64 text"] = top("own", 7)
    out["cancelling state is the own one"] = lambda body: body.__setitem__("cancelling", body["own"])
    out["unknown field"] = top("extra", 1)
    out["missing field"] = lambda body: body.pop("last_any")
    return out


FORGERIES = _entry_forgeries()
#: Consistent forgeries the digest cannot tell apart (docs/limits.md: integrity, not
#: authentication): they may change the result.
CONSISTENT = {"nothing waits"}


@pytest.mark.parametrize("name", sorted(FORGERIES))
def test_python_state_forgery(name) -> None:
    query, blob, before = _saved("python")
    header, body = _body(blob)
    FORGERIES[name](body)
    if name in CONSISTENT:
        query.evaluator(engine="python").import_state(_reseal(header, body))
        return
    assert _outcome(query, "python", _reseal(header, body), before) in ("refused", "unforged")


def test_unforged_states_load() -> None:
    for engine in ("python", "compiled"):
        query, blob, before = _saved(engine)
        assert _outcome(query, engine, blob, before) == "unforged"


@pytest.mark.parametrize("engine", ["python", "compiled"])
def test_bombs_depth_and_sizes(engine) -> None:
    query, blob, before = _saved(engine)
    header, _ = _body(blob)
    evaluator = query.evaluator(engine=engine)
    bad = [
        zlib.compress(b"\0" * 50_000_000),  # a zlib bomb that is no state
        _payload(header, b"[" * 4_000_000, size=10),  # a body far longer than its header says
        _payload(header, b"0", size=2**40),  # an impossible size
        _payload(header, b"[" * 100_000 + b"]" * 100_000),  # 100k-deep JSON
        _payload(header, b'{"own": 1'),  # not JSON
        blob[: len(blob) // 2],  # truncated
        b"",
        zlib.compress(json.dumps({"format": "ceql-absence-state", "version": 1}).encode()),  # the old, unsealed form
        "not bytes",  # type: ignore[list-item]
    ]
    for forged in bad:
        with pytest.raises(StateError):
            evaluator.import_state(forged)
    assert _outcome(query, engine, blob, before) == "unforged"  # (the evaluator is unchanged)


def test_too_many_waiting_is_refused_before_decoding() -> None:
    query, blob, _ = _saved("python")
    header, body = _body(blob)
    body["waiting"] = [body["waiting"][0]] * 1_001
    evaluator = query.evaluator(engine="python", max_nodes=1_000)
    with pytest.raises(StateError, match="more than max_nodes"):
        evaluator.import_state(_reseal(header, body))


def _kernel_arrays(body: dict, name: str) -> np.ndarray:
    return np.frombuffer(base64.b64decode(body[name]), dtype="<i8").copy()


def _with_array(body: dict, name: str, array: np.ndarray) -> None:
    body[name] = base64.b64encode(np.ascontiguousarray(array, dtype="<i8").tobytes()).decode("ascii")


@pytest.mark.parametrize(
    "name, change",
    [
        ("deadline", lambda a: a - 1),
        ("deadline", lambda a: a + 1),
        ("deadline", lambda a: np.full_like(a, 2**63 - 1)),
        ("first", lambda a: a - 1),
        ("pos", lambda a: a + 100),
        ("pos", lambda a: -a - 1),
        ("lab", lambda a: a + 1000),
        ("lab", lambda a: -a - 1),
        ("part", lambda a: a + 5),
        ("length", lambda a: a + 1),
        ("length", lambda a: a * 0),
        ("recent_m", lambda a: a - 1),
        ("recent_m", lambda a: a[::-1].copy()),
        ("recent_pos", lambda a: a + 1),
        ("deadline", lambda a: a[:1]),
    ],
)
def test_kernel_state_forgery(name, change) -> None:
    query, blob, before = _saved("compiled")
    header, body = _body(blob)
    _with_array(body, name, change(_kernel_arrays(body, name)))
    assert _outcome(query, "compiled", _reseal(header, body), before) in ("refused", "unforged")


def test_kernel_state_fields() -> None:
    query, blob, before = _saved("compiled")
    header, body = _body(blob)
    for forge in (
        lambda b: b.__setitem__("position", 1.9),
        lambda b: b.__setitem__("position", True),
        lambda b: b.__setitem__("position", b["position"] + 1),
        lambda b: b.__setitem__("pos", "!!"),
        lambda b: b.__setitem__("pos", base64.b64encode(b"123").decode()),
        lambda b: b.__setitem__("cancelling", b["own"]),
        lambda b: b.pop("recent_m"),
        lambda b: b.__setitem__("lab", base64.b64encode(b"\0" * 8 * 20_000_000).decode()),
    ):
        forged = copy.deepcopy(body)
        forge(forged)
        assert _outcome(query, "compiled", _reseal(header, forged), before) in ("refused", "unforged")
    assert unseal(blob, header["format"], header["version"], fingerprint(query.plan.checked)) == body
