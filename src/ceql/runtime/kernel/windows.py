"""Windows over a non-integer attribute (``WITHIN n [x]`` with ``x`` a double) on the kernel.

The kernel compares int64 window measures. For a double attribute it runs a looser integer
window and each complex event is then checked exactly (``postfilter.py``):

- the kernel's measure of an event is ``floor(x)`` (clipped to +-2**62, so infinities and huge
  values stay ordered; NaN and nulls are missing measures, as on the Python path);
- its window is ``n + 1``: ``l - f < n`` over the reals implies ``floor(l) - floor(f) < n + 1``
  (and clipping only shrinks differences), so every complex event in the real window is in the
  kernel's, and the kernel's pruning never drops one;
- each enumerated complex event is kept iff ``first > window_limit(last, n)``
  (``runtime/nodes.py``: exactly the Python path's test, ``last - first < n`` over the reals),
  vectorised where float arithmetic decides it and exact (``Fraction``) near the boundary.
"""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ceql.compile.plan import Plan
from ceql.runtime.ingest import measure_column
from ceql.runtime.kernel.values import Raw

#: Kept values: each event's window measure (double attribute windows), as the Python path reads it.
WINDOW = "\x00window"
_CLIP = float(2**62)


def inexact_window(plan: Plan) -> int | None:
    """The window size when the kernel must check it per complex event (an attribute window
    over an attribute that is not int64), else None."""
    within = plan.checked.query.within
    if within is None or within.kind != "attribute":
        return None
    if plan.catalog.arrow_types.get(within.attribute or "") == pa.int64():
        return None
    return int(within.value)


def measure_values(plan: Plan, table: pa.Table) -> Raw:
    """Each row's window measure as doubles (valid: present and not NaN)."""
    column = pc.cast(measure_column(plan, table), pa.float64())
    values = pc.fill_null(column, math.nan).to_numpy(zero_copy_only=False).astype(np.float64)
    return Raw("double", values, ~np.isnan(values))


def kernel_measures(raw: Raw) -> tuple[np.ndarray, np.ndarray]:
    """The kernel's int64 measures (floor, clipped) and which rows have none."""
    values = np.where(raw.valid, raw.data, 0.0)
    measures = np.floor(np.clip(values, -_CLIP, _CLIP)).astype(np.int64)
    return measures, ~raw.valid


def in_window(first: np.ndarray, last: np.ndarray, window: int) -> np.ndarray:
    """Whether ``last - first < window`` over the reals, for valid (non-NaN) doubles; the
    Python path's ``first > window_limit(last, window)`` exactly."""
    with np.errstate(invalid="ignore", over="ignore"):
        diff = last - first
        # Float rounding of the difference can only matter close to the bound.
        scale = np.maximum(np.maximum(np.abs(first), np.abs(last)), float(abs(window)) + 1.0)
        near = ~np.isfinite(diff) | (np.abs(diff - window) <= scale * 1e-12)
        keep = diff < window
    for i in np.flatnonzero(near):
        keep[i] = _exact(float(first[i]), float(last[i]), window)
    return keep


def _exact(first: float, last: float, window: int) -> bool:
    from ceql.runtime.nodes import window_limit

    return bool(first > window_limit(last, window))

