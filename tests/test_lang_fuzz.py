"""Hostile query texts: the language layer answers with a QueryError, never another exception."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ceql
from tests.support.strategies import TEST_DECLARATION

SCHEMA = ceql.declare(TEST_DECLARATION)
WORDS = [
    "SELECT", "*", "NONE", "WHERE", "FROM", "S", "A", "B", "C", "x", "y", "AS", ";", ":", ":+", "+", "?",
    "{", "}", ",", "2", "0", "9223372036854775808", "1.5", "(", ")", "[", "]", "->", "OR", "AND", "ALL",
    "UNLESS", "NOT", "FILTER", "PARTITION", "BY", "START", "PROJECT", "COUNT", "SUM", "FIRST", "PREV",
    "x.v", "y.id", ".", "v", "=", "<", "-", "/", "%", "'a'", "WITHIN", "EVENTS", "SECONDS", "DAY",
    "LIMIT", "CONSUME", "ANY", "MAX", "LAST", "`", "--", "/*",
]  # fmt: skip


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(WORDS), max_size=25))
def test_random_token_soup_is_rejected_cleanly(words) -> None:
    text = " ".join(["SELECT", "*", "WHERE", *words])
    try:
        ceql.check(text, SCHEMA)
    except ceql.QueryError as error:
        assert error.line is not None and error.column is not None


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=60))
def test_random_text_is_rejected_cleanly(text) -> None:
    try:
        ceql.check(text, SCHEMA)
    except ceql.QueryError:
        pass
