"""The compiled (numba) part of the kernel: array layouts, the per-event loop, the enumeration
of complex events, and compaction of the tECS.

The kernel keeps its state in plain numpy arrays so that numba can compile the per-event loop
and so that the state can be exported as arrays. The constants naming columns and slots live in
this module too: numba freezes globals into its on-disk cache, which is invalidated only when
the file defining the compiled functions changes.

tECS nodes are rows of an ``int64[capacity, 8]`` array (one 64-byte row per node, so that a node
visit touches one cache line): ``MF``/``MINF`` the largest/smallest window measure of the first
event over the node's non-empty complex events, ``KH`` the kind shifted left by one with the
"has the empty complex event" bit, then position, label-set id, children and event measure.
Row 0 is BOTTOM (the set holding only the empty complex event). An output node whose event has
no window measure (a missing attribute value) has its own kind, ``GONE_KIND``: every int64 is a
possible measure, so no value can stand for "missing". Every node's children have
smaller row numbers than the node (nodes are immutable and built bottom-up), which lets
compaction work in two linear sweeps.
"""

from __future__ import annotations

import numpy as np
from numba import njit

INT64_MIN = np.iinfo(np.int64).min
INT64_MAX = np.iinfo(np.int64).max

#: The measure array's filler where an event has no window measure (the flag array ``miss``
#: says which; every int64 is a valid measure). Also S_NOW before any measure was seen.
MISSING = INT64_MIN
#: The kernel evaluates windows below this size (larger ones stay on the Python evaluator).
MAX_WINDOW = 2**61

# ---------------------------------------------------------------- node columns
MF, MINF, KH, POS, LAB, A, B, M = range(8)
NODE_FIELDS = 8
BOTTOM_KIND, OUTPUT_KIND, UNION_KIND = 0, 1, 2
GONE_KIND = 3  # an output node whose event has no window measure (read as an output node)

# ---------------------------------------------------------------- configuration (cfg)
C_WINDOW = 0  # window size in measure units, -1 without WITHIN
C_MONOTONE = 1  # 1: measures never decrease, so expired structure may be pruned
C_PARTITIONED = 2
C_CONSUME = 3  # CONSUME_NONE / CONSUME_ANY / CONSUME_PARTITION
C_ANY = 4  # strategy ANY: one complex event per trigger
C_LIMIT = 5  # LIMIT n, -1 without
C_INIT = 6  # the initial determinized state
C_LABELS = 7  # 1: write each event's label-set id next to its position
C_ANCHORED = 8  # 1: runs may all die (START): a sub-stream left with none stays empty
C_CHECK = 9  # 1: Python checks each trigger's complex events before CONSUME BY applies
C_LAZY = 10  # > 0: pause a trigger's enumeration after this many complex events (NEED_MORE)
C_SIZE = 11

CONSUME_NONE, CONSUME_ANY, CONSUME_PARTITION = 0, 1, 2
#: Selection strategies (``select_supports``, ``_choose``).
SELECT_NEXT, SELECT_LAST, SELECT_MAX = 1, 2, 3

# ---------------------------------------------------------------- dynamic scalars (st)
S_NODES = 0  # node rows in use
S_CONSUMED_AT = 1  # CONSUME BY ANY: position of the last output
S_NOW = 2  # the last window measure seen (monotone windows)
S_NMATCH = 3  # complex events in the output buffer
S_NPOS = 4  # positions in the output buffer
S_ENUM = 5  # 1 while the complex events of one trigger are being enumerated
S_EVENT = 6  # index (in the current input) of that trigger
S_NFINALS = 7  # final nodes of that trigger
S_FINAL = 8  # next final node to enumerate
S_SP = 9  # enumeration stack depth
S_TCOUNT = 10  # complex events output for that trigger
S_TFIRST = 11  # output index of the trigger's first complex event
S_SLOTS = 12  # partition slots ever allocated (high-water mark)
S_NFREE = 13  # free partition slots on the free stack
S_CHECKED = 14  # 1 once the current trigger's complex events were checked (C_CHECK)
S_STOP = 15  # C_LAZY: the current trigger's enumeration pauses when S_TCOUNT reaches this
S_STEPS = 16  # nodes the enumeration visited, all triggers together (a cost measure for tests)
S_SIZE = 17

# ---------------------------------------------------------------- partition slot columns (slot_info)
P_COUNT = 0  # active (state, node) entries
P_CONSUMED = 1  # S_CONSUMED_AT when the partition was last brought up to date
P_CODE = 2  # the partition's key code (-1: free slot)
P_FIELDS = 3

# ---------------------------------------------------------------- transition table cells
UNKNOWN = -1  # not computed yet: the kernel returns to Python
SKIPS = -2  # every machine state of the determinized state skips the symbol

# ---------------------------------------------------------------- output (out_m rows)
# out_m[O_TRIGGER, i], out_m[O_CODE, i]: trigger position and key code of match i;
# out_m[O_END, i + 1]: the end of its positions in out_pos (out_m[O_END, 0] = 0), so that the
# rows are contiguous arrays (trigger, partition, offsets) handed out without copying.
O_TRIGGER, O_CODE, O_END = range(3)

# ---------------------------------------------------------------- status codes
DONE = 0
NEED_TRANSITION = 1  # (state, symbol) not in the table yet
NEED_NODES = 2  # node capacity
NEED_SCRATCH = 3  # per-event scratch capacity
NEED_ROW = 4  # active entries per partition
NEED_SLOTS = 5  # partition slots
OUTPUT_FULL = 6  # output buffer (matches or positions)
NEED_STACK = 7  # enumeration stack
NEED_PATH = 8  # enumeration path (complex event length)
NEED_CHECK = 9  # a trigger's complex events are in the output buffer: Python checks them
NEED_MORE = 10  # C_LAZY: S_STOP complex events of a trigger are out: Python says whether to go on
NEED_POOL = 11  # MAX: the pool of supports and antichains (``_choose_max``)
OK = DONE

STATUS_NAMES = {
    DONE: "done",
    NEED_TRANSITION: "transition",
    NEED_NODES: "nodes",
    NEED_SCRATCH: "scratch",
    NEED_ROW: "row",
    NEED_SLOTS: "slots",
    OUTPUT_FULL: "output",
    NEED_STACK: "stack",
    NEED_PATH: "path",
    NEED_CHECK: "check",
    NEED_MORE: "more",
    NEED_POOL: "pool",
}


# ====================================================================== window arithmetic


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _lowest_first(m, window):
    """The smallest first-event measure a complex event whose last event has measure ``m`` may
    have in a window of ``window`` (>= 1): m - window + 1, or INT64_MIN when that is below the
    int64 range (every first event is then in). ``last - first < window`` is ``first >= this``,
    exactly and without overflow at the edges of int64."""
    if m < INT64_MIN + (window - 1):
        return INT64_MIN
    return m - (window - 1)


# ====================================================================== node construction


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _output(nodes, st, pos, lab, child, m, gone):
    """A node for the complex events of ``child`` extended with the event at ``pos`` (``gone``:
    the event has no window measure, so no complex event starting with it is in a window)."""
    k = st[S_NODES]
    cmf = nodes[child, MF]
    cmin = nodes[child, MINF]
    if nodes[child, KH] & 1 and not gone:
        mf = cmf if cmf > m else m
        mn = cmin if cmin < m else m
    else:
        mf = cmf
        mn = cmin
    nodes[k, MF] = mf
    nodes[k, MINF] = mn
    nodes[k, KH] = (GONE_KIND if gone else OUTPUT_KIND) << 1
    nodes[k, POS] = pos
    nodes[k, LAB] = lab
    nodes[k, A] = child
    nodes[k, B] = 0
    nodes[k, M] = 0 if gone else m
    st[S_NODES] = k + 1
    return k


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _union(nodes, st, a, b):
    """A node for the complex events of a and of b."""
    k = st[S_NODES]
    amf = nodes[a, MF]
    bmf = nodes[b, MF]
    amin = nodes[a, MINF]
    bmin = nodes[b, MINF]
    nodes[k, MF] = amf if amf > bmf else bmf
    nodes[k, MINF] = amin if amin < bmin else bmin
    nodes[k, KH] = (UNION_KIND << 1) | ((nodes[a, KH] | nodes[b, KH]) & 1)
    nodes[k, POS] = 0
    nodes[k, LAB] = 0
    nodes[k, A] = a
    nodes[k, B] = b
    nodes[k, M] = 0
    st[S_NODES] = k + 1
    return k


# ====================================================================== partitions


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _free_slot(st, slot_of, slot_info, free, slot):
    code = slot_info[slot, P_CODE]
    if code >= 0:
        slot_of[code] = -1
    slot_info[slot, P_CODE] = -1
    slot_info[slot, P_COUNT] = 0
    free[st[S_NFREE]] = slot
    st[S_NFREE] += 1


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _take_slot(st, slot_of, slot_info, free, code):
    if st[S_NFREE] > 0:
        st[S_NFREE] -= 1
        slot = free[st[S_NFREE]]
    else:
        slot = st[S_SLOTS]
        st[S_SLOTS] += 1
    slot_of[code] = slot
    slot_info[slot, P_CODE] = code
    slot_info[slot, P_COUNT] = 0
    return slot


# ====================================================================== the per-event loop


@njit(cache=True, nogil=True)
def run(
    syms, meas, miss, codes, poss, start, stop, cfg, st, nodes, tr, trans, final, slot_of, act, slot_info,
    free, new, finals, stack, path, out_m, out_pos, out_lab, first, memo, sel, pool,
):  # fmt: skip
    """Process events ``start..stop`` of the input arrays; returns (status, event index, a, b).

    Status DONE means all events were processed. Any other status names what Python must do
    (compute a transition, grow an array, take the output) before calling again from the
    returned index: an event is either fully applied or not at all, and an enumeration that
    stopped half-way resumes where it was (its state is in ``st`` and ``stack``). ``first`` holds
    the one entry (initial state, BOTTOM) of a partition seen for the first time. ``memo`` and
    ``sel``: NEXT / LAST / MAX chosen over the tECS (``_choose``, ``_choose_max``; ``sel[SEL_MODE]``
    0: not used); ``pool``: MAX's supports and antichains."""
    window = cfg[C_WINDOW]
    prune = window >= 0 and cfg[C_MONOTONE] == 1
    partitioned = cfg[C_PARTITIONED] == 1
    init = cfg[C_INIT]
    n_states = tr.shape[0]
    n_symbols = tr.shape[1]
    i = start
    if st[S_ENUM] == 1:
        i = st[S_EVENT]
        status = _enumerate(
            cfg, st, nodes, finals, stack, path, out_m, out_pos, out_lab, poss[i], codes[i], memo, sel, pool
        )
        if status != OK:
            return status, i, 0, 0
        if _must_check(cfg, st):
            return NEED_CHECK, i, 0, 0
        _finish(cfg, st, nodes, act, slot_of, slot_info, free, codes[i], poss[i])
        i += 1
    while i < stop:
        code = codes[i]
        if code < 0:  # no partition key: the event belongs to no sub-stream
            i += 1
            continue
        sym = syms[i]
        m = meas[i]
        gone = miss[i]  # the event has no window measure
        pos = poss[i]
        slot = slot_of[code]
        if slot >= 0:
            entries = act[slot]
            count = slot_info[slot, P_COUNT]
            if partitioned and slot_info[slot, P_CONSUMED] < st[S_CONSUMED_AT]:
                # Another partition produced output since: drop this one's partial matches.
                kept = 0
                for j in range(count):
                    if nodes[entries[j, 1], KH] & 1:
                        entries[kept, 0] = entries[j, 0]
                        entries[kept, 1] = 0
                        kept += 1
                count = kept
                slot_info[slot, P_COUNT] = kept
        else:
            entries = first  # a partition seen for the first time: {initial state: BOTTOM}
            count = 1

        # Check phase: everything this event needs is known and fits (nothing is changed yet).
        need_nodes = 0
        need_new = count
        for j in range(count):
            s = entries[j, 0]
            if s >= n_states or sym >= n_symbols:
                return NEED_TRANSITION, i, s, sym
            t = tr[s, sym]
            if t == UNKNOWN:
                return NEED_TRANSITION, i, s, sym
            if t >= 0:
                need_nodes += 2 * trans[t]
                need_new += trans[t]
        if st[S_NODES] + need_nodes > nodes.shape[0]:
            return NEED_NODES, i, need_nodes, 0
        if need_new > new.shape[0] or need_new > finals.shape[0]:
            return NEED_SCRATCH, i, need_new, 0
        if need_new > act.shape[1]:
            return NEED_ROW, i, need_new, 0
        if slot < 0 and st[S_NFREE] == 0 and st[S_SLOTS] >= act.shape[0]:
            return NEED_SLOTS, i, 0, 0

        # States the symbol does not change keep their nodes; the others move.
        nn = 0
        for j in range(count):
            if tr[entries[j, 0], sym] == SKIPS:
                new[nn, 0] = entries[j, 0]
                new[nn, 1] = entries[j, 1]
                new[nn, 2] = 0
                nn += 1
        has_limit = prune and not gone
        lowest = _lowest_first(m, window) if has_limit else INT64_MIN
        for j in range(count):
            t = tr[entries[j, 0], sym]
            if t < 0:
                continue
            node = entries[j, 1]
            for q in range(trans[t]):
                lab = trans[t + 1 + 2 * q]
                target = trans[t + 2 + 2 * q]
                if lab >= 0:
                    if has_limit and (nodes[node, KH] & 1) == 0 and nodes[node, MF] < lowest:
                        continue  # every complex event through here would exceed the window
                    target_node = _output(nodes, st, pos, lab, node, m, gone)
                else:
                    target_node = node
                found = -1
                for r in range(nn):
                    if new[r, 0] == target:
                        found = r
                        break
                if found < 0:
                    new[nn, 0] = target
                    new[nn, 1] = target_node
                    new[nn, 2] = 1  # entered at this event
                    nn += 1
                else:
                    new[found, 1] = _union(nodes, st, new[found, 1], target_node)

        if partitioned and nn == 1 and new[0, 0] == init and new[0, 1] == 0:
            if slot >= 0:  # nothing live: drop the partition
                _free_slot(st, slot_of, slot_info, free, slot)
        else:
            if slot < 0:
                slot = _take_slot(st, slot_of, slot_info, free, code)
            for r in range(nn):
                act[slot, r, 0] = new[r, 0]
                act[slot, r, 1] = new[r, 1]
            slot_info[slot, P_COUNT] = nn
            slot_info[slot, P_CONSUMED] = st[S_CONSUMED_AT]
        if has_limit:
            st[S_NOW] = m

        n_finals = 0
        for r in range(nn):
            if new[r, 2] == 1 and final[new[r, 0]]:
                finals[n_finals] = new[r, 1]
                n_finals += 1
        if n_finals > 0:
            st[S_ENUM] = 1
            st[S_EVENT] = i
            st[S_NFINALS] = n_finals
            st[S_FINAL] = 0
            st[S_SP] = 0
            st[S_TCOUNT] = 0
            st[S_TFIRST] = st[S_NMATCH]
            st[S_STOP] = cfg[C_LAZY]
            sel[SEL_CHOSEN] = 0
            status = _enumerate(cfg, st, nodes, finals, stack, path, out_m, out_pos, out_lab, pos, code, memo, sel, pool)
            if status != OK:
                return status, i, 0, 0
            if _must_check(cfg, st):
                return NEED_CHECK, i, 0, 0
            _finish(cfg, st, nodes, act, slot_of, slot_info, free, code, pos)
        i += 1
    return DONE, stop, 0, 0


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _must_check(cfg, st):
    """With C_CHECK, a trigger's complex events go to Python once before CONSUME BY (which
    applies only if some pass): the first time, ask; when resumed, go on."""
    if cfg[C_CHECK] == 0:
        return False
    if st[S_CHECKED] == 1:
        st[S_CHECKED] = 0
        return False
    if st[S_TCOUNT] == 0:
        return False
    st[S_CHECKED] = 1
    return True


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _finish(cfg, st, nodes, act, slot_of, slot_info, free, code, pos):
    """After a trigger's complex events: CONSUME BY ANY / PARTITION if it produced any. Every
    partial match of the partition is dropped; runs that reported nothing yet survive."""
    st[S_ENUM] = 0
    consume = cfg[C_CONSUME]
    if st[S_TCOUNT] == 0 or consume == CONSUME_NONE:
        return
    partitioned = cfg[C_PARTITIONED] == 1
    slot = slot_of[code]
    if slot >= 0:
        kept = 0
        for j in range(slot_info[slot, P_COUNT]):
            if nodes[act[slot, j, 1], KH] & 1:
                act[slot, kept, 0] = act[slot, j, 0]
                act[slot, kept, 1] = 0
                kept += 1
        if partitioned and kept == 1 and act[slot, 0, 0] == cfg[C_INIT]:
            _free_slot(st, slot_of, slot_info, free, slot)
        else:
            slot_info[slot, P_COUNT] = kept
    if consume == CONSUME_ANY:
        st[S_CONSUMED_AT] = pos
        slot = slot_of[code]
        if partitioned and slot >= 0:
            slot_info[slot, P_CONSUMED] = pos


# ====================================================================== enumeration


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _enumerate(cfg, st, nodes, finals, stack, path, out_m, out_pos, out_lab, trigger, code, memo, sel, pool):
    """Write the complex events of the trigger's final nodes (within the window) to the output
    buffers; resumable (the DFS stack lives in ``stack``, the current path in ``path``).

    A complex event is within the window when m(last) - m(first) < window, that is m(first) >=
    ``_lowest_first(m(last))`` (the ``limit`` below: exact over all of int64); its last event is
    the first output node met from the root, which fixes the limit for everything below it.
    Subtrees whose complex events all start below the limit are skipped in constant time
    (``MF`` and the has-empty bit), so the work is proportional to the output. (``MF`` is
    INT64_MIN both for "no first event with a measure" and for a real measure of -2**63; the
    test may then descend for nothing, but whether a complex event is output is decided on its
    first event's own measure.)

    With NEXT / LAST (``sel[SEL_MODE]``), the best support is chosen first over the tECS
    (``_choose``) and only the paths spelling it are followed; with ``sel[SEL_RANK]`` every
    complex event is output, best support first (``_rank_enumerate``)."""
    window = cfg[C_WINDOW]
    ranking = sel[SEL_RANK] == 1
    if ranking:  # NEXT / LAST with checks: best support first (_rank_enumerate)
        if sel[SEL_CHOSEN] == 0:
            status = _rank_start(cfg, st, nodes, finals, stack, memo, sel)
            if status != OK:
                return status
            sel[SEL_CHOSEN] = 1
        if sel[SEL_RANKED] == 1:
            return _rank_enumerate(cfg, st, nodes, stack, path, out_m, out_pos, out_lab, trigger, code, memo, sel, pool)
    selecting = sel[SEL_MODE] != 0 and not ranking
    maximal = sel[SEL_MODE] == SELECT_MAX
    if selecting and sel[SEL_CHOSEN] == 0:
        if maximal:
            status = _choose_max(cfg, st, nodes, finals, stack, memo, sel, pool)
        else:
            status = _choose(cfg, st, nodes, finals, stack, memo, sel)
        if status != OK:
            return status
        sel[SEL_CHOSEN] = 1
        if maximal and sel[SEL_MAXAC] >= 0:
            _load_support(memo, sel, pool)  # the first maximal support
        if sel[SEL_LEN] < 0:  # no complex event in the window
            st[S_SP] = 0
            st[S_FINAL] = st[S_NFINALS]
            return OK
    slen = sel[SEL_LEN]
    stop_after = 1 if cfg[C_ANY] == 1 else cfg[C_LIMIT]  # -1: no limit
    while selecting and sel[SEL_DIRECT] == 1 and st[S_FINAL] < st[S_NFINALS]:
        # One path spells the chosen support: its output nodes are in MEMO_ROWS.
        if not _emit_direct(cfg, st, nodes, memo, out_m, out_pos, out_lab, trigger, code, slen):
            return OUTPUT_FULL
        st[S_SP] = 0
        st[S_FINAL] = st[S_NFINALS]
        if st[S_TCOUNT] == stop_after or not (maximal and _next_support(memo, sel, pool)):
            return OK
        slen = sel[SEL_LEN]  # MAX: the next maximal support
        st[S_FINAL] = 0
    newest = cfg[C_ANY] == 1
    lazy = cfg[C_LAZY] > 0  # pause at S_STOP instead: Python checks what is out
    labels = cfg[C_LABELS] == 1
    partitioned = cfg[C_PARTITIONED] == 1
    sp = st[S_SP]
    while True:
        if sp == 0:
            f = st[S_FINAL]
            if f >= st[S_NFINALS]:
                # MAX: the next maximal support, its complex events from every final node.
                if not (maximal and _next_support(memo, sel, pool)):
                    st[S_SP] = 0
                    return OK
                slen = sel[SEL_LEN]
                st[S_FINAL] = 0
                f = 0
                while sel[SEL_DIRECT] == 1:
                    if not _emit_direct(cfg, st, nodes, memo, out_m, out_pos, out_lab, trigger, code, slen):
                        st[S_SP] = 0
                        return OUTPUT_FULL  # (resumed by the loop above: S_FINAL is 0)
                    if st[S_TCOUNT] == stop_after or not _next_support(memo, sel, pool):
                        st[S_SP] = 0
                        st[S_FINAL] = st[S_NFINALS]
                        return OK
                    slen = sel[SEL_LEN]
            st[S_FINAL] = f + 1
            # ANY takes the newest complex event (as the Python evaluator does): the last final
            # node first, and the second (newer) side of every union first.
            _save(stack, 0, finals[st[S_NFINALS] - 1 - f] if newest else finals[f], 0, 0, 0, 1)
            sp = 1
        sp -= 1
        node = stack[sp, 0]
        depth = stack[sp, 1]
        has_limit = stack[sp, 2]
        limit = stack[sp, 3]
        empty_ok = stack[sp, 4]
        while True:
            st[S_STEPS] += 1
            kind = nodes[node, KH] >> 1
            if kind == BOTTOM_KIND:
                if empty_ok and (not selecting or depth == slen):
                    nm = st[S_NMATCH]
                    npos = st[S_NPOS]
                    if (
                        nm + 1 >= out_m.shape[1]
                        or npos + depth > out_pos.shape[0]
                        or (labels and npos + depth > out_lab.shape[0])
                    ):
                        st[S_SP] = _save(stack, sp, node, depth, has_limit, limit, empty_ok)
                        return OUTPUT_FULL
                    for d in range(depth):
                        out_pos[npos + d] = nodes[path[depth - 1 - d], POS]
                    if labels:
                        for d in range(depth):
                            out_lab[npos + d] = nodes[path[depth - 1 - d], LAB]
                    out_m[O_TRIGGER, nm] = trigger
                    if partitioned:
                        out_m[O_CODE, nm] = code
                    out_m[O_END, nm + 1] = npos + depth
                    st[S_NMATCH] = nm + 1
                    st[S_NPOS] = npos + depth
                    st[S_TCOUNT] += 1
                    if lazy and st[S_TCOUNT] >= st[S_STOP]:
                        st[S_SP] = sp  # resumes after this path (Python may end the trigger)
                        return NEED_MORE
                    if st[S_TCOUNT] == stop_after:
                        st[S_SP] = 0
                        st[S_FINAL] = st[S_NFINALS]
                        return OK
                break
            if kind == UNION_KIND:
                a = nodes[node, B if newest else A]
                b = nodes[node, A if newest else B]
                a_ok = not has_limit or nodes[a, MF] >= limit or ((nodes[a, KH] & empty_ok) == 1)
                b_ok = not has_limit or nodes[b, MF] >= limit or ((nodes[b, KH] & empty_ok) == 1)
                if has_limit:
                    # Only the empty complex event of a side can be in the window: take it
                    # as BOTTOM, without walking down to it (a long union chain with the
                    # empty one at its bottom, as B+ without a partition builds, would
                    # otherwise be walked to its start at every trigger: issue 40).
                    a = _only_empty(nodes, a, limit)
                    b = _only_empty(nodes, b, limit)
                if a_ok and b_ok:
                    if sp + 2 > stack.shape[0]:  # keep one row free to save the current position
                        st[S_SP] = _save(stack, sp, node, depth, has_limit, limit, empty_ok)
                        return NEED_STACK
                    sp = _save(stack, sp, b, depth, has_limit, limit, empty_ok)
                    node = a
                elif a_ok or b_ok:
                    node = a if a_ok else b
                else:
                    break
                continue
            # an output node
            m = nodes[node, M]
            gone = kind == GONE_KIND  # the event has no window measure
            child = nodes[node, A]
            if has_limit == 0 and window >= 0:
                if gone:
                    break  # a missing measure on the last event: no complex event ends here in the window
                has_limit = 1
                limit = _lowest_first(m, window)
            if has_limit:
                empty_ok = 1 if not gone and m >= limit else 0
                if not (nodes[child, MF] >= limit or (nodes[child, KH] & empty_ok) == 1):
                    break
                child = _only_empty(nodes, child, limit)
            if selecting and (depth >= slen or nodes[node, POS] != memo[depth, MEMO_BEST]):
                break  # not the chosen support
            if depth >= path.shape[0]:
                st[S_SP] = _save(stack, sp, node, depth, has_limit, limit, empty_ok)
                return NEED_PATH
            path[depth] = node
            depth += 1
            node = child


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _emit_direct(cfg, st, nodes, memo, out_m, out_pos, out_lab, trigger, code, slen):
    """Output the one complex event whose output nodes are memo[:slen, MEMO_ROWS] (from the
    latest down); False when the output buffer is full."""
    nm = st[S_NMATCH]
    npos = st[S_NPOS]
    labels = cfg[C_LABELS] == 1
    if nm + 1 >= out_m.shape[1] or npos + slen > out_pos.shape[0] or (labels and npos + slen > out_lab.shape[0]):
        return False
    for d in range(slen):
        row = memo[slen - 1 - d, MEMO_ROWS]
        out_pos[npos + d] = nodes[row, POS]
        if labels:
            out_lab[npos + d] = nodes[row, LAB]
    out_m[O_TRIGGER, nm] = trigger
    if cfg[C_PARTITIONED] == 1:
        out_m[O_CODE, nm] = code
    out_m[O_END, nm + 1] = npos + slen
    st[S_NMATCH] = nm + 1
    st[S_NPOS] = npos + slen
    st[S_TCOUNT] += 1
    return True


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _only_empty(nodes, node, limit):
    """BOTTOM for a node whose only complex event that may start at or after ``limit`` is the
    empty one (it has it, and every other starts before the limit), else the node. (One
    derivation of the empty complex event: a node holds a complex event once, and where the
    plan allows repeats they are dropped per trigger anyway.)"""
    if node != 0 and (nodes[node, KH] & 1) == 1 and nodes[node, MF] < limit:
        return 0
    return node


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _save(stack, sp, node, depth, has_limit, limit, empty_ok):
    """Push a DFS position on the enumeration stack; returns the new depth."""
    stack[sp, 0] = node
    stack[sp, 1] = depth
    stack[sp, 2] = has_limit
    stack[sp, 3] = limit
    stack[sp, 4] = empty_ok
    return sp + 1


# ====================================================================== NEXT and LAST over the tECS
# The best support of a trigger is found without enumerating its complex events (as
# runtime/selection.py does in Python): per node, the best support of its paths (a path spells
# its positions from the latest down) follows from its children's: an output node puts its
# position in front of its child's best, a union keeps the better of its two sides. Memoised
# per node (and per "the empty complex event is in the window" bit), the pass is linear in the
# nodes in the window; the paths spelling the chosen support (several when labels differ) are
# then enumerated, pruned at the first position that differs from it.

#: sel[...]: the strategy (0: none), the memo's generation, whether the current trigger's
#: support is chosen, its length (-1: none in the window), the node numbering's generation
#: (bumped by compaction), whether a node's best over all its paths may be kept for good,
#: whether one path spells the chosen support (MEMO_ROWS: output it as is).
SEL_MODE, SEL_STAMP, SEL_CHOSEN, SEL_LEN, SEL_EPOCH, SEL_PERM, SEL_DIRECT = range(7)
#: MAX: the pool cells in use, and the antichain cell whose support is being enumerated.
SEL_POOL, SEL_MAXAC = 7, 8
#: memo[node, ...]: generation and best (a node row, 0 for the empty support, -1 for none)
#: for each value of the empty bit; an output node's tail (its child's best); the chosen
#: support (from the latest position down), a candidate's, and the trigger's top output nodes;
#: then the node's best over all its paths (kept until the nodes are renumbered) and, for an
#: output node, that best's tail.
MEMO_STAMP0, MEMO_REP0, MEMO_STAMP1, MEMO_REP1, MEMO_TAIL, MEMO_BEST, MEMO_TRY, MEMO_TOPS = range(8)
MEMO_PSTAMP, MEMO_PREP, MEMO_PTAIL, MEMO_ROWS, MEMO_CHAIN = 8, 9, 10, 11, 12
MEMO_FIELDS = 13
_UNKNOWN_REP = -2
_SHORT = -3  # the stack is too short
#: A best kept for good is its node row with this bit (its tail is then in MEMO_PTAIL).
_PERM = 1 << 62
#: A best with this bit may be spelled by several paths (a union of two equal supports
#: below): its complex events are found by the guided enumeration.
_TIE = 1 << 61
_ROW = _TIE - 1


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _tail(memo, r):
    return memo[r & _ROW, MEMO_PTAIL] if r & _PERM else memo[r, MEMO_TAIL]


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _rep_cmp(nodes, memo, x, y, mode):
    """Compare two best supports (node rows, 0: empty): > 0 when x wins, < 0 when y wins, 0
    when equal. LAST: the largest position of the symmetric difference decides (the first
    difference from the latest down); NEXT: the smallest (the last difference found)."""
    found = 0
    while (x | _TIE) != (y | _TIE):
        if x == 0:
            return -1  # y's other positions are all below what was compared: y wins
        if y == 0:
            return 1
        px = nodes[x & _ROW, POS]
        py = nodes[y & _ROW, POS]
        if px == py:
            x = _tail(memo, x)
            y = _tail(memo, y)
        elif px > py:
            if mode == SELECT_LAST:
                return 1
            found = 1
            x = _tail(memo, x)
        else:
            if mode == SELECT_LAST:
                return -1
            found = -1
            y = _tail(memo, y)
    return found


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _better_rep(nodes, memo, va, vb, mode):
    if va < 0:
        return vb
    if vb < 0:
        return va
    c = _rep_cmp(nodes, memo, va, vb, mode)
    if c == 0:
        return va | _TIE  # equal supports: both sides' complex events are reported
    return va if c > 0 else vb


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _perm_get(memo, epoch, node):
    if node == 0:
        return 0
    return memo[node, MEMO_PREP] if memo[node, MEMO_PSTAMP] == epoch else _UNKNOWN_REP


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _perm_best(nodes, stack, memo, epoch, root, base, mode):
    """The best support over all the paths of ``root`` (every one in the window), memoised
    until the nodes are renumbered: each node's is computed once (amortised constant work per
    node made, the papers' constant update). Uses the stack from row ``base``."""
    value = _perm_get(memo, epoch, root)
    if value != _UNKNOWN_REP:
        return value
    sp = base
    stack[sp, 0] = root
    sp += 1
    while sp > base:
        if sp + 2 > stack.shape[0]:
            return _SHORT
        node = stack[sp - 1, 0]
        if memo[node, MEMO_PSTAMP] == epoch:
            sp -= 1
            continue
        if (nodes[node, KH] >> 1) == UNION_KIND:
            a = nodes[node, A]
            b = nodes[node, B]
            va = _perm_get(memo, epoch, a)
            vb = _perm_get(memo, epoch, b)
            if va == _UNKNOWN_REP or vb == _UNKNOWN_REP:
                if va == _UNKNOWN_REP:
                    stack[sp, 0] = a
                    sp += 1
                if vb == _UNKNOWN_REP:
                    stack[sp, 0] = b
                    sp += 1
                continue
            memo[node, MEMO_PREP] = _better_rep(nodes, memo, va, vb, mode)
        else:
            vc = _perm_get(memo, epoch, nodes[node, A])
            if vc == _UNKNOWN_REP:
                stack[sp, 0] = nodes[node, A]
                sp += 1
                continue
            memo[node, MEMO_PTAIL] = vc
            memo[node, MEMO_PREP] = node | _PERM | (vc & _TIE)
        memo[node, MEMO_PSTAMP] = epoch
        sp -= 1
    return memo[root, MEMO_PREP]


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _lookup(nodes, stack, memo, sel, stamp, node, eok, has_limit, limit, sp, mode):
    """The best support of ``node`` reached with the empty bit ``eok``: kept for good when
    every complex event below it is in the window, else this generation's (_UNKNOWN_REP: not
    computed yet; _SHORT: the stack is too short)."""
    if node == 0:
        return 0 if eok == 1 else -1
    if sel[SEL_PERM] == 1 and (
        not has_limit or (nodes[node, MINF] >= limit and (eok == 1 or (nodes[node, KH] & 1) == 0))
    ):
        return _perm_best(nodes, stack, memo, sel[SEL_EPOCH], node, sp, mode)
    if eok == 1:
        return memo[node, MEMO_REP1] if memo[node, MEMO_STAMP1] == stamp else _UNKNOWN_REP
    return memo[node, MEMO_REP0] if memo[node, MEMO_STAMP0] == stamp else _UNKNOWN_REP


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _push_unknown(stack, sp, a, va, b, vb, eok):
    """Push the sides of a union whose value is not known yet (with the empty bit); the new depth."""
    if va == _UNKNOWN_REP:
        stack[sp, 0] = a
        stack[sp, 1] = eok
        sp += 1
    if vb == _UNKNOWN_REP:
        stack[sp, 0] = b
        stack[sp, 1] = eok
        sp += 1
    return sp


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _child_of(nodes, node, has_limit, limit):
    """An output node's child as the window sees it (BOTTOM where only its empty complex event
    is in), and whether that empty one may be taken (the node's event is in the window)."""
    ceok = 1
    if has_limit:
        ceok = 1 if (nodes[node, KH] >> 1) != GONE_KIND and nodes[node, M] >= limit else 0
    child = nodes[node, A]
    if has_limit:
        child = _only_empty(nodes, child, limit)
    return child, ceok


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _store_rep(memo, node, eok, stamp, r):
    """A node's value for this trigger generation, under the empty bit ``eok``."""
    if eok == 1:
        memo[node, MEMO_STAMP1] = stamp
        memo[node, MEMO_REP1] = r
    else:
        memo[node, MEMO_STAMP0] = stamp
        memo[node, MEMO_REP0] = r


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _viable(nodes, node, has_limit, limit, eok):
    """Whether some complex event below ``node`` may start in the window (as ``_enumerate``)."""
    return not has_limit or nodes[node, MF] >= limit or (nodes[node, KH] & eok) == 1


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _best_below(nodes, stack, memo, sel, root, has_limit, limit, mode, root_eok):
    """The best support of ``root`` reached with the empty bit ``root_eok`` (1 for a top output
    node; its window limit fixed): a node row whose tail chain spells it, -1 when none is in
    the window, or _SHORT."""
    stamp = sel[SEL_STAMP]
    value = _lookup(nodes, stack, memo, sel, stamp, root, root_eok, has_limit, limit, 0, mode)
    if value != _UNKNOWN_REP:
        return value
    stack[0, 0] = root
    stack[0, 1] = root_eok
    sp = 1
    while sp > 0:
        if sp + 2 > stack.shape[0]:
            return _SHORT
        node = stack[sp - 1, 0]
        eok = stack[sp - 1, 1]
        value = _lookup(nodes, stack, memo, sel, stamp, node, eok, has_limit, limit, sp, mode)
        if value == _SHORT:
            return _SHORT
        if value != _UNKNOWN_REP:
            sp -= 1
            continue
        kind = nodes[node, KH] >> 1
        if kind == UNION_KIND:
            a = nodes[node, A]
            b = nodes[node, B]
            if has_limit:  # (as in _enumerate: a side with only its empty one in the window)
                a = _only_empty(nodes, a, limit)
                b = _only_empty(nodes, b, limit)
            va = -1
            if _viable(nodes, a, has_limit, limit, eok):
                va = _lookup(nodes, stack, memo, sel, stamp, a, eok, has_limit, limit, sp, mode)
            vb = -1
            if _viable(nodes, b, has_limit, limit, eok):
                vb = _lookup(nodes, stack, memo, sel, stamp, b, eok, has_limit, limit, sp, mode)
            if va == _SHORT or vb == _SHORT:
                return _SHORT
            if va == _UNKNOWN_REP or vb == _UNKNOWN_REP:
                sp = _push_unknown(stack, sp, a, va, b, vb, eok)
                continue
            _store_rep(memo, node, eok, stamp, _better_rep(nodes, memo, va, vb, mode))
            sp -= 1
            continue
        # an output node: its value does not depend on the empty bit it is reached with
        child, ceok = _child_of(nodes, node, has_limit, limit)
        vc = -1
        if _viable(nodes, child, has_limit, limit, ceok):
            vc = _lookup(nodes, stack, memo, sel, stamp, child, ceok, has_limit, limit, sp, mode)
        if vc == _SHORT:
            return _SHORT
        if vc == _UNKNOWN_REP:
            sp = _push_unknown(stack, sp, child, vc, 0, 0, ceok)
            continue
        r = -1
        if vc >= 0:
            memo[node, MEMO_TAIL] = vc
            r = node | (vc & _TIE)
        _store_rep(memo, node, 0, stamp, r)
        _store_rep(memo, node, 1, stamp, r)
        sp -= 1
    return _lookup(nodes, stack, memo, sel, stamp, root, root_eok, has_limit, limit, 0, mode)


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _seq_better(memo, la, lb, mode):
    """Whether the support in MEMO_TRY (length la) beats the one in MEMO_BEST (lb); both from
    the latest position down."""
    if mode == SELECT_LAST:
        for d in range(min(la, lb)):
            x = memo[d, MEMO_TRY]
            y = memo[d, MEMO_BEST]
            if x != y:
                return x > y
        return la > lb
    i = la - 1
    j = lb - 1
    while i >= 0 and j >= 0:  # from the earliest position up
        x = memo[i, MEMO_TRY]
        y = memo[j, MEMO_BEST]
        if x != y:
            return x < y
        i -= 1
        j -= 1
    return i >= 0  # the longer one has more events after a common prefix


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _choose(cfg, st, nodes, finals, stack, memo, sel):
    """The best support (NEXT / LAST) of the current trigger's complex events in the window,
    into memo[:SEL_LEN, MEMO_BEST] from the latest position down (SEL_LEN -1: none). Each top
    output node (the last event of its complex events) fixes its window limit, so each gets
    its own memo generation."""
    window = cfg[C_WINDOW]
    mode = sel[SEL_MODE]
    ntops, empty = _tops(st, nodes, finals, stack, memo)
    if ntops < 0:
        return NEED_STACK
    best = -1
    tie = False
    for t in range(ntops):
        top = memo[t, MEMO_TOPS]
        gone = (nodes[top, KH] >> 1) == GONE_KIND
        has_limit = window >= 0
        if has_limit and gone:
            continue
        limit = _lowest_first(nodes[top, M], window) if has_limit else 0
        sel[SEL_STAMP] += 1
        r = _best_below(nodes, stack, memo, sel, top, has_limit, limit, mode, 1)
        if r == _SHORT:
            return NEED_STACK
        if r < 0:
            continue
        several = (r & _TIE) != 0
        n = 0
        while r != 0:
            memo[n, MEMO_TRY] = nodes[r & _ROW, POS]
            memo[n, MEMO_CHAIN] = r & _ROW
            n += 1
            r = _tail(memo, r)
        if best < 0 or _seq_better(memo, n, best, mode):
            for d in range(n):
                memo[d, MEMO_BEST] = memo[d, MEMO_TRY]
                memo[d, MEMO_ROWS] = memo[d, MEMO_CHAIN]
            best = n
            tie = several
        elif _seq_equal(memo, n, best):
            tie = True
    sel[SEL_LEN] = 0 if best < 0 and empty else best
    sel[SEL_DIRECT] = 1 if best > 0 and not tie else 0
    return OK


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _tops(st, nodes, finals, stack, memo):
    """The current trigger's top output nodes, below the final nodes' unions (no window limit
    is fixed there), into memo[:, MEMO_TOPS]: (how many, -1 when the stack is too short;
    whether a final node holds the empty complex event, which is in every window)."""
    ntops = 0
    empty = False
    for f in range(st[S_NFINALS]):
        sp = 1
        stack[0, 0] = finals[f]
        while sp > 0:
            sp -= 1
            node = stack[sp, 0]
            kind = nodes[node, KH] >> 1
            if kind == UNION_KIND:
                if sp + 2 > stack.shape[0]:
                    return -1, empty
                stack[sp, 0] = nodes[node, B]
                stack[sp + 1, 0] = nodes[node, A]
                sp += 2
            elif kind != BOTTOM_KIND:
                memo[ntops, MEMO_TOPS] = node  # (memo has a row per node)
                ntops += 1
            else:
                empty = True
    return ntops, empty


# ====================================================================== MAX over the tECS
# Per node, the antichain of the maximal supports of its complex events in the window (as
# runtime/selection.py's MaxSelection does in Python): an output node prepends its position to
# each of its child's (inclusion is kept), a union keeps the maximal ones of both sides. The
# values are persistent lists in ``pool`` (int64[cells, 6]), rebuilt for each trigger:
# a support cell is (position, rest, size, output node, tie, 0) from the latest position down
# (rest -1: empty; tie 1: several paths may spell it, so its complex events are found by the
# guided enumeration, else the one path of output nodes is output as is); an antichain cell
# (support, next, and over the list from it: smallest and largest size, smallest and largest
# latest position) (support -1: the empty support; an antichain -1: no complex event in the
# window). Two antichains whose supports cannot contain one another (one side's latest
# positions all below the other's, and its sizes all at least the other's) are joined by
# putting one side's cells before the other's list, shared: a union chain (``A ; B``: one A
# per link) costs one cell per link. Memoised per node and trigger generation as
# _best_below, so a trigger costs its nodes in the window and their antichains, not its
# complex events.
_POOL_FULL = -4
POOL_FIELDS = 6
_AC_MINS, _AC_MAXS, _AC_MINT, _AC_MAXT = 2, 3, 4, 5


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _cell(pool, sel, x, y, z, row, tie):
    c = sel[SEL_POOL]
    if c >= pool.shape[0]:
        return _POOL_FULL
    pool[c, 0] = x
    pool[c, 1] = y
    pool[c, 2] = z
    pool[c, 3] = row
    pool[c, 4] = tie
    pool[c, 5] = 0
    sel[SEL_POOL] = c + 1
    return c


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _sup_size(pool, s):
    return 0 if s < 0 else pool[s, 2]


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _sup_top(pool, s):
    return -1 if s < 0 else pool[s, 0]


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _ac_push(pool, sel, s, rest):
    """The antichain cell of support s before the list ``rest`` (-1: none); _POOL_FULL when
    either is (or the pool is) full."""
    if s == _POOL_FULL or rest == _POOL_FULL:
        return _POOL_FULL
    c = _cell(pool, sel, s, rest, 0, 0, 0)
    if c == _POOL_FULL:
        return c
    size = _sup_size(pool, s)
    top = _sup_top(pool, s)
    if rest >= 0:
        pool[c, _AC_MINS] = min(size, pool[rest, _AC_MINS])
        pool[c, _AC_MAXS] = max(size, pool[rest, _AC_MAXS])
        pool[c, _AC_MINT] = min(top, pool[rest, _AC_MINT])
        pool[c, _AC_MAXT] = max(top, pool[rest, _AC_MAXT])
    else:
        pool[c, _AC_MINS] = size
        pool[c, _AC_MAXS] = size
        pool[c, _AC_MINT] = top
        pool[c, _AC_MAXT] = top
    return c


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _sup_inside(pool, a, b):
    """Whether support a is inside support b (both from the latest position down)."""
    while a >= 0:
        if a == b:
            return True
        if b < 0 or pool[a, 2] > pool[b, 2]:
            return False
        if pool[a, 0] == pool[b, 0]:
            a = pool[a, 1]
            b = pool[b, 1]
        elif pool[b, 0] > pool[a, 0]:
            b = pool[b, 1]
        else:
            return False
    return True


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _ac_prepend(pool, sel, pos, row, ac):
    """Every support of ``ac`` with ``pos`` (later than all of them, at output node ``row``)
    in front."""
    out = -1
    while ac >= 0 and out != _POOL_FULL:
        s = pool[ac, 0]
        tie = 1 if s >= 0 and pool[s, 4] == 1 else 0
        out = _ac_push(pool, sel, _cell(pool, sel, pos, s, _sup_size(pool, s) + 1, row, tie), out)
        ac = pool[ac, 1]
    return out


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _ac_beaten(pool, s, x, a, b):
    """Whether support s (of antichain cell x) is strictly inside a support of antichains a
    then b, or equal to one of a cell met before x (repeats are kept once: that one is then
    spelled by several paths)."""
    before = True
    for head in (a, b):
        y = head
        while y >= 0:
            if y == x:
                before = False
            else:
                t = pool[y, 0]
                if _sup_inside(pool, s, t):
                    if _sup_size(pool, s) < _sup_size(pool, t):
                        return True
                    if before:
                        if t >= 0:
                            pool[t, 4] = 1
                        return True
            y = pool[y, 1]
    return False


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _apart(pool, a, b):
    """Whether no support of b can be inside one of a, nor one of a strictly inside one of b."""
    return pool[a, _AC_MAXT] < pool[b, _AC_MINT] and pool[a, _AC_MINS] >= pool[b, _AC_MAXS]


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _ac_union(pool, sel, a, b):
    """The maximal supports of two antichains together (-1: none)."""
    if a < 0 or a == b:
        return b
    if b < 0:
        return a
    if _apart(pool, b, a):
        a, b = b, a
    if _apart(pool, a, b):
        out = a  # b's cells before a's list, shared
        x = b
        while x >= 0 and out != _POOL_FULL:
            out = _ac_push(pool, sel, pool[x, 0], out)
            x = pool[x, 1]
        return out
    out = -1
    for head in (a, b):
        x = head
        while x >= 0 and out != _POOL_FULL:
            if not _ac_beaten(pool, pool[x, 0], x, a, b):
                out = _ac_push(pool, sel, pool[x, 0], out)
            x = pool[x, 1]
    return out


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _max_get(memo, stamp, node, eok, empty_ac):
    if node == 0:
        return empty_ac if eok == 1 else -1
    if eok == 1:
        return memo[node, MEMO_REP1] if memo[node, MEMO_STAMP1] == stamp else _UNKNOWN_REP
    return memo[node, MEMO_REP0] if memo[node, MEMO_STAMP0] == stamp else _UNKNOWN_REP


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _max_below(nodes, stack, memo, sel, pool, root, has_limit, limit, empty_ac):
    """The antichain of maximal supports of the output node ``root`` (its window limit fixed),
    -1 when none is in the window, _SHORT or _POOL_FULL. The walk of _best_below."""
    stamp = sel[SEL_STAMP]
    sp = _save(stack, 0, root, 1, 0, 0, 0)  # (node, empty bit) rows
    while sp > 0:
        node, eok = stack[sp - 1, 0], stack[sp - 1, 1]
        if sp + 2 > stack.shape[0]:
            return _SHORT
        if _max_get(memo, stamp, node, eok, empty_ac) != _UNKNOWN_REP:
            sp -= 1
        elif (nodes[node, KH] >> 1) == UNION_KIND:
            a, b = nodes[node, A], nodes[node, B]
            if has_limit:
                a, b = _only_empty(nodes, a, limit), _only_empty(nodes, b, limit)
            va = _max_get(memo, stamp, a, eok, empty_ac) if _viable(nodes, a, has_limit, limit, eok) else -1
            vb = _max_get(memo, stamp, b, eok, empty_ac) if _viable(nodes, b, has_limit, limit, eok) else -1
            if va == _UNKNOWN_REP or vb == _UNKNOWN_REP:
                sp = _push_unknown(stack, sp, a, va, b, vb, eok)
            else:
                r = _ac_union(pool, sel, va, vb)
                if r == _POOL_FULL:
                    return _POOL_FULL
                _store_rep(memo, node, eok, stamp, r)
                sp -= 1
        else:  # an output node (its value does not depend on the empty bit it is reached with)
            child, ceok = _child_of(nodes, node, has_limit, limit)
            vc = _max_get(memo, stamp, child, ceok, empty_ac) if _viable(nodes, child, has_limit, limit, ceok) else -1
            if vc == _UNKNOWN_REP:
                sp = _push_unknown(stack, sp, child, vc, 0, 0, ceok)
                continue
            r = -1
            if vc >= 0:
                r = _ac_prepend(pool, sel, nodes[node, POS], node, vc)
                if r == _POOL_FULL:
                    return _POOL_FULL
            _store_rep(memo, node, 0, stamp, r)
            _store_rep(memo, node, 1, stamp, r)
            sp -= 1
    return _max_get(memo, stamp, root, 1, empty_ac)


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _choose_max(cfg, st, nodes, finals, stack, memo, sel, pool):
    """The maximal supports of the current trigger's complex events in the window: an
    antichain in ``pool`` from sel[SEL_MAXAC] (-1 and SEL_LEN -1: none)."""
    window = cfg[C_WINDOW]
    sel[SEL_POOL] = 0
    sel[SEL_DIRECT] = 0
    sel[SEL_LEN] = -1
    sel[SEL_MAXAC] = -1
    ntops, empty = _tops(st, nodes, finals, stack, memo)
    if ntops < 0:
        return NEED_STACK
    empty_ac = _ac_push(pool, sel, -1, -1)
    if empty_ac == _POOL_FULL:
        return NEED_POOL
    total = -1
    for t in range(ntops):
        top = memo[t, MEMO_TOPS]
        has_limit = window >= 0
        if has_limit and (nodes[top, KH] >> 1) == GONE_KIND:
            continue
        limit = _lowest_first(nodes[top, M], window) if has_limit else 0
        sel[SEL_STAMP] += 1
        r = _max_below(nodes, stack, memo, sel, pool, top, has_limit, limit, empty_ac)
        if r == _SHORT:
            return NEED_STACK
        if r == _POOL_FULL:
            return NEED_POOL
        total = _ac_union(pool, sel, total, r)
        if total == _POOL_FULL:
            return NEED_POOL
    if total < 0 and empty:
        total = empty_ac  # the empty complex event alone
    sel[SEL_MAXAC] = total
    return OK


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _load_support(memo, sel, pool):
    """The support of antichain cell sel[SEL_MAXAC] into memo[:SEL_LEN, MEMO_BEST], from the
    latest position down (what the guided enumeration follows), and its output nodes into
    MEMO_ROWS with SEL_DIRECT when one path spells it."""
    s = pool[sel[SEL_MAXAC], 0]
    sel[SEL_DIRECT] = 1 if s >= 0 and pool[s, 4] == 0 else 0
    d = 0
    while s >= 0:
        memo[d, MEMO_BEST] = pool[s, 0]
        memo[d, MEMO_ROWS] = pool[s, 3]
        d += 1
        s = pool[s, 1]
    sel[SEL_LEN] = d


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _next_support(memo, sel, pool):
    """MAX: move on to the next maximal support of the trigger (False: none left)."""
    nxt = pool[sel[SEL_MAXAC], 1]
    if nxt < 0:
        return False
    sel[SEL_MAXAC] = nxt
    _load_support(memo, sel, pool)
    return True


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _seq_equal(memo, la, lb):
    if la != lb:
        return False
    for d in range(la):
        if memo[d, MEMO_TRY] != memo[d, MEMO_BEST]:
            return False
    return True


# ====================================================================== compaction


# ====================================================================== NEXT / LAST ranked
# With checks on each complex event (conditions across events, a window over a double
# attribute) the strategy chooses among the complex events that pass, so the best support over
# the tECS is not enough: the trigger's candidates are enumerated best support first, then the
# next best, ... (as runtime/ranked.py orders them), and Python stops the enumeration once the
# best that passes is out (C_LAZY pauses: runner.py's ``_enough``). Best-first search over
# the tECS with an exact bound: a walk (the output nodes taken from the top down, and the node
# it goes on from, with its empty bit) is keyed by its prefix followed by that node's best
# support (``_best_below``'s memo). A popped walk descends to BOTTOM and outputs one
# candidate; at a union it jumps straight to the output node its best support starts with
# (the memo's row), leaving a *deferred* walk for the union's other paths with the same key:
# popped (only if the enumeration goes on), it walks the unions down to that output node and
# pushes each other side. So the first candidate costs its length, not the unions above it
# (a union chain of every live run), and no worse key pops before a better one. Tops with
# different window limits need different memo generations: for LAST they are taken one
# position at a time (a later last event wins outright); for NEXT the trigger is enumerated in
# the plain order (SEL_RANKED 0: Python then checks them all). The walks live in ``pool``: a
# walk is a row (prefix start, prefix length, node, empty bit + 2 if deferred, its best
# support, -); the walks one descent leaves share one copy of its path (five node rows per
# pool row); column 5 of the rows is the binary heap of walks.
#: sel[...] for the ranked enumeration: on (config), this trigger is ranked, walks in the heap,
#: next top to take, a walk in progress (1: descending, 2: expanding a deferred one; its
#: node, empty bit and depth), the current tops' window limit, the tops, the empty complex
#: event still to output, the first walk the one in progress left, the output node a deferred
#: walk expands to, and the prefix copy of that deferred walk.
SEL_RANK, SEL_RANKED, SEL_HEAP, SEL_GROUP, SEL_DESC, SEL_F, SEL_EOK, SEL_DEPTH = 9, 10, 11, 12, 13, 14, 15, 16
SEL_HASLIM, SEL_LIMIT, SEL_NTOPS, SEL_EMPTY, SEL_PEND, SEL_X, SEL_KOFF = 17, 18, 19, 20, 21, 22, 23
#: ... and for the pauses: the candidates Python has checked, S_STEPS at the last pause and the
#: steps allowed before the next one while candidates wait unchecked, whether every candidate
#: still to come is strictly worse than the last one out (Python may then stop: runner.py's
#: ``_enough``), the walk row of that last candidate, the walk being descended, and whether the
#: deferred walk being expanded may hold another path with its support (its best's tie bit).
SEL_CHECKED, SEL_SINCE, SEL_BUDGET, SEL_WORSE, SEL_LAST, SEL_CUR, SEL_XTIE = 24, 25, 26, 27, 28, 29, 30
SEL_SIZE = 31
#: Steps a ranked trigger may take while candidates wait unchecked, before it pauses (doubled
#: at each pause): the first candidate that passes ends the trigger after about this many more.
RANK_STEPS = 512
_KEY_ROW = 5  # prefix node rows per pool row (column 5 is the heap)
_DEFERRED = 2


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _walk_at(pool, e, j, r):
    """The node row at step ``j`` of walk ``e``'s key (its prefix, then the chain of ``r``)."""
    if j < pool[e, 1]:
        k = pool[e, 0] + j
        return pool[k // _KEY_ROW, k % _KEY_ROW]
    return r & _ROW


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _walk_cmp(nodes, memo, pool, ea, eb, mode):
    """Compare the keys of walks ea and eb as _rep_cmp compares supports: > 0 when ea's is
    better, < 0 when eb's is, 0 when equal."""
    la, lb = pool[ea, 1], pool[eb, 1]
    ra, rb = pool[ea, 4], pool[eb, 4]
    ja = 0
    jb = 0
    if pool[ea, 0] == pool[eb, 0]:  # one copy of a path: the same positions up to the shorter
        ja = min(la, lb)
        jb = ja
    found = 0
    while True:
        a_rep = ja >= la
        b_rep = jb >= lb
        if a_rep and b_rep and (ra | _TIE) == (rb | _TIE):
            return found  # the same node: the same positions from here down
        if a_rep and ra == 0:
            return -1
        if b_rep and rb == 0:
            return 1
        pa = nodes[_walk_at(pool, ea, ja, ra), POS]
        pb = nodes[_walk_at(pool, eb, jb, rb), POS]
        if pa != pb:
            if mode == SELECT_LAST:
                return 1 if pa > pb else -1
            found = 1 if pa > pb else -1
        if pa >= pb:
            if a_rep:
                ra = _tail(memo, ra)
            ja += 1
        if pb >= pa:
            if b_rep:
                rb = _tail(memo, rb)
            jb += 1


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _walk_new(sel, pool, depth, node, eok, rep):
    """A walk left by the one in progress (its prefix: the first ``depth`` rows of that walk's
    path, copied when it ends); False when the pool is full (nothing changed)."""
    c = sel[SEL_POOL]
    if c + 1 > pool.shape[0]:
        return False
    pool[c, 0] = -1
    pool[c, 1] = depth
    pool[c, 2] = node
    pool[c, 3] = eok
    pool[c, 4] = rep
    sel[SEL_POOL] = c + 1
    return True


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _walk_push(nodes, memo, sel, pool, c, mode):
    """Put walk c on the heap."""
    i = sel[SEL_HEAP]
    sel[SEL_HEAP] = i + 1
    while i > 0:  # sift up: the best walk at the root
        parent = (i - 1) // 2
        p = pool[parent, 5]
        if _walk_cmp(nodes, memo, pool, c, p, mode) <= 0:
            break
        pool[i, 5] = p
        i = parent
    pool[i, 5] = c


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _walks_left(nodes, memo, sel, pool, path, depth, koff, mode):
    """The walk in progress ends: the walks it left get their prefix (``koff`` >= 0: a copy of
    the path there already, else path[:depth] copied once) and go on the heap; False when the
    pool is full (nothing changed)."""
    first = sel[SEL_PEND]
    last = sel[SEL_POOL]
    record = koff == -2  # a candidate ends here: keep it as a walk (SEL_LAST) to compare with
    if first == last and not record:
        return True
    if koff < 0:
        rows = (depth + _KEY_ROW - 1) // _KEY_ROW + (1 if record else 0)
        if last + rows > pool.shape[0]:
            return False
        koff = last * _KEY_ROW
        for j in range(depth):
            k = koff + j
            pool[k // _KEY_ROW, k % _KEY_ROW] = path[j]
        sel[SEL_POOL] = last + rows
        if record:
            c = last + rows - 1
            pool[c, 0] = koff
            pool[c, 1] = depth
            pool[c, 2] = 0
            pool[c, 3] = 1
            pool[c, 4] = 0
            sel[SEL_LAST] = c
    for c in range(first, last):
        pool[c, 0] = koff
    for c in range(first, last):
        _walk_push(nodes, memo, sel, pool, c, mode)
    sel[SEL_PEND] = sel[SEL_POOL]
    return True


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _walk_pop(nodes, memo, sel, pool, mode):
    """Remove and return the best walk of the heap."""
    top = pool[0, 5]
    n = sel[SEL_HEAP] - 1
    sel[SEL_HEAP] = n
    if n > 0:
        e = pool[n, 5]
        i = 0
        while True:
            child = 2 * i + 1
            if child >= n:
                break
            if child + 1 < n and _walk_cmp(nodes, memo, pool, pool[child + 1, 5], pool[child, 5], mode) > 0:
                child += 1
            if _walk_cmp(nodes, memo, pool, pool[child, 5], e, mode) <= 0:
                break
            pool[i, 5] = pool[child, 5]
            i = child
        pool[i, 5] = e
    return top


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _rank_pause(cfg, st, nodes, memo, sel, pool, mode):
    """Whether to pause now: candidates wait unchecked and the trigger has spent its step
    budget since the last pause (then SEL_WORSE is set for Python, and the budget doubles)."""
    if cfg[C_LAZY] == 0 or st[S_TCOUNT] <= sel[SEL_CHECKED] or st[S_STEPS] - sel[SEL_SINCE] < sel[SEL_BUDGET]:
        return False
    sel[SEL_BUDGET] *= 2
    _rank_paused(st, nodes, memo, sel, pool, mode)
    return True


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _rank_paused(st, nodes, memo, sel, pool, mode):
    """At a pause: SEL_WORSE 1 when every candidate still to come is strictly worse than the
    last one out: each walk on the heap is, or has its key and no other path with it (a
    deferred walk whose best has no tie bit); so is the walk in progress. (Later groups of
    tops, LAST only, end before the last one out; the empty complex event is the worst.)"""
    sel[SEL_SINCE] = st[S_STEPS]
    last = sel[SEL_LAST]
    worse = last >= 0
    if worse and sel[SEL_DESC] == 2:
        worse = sel[SEL_XTIE] == 0  # (its key is the last one's: the rest of it is worse)
    elif worse and sel[SEL_DESC] == 1:
        worse = _walk_cmp(nodes, memo, pool, sel[SEL_CUR], last, mode) < 0
    # The heap's walks not worse than the last one (the heap's order: only below such ones).
    sp = 0
    if worse and sel[SEL_HEAP] > 0:
        sp = 1
        todo = np.zeros(64, dtype=np.int64)  # heap indexes to look at (the root first)
        while sp > 0 and worse:
            sp -= 1
            i = todo[sp]
            e = pool[i, 5]
            c = _walk_cmp(nodes, memo, pool, e, last, mode)
            if c < 0:
                continue
            if c > 0 or not (pool[e, 3] & _DEFERRED) or pool[e, 4] & _TIE:
                worse = False
                break
            for child in (2 * i + 1, 2 * i + 2):
                if child < sel[SEL_HEAP]:
                    if sp == len(todo):
                        worse = False  # (many walks with the last one's key: do not decide)
                        break
                    todo[sp] = child
                    sp += 1
    sel[SEL_WORSE] = 1 if worse else 0


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _rank_start(cfg, st, nodes, finals, stack, memo, sel):
    """A trigger's ranked enumeration: its tops (LAST: the latest position first), or, for NEXT
    with tops of different window limits, the plain enumeration (SEL_RANKED 0)."""
    window = cfg[C_WINDOW]
    ntops, empty = _tops(st, nodes, finals, stack, memo)
    if ntops < 0:
        return NEED_STACK
    has_limit = window >= 0
    kept = 0
    for t in range(ntops):  # a top without a window measure ends no complex event in the window
        top = memo[t, MEMO_TOPS]
        if not (has_limit and (nodes[top, KH] >> 1) == GONE_KIND):
            memo[kept, MEMO_TOPS] = top
            kept += 1
    ntops = kept
    for t in range(1, ntops):  # by position, the latest first (insertion sort: few tops)
        top = memo[t, MEMO_TOPS]
        u = t
        while u > 0 and nodes[memo[u - 1, MEMO_TOPS], POS] < nodes[top, POS]:
            memo[u, MEMO_TOPS] = memo[u - 1, MEMO_TOPS]
            u -= 1
        memo[u, MEMO_TOPS] = top
    sel[SEL_RANKED] = 1
    if has_limit and sel[SEL_MODE] == SELECT_NEXT:
        for t in range(1, ntops):
            if _lowest_first(nodes[memo[t, MEMO_TOPS], M], window) != _lowest_first(nodes[memo[0, MEMO_TOPS], M], window):
                sel[SEL_RANKED] = 0
    sel[SEL_NTOPS] = ntops
    sel[SEL_GROUP] = 0
    sel[SEL_HEAP] = 0
    sel[SEL_DESC] = 0
    sel[SEL_EMPTY] = 1 if empty else 0
    sel[SEL_CHECKED] = 0
    sel[SEL_SINCE] = st[S_STEPS]
    sel[SEL_BUDGET] = RANK_STEPS
    sel[SEL_LAST] = -1
    return OK


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _rank_group(cfg, nodes, stack, memo, sel, pool, path):
    """Put a walk per top of the next group (the tops of one window limit) on the heap;
    restartable."""
    window = cfg[C_WINDOW]
    mode = sel[SEL_MODE]
    g = sel[SEL_GROUP]
    ntops = sel[SEL_NTOPS]
    has_limit = window >= 0
    limit = _lowest_first(nodes[memo[g, MEMO_TOPS], M], window) if has_limit else 0
    sel[SEL_HEAP] = 0
    sel[SEL_POOL] = 0
    sel[SEL_PEND] = 0
    sel[SEL_STAMP] += 1
    end = g
    while end < ntops and (not has_limit or _lowest_first(nodes[memo[end, MEMO_TOPS], M], window) == limit):
        top = memo[end, MEMO_TOPS]
        r = _best_below(nodes, stack, memo, sel, top, has_limit, limit, mode, 1)
        if r == _SHORT:
            return NEED_STACK
        if r >= 0 and not _walk_new(sel, pool, 0, top, 1, r):
            return NEED_POOL
        end += 1
    if not _walks_left(nodes, memo, sel, pool, path, 0, 0, mode):
        return NEED_POOL
    sel[SEL_GROUP] = end
    sel[SEL_HASLIM] = 1 if has_limit else 0
    sel[SEL_LIMIT] = limit
    return OK


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _rank_value(nodes, stack, memo, sel, node, eok, has_limit, limit, mode):
    """A node's best support under this generation (computed if not yet), -1 when none in the
    window is viable, _SHORT."""
    if not _viable(nodes, node, has_limit, limit, eok):
        return -1
    v = _lookup(nodes, stack, memo, sel, sel[SEL_STAMP], node, eok, has_limit, limit, 0, mode)
    if v == _UNKNOWN_REP:
        v = _best_below(nodes, stack, memo, sel, node, has_limit, limit, mode, eok)
    return v


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _rank_descend(cfg, st, nodes, stack, path, out_m, out_pos, out_lab, trigger, code, memo, sel, pool):
    """Go on with the walk in progress down to BOTTOM (jumping from a union to the output node
    its best starts with, and leaving a deferred walk there) and output its complex event;
    or expand a deferred walk (the unions down to its output node, each other side left as a
    walk). Resumable: the walk is in sel and path."""
    mode = sel[SEL_MODE]
    has_limit = sel[SEL_HASLIM] == 1
    limit = sel[SEL_LIMIT]
    node = sel[SEL_F]
    eok = sel[SEL_EOK]
    depth = sel[SEL_DEPTH]
    if sel[SEL_DESC] == 2:
        x = sel[SEL_X]
        while node != x and (nodes[node, KH] >> 1) == UNION_KIND:
            sel[SEL_F] = node
            if _rank_pause(cfg, st, nodes, memo, sel, pool, mode):
                return NEED_MORE
            st[S_STEPS] += 1
            a = nodes[node, A]
            b = nodes[node, B]
            if has_limit:
                a = _only_empty(nodes, a, limit)
                b = _only_empty(nodes, b, limit)
            va = _rank_value(nodes, stack, memo, sel, a, eok, has_limit, limit, mode)
            vb = _rank_value(nodes, stack, memo, sel, b, eok, has_limit, limit, mode)
            if va == _SHORT or vb == _SHORT:
                return NEED_STACK
            if not (va >= 0 and (va & _ROW) == x):  # follow the side the best came from
                a, va, b, vb = b, vb, a, va
            if vb >= 0 and not _walk_new(sel, pool, depth, b, eok, vb):
                return NEED_POOL
            node = a
        sel[SEL_F] = node
        if not _walks_left(nodes, memo, sel, pool, path, depth, sel[SEL_KOFF], mode):
            return NEED_POOL
        sel[SEL_DESC] = 0
        return OK
    while True:
        sel[SEL_F] = node
        sel[SEL_EOK] = eok
        sel[SEL_DEPTH] = depth
        if _rank_pause(cfg, st, nodes, memo, sel, pool, mode):
            return NEED_MORE
        st[S_STEPS] += 1
        kind = nodes[node, KH] >> 1
        if kind == BOTTOM_KIND:
            if not _walks_left(nodes, memo, sel, pool, path, depth, -2 if eok == 1 else -1, mode):
                return NEED_POOL
            if eok == 1:
                for d in range(depth):
                    memo[d, MEMO_ROWS] = path[d]  # (from the latest down)
                if not _emit_direct(cfg, st, nodes, memo, out_m, out_pos, out_lab, trigger, code, depth):
                    return OUTPUT_FULL
            sel[SEL_DESC] = 0
            return OK
        if kind == UNION_KIND:
            r = _rank_value(nodes, stack, memo, sel, node, eok, has_limit, limit, mode)
            if r == _SHORT:
                return NEED_STACK
            if r < 0:  # (not reached: the walk's key says a side is viable)
                if not _walks_left(nodes, memo, sel, pool, path, depth, -1, mode):
                    return NEED_POOL
                sel[SEL_DESC] = 0
                return OK
            if not _walk_new(sel, pool, depth, node, eok | _DEFERRED, r):
                return NEED_POOL
            node = r & _ROW  # the output node (or BOTTOM) its best starts with
            continue
        # an output node
        if depth >= path.shape[0]:
            return NEED_PATH
        child, ceok = _child_of(nodes, node, has_limit, limit)
        path[depth] = node
        depth += 1
        node = child
        eok = ceok


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _rank_enumerate(cfg, st, nodes, stack, path, out_m, out_pos, out_lab, trigger, code, memo, sel, pool):
    """Output the trigger's complex events best support first (see above), pausing every
    S_STOP of them (NEED_MORE) so that Python can end the trigger (S_FINAL = S_NFINALS)."""
    lazy = cfg[C_LAZY] > 0
    mode = sel[SEL_MODE]
    while True:
        if st[S_FINAL] >= st[S_NFINALS]:
            return OK  # ended by Python, or every candidate is out
        if sel[SEL_DESC] != 0:
            before = st[S_TCOUNT]
            status = _rank_descend(cfg, st, nodes, stack, path, out_m, out_pos, out_lab, trigger, code, memo, sel, pool)
            if status != OK:
                return status
            if lazy and st[S_TCOUNT] > before and st[S_TCOUNT] >= st[S_STOP]:
                _rank_paused(st, nodes, memo, sel, pool, mode)
                return NEED_MORE
            continue
        if sel[SEL_HEAP] > 0:
            if _rank_pause(cfg, st, nodes, memo, sel, pool, mode):
                return NEED_MORE
            e = _walk_pop(nodes, memo, sel, pool, mode)
            sel[SEL_CUR] = e
            sel[SEL_XTIE] = 1 if pool[e, 4] & _TIE else 0
            depth = pool[e, 1]
            if depth > path.shape[0]:  # (not reached: the prefix was on the path)
                return NEED_PATH
            koff = pool[e, 0]
            for j in range(depth):
                k = koff + j
                path[j] = pool[k // _KEY_ROW, k % _KEY_ROW]
            sel[SEL_F] = pool[e, 2]
            sel[SEL_EOK] = pool[e, 3] & 1
            sel[SEL_DEPTH] = depth
            sel[SEL_PEND] = sel[SEL_POOL]
            if pool[e, 3] & _DEFERRED:
                sel[SEL_DESC] = 2
                sel[SEL_X] = pool[e, 4] & _ROW
                sel[SEL_KOFF] = koff
            else:
                sel[SEL_DESC] = 1
            continue
        if sel[SEL_GROUP] < sel[SEL_NTOPS]:
            status = _rank_group(cfg, nodes, stack, memo, sel, pool, path)
            if status != OK:
                return status
            continue
        if sel[SEL_EMPTY] == 1:  # the empty complex event: worse than any other
            if not _emit_direct(cfg, st, nodes, memo, out_m, out_pos, out_lab, trigger, code, 0):
                return OUTPUT_FULL
            sel[SEL_EMPTY] = 0
            continue
        st[S_FINAL] = st[S_NFINALS]
        st[S_SP] = 0
        return OK


_UNSEEN = INT64_MAX  # compaction: node not reachable from a live root
_DEAD = INT64_MAX - 1  # compaction: no complex event of the node can be reported any more
_OPEN = INT64_MIN  # compaction: keep every complex event (no last event fixed yet, or no pruning)


@njit(cache=True, nogil=True)
def compact_mark(nodes, st, cfg, act, slot_info, silent, prune, now, limits):
    """First half of compaction: ``limits[x]`` for every node (see ``compact_build``); returns
    the number of node rows the copy needs.

    With ``prune`` (a window over never-decreasing measures; ``now`` the last measure seen), a
    complex event is dropped once m(last) - m(first) >= window for the last event it has or can
    get. A root in a state that can only report its complex events after one more reported event
    (``silent[state] == 0``) gets last >= now. Otherwise (a run that may accept by skipping, such
    as after ``A; NOT(B)``), the last event is the first output node met from the root, as in
    the enumeration. Each node keeps one copy, pruned by the loosest limit any path asks of it
    (keeping more than needed is harmless: the enumeration applies the window exactly).
    Children always have smaller rows than their parents, so one descending sweep finds each
    node's limit."""
    n = st[S_NODES]
    window = cfg[C_WINDOW]
    # Limits are lowest first measures (``_lowest_first``), kept below the two sentinels
    # (a lower limit keeps more, which is harmless).
    limit_now = min(_lowest_first(now, window), _DEAD - 1) if prune else _OPEN
    for x in range(n):
        limits[x] = _UNSEEN
    for slot in range(st[S_SLOTS]):
        if slot_info[slot, P_CODE] < 0:
            continue
        for j in range(slot_info[slot, P_COUNT]):
            root = act[slot, j, 1]
            lim = limit_now if prune and silent[act[slot, j, 0]] == 0 else _OPEN
            if lim < limits[root]:
                limits[root] = lim
    size = 1
    for x in range(n - 1, 0, -1):
        lim = limits[x]
        if lim == _UNSEEN:
            continue
        if lim != _OPEN and nodes[x, MF] < lim and (nodes[x, KH] & 1) == 0:
            limits[x] = _DEAD
            continue
        size += 1
        a = nodes[x, A]
        if nodes[x, KH] >> 1 == UNION_KIND:
            b = nodes[x, B]
            if lim < limits[a]:
                limits[a] = lim
            if lim < limits[b]:
                limits[b] = lim
        else:
            if lim == _OPEN and prune and nodes[x, KH] >> 1 != GONE_KIND:
                # this output is the last event of its complex events
                lim = min(_lowest_first(nodes[x, M], window), _DEAD - 1)
            if lim < limits[a]:
                limits[a] = lim
    return size


@njit(cache=True, nogil=True)
def compact_build(nodes, st, cfg, act, slot_of, slot_info, free, limits, rows, out):
    """Second half of compaction: copy the nodes ``compact_mark`` kept into ``out`` (one
    ascending sweep: children are copied before their parents), remap the partitions' entries
    in place, drop entries left with nothing and partitions left as {initial state: BOTTOM}."""
    n = st[S_NODES]
    for c in range(NODE_FIELDS):  # (explicit loops: slice assignment is slow to compile)
        out[0, c] = nodes[0, c]
    rows[0] = 0
    st[S_NODES] = 1  # from here on, the rows of ``out`` (_output and _union count them)
    for x in range(1, n):
        lim = limits[x]
        if lim == _UNSEEN:
            continue
        if lim == _DEAD:
            rows[x] = -1
            continue
        a = rows[nodes[x, A]]
        if nodes[x, KH] >> 1 == UNION_KIND:
            b = rows[nodes[x, B]]
            if a < 0:
                rows[x] = b
            elif b < 0:
                rows[x] = a
            else:
                rows[x] = _union(out, st, a, b)
        elif a < 0:
            rows[x] = -1
        else:
            rows[x] = _output(out, st, nodes[x, POS], nodes[x, LAB], a, nodes[x, M], nodes[x, KH] >> 1 == GONE_KIND)
    init = cfg[C_INIT]
    partitioned = cfg[C_PARTITIONED] == 1
    for slot in range(st[S_SLOTS]):
        if slot_info[slot, P_CODE] < 0:
            continue
        kept = 0
        for j in range(slot_info[slot, P_COUNT]):
            r = rows[act[slot, j, 1]]
            if r >= 0:
                act[slot, kept, 0] = act[slot, j, 0]
                act[slot, kept, 1] = r
                kept += 1
        if kept == 0 and cfg[C_ANCHORED] == 0:
            act[slot, 0, 0] = init
            act[slot, 0, 1] = 0
            kept = 1
        if partitioned and kept == 1 and act[slot, 0, 0] == init and act[slot, 0, 1] == 0:
            _free_slot(st, slot_of, slot_info, free, slot)
        else:
            slot_info[slot, P_COUNT] = kept


# ====================================================================== projection helpers


@njit(cache=True, nogil=True)
def dedupe_mask(triggers, offsets, positions, ids, extra, keep, hashes, slots):
    """For matches grouped by trigger (consecutive), set ``keep`` to whether each is the first
    of the matches of its trigger with the same (position, projected label-set id) sequence and
    the same row of ``extra`` (int64 codes of measure values, one column per measure) (a hash
    set per trigger, open addressing). Work arrays: ``hashes`` (one per match) and ``slots``
    (a power of two at least twice the largest trigger's match count)."""
    n = len(triggers)
    for k in range(n):
        keep[k] = True
        h = np.uint64(1469598103934665603)
        for p in range(offsets[k], offsets[k + 1]):
            h = (h ^ np.uint64(positions[p])) * np.uint64(1099511628211)
            h = (h ^ np.uint64(ids[p])) * np.uint64(1099511628211)
        for c in range(extra.shape[1]):
            h = (h ^ np.uint64(extra[k, c])) * np.uint64(1099511628211)
        hashes[k] = (h ^ np.uint64(offsets[k + 1] - offsets[k])) * np.uint64(1099511628211)
    start = 0
    while start < n:
        end = start + 1
        while end < n and triggers[end] == triggers[start]:
            end += 1
        if end - start > 1:
            mask = 16
            while mask < 2 * (end - start):
                mask *= 2
            mask = min(mask, len(slots))
            for u in range(mask):
                slots[u] = -1
            mask -= 1
            for k in range(start, end):
                u = np.int64(hashes[k] & np.uint64(mask))
                while slots[u] >= 0:
                    other = slots[u]
                    if hashes[other] == hashes[k] and _equal_runs(offsets, positions, ids, extra, other, k):
                        keep[k] = False
                        break
                    u = (u + 1) & mask
                if keep[k]:
                    slots[u] = k
        start = end


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _equal_runs(offsets, positions, ids, extra, a, b):
    la = offsets[a + 1] - offsets[a]
    if la != offsets[b + 1] - offsets[b]:
        return False
    for c in range(extra.shape[1]):
        if extra[a, c] != extra[b, c]:
            return False
    for d in range(la):
        if (
            positions[offsets[a] + d] != positions[offsets[b] + d]
            or ids[offsets[a] + d] != ids[offsets[b] + d]
        ):
            return False
    return True


_GOLDEN = 11400714819323198485  # 2**64 / golden ratio: Fibonacci hashing of int64 keys


@njit(cache=True, nogil=True)
def hash_codes(values, valid, table, bits, next_code, out, fresh):  # pragma: no cover - compiled
    """Codes for int64 keys from a persistent open-addressing table of 2**bits slots, slot j
    being ``table[2j]`` (the key) and ``table[2j + 1]`` (its code, -1: empty) so that a probe
    touches one cache line; at most half full after the call (the caller ensures it). A key
    seen before gets its code, a new one the next code, in order of first appearance (its key
    goes to ``fresh[code - the first next code]``: the new keys in code order). Rows without
    ``valid`` get -1. Returns the next free code."""
    first = next_code
    for i in range(len(values)):
        out[i] = _code_of(table, bits, values[i], next_code) if valid[i] else -1
        if out[i] == next_code:  # a new key took the next code
            fresh[next_code - first] = values[i]
            next_code += 1
    return next_code


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _code_of(table, bits, v, fresh):  # pragma: no cover - compiled
    """The code of key ``v`` in a ``hash_codes`` table; a new key is put in with ``fresh``."""
    j = _key_slot(table, bits, v)
    if table[2 * j + 1] < 0:
        table[2 * j] = v
        table[2 * j + 1] = fresh
    return table[2 * j + 1]


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _key_slot(table, bits, v):  # pragma: no cover - compiled
    """The slot of key ``v`` in a ``hash_codes`` table: where it is, or the empty slot where
    it goes."""
    mask = (1 << bits) - 1
    j = np.int64((np.uint64(v) * np.uint64(_GOLDEN)) >> np.uint64(64 - bits))
    while table[2 * j + 1] >= 0 and table[2 * j] != v:
        j = (j + 1) & mask
    return j


@njit(cache=True, nogil=True)
def hash_insert(old, table, bits):  # pragma: no cover - compiled
    """Move every key of the table ``old`` (the layout of ``hash_codes``) into ``table``."""
    for s in range(len(old) // 2):
        c = old[2 * s + 1]
        if c < 0:
            continue
        v = old[2 * s]
        j = _key_slot(table, bits, v)  # (keys are distinct: the empty slot where v goes)
        table[2 * j] = v
        table[2 * j + 1] = c


# ====================================================================== measures


@njit(cache=True, nogil=True)
def segment_sums(values, starts, ends, out):  # pragma: no cover - compiled
    """``out[i]`` = the sum of ``values[starts[i]:ends[i]]`` added in order (as Python adds
    doubles in stream order; numpy's reductions add pairwise)."""
    for i in range(len(starts)):
        total = 0.0
        first = True
        for j in range(starts[i], ends[i]):
            if first:
                total = values[j]
                first = False
            else:
                total += values[j]
        out[i] = total


# ====================================================================== selection strategies



@njit(cache=True, nogil=True)
def select_supports(triggers, offsets, positions, keep, mode):  # pragma: no cover - compiled
    """Among the kept complex events of each trigger (consecutive), keep those NEXT / LAST /
    MAX select by their supports (``positions[offsets[i]:offsets[i + 1]]``, ascending): NEXT
    the greatest for A <=next B iff A = B or min(A xor B) is in B (LAST: max), MAX the supports
    no other support of the trigger strictly contains."""
    n = len(triggers)
    start = 0
    while start < n:
        end = start + 1
        while end < n and triggers[end] == triggers[start]:
            end += 1
        if mode == SELECT_MAX:
            for a in range(start, end):
                if not keep[a]:
                    continue
                for b in range(start, end):
                    if b != a and keep[b] and _strict_subset(offsets, positions, a, b):
                        keep[a] = False
                        break
        else:
            best = -1
            for a in range(start, end):
                if keep[a] and (best < 0 or _better(offsets, positions, a, best, mode)):
                    best = a
            for a in range(start, end):
                if keep[a] and not _same_support(offsets, positions, a, best):
                    keep[a] = False
        start = end


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _better(offsets, positions, a, b, mode):
    """Whether support a beats support b: the smallest (NEXT) or largest (LAST) position in
    exactly one of them is in a."""
    i, j = offsets[a], offsets[b]
    ie, je = offsets[a + 1], offsets[b + 1]
    if mode == SELECT_NEXT:
        while i < ie and j < je:
            if positions[i] == positions[j]:
                i += 1
                j += 1
            else:
                return positions[i] < positions[j]
        return i < ie  # a has more events after a common prefix
    i, j = ie - 1, je - 1
    while i >= offsets[a] and j >= offsets[b]:
        if positions[i] == positions[j]:
            i -= 1
            j -= 1
        else:
            return positions[i] > positions[j]
    return i >= offsets[a]


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _same_support(offsets, positions, a, b):
    la = offsets[a + 1] - offsets[a]
    if la != offsets[b + 1] - offsets[b]:
        return False
    for d in range(la):
        if positions[offsets[a] + d] != positions[offsets[b] + d]:
            return False
    return True


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _strict_subset(offsets, positions, a, b):
    """Whether support a is a strict subset of support b (both ascending)."""
    la = offsets[a + 1] - offsets[a]
    lb = offsets[b + 1] - offsets[b]
    if la >= lb:
        return False
    j = offsets[b]
    for i in range(offsets[a], offsets[a + 1]):
        while j < offsets[b + 1] and positions[j] < positions[i]:
            j += 1
        if j == offsets[b + 1] or positions[j] != positions[i]:
            return False
        j += 1
    return True


# ====================================================================== window keys (issue 34)
# Integer partition keys whose codes are recycled once their partition holds no live run, so
# that the key table, the codes and the partition slots stay bounded by the window (keys.py's
# WindowCodes). The table layout is hash_codes's; ``keys[code]`` is the key a code stands for.


@njit(cache=True, nogil=True)
def window_codes(values, valid, table, bits, keys, free, counts, out):  # pragma: no cover - compiled
    """Codes for int64 keys, as ``hash_codes``, except that a new key takes a recycled code
    from the stack ``free`` (``counts[1]`` of them) before a fresh one (``counts[0]``: the next
    fresh code), and its code's key is recorded in ``keys`` (the caller sizes ``keys`` for
    ``counts[0] + len(values)`` codes and the table for the result to be at most half full)."""
    next_code = counts[0]
    nfree = counts[1]
    for i in range(len(values)):
        if not valid[i]:
            out[i] = -1
            continue
        v = values[i]
        j = _key_slot(table, bits, v)
        if table[2 * j + 1] < 0:
            if nfree > 0:
                nfree -= 1
                code = free[nfree]
            else:
                code = next_code
                next_code += 1
            table[2 * j] = v
            table[2 * j + 1] = code
            keys[code] = v
        out[i] = table[2 * j + 1]
    counts[0] = next_code
    counts[1] = nfree


@njit(cache=True, nogil=True)
def recycle_codes(table, bits, keys, slot_of, n_codes, free):  # pragma: no cover - compiled
    """Rebuild the key table of ``window_codes`` with the codes whose partition is live
    (``slot_of[code] >= 0``); every other code below ``n_codes`` goes on the stack ``free``.
    Returns (live codes, free codes)."""
    for s in range(len(table) // 2):
        table[2 * s + 1] = -1
    live = 0
    nfree = 0
    for code in range(n_codes):
        if code < len(slot_of) and slot_of[code] >= 0:
            v = keys[code]
            j = _key_slot(table, bits, v)  # (live codes have distinct keys: an empty slot)
            table[2 * j] = v
            table[2 * j + 1] = code
            live += 1
        else:
            free[nfree] = code
            nfree += 1
    return live, nfree


# The equality joins' compiled loop (issue 34) is kernel/joinloop.py.


# ====================================================================== contiguous chains (issue 34)


@njit(cache=True, nogil=True)
def group_by_code(codes, n_codes, counts, out):  # pragma: no cover - compiled
    """A stable counting sort: the rows with a code >= 0 (all below ``n_codes``), grouped by
    code, each code's rows in their order (``counts``: ``n_codes + 1`` zeros). Returns how many."""
    for i in range(len(codes)):
        c = codes[i]
        if c >= 0:
            counts[c + 1] += 1
    for c in range(n_codes):
        counts[c + 1] += counts[c]
    for i in range(len(codes)):
        c = codes[i]
        if c >= 0:
            out[counts[c]] = i
            counts[c] += 1
    return counts[n_codes - 1] if n_codes > 0 else 0


@njit(cache=True, nogil=True)
def chain_starts(rows, codes, kinds, measures, gone, role_type, first, window, out):  # pragma: no cover
    """The indexes j into ``rows`` (a key's rows consecutive, in stream order) where k =
    len(role_type) consecutive rows of one key have the roles' types, end at a row >= ``first``
    and, with ``window`` >= 0, span less than it (no missing measure at either end). Returns
    how many."""
    k = len(role_type)
    n = 0
    for j in range(len(rows) - k + 1):
        last = rows[j + k - 1]
        if last < first:
            continue
        start = rows[j]
        c = codes[start]
        ok = True
        for q in range(k):
            r = rows[j + q]
            if codes[r] != c or kinds[r] != role_type[q]:
                ok = False
                break
        if not ok:
            continue
        if window >= 0 and (gone[start] or gone[last] or measures[last] - measures[start] >= window):
            continue
        out[n] = j
        n += 1
    return n


# ====================================================================== event type names (issue 34)


@njit(cache=True, nogil=True)
def match_names(offsets, data, names, name_offsets, by_first, out):  # pragma: no cover - compiled
    """Each string's index among ``names`` (-1: none): ``offsets`` / ``data`` are an Arrow
    string array's buffers (offsets already sliced to the array), ``names`` the known names'
    bytes end to end, ``name_offsets`` where each starts. ``by_first[b]``: the one name whose
    first byte is b (-1: none, -2: several, then each is tried). The first byte picks the name
    without a branch on the (random) type of each row; its bytes are then compared."""
    k = len(name_offsets) - 1
    for i in range(len(out)):
        lo = offsets[i]
        size = offsets[i + 1] - lo
        found = -1
        if size > 0:
            q = by_first[data[lo]]
            if q >= 0:
                a = name_offsets[q]
                if name_offsets[q + 1] - a == size:
                    found = q
                    for j in range(1, size):
                        if data[lo + j] != names[a + j]:
                            found = -1
                            break
            elif q == -2:
                for q in range(k):
                    a = name_offsets[q]
                    if name_offsets[q + 1] - a != size:
                        continue
                    same = True
                    for j in range(size):
                        if data[lo + j] != names[a + j]:
                            same = False
                            break
                    if same:
                        found = q
                        break
        out[i] = found
