"""The compiled evaluation kernel (numba): the per-event loop, tECS and enumeration as arrays.

``KernelEvaluator`` (engine.py) evaluates symbols, positions, measures and key codes into flat
complex-event arrays; ``PlanKernel`` (runner.py) feeds it from Arrow tables for a Plan and turns
its output into Arrow tables or Match objects. ``unsupported(plan)`` says which plans stay on the
Python evaluator.

The path of one typed table (``runtime/batches.py``): ``PlanKernel.process_table(table)`` yields
``KernelMatches`` chunks (the per-complex-event checks applied, measures computed), and
``PlanKernel.columns(chunk)`` turns each into ``MatchColumns`` (``runtime/arrow.py``: projected,
LIMIT applied, partition keys, raw measures) for ``record_batch`` or ``MatchRows``. A PlanKernel
owns all its state (numpy arrays, kept values, key table): one per thread or worker.
"""

from ceql.runtime.kernel.engine import KernelEvaluator, KernelMatches
from ceql.runtime.kernel.runner import PlanKernel, is_kernel_state, kernel_notes, kernel_path, unsupported

__all__ = [
    "KernelEvaluator", "KernelMatches", "PlanKernel", "is_kernel_state", "kernel_notes", "kernel_path", "unsupported",
]
