"""The differential check: the engine against ``ceql.reference`` on one generated case.

One case is a query, a stream, the points where the stream is cut into batches and the point
where the evaluator's state is saved and loaded into a fresh evaluator. ``check_case`` runs
the engine on every path that supports the query (the Python evaluator, and the compiled
kernel where ``kernel.unsupported(plan)`` is None), each fed batch by batch with the state
round trip in the middle, and asserts, per trigger:

- no UnsupportedQueryError (every valid query must run);
- no complex event reported twice;
- the same complex events as the reference; with ``LIMIT`` or ``ANY``, which let the engine
  choose, a subset of the reference's of the right size.

It returns what the case exercised (``Outcome``), for the distribution figures.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from dataclasses import dataclass

from hypothesis import event

import ceql
from ceql.lang import ast, print_query, scopes
from ceql.lang.visit import walk
from ceql.runtime import kernel

ENGINES = ("python", "compiled")


@dataclass(frozen=True)
class Outcome:
    """What one case exercised: matches (from the reference), conditions across events, and the
    engine paths that ran it."""

    matches: int
    cross: bool
    registers: bool
    paths: tuple[str, ...]
    skipped: tuple[str, ...] = ()


def compile_valid(query: ast.Query, schema: ceql.Schema) -> ceql.Query | None:
    """The compiled query, or None if the query is invalid (a QueryError other than
    UnsupportedQueryError, which fails the test: every valid query must run)."""
    text = print_query(query)
    try:
        checked = ceql.check(text, schema)
    except ceql.QueryError:
        return None
    try:
        return ceql.Query(checked)
    except ceql.UnsupportedQueryError as error:
        limit = next((name for name, words in KNOWN_LIMITS.items() if words in str(error)), None)
        if limit is None:  # pragma: no cover - a failure
            raise AssertionError(f"refused: {text}\n{error}") from error
        event(f"known limit, not run: {limit}")  # shown in Hypothesis' statistics
        return None


#: Documented refusals (docs/limits.md): name -> words of the UnsupportedQueryError. A case
#: that hits one is not run, and is counted in the statistics; any other refusal fails.
KNOWN_LIMITS = {
    "a condition across events inside an UNLESS right side nested in another UNLESS right side": (
        "inside the right side of an UNLESS that is itself inside the right side of an UNLESS"
    ),
}


def by_trigger(matches) -> dict[int, Counter]:
    out: dict[int, Counter] = {}
    for match in matches:
        out.setdefault(match.trigger, Counter())[match.key()] += 1
    return out


def run_engine(
    compiled: ceql.Query, events: list[dict], engine: str, cuts: tuple[int, ...] = (), save_at: int | None = None
) -> list[ceql.Match]:
    """The engine's matches, the events fed in batches split at ``cuts``; at ``save_at`` the
    state is exported and loaded into a fresh evaluator, which goes on."""
    evaluator = compiled.evaluator(engine=engine)
    bounds = sorted({0, len(events), *(c for c in cuts if 0 < c < len(events))})
    if save_at is not None and 0 < save_at < len(events):
        bounds = sorted(set(bounds) | {save_at})
    out: list[ceql.Match] = []
    for lo, hi in zip(bounds, bounds[1:]):
        if lo == save_at:
            blob = evaluator.export_state()
            evaluator = compiled.evaluator(engine=engine)
            evaluator.import_state(blob)
        out.extend(evaluator.push_batch(events[lo:hi]))
    out.extend(evaluator.finish())  # the end of the input (NOT FOLLOWED BY reports what is still due)
    return out


def engine_paths(compiled: ceql.Query) -> tuple[str, ...]:
    """The engine paths that evaluate this query."""
    return ENGINES if kernel.unsupported(compiled.plan) is None else ("python",)


def assert_agrees(query: ast.Query, schema: ceql.Schema, got: list[ceql.Match], reference: dict, label: str) -> None:
    """``got`` (one engine path's matches) agrees with the reference's matches ``reference``."""
    text = f"[{label}] {print_query(query)}"
    engine = by_trigger(got)
    for trigger, found in engine.items():
        repeated = [key for key, count in found.items() if count > 1]
        assert not repeated, f"{text}\nreported twice at trigger {trigger}: {repeated}"
    if query.limit is None and query.strategy != "ANY":
        assert engine == reference, f"{text}\nengine:    {engine}\nreference: {reference}"
        return
    assert set(engine) == set(reference), text
    for trigger, candidates in reference.items():
        found = engine[trigger]
        assert set(found) <= set(candidates), text
        # Per trigger and partition (several partitions share a trigger only when NOT FOLLOWED
        # BY's deadlines pass at one event).
        partitions = Counter(key[3] for key in candidates)
        expected = 0
        for count in partitions.values():
            chosen = 1 if query.strategy == "ANY" else count
            expected += min(chosen, query.limit) if query.limit is not None else chosen
        assert sum(found.values()) == expected, text


def reference_matches(query: ast.Query, schema: ceql.Schema, events: list[dict]) -> dict[int, Counter]:
    """The reference's matches per trigger; with LIMIT or ANY, the full candidate sets."""
    relaxed = dataclasses.replace(query, limit=None, strategy="ALL" if query.strategy == "ANY" else query.strategy)
    return by_trigger(ceql.reference.run(ceql.check(print_query(relaxed), schema), events))


# ---------------------------------------------------------------------------------- known bugs
#
# Engine bugs found by these generators and reported to the lead, each with a minimal
# reproduction in tests/test_known_bugs.py (a strict xfail: when the bug is fixed that test
# fails, and its entry here must go; the fixed bugs' tests stay there as regressions). A case that hits one is not checked on the affected path;
# the skip is counted (``Outcome.skipped``) and shown by Hypothesis' statistics.


def _consumes_through_project(query: ast.Query, path: str, save_at: int | None) -> bool:
    """CONSUME BY on the kernel with a PROJECT in the formula (tests/test_known_bugs.py's
    test_consume_by_after_a_project_with_checks: the kernel consumes the events PROJECT drops)."""
    consumes = query.consume not in (None, "NONE")
    return path == "compiled" and consumes and any(isinstance(node, ast.Project) for node in walk(query.formula))


KNOWN_BUGS: dict = {  # name -> function(query, path, save_at) -> bool
    # ("START re-anchored in a partition after CONSUME BY ANY" and "plain PARTITION BY keys
    # compared as one set" were fixed; their tests stay in tests/test_known_bugs.py)
    "CONSUME BY consumes the events PROJECT drops (kernel, checks per complex event)": _consumes_through_project,
}


def known_bug(query: ast.Query, path: str, save_at: int | None) -> str | None:
    """The known bug this case would hit on this path, if any."""
    for name, hits in KNOWN_BUGS.items():
        if hits(query, path, save_at):
            return name
    return None


def check_case(
    query: ast.Query,
    schema: ceql.Schema,
    events: list[dict],
    cuts: tuple[int, ...] = (),
    save_at: int | None = None,
    engines: tuple[str, ...] = ENGINES,
    skip_known: bool = True,
) -> Outcome | None:
    """Run the differential check on one case (see the module docstring); None if the query
    is invalid."""
    compiled = compile_valid(query, schema)
    if compiled is None:
        return None
    reference = reference_matches(query, schema, events)
    paths = tuple(path for path in engine_paths(compiled) if path in engines)
    skipped = []
    for path in paths:
        bug = known_bug(query, path, save_at) if skip_known else None
        if bug is not None:
            skipped.append(bug)
            continue
        got = run_engine(compiled, events, path, cuts, save_at)
        assert_agrees(query, schema, got, reference, f"{path}, cuts {list(cuts)}, state saved at {save_at}")
    return Outcome(
        matches=sum(sum(found.values()) for found in reference.values()),
        cross=has_cross_condition(compiled.checked.formula, compiled.checked.query),
        registers=compiled.plan.registers is not None,
        paths=paths,
        skipped=tuple(skipped),
    )


# ---------------------------------------------------------------------------------- figures


def has_cross_condition(formula: ast.Formula, query: ast.Query | None = None) -> bool:
    """Whether some condition reads more than one event at a time: a comparison naming two
    labels or a free label, an aggregate, PREV, a PART-BY over labels or inside a formula."""
    if query is not None and query.partition_labels:
        return True
    index = scopes.LabelIndex()
    for node in walk(formula, formulas_only=True):
        if isinstance(node, ast.PartitionBy):
            return True
        if isinstance(node, (ast.Filter, ast.NotEvent)) and node.cond is not None:
            if scopes.free_labels(node, index):
                return True
            for item in walk(node.cond):
                if isinstance(item, (ast.Aggregate, ast.Prev)):
                    return True
                if isinstance(item, ast.Compare) and len(scopes.cond_labels(item)) > 1:
                    return True
    return False


def record(outcome: Outcome | None) -> None:
    """Tell Hypothesis what the case exercised (``--hypothesis-show-statistics`` shows the
    distribution) and steer generation toward cases with matches."""
    from hypothesis import event, target

    if outcome is None:
        event("invalid query")
        return
    event("matches" if outcome.matches else "no match")
    event("cross-event condition" if outcome.cross else "one-event conditions only")
    event("paths: " + ", ".join(outcome.paths))
    for bug in outcome.skipped:
        event(f"path skipped, known bug: {bug}")
    target(float(min(outcome.matches, 8)), label="matches (capped at 8)")
