"""The PySpark worker daemon with ceql already loaded (``spark.python.daemon.module``).

PySpark starts one daemon per executor, which forks a Python worker for each task slot. The
stock daemon imports nothing, so every worker paid for importing ceql (pyarrow, numpy, the
compiler) and loading the compiled kernel's numba functions on its first task: seconds per
worker, the larger part of a small job. This daemon does it once, before forking, so workers
start with it done (fork shares the memory). ``ceql.spark.session()`` sets it; a session of
your own can set ``spark.python.daemon.module=ceql.spark.daemon`` (Spark must be able to
import ceql in the executors' Python either way).
"""

from __future__ import annotations


def warm_up() -> None:
    """Import ceql and load the kernel functions a typical query calls (from numba's cache).
    Nothing here may stop the daemon: a failure only means the workers warm up themselves."""
    try:
        import pyarrow as pa

        import ceql
        import ceql.spark.batch  # noqa: F401 - what the tasks run

        schema = ceql.declare(
            "CREATE STREAM S { EVENT A { k:int, t:primary_time }, EVENT B { k:int, t:primary_time } }"
        )
        table = pa.table({"event_type": ["A", "B", "A", "B"], "k": [1, 1, 2, 2], "t": [1, 2, 3, 4]})
        for text in (
            "SELECT * FROM S WHERE A ; B PARTITION BY [k] WITHIN 10 EVENTS",
            "SELECT * FROM S WHERE A ; B+ WITHIN 5 SECONDS",
        ):
            list(ceql.compile(text, schema).evaluator().process_table(table))
    except Exception:  # noqa: BLE001 - see the docstring
        pass


def hide_tracebacks() -> None:
    """A failing task reports its exception's message, not the worker's traceback (PySpark's
    ``SPARK_HIDE_TRACEBACK``, which its SQL setting only sets for some of its runners: the
    workers forked from here have it for all, the streaming state processor included), unless
    ``CEQL_SPARK_VERBOSE`` asks for Spark's traces."""
    import os

    if os.environ.get("CEQL_SPARK_VERBOSE", "").strip().lower() in ("", "0", "false", "no"):
        os.environ.setdefault("SPARK_HIDE_TRACEBACK", "1")


if __name__ == "__main__":
    hide_tracebacks()
    warm_up()
    from pyspark import daemon

    daemon.manager()
