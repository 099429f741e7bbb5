"""The reference evaluator on the language extensions, one rule of docs/semantics.md at a time.

Every expected output here is derived by hand from the semantics (the comment says how).
"""

from __future__ import annotations

import pandas as pd
import pyarrow as pa
import pytest

import ceql
from tests.support import golden

DECL = """
CREATE STREAM S {
  EVENT A { id:int, v:int, s:string },
  EVENT B { id:int, v:int, p:double, s:string },
  EVENT C { id:int, v:int, s:string },
  EVENT D { id:int, v:int, s:string }
}
"""
SCHEMA = ceql.declare(DECL)


def ev(kind: str, v: int = 0, **more) -> dict:
    return {"event_type": kind, "id": more.pop("id", 0), "v": v, "s": more.pop("s", ""), **more}


def letters(text: str) -> list[dict]:
    return [ev(letter) for letter in text]


def run(query: str, stream, **options):
    return ceql.reference.run(ceql.check(query, SCHEMA), stream, **options)


def supports(matches) -> dict[int, set[tuple[int, ...]]]:
    out: dict[int, set[tuple[int, ...]]] = {}
    for match in matches:
        out.setdefault(match.trigger, set()).add(match.positions)
    return out


# --------------------------------------------------------------------------- aggregates in FILTER


def test_count_over_the_events_of_an_iteration() -> None:
    # b is any non-empty subset of {1, 2, 3}; COUNT(b) >= 2 keeps the four larger ones.
    matches = run("SELECT * WHERE (A ; B+ AS b ; C) FILTER COUNT(b) >= 2", letters("ABBBC"))
    assert supports(matches) == {4: {(0, 1, 2, 4), (0, 1, 3, 4), (0, 2, 3, 4), (0, 1, 2, 3, 4)}}


def test_average_against_a_universal_attribute() -> None:
    # a.v = 3; b values 1, 5, 3 at 1, 2, 3. Averages above 3: {2} (5) and {2, 3} (4).
    stream = [ev("A", 3), ev("B", 1), ev("B", 5), ev("B", 3)]
    matches = run("SELECT * WHERE A AS a ; B+ AS b FILTER AVG(b.v) > a.v", stream)
    assert supports(matches) == {2: {(0, 2)}, 3: {(0, 2, 3)}}


def test_aggregates_over_an_empty_label() -> None:
    # Taking the C branch leaves b empty: COUNT is 0, SUM/MIN/FIRST are null (comparisons false).
    stream = [ev("A", 1), ev("C", 2)]
    base = "SELECT * WHERE (A AS a ; (B AS b OR C AS c)) FILTER "
    assert supports(run(base + "COUNT(b) = 0", stream)) == {1: {(0, 1)}}
    assert supports(run(base + "SUM(b.v) = 0", stream)) == {}
    assert supports(run(base + "MIN(b.v) < 100", stream)) == {}
    assert supports(run(base + "FIRST(b).v = 1 OR LAST(b).v = 1", stream)) == {}
    assert supports(run(base + "NOT (SUM(b.v) > 0)", stream)) == {1: {(0, 1)}}
    # x.a outside an aggregate stays universal: vacuously true on the empty label.
    assert supports(run(base + "b.v = 99", stream)) == {1: {(0, 1)}}


def test_count_star_counts_the_events_the_filter_sees() -> None:
    # Inner filter on (B ; B): always 2 events; outer on the whole CE: 3 events.
    inner = "SELECT * WHERE A ; ((B ; B) FILTER COUNT(*) = 2)"
    outer = "SELECT * WHERE (A ; B ; B) FILTER COUNT(*) = 2"
    assert supports(run(inner, letters("ABB"))) == {2: {(0, 1, 2)}}
    assert supports(run(outer, letters("ABB"))) == {}


def test_prev_compares_each_event_with_the_previous_one() -> None:
    # Values 1, 3, 2, 5 at 0..3: the strictly increasing subsequences, then B at 4.
    stream = [ev("A", 1), ev("A", 3), ev("A", 2), ev("A", 5), ev("B")]
    matches = run("SELECT * WHERE (A+ AS x ; B) FILTER x.v > PREV(x.v)", stream)
    runs = [(0,), (1,), (2,), (3,), (0, 1), (0, 2), (0, 3), (1, 3), (2, 3), (0, 1, 3), (0, 2, 3)]
    assert supports(matches) == {4: {(*r, 4) for r in runs}}


def test_not_over_a_condition_differs_from_not_equal() -> None:
    # x ranges over non-empty subsets of the A's (v = 1 and 2), y is B (v = 1).
    stream = [ev("A", 1), ev("A", 2), ev("B", 1)]
    every_pair_differs = run("SELECT * WHERE (A+ AS x ; B AS y) FILTER x.v != y.v", stream)
    not_all_equal = run("SELECT * WHERE (A+ AS x ; B AS y) FILTER NOT (x.v = y.v)", stream)
    assert supports(every_pair_differs) == {2: {(1, 2)}}
    assert supports(not_all_equal) == {2: {(1, 2), (0, 1, 2)}}


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


def test_measures_of_one_and_many_event_labels() -> None:
    # a holds one event (a value), b may hold several (a tuple in stream order).
    stream = [ev("A", 3), ev("B", 4), ev("B", 2)]
    matches = run("SELECT a.v AS av, b.v AS bv WHERE A AS a ; B+ AS b", stream)
    assert [(m.trigger, m.positions, dict(m.measures)) for m in matches] == [
        (1, (0, 1), {"av": 3, "bv": (4,)}),
        (2, (0, 1, 2), {"av": 3, "bv": (4, 2)}),
        (2, (0, 2), {"av": 3, "bv": (2,)}),
    ]
    checked = ceql.check("SELECT a.v AS av, b.v AS bv, AVG(b.v) AS m WHERE A AS a ; B+ AS b", SCHEMA)
    assert checked.measure_types == {"av": "int", "bv": "list<int>", "m": "double"}


def test_all_aggregates_as_measures() -> None:
    stream = [ev("A", 3), ev("B", 4, p=1.5), ev("B", 2, p=2.5), ev("B", 6, p=-1.0), ev("C")]
    query = (
        "SELECT FIRST(b).v AS f, LAST(b).v AS l, MIN(b.v) AS lo, MAX(b.v) AS hi, SUM(b.v) AS s, "
        "SUM(b.p) AS sp, AVG(b.v) AS m, COUNT(b) AS n, COUNT(*) AS everything, MAX(b.s) "
        "WHERE A ; B+ AS b ; C FILTER COUNT(b) = 3"
    )
    (match,) = run(query, stream)
    assert dict(match.measures) == {
        "f": 4, "l": 6, "lo": 2, "hi": 6, "s": 12, "sp": 3.0, "m": 4.0, "n": 3, "everything": 5, "MAX(b.s)": "",
    }  # fmt: skip


def test_measures_never_change_which_complex_events_are_reported() -> None:
    # At 2 there are two CEs ({0,2}: one b, {0,1,2}: two b's): two results with NONE + COUNT,
    # one with NONE alone (equal results are reported once).
    stream = letters("ABB")
    with_count = run("SELECT NONE, COUNT(b) AS n WHERE A ; B+ AS b", stream)
    assert [(m.trigger, m.positions, dict(m.measures)) for m in with_count] == [
        (1, (), {"n": 1}),
        (2, (), {"n": 1}),
        (2, (), {"n": 2}),
    ]
    assert [(m.trigger, m.positions) for m in run("SELECT NONE WHERE A ; B+ AS b", stream)] == [(1, ()), (2, ())]


def test_measures_see_the_whole_complex_event_not_only_the_projection() -> None:
    matches = run("SELECT a, COUNT(b) AS n WHERE A AS a ; B+ AS b", letters("ABB"))
    assert [(m.positions, dict(m.labels), dict(m.measures)) for m in matches] == [
        ((0,), {"a": (0,)}, {"n": 1}),
        ((0,), {"a": (0,)}, {"n": 1}),
        ((0,), {"a": (0,)}, {"n": 2}),
    ]


# --------------------------------------------------------------------------- quantifiers


@pytest.mark.parametrize(
    "formula, stream, expected",
    [
        # n copies: two A's then B.
        ("A{2} ; B", "AABAB", {2: {(0, 1, 2)}, 4: {(0, 1, 4), (0, 3, 4), (1, 3, 4)}}),
        ("A{1,2} ; B", "AAB", {2: {(0, 2), (1, 2), (0, 1, 2)}}),
        # at least two
        ("A{2,} ; B", "AAAB", {3: {(0, 1, 3), (0, 2, 3), (1, 2, 3), (0, 1, 2, 3)}}),
        ("C ; A? ; B", "CAB", {2: {(0, 2), (0, 1, 2)}}),
        ("C ; A* ; B", "CAAB", {3: {(0, 3), (0, 1, 3), (0, 2, 3), (0, 1, 2, 3)}}),
        # in a ':' chain the copies are contiguous, and A* is (C : B) OR (C : A:+ : B)
        ("C : A* : B", "CAAB", {3: {(0, 1, 2, 3)}}),
        ("C : A* : B", "CB", {1: {(0, 1)}}),
        ("C : A{2} : B", "CAAB", {3: {(0, 1, 2, 3)}}),
        ("C : A{2} : B", "CADAB", {}),
        # in parentheses the copies are a unit of their own, joined by ';'
        ("C : (A{2}) : B", "CADAB", {4: {(0, 1, 3, 4)}}),
        # optional parts under AS / FILTER: the alternative without them drops the wrapper
        ("C ; (A? AS x FILTER x[v > 0]) ; B", "CAB", {2: {(0, 2)}}),
        # an optional formula on its own stands for its non-empty alternatives
        ("A*", "AA", {0: {(0,)}, 1: {(1,), (0, 1)}}),
    ],
)
def test_quantifiers(formula, stream, expected) -> None:
    assert supports(run(f"SELECT * WHERE {formula}", letters(stream))) == expected


def test_quantified_labels_accumulate() -> None:
    matches = run("SELECT * WHERE (A AS x){2} ; B", letters("AAB"))
    assert [dict(m.labels) for m in matches] == [{"x": (0, 1)}]
    checked = ceql.check("SELECT * WHERE (A AS x){2} ; B AS y ; C? AS z", SCHEMA)
    assert (checked.label_multiplicity["x"], checked.label_multiplicity["y"]) == ("many", "one")
    assert checked.label_multiplicity["z"] == "one"


@pytest.mark.parametrize(
    "formula, message",
    [
        ("A? AND B", "an optional formula (?, * or {0,m}) cannot be an operand of AND"),
        ("A ALL B*", "an optional formula (?, * or {0,m}) cannot be an operand of ALL"),
        ("A UNLESS B?", "the right side of UNLESS cannot be optional (?, * or {0,m})"),
        ("(A ; B){100000}", "quantifiers expand this formula to about 300000 operators (at most 20000)"),
    ],
)
def test_quantifier_errors(formula, message) -> None:
    with pytest.raises(ceql.QueryError) as caught:
        ceql.check(f"SELECT * WHERE {formula}", SCHEMA)
    assert caught.value.message.startswith(message)
    assert caught.value.line == 1


# --------------------------------------------------------------------------- PART-BY


def test_partition_by_labels_missing_value_and_empty_label() -> None:
    # x.id = 1; at 1 y.id = 2 (differs), at 2 the C branch leaves y empty (constrains nothing),
    # at 3 y.id is missing (rejects), at 4 y.id = 1.
    stream = [ev("A", id=1), ev("B", id=2), ev("C", id=5), ev("B", id=None), ev("B", id=1)]
    query = "SELECT * WHERE A AS x ; (B AS y OR C AS z) PARTITION BY [x.id, y.id]"
    matches = run(query, stream)
    assert [(m.trigger, m.positions, m.partition) for m in matches] == [(2, (0, 2), None), (4, (0, 4), None)]
    # Inside a formula with a plain attribute: every event of the formula (here C too).
    formula = run("SELECT * WHERE ((A ; (B OR C)) PARTITION BY [id])", stream)
    assert supports(formula) == {4: {(0, 4)}}


def test_the_two_partition_by_meanings_differ_on_adjacency() -> None:
    # The example of docs/semantics.md: events of other keys may stand between x and y in the
    # sub-stream reading, not in the label reading.
    decl = "CREATE STREAM S { EVENT A { k:int }, EVENT B { k:int } }"
    schema = ceql.declare(decl)
    stream = [{"event_type": "A", "k": 1}, {"event_type": "B", "k": 2}, {"event_type": "B", "k": 1}]
    plain = ceql.reference.run(ceql.check("SELECT * WHERE A AS x : B AS y PARTITION BY [k]", schema), stream)
    labels = ceql.reference.run(ceql.check("SELECT * WHERE A AS x : B AS y PARTITION BY [x.k, y.k]", schema), stream)
    assert supports(plain) == {2: {(0, 2)}}
    assert supports(labels) == {}


# --------------------------------------------------------------------------- free labels


def test_free_labels_defined_in_an_iteration_body_are_per_iteration() -> None:
    # ((A AS x ; B FILTER B.v = x.v))+ : + re-chooses x in each iteration.
    stream = [ev("A", 1), ev("B", 1), ev("A", 2), ev("B", 2)]
    matches = run("SELECT * WHERE (A AS x ; (B FILTER B.v = x.v))+", stream)
    assert supports(matches) == {1: {(0, 1)}, 3: {(2, 3), (0, 1, 2, 3)}}
    # Outside the iteration, x is read from the whole complex event (all its x events).
    outer = run("SELECT * WHERE (A AS x ; B AS y)+ FILTER y.v = x.v", stream)
    assert supports(outer) == {1: {(0, 1)}, 3: {(2, 3)}}


def test_free_label_read_from_the_whole_complex_event() -> None:
    # x (at 0, v = 1) must be below every y, read from the whole CE: y = {1, 3} (v 3 and 0) fails.
    stream = [ev("A", 1), ev("B", 3), ev("C"), ev("B", 0)]
    matches = run("SELECT * WHERE (A AS x FILTER x.v < y.v) ; B+ AS y", stream)
    assert supports(matches) == {1: {(0, 1)}}


def test_free_label_in_a_not_atom() -> None:
    decl, stream = golden.LOGIN_DECL, [
        {"event_type": "LOGIN", "user": 1},
        {"event_type": "LOGOUT", "user": 1},
        {"event_type": "TIMEOUT", "user": 1},
    ]
    query = "SELECT * WHERE LOGIN AS l ; NOT(LOGOUT FILTER LOGOUT.user = l.user) ; TIMEOUT AS t"
    schema = ceql.declare(decl)
    assert supports(ceql.reference.run(ceql.check(query, schema), stream)) == {}
    other = [dict(stream[0]), {"event_type": "LOGOUT", "user": 2}, dict(stream[2])]
    assert supports(ceql.reference.run(ceql.check(query, schema), other)) == {2: {(0, 2)}}


def test_unless_right_side_reads_its_own_labels_first() -> None:
    # z is defined on the right: read from the right side's own CE; x from the left side's CE.
    stream = [ev("A", 1), ev("C", 5), ev("D", 5), ev("B", 1)]
    query = "SELECT * WHERE (A AS x ; B) UNLESS (C AS z ; (D FILTER D.v = z.v AND z.v > x.v))"
    assert supports(run(query, stream)) == {}
    assert supports(run(query, [ev("A", 9), *stream[1:]])) == {3: {(0, 3)}}


# --------------------------------------------------------------------------- START, renaming, PROJECT


def test_start_inside_a_sequence_anchors_at_the_left_part_end() -> None:
    assert supports(run("SELECT * WHERE A ; START(B ; C)", letters("ABC"))) == {2: {(0, 1, 2)}}
    assert supports(run("SELECT * WHERE A ; START(B ; C)", letters("ADBC"))) == {}


def test_renaming_moves_events_to_the_new_label() -> None:
    matches = run("SELECT * WHERE (A AS x ; B AS y)[x -> y] FILTER y[v > 0]", [ev("A", 1), ev("B", 2)])
    assert [dict(m.labels) for m in matches] == [{"y": (0, 1)}]
    assert run("SELECT * WHERE (A AS x ; B AS y)[x -> y] FILTER y[v > 1]", [ev("A", 1), ev("B", 2)]) == []


def test_project_keeps_only_the_listed_labels() -> None:
    matches = run("SELECT * WHERE PROJECT[x](A AS x ; B) ; C", letters("ABC"), type_labels=True)
    assert [(m.positions, dict(m.labels)) for m in matches] == [((0, 2), {"x": (0,), "C": (2,)})]


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
