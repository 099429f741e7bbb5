"""The compiled loop of equality joins (issue 34; joins.py holds the shapes and the state).

A sequence of single labelled events linked by key equalities inside a window (``T AS x ; R
AS y FILTER x.id = y.id WITHIN n``) is evaluated as a hash join: one hash table key -> the
latest event of each role with that key, and per stored event the previous one of its role
and key (a chain, newest first). An event of the last role walks the chains of the roles
before it, back to the window's edge; every event then joins the chains of the roles its type
plays. Entries are appended in stream order, so the expired ones are a prefix:
``join_compact`` drops it and rebuilds the table.

Layout, chosen for the cache (a large window's table and entries outgrow it; each event's
probe was the cost):

- **One table for every role**: slot j is ``SLOT`` int64 words of ``tab`` starting at ``j *
  SLOT``: the key, then the head (latest entry) of each role as int32 lanes (``tab.view(int32)``
  from lane 2 on; -1: none; a slot whose heads are all -1 is empty). An event probes once for
  all the roles it plays and the trigger's walk reads every role's head from the same slot.
  Slots are 16 bytes up to three roles (four to a cache line), 32 up to seven.
- **Entries are rows** of ``ent`` (position, measure, previous entry, key, role, then each
  linked attribute's value and validity): a chain step, links included, reads one row.
- **Probes are issued ahead**: the loop works in groups of ``GROUP`` events, first hashing
  each event's key and loading its home slot (independent loads the CPU overlaps), then
  processing the group, whose slots are then in cache.

The constants live here because numba freezes globals into its on-disk cache, which is
invalidated only when the defining file changes.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ceql.runtime.kernel.compiled import _GOLDEN, MISSING, _lowest_first

# Join scalars (js):
J_ENTRIES = 0  # entries in use
J_NMATCH = 1  # complex events in the output buffer
J_NOW = 2  # the last window measure seen (MISSING before any)
J_KEYS = 3  # slots in use in the table (the table is sized by keys, not entries)
J_SINK = 4  # where the loads issued ahead go, so that the compiler keeps them
J_SIZE = 5

# The fields of a join entry, one row of ``ent`` each.
E_POS = 0  # the event's stream position
E_MEAS = 1  # its window measure
E_PREV = 2  # the previous entry of its role and key (-1: none)
E_KEY = 3
E_ROLE = 4
E_LINKED = 5  # then per linked attribute a: its value at E_LINKED + 2a, its validity at + 1

JOIN_DONE = 0
JOIN_OUTPUT_FULL = 1  # the output buffer cannot take the current trigger's complex events
JOIN_ENTRIES_FULL = 2  # the entry arrays or the table need room

EMPTY = -1  # a head of a slot no key has taken (a slot is empty when every head is)
GONE = -2  # a head whose entries all expired (the key keeps its slot until the table is rebuilt)
GROUP = 32  # events whose home slots are loaded ahead of processing them
MAX_ENTRIES = 2**31 - 1  # entry indexes are int32 lanes of the table


def slot_words(roles: int) -> int:
    """int64 words per table slot for ``roles`` roles: the key and an int32 head for every
    role but the last, rounded up to a power of two (slots never straddle a cache line)."""
    lanes = 2 + max(roles - 1, 1)
    words = 2
    while 2 * words < lanes:
        words *= 2
    return words


def entry_fields(width: int) -> int:
    """Fields of an entry row with ``width`` linked attributes."""
    return E_LINKED + 2 * width


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _home(key, bits):
    return np.int64((np.uint64(key) * np.uint64(_GOLDEN)) >> np.uint64(64 - bits))


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _empty(h32, base, heads):
    for r in range(heads):
        if h32[base + 2 + r] != EMPTY:
            return False
    return True


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _find(tab, h32, slot, bits, heads, key, j):
    """The slot of ``key`` probing from ``j`` (its home), or -1."""
    mask = (1 << bits) - 1
    while True:
        if _empty(h32, 2 * slot * j, heads):
            return -1
        if tab[slot * j] == key:
            return j
        j = (j + 1) & mask


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _find_or_add(tab, h32, slot, bits, heads, key, j):
    """The slot of ``key`` probing from ``j``, and 1 where it was empty and is now taken (its
    heads all EMPTY), else 0."""
    mask = (1 << bits) - 1
    while True:
        if _empty(h32, 2 * slot * j, heads):
            tab[slot * j] = key
            return j, 1
        if tab[slot * j] == key:
            return j, 0
        j = (j + 1) & mask


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _links_hold(links, r, e, i, last, cur, vals, vok, ent):
    """Whether entry ``e``, a candidate for role ``r``, satisfies the equalities beyond the key
    with the roles after it (already chosen in ``cur``; the last role is event ``i``). A link is
    (role a, attribute of a, role b, attribute of b), a < b; a missing value equals nothing."""
    for q in range(links.shape[0]):
        if links[q, 0] != r:
            continue
        fa = E_LINKED + 2 * links[q, 1]
        rb, ib = links[q, 2], links[q, 3]
        if ent[e, fa + 1] == 0:
            return False
        if rb == last:
            if not vok[i, ib] or vals[i, ib] != ent[e, fa]:
                return False
        else:
            o = cur[rb]
            fb = E_LINKED + 2 * ib
            if ent[o, fb + 1] == 0 or ent[o, fb] != ent[e, fa]:
                return False
    return True


@njit(cache=True, nogil=True)
def join_run(
    types, poss, meas, keys, valid, vals, vok, start, stop, type_roles, k, links, window, js, tab, slot, bits,
    ent, cur, out_trigger, out_pos, max_live,
):  # fmt: skip
    """Process events ``start..stop``; returns (status, event index). ``type_roles[t]``: the
    roles event type t plays, a bit per role (the last role, k - 1, triggers). Complex events
    go to ``out_trigger`` (the trigger's position) and ``out_pos`` (k positions each,
    ascending). JOIN_OUTPUT_FULL and JOIN_ENTRIES_FULL leave the event at the returned index
    unapplied (its complex events withdrawn), so the call resumes there once Python made room.
    ``links``: the equalities beyond the key (``_links_hold``), over the linked attributes'
    values ``vals`` (one column each; ``vok``: not missing), which entries keep in their row.
    A full entry array or table is compacted here (``join_compact``); only when that leaves
    too little room (or more than ``max_live`` entries, 0: no bound) does the call return
    JOIN_ENTRIES_FULL, for Python to grow them (``EqualityJoin._make_room``, the same
    thresholds)."""
    h32 = tab.view(np.int32)
    heads = max(k - 1, 1)
    linked = links.shape[0] > 0
    width = vals.shape[1]
    last = k - 1
    last_bit = np.int64(1) << last
    cap_out = len(out_trigger)
    n_types = len(type_roles)
    slots = 1 << bits
    home = np.empty(GROUP, dtype=np.int64)
    sink = js[J_SINK]
    # The scalars live in locals (js is written back before every return and compaction):
    # stores to the arrays could alias js, which would pin them to memory.
    entries, nkeys, nmatch, now = js[J_ENTRIES], js[J_KEYS], js[J_NMATCH], js[J_NOW]
    g0 = start
    while g0 < stop:
        g1 = min(g0 + GROUP, stop)
        # Issue the group's probes: hash each key and load its home slot (the loads overlap;
        # processing the group then finds them in cache).
        for i in range(g0, g1):
            j = _home(keys[i], bits)
            home[i - g0] = j
            sink ^= tab[slot * j]
        for i in range(g0, g1):
            if not valid[i]:
                continue  # no key: the event is in no complex event
            t = types[i]
            if t < 0 or t >= n_types:
                continue
            mine = type_roles[t]
            if mine == 0:
                continue
            plays = 0
            for r in range(last):
                if (mine >> r) & 1:
                    plays += 1
            if entries + plays > ent.shape[0] or 2 * (nkeys + 1) > slots:
                js[J_ENTRIES], js[J_KEYS], js[J_NMATCH], js[J_NOW] = entries, nkeys, nmatch, now
                # Rebuild the table only when its keys fill it (dropping the keys whose
                # entries all expired); else shift the entries and heads down, in two
                # sequential passes (a rebuild's probe per entry misses the cache).
                live = join_compact(js, window, tab, slot, bits, ent, heads, 2 * (nkeys + 1) > slots)
                entries, nkeys = js[J_ENTRIES], js[J_KEYS]
                if (
                    (max_live > 0 and live > max_live)
                    or 2 * (live + k) > ent.shape[0]
                    or slots > 2 * (ent.shape[0] - live)
                    or 4 * (nkeys + k) > slots
                ):
                    js[J_SINK] = sink
                    return JOIN_ENTRIES_FULL, i
            key = keys[i]
            m = meas[i]
            p = poss[i]
            if plays:
                s, added = _find_or_add(tab, h32, slot, bits, heads, key, home[i - g0])
                nkeys += added
            else:
                s = _find(tab, h32, slot, bits, heads, key, home[i - g0])
            base = 2 * slot * s
            if mine & last_bit and s >= 0:
                lowest = _lowest_first(m, window)
                first_match = nmatch
                if k == 2 and not linked:
                    # Two roles (the common join): count the chain's entries in the window,
                    # then write them oldest first from the end (no reversal).
                    e = np.int64(h32[base + 2])
                    while e >= 0 and ent[e, E_POS] >= p:
                        e = ent[e, E_PREV]
                    count = 0
                    f = e
                    while f >= 0 and ent[f, E_MEAS] >= lowest:
                        count += 1
                        f = ent[f, E_PREV]
                    if first_match + count > cap_out:
                        js[J_ENTRIES], js[J_KEYS], js[J_NMATCH], js[J_NOW] = entries, nkeys, nmatch, now
                        js[J_SINK] = sink
                        return JOIN_OUTPUT_FULL, i
                    x = first_match + count - 1
                    while x >= first_match:
                        out_trigger[x] = p
                        out_pos[2 * x] = ent[e, E_POS]
                        out_pos[2 * x + 1] = p
                        x -= 1
                        e = ent[e, E_PREV]
                    nmatch = first_match + count
                elif k == 2:
                    # Two roles and links: one walk (each candidate's links checked once),
                    # newest first, then the run reversed.
                    e = np.int64(h32[base + 2])
                    while e >= 0 and ent[e, E_POS] >= p:
                        e = ent[e, E_PREV]
                    x = first_match
                    while e >= 0 and ent[e, E_MEAS] >= lowest:
                        if _links_hold(links, 0, e, i, last, cur, vals, vok, ent):
                            if x >= cap_out:
                                js[J_ENTRIES], js[J_KEYS], js[J_NMATCH], js[J_NOW] = entries, nkeys, nmatch, now
                                js[J_SINK] = sink
                                return JOIN_OUTPUT_FULL, i
                            out_trigger[x] = p
                            out_pos[2 * x] = ent[e, E_POS]
                            out_pos[2 * x + 1] = p
                            x += 1
                        e = ent[e, E_PREV]
                    lo, hi = first_match, x - 1
                    while lo < hi:
                        a = out_pos[2 * lo]
                        out_pos[2 * lo] = out_pos[2 * hi]
                        out_pos[2 * hi] = a
                        lo += 1
                        hi -= 1
                    nmatch = x
                else:
                    n = first_match
                    # Depth-first over the roles last-1 .. 0, each candidate strictly before
                    # the one chosen for the next role and inside the window (chains are
                    # newest first); every role's head is in the trigger's slot.
                    r = last - 1
                    e = np.int64(h32[base + 2 + r])
                    while e >= 0 and ent[e, E_POS] >= p:
                        e = ent[e, E_PREV]
                    cur[r] = e
                    while True:
                        e = cur[r]
                        if e < 0 or ent[e, E_MEAS] < lowest:
                            r += 1
                            if r >= last:
                                break
                            cur[r] = ent[cur[r], E_PREV]
                            continue
                        if linked and not _links_hold(links, r, e, i, last, cur, vals, vok, ent):
                            cur[r] = ent[e, E_PREV]  # (the equalities beyond the key are checked on probe)
                            continue
                        if r == 0:
                            if n >= cap_out:
                                js[J_ENTRIES], js[J_KEYS], js[J_NMATCH], js[J_NOW] = entries, nkeys, nmatch, now
                                js[J_SINK] = sink
                                return JOIN_OUTPUT_FULL, i
                            out_trigger[n] = p
                            for q in range(last):
                                out_pos[n * k + q] = ent[cur[q], E_POS]
                            out_pos[n * k + last] = p
                            n += 1
                            cur[0] = ent[e, E_PREV]
                            continue
                        r -= 1
                        bound = ent[e, E_POS]
                        f = np.int64(h32[base + 2 + r])
                        while f >= 0 and ent[f, E_POS] >= bound:
                            f = ent[f, E_PREV]
                        cur[r] = f
                    # Oldest first, as the automaton's enumeration gives them (the walk is
                    # newest first).
                    lo, hi = first_match, n - 1
                    while lo < hi:
                        for q in range(k):
                            a = out_pos[lo * k + q]
                            out_pos[lo * k + q] = out_pos[hi * k + q]
                            out_pos[hi * k + q] = a
                        lo += 1
                        hi -= 1
                    nmatch = n
            # The event joins the chains of every role but the last it plays.
            if plays:
                for r in range(last):
                    if (mine >> r) & 1:
                        x = entries
                        ent[x, E_POS] = p
                        ent[x, E_MEAS] = m
                        ent[x, E_KEY] = key
                        ent[x, E_ROLE] = r
                        for a in range(width):
                            ent[x, E_LINKED + 2 * a] = vals[i, a]
                            ent[x, E_LINKED + 2 * a + 1] = vok[i, a]
                        ent[x, E_PREV] = h32[base + 2 + r]
                        h32[base + 2 + r] = x
                        entries = x + 1
            now = m
        g0 = g1
    js[J_ENTRIES], js[J_KEYS], js[J_NMATCH], js[J_NOW] = entries, nkeys, nmatch, now
    js[J_SINK] = sink
    return JOIN_DONE, stop


@njit(cache=True, nogil=True)
def join_compact(js, window, tab, slot, bits, ent, heads, rebuild):  # pragma: no cover
    """Drop the entries outside the window of the last measure (a prefix: measures never
    decrease); returns the entries kept. With ``rebuild``, the table (``bits`` may be new) is
    rebuilt from the rest, oldest first, so that each key's chains are rebuilt in order
    (J_KEYS: the slots they fill; keys without live entries lose their slot); else the entries
    move down and every entry index, heads and E_PREV, drops by the entries cut (an expired
    one becomes GONE: the key keeps its slot)."""
    h32 = tab.view(np.int32)
    n = js[J_ENTRIES]
    cut = 0
    if js[J_NOW] != MISSING:
        lowest = _lowest_first(js[J_NOW], window)
        while cut < n and ent[cut, E_MEAS] < lowest:
            cut += 1
    fields = ent.shape[1]
    if not rebuild:
        if cut == 0:
            return n
        for x in range(cut, n):
            y = x - cut
            for f in range(fields):
                ent[y, f] = ent[x, f]
            prev = ent[y, E_PREV]
            ent[y, E_PREV] = prev - cut if prev >= cut else GONE
        for s in range(len(tab) // slot):
            for r in range(heads):
                lane = 2 * slot * s + 2 + r
                h = h32[lane]
                if h >= cut:
                    h32[lane] = h - cut
                elif h >= 0:
                    h32[lane] = GONE
        js[J_ENTRIES] = n - cut
        return n - cut
    tab[:] = -1  # (EMPTY in every lane)
    js[J_KEYS] = 0
    for x in range(cut, n):
        y = x - cut
        if cut:
            for f in range(fields):
                ent[y, f] = ent[x, f]
        key = ent[y, E_KEY]
        s, added = _find_or_add(tab, h32, slot, bits, heads, key, _home(key, bits))
        js[J_KEYS] += added
        lane = 2 * slot * s + 2 + ent[y, E_ROLE]
        ent[y, E_PREV] = h32[lane]
        h32[lane] = y
    js[J_ENTRIES] = n - cut
    return n - cut
