"""The ``ceql`` logger: what a run decided, for users who turn it on.

``logging.getLogger("ceql")`` carries, at INFO, which engine path a query took (the compiled
kernel, the Python evaluator, the workers) and why workers were not used, and at WARNING the
fallbacks and input warnings. ceql attaches only a ``NullHandler`` (the library convention), so
nothing is printed unless the application configures logging::

    import logging
import os
from typing import Any
    logging.basicConfig()
    logging.getLogger("ceql").setLevel(logging.INFO)
"""

from __future__ import annotations

import logging
import os
from typing import Any

#: The package's logger; modules log through it (or a child, ``ceql.<part>``).
logger = logging.getLogger("ceql")
logger.addHandler(logging.NullHandler())


def workers_declined(plan: Any, events: Any, workers: int | None, on_error: str, options: dict) -> str | None:
    """Why ``Query.run(..., workers=N)`` with N > 1 runs on one core because of its input (None:
    it uses workers, was not asked to, or ``runtime/parallel`` says why itself: the plan, the
    engine or the bad-row policy, with a warning)."""
    from ceql.runtime import parallel

    if workers is None or workers <= 1 or on_error != "fail":
        return None
    if options.get("engine", "auto") == "python" or options.get("type_labels") or os.environ.get("CEQL_KERNEL") == "0":
        return None
    if parallel.split_of(plan) is None:
        return None
    rows = parallel.rows_of(events)
    if rows is None:
        return "the input is not an Arrow table or a pandas DataFrame (its size is unknown)"
    if rows < parallel.MIN_ROWS:
        return f"the input has {rows:,} events, fewer than {parallel.MIN_ROWS:,}"
    return None
