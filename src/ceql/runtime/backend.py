"""The engine path of an evaluator, chosen in one place, behind one small interface.

An ``Evaluator`` runs its query either on the Python evaluator (``evaluator.py``'s loop over
``runs``) or on the compiled kernel (``kernel/runner.py``). Both are a ``Backend``: per typed
table (one front stage per batch: ``ingest.py`` or the kernel runner's own), matches as
``Match`` objects, as ``MatchColumns`` for writers, or as Arrow record batches of the output
schema. ``choose`` is the only place that decides which one runs, and how:

- ``engine="python"`` or ``"compiled"`` (or ``CEQL_KERNEL=0/1``) say so; a plan the kernel does
  not evaluate (``kernel.unsupported``) runs on Python and says why once (``explain``, and a
  ``SlowPathWarning`` plus an INFO record on the ``ceql`` logger, once per query: ``supported``);
- ``engine="auto"`` decides on the first input, whatever its form. An input that reports its
  size (Arrow, pandas, a list of dicts) is counted; one that does not (an iterator, a
  ``pyarrow.RecordBatchReader``, a generator of batches) is read ahead, item by item and
  untyped, until it is known to be large or has ended, so a stream is never left on the Python
  path for its whole length because its size is unknown. Small inputs run on Python when
  returning ``Match`` objects (no JIT call pays off), and while the kernel's machine code is
  not compiled yet (``kernel/warm.py``: it compiles in the background meanwhile; an input of
  ``COLD_MAX_ROWS`` events or more compiles it now).
- An evaluator that started on Python (small first inputs, then more pushed batches) moves to
  the kernel at the start of a later input of ``LATER_MIN_ROWS`` events or more once it has
  seen ``KERNEL_MIN_ROWS`` events, the kernel is ready, and no partial match is in progress
  (so there is nothing to hand over but the stream position and the last time). Single events
  stay where they are: the Python path's ``push`` costs a few microseconds an event.
"""

from __future__ import annotations

import itertools
import logging
import warnings
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Protocol

import pyarrow as pa

from ceql.errors import SlowPathWarning
from ceql.match import Match
from ceql.runtime.arrow import MatchColumns, MatchRows, from_matches, record_batch
from ceql.runtime.batches import iter_tables

if TYPE_CHECKING:
    from ceql.runtime.evaluator import Evaluator

KERNEL_MIN_ROWS = 20_000  # "auto" starts the compiled kernel on inputs at least this large
PY_COLUMNS_BATCH = 50_000  # MatchColumns chunk size on the Python path
LATER_MIN_ROWS = 100  # a later input moves an evaluator onto the kernel from this size


class Backend(Protocol):
    """One engine path of an evaluator: what it does with each typed table."""

    name: str  # "kernel" or "python"

    def matches(self, table: pa.Table) -> Iterator[Match]:
        """The table's matches as ``Match`` objects (times as the input gave them)."""
        ...

    def columns(self, table: pa.Table) -> Iterator[MatchColumns]:
        """The table's matches as ``MatchColumns`` (raw measures), in chunks."""
        ...

    def record_batches(self, table: pa.Table, schema: Any) -> Iterator[pa.RecordBatch]:
        """The table's matches as record batches of the output schema."""
        ...


class PythonBackend:
    """The Python evaluator: ``Ingest`` then the loop over runs (``Evaluator._run``)."""

    name = "python"

    def __init__(self, evaluator: Evaluator, batch: int = PY_COLUMNS_BATCH) -> None:
        self.evaluator = evaluator
        self.batch = batch  # MatchColumns chunk size

    def matches(self, table: pa.Table) -> Iterator[Match]:
        from ceql.runtime.evaluator import _shown

        evaluator = self.evaluator
        schema = evaluator.output_schema()
        found = evaluator._run(table)
        return _shown(found, schema) if schema.time_measures else found

    def columns(self, table: pa.Table) -> Iterator[MatchColumns]:
        evaluator = self.evaluator
        schema = evaluator.output_schema()
        found = evaluator._run(table)
        while True:
            part = list(itertools.islice(found, self.batch))
            if not part:
                return
            yield from_matches(part, schema)

    def record_batches(self, table: pa.Table, schema: Any) -> Iterator[pa.RecordBatch]:
        # At most ``batch`` Match objects alive at a time: the whole output as Python objects
        # (hundreds of bytes a match) is what a large output must not cost before it is Arrow.
        found = self.evaluator._run(table)
        while part := list(itertools.islice(found, self.batch)):
            yield record_batch(schema, from_matches(part, schema))


class KernelBackend:
    """The compiled kernel (``kernel/runner.py``'s ``PlanKernel``)."""

    name = "kernel"

    def __init__(self, evaluator: Evaluator, kernel: Any) -> None:
        self.evaluator = evaluator
        self.kernel = kernel

    def matches(self, table: pa.Table) -> Iterator[Match]:
        kernel = self.kernel
        schema = self.evaluator.output_schema()
        for chunk in kernel.process_table(table):
            yield from MatchRows(kernel.columns(chunk), schema, kernel.reports_partition)

    def columns(self, table: pa.Table) -> Iterator[MatchColumns]:
        kernel = self.kernel
        for chunk in kernel.process_table(table):
            yield kernel.columns(chunk)

    def record_batches(self, table: pa.Table, schema: Any) -> Iterator[pa.RecordBatch]:
        kernel = self.kernel
        for chunk in kernel.process_table(table):
            yield record_batch(schema, kernel.columns(chunk))


def known_rows(events: Any) -> int | None:
    """How many events an input reports holding (None: it does not say, e.g. an iterator)."""
    rows = getattr(events, "num_rows", None)
    if rows is not None:
        return int(rows)
    if type(events).__module__.startswith("pandas") or isinstance(events, (list, tuple)):
        return len(events)
    if isinstance(events, dict):
        return 1
    return None


def choose(evaluator: Evaluator, events: Any, typing: Any, arrow: bool) -> tuple[Backend, Iterator[pa.Table]]:
    """The backend that runs ``events`` (``arrow``: the caller wants Arrow output rather than
    ``Match`` objects) and the typed tables to give it. The only place the path is decided."""
    if evaluator._kernel is None and _may_start_kernel(evaluator):
        if evaluator.position == 0:
            events, start = _first_input(events, arrow)
        else:
            start = _later_input(evaluator, events)
        if start:
            evaluator._start_kernel()
    tables = iter_tables(events, typing)
    if evaluator._kernel is not None:
        return KernelBackend(evaluator, evaluator._kernel), tables
    return PythonBackend(evaluator), tables


def _may_start_kernel(evaluator: Evaluator) -> bool:
    """Whether ``auto`` may move this evaluator onto the kernel at all."""
    if evaluator.engine != "auto" or evaluator.type_labels:
        return False
    return supported(evaluator.plan)


def _first_input(events: Any, arrow: bool) -> tuple[Any, bool]:
    """For the first input: whether it starts the kernel. An input of unknown size (an
    iterator of events or batches) is read ahead, untyped, until that is known; the items read
    are given back in order (typing stays in stream order, so bad-row policies see every row
    after the rows before it were processed)."""
    from ceql.runtime.kernel.warm import COLD_MAX_ROWS, prefer_kernel, ready

    rows = known_rows(events)
    if rows is not None:
        return events, prefer_kernel(rows, arrow, rows >= KERNEL_MIN_ROWS)
    # Enough to know the input is large; while the machine code is not ready, enough to pay
    # for compiling it now.
    enough = KERNEL_MIN_ROWS if ready() else COLD_MAX_ROWS
    iterator = iter(events)
    ahead: list[Any] = []
    seen = 0
    for item in iterator:
        ahead.append(item)
        seen += item.num_rows if isinstance(item, (pa.RecordBatch, pa.Table)) else 1
        if seen >= enough:
            break
    # (Cut short, ``seen`` is enough: large once ready, else COLD_MAX_ROWS: compile now.)
    return itertools.chain(ahead, iterator), prefer_kernel(seen, arrow, seen >= KERNEL_MIN_ROWS)


def _later_input(evaluator: Evaluator, events: Any) -> bool:
    """An evaluator on the Python path moves to the kernel between inputs once the stream is
    long, the kernel's machine code is ready, and no partial match is in progress; not for
    inputs of a few events (``push`` one at a time is faster on the Python path)."""
    from ceql.runtime.kernel.warm import ready, warm_in_background

    rows = known_rows(events)
    if evaluator.position < KERNEL_MIN_ROWS or (rows is not None and rows < LATER_MIN_ROWS):
        return False
    if not ready():
        warm_in_background()
        return False
    return evaluator.is_idle()


_NOTICE = "_slow_path_notice"  # set on a plan once its slow path has been announced
logger = logging.getLogger("ceql")


def supported(plan: Any) -> bool:
    """Whether the compiled kernel evaluates this plan. When it does not, say so once per
    query: a ``SlowPathWarning`` and an INFO record on the ``ceql`` logger, naming the reason
    (``explain()`` names it too)."""
    from ceql.runtime.kernel import unsupported

    reason = unsupported(plan)
    if reason is None:
        return True
    if not plan.__dict__.get(_NOTICE):
        plan.__dict__[_NOTICE] = True
        message = (
            f"this query runs on the Python evaluator, not the compiled kernel (many times slower): the kernel "
            f"does not evaluate {reason}. Query: {plan.checked.text.strip()}"
        )
        logger.info(message)
        warnings.warn(message, SlowPathWarning, stacklevel=4)
    return False
