"""The public engine API: compile a query, run it over events, or push events incrementally."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import IO, TYPE_CHECKING, Any, Literal, TypedDict, Union, overload

if sys.version_info >= (3, 11):
    from typing import Unpack
else:  # typing_extensions: a dependency on Python 3.10 only
    from typing_extensions import Unpack

from ceql.compile.plan import Plan, build_plan
from ceql.lang import CheckedQuery, Schema, analyze, parse_query
from ceql.log import logger
from ceql.match import Match
from ceql.runtime.evaluator import Evaluator

if TYPE_CHECKING:
    import pandas
    import polars
    import pyarrow

#: What ``Query.run`` takes as events: dicts with ``event_type`` (any iterable, a generator
#: included), a pandas DataFrame, Arrow data (a table, a record batch, a reader or an iterable
#: of batches).
Events = Union[
    Iterable[Mapping[str, Any]],
    "pandas.DataFrame",
    "pyarrow.Table",
    "pyarrow.RecordBatch",
    "pyarrow.RecordBatchReader",
    Iterable["pyarrow.RecordBatch"],
]
#: The ``output`` forms of ``Query.run``.
OUTPUTS = ("matches", "arrow", "pandas", "polars")
#: Where ``on_error="dead-letter"`` sends rejected rows: a function of each record, a text
#: stream, or a path.
DeadLetter = Union[Callable[[dict], Any], IO[str], str, "os.PathLike[str]", None]


class RunOptions(TypedDict, total=False):
    """The keyword options of ``Query.run`` besides ``output`` (its docstring says what each
    does; the last six go to ``Query.evaluator``), for the typed overloads of ``run``."""

    max_matches: int | None
    name: str
    on_error: str
    dead_letter: DeadLetter
    workers: int | None
    progress: bool
    engine: str
    type_labels: bool
    max_classes: int
    max_nodes: int
    max_states: int | None
    max_work: int | None


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
        labels in ``Match.labels``), ``max_classes`` (live partial-match classes per key),
        ``on_error`` and ``dead_letter`` (bad input rows, as for ``run``)."""
        return Evaluator(self.plan, **options)

    def output_schema(self, *, name: str = "query", type_labels: bool = False):
        """The Arrow schema of this query's matches (docs/guide.md, "Output"), times shown as
        integers in their declared unit; ``run(..., output="arrow")`` shows them as its input
        gives them."""
        from ceql.compile.output_schema import output_schema

        return output_schema(self.plan, name=name, type_labels=type_labels).arrow

    @overload
    def run(self, events: Events, *, output: Literal["matches"] = ..., **options: Unpack[RunOptions]) -> Matches: ...
    @overload
    def run(self, events: Events, *, output: Literal["arrow"], **options: Unpack[RunOptions]) -> pyarrow.Table: ...
    @overload
    def run(self, events: Events, *, output: Literal["pandas"], **options: Unpack[RunOptions]) -> pandas.DataFrame: ...
    @overload
    def run(self, events: Events, *, output: Literal["polars"], **options: Unpack[RunOptions]) -> polars.DataFrame: ...

    def run(
        self,
        events: Events,
        *,
        output: Literal["matches", "arrow", "pandas", "polars"] = "matches",
        max_matches: int | None = None,
        name: str = "query",
        on_error: str = "fail",
        dead_letter: DeadLetter = None,
        workers: int | None = None,
        progress: bool = False,
        **options: Any,
    ) -> Matches | pyarrow.Table | pandas.DataFrame | polars.DataFrame:
        """Matches over ``events`` (dicts with ``event_type``, a pandas DataFrame, or Arrow data)
        in trigger order: lazily as ``Match`` objects, or with ``output="arrow"`` as one Arrow
        table of the output schema (``name`` fills its ``query`` column; no Python object per
        match where the compiled kernel runs the query), or with ``output="pandas"`` (or
        ``"polars"``, if installed) as a flat data frame: labels, partition keys and measures
        as columns, differences of times as durations (docs/guide.md, "Output"). Options as
        for ``evaluator``.

        ``progress=True`` shows a progress bar on standard error (tqdm), with a percentage and
        an ETA when the input's size is known (a list, a data frame, an Arrow table).

        Bad input rows (docs/input.md, "Bad rows"): ``on_error="fail"`` raises EventError at
        the first one; ``"skip"`` leaves them out and counts them; ``"dead-letter"`` also hands
        each one's record (source, 0-based ``row``, reason, input) to ``dead_letter``: a
        function of the record, a text stream, or a path (a JSON Lines file, written anew).
        The matches iterator counts rejected rows (``rejected``, ``reasons``, ``summary()``).
        With ``max_matches``, raise LimitError instead of producing more than that many (None
        or 0: no limit). ``workers=N`` evaluates a large Arrow or pandas input on N cores when
        the plan splits by partition key or time window (docs/kernel.md, "Every core"), with the
        same result in the same order; None or 1: one core."""
        from ceql.runtime import parallel
        from ceql.runtime.limits import limit_matches, too_many_matches

        if output not in OUTPUTS:
            raise ValueError(f"output must be one of {', '.join(map(repr, OUTPUTS))}, not {output!r}")
        if output in ("pandas", "polars"):
            from ceql.io import frames

            convert = frames.converter(output)  # before the run: a missing polars fails at once
            table = self.run(
                events, output="arrow", max_matches=max_matches, name=name, on_error=on_error,
                dead_letter=dead_letter, workers=workers, progress=progress, **options,
            )  # fmt: skip
            return convert(table, self.checked.interval_measures)
        if progress:
            return _with_progress(
                self, events, output=output, max_matches=max_matches, name=name, on_error=on_error,
                dead_letter=dead_letter, workers=workers, **options,
            )  # fmt: skip
        sink, opened = _dead_letter_sink(on_error, dead_letter)
        evaluator = self.evaluator(on_error=on_error, dead_letter=sink, **options)
        _log_workers(self.plan, events, workers, on_error, options)  # (small or unsized inputs)
        if on_error != "fail" and workers is not None and workers > 1:
            parallel.say_one_core(workers, f"on_error={on_error!r} runs on one core", stacklevel=3)
        elif parallel.use_workers(self.plan, events, workers, options):
            runner = parallel.ParallelKernel(self.plan, workers or 1, evaluator=evaluator)
            if output == "arrow":
                return runner.arrow(events, name=name, max_matches=max_matches)  # stops at the bound
            found = runner.matches(events)
            return Matches(limit_matches(found, max_matches) if max_matches else found, evaluator, opened)
        if output == "arrow":
            try:
                table = evaluator.arrow(events, name=name)
            finally:
                if opened is not None:
                    opened.close()
            if max_matches and table.num_rows > max_matches:
                raise too_many_matches(max_matches)
            return table
        found = evaluator.run(events)
        return Matches(limit_matches(found, max_matches) if max_matches else found, evaluator, opened)

    def explain(self, dot: bool = False) -> str:
        """The normalised query, predicates, passes and automaton, as text (or Graphviz DOT)."""
        from ceql.explain import explain

        return explain(self, dot=dot)


def compile(text: str, schema: Schema) -> Query:  # noqa: A001 - the natural name of the API
    """Parse, analyse and compile a query against a schema."""
    return Query(analyze(parse_query(text), schema, text))


class Matches:
    """The matches of ``Query.run``, lazily, in trigger order; ``rejected``, ``reasons`` and
    ``summary()`` count the bad input rows left out so far (``on_error`` "skip" or
    "dead-letter")."""

    def __init__(self, matches: Iterator[Match], evaluator: Evaluator, opened: Any = None) -> None:
        self._matches = matches
        self._evaluator = evaluator
        self._opened = opened

    def __iter__(self) -> Iterator[Match]:
        # Iterated directly (no Python call per match), unless a file must be closed at the end.
        return self if self._opened is not None else self._matches

    def __next__(self) -> Match:
        try:
            return next(self._matches)
        except BaseException:
            if self._opened is not None:
                self._opened.close()
                self._opened = None
            raise

    def _close_with(self, closer: Any) -> None:
        """Also close ``closer`` (with ``close(finished)``) when the matches end or fail: the
        progress bar of ``run(..., progress=True)``."""
        inner = self._matches

        def closing() -> Iterator[Match]:
            finished = False
            count = 0
            try:
                for match in inner:
                    count += 1
                    closer.matches = count
                    yield match
                finished = True
            finally:
                closer.close(matches=count, finished=finished)

        self._matches = closing()

    @property
    def rejected(self) -> int:
        """Input rows left out as bad, so far."""
        return self._evaluator.errors.rejected

    @property
    def reasons(self) -> dict[str, int]:
        """Rejected rows by category (``unknown event type``, ``bad value``, ``out of order``...)."""
        return dict(self._evaluator.errors.reasons)

    def summary(self) -> str:
        """``0 rejected``, or ``3 rejected (1 bad value, 2 out of order)`` as ``ceql run`` says."""
        return self._evaluator.errors.summary()


def _log_workers(plan: Plan, events: Any, workers: int | None, on_error: str, options: dict) -> None:
    """Say on the ``ceql`` logger why ``workers=N`` was not used, when it was not."""
    if workers is not None and workers > 1 and logger.isEnabledFor(logging.INFO):
        from ceql.log import workers_declined

        reason = workers_declined(plan, events, workers, on_error, options)
        if reason is not None:
            logger.info("workers=%d not used: %s; the run takes one core", workers, reason)


def _with_progress(query: Query, events: Any, *, output: str, **run: Any) -> Any:
    """``Query.run`` with a progress bar on standard error: the events the evaluator has taken
    (polled from a thread, as the run has no other place to report), against the input's size
    where known."""
    from ceql.io.progress import Progress, input_size

    total = input_size(events)
    evaluators: list[Evaluator] = []
    original = query.evaluator

    def evaluator(**options: Any) -> Evaluator:  # the run's own evaluator, whose position we read
        made = original(**options)
        evaluators.append(made)
        return made

    # The run builds its evaluator through ``query.evaluator``: shadowed for this call only
    # (on the workers path the position moves at the end; the bar then jumps to it).
    query.evaluator = evaluator  # type: ignore[method-assign]
    try:
        bar = Progress(lambda: evaluators[0].position if evaluators else 0, total, desc="ceql", poll=True)
        try:
            result = query.run(events, output=output, **run)  # type: ignore[call-overload]
        except BaseException:
            bar.close(finished=False)
            raise
    finally:
        del query.evaluator  # back to the method
    if isinstance(result, Matches):
        result._close_with(bar)
    else:
        bar.close(matches=result.num_rows)
    return result


def _dead_letter_sink(on_error: str, dead_letter: Any) -> tuple[Any, Any]:
    """The dead-letter sink of a run and the file it opened (a path is written anew)."""
    if dead_letter is None or callable(dead_letter) or hasattr(dead_letter, "write"):
        return dead_letter, None
    if on_error != "dead-letter":
        return None, None
    handle = open(os.fspath(dead_letter), "w", encoding="utf-8")  # noqa: SIM115 - closed by the run
    return handle, handle
