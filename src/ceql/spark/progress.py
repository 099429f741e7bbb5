"""What a Spark run tells its user: progress lines while it runs, one clear message when it fails.

- ``Progress``: a thread that polls ``SparkContext.statusTracker()`` and prints a line per
  finished stage and per 10% of the tasks of a long stage, each under the name of the step that
  runs it (``progress.step("reading the input")`` puts the jobs that follow in a job group), and
  a heartbeat: when nothing was printed for ``heartbeat`` seconds (20) while a stage runs, a
  line with its tasks done and running, so that a run is never silent for more than 30 s (one
  task may take minutes). ``watch(spark)`` runs only the heartbeat, for every job of a session
  (``ceql.spark.session(progress=True)``);
- ``ticking``: a line every 20 s while something with no Spark stage runs (the JVM's start);
- ``job_failure``: the cause of a failed Spark action as a ``SparkJobError`` with one message:
  the Python exception inside a Py4J / ``PythonException`` trace (a ceql error raised in a
  task keeps its text), the message of ``raise_error`` (``USER_RAISED_EXCEPTION``), else the
  first line of Spark's own error.
"""

from __future__ import annotations

import contextlib
import re
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from ceql.errors import CeqlError


class SparkJobError(CeqlError):
    """A Spark job failed; the message is its cause, without the JVM and Python traces."""

    def __init__(self, message: str, kind: str | None = None) -> None:
        super().__init__(message)
        self.kind = kind  # the Python exception's class name (e.g. "ceql.errors.EventError"), if any


# The last line of a Python traceback: "module.Class: message" (or "Class: message").
_EXCEPTION_LINE = re.compile(
    r"^(?P<kind>[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt)): ?(?P<message>.*)$"
)
_RAISED = re.compile(r"\[USER_RAISED_EXCEPTION\] (?P<message>.*?)(?: SQLSTATE: \w+)?$", re.MULTILINE)
_SPARK_CLASS = re.compile(r"^\[(?P<cls>[A-Z_.]+)\] ?")


def job_failure(exc: BaseException) -> SparkJobError:
    """The cause of a failed Spark action, as one message (see the module docstring)."""
    text = str(exc)
    python = _python_cause(text)
    if python is not None:
        kind, message = python
        if kind.startswith("ceql."):
            return SparkJobError(message, kind)
        return SparkJobError(f"a Spark task failed: {kind.rsplit('.', 1)[-1]}: {message}", kind)
    raised = _RAISED.search(text)
    if raised:
        return SparkJobError(raised.group("message").strip())
    first = next((line.strip() for line in text.splitlines() if line.strip()), type(exc).__name__)
    return SparkJobError(f"the Spark job failed: {first}")


def _python_cause(text: str) -> tuple[str, str] | None:
    """The exception that ends the last Python traceback in ``text`` (class, message; the
    message may span several lines, up to the JVM's stack or a blank line)."""
    start = text.rfind("Traceback (most recent call last):")
    if start >= 0:
        lines = text[start:].splitlines()[1:]
    else:  # the worker showed only its exception (hideTraceback, what ceql's session sets)
        start = max(text.rfind("thrown from the Python worker"), text.rfind("PythonException: "))
        if start < 0:
            return None
        rest = text[start:]
        if rest.startswith("PythonException: "):  # "...PythonException: module.Error: message"
            lines = rest[len("PythonException: ") :].splitlines()
        else:  # "...thrown from the Python worker. Please see ...", then the exception's line
            lines = rest.splitlines()[1:]
    for index, line in enumerate(lines):
        if line.startswith((" ", "\t")) or not line:
            continue  # the traceback's frames and their source lines
        match = _EXCEPTION_LINE.match(line)
        if not match:
            continue
        message = [match.group("message")]
        for more in lines[index + 1 :]:
            if (
                not more.strip()
                or more.startswith("\tat ")
                or more.startswith("\t... ")
                or more.startswith("at ")
            ):
                break
            if _EXCEPTION_LINE.match(more) and ("Traceback" in more or more.startswith(("org.", "java."))):
                break
            message.append(more)
        return match.group("kind"), "\n".join(message).strip()
    return None


class Progress:
    """Progress lines for the jobs of a Spark run (see the module docstring): ``attach(spark)``
    once the session exists, ``step(name)`` before the actions of each step, ``close()`` at
    the end. While attached, Spark's own log is off: a failed task would print its trace there
    (the run reports the cause itself, see ``job_failure``)."""

    def __init__(
        self,
        enabled: bool = True,
        prefix: str = "ceql run",
        write: Callable[[str], Any] | None = None,
        interval: float = 0.5,
        heartbeat: float = 20.0,
        every_job: bool = False,
    ) -> None:
        self.enabled = enabled
        self.prefix = prefix
        self.write = write or (lambda line: print(line, file=sys.stderr, flush=True))
        self.interval = interval
        self.heartbeat = heartbeat
        # Every job of the context, heartbeat lines only (a session's own reporter), rather
        # than the jobs of this run's steps.
        self.every_job = every_job
        self._last_line = time.perf_counter()
        self.context = None
        self.started = time.perf_counter()
        self._groups: list[tuple[str, str]] = []  # (job group, step name)
        self._tenths: dict[int, int] = {}  # stage id -> tenths of its tasks reported
        self._done: set[int] = set()
        self._since: dict[int, float] = {}  # every_job: active stage id -> when first seen
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def attach(self, spark) -> None:
        """Start reporting on the jobs of ``spark``'s context."""
        self.context = spark.sparkContext
        if not self.every_job:  # a session's reporter leaves the user's log level alone
            self.context.setLogLevel("OFF")
        if self.enabled:
            self._thread = threading.Thread(target=self._run, name="ceql-progress", daemon=True)
            self._thread.start()

    def close(self) -> None:
        """Stop reporting (after a last look at what finished) and restore the log level."""
        if self.context is None:
            return
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._thread = None
            self._poll()
        if not self.every_job:
            self.context.setLocalProperty("spark.jobGroup.id", None)
            self.context.setLocalProperty("spark.job.description", None)
            self.context.setLogLevel("ERROR")
        self.context = None

    def step(self, name: str) -> None:
        """The jobs started from now on (by this thread) belong to the step ``name``."""
        if self.context is None or not self.enabled:
            return
        group = f"ceql-{id(self)}-{len(self._groups)}"
        with self._lock:
            self._groups.append((group, name))
        self.context.setJobGroup(group, name)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self._poll()
            except Exception:  # noqa: BLE001 - progress lines must never fail the run
                return

    def _poll(self) -> None:
        context = self.context
        if context is None:
            return
        tracker = context.statusTracker()
        running: list[tuple[str, Any]] = []
        if self.every_job:
            now = time.perf_counter()
            active = sorted(tracker.getActiveStageIds())
            # SparkStageInfo has no start time: a stage's is when it was first seen active.
            self._since = {stage_id: self._since.get(stage_id, now) for stage_id in active}
            for stage_id in active:
                stage = tracker.getStageInfo(stage_id)
                # Only stages that have run a while: short jobs stay quiet.
                if stage is not None and now - self._since[stage_id] >= self.heartbeat:
                    running.append((stage.name.split(" at ")[0] or "job", stage))
        else:
            with self._lock:
                groups = list(self._groups)
            for group, name in groups:
                for job_id in sorted(tracker.getJobIdsForGroup(group)):
                    job = tracker.getJobInfo(job_id)
                    for stage_id in sorted(job.stageIds) if job else ():
                        stage = tracker.getStageInfo(stage_id)
                        self._report(name, stage)
                        if stage is not None and stage.stageId not in self._done and stage.numActiveTasks:
                            running.append((name, stage))
        self._beat(running)

    def _beat(self, running: list[tuple[str, Any]]) -> None:
        """A line per running stage when nothing was printed for ``heartbeat`` seconds (for a
        run's steps, also between stages: the driver plans, or Spark starts workers)."""
        now = time.perf_counter()
        if now - self._last_line < self.heartbeat:
            return
        elapsed = now - self.started
        if not running:
            with self._lock:
                step = self._groups[-1][1] if self._groups else None
            if step is not None and not self.every_job:
                self._line(f"{self.prefix}: [{elapsed:6.1f} s] {step}: preparing the next Spark stage")
            return
        for name, stage in running:
            self.write(
                f"{self.prefix}: [{elapsed:6.1f} s] {name}: stage {stage.stageId}: "
                f"{stage.numCompletedTasks}/{stage.numTasks} tasks done, {stage.numActiveTasks} running"
            )
        self._last_line = now

    def _line(self, text: str) -> None:
        self._last_line = time.perf_counter()
        self.write(text)

    def _report(self, name: str, stage) -> None:
        if stage is None or stage.stageId in self._done or stage.numTasks == 0:
            return
        total, completed = stage.numTasks, stage.numCompletedTasks
        elapsed = time.perf_counter() - self.started
        if completed >= total:
            self._done.add(stage.stageId)
            self._line(
                f"{self.prefix}: [{elapsed:6.1f} s] {name}: stage {stage.stageId} done ({total} tasks)"
            )
            return
        tenths = completed * 10 // total
        if total >= 10 and tenths > self._tenths.get(stage.stageId, 0):
            self._tenths[stage.stageId] = tenths
            self._line(
                f"{self.prefix}: [{elapsed:6.1f} s] {name}: stage {stage.stageId}: "
                f"{completed}/{total} tasks ({tenths * 10}%)"
            )


@contextlib.contextmanager
def ticking(
    what: str, write: Callable[[str], Any] | None = None, every: float = 20.0, prefix: str = "ceql run"
) -> Iterator[None]:
    """A line every ``every`` seconds while the block runs, for what has no stages to poll (the
    JVM's start, 10 to 60 s on a loaded machine): "prefix: [  20.0 s] what: still running"."""
    say = write or (lambda line: print(line, file=sys.stderr, flush=True))
    stop = threading.Event()
    started = time.perf_counter()

    def tick() -> None:
        while not stop.wait(every):
            say(f"{prefix}: [{time.perf_counter() - started:6.1f} s] {what}: still running")

    thread = threading.Thread(target=tick, name="ceql-ticker", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


_WATCHED: dict[int, Progress] = {}


def watch(spark, heartbeat: float = 20.0) -> Progress:
    """A heartbeat for every job of ``spark``'s context, on standard error (one per context):
    a line per stage that has run ``heartbeat`` seconds since the last line, with its tasks
    done and running."""
    context = spark.sparkContext
    key = id(context)
    found = _WATCHED.get(key)
    if found is not None and found.context is context:
        return found
    progress = Progress(prefix="ceql", heartbeat=heartbeat, every_job=True, interval=1.0)
    progress.attach(spark)
    _WATCHED[key] = progress
    return progress
