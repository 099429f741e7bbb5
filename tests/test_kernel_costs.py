"""Cost bugs of the compiled kernel found by issue 40's benchmarks, as bounds on work (nodes the
enumeration visits), not on time.

- ``B+ AS b WITHIN 4 EVENTS`` with no PARTITION BY: the run for B+ keeps one node, a union
  chain of every B so far with the empty complex event at its bottom; the enumeration walked it
  down to that empty one at every trigger (the has-empty bit let it descend where the window
  already cut every other complex event): quadratic until a compaction.
- ``SELECT LAST * FROM S WHERE A+; B`` with no window (docs/spark.md) ran out of memory in the
  No cliff benchmark: its output, not the kernel's state, is quadratic (one complex event per B
  holding every A before it), and the benchmark's size check counted complex events only.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import ceql
from ceql.runtime.kernel import PlanKernel
from ceql.runtime.kernel import compiled as k
from tests.support.agreement import assert_agrees, reference_matches

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import nocliff  # noqa: E402

DECLARATION = "CREATE STREAM S { EVENT A { v:int }, EVENT B { v:int } }"
SCHEMA = ceql.declare(DECLARATION)


def _events(n: int) -> list[dict]:
    """Mostly B's, an A every fourth event (skipped by B+)."""
    return [{"event_type": "A" if i % 4 == 0 else "B", "v": (i * 7) % 5} for i in range(n)]


@pytest.mark.parametrize(
    "text",
    [
        "SELECT * FROM S WHERE B+ AS b WITHIN 4 EVENTS",
        "SELECT * FROM S WHERE B+ AS b FILTER b.v > PREV(b.v) WITHIN 4 EVENTS",
        "SELECT ANY * FROM S WHERE B+ AS b WITHIN 4 EVENTS",
    ],
)
def test_window_bounds_the_enumeration_without_partitions(text: str) -> None:
    """Nodes visited per complex event stay bounded as the input grows (they grew with it: a
    walk down the whole union chain per trigger); the output agrees with the reference."""
    query = ceql.compile(text, SCHEMA)
    per_match = []
    for n in (400, 3_200):
        runner = PlanKernel(query.plan)
        events = _events(n)
        got = list(runner.matches(events))
        assert got
        per_match.append(int(runner.kernel.st[k.S_STEPS]) / len(got))
    assert per_match[1] < 1.5 * per_match[0] and per_match[1] < 40, per_match
    # (The reference enumerates every subset of the B's: a short input.)
    events = _events(20)
    parsed = ceql.parse(text)
    got = list(PlanKernel(query.plan).matches(events))
    assert_agrees(parsed, SCHEMA, got, reference_matches(parsed, SCHEMA, events), "run")


def test_quadratic_output_is_flagged_by_the_size_check() -> None:
    """docs/spark.md's ``SELECT LAST * FROM S WHERE A+; B``: few complex events, but each holds
    every A before its B (quadratic positions); the check now counts positions too."""
    schema = ceql.declare("CREATE STREAM S { EVENT A { id:int, t:primary_time }, EVENT B { id:int, t:primary_time } }")
    query = ceql.compile("SELECT LAST * FROM S WHERE A+; B", schema)
    assert nocliff.outgrows(query, schema, [], events=200_000)
    windowed = ceql.compile("SELECT LAST * FROM S WHERE A+; B WITHIN 50 EVENTS", schema)
    assert not nocliff.outgrows(windowed, schema, [], events=200_000)


def test_last_state_stays_bounded_as_it_streams() -> None:
    """The kernel keeps nothing per trigger for LAST on ``A+; B`` with no window: its live
    nodes are those of the A's (every one may still be reported), not of what it output."""
    schema = ceql.declare("CREATE STREAM S { EVENT A { id:int }, EVENT B { id:int } }")
    query = ceql.compile("SELECT LAST * FROM S WHERE A+; B", schema)
    evaluator = query.evaluator(engine="compiled")
    rows = [{"event_type": "AB"[i % 2], "id": i} for i in range(2_000)]
    matches = sum(len(m.positions) for m in evaluator.process(rows))
    assert matches > 500_000  # quadratic output
    assert evaluator.live_nodes() <= 4 * 1_000
