"""NOT FOLLOWED BY at the edges of int64 (issue 38): deadlines are int64 in every output. A window
of 2**62 units or more is refused when the query compiles; a deadline past int64 (times near
2262) is refused at the event that would start it, on both engine paths; a deadline just inside
int64 is written by every output format: JSON Lines, Parquet, CORE text, Arrow, Match objects."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

import ceql
from tests.support.cli import run_cli

DECLARATION = "CREATE STREAM Shop { EVENT Order { id:int, ts:primary_time }, EVENT Payment { order:int, ts:primary_time } }"
SHOP = ceql.declare(DECLARATION)
MINUTE = 60 * 10**9
EDGE = 2**63 - 1
QUERY = "SELECT * FROM Shop WHERE Order AS o NOT FOLLOWED BY Payment AS p FILTER p.order = o.id WITHIN 1 MINUTES"


def _orders(first: int) -> list[dict]:
    return [
        {"event_type": "Order", "id": 1, "ts": first},
        {"event_type": "Payment", "order": 2, "ts": first + 1},
    ]


@pytest.mark.parametrize("window", ["100000 DAYS", f"{2**62} EVENTS", "4611686018427387904 NANOSECONDS"])
def test_a_window_past_int64_deadlines_is_refused_when_compiled(window) -> None:
    with pytest.raises(ceql.QueryError, match="under 2\\*\\*62 units"):
        ceql.compile(QUERY.replace("1 MINUTES", window), SHOP)


def test_the_longest_window_compiles() -> None:
    query = ceql.compile(QUERY.replace("1 MINUTES", f"{2**62 - 1} NANOSECONDS"), SHOP)
    (match,) = query.run(_orders(10**18))
    assert match.deadline == 10**18 + 2**62 - 1


@pytest.mark.parametrize("engine", ["python", "compiled"])
def test_a_deadline_past_int64_is_refused_at_its_event(engine) -> None:
    query = ceql.compile(QUERY, SHOP)
    events = _orders(EDGE - MINUTE + 1)  # its deadline would be 2**63
    with pytest.raises(ceql.EventError, match="beyond the int64 range") as raised:
        list(query.run(events, engine=engine))
    assert "row 0" in str(raised.value) or raised.value.row == 0
    evaluator = query.evaluator(engine=engine)
    with pytest.raises(ceql.EventError, match="beyond the int64 range"):
        evaluator.push(events[0])


@pytest.mark.parametrize("engine", ["python", "compiled"])
def test_a_deadline_at_the_edge_is_written_everywhere(engine, tmp_path) -> None:
    query = ceql.compile(QUERY, SHOP)
    events = _orders(EDGE - MINUTE)  # deadline exactly 2**63 - 1
    (match,) = query.run(events, engine=engine)
    assert (match.trigger, match.positions, match.deadline) == (2, (0,), EDGE)
    table = query.evaluator(engine=engine).arrow(events)
    assert table.column("deadline").to_pylist() == [EDGE]
    pushed = query.evaluator(engine=engine)
    found = [m for e in events for m in pushed.push(e)] + pushed.finish()
    assert [m.deadline for m in found] == [EDGE]


def test_every_cli_format_writes_the_edge(tmp_path) -> None:
    declaration = tmp_path / "shop.core"
    declaration.write_text(DECLARATION)
    source = tmp_path / "events.jsonl"
    source.write_text("".join(json.dumps(e) + "\n" for e in _orders(EDGE - MINUTE)))
    for fmt in ("jsonl", "parquet", "core"):
        out = tmp_path / f"out.{fmt}"
        result = run_cli("run", "-d", str(declaration), "-q", QUERY, "-i", str(source), "-f", fmt, "-o", str(out), "--quiet")
        assert result.returncode == 0, result.stderr
        if fmt == "jsonl":
            assert json.loads(out.read_text())["deadline"] == EDGE
        elif fmt == "parquet":
            assert pq.read_table(out).column("deadline").to_pylist() == [EDGE]
        else:
            assert out.read_text().strip()
    # Past the edge: a clear error naming the event, nothing half written.
    source.write_text("".join(json.dumps(e) + "\n" for e in _orders(EDGE - MINUTE + 1)))
    result = run_cli("run", "-d", str(declaration), "-q", QUERY, "-i", str(source), "--quiet")
    assert result.returncode != 0 and "beyond the int64 range" in result.stderr and "Traceback" not in result.stderr
