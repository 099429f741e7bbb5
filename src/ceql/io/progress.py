"""Progress of a run: a bar with total, percentage and ETA, or a heartbeat line.

On a terminal a run shows a tqdm bar; its total is the input's size where that is known (the
bytes of CSV and JSON Lines files, the rows of Parquet files, the length of a data frame or
table), so the bar has a percentage and an ETA. When standard error is not a terminal (a log, a
pipe, a scheduler) a bar would only fill the log with carriage returns: a long run prints one
plain line every ``HEARTBEAT_S`` seconds instead, so a job is never silent for long; a short
run prints nothing.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from typing import Any, TextIO

#: Seconds between two heartbeat lines when standard error is not a terminal.
HEARTBEAT_S = 30.0


class ByteCounter:
    """Bytes read from input files so far, by every reader thread of this process (the text
    readers count what they read; ``ceql run`` compares it with the files' size)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.value = 0

    def add(self, count: int) -> None:
        with self._lock:
            self.value += count


#: The one counter the text readers (``io/formats/base.py``) add to.
INPUT_BYTES = ByteCounter()


class Progress:
    """Progress of one run, measured by ``measure()`` (bytes or events done) against ``total``
    (None: unknown, the bar then shows a count and a rate).

    ``interactive``: draw a bar (a terminal); otherwise print a heartbeat line every
    ``heartbeat_s`` seconds, from the first ``tick`` after that long. ``tick(matches)`` is
    called by the run as it goes (after each block of input); ``poll=True`` also refreshes the
    bar from a background thread, for runs that have no place to call ``tick`` (the Python
    API's lazy matches)."""

    def __init__(
        self,
        measure: Callable[[], int],
        total: int | None,
        *,
        unit: str = " events",
        desc: str = "ceql run",
        interactive: bool | None = None,
        stream: TextIO | None = None,
        heartbeat_s: float = HEARTBEAT_S,
        poll: bool = False,
        events: Callable[[], int] | None = None,
    ) -> None:
        self.measure = measure
        self.total = total
        self.unit = unit
        self.desc = desc
        self.stream = stream if stream is not None else sys.stderr
        self.interactive = _isatty(self.stream) if interactive is None else interactive
        self.heartbeat_s = heartbeat_s
        self.events = events  # the events done, for the heartbeat when ``measure`` counts bytes
        self.started = time.monotonic()
        self.last_beat = self.started
        self.matches = 0
        self.done_events = 0  # as ``tick`` last said
        self.bar: Any = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if self.interactive:
            from tqdm import tqdm

            scale = unit.strip() == "B"
            self.bar = tqdm(
                total=total,
                unit=unit if not scale else "B",
                unit_scale=total is None or total >= 10_000,  # "4/4", "1.2M/3.4M"
                unit_divisor=1024 if scale else 1000,
                file=self.stream,
                desc=desc,
                dynamic_ncols=True,
            )
        if poll:
            self._thread = threading.Thread(target=self._poll, name="ceql-progress", daemon=True)
            self._thread.start()

    def tick(self, matches: int | None = None, events: int | None = None) -> None:
        """The run moved on (``matches`` written, ``events`` read so far): redraw the bar, or
        print a heartbeat if one is due."""
        if matches is not None:
            self.matches = matches
        if events is not None:
            self.done_events = events
        with self._lock:
            done = self.measure()
            if self.bar is not None:
                self.bar.n = min(done, self.total) if self.total else done
                self.bar.set_postfix(matches=self.matches, refresh=False)
                self.bar.refresh()
                return
            now = time.monotonic()
            if now - self.last_beat >= self.heartbeat_s:
                self.last_beat = now
                print(self.heartbeat(done, now - self.started), file=self.stream, flush=True)

    def heartbeat(self, done: int, elapsed: float) -> str:
        """One line: ``ceql run: 1,200,000 events, 41% of the input, 310 matches, 30 s, about 43 s left``."""
        events = self.events() if self.events is not None else (self.done_events or done)
        parts = [f"{self.desc}: {events:,} events"]
        if self.total:
            share = min(done / self.total, 1.0)
            parts.append(f"{share:.0%} of the input")
        parts.append(f"{self.matches:,} matches")
        parts.append(f"{elapsed:.0f} s")
        if self.total and 0 < done < self.total:
            parts.append(f"about {elapsed * (self.total - done) / done:.0f} s left")
        return ", ".join(parts)

    def close(self, matches: int | None = None, finished: bool = True) -> None:
        """The run ended (``finished``: all the input was read): stop polling; close the bar,
        filled to its end when finished."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if matches is not None:
            self.matches = matches
        if self.bar is not None:
            with self._lock:
                done = self.measure()
                self.bar.n = self.total if finished and self.total else done
                self.bar.set_postfix(matches=self.matches, refresh=False)
                self.bar.close()
                self.bar = None

    def _poll(self) -> None:
        while not self._stop.wait(0.2):
            self.tick()


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # a closed or unusual stream
        return False


def input_size(events: Any) -> int | None:
    """The number of events of a sized input (a list, a pandas or polars frame, an Arrow table
    or record batch), None for an iterator or a reader."""
    rows = getattr(events, "num_rows", None)
    if isinstance(rows, int):
        return rows
    if isinstance(events, (list, tuple)) or type(events).__module__.split(".")[0] in ("pandas", "polars"):
        return len(events)
    return None


#: ``ceql run`` draws a bar only for inputs of at least this many bytes (short runs stay quiet).
BAR_MIN_BYTES = 8 << 20


def run_progress(paths: list[str], *, quiet: bool, stream: TextIO | None = None) -> Progress | None:
    """The progress of ``ceql run`` over input ``paths`` (``-``: standard input), or None.

    The total is the size of the input: the rows of Parquet files (from their metadata), else
    the bytes of the files, compared with the bytes the readers have read (``INPUT_BYTES``);
    standard input has no size (the bar counts events). On a terminal, a bar for inputs of
    ``BAR_MIN_BYTES`` or more; elsewhere a heartbeat line every ``HEARTBEAT_S`` seconds of a
    long run. ``--quiet``: nothing."""
    import os

    if quiet:
        return None
    stream = stream if stream is not None else sys.stderr
    files = [p for p in paths if p != "-"]
    size = sum(os.path.getsize(p) for p in files)
    interactive = _isatty(stream) and size >= BAR_MIN_BYTES
    parquet = bool(files) and all(p.lower().endswith((".parquet", ".pq")) for p in files)
    if "-" in paths or parquet:
        total = _parquet_rows(files) if parquet and "-" not in paths else None
        box: list[Progress] = []
        progress = Progress(lambda: box[0].done_events if box else 0, total, interactive=interactive, stream=stream)
        box.append(progress)
        return progress
    start = INPUT_BYTES.value
    return Progress(lambda: INPUT_BYTES.value - start, size, unit="B", interactive=interactive, stream=stream)


def _parquet_rows(files: list[str]) -> int | None:
    try:
        import pyarrow.parquet as pq

        return sum(pq.ParquetFile(p).metadata.num_rows for p in files)
    except Exception:  # noqa: BLE001 - an unreadable file is the reader's error to report
        return None
