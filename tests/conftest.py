"""Shared fixtures: one local Spark session per test run (only when a test asks for it)."""

from __future__ import annotations

import os

import pytest


@pytest.fixture(scope="session")
def spark():
    from ceql.spark.session import java_available, session

    if not java_available():
        pytest.fail("Spark tests need Java 17+; .ci/run installs it (scripts/ensure_java.sh)")
    os.environ.setdefault("CEQL_SHUFFLE_PARTITIONS", "4")
    spark = session("local[2]")
    yield spark
    spark.stop()
