"""The public engine API: compile a query, run it over events, or push events incrementally."""

from __future__ import annotations

from typing import Any

from ceql.compile.plan import Plan, build_plan
from ceql.lang import CheckedQuery, Schema, analyze, parse_query
from ceql.runtime.evaluator import Evaluator


class Query:
    """A compiled query. ``run`` evaluates it over events; ``evaluator`` gives an incremental
    evaluator; ``explain`` describes how it is evaluated."""

    def __init__(self, checked: CheckedQuery) -> None:
        self.checked = checked
        self.plan: Plan = build_plan(checked)

    @property
    def text(self) -> str:
        return self.checked.text

    @property
    def facts(self):
        """Public facts for distributed runners: partitioning, window, sharding, outputs."""
        return self.plan.facts()

    def evaluator(self, **options: Any) -> Evaluator:
        """A fresh incremental evaluator: ``push(event)`` / ``push_batch(batch)`` -> matches.
        Options: ``engine`` ("auto", "python" or "compiled"), ``type_labels=True`` (event-type
        labels in ``Match.labels``), ``max_classes`` (live partial-match classes per key)."""
        return Evaluator(self.plan, **options)

    def run(
        self, events: Any, *, output: str = "matches", max_matches: int | None = None, **options: Any
    ) -> Any:
        """Matches over ``events`` (dicts with ``event_type``, a pandas DataFrame, or Arrow data)
        in trigger order: lazily as ``Match`` objects, or with ``output="arrow"`` as one Arrow
        table (no Python object per match where the compiled kernel runs the query). Options as
        for ``evaluator``. With ``max_matches``, raise LimitError instead of producing more than
        that many (None or 0: no limit)."""
        from ceql.compile.limits import limit_matches, too_many_matches

        evaluator = self.evaluator(**options)
        if output == "arrow":
            table = evaluator.arrow(events)
            if max_matches and table.num_rows > max_matches:
                raise too_many_matches(max_matches)
            return table
        if output != "matches":
            raise ValueError(f"output must be 'matches' or 'arrow', not {output!r}")
        return limit_matches(evaluator.run(events), max_matches)

    def explain(self, dot: bool = False) -> str:
        """The normalised query, predicates, passes and automaton, as text (or Graphviz DOT)."""
        from ceql.explain import explain

        return explain(self, dot=dot)


def compile(text: str, schema: Schema) -> Query:  # noqa: A001 - the natural name of the API
    """Parse, analyse and compile a query against a schema."""
    return Query(analyze(parse_query(text), schema, text))
