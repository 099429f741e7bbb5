"""Measures and conditions over the kernel's complex events, column-wise.

A batch of complex events is flat (``KernelMatches``: offsets into positions and label-set ids);
the values of their events come from the kept values (values.py). A ``Frame`` gives, per label,
which events carry it, and the per-match reductions the expressions need: counts, first and last
events, sums, minima and maxima over the match offsets (numpy; float sums in stream order in
compiled code). Expressions are evaluated on whole columns with the exact rules of
docs/semantics.md (sections 3, 4 and 6): integers stay exact (int64 arithmetic whose overflow
is detected; the rows that overflow are computed as Python ints), ``/`` truncates, ``%`` keeps
the dividend's sign, a missing value or NaN read from an event is missing, a division by zero is
missing, and a comparison with a missing value is false. What has no exact column-wise form
(several events per label in a comparison over several labels, strings in MIN/MAX, values that
mix ints and doubles, ...) is computed per complex event in Python, with the same semantics.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from ceql.compile.predicates import NUMPY_COMPARE
from ceql.compile.values import MISSING, arith, compare
from ceql.lang import ast
from ceql.lang.visit import walk
from ceql.runtime.kernel.values import Raw

I64_MIN = -(2**63)
I64_MAX = 2**63 - 1
EXACT_FLOAT_INT = 2**53  # ints up to this size convert to double exactly


class Fallback(Exception):
    """An expression has no exact column-wise evaluation here: compute it per complex event."""


# ====================================================================== columns


@dataclass
class Col:
    """A column of values: ``kind`` int (int64), float (float64), bool, str (object array) or
    obj (Python values, for what the other kinds cannot hold exactly); ``valid`` false where
    the value is missing."""

    kind: str
    data: np.ndarray
    valid: np.ndarray

    def __len__(self) -> int:
        return len(self.data)

    def take(self, index: np.ndarray, present: np.ndarray | None = None) -> Col:
        """Rows ``index`` (with ``present`` false: missing)."""
        safe = np.where(index >= 0, index, 0) if len(self.data) else np.zeros(len(index), dtype=np.int64)
        if len(self.data) == 0:
            data = np.zeros(len(index), dtype=self.data.dtype)
            valid = np.zeros(len(index), dtype=bool)
        else:
            data = self.data[safe]
            valid = self.valid[safe] & (index >= 0)
        if present is not None:
            valid &= present
        return Col(self.kind, data, valid)

    def objects(self) -> list:
        """The values as Python objects (None where missing)."""
        values = self.data.tolist()
        if self.valid.all():
            return values
        return [v if ok else None for v, ok in zip(values, self.valid.tolist())]

    def numeric(self) -> bool:
        return self.kind in ("int", "float")


def constant(value: Any, n: int) -> Col:
    if isinstance(value, bool):
        return Col("bool", np.full(n, value, dtype=bool), np.ones(n, dtype=bool))
    if isinstance(value, int):
        if I64_MIN <= value <= I64_MAX:
            return Col("int", np.full(n, value, dtype=np.int64), np.ones(n, dtype=bool))
        return _objects([value] * n)
    if isinstance(value, float):
        return Col("float", np.full(n, value, dtype=np.float64), np.ones(n, dtype=bool))
    return Col("str", np.full(n, value, dtype=object), np.ones(n, dtype=bool))


def _objects(values: list) -> Col:
    """A column of Python values (MISSING and None are missing)."""
    data = np.empty(len(values), dtype=object)
    data[:] = [None if v is MISSING else v for v in values]
    valid = np.array([v is not None and v is not MISSING for v in values], dtype=bool)
    return Col("obj", data, valid)


def event_column(raw: Raw) -> Col:
    """The column of an attribute's values as events carry them (NaN read from an event is a
    missing value; an attribute declared int by the event's type is an int)."""
    if raw.storage == "int":
        return Col("int", raw.data, raw.valid)
    if raw.storage == "boolean":
        return Col("bool", raw.data, raw.valid)
    if raw.storage == "string":
        return Col("str", raw.data, raw.valid)
    valid = raw.valid & ~np.isnan(raw.data)
    as_int = raw.as_int
    if as_int is None or not (as_int & valid).any():
        return Col("float", raw.data, valid)
    if np.array_equal(as_int & valid, valid) and np.all(np.abs(raw.data[valid]) < 2.0**63):
        return Col("int", np.where(valid, raw.data, 0).astype(np.int64), valid)
    values = [
        (int(v) if i else v) if ok else None for v, i, ok in zip(raw.data.tolist(), as_int.tolist(), valid.tolist())
    ]
    return _objects(values)


# ====================================================================== a batch of matches


def compiler_only(labels: tuple[str, ...]) -> bool:
    """Whether an event reported under ``labels`` carries only the compiler's own (NUL-prefixed)
    labels, such as the event a ``NOT(E FILTER c)`` reads: it is not a position of the match."""
    return bool(labels) and all(label[0] == "\x00" for label in labels)


class Frame:
    """A batch of complex events and the values of their events."""

    def __init__(
        self,
        offsets: np.ndarray,
        label_ids: np.ndarray | None,
        label_sets: list[tuple[str, ...]],
        values: Callable[[str], Raw],
    ) -> None:
        self.offsets = np.asarray(offsets, dtype=np.int64)
        self.n = len(self.offsets) - 1
        self.events = int(self.offsets[-1] - self.offsets[0]) if self.n >= 0 else 0
        self.base = int(self.offsets[0]) if self.n >= 0 else 0
        self.starts = self.offsets[:-1] - self.base
        self.ends = self.offsets[1:] - self.base
        self.label_ids = label_ids
        self.label_sets = label_sets
        self._values = values
        self._columns: dict[str, Col] = {}
        self._has: dict[str | None, np.ndarray] = {}
        self._cumulative: dict[str | None, tuple] = {}
        self._selections: dict[tuple, tuple] = {}
        self._objects: dict[str, list] = {}
        self._segment: np.ndarray | None = None
        self._parent: tuple[Frame, np.ndarray] | None = None
        self._private_sets: np.ndarray | None | bool = False  # False: not computed yet

    @property
    def lengths(self) -> np.ndarray:
        return self.ends - self.starts

    def subframe(self, offsets: np.ndarray, index: np.ndarray) -> Frame:
        """A frame over some of these events (``index``: relative event indexes, grouped by
        ``offsets``); their values are read from this frame."""
        index = np.asarray(index, dtype=np.int64)
        label_ids = self.label_ids[self.base + index] if self.label_ids is not None else None
        sub = Frame(offsets, label_ids, self.label_sets, lambda attribute: self._values(attribute))
        sub._parent = (self, index)
        return sub

    @property
    def segment(self) -> np.ndarray:
        """The match of every event."""
        if self._segment is None:
            self._segment = np.repeat(np.arange(self.n, dtype=np.int64), self.lengths)
        return self._segment

    def column(self, attribute: str) -> Col:
        found = self._columns.get(attribute)
        if found is None:
            if self._parent is not None:
                parent, index = self._parent
                found = parent.column(attribute).take(index)
            else:
                found = event_column(self._values(attribute))
            self._columns[attribute] = found
        return found

    def has(self, label: str | None) -> np.ndarray:
        """Whether each event carries ``label`` (None: every event)."""
        found = self._has.get(label)
        if found is None:
            if label is None:
                # Every event of the match: not those reported only under the compiler's own
                # (NUL-prefixed) labels, such as the event a NOT(E FILTER c) reads.
                private = self._private()
                found = ~private[self.label_ids] if private is not None and self.events else np.ones(self.events, dtype=bool)
            else:
                table = np.array([label in labels for labels in self.label_sets] or [False], dtype=bool)
                ids = self.label_ids if self.label_ids is not None else np.zeros(self.events, np.int64)
                found = table[ids] if self.events else np.zeros(0, dtype=bool)
            self._has[label] = found
        return found

    def _bounds(self, label: str | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per match: the number of ``label`` events before it and up to its end, and the
        indexes of every ``label`` event."""
        found = self._cumulative.get(label)
        if found is None:
            has = self.has(label)
            cum = np.zeros(self.events + 1, dtype=np.int64)
            np.cumsum(has, out=cum[1:])
            found = self._cumulative[label] = (cum[self.starts], cum[self.ends], np.flatnonzero(has))
        return found

    def _private(self) -> np.ndarray | None:
        """Per label set: whether it holds only the compiler's own labels (None: no such set,
        or no labels). Computed once per frame: count, first, last and has(None) ask for it."""
        if self._private_sets is False:
            private = None
            if self.label_ids is not None:
                private = np.array([compiler_only(labels) for labels in self.label_sets], dtype=bool)
                private = private if private.any() else None
            self._private_sets = private
        return self._private_sets

    def count(self, label: str | None) -> np.ndarray:
        if label is None and self._private() is None:
            return self.lengths
        lo, hi, _ = self._bounds(label)
        return hi - lo

    def first(self, label: str | None) -> np.ndarray:
        """The index of each match's first event carrying ``label`` (-1: none)."""
        if label is None and self._private() is None:
            return np.where(self.lengths > 0, self.starts, -1)
        lo, hi, where = self._bounds(label)
        if len(where) == 0:
            return np.full(self.n, -1, dtype=np.int64)
        return np.where(hi > lo, where[np.minimum(lo, len(where) - 1)], -1)

    def last(self, label: str | None) -> np.ndarray:
        if label is None and self._private() is None:
            return np.where(self.lengths > 0, self.ends - 1, -1)
        lo, hi, where = self._bounds(label)
        if len(where) == 0:
            return np.full(self.n, -1, dtype=np.int64)
        return np.where(hi > lo, where[np.maximum(hi - 1, 0)], -1)

    def objects(self, attribute: str) -> list:
        """Python values of an attribute per event (None: missing)."""
        found = self._objects.get(attribute)
        if found is None:
            found = self._objects[attribute] = self.column(attribute).objects()
        return found

    def label_events(self, match: int) -> dict[str | None, list[int]]:
        """Label -> the indexes of the match's events carrying it, in stream order (None: all)."""
        lo, hi = int(self.starts[match]), int(self.ends[match])
        out: dict[str | None, list[int]] = {None: list(range(lo, hi))}
        ids = self.label_ids
        for e in range(lo, hi):
            for label in self.label_sets[int(ids[e])] if ids is not None else ():
                out.setdefault(label, []).append(e)
        return out


# ====================================================================== segment reductions


def _selected(frame: Frame, label: str | None, attribute: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The values of the events of ``label`` with a value of ``attribute``, and the start and
    end of each match among them."""
    key = (label, attribute)
    found = frame._selections.get(key)
    if found is None:
        col = frame.column(attribute)
        mask = frame.has(label) & col.valid
        if mask.all():
            found = (col.data, frame.starts, frame.ends)
        else:
            cum = np.zeros(len(mask) + 1, dtype=np.int64)
            np.cumsum(mask, out=cum[1:])
            found = (col.data[mask], cum[frame.starts], cum[frame.ends])
        frame._selections[key] = found
    return found


def segment_extreme(frame: Frame, label: str | None, attribute: str, func: str) -> Col:
    col = frame.column(attribute)
    if not col.numeric():
        raise Fallback("MIN/MAX of a non-numeric column")
    values, lo, hi = _selected(frame, label, attribute)
    some = hi > lo
    out = np.zeros(frame.n, dtype=col.data.dtype)
    if some.any():
        reduce = np.minimum if func == "MIN" else np.maximum
        out[some] = reduce.reduceat(values, lo[some])
    return Col(col.kind, out, some)


def segment_sum(frame: Frame, label: str | None, attribute: str) -> tuple[Col, np.ndarray]:
    """SUM over each match's ``label`` events with a value, and how many there were."""
    from ceql.runtime.kernel.compiled import segment_sums

    col = frame.column(attribute)
    if not col.numeric():
        raise Fallback("SUM of a non-numeric column")
    values, lo, hi = _selected(frame, label, attribute)
    count = hi - lo
    some = count > 0
    if col.kind == "float":
        out = np.zeros(frame.n, dtype=np.float64)
        segment_sums(values, lo, hi, out)  # in stream order, as on the Python path
        return Col("float", out, some), count
    out = np.zeros(frame.n, dtype=np.int64)
    if some.any():
        bound = float(np.abs(values.astype(np.float64)).max(initial=0.0)) * float(count.max())
        if bound >= 2.0**62:
            # An int sum that might leave int64: exact Python ints for those matches.
            exact = [sum(values[a:b].tolist()) if b > a else 0 for a, b in zip(lo.tolist(), hi.tolist())]
            return _fit([v if s else None for v, s in zip(exact, some.tolist())]), count
        out[some] = np.add.reduceat(values, lo[some])
    return Col("int", out, some), count


def _fit(values: list) -> Col:
    """Python ints (or None) as an int column when they fit in int64, else as objects."""
    if all(v is None or I64_MIN <= v <= I64_MAX for v in values):
        data = np.array([0 if v is None else v for v in values], dtype=np.int64)
        return Col("int", data, np.array([v is not None for v in values], dtype=bool))
    return _objects(values)


# ====================================================================== arithmetic


def negate(col: Col) -> Col:
    if col.kind == "float":
        return Col("float", -col.data, col.valid)
    if col.kind == "int":
        risky = col.valid & (col.data == I64_MIN)
        if risky.any():
            return _fit([-v if ok else None for v, ok in zip(col.data.tolist(), col.valid.tolist())])
        return Col("int", -col.data, col.valid)
    raise Fallback("negation of a non-numeric column")


def arithmetic(op: str, left: Col, right: Col) -> Col:
    """``left op right`` with the semantics of compile/values.arith."""
    if not (left.numeric() and right.numeric()):
        raise Fallback("arithmetic on a non-numeric column")
    valid = left.valid & right.valid
    a, b = left.data, right.data
    with np.errstate(all="ignore"):
        if left.kind == "int" and right.kind == "int":
            return _int_arithmetic(op, a, b, valid)
        a = a.astype(np.float64, copy=False)
        b = b.astype(np.float64, copy=False)
        if op == "+":
            return Col("float", a + b, valid)
        if op == "-":
            return Col("float", a - b, valid)
        if op == "*":
            return Col("float", a * b, valid)
        valid = valid & (b != 0)
        safe = np.where(b != 0, b, 1.0)
        if op == "/":
            return Col("float", a / safe, valid)
        return Col("float", np.fmod(a, safe), valid)


def _int_arithmetic(op: str, a: np.ndarray, b: np.ndarray, valid: np.ndarray) -> Col:
    if op == "+":
        out = a + b
        risky = ((a ^ out) & (b ^ out)) < 0
    elif op == "-":
        out = a - b
        risky = ((a ^ b) & (a ^ out)) < 0
    elif op == "*":
        out = a * b
        small = 2**31
        risky = ~((a > -small) & (a < small) & (b > -small) & (b < small))
    else:
        valid = valid & (b != 0)
        safe = np.where(b == 0, 1, np.where(b == -1, 1, b))
        flip = b == -1  # x / -1 is -x, x % -1 is 0 (C's INT64_MIN / -1 would trap)
        if op == "/":
            quotient = np.floor_divide(a, safe)
            quotient += ((a - quotient * safe) != 0) & ((a < 0) != (safe < 0))
            out = np.where(flip, -a, quotient)
            risky = flip & (a == I64_MIN)
        else:
            out = np.where(flip, 0, np.fmod(a, safe))
            risky = np.zeros(len(a), dtype=bool)
    risky &= valid
    if risky.any():
        exact = out.astype(object)
        for i in np.flatnonzero(risky).tolist():
            exact[i] = arith(op, int(a[i]), int(b[i]))
        values = [v if ok else None for v, ok in zip(exact.tolist(), valid.tolist())]
        return _fit(values)
    return Col("int", out, valid)


# ====================================================================== comparisons


def compare_columns(op: str, left: Col, right: Col) -> np.ndarray:
    """``left op right`` per row with the semantics of compile/values.compare: false when a
    side is missing or NaN; a string and a number are never equal and have no order."""
    valid = left.valid & right.valid
    kinds = {left.kind, right.kind}
    if "obj" in kinds:
        out = np.zeros(len(valid), dtype=bool)
        lv, rv = left.data.tolist(), right.data.tolist()
        for i in np.flatnonzero(valid).tolist():
            out[i] = compare(op, lv[i], rv[i])
        return out
    if "str" in kinds:
        if kinds != {"str"}:
            return valid & (op == "!=")
        a = np.where(valid, left.data, "")
        b = np.where(valid, right.data, "")
        return valid & NUMPY_COMPARE[op](a, b).astype(bool)
    a, b = left.data, right.data
    if left.kind == "bool":
        a = a.astype(np.int64)
    if right.kind == "bool":
        b = b.astype(np.int64)
    if a.dtype != b.dtype:
        # An int against a double: exact while the int converts exactly, else per row.
        ints, floats = (a, b) if a.dtype == np.int64 else (b, a)
        wide = valid & ((ints > EXACT_FLOAT_INT) | (ints < -EXACT_FLOAT_INT)) & ~np.isnan(floats)
        with np.errstate(invalid="ignore"):
            out = valid & NUMPY_COMPARE[op](a.astype(np.float64), b.astype(np.float64))
        if wide.any():
            lv, rv = a.tolist(), b.tolist()
            for i in np.flatnonzero(wide).tolist():
                out[i] = compare(op, lv[i], rv[i])
    else:
        with np.errstate(invalid="ignore"):
            out = valid & NUMPY_COMPARE[op](a, b)
    if a.dtype == np.float64:
        out &= ~np.isnan(a)
    if b.dtype == np.float64:
        out &= ~np.isnan(b)
    return out


# ====================================================================== expressions (match level)


def _labels_of(expr: ast.Node) -> set[str]:
    return {node.label for node in walk(expr) if isinstance(node, ast.Attr) and node.label}


class Expressions:
    """Evaluates expressions per match: ``x.a`` reads the match's (single) x event."""

    def __init__(self, frame: Frame) -> None:
        self.frame = frame

    def value(self, expr: ast.Expr, pick: dict[str, np.ndarray] | None = None) -> Col:
        """The expression's column; ``pick`` maps labels to the event read for ``x.a`` per row
        (default: the first x event of each match)."""
        frame = self.frame
        if isinstance(expr, ast.Literal):
            return constant(expr.value, frame.n)
        if isinstance(expr, ast.Attr):
            if expr.label is None:
                raise Fallback("an attribute without a label")
            index = pick[expr.label] if pick is not None and expr.label in pick else frame.first(expr.label)
            return frame.column(expr.name).take(index)
        if isinstance(expr, ast.Neg):
            return negate(self.value(expr.operand, pick))
        if isinstance(expr, ast.Arith):
            return arithmetic(expr.op, self.value(expr.left, pick), self.value(expr.right, pick))
        if isinstance(expr, ast.Aggregate):
            return self.aggregate(expr)
        raise Fallback(f"{type(expr).__name__} in a column-wise expression")

    def aggregate(self, node: ast.Aggregate) -> Col:
        frame = self.frame
        if node.func == "COUNT":
            return Col("int", frame.count(node.label), np.ones(frame.n, dtype=bool))
        attribute = node.attr or ""
        if node.func == "FIRST":
            return frame.column(attribute).take(frame.first(node.label))
        if node.func == "LAST":
            return frame.column(attribute).take(frame.last(node.label))
        if node.func in ("MIN", "MAX"):
            return segment_extreme(frame, node.label, attribute, node.func)
        total, count = segment_sum(frame, node.label, attribute)
        if node.func == "SUM":
            return total
        if total.kind == "float":
            with np.errstate(all="ignore"):
                return Col("float", total.data / np.maximum(count, 1), total.valid)
        if total.kind == "int" and not (np.abs(total.data[total.valid]) > EXACT_FLOAT_INT).any():
            return Col("float", total.data / np.maximum(count, 1), total.valid)
        # Python's int / int is correctly rounded for any size.
        sums = total.objects()
        return _objects([s / c if s is not None else None for s, c in zip(sums, count.tolist())])


# ====================================================================== per-match Python fallback


class _Row:
    """One complex event for the Python evaluation: label -> its events, values by attribute."""

    def __init__(self, frame: Frame, match: int) -> None:
        self.frame = frame
        self.events = frame.label_events(match)

    def of(self, label: str | None) -> list[int]:
        return self.events.get(label, [])

    def get(self, attribute: str, event: int) -> Any:
        value = self.frame.objects(attribute)[event]
        return MISSING if value is None else value


def _row_aggregate(node: ast.Aggregate, row: _Row) -> Any:
    events = row.of(node.label)
    if node.func == "COUNT":
        return len(events)
    if node.func in ("FIRST", "LAST"):
        if not events:
            return MISSING
        return row.get(node.attr or "", events[0] if node.func == "FIRST" else events[-1])
    values = [v for v in (row.get(node.attr or "", e) for e in events) if v is not MISSING]
    if not values:
        return MISSING
    if node.func == "MIN":
        return min(values)
    if node.func == "MAX":
        return max(values)
    total = values[0]
    for value in values[1:]:
        total = total + value
    return total if node.func == "SUM" else total / len(values)


def _row_value(expr: ast.Expr, row: _Row, bound: dict[str, int], previous: int | None, many: set[str]) -> Any:
    if isinstance(expr, ast.Literal):
        return expr.value
    if isinstance(expr, ast.Attr):
        label = expr.label or ""
        if label in bound:
            return row.get(expr.name, bound[label])
        events = row.of(label)
        if label in many:
            return tuple(None if v is MISSING else v for v in (row.get(expr.name, e) for e in events))
        return row.get(expr.name, events[0]) if events else MISSING
    if isinstance(expr, ast.Prev):
        return row.get(expr.attr, previous) if previous is not None else MISSING
    if isinstance(expr, ast.Aggregate):
        return _row_aggregate(expr, row)
    if isinstance(expr, ast.Neg):
        value = _row_value(expr.operand, row, bound, previous, many)
        return MISSING if value is MISSING else -value
    if isinstance(expr, ast.Arith):
        return arith(
            expr.op,
            _row_value(expr.left, row, bound, previous, many),
            _row_value(expr.right, row, bound, previous, many),
        )
    raise TypeError(f"unknown expression node {type(expr).__name__}")


def _row_compare(node: ast.Compare, row: _Row) -> bool:
    """Universal over the events of the labels read (x.a); with PREV(x.a), over every x event
    after the first, paired with the one before it (docs/semantics.md 3.1, 3.4)."""
    prev_label = next((n.label for n in walk(node) if isinstance(n, ast.Prev)), None)
    labels = sorted(_labels_of(node) - {prev_label})
    choices: list[list[tuple[int | None, int]]] = [[(None, e) for e in row.of(label)] for label in labels]
    if prev_label is not None:
        events = row.of(prev_label)
        choices.append(list(zip(events, events[1:])))
        labels.append(prev_label)
    for combination in itertools.product(*choices):
        bound = {label: current for label, (_, current) in zip(labels, combination)}
        previous = combination[-1][0] if prev_label is not None else None
        left = _row_value(node.left, row, bound, previous, set())
        right = _row_value(node.right, row, bound, previous, set())
        if not compare(node.op, left, right):
            return False
    return True


# ====================================================================== measures


def _python_value(value: Any) -> Any:
    if value is MISSING:
        return None
    if isinstance(value, float) and math.isnan(value):
        return value
    return value


@dataclass
class MeasureColumn:
    """One measure's values for a batch of matches: a column, or (for a label with several
    events) a list per match; Python values when no column holds them exactly."""

    col: Col | None = None
    list_offsets: np.ndarray | None = None  # with ``col`` the flat values of every list
    python: list | None = None

    def __len__(self) -> int:
        if self.python is not None:
            return len(self.python)
        if self.list_offsets is not None:
            return len(self.list_offsets) - 1
        return len(self.col)  # type: ignore[arg-type]

    def take(self, rows: np.ndarray) -> MeasureColumn:
        """The matches at ``rows`` (indexes)."""
        if self.python is not None:
            return MeasureColumn(python=[self.python[i] for i in rows.tolist()])
        if self.list_offsets is None:
            return MeasureColumn(col=self.col.take(rows))  # type: ignore[union-attr]
        counts = np.diff(self.list_offsets)[rows]
        starts = self.list_offsets[:-1][rows]
        offsets = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum(counts, out=offsets[1:])
        flat = np.repeat(starts - offsets[:-1], counts) + np.arange(int(offsets[-1]), dtype=np.int64)
        return MeasureColumn(col=self.col.take(flat), list_offsets=offsets)  # type: ignore[union-attr]

    def values(self) -> list:
        """Python values per match (tuples for lists), as Match.measures holds them."""
        if self.python is not None:
            return self.python
        flat = self.col.objects()  # type: ignore[union-attr]
        if self.list_offsets is None:
            return flat
        bounds = self.list_offsets.tolist()
        return [tuple(flat[a:b]) for a, b in zip(bounds, bounds[1:])]

    def raw(self, kind: pa.DataType | None) -> pa.Array | list:
        """The values as ``MatchColumns.measures`` takes them: an Arrow array of type ``kind``,
        or Python values when some do not fit a column (integers beyond int64 stay exact)."""
        if self.python is not None or (self.col is not None and self.col.kind == "obj"):
            return self.values()
        return self.arrow(kind)

    def arrow(self, kind: pa.DataType | None) -> pa.Array:
        """The values as an Arrow array of type ``kind`` (None: inferred)."""
        if self.python is not None or (self.col is not None and self.col.kind == "obj"):
            values = self.values()
            return pa.array([list(v) if isinstance(v, tuple) else v for v in values], kind)
        col = self.col
        assert col is not None
        inner = kind.value_type if kind is not None and pa.types.is_list(kind) else kind
        flat = _arrow_flat(col, inner)
        if self.list_offsets is None:
            return flat
        offsets = pa.array(self.list_offsets.astype(np.int32))
        array = pa.ListArray.from_arrays(offsets, flat)
        return array.cast(kind) if kind is not None and array.type != kind else array


def _arrow_flat(col: Col, kind: pa.DataType | None) -> pa.Array:
    mask = ~col.valid if not col.valid.all() else None
    if col.kind == "str":
        array = pa.array(col.objects(), pa.string())
    elif col.kind == "bool":
        array = pa.array(col.data, pa.bool_(), mask=mask)
    elif col.kind == "int":
        if kind is not None and pa.types.is_timestamp(kind):
            return pa.array(col.data, kind, mask=mask)
        array = pa.array(col.data, pa.int64(), mask=mask)
    else:
        array = pa.array(col.data, pa.float64(), mask=mask)
    if kind is not None and array.type != kind:
        array = array.cast(kind)
    return array


class MeasureColumns:
    """The measures of a plan, computed for a batch of matches at once."""

    def __init__(self, measures: tuple[ast.Measure, ...], many: set[str], types: dict[str, str]) -> None:
        self.measures = measures
        self.names = tuple(m.name for m in measures)
        self.many = set(many)
        self.types = types

    def attributes(self) -> list[str]:
        """The attributes the measures read."""
        names: list[str] = []
        for measure in self.measures:
            for node in walk(measure.expr):
                name = node.name if isinstance(node, ast.Attr) else getattr(node, "attr", None)
                if isinstance(node, (ast.Attr, ast.Aggregate)) and name and name not in names:
                    names.append(name)
        return names

    def compute(self, frame: Frame) -> dict[str, MeasureColumn]:
        out = {}
        for measure in self.measures:
            try:
                out[measure.name] = self._column(measure.expr, frame)
            except Fallback:
                out[measure.name] = self._python(measure.expr, frame)
        return out

    def _column(self, expr: ast.Expr, frame: Frame) -> MeasureColumn:
        if isinstance(expr, ast.Attr) and expr.label in self.many:
            has = frame.has(expr.label)
            column = frame.column(expr.name)
            index = np.flatnonzero(has)
            offsets = np.zeros(frame.n + 1, dtype=np.int64)
            np.cumsum(frame.count(expr.label), out=offsets[1:])
            return MeasureColumn(col=column.take(index), list_offsets=offsets)
        return MeasureColumn(col=Expressions(frame).value(expr))

    def _python(self, expr: ast.Expr, frame: Frame) -> MeasureColumn:
        values = []
        for match in range(frame.n):
            values.append(_python_value(_row_value(expr, _Row(frame, match), {}, None, self.many)))
        return MeasureColumn(python=values)


def measure_codes(column: MeasureColumn) -> np.ndarray:
    """int64 codes per match: equal codes for values Python finds equal (for deduplication)."""
    table: dict = {}
    out = np.empty(len(column), dtype=np.int64)
    for i, value in enumerate(column.values()):
        out[i] = table.setdefault(value, len(table))
    return out


# ====================================================================== conditions


class Conditions:
    """A condition over whole complex events (a FILTER over the whole formula), per match.
    ``predicate(pred)`` names the kept column holding a one-event predicate's value per event
    (for ``x[p]``)."""

    def __init__(self, cond: ast.Cond, predicate: Callable[[ast.Pred], str] | None = None) -> None:
        self.cond = cond
        self.predicate = predicate

    def attributes(self) -> list[str]:
        names: list[str] = []
        for node in walk(self.cond):
            name = None
            if isinstance(node, ast.Attr):
                name = node.name
            elif isinstance(node, (ast.Aggregate, ast.Prev)):
                name = node.attr
            if name and name not in names:
                names.append(name)
        return names

    def holds(self, frame: Frame) -> np.ndarray:
        """Whether the condition holds on each match of the frame."""
        return self._holds(self.cond, frame)

    def _holds(self, cond: ast.Cond, frame: Frame) -> np.ndarray:
        if isinstance(cond, ast.And):
            out = np.ones(frame.n, dtype=bool)
            for part in cond.parts:
                out &= self._holds(part, frame)
            return out
        if isinstance(cond, ast.Or):
            out = np.zeros(frame.n, dtype=bool)
            for part in cond.parts:
                out |= self._holds(part, frame)
            return out
        if isinstance(cond, ast.Not):
            return ~self._holds(cond.operand, frame)
        if isinstance(cond, ast.Compare):
            return self._compare(cond, frame)
        if isinstance(cond, ast.LabelCond) and self.predicate is not None:
            # Every event of the label satisfies the predicate.
            holds = frame.column(self.predicate(cond.pred))
            failed = frame.has(cond.label) & ~(holds.data.astype(bool) & holds.valid)
            return all_of(frame, ~failed)
        raise TypeError(f"a {type(cond).__name__} is not evaluated after the enumeration")

    def _compare(self, node: ast.Compare, frame: Frame) -> np.ndarray:
        prev = sorted({n.label for n in walk(node) if isinstance(n, ast.Prev)})
        labels = sorted(_labels_of(node))
        expressions = Expressions(frame)
        try:
            if prev:
                return self._with_prev(node, prev[0], labels, frame)
            if not labels:
                return compare_columns(node.op, expressions.value(node.left), expressions.value(node.right))
            if len(labels) == 1:
                return self._one_label(node, labels[0], frame)
            counts = [frame.count(label) for label in labels]
            single = np.ones(frame.n, dtype=bool)
            empty = np.zeros(frame.n, dtype=bool)
            for count in counts:
                single &= count <= 1
                empty |= count == 0
            many = [label for label, count in zip(labels, counts) if (count > 1).any()]
            if len(many) == 1:
                # One label with several events (under +), the others with at most one: per
                # event of the first, paired with its match's single events (a label without
                # events makes the universal condition true).
                return empty | self._one_many(node, many[0], set(labels) - {many[0]}, frame)
            out = empty | compare_columns(node.op, expressions.value(node.left), expressions.value(node.right))
            rows = np.flatnonzero(~single & ~empty)
        except Fallback:
            out = np.zeros(frame.n, dtype=bool)
            rows = np.arange(frame.n)
        for match in rows.tolist():
            out[match] = _row_compare(node, _Row(frame, match))
        return out

    def _one_label(self, node: ast.Compare, label: str, frame: Frame) -> np.ndarray:
        """Every event of ``label``: evaluated per event, then all of each match's."""
        events = np.flatnonzero(frame.has(label))
        sub = _EventFrame(frame, events)
        holds = compare_columns(node.op, sub.value(node.left, label), sub.value(node.right, label))
        return _all_per_match(frame, frame.segment[events], holds)

    def _one_many(self, node: ast.Compare, label: str, singles: set[str], frame: Frame) -> np.ndarray:
        """Every event of ``label`` with the single event of each of ``singles`` in its match."""
        events = np.flatnonzero(frame.has(label))
        sub = _EventFrame(frame, events, singles=singles)
        holds = compare_columns(node.op, sub.value(node.left, label), sub.value(node.right, label))
        return _all_per_match(frame, frame.segment[events], holds)

    def _with_prev(self, node: ast.Compare, label: str, labels: list[str], frame: Frame) -> np.ndarray:
        """PREV(x.a): over every x event after the first with the x event before it."""
        if set(labels) - {label}:
            raise Fallback("PREV with other labels")
        events = np.flatnonzero(frame.has(label))
        segment = frame.segment[events]
        follows = np.zeros(len(events), dtype=bool)
        follows[1:] = segment[1:] == segment[:-1]
        current = events[follows]
        previous = events[np.flatnonzero(follows) - 1]
        sub = _EventFrame(frame, current, previous)
        holds = compare_columns(node.op, sub.value(node.left, label), sub.value(node.right, label))
        return _all_per_match(frame, segment[follows], holds)


def _all_per_match(frame: Frame, matches: np.ndarray, holds: np.ndarray) -> np.ndarray:
    """Per match: whether ``holds`` is true for all its entries (``matches``: each entry's)."""
    failed = np.bincount(matches[~holds], minlength=frame.n)
    return failed[: frame.n] == 0


def all_of(frame: Frame, holds: np.ndarray) -> np.ndarray:
    """Per match: whether ``holds`` (one value per event) is true on all its events."""
    return _all_per_match(frame, frame.segment, holds)


def consecutive(frame: Frame, local: str) -> np.ndarray:
    """Per match: whether its events are consecutive in their sub-stream (``local``: the kept
    column of each event's index in it). Events reported only under the compiler's own labels
    (NUL-prefixed: the event a ``NOT(E FILTER c)`` reads) are not events of the match (docs/
    semantics.md): they are left out, as the output leaves them out."""
    column = frame.column(local)
    private = frame._private()
    if private is None:
        first, last = frame.first(None), frame.last(None)
        lengths = frame.lengths
        some = lengths > 0
        out = np.ones(frame.n, dtype=bool)
        out[some] = column.data[last[some]] - column.data[first[some]] + 1 == lengths[some]
        return out
    events = np.flatnonzero(frame.has(None))  # (None: the events of the match, not the private ones)
    match = frame.segment[events]
    values = column.data[events].astype(np.int64)
    count = np.bincount(match, minlength=frame.n)
    low = np.full(frame.n, np.iinfo(np.int64).max, dtype=np.int64)
    high = np.full(frame.n, np.iinfo(np.int64).min, dtype=np.int64)
    np.minimum.at(low, match, values)
    np.maximum.at(high, match, values)
    some = count > 0
    out = np.ones(frame.n, dtype=bool)
    out[some] = high[some] - low[some] + 1 == count[some]
    return out


def group_holds(frame: Frame, keys: tuple[ast.Attr, ...]) -> np.ndarray:
    """Per match: PARTITION BY keys (``x.a`` for the x events, ``a`` for every event): all
    designated values are one common value; a missing value (or NaN) breaks it."""
    entries, values = [], []
    for key in keys:
        events = np.flatnonzero(frame.has(key.label))
        entries.append(events)
        values.append(frame.column(key.name).take(events))
    matches = frame.segment[np.concatenate(entries)] if entries else np.zeros(0, dtype=np.int64)
    kinds = {v.kind for v in values}
    valid = np.concatenate([v.valid for v in values]) if values else np.zeros(0, dtype=bool)
    broken = _all_per_match(frame, matches, valid) if len(matches) else np.ones(frame.n, dtype=bool)
    numeric = kinds <= {"int", "float"} and not (
        "float" in kinds and "int" in kinds and any(
            (np.abs(v.data[v.valid]) > EXACT_FLOAT_INT).any() for v in values if v.kind == "int"
        )
    )
    if kinds <= {"str"} or kinds <= {"bool"} or numeric:
        data = np.concatenate([v.data for v in values]) if values else np.zeros(0)
        if numeric and "float" in kinds:
            data = data.astype(np.float64)
        ok = valid.copy()
        if len(data) and data.dtype == np.float64:
            ok &= ~np.isnan(data)
        # One value per match: every valid entry equals the match's first valid entry.
        index = np.flatnonzero(ok)
        if not len(index):
            return broken
        entry_match = matches[index]
        order = np.argsort(entry_match, kind="stable")
        index, entry_match = index[order], entry_match[order]
        starts = np.r_[0, np.flatnonzero(entry_match[1:] != entry_match[:-1]) + 1]
        firsts = np.repeat(index[starts], np.diff(np.r_[starts, len(index)]))
        same = data[index] == data[firsts]
        return broken & _all_per_match(frame, entry_match, np.asarray(same, dtype=bool)) & _all_per_match(
            frame, matches, ok | ~valid
        )
    first: dict[int, Any] = {}
    bad: set[int] = set()
    for entry, value in zip(matches.tolist(), itertools.chain.from_iterable(v.objects() for v in values)):
        if entry in bad:
            continue
        if value is None or (isinstance(value, float) and value != value):
            bad.add(entry)
        elif entry not in first:
            first[entry] = value
        elif value != first[entry] or isinstance(value, str) != isinstance(first[entry], str):
            bad.add(entry)
    out = np.ones(frame.n, dtype=bool)
    out[list(bad)] = False
    return out


def instance_holds(frame: Frame, end: str, own: frozenset[str], free: frozenset[str], holds) -> np.ndarray:
    """Per match: whether ``holds`` (a function of a Frame, one bool per match of it) holds on
    every instance of a filtered formula. An instance is made of the events with one of the
    ``own`` labels from after one ``end`` event up to the next one, and of every event of the
    match with one of the ``free`` labels (read from the whole complex event). A match with no
    instance holds."""
    n_events = frame.events
    ends = frame.has(end)
    segment = frame.segment
    mine = np.zeros(n_events, dtype=bool)
    for label in own:
        mine |= frame.has(label)
    theirs = np.zeros(n_events, dtype=bool)
    for label in free:
        theirs |= frame.has(label)
    # Instance number of each event within its match: the ends before it.
    cum = np.zeros(n_events + 1, dtype=np.int64)
    np.cumsum(ends, out=cum[1:])
    count = cum[frame.ends] - cum[frame.starts]  # instances per match
    first = np.zeros(frame.n + 1, dtype=np.int64)
    np.cumsum(count, out=first[1:])  # pseudo-match number of each match's first instance
    total = int(first[-1])
    if total == 0:
        return np.ones(frame.n, dtype=bool)
    number = cum[:-1] - cum[frame.starts][segment]  # 0-based instance of each event
    events = np.flatnonzero(mine & (number < count[segment]))
    pseudo = [first[segment[events]] + number[events]]
    members = [events]
    borrowed = [np.zeros(len(events), dtype=bool)]  # in the instance only for its free labels
    shared = np.flatnonzero(theirs)
    if len(shared):
        # Every instance of a match reads the match's free-label events.
        per = count[segment[shared]]
        repeated = np.repeat(shared, per)
        starts = np.repeat(first[segment[shared]], per)
        offsets_within = np.arange(len(repeated)) - np.repeat(np.cumsum(per) - per, per)
        pseudo.append(starts + offsets_within)
        members.append(repeated)
        borrowed.append(np.ones(len(repeated), dtype=bool))
    pseudo_all = np.concatenate(pseudo)
    member_all = np.concatenate(members)
    borrowed_all = np.concatenate(borrowed)
    # An event both own and free: once, as an own event (sorted first among its copies).
    order = np.lexsort((borrowed_all, member_all, pseudo_all))
    pseudo_all, member_all, borrowed_all = pseudo_all[order], member_all[order], borrowed_all[order]
    if len(pseudo_all) > 1:
        keep = np.r_[True, (pseudo_all[1:] != pseudo_all[:-1]) | (member_all[1:] != member_all[:-1])]
        pseudo_all, member_all, borrowed_all = pseudo_all[keep], member_all[keep], borrowed_all[keep]
    offsets = np.searchsorted(pseudo_all, np.arange(total + 1)).astype(np.int64)
    sub = frame.subframe(offsets, member_all)
    if sub.label_ids is not None and borrowed_all.any():
        # An event of another instance, read for a free label, carries only its free labels
        # here: its own labels (the other iteration's y, A, ...) are not this instance's.
        width = len(frame.label_sets)
        sub.label_sets = list(frame.label_sets) + [
            tuple(label for label in labels if label in free) for labels in frame.label_sets
        ]
        sub.label_ids = np.where(borrowed_all, sub.label_ids + width, sub.label_ids)
    result = np.asarray(holds(sub), dtype=bool)
    parent = np.repeat(np.arange(frame.n), count)
    failed = np.bincount(parent[~result], minlength=frame.n)
    return failed[: frame.n] == 0


class _EventFrame:
    """Expressions per event of one label (``x.a`` on the event itself, PREV on ``previous``,
    aggregates of its match)."""

    def __init__(
        self, frame: Frame, events: np.ndarray, previous: np.ndarray | None = None, singles: set[str] | None = None
    ) -> None:
        self.frame = frame
        self.events = events
        self.previous = previous
        self.matches = frame.segment[events]
        self._aggregates = Expressions(frame)
        self.singles = singles or set()  # labels with at most one event per match: read per match

    def value(self, expr: ast.Expr, label: str) -> Col:
        n = len(self.events)
        if isinstance(expr, ast.Literal):
            return constant(expr.value, n)
        if isinstance(expr, ast.Attr):
            if expr.label != label:
                if expr.label not in self.singles:
                    raise Fallback("another label")
                return self._aggregates.value(expr).take(self.matches)
            return self.frame.column(expr.name).take(self.events)
        if isinstance(expr, ast.Prev):
            assert self.previous is not None
            return self.frame.column(expr.attr).take(self.previous)
        if isinstance(expr, ast.Aggregate):
            return self._aggregates.aggregate(expr).take(self.matches)
        if isinstance(expr, ast.Neg):
            return negate(self.value(expr.operand, label))
        if isinstance(expr, ast.Arith):
            return arithmetic(expr.op, self.value(expr.left, label), self.value(expr.right, label))
        raise Fallback(f"{type(expr).__name__} per event")
