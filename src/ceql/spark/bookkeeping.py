"""The bookkeeping columns of ``ceql run --engine spark``'s rows: where each input row came from
(file index, line), what became of it, and why. Shared by the reader (``spark/cli.py``) and the
writers (``spark/files.py``), which import it rather than each other."""

from __future__ import annotations

FILE, LINE, KIND, REASON, INPUT, ORDER = "__file", "__line", "__kind", "__reason", "__input", "__order"
#: The kinds of rows ``read_events`` yields (its ``__kind`` column).
ACCEPTED, REJECTED, WARNING = 0, 1, 2

__all__ = ["ACCEPTED", "FILE", "INPUT", "KIND", "LINE", "ORDER", "REASON", "REJECTED", "WARNING"]
