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
from collections.abc import Callable, Iterator

from ceql.runtime.nodes import (
    CHILD,
    DATA,
    HAS_EMPTY,
    LABELS,
    LEFT,
    MAX_FIRST,
    MEASURE,
    MIN_FIRST,
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
    roots: list[tuple],
    supports: list[tuple[int, ...]],
    window: float | None,
    keep: Callable[[tuple, dict], bool] | None = None,
) -> Iterator[tuple]:
    """The complex events (paths) of ``roots`` whose support is one of ``supports``, in one
    pass guided by a trie of the supports (read from the latest position down), so that the
    work is linear in the structure visited and the output, not in their product. ``keep``
    (a union branch, the trie level it would be read at) may prune branches that cannot spell
    a wanted support (MaxSelection's)."""
    trie: dict = {}
    for support in supports:
        level = trie
        for position in reversed(support):
            level = level.setdefault(position, {})
        level[None] = True  # a complete support ends here
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
                for child in (node[RIGHT], node[LEFT]):
                    if keep is None or keep(child, level):
                        stack.append((child, level, path, limit, empty_ok))
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


# ---------------------------------------------------------------------------------- MAX, kept


class MaxSelection:
    """MAX over the tECS with a memo kept across triggers, so that each node's maximal
    supports are computed once (the tECS is immutable), and a trigger costs the new structure
    plus its output, not the whole live structure again.

    A support is a persistent list ``(pos, rest, size)`` from the latest position down (None:
    empty), so that a node's supports share their tails with its children's: prepending a
    position is one cell, and containment between a support and one of its own extensions is
    found at once (a shared tail is the same object). A node's maximal supports (an antichain)
    are a persistent list too, ``(support, rest, count, smallest size, largest size)``: a union
    whose sides cannot contain one another (every support of one at least as large as every
    support of the other, without a strictly smaller one on that side to be contained) appends
    the smaller side, so a union chain (``A ; B``: one A per link) costs one cell per link.

    The memo is keyed by (node, window limit): a node whose complex events all start inside the
    limit has the same maximal supports as without it, so it is keyed as unlimited and stays
    valid across triggers; the other keys live for one trigger. It is cleared when it holds
    ``MEMO_LIMIT`` entries (the nodes it keeps alive are then freed)."""

    MEMO_LIMIT = 400_000

    def __init__(self, window: float | None) -> None:
        self.window = window
        self.memo: dict[tuple, tuple] = {}  # key -> (node, value)
        self.tops: dict[int, tuple] = {}  # id(node) -> (node, largest top position below it)
        self.interned: dict[tuple, tuple] = {}  # (pos, id(rest)) -> the support cell (_intern)

    def select(self, roots: list[tuple]) -> Iterator[tuple]:
        """The complex events (paths) of ``roots`` whose support is maximal."""
        if len(self.memo) > self.MEMO_LIMIT or len(self.interned) > 4 * self.MEMO_LIMIT:
            self.memo.clear()
            self.interned.clear()
        if len(self.tops) > self.MEMO_LIMIT:
            self.tops.clear()
        trigger: dict[tuple, tuple] = {}
        values = [self._value(root, None, True, trigger) for root in roots]
        items = [s for value in values if value is not None for s in _ac_items(value)]
        if not items:
            return iter(())
        # Merged apart (not through _ac_union): the memo's antichains stay tips of their lineages.
        found = _maximal(items) if len(values) > 1 else items
        supports = sorted({tuple(reversed(_positions(s))) for s in found})
        return self._paths(roots, supports)

    # -- maximal supports

    def _key(self, node: tuple, lim, eok: bool) -> tuple:
        if lim is not None and node[MIN_FIRST] > lim:
            lim = -_INF  # nothing below is cut by the window
        return (id(node), lim, eok)

    def _lookup(self, key: tuple, trigger: dict):
        found = self.memo.get(key) if key[1] is None or key[1] == -_INF else trigger.get(key)
        return found

    def _value(self, root: tuple, limit, empty_ok: bool, trigger: dict):
        """The antichain of maximal supports of the complex events below ``root`` within the
        window (None: none), bottom-up with an explicit stack."""
        window = self.window
        stack: list[tuple] = [(root, limit, empty_ok, False)]
        while stack:
            node, lim, eok, expanded = stack.pop()
            key = self._key(node, lim, eok)
            if key[1] == -_INF:
                lim = -_INF
            if self._lookup(key, trigger) is not None:
                continue
            size = len(node)
            if lim is not None and node[MAX_FIRST] <= lim and not (node[HAS_EMPTY] and eok):
                self._store(key, node, None, trigger)
                continue
            if size == 3:
                self._store(key, node, _AC_EMPTY if eok else None, trigger)
                continue
            if size == 5:
                # Binary unions: a chain of them costs one step per link (the values are kept).
                parts = [
                    (child, lim, eok)
                    for child in (node[LEFT], node[RIGHT])
                    if lim is None or child[MAX_FIRST] > lim or (child[HAS_EMPTY] and eok)
                ]
            else:
                m = node[MEASURE]
                child_limit = lim if lim is not None or window is None else window_limit(m, window)
                parts = [(node[CHILD], child_limit, True if child_limit is None else m > child_limit)]
            keys = [self._key(*part) for part in parts]
            missing = [p for p, k in zip(parts, keys) if self._lookup(k, trigger) is None]
            if missing and not expanded:
                stack.append((node, lim, eok, True))
                stack.extend((p[0], p[1], p[2], False) for p in missing)
                continue
            values = [self._lookup(k, trigger)[1] for k in keys]
            if size == 5:
                value = None
                for item in values:
                    if item is not None:
                        value = item if value is None else _ac_union(value, item)
            else:
                value = None if values[0] is None else _ac_prepend(self.interned, node[POS], values[0])
            self._store(key, node, value, trigger)
        return self._lookup(self._key(root, limit, empty_ok), trigger)[1]

    def _store(self, key: tuple, node: tuple, value, trigger: dict) -> None:
        if key[1] is None or key[1] == -_INF:
            self.memo[key] = (node, value)
        else:
            trigger[key] = (node, value)

    # -- the complex events with those supports

    def _top(self, node: tuple) -> int:
        """The largest position of an output node reachable through unions only."""
        found = self.tops.get(id(node))
        if found is not None:
            return found[1]
        stack = [(node, False)]
        while stack:
            item, expanded = stack.pop()
            if id(item) in self.tops:
                continue
            if len(item) == 8:
                self.tops[id(item)] = (item, item[POS])
            elif len(item) == 3:
                self.tops[id(item)] = (item, -1)
            elif not expanded:
                stack.append((item, True))
                stack.extend((child, False) for child in (item[LEFT], item[RIGHT]) if id(child) not in self.tops)
            else:
                self.tops[id(item)] = (item, max(self.tops[id(item[LEFT])][1], self.tops[id(item[RIGHT])][1]))
        return self.tops[id(node)][1]

    def _paths(self, roots: list[tuple], supports: list[tuple[int, ...]]) -> Iterator[tuple]:
        """``paths_with_supports``, skipping the union branches whose latest top position is
        below the next one the supports want (they cannot spell it)."""
        smallest: dict[int, int | None] = {}  # id(level) -> the smallest position it wants

        def keep(child: tuple, level: dict) -> bool:
            if id(level) in smallest:
                wanted = smallest[id(level)]
            else:
                wanted = smallest[id(level)] = min((p for p in level if p is not None), default=None)
            if wanted is None:
                return child[HAS_EMPTY]
            return (child[HAS_EMPTY] and None in level) or self._top(child) >= wanted

        return paths_with_supports(roots, supports, self.window, keep)


# An antichain of supports: None (no complex event), or a persistent list of cells
# (support, rest, count, smallest size, largest size, index). Supports are interned (one object
# per position list, see _intern), so that repeats are found by identity: the index maps
# id(support) -> the count of the cell that added it, shared by the cells of one lineage (each
# cell a prefix of the next), so a cell holds a support iff its index says a count <= its own.
# Only the latest cell of a lineage extends it in place; any other copies (see _ac_extend).


class _Index:
    __slots__ = ("at", "top")

    def __init__(self) -> None:
        self.at: dict[int, int] = {}
        self.top = 0  # the count of the lineage's latest cell (-1: never extended in place)


def _size(support) -> int:
    return 0 if support is None else support[2]


def _intern(table: dict, pos: int, rest) -> tuple:
    """The one support cell for ``pos`` followed by ``rest`` (the table keeps ``rest`` alive,
    so its id stays its own)."""
    key = (pos, id(rest))
    cell = table.get(key)
    if cell is None:
        cell = table[key] = (pos, rest, _size(rest) + 1)
    return cell


def _ac_items(antichain) -> Iterator:
    cell = antichain
    while cell is not None:
        yield cell[0]
        cell = cell[1]


def _ac_build(supports) -> tuple | None:
    """An antichain of ``supports`` (repeats dropped), with a fresh index."""
    index = _Index()
    at = index.at
    cell = None
    for support in supports:
        if id(support) in at:
            continue
        size = _size(support)
        if cell is None:
            cell = (support, None, 1, size, size, index)
        else:
            cell = (support, cell, cell[2] + 1, min(cell[3], size), max(cell[4], size), index)
        at[id(support)] = cell[2]
    index.top = cell[2] if cell is not None else 0
    return cell


def _ac_extend(cell: tuple, supports: list) -> tuple:
    """``cell`` followed by those of ``supports`` it does not hold (none contains another)."""
    index = cell[5]
    if index.top != cell[2]:
        # The lineage already grew past this cell (or is frozen): a copy with its own index.
        return _ac_build([*reversed(list(_ac_items(cell))), *supports])
    at = index.at
    count = cell[2]
    for support in supports:
        if at.get(id(support), _INF) <= count:
            continue  # a repeat
        size = _size(support)
        count += 1
        cell = (support, cell, count, min(cell[3], size), max(cell[4], size), index)
        at[id(support)] = count
    index.top = count
    return cell


_EMPTY_INDEX = _Index()
_EMPTY_INDEX.at[id(None)] = 1
_EMPTY_INDEX.top = -1  # shared by every MAX: never extended in place
_AC_EMPTY = (None, None, 1, 0, 0, _EMPTY_INDEX)  # the empty support alone


def _ac_prepend(table: dict, pos: int, antichain) -> tuple:
    """Every support extended by a later position (inclusion is kept: still an antichain)."""
    return _ac_build([_intern(table, pos, s) for s in _ac_items(antichain)][::-1])


def _maximal(items: list) -> list:
    """The supports of ``items`` (repeats dropped) that no other one strictly contains."""
    items = list({id(s): s for s in items}.values())
    items.sort(key=_size, reverse=True)
    kept: list = []
    for support in items:
        size = _size(support)
        if any(_size(other) > size and _subset(support, other) for other in kept):
            continue
        kept.append(support)
    return kept


def _ac_union(a, b):
    """The maximal supports of two antichains together."""
    if a is b:
        return a
    if a[2] < b[2]:
        a, b = b, a
    if a[3] == a[4] == b[3] == b[4]:
        # One size everywhere: a support strictly inside another is smaller, so none is; only
        # repeats to drop. The larger side is extended (a union chain: one cell per link).
        return _ac_extend(a, list(_ac_items(b))[::-1])
    return _ac_build(_maximal(list(_ac_items(a)) + list(_ac_items(b)))[::-1])


def _subset(a, b) -> bool:
    """Whether support a is inside support b (both from the latest position down)."""
    while a is not None:
        if a is b:
            return True
        if b is None or a[2] > b[2]:
            return False
        if a[0] == b[0]:
            a, b = a[1], b[1]
        elif b[0] > a[0]:
            b = b[1]
        else:
            return False
    return True


def _positions(support) -> list[int]:
    out = []
    while support is not None:
        out.append(support[0])
        support = support[1]
    return out
