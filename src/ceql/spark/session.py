"""A Spark session configured for ceql (local mode by default)."""

from __future__ import annotations

import contextlib
import os
import shutil
import sys


def java_available() -> bool:
    """Whether a Java runtime is on PATH or JAVA_HOME (Spark needs Java 17 or newer)."""
    if os.environ.get("JAVA_HOME") and os.path.exists(os.path.join(os.environ["JAVA_HOME"], "bin", "java")):
        return True
    return shutil.which("java") is not None


# A driver JVM for a small input: compile with C1 only and collect with one thread. A JVM's
# start-up is mostly its JIT compilers' and GC threads' work (a bare session that reads a
# 10-row CSV: 15.6 CPU s with Java 17's defaults, 9.2 with these); long jobs want C2's code.
LIGHT_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


def session(
    master: str | None = None,
    app_name: str = "ceql",
    *,
    progress: bool = True,
    light_jvm: bool = False,
    start_lines: str | None = "",
    **conf: str,
):
    """Get or create a SparkSession for ceql: Arrow on, the RocksDB state store (needed by
    transformWithStateInPandas), the workers on this Python interpreter. Spark's web UI and
    console progress bar stay as Spark sets them unless ``progress=False`` (what ``ceql run``
    does: it prints its own progress lines); with ``progress=True`` the JVM's start gets a ceql
    line every 20 s while it lasts, and a stage that runs 20 s or more also gets a ceql line on standard error every 20 s (its tasks done and running), so a
    long task is never silent. ``light_jvm``: the driver's JVM starts with ``LIGHT_JVM`` (for
    small inputs: ``ceql run`` sets it below 64 MiB; it only acts when this call starts the
    JVM, and not over ``spark.driver.extraJavaOptions`` of your own). ``start_lines``: the
    prefix of the lines printed every 20 s while the session starts (``ceql run`` and ``ceql
    sql`` give their own, or None for none; by default "ceql" with ``progress``, else none).
    ``conf``: more Spark settings."""
    if not java_available():
        from ceql.errors import CeqlError

        raise CeqlError(
            "Spark needs Java 17 or newer: install it (e.g. apt-get install openjdk-17-jre-headless) "
            "or set JAVA_HOME"
        )
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.appName(app_name)
        .master(master or os.environ.get("CEQL_SPARK_MASTER", "local[*]"))
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.sql.shuffle.partitions", os.environ.get("CEQL_SHUFFLE_PARTITIONS", "8"))
        .config(
            "spark.sql.streaming.stateStore.providerClass",
            "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
        )
        # Commit state as a changelog, not a full RocksDB snapshot per micro-batch (much cheaper
        # per batch; snapshots are still taken in the background).
        .config("spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled", "true")
        .config("spark.driver.memory", os.environ.get("CEQL_DRIVER_MEMORY", "2g"))
        # Workers forked with ceql loaded (ceql.spark.daemon): no import and JIT per worker.
        .config("spark.python.daemon.module", "ceql.spark.daemon")
    )
    if not verbose():
        # A failing task reports its exception's message, not the worker's traceback.
        builder = builder.config("spark.sql.execution.pyspark.udf.hideTraceback.enabled", "true")
    if not progress:
        builder = builder.config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
    if light_jvm and "spark.driver.extraJavaOptions" not in conf:
        builder = builder.config("spark.driver.extraJavaOptions", LIGHT_JVM)
    for key, value in conf.items():
        builder = builder.config(key, value)
    from ceql.spark.progress import ticking

    # Starting the JVM takes 10 to 60 s and has no stage to report: a line every 20 s (the one
    # place that says so, for find's session and the CLI's alike).
    prefix = ("ceql" if progress else None) if start_lines == "" else start_lines
    with ticking("starting Spark", prefix=prefix) if prefix else contextlib.nullcontext():
        spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    if not verbose():
        quiet_task_failures(spark)
    if progress:  # a long task is never silent: a heartbeat line every 20 s (ceql.spark.progress)
        from ceql.spark.progress import watch

        watch(spark)
    return spark


VERBOSE = "CEQL_SPARK_VERBOSE"
# Loggers that print a failed task's (or stream's) Java stack at ERROR, although the failure
# reaches the caller anyway as the exception of the action (or of awaitTermination).
_TASK_FAILURE_LOGGERS = (
    "org.apache.spark.executor.Executor",
    "org.apache.spark.scheduler.TaskSetManager",
    "org.apache.spark.util.Utils",  # "Aborting task" (a write's task)
    "org.apache.spark.sql.execution.datasources.v2.DataWritingSparkTask",
    "org.apache.spark.sql.execution.datasources.FileFormatWriter",
    "org.apache.spark.sql.execution.datasources.v2.WriteToDataSourceV2Exec",
    "org.apache.spark.sql.execution.datasources.v2.AppendDataExec",
    "org.apache.spark.sql.execution.streaming.runtime.StreamExecution",
    "org.apache.spark.sql.execution.streaming.runtime.MicroBatchExecution",
    "org.apache.spark.sql.execution.streaming.StreamExecution",
    "org.apache.spark.sql.execution.streaming.MicroBatchExecution",
)


def verbose() -> bool:
    """Whether Spark's own traces of failed tasks are wanted (``CEQL_SPARK_VERBOSE=1``, or
    ``ceql run --verbose``): the Python worker's traceback and the Java stack at ERROR."""
    return os.environ.get(VERBOSE, "").strip().lower() not in ("", "0", "false", "no")


def quiet_task_failures(spark) -> None:
    """Turn off the log lines in which Spark repeats a failed task's Java stack (about 25 lines
    at ERROR per failure): the error reaches the caller as one message (``job_failure``). A
    failure here only leaves them on."""
    try:
        jvm = spark.sparkContext._jvm
        off = jvm.org.apache.logging.log4j.Level.OFF
        for name in _TASK_FAILURE_LOGGERS:
            jvm.org.apache.logging.log4j.core.config.Configurator.setLevel(name, off)
    except Exception:  # noqa: BLE001 - only log lines are at stake (e.g. Spark Connect: no JVM)
        pass
