"""The kernel's JIT: whether its compiled functions are ready, and compiling them ahead of use.

numba compiles the kernel's functions on their first call and caches the machine code on disk
(``__pycache__`` next to compiled.py, or ``NUMBA_CACHE_DIR``), keyed by the source, the Python
and numba versions and the CPU. A fresh installation has no cache: the first call compiles for
several seconds. So that a first query does not wait for that:

- ``warm()`` compiles every function the kernel calls, by running small queries that reach all
  of them, and leaves a stamp beside numba's cache saying so (``python -m
  ceql.runtime.kernel.warm``; ``scripts/setup.sh`` runs it);
- ``ready()`` says whether the stamp matches this source, Python, numba and CPU (or the
  functions are already loaded in this process);
- with ``engine="auto"`` the evaluator runs small inputs on the Python path while the kernel is
  not ready, and starts ``warm()`` in a detached background process (once per process; a lock
  file keeps concurrent processes from compiling twice). ``CEQL_JIT_WARM=0`` turns the
  background compilation off.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

#: Below this many events, "auto" prefers the Python path to compiling the kernel now.
COLD_MAX_ROWS = 100_000
STAMP = "ceql-kernel-ready.json"
LOCK = "ceql-kernel-warming.lock"
LOCK_STALE_SECONDS = 900

_started = False


def _dispatchers() -> list:
    from ceql.runtime.kernel import compiled as k

    return [
        k.run, k.compact_mark, k.compact_build, k.dedupe_mask, k.hash_codes, k.hash_insert, k.segment_sums,
        k.select_supports,
    ]


def cache_dir() -> Path | None:
    """Where numba caches the kernel's machine code (None: caching unavailable)."""
    from ceql.runtime.kernel import compiled as k

    try:
        return Path(k.run._cache.cache_path)
    except AttributeError:  # pragma: no cover - numba without a cache locator for the file
        return None


def fingerprint() -> dict:
    """What the cached machine code depends on: the kernel's source, Python, numba, the CPU."""
    import llvmlite.binding as llvm
    import numba

    from ceql.runtime.kernel import compiled as k

    source = Path(k.__file__).read_bytes()
    return {
        "source": hashlib.sha256(source).hexdigest(),
        "python": list(sys.version_info[:2]),
        "numba": numba.__version__,
        "cpu": llvm.get_host_cpu_name(),
        "features": llvm.get_host_cpu_features().flatten(),
    }


def loaded() -> bool:
    """Whether the kernel's main function is compiled or loaded in this process."""
    from ceql.runtime.kernel import compiled as k

    return bool(getattr(k.run, "signatures", None))


def ready() -> bool:
    """Whether the first kernel call will load machine code rather than compile it."""
    if loaded():
        return True
    folder = cache_dir()
    if folder is None:
        return False
    try:
        stamp = json.loads((folder / STAMP).read_text())
    except (OSError, ValueError):
        return False
    return stamp == fingerprint()


def warm() -> bool:
    """Compile (or load) every kernel function by running small queries through the kernel;
    write the stamp. Returns whether the stamp was written."""
    _exercise()
    folder = cache_dir()
    if folder is None:
        return False
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / f"{STAMP}.{os.getpid()}"
        tmp.write_text(json.dumps(fingerprint()))
        os.replace(tmp, folder / STAMP)
    except OSError:
        return False
    return True


def _exercise() -> None:
    """Run queries that call every compiled function with the argument types real runs use
    (Arrow input, partitions, windows and compaction, projections, measures)."""
    import pyarrow as pa

    import ceql
    from ceql.runtime.kernel import engine
    from ceql.runtime.kernel.runner import PlanKernel

    schema = ceql.declare(
        "CREATE STREAM S { EVENT A { k:int, v:double }, EVENT B { k:int, v:double }, EVENT C { k:int, v:double } }"
    )
    n = 64
    table = pa.table(
        {
            "event_type": pa.array(["A", "B", "B", "C"] * (n // 4)),
            "k": pa.array([i % 3 for i in range(n)], pa.int64()),
            "v": pa.array([float(i % 7) for i in range(n)], pa.float64()),
        }
    )
    queries = [
        "SELECT * FROM S WHERE A AS a ; B+ AS b ; C AS c WITHIN 8 EVENTS",
        "SELECT a, SUM(b.v) AS s, COUNT(b) AS n FROM S WHERE A AS a : B:+ AS b : C AS c PARTITION BY [k]",
        "SELECT NONE FROM S WHERE A ; C PARTITION BY [k]",
        "SELECT NEXT * FROM S WHERE A ; B WITHIN 4 EVENTS",
    ]
    saved = engine.COMPACT_MIN
    engine.COMPACT_MIN = 8  # compaction runs on small inputs too
    try:
        for text in queries:
            runner = PlanKernel(ceql.compile(text, schema).plan)
            runner.arrow(table)
            runner.kernel.compact()
    finally:
        engine.COMPACT_MIN = saved


def warm_in_background() -> bool:
    """Start ``warm()`` in a detached process, unless one is running or was started by this
    process; returns whether one was started."""
    global _started
    if _started or os.environ.get("CEQL_JIT_WARM") == "0":
        return False
    _started = True
    folder = cache_dir()
    if folder is None:
        return False
    lock = folder / LOCK
    try:
        folder.mkdir(parents=True, exist_ok=True)
        if lock.exists() and time.time() - lock.stat().st_mtime < LOCK_STALE_SECONDS:
            return False
        lock.write_text(str(os.getpid()))
        command = [
            sys.executable,
            "-c",
            "import pathlib, sys\n"
            "from ceql.runtime.kernel.warm import warm\n"
            "try:\n    warm()\nfinally:\n    pathlib.Path(sys.argv[1]).unlink(missing_ok=True)\n",
            str(lock),
        ]
        subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            close_fds=True,
        )
    except OSError:
        return False
    return True


def prefer_kernel(rows: int | None, arrow: bool, large: bool) -> bool:
    """For ``engine="auto"``: whether an input of ``rows`` events (None: unknown, e.g. an
    iterator; ``large``: enough for the kernel to pay off) should start the kernel. Arrow
    output uses it whenever its machine code is ready; matches only on large inputs. While it
    is not ready, inputs under COLD_MAX_ROWS events run on the Python path (and the kernel
    compiles in the background)."""
    if not arrow and not large:
        return False
    if ready():
        return True
    if rows is not None and rows >= COLD_MAX_ROWS:
        return True
    warm_in_background()
    return False


def main() -> None:
    """``python -m ceql.runtime.kernel.warm``: compile the kernel now."""
    started = time.perf_counter()
    ok = warm()
    where = cache_dir()
    print(f"kernel compiled in {time.perf_counter() - started:.1f} s; cache {where}" + ("" if ok else " (no stamp)"))


if __name__ == "__main__":
    main()
