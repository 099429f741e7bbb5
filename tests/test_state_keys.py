"""A keyed seal for saved states (issue 38): the envelope's SHA-256 finds accidents, not
forgeries; ``export_state(key=...)`` adds an HMAC-SHA256 of the user's key, and
``import_state(..., key=...)`` refuses any state the key did not seal. A consistent forgery
(a body that passes every check) is believed without a key and refused with one."""

from __future__ import annotations

import secrets

import pytest

import ceql
from ceql.errors import UsageError
from ceql.runtime.state import KEYED_MAGIC, StateError, keyed_seal

SCHEMA = ceql.declare("CREATE STREAM S { EVENT A { x:int }, EVENT B { x:int }, EVENT C { x:int } }")
QUERY = ceql.compile("SELECT * FROM S WHERE A AS a ; B+ AS b ; C", SCHEMA)
KEY = secrets.token_bytes(32)
EVENTS = [{"event_type": t, "x": 1} for t in ("A", "B", "B")]
OTHER = [{"event_type": t, "x": 1} for t in ("A", "A", "B")]  # the same length, other matches
LAST = {"event_type": "C", "x": 1}
ENGINES = ["python", "compiled"]


def saved(events: list, engine: str, key=None) -> bytes:
    evaluator = QUERY.evaluator(engine=engine)
    evaluator.push_batch(events)
    return evaluator.export_state(key=key)


def loaded(blob: bytes, engine: str, key=None) -> list:
    evaluator = QUERY.evaluator(engine=engine)
    evaluator.import_state(blob, key=key)
    return sorted(m.positions for m in evaluator.push(LAST))


@pytest.mark.parametrize("engine", ENGINES)
def test_a_keyed_state_round_trips_with_its_key(engine) -> None:
    expected = loaded(saved(EVENTS, engine), engine)
    assert loaded(saved(EVENTS, engine, KEY), engine, KEY) == expected
    text_key = "a passphrase of some length"
    assert loaded(saved(EVENTS, engine, text_key), engine, text_key) == expected


@pytest.mark.parametrize("engine", ENGINES)
def test_a_consistent_forgery_is_believed_without_a_key_and_refused_with_one(engine) -> None:
    honest = loaded(saved(EVENTS, engine), engine)
    other = saved(OTHER, engine)  # a state that passes every check, of other events
    assert loaded(other, engine) != honest  # believed: another answer
    sealed = saved(EVENTS, engine, KEY)
    tag = sealed[len(KEYED_MAGIC) : len(KEYED_MAGIC) + 32]
    swapped = KEYED_MAGIC + tag + other  # the body replaced under the honest seal
    resealed = keyed_seal(other, secrets.token_bytes(32))  # sealed with another key
    for forged in (swapped, resealed):
        with pytest.raises(StateError, match="does not match the key"):
            loaded(forged, engine, KEY)


@pytest.mark.parametrize("engine", ENGINES)
def test_flipped_bits_in_the_seal_are_refused(engine) -> None:
    sealed = bytearray(saved(EVENTS, engine, KEY))
    for index in (len(KEYED_MAGIC), len(KEYED_MAGIC) + 31, len(sealed) - 1):
        broken = bytearray(sealed)
        broken[index] ^= 1
        with pytest.raises(StateError):
            loaded(bytes(broken), engine, KEY)
    with pytest.raises(StateError):
        loaded(bytes(sealed[: len(KEYED_MAGIC) + 10]), engine, KEY)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_key_is_not_optional_once_given(engine) -> None:
    with pytest.raises(StateError, match="sealed with a key: give it"):
        loaded(saved(EVENTS, engine, KEY), engine)
    with pytest.raises(StateError, match="not sealed with a key"):
        loaded(saved(EVENTS, engine), engine, KEY)


def test_a_short_or_odd_key_is_refused() -> None:
    evaluator = QUERY.evaluator()
    for key in (b"", "short", b"15 bytes long!!", 12345):
        with pytest.raises(UsageError):
            evaluator.export_state(key=key)
        with pytest.raises(UsageError):
            evaluator.import_state(b"x", key=key)


def test_not_followed_by_states_are_sealed_too() -> None:
    schema = ceql.declare("CREATE STREAM S { EVENT A { ts:primary_time }, EVENT B { ts:primary_time } }")
    query = ceql.compile("SELECT * FROM S WHERE A AS a NOT FOLLOWED BY B WITHIN 10 SECONDS", schema)
    evaluator = query.evaluator()
    evaluator.push({"event_type": "A", "ts": 0})
    blob = evaluator.export_state(key=KEY)
    fresh = query.evaluator()
    fresh.import_state(blob, key=KEY)
    assert [m.positions for m in fresh.finish()] == [m.positions for m in evaluator.finish()]
    with pytest.raises(StateError):
        query.evaluator().import_state(blob[:-1] + bytes([blob[-1] ^ 1]), key=KEY)
