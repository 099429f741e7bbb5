"""Checks the kernel applies to each enumerated complex event, column-wise, instead of keeping
register values per run: the plan decides at compile time whether they are exact and cheap.

- **Conditions over the whole formula.** ``f FILTER c`` at the top of the query (and
  ``PARTITION BY [x.a, ...]`` over labels, and ``f PARTITION BY [...]`` at the top) keep the
  complex events of f on which c holds; c reads nothing but that complex event. The kernel runs
  f with c's one-event conjuncts (``x[p]``, ``x.a > 3``: automaton predicates, as on the Python
  path) and checks the rest on every complex event f reports (columns.py). Exact when nothing
  depends on which complex events were reported (CONSUME BY NONE) and every candidate is
  enumerated (strategy ALL or ANY, LIMIT only with ``SELECT *``); used when the candidates are
  few: a contiguous pattern (``:`` and ``:+`` only: at most one candidate per start event), or a
  window with no iteration that can skip events. Otherwise the Python path's registers prune
  partial matches as events arrive, and the plan stays there.
- **STRICT over NOT(...) or ALL**: a complex event is kept iff its events are consecutive in
  its (sub-)stream, checked on each one from the events' indexes in their sub-stream (as the
  Python path does).
- **Repeats**: when several runs may derive one complex event, the copies a trigger reports are
  dropped (by positions and reported labels), as the Python path does.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np

from ceql.compile.ambiguity import may_repeat
from ceql.compile.compiler import (
    _atoms_no_not,
    _plain_compare,
    compare_labels,
    compile_query_formula,
    defined_labels,
)
from ceql.compile.determinize import DetAutomaton, SymbolTable
from ceql.compile.plan import Plan
from ceql.compile.predicates import PredicateSet
from ceql.errors import UnsupportedQueryError
from ceql.lang import ast
from ceql.lang.visit import walk

#: Key under which a plan caches its PostFilter (or the reason it has none).
_CACHE = "_kernel_post_filter"


@dataclass
class PostFilter:
    """What the kernel checks per complex event, and the plan it runs to enumerate them."""

    plan: Plan  # the plan the kernel runs (the original one when only STRICT/repeats apply)
    condition: ast.Cond | None = None  # over the whole complex event
    groups: list[tuple[ast.Attr, ...]] = field(default_factory=list)  # PARTITION BY keys: one common value
    strict: bool = False  # STRICT: consecutive in the (sub-)stream
    distinct: bool = False  # drop repeats of a complex event per trigger
    predicates: PredicateSet | None = None  # x[p] inside the condition: one-event predicates
    notes: list[str] = field(default_factory=list)  # what is checked, for explain

    @property
    def per_match(self) -> bool:
        """Whether some complex events may be dropped after the enumeration."""
        return self.condition is not None or bool(self.groups) or self.strict


def post_filter(plan: Plan) -> PostFilter | str | None:
    """The per-complex-event checks the kernel needs for this plan: None when it needs none, a
    PostFilter, or the reason the plan stays on the Python path (a string)."""
    cached = plan.__dict__.get(_CACHE, _CACHE)
    if cached is _CACHE:
        cached = plan.__dict__[_CACHE] = _decide(plan)
    return cached


def _decide(plan: Plan) -> PostFilter | str | None:
    repeats = plan.repeats and plan.strategy != "ANY"
    if plan.registers is None:
        if not plan.strict_filter and not repeats:
            return None
        post = PostFilter(plan, strict=plan.strict_filter, distinct=repeats)
        if plan.strict_filter:
            if plan.consume != "NONE":
                return "STRICT over NOT(...) or ALL with CONSUME BY"
            post.notes.append("STRICT: each complex event's events are checked to be consecutive in its sub-stream")
        if repeats:
            post.notes.append("repeats of a complex event dropped per trigger")
        return post
    # Conditions across events: only over the whole formula, checked per complex event.
    conditions: list[ast.Cond] = []
    groups: list[tuple[ast.Attr, ...]] = []
    body = plan.formula
    while isinstance(body, (ast.Filter, ast.PartitionBy)):
        if isinstance(body, ast.Filter):
            conditions.append(body.cond)
        else:
            groups.append(body.keys)
        body = body.body
    if plan.checked.query.partition_labels and plan.auto_partition is None:
        groups.append(tuple(plan.checked.query.partition_labels))
    own = defined_labels(body)
    conjuncts = [part for cond in conditions for part in (cond.parts if isinstance(cond, ast.And) else [cond])]
    restricting = [c for c in conjuncts if _restricts(c, own)]
    rest = [c for c in conjuncts if not _restricts(c, own)]
    residual = ast.Filter(body, _and(restricting)) if restricting else body
    try:
        compiled = compile_query_formula(residual)
    except UnsupportedQueryError as error:  # pragma: no cover - the whole query compiled
        return str(error)
    if compiled.registers is not None:
        return "conditions across events inside the formula (registers)"
    if plan.consume != "NONE":
        return "conditions across events with CONSUME BY (registers)"
    if plan.strategy not in ("ALL", "ANY", "STRICT"):
        return f"conditions across events with strategy {plan.strategy} (registers)"
    if plan.limit is not None and (plan.projection is not None and plan.projection.kind != "star"):
        return "conditions across events with LIMIT and a projection (registers)"
    bounded = _few_candidates(body, plan)
    if bounded is None:
        return "conditions across events on a pattern with many candidates (registers prune them)"
    compiled.predicates.int_types = plan.catalog.int_types if plan.catalog is not None else {}
    symbols = SymbolTable(plan.type_names)
    relabels = any(isinstance(node, (ast.Rename, ast.Project)) for node in walk(residual, formulas_only=True))
    residual_repeats = relabels and may_repeat(compiled.machine, plan.checked.as_labels)
    run = dataclasses.replace(
        plan,
        formula=residual,
        compiled=compiled,
        symbols=symbols,
        det=DetAutomaton(compiled.machine, symbols),
        repeats=residual_repeats,
    )
    run.__dict__[_CACHE] = None
    condition = _and(rest) if rest else None
    predicates = None
    if condition is not None and any(isinstance(n, ast.LabelCond) for n in walk(condition)):
        predicates = PredicateSet()
        predicates.int_types = compiled.predicates.int_types
        for node in walk(condition):
            if isinstance(node, ast.LabelCond):
                predicates.intern(node.pred)
    post = PostFilter(
        run,
        condition=condition,
        groups=groups,
        strict=plan.strict_filter,
        distinct=residual_repeats and plan.strategy != "ANY",
        predicates=predicates,
    )
    post.notes.append(f"conditions across events checked on each complex event after the enumeration ({bounded})")
    if plan.strict_filter:
        post.notes.append("STRICT: each complex event's events are checked to be consecutive in its sub-stream")
    return post


def _and(parts: list[ast.Cond]) -> ast.Cond:
    return parts[0] if len(parts) == 1 else ast.And(tuple(parts))


def _restricts(cond: ast.Cond, own: set[str]) -> bool:
    """Whether a conjunct is made of one-event tests on own labels (AND/OR, no NOT): the
    automaton checks it (the compiler's rule)."""
    for atom in _atoms_no_not(cond):
        if atom is None:
            return False
        if isinstance(atom, ast.LabelCond):
            if atom.label not in own:
                return False
            continue
        if not _plain_compare(atom):
            return False
        labels = compare_labels(atom)
        if len(labels) != 1 or labels[0] not in own:
            return False
    return True


def _few_candidates(body: ast.Formula, plan: Plan) -> str | None:
    """Why the unfiltered pattern reports few candidates (None: it may report many)."""
    skipping = False
    iterating = False
    stack = [body]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Unless):
            stack.append(node.left)  # the right side reports nothing
            continue
        if isinstance(node, ast.Sequence) and not node.contiguous or isinstance(node, ast.AllOf):
            skipping = True
        if isinstance(node, ast.Iteration) and not node.contiguous:
            iterating = True
        stack.extend(child for child in _children(node))
    if not skipping and not iterating:
        return "a contiguous pattern: one candidate per start event"
    if plan.window is not None and not iterating:
        return "a window and no iteration that skips events"
    return None


def _children(node: ast.Formula) -> list:
    from ceql.lang.visit import formula_children

    return list(formula_children(node))


def local_indexes(codes: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Each event's index in its sub-stream (``codes``: key codes, -1 for no key, which get
    -1), continuing from ``counts`` (events seen per code, updated in place)."""
    out = np.full(len(codes), -1, dtype=np.int64)
    keyed = np.flatnonzero(codes >= 0)
    if not len(keyed):
        return out
    chosen = codes[keyed]
    order = np.argsort(chosen, kind="stable")
    sorted_codes = chosen[order]
    starts = np.r_[0, np.flatnonzero(np.diff(sorted_codes)) + 1]
    rank = np.arange(len(order)) - np.repeat(starts, np.diff(np.r_[starts, len(order)]))
    out[keyed[order]] = counts[sorted_codes] + rank
    np.add.at(counts, chosen, 1)
    return out


def select_matches(chunk, keep: np.ndarray):
    """The matches of a KernelMatches whose ``keep`` is true."""
    from ceql.runtime.kernel.engine import KernelMatches

    if keep.all():
        return chunk
    counts = np.diff(chunk.offsets)
    events = np.repeat(keep, counts)
    offsets = np.zeros(int(keep.sum()) + 1, dtype=np.int64)
    np.cumsum(counts[keep], out=offsets[1:])
    return KernelMatches(
        chunk.trigger[keep],
        np.asarray(chunk.partition)[keep],
        offsets,
        chunk.positions[chunk.offsets[0] :][events] if chunk.offsets[0] else chunk.positions[events],
        (chunk.labels[events] if chunk.labels is not None else None),
        chunk.label_sets,
        {name: column.take(np.flatnonzero(keep)) for name, column in chunk.measures.items()}
        if chunk.measures
        else None,
    )


def first_per_trigger(trigger: np.ndarray, keep: np.ndarray, limit: int) -> np.ndarray:
    """``keep`` restricted to the first ``limit`` kept matches of each trigger (matches of one
    trigger are consecutive)."""
    index = np.flatnonzero(keep)
    if not len(index):
        return keep
    chosen = trigger[index]
    starts = np.r_[0, np.flatnonzero(chosen[1:] != chosen[:-1]) + 1]
    rank = np.arange(len(index)) - np.repeat(starts, np.diff(np.r_[starts, len(index)]))
    out = np.zeros(len(keep), dtype=bool)
    out[index[rank < limit]] = True
    return out
