"""One typing for every path: declarations, the catalog, the conversion rules, the Python API.

The same logical value given as CSV text, as a JSON value, as a typed Arrow array or in a dict
must be accepted or rejected alike, and accepted values must be exact (no float on the way)."""

from __future__ import annotations

import datetime as dt
import math
import warnings

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import ceql
from ceql.compile.catalog import Catalog
from ceql.compile.output_schema import iso_text, time_type
from ceql.errors import InputWarning
from ceql.runtime.batches import builder_for
from ceql.runtime.conversion import Target, convert

BIG = 2**63 - 1
EPOCH_NS = 1_704_067_200_000_000_000  # 2024-01-01T00:00:00Z


NAN = object()  # an expected NaN (which equals nothing)


class Bad(str):
    """An expected rejection: a fragment of its reason."""


def _one(value, target: Target):
    """(value, None) if accepted, (None, reason) if bad, ("missing", None) if missing."""
    converted = convert(value if isinstance(value, pa.Array) else [value], target)
    if converted.missing[0]:
        return "missing", None
    if converted.bad[0]:
        return None, converted.reason(0)
    return converted.values[0].as_py(), None


# --------------------------------------------------------------------------- declarations


def test_time_units_in_declarations() -> None:
    schema = ceql.declare(
        "CREATE STREAM S { EVENT A { t:primary_time(ms) }, EVENT B { t:primary_time } }\n"
        "DECLARE EVENT C(t primary_time(seconds))"
    )
    units = {name: decl.attributes[0].time_unit for name, decl in schema.event_types.items()}
    assert units == {"A": "ms", "B": "ns", "C": "s"}
    with pytest.raises(ceql.DeclarationError) as caught:
        ceql.declare("CREATE STREAM S { EVENT A { t:primary_time(hours) } }")
    assert (caught.value.column, caught.value.message) == (44, "unknown time unit hours")


@pytest.mark.parametrize(
    "first, second, ok",
    [
        ("int", "int", True),
        ("int", "double", True),  # a double column; ints must be exact as doubles
        ("int", "primary_time", True),  # both int64
        ("primary_time", "double", False),
        ("int", "string", False),
        ("string", "boolean", False),
    ],
)
def test_one_value_kind_per_attribute_name(first: str, second: str, ok: bool) -> None:
    text = f"CREATE STREAM S {{ EVENT A {{ x:{first} }}, EVENT B {{ x:{second} }} }}"
    if ok:
        ceql.declare(text)
        return
    with pytest.raises(ceql.DeclarationError, match=f"attribute x is {second} in B but {first} in A"):
        ceql.declare(text)


def test_quarantine_spans_are_exact() -> None:
    schema = ceql.declare(
        "CREATE STREAM S { EVENT A { t:primary_time } }",
        "CREATE QUARANTINE { FIXED_TIME 1 minute 0.001 seconds 7 nanoseconds {S} }",
    )
    assert schema.allowed_lateness_ns() == 60 * 10**9 + 10**6 + 7


# --------------------------------------------------------------------------- the catalog


def test_catalog_types_every_path_alike() -> None:
    schema = ceql.declare(
        "CREATE STREAM S { EVENT A { id:int, v:int, s:string, t:primary_time(ms) }, "
        "EVENT B { id:int, v:double, ok:boolean } }"
    )
    catalog = Catalog.of_schema(schema, {"id"})
    assert {n: c.storage for n, c in catalog.columns.items()} == {
        "id": "int",
        "v": "double",
        "s": "string",
        "t": "int",
        "ok": "boolean",
    }
    assert catalog.spark_ddl() == (
        "`event_type` string, `id` bigint, `v` double, `s` string, `t` bigint, `ok` boolean"
    )
    assert catalog.time_columns() == {"A": "t"}
    assert catalog.columns["t"].target("A") == Target("primary_time", "ms", "int")
    assert catalog.columns["v"].target("A") == Target("int", "ns", "double")
    query = Catalog.for_query(schema, ["v"])  # a query's part: the columns it reads
    assert list(query.columns) == ["v"] and query.columns["v"].event_types == ("A", "B")
    assert query.required == {"v"}
    with pytest.raises(ceql.CeqlError, match=r"has no column id \(declared by A, B\)"):
        catalog.check_columns(["event_type", "v"], "x.csv")


def test_catalog_knows_partition_groups_and_how_times_came() -> None:
    schema = ceql.declare(
        "CREATE STREAM S { EVENT A { id:int, k:int, t:primary_time }, EVENT B { k:int, t:primary_time } }"
    )
    catalog = Catalog.of_schema(schema)
    assert catalog.partition_groups([["id", "k"], ["k"]]) == {"A": ("id", "k"), "B": ("k",)}
    from ceql.runtime.batches import type_rows

    stamps = pa.array([EPOCH_NS // 1000], pa.timestamp("us", tz="UTC"))
    type_rows(catalog, pa.array(["A"]), {"id": pa.array([1]), "k": pa.array([2]), "t": stamps})
    assert catalog.time_inputs == {"t": "timestamp[us, tz=UTC]"}
    assert time_type(catalog.time_inputs["t"]).arrow == pa.timestamp("us", tz="UTC")
    integers = Catalog.of_schema(schema)
    type_rows(integers, pa.array(["B"]), {"k": pa.array([2]), "t": pa.array([EPOCH_NS])})
    assert integers.time_inputs == {"t": "integer ns"} and time_type("integer ns").arrow == pa.int64()


def test_times_format_back_exactly() -> None:
    assert iso_text(EPOCH_NS + 123_456_789, "UTC") == "2024-01-01T00:00:00.123456789Z"
    assert iso_text(-1, "UTC") == "1969-12-31T23:59:59.999999999Z"
    assert iso_text(EPOCH_NS, None) == "2024-01-01T00:00:00"  # no zone in, none out
    assert iso_text(EPOCH_NS + 500_000_000, "Europe/Paris") == "2024-01-01T01:00:00.5+01:00"
    assert iso_text(EPOCH_NS, "-05:30") == "2023-12-31T18:30:00-05:30"
    assert time_type("integer ms").text(EPOCH_NS) == EPOCH_NS // 10**6
    assert time_type("date32[day]").text(EPOCH_NS + 5) == "2024-01-01"
    assert time_type("timestamp[ms, tz=UTC]").from_ns(pa.array([EPOCH_NS + 1_999_999, None])).to_pylist()[1] is None


# --------------------------------------------------------------------------- conversion rules

INT, DOUBLE, STRING, BOOL = Target("int"), Target("double"), Target("string"), Target("boolean")
TIME, TIME_MS = Target("primary_time"), Target("primary_time", "ms")

# (value as text, value as a JSON/Python value, target, expected value or an error fragment)
CASES = [
    ("007", 7, INT, 7),
    (" +12 ", 12, INT, 12),
    (str(BIG), BIG, INT, BIG),
    (str(-BIG - 1), -BIG - 1, INT, -BIG - 1),
    (str(BIG + 1), BIG + 1, INT, Bad("beyond the int64 range")),
    ("1.5", 1.5, INT, Bad("1.5")),
    ("1e3", 1e3, INT, Bad("as an integer")),  # as text; the float 1000.0 is exact: accepted
    ("1.5", 1.5, DOUBLE, 1.5),
    ("-2e-3", -0.002, DOUBLE, -0.002),
    ("NaN", float("nan"), DOUBLE, NAN),  # NaN and infinities are doubles
    ("-Infinity", float("-inf"), DOUBLE, float("-inf")),
    ("1e400", None, DOUBLE, Bad("beyond the range of a double")),
    ("nan", float("nan"), INT, Bad("an integer")),
    ("007", "007", STRING, "007"),
    ("1e3", "1e3", STRING, "1e3"),
    ("NA", "NA", STRING, "NA"),
    ("null", "null", STRING, "null"),
    ("N/A", "N/A", STRING, "N/A"),
    ("tRuE", True, BOOL, True),
    ("0", False, BOOL, False),
    ("yes", None, BOOL, Bad("as a boolean")),
    (str(EPOCH_NS), EPOCH_NS, TIME, EPOCH_NS),
    ("2024-01-01T00:00:00Z", "2024-01-01T00:00:00Z", TIME, EPOCH_NS),
    ("2024-01-01T01:00:00.000000001+01:00", None, TIME, EPOCH_NS + 1),
    ("2024-01-01 00:00", None, TIME, EPOCH_NS),
    ("2024-02-30", None, TIME, Bad("as a time")),
    ("1704067200000", 1704067200000, TIME_MS, EPOCH_NS),
    ("9300000000000000", 9300000000000000, TIME_MS, Bad("beyond the int64 nanosecond range")),
]


@pytest.mark.parametrize("text, value, target, expected", CASES)
def test_text_and_python_values_convert_alike(text, value, target, expected) -> None:
    _check(_one(pa.array([text]), target), expected)
    if value is None:
        return
    if text == "1e3" and target == INT:
        expected = 1000  # the float 1000.0 is a whole number: exact, accepted
    _check(_one(value, target), expected)


def _check(result: tuple, expected) -> None:
    value, reason = result
    if isinstance(expected, Bad):
        assert value is None and expected in reason
    elif expected is NAN:
        assert reason is None and math.isnan(value)
    else:
        assert (value, reason) == (expected, None)


@pytest.mark.parametrize(
    "array, target, expected",
    [
        (pa.array([BIG], pa.int64()), INT, BIG),
        (pa.array([2**64 - 1], pa.uint64()), INT, Bad("beyond the int64 range")),
        (pa.array([2.0**60]), INT, Bad("beyond 2**53")),  # a float that large is no exact integer
        (pa.array([2**53 + 1]), Target("int", storage="double"), Bad("cannot be stored exactly")),
        (pa.array([1.5], pa.float32()), DOUBLE, 1.5),
        (pa.array([float("nan")]), DOUBLE, NAN),
        (pa.array([float("inf")]), INT, Bad("is not an integer")),
        (pa.array([1], pa.int8()), STRING, Bad("as a string")),
        (pa.array([{"a": 1}]), INT, Bad("a struct value")),
        (pa.array([[1]]), INT, Bad("a list value")),
        (pa.array([b"\xff"], pa.binary()), STRING, Bad("not valid UTF-8")),
        (pa.array([EPOCH_NS // 1000], pa.timestamp("us", tz="America/New_York")), TIME, EPOCH_NS),
        (pa.array([EPOCH_NS // 10**9], pa.timestamp("s")), TIME, EPOCH_NS),  # naive: UTC
        (pa.array([19723], pa.date32()), TIME, EPOCH_NS),
        (pa.array([2**62], pa.timestamp("s")), TIME, Bad("beyond the int64 nanosecond range")),
        (pa.array(["a"]).dictionary_encode(), STRING, "a"),
    ],
    ids=lambda v: str(v.type) if isinstance(v, pa.Array) else None,
)
def test_arrow_values(array, target, expected) -> None:
    _check(_one(array, target), expected)


def test_python_datetimes_are_exact() -> None:
    values = [
        dt.datetime(2024, 1, 1, 1, tzinfo=dt.timezone(dt.timedelta(hours=1))),
        dt.datetime(2024, 1, 1),
        dt.date(2024, 1, 1),
        pd.Timestamp("2024-01-01T00:00:00.000000001Z"),
        np.int64(EPOCH_NS),
    ]
    converted = convert(values, TIME)
    assert converted.values.to_pylist() == [EPOCH_NS, EPOCH_NS, EPOCH_NS, EPOCH_NS + 1, EPOCH_NS]


# --------------------------------------------------------------------------- the Python API

SCHEMA = ceql.declare(
    "CREATE STREAM S { EVENT A { id:int, v:double, s:string, t:primary_time }, EVENT B { id:int, t:primary_time } }"
)
# It reads id, v and t (the API reads and checks the attributes the query uses).
QUERY = ceql.compile(
    "SELECT * FROM S WHERE A AS a; B AS b FILTER a[id = 9223372036854775806] AND a[v >= 0] AND a.t < b.t",
    SCHEMA,
)


def _a(**values) -> dict:
    return {"event_type": "A", "id": BIG - 1, "v": 1.0, "s": "x", "t": EPOCH_NS, **values}


def _b(**values) -> dict:
    return {"event_type": "B", "id": 1, "t": EPOCH_NS + 1, **values}


def test_values_near_2_63_stay_exact_on_every_api_input() -> None:
    events = [_a(), _a(id=BIG), _b()]
    expected = [(0, 2)]
    frame = pd.DataFrame(events)
    assert [m.positions for m in QUERY.run(events)] == expected
    assert [m.positions for m in QUERY.run(frame)] == expected
    assert [m.positions for m in QUERY.run(pa.Table.from_pandas(frame))] == expected
    evaluator = QUERY.evaluator()
    assert [m.positions for e in events for m in evaluator.push(e)] == expected


@pytest.mark.parametrize(
    "event, reason",
    [
        (_a(id=1.5), "row 0: column id: 1.5 is not an integer"),
        (_a(id=True), "row 0: column id: cannot read boolean True as an integer"),
        (_a(id=2**64), "row 0: column id: '18446744073709551616' is beyond the int64 range"),
        (_a(v="1e400"), "row 0: column v: '1e400' is beyond the range of a double"),
        (_a(t="yesterday"), "row 0: column t: cannot read 'yesterday' as a time"),
        ({"event_type": "A", "v": 1.0, "s": "x", "t": 1}, "row 0: missing field id"),
        ({"event_type": "Z"}, "row 0: unknown event type 'Z'"),
        ({"event_type": 5}, "row 0: event_type: cannot read integer 5 as a string"),
        ({"id": 1}, "row 0: event has no event_type"),
    ],
)
def test_bad_api_events_are_errors_naming_row_and_reason(event, reason) -> None:
    with pytest.raises(ceql.EventError) as caught:
        list(QUERY.run([event]))
    assert str(caught.value).startswith(reason)
    with pytest.raises(ceql.EventError):
        QUERY.evaluator().push(event)


def test_one_and_a_half_is_not_truncated_when_ints_come_first() -> None:
    with pytest.raises(ceql.EventError, match="row 2: column id: 1.5 is not an integer"):
        list(QUERY.run([_a(id=1), _a(id=2), _a(id=1.5)]))


def test_unknown_columns_are_ignored_with_one_warning() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        matches = list(QUERY.run([_a(extra=1), _b(extra=2), _a(extra=3), _b()]))
        again = list(QUERY.run(pd.DataFrame([_a(extra=1), _b(extra=2)])))
    assert [m.positions for m in matches] == [(0, 1), (0, 3), (2, 3)] and again
    messages = [str(w.message) for w in caught if issubclass(w.category, InputWarning)]
    assert messages == ["column extra is not declared for any event type; it is ignored"]


def test_a_misspelt_column_is_an_error_naming_it() -> None:
    frame = pd.DataFrame([_a(), _b()]).rename(columns={"id": "idd"})
    with (
        pytest.raises(ceql.EventError, match=r"the input has no column id \(declared by A, B\)"),
        pytest.warns(InputWarning, match="column idd is not declared"),
    ):
        list(QUERY.run(frame))
    with pytest.raises(ceql.EventError, match="missing field id"):
        QUERY.evaluator().push({"event_type": "A", "idd": 1, "v": 1.0, "s": "x", "t": 1})


def test_pandas_columns_of_mixed_python_values_follow_the_same_rules() -> None:
    frame = pd.DataFrame([_a(), _b()])
    frame["id"] = pd.Series([BIG - 1, "1"], dtype=object)  # an int and a numeric string
    assert [m.positions for m in QUERY.run(frame)] == [(0, 1)]
    frame["id"] = pd.Series([BIG - 1, "one"], dtype=object)
    with pytest.raises(ceql.EventError, match="row 1: column id: cannot read 'one' as an integer"):
        list(QUERY.run(frame))


def test_times_of_any_representation_give_the_same_matches() -> None:
    schema = ceql.declare(
        "CREATE STREAM S { EVENT A { t:primary_time(ms) }, EVENT B { t:primary_time(ms) } }"
    )
    query = ceql.compile("SELECT * FROM S WHERE A AS a; B AS b FILTER a.t < b.t", schema)
    millis = [1_704_067_200_000, 1_704_067_200_001]
    iso = ["2024-01-01T00:00:00Z", "2024-01-01T00:00:00.001Z"]
    stamps = pa.array(millis, pa.timestamp("ms", tz="Asia/Tokyo"))
    for times in (millis, iso, stamps.to_pylist(), pd.to_datetime(millis, unit="ms", utc=True)):
        events = [{"event_type": kind, "t": time} for kind, time in zip("AB", times)]
        assert [m.positions for m in query.run(events)] == [(0, 1)]
    table = pa.table({"event_type": ["A", "B"], "t": stamps})
    assert [m.positions for m in query.run(table)] == [(0, 1)]
    typed = builder_for(query.plan).from_table(table)
    assert typed.column("t").to_pylist() == [EPOCH_NS, EPOCH_NS + 10**6]


# --------------------------------------------------------------------------- ordering


def _ordered(times: list[int], declaration: str, sort: bool = False) -> tuple[list[int], list[str]]:
    from ceql.io.errors import RejectList
    from ceql.io.ordering import Orderer
    from ceql.io.readers import Chunk

    schema = ceql.declare(declaration)
    table = pa.table({"event_type": ["A"] * len(times), "t": pa.array(times, pa.int64())})
    rejects = RejectList()
    chunks = Orderer(schema, rejects, sort=sort).order(
        iter([Chunk(table, "in", np.arange(1, len(times) + 1))])
    )
    lines = [int(line) for chunk in chunks for line in chunk.lines]
    return lines, [f"{e.line}: {e.reason}" for e in rejects.errors]


def test_ordering_compares_times_exactly_near_2_63() -> None:
    big = 2**62 * 2 - 10  # within 10 ns of the largest int64
    declaration = "CREATE STREAM S { EVENT A { t:primary_time } }"
    lines, rejected = _ordered([big, big + 2, big + 1, big + 3], declaration)
    assert lines == [1, 2, 4]
    assert rejected == [f"3: out of order: time {big + 1} after {big + 2} (declare CREATE QUARANTINE "
                        "to reorder late events, or use --sort)"]  # fmt: skip
    quarantine = declaration + " CREATE QUARANTINE { FIXED_TIME 2 nanoseconds {S} }"
    lines, rejected = _ordered([big, big + 3, big + 2, big + 5, big + 1], quarantine)
    assert lines == [1, 3, 2, 4]  # big+2 waits for big+3: it is within 2 ns; big+1 is late
    assert rejected == [f"5: late: time {big + 1} is older than events already released ({big + 3}); "
                        "the allowed lateness is 2 ns"]  # fmt: skip
    assert _ordered([big + 1, big, big + 2], declaration, sort=True) == ([2, 1, 3], [])


def test_typed_events_reads_every_declared_column() -> None:
    from ceql.runtime.batches import typed_events

    schema = ceql.declare(
        "CREATE STREAM S { EVENT A { id:int, t:primary_time(ms), s:string }, EVENT B { x:double } }"
    )
    table = typed_events(
        schema, [{"event_type": "A", "id": BIG, "t": "2024-01-01T00:00:00Z"}, {"event_type": "B", "x": 1}]
    )
    assert table.to_pylist() == [
        {"event_type": "A", "id": BIG, "t": EPOCH_NS, "s": None, "x": None},  # s left out: null
        {"event_type": "B", "id": None, "t": None, "s": None, "x": 1.0},
    ]
    # There, but null: a missing value (docs/semantics.md 3.2); a null time is a bad row.
    assert typed_events(schema, [{"event_type": "A", "id": 1, "t": 1, "s": None}]).column("s").to_pylist() == [None]
    with pytest.raises(ceql.EventError, match="row 0: missing field t"):
        typed_events(schema, [{"event_type": "A", "id": 1, "t": None}])


def test_a_null_is_a_missing_value_not_a_bad_row() -> None:
    """A null reaches the engine: every comparison on it is false, NOT makes it true."""
    events = [_a(id=None), _b(), _a(id=5, v=None), _b()]  # small ids: pandas makes them floats
    frame = pd.DataFrame(events)
    assert [m.positions for m in QUERY.run(events)] == []
    assert [m.positions for m in QUERY.run(pa.Table.from_pylist(events))] == []
    negated = ceql.compile("SELECT * FROM S WHERE A AS a FILTER NOT a[id = 1]", SCHEMA)
    assert [m.positions for m in negated.run(events)] == [(0,), (2,)]
    assert [m.positions for m in negated.run(frame)] == [(0,), (2,)]
    assert [m.positions for m in ceql.reference.run(negated.checked, events)] == [(0,), (2,)]
