"""The compiled MATCH_RECOGNIZE engine agrees with the reference (the literal semantics) on
generated queries and generated partitioned inputs: the same result table (values, types and
order), or the same error."""

from __future__ import annotations

import math
import os

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings

import ceql
from ceql.errors import EventError, LimitError, QueryError
from ceql.reference import match_recognize as reference
from tests.support.sql_strategies import queries, tables

EXAMPLES = int(os.environ.get("CEQL_SQL_EXAMPLES", "300"))


def outcome(run):
    try:
        return "ok", run()
    except (EventError, LimitError) as exc:
        return "error", getattr(exc, "reason", str(exc))


def _nan_equal(value):
    """``value`` with every NaN as a marker, so that NaN results compare equal (SQRT(-1), LN(-1))."""
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    if isinstance(value, list):
        return [_nan_equal(v) for v in value]
    if isinstance(value, dict):
        return {k: _nan_equal(v) for k, v in value.items()}
    return value


def check_agrees(text: str, table: pa.Table) -> None:
    try:
        checked = ceql.sql.check(text, table)
    except QueryError:
        with pytest.raises(QueryError):
            ceql.sql(text, data=table)
        return
    expected = outcome(lambda: reference.run(checked, table))
    got = outcome(lambda: ceql.sql(text, data=table))
    if expected[0] == "ok" and got[0] == "ok":
        assert got[1].schema == expected[1].schema, text
        assert _nan_equal(got[1].to_pylist()) == _nan_equal(expected[1].to_pylist()), text
    else:
        assert got == expected, text


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(queries(), tables())
def test_engine_agrees_with_reference(text: str, table: pa.Table) -> None:
    check_agrees(text, table)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(queries(row_aggregates=True), tables())
def test_row_aggregates_agree_with_reference(text: str, table: pa.Table) -> None:
    # ARRAY_AGG, MAX_BY, MIN_BY, CONCAT_WS: computed from the match's rows (engine.MatchRows)
    check_agrees(text, table)


@pytest.mark.slow
@settings(max_examples=20_000, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(queries(), tables(max_rows=16))
def test_engine_agrees_with_reference_long_run(text: str, table: pa.Table) -> None:
    check_agrees(text, table)
