"""Issue 40's benchmark over the docs ran out of memory: the size check materialised the output
of ``SELECT * … SELL AS s; BUY+ AS b`` (no window: exponential), the ALL twin of guide.md's
``SELECT NEXT`` query, and the Python path built every match of an Arrow output as a ``Match``
object before converting. Both now stream: the check counts chunks and stops at a bound, and
the Python path's Arrow output is built ``batch`` matches at a time."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pyarrow as pa

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import nocliff  # noqa: E402

import ceql  # noqa: E402
from ceql.runtime.backend import PythonBackend  # noqa: E402

DECLARATION = "CREATE STREAM S { EVENT A { k:int, v:int }, EVENT B { k:int, v:int } }"


def events(n: int) -> list[dict]:
    """``n`` events alternating in runs: A, then B's, so ``A ; B+`` has many matches."""
    return [{"event_type": "A" if i % 7 == 0 else "B", "k": i % 3, "v": i % 5} for i in range(n)]


def test_exponential_output_is_counted_up_to_the_bound_only() -> None:
    """``A ; B+`` with no window has about 2^40 matches on 60 events: the count stops past the
    bound instead of producing them (it used to fill memory)."""
    schema = ceql.declare(DECLARATION)
    table = pa.Table.from_pylist(events(60))
    query = ceql.compile("SELECT * FROM S WHERE A ; B+", schema)
    assert nocliff.count_capped(query, table, 10_000)[0] == 10_001
    windowed = ceql.compile("SELECT * FROM S WHERE A ; B PARTITION BY [k] WITHIN 5 EVENTS", schema)
    exact = sum(1 for _ in windowed.run(table.to_pylist()))
    assert exact > 0
    assert nocliff.count_capped(windowed, table, 10_000)[0] == exact


def test_docs_check_flags_the_exponential_twin_not_the_next_query() -> None:
    """guide.md's ``SELECT NEXT * … SELL AS s; BUY+ AS b`` has a linear output; its ALL twin
    an exponential one, counted to the bound only."""
    found = {query: declaration for _, query, declaration in nocliff.docs_queries()}
    query = "SELECT NEXT * FROM S WHERE SELL AS s; BUY+ AS b"
    schema = ceql.declare(found[query])
    # (at 5,000 events: at 200k its runs, which no window ends, make its cost quadratic)
    assert not nocliff.outgrows(ceql.compile(query, schema), schema, [], events=5_000)
    assert nocliff.outgrows(ceql.compile(nocliff.docs_twin(query), schema), schema, [], events=5_000)


def test_python_arrow_output_is_built_in_chunks_and_unchanged() -> None:
    """The Python path's Arrow output: batches of at most ``batch`` matches, the same table as
    unchunked, the kernel's complex events and the same complex events as the ``Match`` objects."""
    schema = ceql.declare(DECLARATION)
    text = "SELECT * FROM S WHERE A AS a ; B+ AS b PARTITION BY [k] WITHIN 12 EVENTS"
    rows = events(400)
    evaluator = ceql.compile(text, schema).evaluator(engine="python")
    backend = PythonBackend(evaluator, batch=64)
    output = evaluator.output_schema()
    batches = list(backend.record_batches(pa.Table.from_pylist(rows), output))
    assert len(batches) > 2 and all(b.num_rows <= 64 for b in batches)
    chunked = pa.Table.from_batches(batches, schema=output.arrow)
    python = ceql.compile(text, schema).run(pa.Table.from_pylist(rows), output="arrow", engine="python")
    compiled = ceql.compile(text, schema).run(pa.Table.from_pylist(rows), output="arrow", engine="compiled")
    assert chunked.equals(python)
    # The engines agree on the complex events; their order within one trigger may differ.
    assert sorted(map(repr, python.to_pylist())) == sorted(map(repr, compiled.to_pylist()))
    assert chunked.num_rows == sum(1 for _ in ceql.compile(text, schema).run(rows, engine="python"))


def test_guarded_check_survives_a_child_out_of_memory(monkeypatch) -> None:
    """The size check runs in a forked child: one that runs out of its memory bound counts as
    outgrowing, and this process goes on (the docs run was killed by the OS instead)."""
    from ceql.runtime.kernel.warm import warm

    warm()  # no compiling thread alive at the fork
    schema = ceql.declare(nocliff.DECLARATION)
    query = ceql.compile("SELECT * FROM S WHERE A AS a ; B AS b PARTITION BY [k] WITHIN 10 EVENTS", schema)
    assert not nocliff.outgrows(query, schema, [], events=20_000)
    assert not nocliff.outgrows_guarded(query, schema, [], events=20_000)

    def hungry(*args: object, **kwargs: object) -> bool:
        """A check whose state takes 256 MiB (as a query's without a window may)."""
        return bool(np.ones(32 << 20).sum() < 0)

    monkeypatch.setattr(nocliff, "outgrows", hungry)
    assert not nocliff.outgrows_guarded(query, schema, [], events=20_000)
    monkeypatch.setattr(nocliff, "CHECK_MEMORY", 64 << 20)
    assert nocliff.outgrows_guarded(query, schema, [], events=20_000)
