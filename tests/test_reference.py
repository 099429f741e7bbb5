"""The reference evaluator on the language extensions, one rule of docs/semantics.md at a time.

Every expected output here is derived by hand from the semantics (the comment says how).
"""

from __future__ import annotations

import pandas as pd
import pyarrow as pa
import pytest

import ceql
from tests.support.examples import ev, letters, run

# --------------------------------------------------------------------------- aggregates in FILTER


# --------------------------------------------------------------------------- arithmetic


def test_integer_arithmetic_is_exact() -> None:
    stream = [ev("A", -7), ev("A", 7), ev("A", 2**63 - 1)]
    query = "SELECT x.v / 2 AS q, x.v % 2 AS r, x.v / 0 AS z, x.v + 1 AS succ WHERE A AS x"
    got = [dict(m.measures) for m in run(query, stream)]
    assert got == [
        {"q": -3, "r": -1, "z": None, "succ": -6},  # truncated toward zero; remainder takes the dividend's sign
        {"q": 3, "r": 1, "z": None, "succ": 8},
        {"q": 2**62 - 1, "r": 1, "z": None, "succ": 2**63},  # no wrap-around
    ]
    assert len(run("SELECT * WHERE A AS x FILTER x.v + 1 > x.v", stream)) == 3


def test_double_arithmetic() -> None:
    stream = [ev("B", 7, p=7.0)]
    (match,) = run("SELECT b.p / 2 AS half, b.p % 2 AS rest, b.v / 2 AS q WHERE B AS b", stream)
    assert dict(match.measures) == {"half": 3.5, "rest": 1.0, "q": 3}


# --------------------------------------------------------------------------- measures


# --------------------------------------------------------------------------- quantifiers


# --------------------------------------------------------------------------- PART-BY


# --------------------------------------------------------------------------- free labels


# --------------------------------------------------------------------------- START, renaming, PROJECT


def test_type_labels_option() -> None:
    stream = letters("AB")
    plain = run("SELECT * WHERE A AS x ; B", stream)
    typed = run("SELECT * WHERE A AS x ; B", stream, type_labels=True)
    assert [dict(m.labels) for m in plain] == [{"x": (0,)}]
    assert [dict(m.labels) for m in typed] == [{"A": (0,), "B": (1,), "x": (0,)}]


# --------------------------------------------------------------------------- inputs


def test_pandas_and_arrow_inputs_give_the_same_matches() -> None:
    decl = "CREATE STREAM S { EVENT A { v:int, price:double, t:primary_time }, EVENT B { v:int, price:double, t:primary_time } }"
    schema = ceql.declare(decl)
    frame = pd.DataFrame(
        {
            "event_type": ["A", "B", "A", "B"],
            "v": [1, 2, 3, 4],
            "price": [1.0, 2.5, None, 4.0],
            "t": pd.to_datetime(["2024-01-01T00:00:00", "2024-01-01T00:00:01", "2024-01-01T00:00:03", "2024-01-01T00:00:04"]),
        }
    )
    checked = ceql.check("SELECT a.price AS p, b.t AS bt WHERE A AS a ; B AS b WITHIN 2 SECONDS", schema)
    expected = ceql.reference.run(checked, frame)
    table = pa.Table.from_pandas(frame, preserve_index=False)
    base = 1_704_067_200 * 10**9
    dicts = [
        {"event_type": r["event_type"], "v": r["v"], "price": None if pd.isna(r["price"]) else r["price"], "t": base + i}
        for r, i in zip(frame.to_dict("records"), [0, 10**9, 3 * 10**9, 4 * 10**9])
    ]
    # Times are shown as the input gives them: timestamps (zone-aware) from pandas or Arrow,
    # integers from integers.
    stamp = pd.Timestamp(base + 10**9, unit="ns", tz="UTC")
    assert [(m.trigger, m.positions, dict(m.measures)) for m in expected] == [
        (1, (0, 1), {"p": 1.0, "bt": stamp}),
        (3, (2, 3), {"p": None, "bt": stamp + pd.Timedelta(seconds=3)}),
    ]
    assert ceql.reference.run(checked, table) == expected
    assert ceql.reference.run(checked, table.to_batches()[0]) == expected
    assert ceql.reference.run(checked, [table.slice(0, 2), table.slice(2)]) == expected
    assert [(m.trigger, m.positions, dict(m.measures)) for m in ceql.reference.run(checked, dicts)] == [
        (1, (0, 1), {"p": 1.0, "bt": base + 10**9}),
        (3, (2, 3), {"p": None, "bt": base + 4 * 10**9}),
    ]


def test_bad_input_values_name_the_row() -> None:
    with pytest.raises(ceql.EventError, match="row 1: column v: 'x' is not an integer"):
        run("SELECT * WHERE A", [ev("A"), ev("A", "x")])
    with pytest.raises(ceql.EventError, match="row 0: unknown event type 'Z'"):
        run("SELECT * WHERE A", [{"event_type": "Z"}])
