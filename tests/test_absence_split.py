"""Splitting a stream by key (``compile.plan.split_keys``): each key's sub-stream evaluated
alone, its events at their positions in the whole stream, gives exactly that key's matches;
for NOT FOLLOWED BY with the deadlines of the whole stream, once the merge sets each trigger
(``runtime.absence.deadline_triggers``). Checked on generated queries against the whole-stream
result."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pyarrow as pa
from hypothesis import HealthCheck, given, settings

import ceql
from ceql.compile.plan import split_keys
from ceql.lang import print_query
from ceql.match import Match
from ceql.runtime.absence import deadline_triggers
from ceql.runtime.kernel.absence import own_plan
from ceql.runtime.kernel.output import Projection
from tests.support.agreement import compile_valid
from tests.support.strategies import TEST_DECLARATION, absence_queries, cases

SCHEMA = ceql.declare(TEST_DECLARATION)
FAST = settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))


def _key(event: dict, attributes: tuple[str, ...]) -> tuple | None:
    values = tuple(event.get(a) for a in attributes)
    if any(v is None or v != v for v in values):
        return None
    return tuple(int(v) if isinstance(v, float) and v.is_integer() else v for v in values)


def split_run(query: ceql.Query, events: list[dict]) -> list[Match]:
    """Each key's sub-stream alone (Python path, whole-stream positions), then the merge."""
    routing = split_keys(query.plan)
    assert routing is not None
    streams: dict = {}
    for position, event in enumerate(events):
        attributes = routing.get(event["event_type"])
        if attributes is None:
            continue
        streams.setdefault(_key(event, attributes), []).append(position)
    found: list[Match] = []
    for positions in streams.values():
        evaluator = query.evaluator(engine="python")
        table = pa.Table.from_pylist([events[p] for p in positions])
        found.extend(m for m, _ in evaluator.process_table(table, positions=np.array(positions, dtype=np.int64)))
        found.extend(m for m, _ in evaluator.finish(detailed=True))
    plan = query.plan
    if plan.absence is None:
        return found
    time = {name: query.checked.time_attribute(name) for name in query.checked.schema.event_types}
    within = plan.checked.query.within
    measures = [
        e.get(within.attribute) if within.kind == "attribute" else e.get(time[e["event_type"]] or "")
        for e in events
    ]
    triggers = deadline_triggers(plan, [e["event_type"] for e in events], measures, [m.deadline for m in found])
    return [Match(t, m.positions, dict(m.labels), m.partition, dict(m.measures), m.deadline) for t, m in zip(triggers, found)]


def _counts(matches) -> Counter:
    return Counter((m.trigger, m.key()) for m in matches)


@FAST
@given(cases(absence_queries(strategies_=(None, "ALL")), max_size=14))
def test_split_by_key_equals_the_whole_stream(case) -> None:
    query = compile_valid(case.query, SCHEMA)
    if query is None or split_keys(query.plan) is None:
        return
    whole = list(query.run(case.events, engine="python"))
    split = _counts(split_run(query, case.events))
    if query.plan.absence is not None and not query.plan.partition_groups and Projection.from_plan(own_plan(query.plan)).merges:
        # Keys of an equality are no partition: a projection (SELECT NONE, SELECT x) can make the
        # complex events of two keys due at one event equal, and one core reports them once.
        # The split's users (workers, Spark) do not split such queries (absence_split, absence_routing).
        split = Counter(set(split))
    assert split == _counts(whole), print_query(case.query)


def test_the_recipe_splits_by_order() -> None:
    """Orders by id, payments by order: an order with no id is in the sub-stream of key None."""
    shop = ceql.declare(
        "CREATE STREAM Shop { EVENT Order { id:int, ts:primary_time }, EVENT Payment { order:int, ts:primary_time } }"
    )
    query = ceql.compile(
        "SELECT * FROM Shop WHERE Order AS o NOT FOLLOWED BY Payment AS p FILTER p.order = o.id WITHIN 10 SECONDS", shop
    )
    assert split_keys(query.plan) == {"Order": ("id",), "Payment": ("order",)}
    second = 10**9
    events = [
        {"event_type": "Order", "id": 1, "order": None, "ts": 0},
        {"event_type": "Order", "id": None, "order": None, "ts": 1 * second},
        {"event_type": "Order", "id": 2, "order": None, "ts": 2 * second},
        {"event_type": "Payment", "id": None, "order": 1, "ts": 3 * second},
        {"event_type": "Payment", "id": None, "order": 2, "ts": 13 * second},
    ]
    whole = list(query.run(events, engine="python"))
    assert [(m.trigger, m.positions) for m in whole] == [(4, (1,)), (4, (2,))]
    assert _counts(split_run(query, events)) == _counts(whole)


def test_what_does_not_split() -> None:
    text = "SELECT {} * WHERE A AS x NOT FOLLOWED BY B AS p FILTER p.id = x.id WITHIN 3 EVENTS {}"
    assert split_keys(ceql.compile(text.format("", ""), SCHEMA).plan) is not None
    for strategy, tail in (("ANY", ""), ("", "LIMIT 1"), ("", "CONSUME BY ANY")):
        assert split_keys(ceql.compile(text.format(strategy, tail), SCHEMA).plan) is None
    # f of two events: its events may lie in two sub-streams.
    two = "SELECT * WHERE A AS x ; C AS y NOT FOLLOWED BY B AS p FILTER p.id = x.id WITHIN 3 EVENTS"
    assert split_keys(ceql.compile(two, SCHEMA).plan) is None
