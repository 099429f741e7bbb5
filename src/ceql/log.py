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
    """Why ``Query.run(..., workers=N)`` with N > 1 runs on one core (None: it uses workers, or
    was not asked to), in the words of ``runtime/parallel.use_workers``' rules."""
    from ceql.runtime import parallel

    if workers is None or workers <= 1 or parallel.use_workers(plan, events, workers, options) and on_error == "fail":
        return None
    if on_error != "fail":
        return f"on_error={on_error!r} (bad rows are handled on one core)"
    if options.get("engine", "auto") == "python" or options.get("type_labels"):
        return "engine='python' or type_labels=True (workers run the compiled kernel)"
    if os.environ.get("CEQL_KERNEL") == "0":
        return "CEQL_KERNEL=0 (workers run the compiled kernel)"
    rows = parallel.rows_of(events)
    if rows is None:
        return "the input is not an Arrow table or a pandas DataFrame (its size is unknown)"
    if rows < parallel.MIN_ROWS:
        return f"the input has {rows:,} events, fewer than {parallel.MIN_ROWS:,}"
    from ceql.runtime.kernel import unsupported

    reason = unsupported(plan)
    if reason is not None:
        return f"the compiled kernel does not evaluate {reason}"
    # split_of's other rules: conditions across events and measures, the key's type, CONSUME BY,
    # the window (docs/kernel.md, "Every core").
    return (
        "the plan cannot be split across workers (conditions across events or measures, a key "
        "that is not one integer attribute, CONSUME BY, or no time window; docs/kernel.md, 'Every core')"
    )
