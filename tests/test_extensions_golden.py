"""The papers' worked examples for the language extensions (tests/support/golden.py EXTENSION_CASES).

The reference evaluator must give the papers' outputs. The engine runs the same cases; where
it does not evaluate a construct yet it raises UnsupportedQueryError and the case is skipped
for it (never for the reference).
"""

from __future__ import annotations

import pytest

import ceql
from tests.support import golden
from tests.support.evaluators import EVALUATORS


def _outputs(matches, expected):
    if isinstance(expected, dict):
        out: dict[int, set] = {}
        for match in matches:
            out.setdefault(match.trigger, set()).add(match.positions)
        return out
    return [(m.trigger, m.positions, dict(m.labels), dict(m.measures)) for m in matches]


def _run(evaluator_name, evaluate, declaration, query, stream, type_labels):
    schema = ceql.declare(declaration)
    if evaluator_name == "reference":
        return ceql.reference.run(ceql.check(query, schema), stream, type_labels=type_labels)
    try:
        if not type_labels:
            return evaluate(declaration, query, stream)
        compiled = ceql.compile(query, schema)
        if evaluator_name == "engine":
            return list(compiled.run(stream, type_labels=True))
        evaluator = compiled.evaluator(type_labels=True)
        return [match for event in stream for match in evaluator.push(event)]
    except ceql.UnsupportedQueryError as exc:
        pytest.skip(f"engine: {exc.message}")


@pytest.mark.parametrize("evaluator", EVALUATORS, ids=[name for name, _ in EVALUATORS])
@pytest.mark.parametrize(
    "name, source, declaration, stream, query, expected, type_labels",
    golden.EXTENSION_CASES,
    ids=[case[0] for case in golden.EXTENSION_CASES],
)
def test_paper_examples(evaluator, name, source, declaration, stream, query, expected, type_labels) -> None:
    evaluator_name, evaluate = evaluator
    matches = _run(evaluator_name, evaluate, declaration, query, stream, type_labels)
    assert _outputs(matches, expected) == expected, f"{name} ({source})"


def test_theorem8_needs_the_free_label() -> None:
    """Moving the condition outward loses {0,1,2,3,4} (issue 18): the two readings differ."""
    schema = ceql.declare(golden.THM8_DECL)
    outward = "SELECT * WHERE (R AS x ; (S AS y ; T AS z)+) FILTER x.v = y.v + z.v"
    matches = ceql.reference.run(ceql.check(outward, schema), golden.THM8_STREAM)
    assert {m.positions for m in matches} == {(0, 1, 2), (0, 3, 4)}
