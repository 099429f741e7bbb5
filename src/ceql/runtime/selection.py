"""NEXT, LAST and MAX without enumerating every complex event of a trigger.

The complex events of a trigger are the paths of the tECS below the final states' nodes; a path
spells its positions from the latest down. LAST prefers the support whose latest differing
position it contains: the largest descending position sequence (a longer one wins a tie on a
prefix). NEXT prefers the earliest differing position: the smallest ascending sequence with +inf
appended. Both follow from the children's best by prepending (LAST) or appending (NEXT) a node's
position, so a memoised pass over the live structure finds the best support without enumerating
the (possibly exponentially many) complex events; the window is respected exactly as in the
enumeration. MAX keeps, per node, the antichain of its maximal supports (prepending a position
preserves inclusion, and a union's maximal supports are the maximal ones of both sides). The
complex events with a chosen support (several when labels differ) are then found by a DFS guided
by the support.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

from ceql.runtime.nodes import (
    CHILD,
    DATA,
    HAS_EMPTY,
    LABELS,
    LEFT,
    MAX_FIRST,
    MEASURE,
    POS,
    RIGHT,
    window_limit,
)

_INF = math.inf


def maximal_supports(roots: list[tuple], window: float | None) -> list[tuple[int, ...]]:
    """The supports of ``roots`` that no other support contains (each sorted ascending)."""
    memo: dict[tuple, tuple | None] = {}
    found: list[frozenset] = []
    for root in roots:
        value = _walk(root, None, True, window, memo, _max_leaf, _max_output, _max_union)
        if value is not None:
            found = _antichain(found + list(value))
    return sorted(tuple(sorted(support)) for support in found)


def _max_leaf() -> tuple:
    return (frozenset(),)


def _max_output(pos: int, below: tuple) -> tuple:
    return tuple(support | {pos} for support in below)


def _max_union(values: list[tuple]) -> tuple:
    return tuple(_antichain([s for value in values for s in value]))


def _antichain(supports: list[frozenset]) -> list[frozenset]:
    """The supports not strictly contained in another (duplicates kept once). Larger sets are
    indexed by position first, so a set is only compared with strictly larger ones that share
    all its positions: linear when no set contains another (the common case)."""
    unique = list(dict.fromkeys(supports))
    if len(unique) < 2:
        return unique
    by_size: dict[int, list[frozenset]] = {}
    for support in unique:
        by_size.setdefault(len(support), []).append(support)
    kept: list[frozenset] = []
    postings: dict[int, set[int]] = {}  # position -> indexes (in kept) of larger sets holding it
    for size in sorted(by_size, reverse=True):
        group = by_size[size]
        survivors = []
        for support in group:
            if kept and (not support or _contained(support, postings)):
                continue
            survivors.append(support)
        for support in survivors:
            number = len(kept)
            kept.append(support)
            for position in support:
                postings.setdefault(position, set()).add(number)
    return kept


def _contained(support: frozenset, postings: dict[int, set[int]]) -> bool:
    """Whether some indexed (strictly larger) set holds every position of ``support``."""
    lists = []
    for position in support:
        found = postings.get(position)
        if not found:
            return False
        lists.append(found)
    lists.sort(key=len)
    common = set(lists[0])
    for other in lists[1:]:
        common &= other
        if not common:
            return False
    return True


def _union_leaves(node: tuple, lim, eok, window) -> list[tuple]:
    """The non-union nodes under a union tree (a union is n-ary here: merging the children's
    values once, not pairwise along a chain, keeps MAX linear)."""
    out = []
    stack = [node]
    while stack:
        item = stack.pop()
        if len(item) == 5:
            for child in (item[4], item[3]):
                if lim is not None and child[MAX_FIRST] <= lim and not (child[HAS_EMPTY] and eok):
                    continue  # nothing of it is in the window
                stack.append(child)
        else:
            out.append(item)
    return out


def _walk(root, limit, empty_ok, window, memo, leaf, output, union):
    """A memoised bottom-up pass over the complex events below ``root`` that respects the window
    exactly like the enumeration: ``leaf()`` for the empty remainder, ``output(pos, below)`` for
    an event, ``union(values)`` for alternatives; None where no complex event is in the window."""
    stack: list[tuple] = [(root, limit, empty_ok, False)]
    keep: list[tuple] = []
    while stack:
        node, lim, eok, expanded = stack.pop()
        key = (id(node), lim, eok)
        if key in memo:
            continue
        size = len(node)
        if lim is not None and node[MAX_FIRST] <= lim and not (node[HAS_EMPTY] and eok):
            memo[key] = None
            keep.append(node)
            continue
        if size == 3:
            memo[key] = leaf() if eok else None
            keep.append(node)
            continue
        if size == 5:
            parts = [(child, lim, eok) for child in _union_leaves(node, lim, eok, window)]
        else:
            m = node[MEASURE]
            child_limit = lim if lim is not None or window is None else window_limit(m, window)
            parts = [(node[CHILD], child_limit, True if child_limit is None else m > child_limit)]
        missing = [p for p in parts if (id(p[0]), p[1], p[2]) not in memo]
        if missing and not expanded:
            stack.append((node, lim, eok, True))
            stack.extend((p[0], p[1], p[2], False) for p in missing)
            continue
        values = [memo[(id(p[0]), p[1], p[2])] for p in parts]
        if size == 5:
            present = [v for v in values if v is not None]
            memo[key] = union(present) if present else None
        else:
            memo[key] = None if values[0] is None else output(node[POS], values[0])
        keep.append(node)
    return memo[(id(root), limit, empty_ok)]


def best_support(roots: list[tuple], strategy: str, window: float | None) -> tuple[int, ...] | None:
    """The best support among the complex events of ``roots`` (sorted ascending), or None.

    LAST compares descending position sequences (the largest wins); NEXT compares ascending ones
    with +inf appended (the smallest wins)."""
    last = strategy == "LAST"
    better = (lambda a, b: a > b) if last else (lambda a, b: a < b)

    def leaf() -> tuple:
        return () if last else (_INF,)

    def output(pos: int, below: tuple) -> tuple:
        return (pos,) + below if last else below[:-1] + (pos, _INF)

    def union(values: list[tuple]) -> tuple:
        best = values[0]
        for other in values[1:]:
            if better(other, best):
                best = other
        return best

    memo: dict[tuple, tuple | None] = {}
    best: tuple | None = None
    for root in roots:
        found = _walk(root, None, True, window, memo, leaf, output, union)
        if found is not None and (best is None or better(found, best)):
            best = found
    if best is None:
        return None
    return tuple(reversed(best)) if last else best[:-1]


def paths_with_supports(
    roots: list[tuple], supports: list[tuple[int, ...]], window: float | None
) -> Iterator[tuple]:
    """The complex events (paths) of ``roots`` whose support is one of ``supports``, in one
    pass guided by a trie of the supports (read from the latest position down), so that the
    work is linear in the structure visited and the output, not in their product."""
    trie: dict = {}
    for support in supports:
        node = trie
        for position in reversed(support):
            node = node.setdefault(position, {})
        node[None] = True  # a complete support ends here
    for root in roots:
        stack: list[tuple] = [(root, trie, None, None, True)]
        while stack:
            node, level, path, limit, empty_ok = stack.pop()
            size = len(node)
            if size == 3:
                if None in level and empty_ok:
                    yield path
                continue
            if size == 5:
                stack.append((node[RIGHT], level, path, limit, empty_ok))
                stack.append((node[LEFT], level, path, limit, empty_ok))
                continue
            pos, m = node[POS], node[MEASURE]
            following = level.get(pos)
            if following is None:
                continue
            if limit is None and window is not None:
                limit = window_limit(m, window)
            child_ok = True if limit is None else m > limit
            stack.append((node[CHILD], following, (pos, node[LABELS], node[DATA], path), limit, child_ok))


def paths_with_support(roots: list[tuple], support: tuple[int, ...], window: float | None) -> Iterator[tuple]:
    """The complex events (paths) of ``roots`` whose support is exactly ``support``."""
    descending = tuple(reversed(support))
    for root in roots:
        stack: list[tuple] = [(root, 0, None, None, True)]
        while stack:
            node, index, path, limit, empty_ok = stack.pop()
            size = len(node)
            if size == 3:
                if index == len(descending) and empty_ok:
                    yield path
                continue
            if size == 5:
                stack.append((node[RIGHT], index, path, limit, empty_ok))
                stack.append((node[LEFT], index, path, limit, empty_ok))
                continue
            pos, m = node[POS], node[MEASURE]
            if index >= len(descending) or pos != descending[index]:
                continue
            if limit is None and window is not None:
                limit = window_limit(m, window)
            child_ok = True if limit is None else m > limit
            stack.append((node[CHILD], index + 1, (pos, node[LABELS], node[DATA], path), limit, child_ok))
