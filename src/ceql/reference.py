"""The brute-force reference evaluator: DESIGN section 3, literally.

This is the oracle the engine is tested against, so it favours obviousness over speed: it
computes ``[[f]](i, j)`` for every formula node and pair of positions (memoised), then applies
PARTITION BY, WITHIN, CONSUME BY, the selection strategy, the projection and LIMIT in the order
the specification gives. Use it on small streams (a few dozen events).

A complex event (CE) is a frozenset of (label, position) pairs; positions are those of the
sub-stream being evaluated (global positions when there is no PARTITION BY).
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Iterable, Mapping
from typing import Any

from ceql.errors import EventError
from ceql.lang import ast
from ceql.lang.analysis import CheckedQuery
from ceql.match import Match

CE = frozenset  # frozenset[tuple[str, int]]
_MISSING = object()


def run(query: Any, events: Iterable[Mapping[str, Any]]) -> list[Match]:
    """Evaluate ``query`` over ``events`` by brute force; return the matches in trigger order.

    ``query`` is a CheckedQuery or any object with a ``checked`` attribute holding one (such as
    the engine's compiled query). ``events`` are dicts with an ``event_type`` key.
    """
    checked: CheckedQuery = query if isinstance(query, CheckedQuery) else query.checked
    stream = [dict(e) for e in events]
    for row, event in enumerate(stream):
        if event.get("event_type") not in checked.schema.event_types:
            raise EventError(f"unknown event type {event.get('event_type')!r}", row)
    return _Reference(checked, stream).run()


class _Reference:
    def __init__(self, checked: CheckedQuery, stream: list[dict[str, Any]]) -> None:
        self.checked = checked
        self.query = checked.query
        self.stream = stream

    # ------------------------------------------------------------------ top level

    def run(self) -> list[Match]:
        substreams = self.partition()
        # candidates[j] = (partition key, CEs in global positions) triggered at global position j
        candidates: dict[int, tuple[tuple | None, list[frozenset]]] = {}
        for key, positions in substreams.items():
            evaluator = _FormulaEvaluator([self.stream[p] for p in positions])
            for local_j, global_j in enumerate(positions):
                ces = evaluator.evaluate(self.query.formula, 0, local_j)
                mapped = [frozenset((label, positions[p]) for label, p in ce) for ce in ces]
                candidates[global_j] = (key, mapped)
        matches: list[Match] = []
        last_output_any = -1
        last_output_by_key: dict[Any, int] = {}
        consume = self.query.effective_consume
        for j in range(len(self.stream)):
            if j not in candidates:
                continue
            key, ces = candidates[j]
            ces = [ce for ce in ces if self.in_window(ce)]
            if consume == "ANY" or (consume == "PARTITION" and not self.query.partition_by):
                ces = [ce for ce in ces if _min(ce) > last_output_any]
            elif consume == "PARTITION":
                ces = [ce for ce in ces if _min(ce) > last_output_by_key.get(key, -1)]
            ces = self.select(ces, substreams[key])
            output = self.project(ces, j, key)
            if output:
                last_output_any = j
                last_output_by_key[key] = j
            matches.extend(output)
        return matches

    def partition(self) -> dict[tuple | None, list[int]]:
        """Sub-stream key -> its global positions, in order (one sub-stream if unpartitioned)."""
        groups = self.query.partition_by
        if not groups:
            return {None: list(range(len(self.stream)))}
        substreams: dict[tuple | None, list[int]] = {}
        for position, event in enumerate(self.stream):
            key = partition_key(event, groups, self.checked)
            if key is not None:
                substreams.setdefault(key, []).append(position)
        return substreams

    def in_window(self, ce: frozenset) -> bool:
        within = self.query.within
        if within is None or not ce:
            return True
        first, last = self.stream[_min(ce)], self.stream[_max(ce)]
        if within.kind == "events":
            return _max(ce) - _min(ce) < within.value
        if within.kind == "attribute":
            return last[within.attribute] - first[within.attribute] < within.value
        time = self.checked.time_attribute
        return last[time(last["event_type"])] - first[time(first["event_type"])] < within.value

    def select(self, ces: list[frozenset], substream: list[int]) -> list[frozenset]:
        strategy = self.query.effective_strategy
        if strategy == "ALL" or not ces:
            return ces
        supports = {ce: frozenset(p for _, p in ce) for ce in ces}
        if strategy == "ANY":
            return [min(ces, key=lambda ce: sorted(ce))]
        if strategy in ("NEXT", "LAST"):
            best = functools.reduce(lambda a, b: b if _better(b, a, strategy) else a, supports.values())
            return [ce for ce in ces if supports[ce] == best]
        if strategy == "MAX":
            all_supports = set(supports.values())
            return [ce for ce in ces if not any(supports[ce] < other for other in all_supports)]
        # STRICT: the support is an interval of the (sub-)stream.
        index = {p: i for i, p in enumerate(substream)}
        kept = []
        for ce in ces:
            local = sorted(index[p] for p in supports[ce])
            if not local or local[-1] - local[0] + 1 == len(local):
                kept.append(ce)
        return kept

    def project(self, ces: list[frozenset], trigger: int, key: tuple | None) -> list[Match]:
        projection = self.query.projection
        as_labels = self.checked.as_labels
        if projection.kind == "list":
            kept = {item.label for item in projection.items}
        else:
            kept = None
        seen: dict[Match, None] = {}
        for ce in ces:
            if projection.kind == "none":
                positions: tuple[int, ...] = ()
                labels: dict[str, tuple[int, ...]] = {}
            else:
                chosen = [(label, p) for label, p in ce if kept is None or label in kept]
                positions = tuple(sorted({p for _, p in chosen}))
                labels = {}
                for label, p in chosen:
                    if label in as_labels:
                        labels.setdefault(label, []).append(p)
                labels = {k: tuple(sorted(v)) for k, v in labels.items()}
            seen.setdefault(Match(trigger, positions, labels, key), None)
        output = sorted(seen)
        if self.query.limit is not None:
            output = output[: self.query.limit]
        return output


def partition_key(event: Mapping[str, Any], groups, checked: CheckedQuery) -> tuple | None:
    """The PARTITION BY key of an event: the values of the first attribute list its type has."""
    decl = checked.schema.event_types[event["event_type"]]
    for group in groups:
        if all(decl.attribute(a) is not None for a in group):
            values = tuple(event.get(a, _MISSING) for a in group)
            if any(v is _MISSING or v is None for v in values):
                return None
            return values
    return None


def _min(ce: frozenset) -> float:
    return min((p for _, p in ce), default=math.inf)


def _max(ce: frozenset) -> float:
    return max((p for _, p in ce), default=-math.inf)


def _better(a: frozenset, b: frozenset, strategy: str) -> bool:
    """Whether support a is strictly better than b for NEXT (earliest) or LAST (latest)."""
    if a == b:
        return False
    diff = a ^ b
    pivot = min(diff) if strategy == "NEXT" else max(diff)
    return pivot in a


class _FormulaEvaluator:
    """``[[f]](i, j)`` over one (sub-)stream, memoised per (node, i, j)."""

    def __init__(self, stream: list[dict[str, Any]]) -> None:
        self.stream = stream
        self.memo: dict[tuple[int, int, int], frozenset] = {}
        self.keep: list[ast.Node] = []  # keep nodes alive so that id() stays unique

    def evaluate(self, node: ast.Formula, i: int, j: int) -> frozenset:
        if i > j:
            return frozenset()
        key = (id(node), i, j)
        cached = self.memo.get(key)
        if cached is None:
            self.keep.append(node)
            cached = self._evaluate(node, i, j)
            self.memo[key] = cached
        return cached

    def _evaluate(self, node: ast.Formula, i: int, j: int) -> frozenset:
        event = self.stream[j]
        if isinstance(node, ast.EventType):
            if event["event_type"] == node.name:
                return frozenset({CE({(node.name, j)})})
            return frozenset()
        if isinstance(node, ast.NotEvent):
            matches = event["event_type"] == node.atom.name and (
                node.cond is None or satisfies(node.cond, CE({(node.atom.name, j)}), self.stream)
            )
            return frozenset() if matches else frozenset({CE()})
        if isinstance(node, ast.Label):
            return frozenset(ce | {(node.label, p) for _, p in ce} for ce in self.evaluate(node.body, i, j))
        if isinstance(node, ast.Filter):
            return frozenset(
                ce for ce in self.evaluate(node.body, i, j) if satisfies(node.cond, ce, self.stream)
            )
        if isinstance(node, ast.Union_):
            return frozenset().union(*(self.evaluate(part, i, j) for part in node.parts))
        if isinstance(node, ast.Sequence):
            return self._sequence(node, len(node.parts), i, j)
        if isinstance(node, ast.Iteration):
            return self._iteration(node, i, j)
        if isinstance(node, ast.Conjunction):
            result = self.evaluate(node.parts[0], i, j)
            for part in node.parts[1:]:
                right = self.evaluate(part, i, j)
                result = frozenset(a | b for a in result for b in right if _support(a) == _support(b))
            return result
        if isinstance(node, ast.AllOf):
            return self._all_of(node, len(node.parts), i, j)
        if isinstance(node, ast.Unless):
            kept = []
            for ce in self.evaluate(node.left, i, j):
                if not ce:
                    kept.append(ce)
                    continue
                start, end = int(_min(ce)), int(_max(ce))
                if not any(self.evaluate(node.right, start, k) for k in range(start, end + 1)):
                    kept.append(ce)
            return frozenset(kept)
        raise TypeError(f"unknown formula node {node!r}")

    def _sequence(self, node: ast.Sequence, count: int, i: int, j: int) -> frozenset:
        """The first ``count`` parts of a sequence, evaluated over (i, j)."""
        if count == 1:
            return self.evaluate(node.parts[0], i, j)
        key = (id(node), count, i, j)
        cached = self.memo.get(key)  # type: ignore[arg-type]
        if cached is not None:
            return cached
        last = node.parts[count - 1]
        result = set()
        for k in range(i, j):
            left = self._sequence(node, count - 1, i, k)
            if not left:
                continue
            right = self.evaluate(last, k + 1, j)
            for a in left:
                for b in right:
                    if node.contiguous and not _adjacent(a, b, k):
                        continue
                    result.add(a | b)
        frozen = frozenset(result)
        self.memo[key] = frozen  # type: ignore[index]
        return frozen

    def _iteration(self, node: ast.Iteration, i: int, j: int) -> frozenset:
        result = set(self.evaluate(node.body, i, j))
        for k in range(i, j):
            left = self.evaluate(node.body, i, k)
            if not left:
                continue
            right = self.evaluate(node, k + 1, j)
            for a in left:
                for b in right:
                    if node.contiguous and not _adjacent(a, b, k):
                        continue
                    result.add(a | b)
        return frozenset(result)

    def _all_of(self, node: ast.AllOf, count: int, i: int, j: int) -> frozenset:
        """``[[f1 ALL ... ALL f_count]](i, j)``: each part ends at some j' <= j, one at j."""
        if count == 1:
            return self.evaluate(node.parts[0], i, j)
        key = (id(node), count, i, j)
        cached = self.memo.get(key)  # type: ignore[arg-type]
        if cached is not None:
            return cached
        last = node.parts[count - 1]
        result = set()
        for j1, j2 in itertools.product(range(i, j + 1), repeat=2):
            if max(j1, j2) != j:
                continue
            left = self._all_of(node, count - 1, i, j1)
            if not left:
                continue
            for a in left:
                for b in self.evaluate(last, i, j2):
                    result.add(a | b)
        frozen = frozenset(result)
        self.memo[key] = frozen  # type: ignore[index]
        return frozen


def _support(ce: frozenset) -> frozenset:
    return frozenset(p for _, p in ce)


def _adjacent(left: frozenset, right: frozenset, k: int) -> bool:
    """``f : g``: both non-empty, the left ends at k and the right starts at k + 1."""
    return bool(left) and bool(right) and _max(left) == k and _min(right) == k + 1


# ---------------------------------------------------------------------- conditions


def satisfies(cond: ast.Cond, ce: frozenset, stream: list[dict[str, Any]]) -> bool:
    """Whether a CE satisfies a FILTER condition (universal over the labelled events)."""
    if isinstance(cond, ast.And):
        return all(satisfies(part, ce, stream) for part in cond.parts)
    if isinstance(cond, ast.Or):
        return any(satisfies(part, ce, stream) for part in cond.parts)
    if isinstance(cond, ast.LabelCond):
        return all(eval_pred(cond.pred, stream[p]) for label, p in ce if label == cond.label)
    labels = sorted({attr.label for attr in _attrs_of(cond)})
    choices = [[p for label, p in ce if label == name] for name in labels]
    for combination in itertools.product(*choices):
        bound = {name: stream[p] for name, p in zip(labels, combination)}
        if not _compare(cond, lambda attr, bound=bound: bound[attr.label].get(attr.name, _MISSING)):
            return False
    return True


def _attrs_of(node) -> Iterable[ast.Attr]:
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, ast.Attr):
            yield item
        elif isinstance(item, (ast.Compare, ast.Arith)):
            stack.extend((item.left, item.right))
        elif isinstance(item, ast.Neg):
            stack.append(item.operand)


def eval_pred(pred: ast.Pred, event: Mapping[str, Any]) -> bool:
    """Evaluate a one-event predicate. An atomic test on a missing value is false."""

    def lookup(attr: ast.Attr) -> Any:
        return event.get(attr.name, _MISSING)

    if isinstance(pred, ast.And):
        return all(eval_pred(p, event) for p in pred.parts)
    if isinstance(pred, ast.Or):
        return any(eval_pred(p, event) for p in pred.parts)
    if isinstance(pred, ast.Not):
        return not eval_pred(pred.operand, event)
    if isinstance(pred, ast.Compare):
        return _compare(pred, lookup)
    value = _value(pred.operand, lookup)
    if value is _MISSING:
        return False
    if isinstance(pred, ast.Like):
        return _like(pred.pattern, value)
    if isinstance(pred, ast.InSet):
        inside = any(value == v and isinstance(v, bool) == isinstance(value, bool) for v in pred.values)
        return inside != pred.negated
    if isinstance(pred, ast.InInterval):
        inside = (pred.low is None or value >= pred.low) and (pred.high is None or value <= pred.high)
        return inside != pred.negated
    if isinstance(pred, ast.InRange):
        low, high = _value(pred.low, lookup), _value(pred.high, lookup)
        if low is _MISSING or high is _MISSING:
            return False
        return low <= value <= high
    raise TypeError(f"unknown predicate {pred!r}")


def _compare(node: ast.Compare, lookup) -> bool:
    left = _value(node.left, lookup)
    right = _value(node.right, lookup)
    if left is _MISSING or right is _MISSING:
        return False
    if isinstance(left, float) and math.isnan(left) or isinstance(right, float) and math.isnan(right):
        return False
    op = node.op
    if op == "=":
        return left == right
    if op == "!=":
        return left != right
    if op == "<":
        return left < right
    if op == "<=":
        return left <= right
    if op == ">":
        return left > right
    return left >= right


def _value(expr: ast.Expr, lookup) -> Any:
    """The value of an expression; _MISSING for a missing attribute or a division by zero."""
    if isinstance(expr, ast.Attr):
        value = lookup(expr)
        return _MISSING if value is None else value
    if isinstance(expr, ast.Literal):
        return expr.value
    if isinstance(expr, ast.Neg):
        value = _value(expr.operand, lookup)
        return value if value is _MISSING else -value
    left = _value(expr.left, lookup)
    right = _value(expr.right, lookup)
    if left is _MISSING or right is _MISSING:
        return _MISSING
    op = expr.op
    if op == "+":
        return left + right
    if op == "-":
        return left - right
    if op == "*":
        return left * right
    if right == 0:
        return _MISSING
    if op == "/":
        return left / right
    return (
        math.fmod(left, right)
        if isinstance(left, float) or isinstance(right, float)
        else _int_mod(left, right)
    )


def _int_mod(left: int, right: int) -> int:
    # Truncated remainder (sign of the dividend), as in C, Java and Arrow.
    return (
        int(math.fmod(left, right))
        if abs(left) < 2**53 and abs(right) < 2**53
        else left - right * int(left / right)
    )


@functools.lru_cache(maxsize=4096)
def _like(pattern: str, value: str) -> bool:
    """Full match of an RE2 regular expression (pyarrow's engine, as in the column-wise path)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    result = pc.match_substring_regex(pa.array([value], pa.string()), f"^(?:{pattern})$")
    return bool(result[0].as_py())
