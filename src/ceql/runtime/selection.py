"""NEXT and LAST without enumerating every complex event of a trigger.

The complex events of a trigger are the paths of the tECS below the final states' nodes; a path
spells its positions from the latest down. LAST prefers the support whose latest differing
position it contains: the largest descending position sequence (a longer one wins a tie on a
prefix). NEXT prefers the earliest differing position: the smallest ascending sequence with +inf
appended. Both follow from the children's best by prepending (LAST) or appending (NEXT) a node's
position, so a memoised pass over the live structure finds the best support without enumerating
the (possibly exponentially many) complex events; the window is respected exactly as in the
enumeration. The complex events with that support (several when labels differ) are then found by
a DFS guided by the support.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

_INF = math.inf


def best_support(roots: list[tuple], strategy: str, window: float | None) -> tuple[int, ...] | None:
    """The best support among the complex events of ``roots`` (sorted ascending), or None."""
    memo: dict[tuple, tuple | None] = {}
    best: tuple | None = None
    for root in roots:
        found = _best(root, None, True, strategy, window, memo)
        if found is not None and (best is None or _better(found, best, strategy)):
            best = found
    if best is None:
        return None
    if strategy == "LAST":
        return tuple(reversed(best))
    return best[:-1]  # drop the +inf sentinel


def _better(a: tuple, b: tuple, strategy: str) -> bool:
    return a > b if strategy == "LAST" else a < b


def _best(root: tuple, limit, empty_ok: bool, strategy: str, window, memo: dict) -> tuple | None:
    """Best sequence below ``root`` in a context (iterative post-order, memoised).

    LAST sequences are descending positions; NEXT sequences ascending with +inf at the end."""
    last = strategy == "LAST"
    stack: list[tuple] = [(root, limit, empty_ok, False)]
    keep: list[tuple] = []
    while stack:
        node, lim, eok, expanded = stack.pop()
        key = (id(node), lim, eok)
        if key in memo:
            continue
        size = len(node)
        if lim is not None and node[0] <= lim and not (node[1] and eok):
            memo[key] = None  # every complex event here falls out of the window
            keep.append(node)
            continue
        if size == 3:  # BOTTOM: the empty remainder
            memo[key] = (() if last else (_INF,)) if eok else None
            keep.append(node)
            continue
        if size == 5:
            parts = [(node[3], lim, eok), (node[4], lim, eok)]
        else:
            pos, child, m = node[3], node[5], node[6]
            child_limit = lim
            if child_limit is None and window is not None:
                child_limit = m - window  # the top output fixes the CE's window
            child_ok = True if child_limit is None else m > child_limit
            parts = [(child, child_limit, child_ok)]
        missing = [p for p in parts if (id(p[0]), p[1], p[2]) not in memo]
        if missing and not expanded:
            stack.append((node, lim, eok, True))
            stack.extend((p[0], p[1], p[2], False) for p in missing)
            continue
        if size == 5:
            results = [memo[(id(p[0]), p[1], p[2])] for p in parts]
            results = [r for r in results if r is not None]
            if not results:
                value = None
            else:
                value = results[0]
                for other in results[1:]:
                    if _better(other, value, strategy):
                        value = other
        else:
            below = memo[(id(parts[0][0]), parts[0][1], parts[0][2])]
            if below is None:
                value = None
            elif last:
                value = (pos,) + below
            else:
                value = below[:-1] + (pos, _INF)
        memo[key] = value
        keep.append(node)
    return memo[(id(root), limit, empty_ok)]


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
                stack.append((node[4], index, path, limit, empty_ok))
                stack.append((node[3], index, path, limit, empty_ok))
                continue
            pos, m = node[3], node[6]
            if index >= len(descending) or pos != descending[index]:
                continue
            if limit is None and window is not None:
                limit = m - window
            child_ok = True if limit is None else m > limit
            stack.append((node[5], index + 1, (pos, node[4], node[7], path), limit, child_ok))
