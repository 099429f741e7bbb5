"""Shared fixtures (one local Spark session per test run, only when a test asks for it) and the
markers that define the test subsets (see `scripts/test.sh --help`)."""

from __future__ import annotations

import importlib.util
import os

import pytest
from hypothesis import settings

# The test command CI runs (scripts/test.sh without --all) generates its cases from fixed seeds,
# so a submission passes or fails for its own code; plain pytest and `--all` explore new cases
# on every run (the 10,000-case runs are where new bugs are found).
settings.register_profile("ci", derandomize=True, database=None)
settings.load_profile(os.environ.get("CEQL_HYPOTHESIS_PROFILE", "default"))
# Under `ci` a property test of more than 100 examples runs a share of them (at least 100), so
# the check of every change stays short; plain pytest and `--all` run the full counts.
# CEQL_CI_EXAMPLES=1 runs the full counts from the fixed seeds.
CI_EXAMPLES = float(os.environ.get("CEQL_CI_EXAMPLES", "0.5"))
CI_FLOOR = 100

HAVE_SPARK = importlib.util.find_spec("pyspark") is not None
if not HAVE_SPARK:  # a checkout installed without the extra: the rest still runs (see the header)
    collect_ignore_glob = ["test_spark_*.py"]


def pytest_report_header(config: pytest.Config) -> str | None:
    if not HAVE_SPARK:
        return "pyspark is not installed (extra ceql[spark]): tests/test_spark_*.py are not collected"
    return None


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects anything
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark tests by what they need, so the quick subset needs no hand-kept list: ``spark``
    (uses the Spark session), ``property`` (a Hypothesis test), ``bench`` (benchmark smoke runs)."""
    for item in items:
        # (A test parametrized with engine="spark" asks for the session inside, by name.)
        on_spark = getattr(getattr(item, "callspec", None), "params", {}).get("engine") == "spark"
        if "spark" in getattr(item, "fixturenames", ()) or on_spark:
            item.add_marker(pytest.mark.spark)
        if "spark" in getattr(item, "fixturenames", ()) or on_spark or item.path.name.startswith("test_spark_"):
            # Under pytest-xdist (scripts/test.sh runs `-n auto --dist loadgroup`), every Spark test
            # runs on one worker: one local session (one JVM) for the run, as without xdist.
            item.add_marker(pytest.mark.xdist_group("spark"))
        if getattr(getattr(item, "obj", None), "is_hypothesis_test", False):
            item.add_marker(pytest.mark.property)
            if os.environ.get("CEQL_HYPOTHESIS_PROFILE") == "ci" and CI_EXAMPLES < 1:
                _ci_examples(item.obj)
        if item.path.name == "test_benchmarks.py":
            item.add_marker(pytest.mark.bench)


def _ci_examples(test) -> None:
    current = getattr(test, "_hypothesis_internal_use_settings", None)
    if current is None or getattr(test, "_ceql_ci_examples", False):
        return
    test._ceql_ci_examples = True  # once per function, however many items it has
    if current.max_examples > CI_FLOOR:
        share = max(CI_FLOOR, int(current.max_examples * CI_EXAMPLES))
        test._hypothesis_internal_use_settings = settings(current, max_examples=share)


@pytest.fixture(scope="session")
def spark():
    from ceql.spark.session import java_available, session

    if not java_available():
        pytest.fail("Spark tests need Java 17+; .ci/run installs it (scripts/ensure_java.sh)")
    os.environ.setdefault("CEQL_SHUFFLE_PARTITIONS", "4")
    spark = session("local[2]", progress=False)
    yield spark
    spark.stop()
