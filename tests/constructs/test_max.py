"""MAX over the tECS with a memo kept across triggers (runtime/selection.py ``MaxSelection``).

The selection must agree with the reference on generated queries whatever the memo holds (long
streams, so triggers reuse earlier nodes' values; a memo cleared every few entries), and its
antichains must drop repeated supports (two complex events with one support, e.g. the same
events under different labels, would otherwise double a node's antichain at every level).
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

import ceql
from ceql.runtime import nodes
from ceql.runtime.selection import MaxSelection
from tests.support.agreement import check_case, record
from tests.support.cross_strategies import partition_queries
from tests.support.strategies import CORE_OPERATORS, TEST_DECLARATION, cases, shaped_queries

SCHEMA = ceql.declare(TEST_DECLARATION)
SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))

max_cases = cases(
    shaped_queries(3, CORE_OPERATORS + ("and", "all", "unless"), clauses=True, strategies_=("MAX",)),
    max_size=16,
)
max_partition_cases = cases(partition_queries(strategies_=("MAX",)), max_size=14, nulls=True)


@SETTINGS
@given(max_cases)
def test_max_agrees_with_the_reference(case) -> None:
    record(check_case(case.query, SCHEMA, case.events, case.cuts, case.save_at))


@SETTINGS
@given(max_partition_cases)
def test_max_with_partition_by_over_labels_agrees(case) -> None:
    record(check_case(case.query, SCHEMA, case.events, case.cuts, case.save_at))


@pytest.fixture
def tiny_memo(monkeypatch):
    monkeypatch.setattr(MaxSelection, "MEMO_LIMIT", 3)


@SETTINGS
@given(max_cases)
def test_max_agrees_when_the_memo_is_cleared_often(tiny_memo, case) -> None:
    record(check_case(case.query, SCHEMA, case.events, case.cuts, case.save_at))


def _labelled_twice(n: int) -> tuple:
    """The tECS of n events each output under label x or y: 2^n complex events, one support."""
    node = nodes.BOTTOM
    for pos in range(n):
        node = nodes.union(
            nodes.output(pos, frozenset({"x"}), node, float(pos)),
            nodes.output(pos, frozenset({"y"}), node, float(pos)),
        )
    return node


@pytest.mark.parametrize("window", [None, 100.0])
def test_one_support_under_many_labellings_is_kept_once(window) -> None:
    root = _labelled_twice(14)
    selection = MaxSelection(window)
    value = selection._value(root, None, True, {})
    assert value[2] == 1  # one support in the antichain, not 2^14
    assert MaxSelection(window).select([root]).__next__() is not None


def test_a_repeated_support_is_dropped_where_another_contains_it() -> None:
    """(x|y)^n, or the same n events and one more: only the longer support is maximal."""

    def both(n: int) -> tuple:
        twice = _labelled_twice(n)
        return twice, nodes.output(n, frozenset({"z"}), nodes.union(twice, nodes.BOTTOM), float(n))

    assert MaxSelection(None)._value(nodes.union(*both(14)), None, True, {})[2] == 1
    supports = set()
    for path in MaxSelection(None).select(list(both(8))):
        positions = []
        while path is not None:
            positions.append(path[nodes.PATH_POS])
            path = path[nodes.PATH_REST]
        supports.add(tuple(positions))
    assert supports == {tuple(range(9))}
