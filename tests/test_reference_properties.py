"""Properties of the reference evaluator over generated queries with every extension.

These are laws of the semantics (docs/semantics.md) that hold for any query and stream:
measures never change which complex events are reported, NOT (NOT c) is c, START keeps a
subset, the desugared formula means what the written one means, and the reference's outputs
are well formed.
"""

from __future__ import annotations

import dataclasses

from hypothesis import HealthCheck, assume, given, settings

import ceql
from ceql.lang import ast, print_formula, print_query
from tests.support.strategies import TEST_DECLARATION, extended_queries, streams

SCHEMA = ceql.declare(TEST_DECLARATION)
PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


def checked_or_skip(query: ast.Query) -> ceql.CheckedQuery:
    try:
        return ceql.check(print_query(query), SCHEMA)
    except ceql.QueryError:
        assume(False)
        raise


def keys(matches) -> set:
    return {(m.trigger, m.positions, tuple(sorted(m.labels.items())), m.partition) for m in matches}


@PROPERTY
@given(extended_queries(depth=2), streams(min_size=2, max_size=6))
def test_outputs_are_well_formed_and_measures_do_not_filter(query, events) -> None:
    query = dataclasses.replace(query, limit=None)
    checked = checked_or_skip(query)
    matches = ceql.reference.run(checked, events)
    triggers = [m.trigger for m in matches]
    assert triggers == sorted(triggers)
    names = {m.name for m in query.projection.measures}
    for match in matches:
        assert all(0 <= p <= match.trigger for p in match.positions)
        assert set(match.measures) == names
        for label, positions in match.labels.items():
            assert set(positions) <= set(match.positions), label
    without = dataclasses.replace(query, projection=dataclasses.replace(query.projection, measures=()))
    assert keys(ceql.reference.run(checked_or_skip(without), events)) == keys(matches)


@PROPERTY
@given(extended_queries(depth=2), streams(min_size=2, max_size=6))
def test_double_negation_and_start(query, events) -> None:
    query = dataclasses.replace(query, limit=None, strategy=None)
    checked = checked_or_skip(query)
    base = keys(ceql.reference.run(checked, events))
    formula = query.formula
    if isinstance(formula, ast.Filter):
        doubled = dataclasses.replace(formula, cond=ast.Not(ast.Not(formula.cond)))
        again = checked_or_skip(dataclasses.replace(query, formula=doubled))
        assert keys(ceql.reference.run(again, events)) == base
    started = checked_or_skip(dataclasses.replace(query, formula=ast.Start(formula)))
    assert keys(ceql.reference.run(started, events)) <= base


@PROPERTY
@given(extended_queries(depth=2), streams(min_size=2, max_size=6))
def test_the_desugared_formula_means_the_written_one(query, events) -> None:
    checked = checked_or_skip(query)
    core_text = print_query(dataclasses.replace(query, formula=checked.formula))
    core = ceql.check(core_text, SCHEMA)
    assert core.formula == core.query.formula  # nothing left to rewrite
    assert ceql.reference.run(core, events) == ceql.reference.run(checked, events), print_formula(checked.formula)
