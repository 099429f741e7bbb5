"""The evaluators the golden and property tests run: the reference and the engine."""

from __future__ import annotations

import ceql


def run_reference(declaration: str, query: str, events: list[dict]) -> list[ceql.Match]:
    schema = ceql.declare(declaration)
    return ceql.reference.run(ceql.check(query, schema), events)


def run_engine(declaration: str, query: str, events: list[dict]) -> list[ceql.Match]:
    schema = ceql.declare(declaration)
    return list(ceql.compile(query, schema).run(events))


def run_engine_incremental(declaration: str, query: str, events: list[dict]) -> list[ceql.Match]:
    """The engine fed one event at a time (batches of one): same results as run()."""
    schema = ceql.declare(declaration)
    evaluator = ceql.compile(query, schema).evaluator()
    out: list[ceql.Match] = []
    for event in events:
        out.extend(evaluator.push(event))
    return out


EVALUATORS = [
    ("reference", run_reference),
    ("engine", run_engine),
    ("engine-incremental", run_engine_incremental),
]
