"""The timed enumerable compact set (tECS): the shared structure of all partial matches.

Nodes are immutable tuples, so a structure handed to an enumeration stays valid whatever the
evaluator does next. Each node represents a set of complex events (CEs):

  BOTTOM                          the set holding only the empty CE
  output (mf, he, minf, pos, labels, child, m, data)
                                  every CE of ``child`` plus the event at ``pos`` reported under
                                  ``labels``; ``m`` is that event's window measure and ``data``
                                  what later checks need of it (attribute values, local index)
  union  (mf, he, minf, a, b)     the CEs of a and of b (disjoint by I/O-determinism)

``mf``/``minf`` are the largest/smallest window measure of the *first* event over the node's
non-empty CEs (-inf/+inf if none) and ``he`` tells whether the empty CE is in the set. They let
the enumeration skip, in constant time, every sub-structure whose CEs all fall out of the window,
so the delay between two outputs stays proportional to the output (no wasted descents).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from fractions import Fraction

NEG_INF = -math.inf
POS_INF = math.inf
BOTTOM = (NEG_INF, True, POS_INF)

# Field positions. Every node starts with MAX_FIRST, HAS_EMPTY, MIN_FIRST; a node's kind is its
# length (3 bottom, 5 union, 8 output), which is the cheapest test in the hot loops.
MAX_FIRST, HAS_EMPTY, MIN_FIRST = 0, 1, 2
POS, LABELS, CHILD, MEASURE, DATA = 3, 4, 5, 6, 7  # output nodes
LEFT, RIGHT = 3, 4  # union nodes
BOTTOM_SIZE, UNION_SIZE, OUTPUT_SIZE = 3, 5, 8
# A complex event as enumerated: a linked list (pos, labels, data, rest), earliest event first.
PATH_POS, PATH_LABELS, PATH_DATA, PATH_REST = 0, 1, 2, 3


def window_limit(m, window):
    """The exact bound ``m - window``: a CE whose last event has measure ``m`` is in the window
    iff its first event's measure is greater (``m - first < window``, over the reals). Integers
    are exact in Python; for a double the difference may not be a double, and is then a Fraction
    (which compares exactly with floats). A missing measure (NaN) gives NaN: nothing is greater
    (always the one ``math.nan`` object, so that limits used as memo keys stay equal)."""
    if m != m:
        return math.nan
    limit = m - window
    if type(m) is float and math.isfinite(m):
        exact = Fraction(m) - window
        if limit != exact:
            return exact
    return limit


def output(pos: int, labels: frozenset, child: tuple, m: float, data=None) -> tuple:
    """A node for the CEs of ``child`` extended with the event at ``pos`` (a missing measure,
    NaN, puts no CE that starts with this event in any window: it does not count as a first)."""
    if child[HAS_EMPTY] and m == m:
        mf = child[MAX_FIRST] if child[MAX_FIRST] > m else m
        minf = child[MIN_FIRST] if child[MIN_FIRST] < m else m
    else:
        mf, minf = child[MAX_FIRST], child[MIN_FIRST]
    return (mf, False, minf, pos, labels, child, m, data)


def union(a: tuple, b: tuple) -> tuple:
    """A node for the CEs of a and b."""
    return (
        a[MAX_FIRST] if a[MAX_FIRST] > b[MAX_FIRST] else b[MAX_FIRST],
        a[HAS_EMPTY] or b[HAS_EMPTY],
        a[MIN_FIRST] if a[MIN_FIRST] < b[MIN_FIRST] else b[MIN_FIRST],
        a,
        b,
    )


def enumerate_paths(root: tuple, window: float | None, newest_first: bool = False) -> Iterator[tuple | None]:
    """Every CE of ``root`` within the window, as a linked list ``(pos, labels, data, rest)`` in
    increasing position order (None for the empty CE). Explicit stack, no recursion.
    ``newest_first`` visits the second child of a union first: unions are built as (older,
    newer), so the first complex event comes after a short descent (ANY needs just one).

    A CE is within the window when ``m(last) - m(first) < window``; its last event is the first
    output node met from the root, which fixes the limit for everything below it.
    """
    stack: list[tuple] = [(root, None, None, True)]
    pop = stack.pop
    push = stack.append
    while stack:
        node, path, limit, empty_ok = pop()
        while True:
            size = len(node)
            if size == 3:  # BOTTOM
                if empty_ok:
                    yield path
                break
            if size == 5:  # union
                if newest_first:
                    b, a = node[LEFT], node[RIGHT]
                else:
                    a, b = node[LEFT], node[RIGHT]
                if limit is None:
                    push((b, path, None, empty_ok))
                    node = a
                    continue
                a_ok = a[MAX_FIRST] > limit or (a[HAS_EMPTY] and empty_ok)
                if b[MAX_FIRST] > limit or (b[HAS_EMPTY] and empty_ok):
                    if a_ok:
                        push((b, path, limit, empty_ok))
                        node = a
                        continue
                    node = b
                    continue
                if a_ok:
                    node = a
                    continue
                break
            # output
            pos, m, child = node[POS], node[MEASURE], node[CHILD]
            if limit is None and window is not None:
                limit = window_limit(m, window)  # this is the CE's last event
            if limit is not None:
                empty_ok = m > limit
                if not (child[MAX_FIRST] > limit or (child[HAS_EMPTY] and empty_ok)):
                    break
            path = (pos, node[LABELS], node[DATA], path)
            node = child


def prune(roots: list[tuple], limit: float) -> list[tuple | None]:
    """Copies of ``roots`` without the CEs whose first event has measure <= ``limit`` (the empty
    CE is kept). Shared sub-structures stay shared; untouched ones are not copied. Iterative,
    memoised per (node, empty allowed), so the cost is proportional to the pruned boundary."""
    memo: dict[tuple[int, bool], tuple | None] = {}
    keep_alive: list[tuple] = []  # nodes whose id() is a memo key must stay alive

    def settled(node: tuple, empty_ok: bool) -> tuple | None | bool:
        """The result if known without looking at children, else False."""
        if len(node) == 3:
            return node if empty_ok else None
        if node[MAX_FIRST] <= limit and not (node[HAS_EMPTY] and empty_ok):
            return None
        if node[MIN_FIRST] > limit and (empty_ok or not node[HAS_EMPTY]):
            return node  # everything inside survives
        return memo.get((id(node), empty_ok), False)

    results: list[tuple | None] = []
    for root in roots:
        top = settled(root, True)
        if top is not False:
            results.append(top)  # type: ignore[arg-type]
            continue
        # Post-order over (node, empty_ok) pairs.
        work: list[tuple[tuple, bool, bool]] = [(root, True, False)]
        while work:
            node, empty_ok, expanded = work.pop()
            key = (id(node), empty_ok)
            if key in memo:
                continue
            if len(node) == 5:
                a, b = node[LEFT], node[RIGHT]
                ra, rb = settled(a, empty_ok), settled(b, empty_ok)
                if not expanded and (ra is False or rb is False):
                    work.append((node, empty_ok, True))
                    if ra is False:
                        work.append((a, empty_ok, False))
                    if rb is False:
                        work.append((b, empty_ok, False))
                    continue
                if ra is False:
                    ra = memo[(id(a), empty_ok)]
                if rb is False:
                    rb = memo[(id(b), empty_ok)]
                if ra is None:
                    result = rb
                elif rb is None:
                    result = ra
                elif ra is a and rb is b:
                    result = node
                else:
                    result = union(ra, rb)
            else:
                child = node[CHILD]
                child_ok = node[MEASURE] > limit
                rc = settled(child, child_ok)
                if rc is False:
                    if not expanded:
                        work.append((node, empty_ok, True))
                        work.append((child, child_ok, False))
                        continue
                    rc = memo[(id(child), child_ok)]
                if rc is None:
                    result = None
                elif rc is child:
                    result = node
                else:
                    result = output(node[POS], node[LABELS], rc, node[MEASURE], node[DATA])
            memo[key] = result
            keep_alive.append(node)
        results.append(memo[(id(root), True)])
    return results


def count_nodes(roots: list[tuple]) -> int:
    """The number of distinct nodes reachable from ``roots`` (for memory accounting)."""
    seen: set[int] = set()
    stack = list(roots)
    while stack:
        node = stack.pop()
        if len(node) == 3 or id(node) in seen:
            continue
        seen.add(id(node))
        if len(node) == 5:
            stack.append(node[LEFT])
            stack.append(node[RIGHT])
        else:
            stack.append(node[CHILD])
    return len(seen)
