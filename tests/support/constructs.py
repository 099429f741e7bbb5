"""Generated cases that contain one given construct, for the differential property test of each
file in tests/constructs/: every case is checked against the reference (ceql.reference) on each
engine path, in random batches, with a state round trip (tests/support/agreement.py).

The broad differential suites (tests/test_differential.py, tests/test_cross_conditions.py) draw
every construct at once; these draw queries made of the core operators plus the construct under
test, and keep only those that contain it, so a change to one operator is tested by its own file.
"""

from __future__ import annotations

import dataclasses

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

import ceql
from ceql.lang import ast, visit
from tests.support.agreement import check_case, record
from tests.support.strategies import (
    CORE_OPERATORS,
    TEST_DECLARATION,
    WINDOWS_NOT_NULL,
    cases,
    shaped_queries,
)

SCHEMA = ceql.declare(TEST_DECLARATION)

#: Few examples: the broad suites carry the volume; these make each construct's file stand alone.
#: (Under ``-p tests.support.mutation_profile`` every property test runs its own fixed count.)
CONSTRUCT = settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))

#: shaped_formulas' operator name -> the syntax-tree class it builds.
NODES: dict[str, type[ast.Node]] = {
    "seq": ast.Sequence,
    "cseq": ast.Sequence,
    "or": ast.Union_,
    "and": ast.Conjunction,
    "all": ast.AllOf,
    "unless": ast.Unless,
    "iter": ast.Iteration,
    "citer": ast.Iteration,
    "filter": ast.Filter,
    "not": ast.NotEvent,
    "partition": ast.PartitionBy,
    "repeat": ast.Repeat,
    "start": ast.Start,
    "rename": ast.Rename,
    "project": ast.Project,
    "as": ast.Label,
}


def contains(query: ast.Query, operator: str) -> bool:
    """Whether the query's formula has a node built by ``operator`` (a contiguous one for
    ``cseq``/``citer``, a non-contiguous one for ``seq``/``iter``)."""
    kind = NODES[operator]
    for node in visit.walk(query.formula, formulas_only=True):
        if isinstance(node, kind):
            if operator in ("seq", "iter", "cseq", "citer"):
                if node.contiguous != (operator in ("cseq", "citer")):
                    continue
            return True
    return False


def operator_cases(operator: str, depth: int = 3) -> st.SearchStrategy:
    """Cases whose query's formula uses ``operator`` (a shaped_formulas operator name)."""
    operators = tuple(dict.fromkeys(CORE_OPERATORS + (operator,)))
    queries = shaped_queries(depth, operators).filter(lambda q: contains(q, operator))
    return cases(queries)


def clause_cases(**force: st.SearchStrategy) -> st.SearchStrategy:
    """Cases whose query has the given clauses (``strategy``, ``within``, ``consume``,
    ``limit``, ``partition_by``) drawn from the given strategies, the rest as the broad suite
    draws them."""

    @st.composite
    def queries(draw):
        query = draw(shaped_queries(3, CORE_OPERATORS, clauses=True))
        return dataclasses.replace(query, **{name: draw(value) for name, value in force.items()})

    return cases(queries())


WINDOWS = WINDOWS_NOT_NULL


def check(case) -> None:
    """The differential check of one case (None from check_case: the query was refused, which
    the generators make rare)."""
    record(check_case(case.query, SCHEMA, case.events, case.cuts, case.save_at))
