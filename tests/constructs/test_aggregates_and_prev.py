"""Aggregates (COUNT, SUM, AVG, MIN, MAX, FIRST, LAST) and ``PREV`` in conditions. Aggregates as\nmeasures: test_measures.py.

Golden examples (hand-derived or from the papers) come first; the differential property test
checks generated queries that contain the construct against the reference (ceql.reference) on
every engine path (tests/support/constructs.py).
"""

from __future__ import annotations

from tests.support.examples import ev, letters, run, supports


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
