"""Conditions between consecutive events, column-wise (issue 34).

A plan whose pattern is a contiguous sequence of single labelled events, ``T AS s : T AS d :
T AS b : T AS u``, optionally per ``PARTITION BY`` key, with conditions that compare one
attribute of one label with one of another (``d.price < s.price AND ...``), has at most one
complex event per event of its (sub-)stream: the k consecutive events of the sub-stream that end
there, if their types are the roles' and the comparisons hold. That is what ceql.sql's vector
path does with PREV: sort the batch's events by key (stably, so each key's events stay in
stream order), shift the columns by 1..k-1 rows and compare whole columns; no automaton, no
enumeration, no per-match gathering. The last k-1 events of each key are carried to the next
batch (with a window, only those still inside it).

Exactness: a comparison reads numbers of one storage (int with int, double with double; an
attribute some event types declare int and others double stays on the automaton) and is false
where a value is missing or NaN, as docs/semantics.md says. Matches come out in trigger order,
as the kernel's do (a trigger ends at most one complex event).
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ceql.compile.plan import Plan
from ceql.lang import ast
from ceql.runtime.kernel.compiled import chain_starts, group_by_code
from ceql.runtime.kernel.joins import attribute_compares, check_bound, only_condition, sequence_roles

_OPS: dict[str, Callable] = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "=": operator.eq,
    "==": operator.eq,
    "!=": operator.ne,
    "<>": operator.ne,
}


STATE_PREFIX = "chain."  # saved state: the carried events


@dataclass(frozen=True)
class ChainShape:
    """Roles (event type index, label) in sequence order and the comparisons between them:
    (operator, (role, attribute), (role, attribute))."""

    types: tuple[int, ...]
    labels: tuple[str, ...]
    compares: tuple[tuple[str, tuple[int, str], tuple[int, str]], ...]

    @property
    def attributes(self) -> list[str]:
        return sorted({side[1] for _, a, b in self.compares for side in (a, b)})


def chain_shape(source: Plan, plan: Plan, post: object | None, measures: object | None) -> ChainShape | None:
    """The chain this plan is (``plan``: the one the kernel runs, ``post``: its checks per
    complex event), or None when it needs the automaton."""
    if (
        post is None
        or plan.strategy != "ALL"
        or source.strategy != "ALL"
        or plan.consume != "NONE"
        or plan.limit is not None
        or (plan.projection is not None and plan.projection.kind != "star")
        or (plan.window_kind is not None and (plan.window_kind not in ("events", "time") or not plan.monotone))
        or len(plan.compiled.predicates)
        or plan.auto_partition is not None
    ):
        return None
    if not only_condition(post, window=True):
        return None
    if plan.window_kind is not None and int(plan.checked.query.within.value) < 1:
        return None
    formula = plan.formula
    if isinstance(formula, ast.Filter):
        formula = formula.body
    roles = sequence_roles(plan, formula, contiguous=True)
    if roles is None:
        return None
    types, labels = roles
    compares = attribute_compares(source, plan, post, types, labels, _OPS, ("int", "double"))
    if compares is None:
        return None
    storage = {name: column.storage for name, column in plan.catalog.columns.items()}
    if any(storage[a[1]] != storage[b[1]] for _, a, b in compares):
        return None
    return ChainShape(tuple(types), tuple(labels), tuple(compares))


class ContiguousChain:
    """The state between batches: the last k-1 events of each key (position, key code, type,
    window measure and the compared attributes; ``storages``: attribute -> "int" or "double")."""

    def __init__(
        self, shape: ChainShape, window: int | None, storages: dict[str, str], max_nodes: int | None = None
    ) -> None:
        self.shape = shape
        self.window = window
        self.max_nodes = max_nodes  # the carried events may not exceed it (as the automaton's nodes)
        self.k = len(shape.types)
        self.role_type = np.array(shape.types, dtype=np.int64)
        empty = np.zeros(0, dtype=np.int64)
        self.carry: dict[str, np.ndarray] = {"position": empty, "code": empty, "type": empty, "measure": empty}
        for name in shape.attributes:
            self.carry[f"value.{name}"] = np.zeros(0, dtype=np.float64 if storages[name] == "double" else np.int64)
            self.carry[f"valid.{name}"] = np.zeros(0, dtype=bool)

    def process(
        self,
        table: pa.Table,
        types: np.ndarray,
        positions: np.ndarray,
        measures: np.ndarray,
        missing: np.ndarray,
        codes: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The complex events a batch triggers: (trigger positions, key codes, positions (n, k)),
        in trigger order."""
        k = self.k
        carry = self.carry
        first = len(carry["position"])  # rows before this one are carried
        pos = np.concatenate([carry["position"], positions])
        code = np.concatenate([carry["code"], codes])
        kind = np.concatenate([carry["type"], types])
        measure = np.concatenate([carry["measure"], measures])
        gone = np.concatenate([np.zeros(first, dtype=bool), missing])
        values: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for name in self.shape.attributes:
            data, valid = _numbers(table.column(name))
            values[name] = (
                np.concatenate([carry[f"value.{name}"], data]),
                np.concatenate([carry[f"valid.{name}"], valid]),
            )
        rows = _grouped(code)  # each key's events together, in stream order
        starts = np.empty(max(len(rows) - (k - 1), 0), dtype=np.int64)
        count = chain_starts(
            rows, code, kind, measure, gone, self.role_type, first, -1 if self.window is None else self.window, starts
        )
        starts = starts[:count]
        for op, (ra, a), (rb, b) in self.shape.compares:
            if not len(starts):
                break
            left, right = rows[starts + ra], rows[starts + rb]
            va, ma = values[a]
            vb, mb = values[b]
            starts = starts[_OPS[op](va[left], vb[right]) & ma[left] & mb[right]]
        # One complex event per trigger: in trigger order (rows are in stream order, so marking
        # each start at its last row and reading the marks in row order sorts them, in O(n)).
        if len(starts) > 1:
            mark = np.full(len(pos), -1, dtype=np.int64)
            mark[rows[starts + (k - 1)]] = starts
            starts = mark[mark >= 0]
        matrix = np.column_stack([pos[rows[starts + q]] for q in range(k)]) if len(starts) else np.zeros((0, k), np.int64)
        keys = code[rows[starts]]
        self._carry_over(rows, code, pos, kind, measure, values)
        return matrix[:, -1].copy(), keys, matrix

    def _carry_over(self, rows, code, pos, kind, measure, values) -> None:
        """Keep each key's last k-1 events (those still in the window, with a window)."""
        k = self.k
        if len(rows):
            grouped = code[rows]
            # The index of each row within its key's run counted from the end: keep < k - 1.
            ends = np.flatnonzero(np.append(grouped[1:] != grouped[:-1], True))
            run_end = np.repeat(ends, np.diff(np.concatenate([[-1], ends])))
            keep = rows[run_end - np.arange(len(rows)) < k - 1]
            keep.sort()
            if self.window is not None and len(keep):
                # Older events of a key are a prefix of its run (measures never decrease).
                keep = keep[measure[rows].max() - measure[keep] < self.window]
        else:
            keep = rows
        check_bound(len(keep), self.max_nodes)  # (k-1 events per key: keys without a window)
        self.carry = {"position": pos[keep], "code": code[keep], "type": kind[keep], "measure": measure[keep]}
        for name, (data, valid) in values.items():
            self.carry[f"value.{name}"] = data[keep]
            self.carry[f"valid.{name}"] = valid[keep]

    # ------------------------------------------------------------------ state

    def export(self) -> dict[str, np.ndarray]:
        """The carried events (saved.py validates them)."""
        return {f"{STATE_PREFIX}{name}": array.copy() for name, array in self.carry.items()}

    def load(self, state: dict) -> None:
        """Restore ``export``'s arrays (checked by saved.check_state)."""
        self.carry = {name: np.asarray(state[f"{STATE_PREFIX}{name}"]) for name in self.carry}


def _grouped(code: np.ndarray) -> np.ndarray:
    """The rows with a key (code >= 0), grouped by key, each key's rows in stream order."""
    n = len(code)
    present = code[code >= 0]
    if not len(present):
        return np.zeros(0, dtype=np.int64)
    top = int(present.max()) + 1
    if present.min() == top - 1:  # one key (or none: an unpartitioned query)
        return np.flatnonzero(code >= 0)
    if top <= 4 * n + 1024:  # a counting sort, linear
        out = np.empty(len(present), dtype=np.int64)
        group_by_code(np.require(code, np.int64, ["C", "W"]), top, np.zeros(top + 1, dtype=np.int64), out)
        return out
    rows = np.flatnonzero(code >= 0)
    return rows[np.argsort(code[rows], kind="stable")]


def _numbers(column: pa.ChunkedArray | pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """A number column as numpy values and validity (NaN is missing)."""
    column = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if column.null_count:
        valid = column.is_valid().to_numpy(zero_copy_only=False)
        column = pc.fill_null(column, 0)
    else:
        valid = np.ones(len(column), dtype=bool)
    data = column.to_numpy(zero_copy_only=False)
    data = data.astype(np.float64 if data.dtype.kind == "f" else np.int64, copy=False)
    if data.dtype.kind == "f":
        valid = valid & ~np.isnan(data)
    return data, valid
