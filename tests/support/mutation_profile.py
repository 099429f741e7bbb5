"""A pytest plugin for mutation-testing runs (``-p tests.support.mutation_profile``; see docs/testing.md).

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


# ------------------------------------------------------------------ figures of a run
#
# `python -m tests.support.mutation_profile [mutants]`: the verdicts per module of the last mutmut run
# (read from mutmut's `*.meta` files under mutants/src), as the table in docs/testing.md.

_STATUS = {0: "survived", 1: "killed", 3: "killed", 5: "no tests", 33: "no tests", None: "not run"}
_STATUS.update({code: "timeout" for code in (24, -24, 36, 152, 255)})
_COLUMNS = ("killed", "survived", "timeout", "no tests", "not run")


def summary(root: str = "mutants") -> str:
    """A Markdown table: per mutated module, the mutants and their verdicts (other exit codes,
    such as a crash of the worker, are counted as "other")."""
    import glob
    import json
    from collections import Counter

    rows = ["| module | mutants | " + " | ".join(_COLUMNS) + " | other | survived / run |", "|---" * 9 + "|"]
    for path in sorted(glob.glob(os.path.join(root, "src", "**", "*.py.meta"), recursive=True)):
        codes = json.load(open(path, encoding="utf-8")).get("exit_code_by_key", {})
        counts = Counter(_STATUS.get(code, "other") for code in codes.values())
        ran = counts["killed"] + counts["survived"] + counts["timeout"]
        if not ran:
            continue
        module = os.path.relpath(path, os.path.join(root, "src"))[: -len(".meta")]
        cells = [str(len(codes))] + [str(counts[c]) for c in _COLUMNS] + [str(counts["other"])]
        rows.append(f"| {module} | " + " | ".join(cells) + f" | {100 * counts['survived'] / ran:.0f}% |")
    return "\n".join(rows)


if __name__ == "__main__":
    import sys

    print(summary(*sys.argv[1:]))
