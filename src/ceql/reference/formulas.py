"""``[[f]](i, j)``: the complex events of a core formula over one (sub-)stream, by brute force.

A complex event (CE) is a frozenset of (label, position) pairs. Because a condition may name
labels that its formula does not define (free labels, docs/semantics.md), a CE is computed with
the conditions it still owes: a *derivation* is a pair (CE, obligations). An obligation is a
condition waiting for the events of its free labels; it is decided at the scope that defines
them (scopes.py): an iteration's body, a renaming's or projection's body, the right then the
left side of UNLESS, or the whole reported CE. A CE is reported iff one of its derivations has
every obligation true.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Union

from ceql.lang import ast, scopes
from ceql.lang.visit import Visitor
from ceql.reference.conditions import MISSING, Env, eval_pred, get, holds

CE = frozenset  # frozenset[tuple[str, int]]
NO_OBLIGATIONS: frozenset = frozenset()


@dataclass(frozen=True)
class Pending:
    """A condition (of the Filter or NotEvent node ``node_id``) that waits for the events of
    its free labels ``free``; ``own`` is the sub-CE it filters, ``bound`` the free labels'
    events found so far."""

    node_id: int
    own: frozenset
    bound: frozenset
    free: frozenset


@dataclass(frozen=True)
class NoneOf:
    """Holds iff no alternative has all its obligations true: what an UNLESS right side (or a
    NOT(E FILTER ...) atom) owes when its conditions name labels of an enclosing scope."""

    alternatives: frozenset
    free: frozenset


Obligation = Union[Pending, NoneOf]
Derivation = tuple  # (CE, frozenset[Obligation])


def support(ce: frozenset) -> frozenset:
    return frozenset(p for _, p in ce)


def ce_min(ce: frozenset) -> float:
    return min((p for _, p in ce), default=math.inf)


def ce_max(ce: frozenset) -> float:
    return max((p for _, p in ce), default=-math.inf)


def _adjacent(left: frozenset, right: frozenset, k: int) -> bool:
    """``f : g``: both non-empty, the left ends at k and the right starts at k + 1."""
    return bool(left) and bool(right) and ce_max(left) == k and ce_min(right) == k + 1


def common_value(ce: frozenset, keys: Sequence[ast.Attr], stream: Sequence[Mapping[str, Any]]):
    """PART-BY: the one value every designated event carries, ``None`` if no event is
    designated, or MISSING if the values differ or one is missing. A key without a label
    designates every event of the CE; several plain keys form a tuple."""
    if keys[0].label is None:
        values = {tuple(get(stream[p], key.name) for key in keys) for p in support(ce)}
        if any(MISSING in v for v in values):
            return MISSING
    else:
        values = set()
        for key in keys:
            for label, p in ce:
                if label == key.label:
                    values.add(get(stream[p], key.name))
        if MISSING in values:
            return MISSING
        values = {(v,) for v in values}
    if len(values) > 1:
        return MISSING
    return next(iter(values)) if values else None


class FormulaEvaluator(Visitor):
    """``[[f]](i, j)`` over one stream, as sets of derivations, memoised per (node, i, j)."""

    pass_name = "the reference evaluator"
    families = (ast.CORE_FORMULA_NODES,)

    def __init__(self, stream: Sequence[Mapping[str, Any]]) -> None:
        self.stream = stream
        self.memo: dict[tuple, frozenset] = {}
        self.nodes: dict[int, ast.Node] = {}  # keeps nodes alive so that id() stays unique
        self.labels = scopes.LabelIndex()

    # ------------------------------------------------------------------ entry points

    def evaluate(self, node: ast.Formula, i: int, j: int) -> frozenset:
        """The derivations of ``node`` over ``i..j`` (ending at j)."""
        if i > j:
            return frozenset()
        key = (id(node), i, j)
        cached = self.memo.get(key)
        if cached is None:
            self.nodes[id(node)] = node
            cached = self.visit(node, i, j)
            self.memo[key] = cached
        return cached

    def reported(self, node: ast.Formula, j: int) -> set[frozenset]:
        """The CEs of ``[[node]](0, j)`` that some derivation satisfies entirely."""
        out = set()
        for ce, obligations in self.evaluate(node, 0, j):
            if self.resolve_all(obligations, ce, None) == NO_OBLIGATIONS:
                out.add(ce)
        return out

    # ------------------------------------------------------------------ obligations

    def scoped(self, node: ast.Formula, i: int, j: int) -> frozenset:
        """The derivations of ``node`` with the obligations about labels it defines decided on
        its own CE (``node`` is a scope: an iteration's body, a renaming's or projection's
        body, the right side of UNLESS)."""
        key = ("scoped", id(node), i, j)
        cached = self.memo.get(key)
        if cached is None:
            owned = self.labels.defined(node)
            out = set()
            for ce, obligations in self.evaluate(node, i, j):
                remaining = self.resolve_all(obligations, ce, owned)
                if remaining is not None:
                    out.add((ce, remaining))
            cached = frozenset(out)
            self.memo[key] = cached
        return cached

    def resolve_all(self, obligations: frozenset, ce: frozenset, owned: frozenset | None) -> frozenset | None:
        """Decide what can be decided with ``ce`` as the scope of the labels ``owned`` (all
        labels if None): None if an obligation fails, else the obligations still pending."""
        if not obligations:
            return obligations
        remaining = []
        for obligation in obligations:
            outcome = self.resolve(obligation, ce, owned)
            if outcome is False:
                return None
            if outcome is not True:
                remaining.append(outcome)
        return frozenset(remaining)

    def resolve(self, obligation: Obligation, ce: frozenset, owned: frozenset | None):
        """True, False, or the obligation with the labels ``owned`` read from ``ce``."""
        take = obligation.free if owned is None else obligation.free & owned
        if not take:
            return obligation
        if isinstance(obligation, Pending):
            bound = obligation.bound | {pair for pair in ce if pair[0] in take}
            free = obligation.free - take
            if free:
                return Pending(obligation.node_id, obligation.own, bound, free)
            cond = self.nodes[obligation.node_id].cond  # type: ignore[attr-defined]
            return holds(cond, Env.of(obligation.own | bound, obligation.own, self.stream))
        alternatives = set()
        for alternative in obligation.alternatives:
            remaining = self.resolve_all(alternative, ce, owned)
            if remaining is None:
                continue
            if not remaining:
                return False  # this alternative holds: the negation fails
            alternatives.add(remaining)
        if not alternatives:
            return True
        return _none_of(alternatives)

    def condition(self, node: ast.Filter | ast.NotEvent, own: frozenset) -> bool | Pending:
        """A condition on the sub-CE ``own``: decided now, or pending on its free labels."""
        self.nodes[id(node)] = node
        free = scopes.free_labels(node, self.labels)
        if not free:
            return holds(node.cond, Env.of(own, own, self.stream))  # type: ignore[arg-type]
        return Pending(id(node), own, frozenset(), free)

    # ------------------------------------------------------------------ formulas

    def visit_EventType(self, node: ast.EventType, i: int, j: int) -> frozenset:
        if self.stream[j]["event_type"] == node.name:
            return frozenset({(CE({(node.name, j)}), NO_OBLIGATIONS)})
        return frozenset()

    def visit_NotEvent(self, node: ast.NotEvent, i: int, j: int) -> frozenset:
        empty = frozenset({(CE(), NO_OBLIGATIONS)})
        if self.stream[j]["event_type"] != node.atom.name:
            return empty
        if node.cond is None:
            return frozenset()
        outcome = self.condition(node, CE({(node.atom.name, j)}))
        if outcome is True:
            return frozenset()  # the event matches: NOT fails
        if outcome is False:
            return empty
        return frozenset({(CE(), frozenset({_none_of({frozenset({outcome})})}))})

    def visit_Label(self, node: ast.Label, i: int, j: int) -> frozenset:
        return frozenset(
            (ce | {(node.label, p) for _, p in ce}, obligations)
            for ce, obligations in self.evaluate(node.body, i, j)
        )

    def visit_Filter(self, node: ast.Filter, i: int, j: int) -> frozenset:
        out = set()
        for ce, obligations in self.evaluate(node.body, i, j):
            outcome = self.condition(node, ce)
            if outcome is True:
                out.add((ce, obligations))
            elif outcome is not False:
                out.add((ce, obligations | {outcome}))
        return frozenset(out)

    def visit_PartitionBy(self, node: ast.PartitionBy, i: int, j: int) -> frozenset:
        return frozenset(
            (ce, obligations)
            for ce, obligations in self.evaluate(node.body, i, j)
            if common_value(ce, node.keys, self.stream) is not MISSING
        )

    def visit_Union_(self, node: ast.Union_, i: int, j: int) -> frozenset:
        return frozenset().union(*(self.evaluate(part, i, j) for part in node.parts))

    def visit_Sequence(self, node: ast.Sequence, i: int, j: int) -> frozenset:
        return self._parts(node, len(node.parts), i, j)

    def _parts(self, node: ast.Sequence | ast.AllOf, count: int, i: int, j: int) -> frozenset:
        """The first ``count`` parts of a sequence or an ALL, evaluated over (i, j) (memoized:
        the shorter prefixes are asked for again and again)."""
        if count == 1:
            return self.evaluate(node.parts[0], i, j)
        key = (id(node), count, i, j)
        cached = self.memo.get(key)
        if cached is None:
            join = self._sequence if isinstance(node, ast.Sequence) else self._all_of
            cached = self.memo[key] = frozenset(join(node, count, i, j))  # type: ignore[arg-type]
        return cached

    def _sequence(self, node: ast.Sequence, count: int, i: int, j: int) -> Iterator[tuple]:
        """``[[f1 ; ... ; f_count]](i, j)``: the first count - 1 parts end at some k < j, the
        last part runs from k + 1 to j."""
        last = node.parts[count - 1]
        for k in range(i, j):
            left = self._parts(node, count - 1, i, k)
            if not left:
                continue
            right = self.evaluate(last, k + 1, j)
            for (a, oa), (b, ob) in itertools.product(left, right):
                if node.contiguous and not _adjacent(a, b, k):
                    continue
                yield (a | b, oa | ob)

    def visit_Iteration(self, node: ast.Iteration, i: int, j: int) -> frozenset:
        # Each iteration is a scope for the labels the body defines.
        result = set(self.scoped(node.body, i, j))
        for k in range(i, j):
            left = self.scoped(node.body, i, k)
            if not left:
                continue
            for (a, oa), (b, ob) in itertools.product(left, self.evaluate(node, k + 1, j)):
                if node.contiguous and not _adjacent(a, b, k):
                    continue
                result.add((a | b, oa | ob))
        return frozenset(result)

    def visit_Conjunction(self, node: ast.Conjunction, i: int, j: int) -> frozenset:
        result = self.evaluate(node.parts[0], i, j)
        for part in node.parts[1:]:
            right = self.evaluate(part, i, j)
            result = frozenset(
                (a | b, oa | ob) for (a, oa), (b, ob) in itertools.product(result, right) if support(a) == support(b)
            )
        return result

    def visit_AllOf(self, node: ast.AllOf, i: int, j: int) -> frozenset:
        return self._parts(node, len(node.parts), i, j)

    def _all_of(self, node: ast.AllOf, count: int, i: int, j: int) -> Iterator[tuple]:
        """``[[f1 ALL ... ALL f_count]](i, j)``: each part ends at some j' <= j, one at j."""
        last = node.parts[count - 1]
        for j1, j2 in itertools.product(range(i, j + 1), repeat=2):
            if max(j1, j2) != j:
                continue
            left = self._parts(node, count - 1, i, j1)
            if not left:
                continue
            for (a, oa), (b, ob) in itertools.product(left, self.evaluate(last, i, j2)):
                yield (a | b, oa | ob)

    def visit_Unless(self, node: ast.Unless, i: int, j: int) -> frozenset:
        owned_left = self.labels.defined(node.left)
        kept = set()
        for ce, obligations in self.evaluate(node.left, i, j):
            if not ce:
                kept.add((ce, obligations))
                continue
            start, end = int(ce_min(ce)), int(ce_max(ce))
            pending: set[frozenset] = set()
            blocked = False
            for k in range(start, end + 1):
                for _, right_obligations in self.scoped(node.right, start, k):
                    remaining = self.resolve_all(right_obligations, ce, owned_left)
                    if remaining is None:
                        continue
                    if not remaining:
                        blocked = True  # a match of the right side inside the span
                        break
                    pending.add(remaining)
                if blocked:
                    break
            if blocked:
                continue
            if pending:
                obligations = obligations | {_none_of(pending)}
            kept.add((ce, obligations))
        return frozenset(kept)

    def visit_Start(self, node: ast.Start, i: int, j: int) -> frozenset:
        return frozenset((ce, ob) for ce, ob in self.evaluate(node.body, i, j) if ce_min(ce) == i)

    def visit_Rename(self, node: ast.Rename, i: int, j: int) -> frozenset:
        mapping = dict(node.mapping)
        return frozenset(
            (frozenset((mapping.get(label, label), p) for label, p in ce), obligations)
            for ce, obligations in self.scoped(node.body, i, j)
        )

    def visit_Project(self, node: ast.Project, i: int, j: int) -> frozenset:
        kept = frozenset(node.labels)
        return frozenset(
            (frozenset(pair for pair in ce if pair[0] in kept), obligations)
            for ce, obligations in self.scoped(node.body, i, j)
        )


def _none_of(alternatives) -> NoneOf:
    alternatives = frozenset(alternatives)
    free = frozenset().union(*(o.free for alternative in alternatives for o in alternative))
    return NoneOf(alternatives, free)


__all__ = ["FormulaEvaluator", "common_value", "eval_pred", "ce_min", "ce_max", "support"]
