"""What the partitioned Spark plan of NOT FOLLOWED BY relies on, without Spark: a bucket holds
the whole sub-streams of several keys (``compile.plan.split_keys``'s routing, the PARTITION BY
or the equality of ``batch.absence_routing``), one evaluator runs the bucket's events at their
stream positions to the bucket's end, and the merge sets each match's trigger from its deadline
(``runtime.absence.deadline_triggers``, what ``batch._global_triggers`` computes in Spark).
Checked on generated queries against the whole stream, for several bucket counts."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pyarrow as pa
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import ceql
from ceql.compile.plan import split_keys
from ceql.lang import print_query
from ceql.match import Match
from ceql.runtime.absence import deadline_triggers
from ceql.spark.batch import absence_routing, plan_kind
from tests.support.agreement import compile_valid
from tests.support.strategies import TEST_DECLARATION, absence_queries, cases

SCHEMA = ceql.declare(TEST_DECLARATION)
FAST = settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))


def _key(event_: dict, attributes: tuple[str, ...]) -> tuple | None:
    """The key of an event as Spark's key columns make it: missing or NaN is None, and a
    whole double is the int it equals (one bucket for equal values)."""
    values = tuple(event_.get(a) for a in attributes)
    if any(v is None or v != v for v in values):
        return None
    return tuple(float(v) + 0.0 for v in values)  # -0.0 + 0.0 is 0.0


def bucketed_run(query: ceql.Query, events: list[dict], buckets: int) -> list[tuple[int, tuple]]:
    """(trigger, key) of each match: keys in ``buckets`` buckets by a hash, one evaluator per
    bucket (the compiled kernel where it runs the query), then the stream's triggers."""
    routing = split_keys(query.plan)
    assert routing is not None
    rows: dict[int, list[int]] = {}
    for position, item in enumerate(events):
        attributes = routing.get(item["event_type"])
        if attributes is not None:
            rows.setdefault(hash(_key(item, attributes)) % buckets, []).append(position)
    found = []
    for positions in rows.values():
        evaluator = query.evaluator()
        table = pa.Table.from_pylist([events[p] for p in positions])
        found.extend(m for m, _ in evaluator.process_table(table, positions=np.array(positions, dtype=np.int64)))
        found.extend(m for m, _ in evaluator.finish(detailed=True))
    time = {name: query.checked.time_attribute(name) for name in query.checked.schema.event_types}
    within = query.plan.checked.query.within
    measures = [
        e.get(within.attribute) if within.kind == "attribute" else e.get(time[e["event_type"]] or "") for e in events
    ]
    triggers = deadline_triggers(query.plan, [e["event_type"] for e in events], measures, [m.deadline for m in found])
    moved = (Match(t, m.positions, dict(m.labels), m.partition, dict(m.measures), m.deadline) for t, m in zip(triggers, found))
    return [(m.trigger, m.key()) for m in moved]


@FAST
@given(cases(absence_queries(strategies_=(None, "ALL")), max_size=14, nulls=True), st.integers(1, 4))
def test_buckets_of_keys_equal_the_whole_stream(case, buckets) -> None:
    query = compile_valid(case.query, SCHEMA)
    if query is None or plan_kind(query) != "partitioned":
        return
    event("split by an equality" if absence_routing(query) is not None else "split by PARTITION BY")
    whole = Counter((m.trigger, m.key()) for m in query.run(case.events, engine="python"))
    assert Counter(bucketed_run(query, case.events, buckets)) == whole, print_query(case.query)


FIRSTS = ("A AS x", "(A OR C) AS x", "A AS x FILTER x[v > 1]", "B AS x")
CANCELS = (
    "B AS p FILTER p.id = x.id",
    "A AS p FILTER p.id = x.id",
    "B AS p FILTER p.v = x.id",
    "C AS p FILTER p.v = x.v AND p[s = 'a']",
    "(B AS p ; D AS q) FILTER p.id = x.id AND q.id = x.id",
    "(B AS p OR D AS p) FILTER p.id = x.id",
)
WINDOWS = ("{} EVENTS", "{} [t]", "{} SECONDS")


@st.composite
def equality_cases(draw):
    """NOT FOLLOWED BY linked by an equality, no PARTITION BY, and a stream of its types with
    missing values (keys None)."""
    from tests.support.strategies import matching_streams

    strategy = draw(st.sampled_from(("", "ALL ", "STRICT ")))
    window = draw(st.sampled_from(WINDOWS)).format(draw(st.integers(1, 5)))
    text = (
        f"SELECT {strategy}* WHERE {draw(st.sampled_from(FIRSTS))} NOT FOLLOWED BY "
        f"{draw(st.sampled_from(CANCELS))} WITHIN {window}"
    )
    return text, draw(matching_streams(("A", "B", "C", "D"), 4, 16, nulls=True))


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(equality_cases(), st.integers(1, 4))
def test_buckets_of_equality_keys_equal_the_whole_stream(case, buckets) -> None:
    text, events = case
    query = ceql.compile(text, SCHEMA)
    if absence_routing(query) is None:  # (STRICT with a condition on f: not split)
        assert plan_kind(query) == "single", text
        return
    assert plan_kind(query) == "partitioned"
    whole = Counter((m.trigger, m.key()) for m in query.run(events, engine="python"))
    event("split, with matches" if whole else "split, no match")
    assert Counter(bucketed_run(query, events, buckets)) == whole, text
