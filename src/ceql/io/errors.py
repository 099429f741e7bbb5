"""The rejected-row policy of the readers: ``ceql.runtime.rejects`` (shared with the Python API)."""

from ceql.runtime.rejects import (
    CATEGORIES,
    POLICIES,
    ErrorPolicy,
    RejectList,
    RejectSink,
    RowError,
    classify,
)

__all__ = ["CATEGORIES", "POLICIES", "ErrorPolicy", "RejectList", "RejectSink", "RowError", "classify"]
