"""The ``ceql`` command run inside the test process: ``ceql.cli.main`` with its own standard
input, output and error and working folder, answered as ``subprocess.run`` would answer.

A child ``python -m ceql`` costs about a second of CPU before it reads anything (the
interpreter, pandas, pyarrow, the kernel's compiled functions); the quick tests ran dozens of
them. Tests of what only a separate process shows (signals, memory limits, argv bytes that
are not UTF-8, a link to the process's own standard output, the ``python -m ceql`` entry
point) keep starting one.
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from ceql.cli import main


def run_cli(*args: str, cwd: str | Path | None = None, stdin: str | None = None) -> subprocess.CompletedProcess:
    """``ceql *args`` in this process, in ``cwd``, reading ``stdin``: its exit status, standard
    output and standard error (text). An exception that escapes ``main`` (a traceback in a
    child) propagates, so the test fails on it."""
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", newline="")  # with .buffer, as sys.stdout
    err = io.StringIO()
    source = io.TextIOWrapper(io.BytesIO((stdin or "").encode("utf-8")), encoding="utf-8")
    with _folder(cwd), _stdin(source), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = main(list(args))
        except SystemExit as exit:  # argparse's errors and --help
            status = exit.code if isinstance(exit.code, int) else 2
    out.flush()
    return subprocess.CompletedProcess(["ceql", *args], status, out.buffer.getvalue().decode("utf-8"), err.getvalue())  # type: ignore[attr-defined]


@contextlib.contextmanager
def _folder(path: str | Path | None) -> Iterator[None]:
    before = os.getcwd()
    if path is not None:
        os.chdir(path)
    try:
        yield
    finally:
        os.chdir(before)


@contextlib.contextmanager
def _stdin(source: io.TextIOWrapper) -> Iterator[None]:
    before = sys.stdin
    sys.stdin = source
    try:
        yield
    finally:
        sys.stdin = before
