"""A pytest plugin for mutation-testing runs (``-p tests.mutation_profile``; see docs/testing.md).

Every Hypothesis test runs at most ``CEQL_MUTATION_EXAMPLES`` examples (default 25), with a
fixed seed, no example database and no shrinking: one mutant's test run stays short, and every
mutant (before and after a change of the suite) is judged on the same generated cases. The
normal suite never loads it.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, Phase, settings


def pytest_collection_modifyitems(session, config, items) -> None:
    cap = int(os.environ.get("CEQL_MUTATION_EXAMPLES", "25"))
    seen: set[int] = set()
    for item in items:
        test = getattr(item, "obj", None)
        current = getattr(test, "_hypothesis_internal_use_settings", None)
        if current is None or id(test) in seen:
            continue
        seen.add(id(test))
        test._hypothesis_internal_use_settings = settings(
            current,
            max_examples=min(current.max_examples, cap),
            derandomize=True,
            database=None,
            deadline=None,
            phases=(Phase.explicit, Phase.reuse, Phase.generate),
            suppress_health_check=list(HealthCheck),
        )
