"""The compiled (numba) MATCH_RECOGNIZE matcher: a backtracking row-pattern VM and an
expression VM, over columns already sorted by partition and ORDER BY.

Pattern program (``prog``, rows of 4 int64: op, a, b, c; built by ``sql/program.py``):
``MATCH v`` maps the current row to variable v (its row mask, then its DEFINE condition on the
match so far); ``SPLIT x y`` tries x, and y when x fails; ``JUMP x``; ``START``/``END`` are ``^``
and ``$``; ``EXCL_IN``/``EXCL_OUT`` bracket ``{- -}``; ``ITER_BEGIN s``/``ITER_END s`` make an
iteration beyond a quantifier's minimum fail if it mapped no row; ``DONE``. Depth-first search
with a backtracking stack finds matches in the order of preference, so the first one found is
the match. When no condition depends on the match so far (``memo``), a (instruction, row) state
that failed once fails again, so it is not explored twice: matching is then linear in the
partition times the program's length.

Expressions (``code``): a stack machine. Values are int64 (integers, booleans, string codes,
timestamps) or float64, each with a null flag; rows are found by ``ROW_LOGICAL`` (FIRST/LAST of
the rows mapped to a class of variables) and moved by ``ROW_PHYS`` (PREV/NEXT), and ``LOAD_*``
reads a precomputed column (``vcol``) on the row on top of the row stack. Errors (division by
zero, integer overflow) stop the run with a code; the caller raises them.

Numba freezes module globals into its on-disk cache, so the op codes live here.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

# ---------------------------------------------------------------- pattern program
P_MATCH, P_SPLIT, P_JUMP, P_START, P_END, P_EXCL_IN, P_EXCL_OUT, P_ITER_BEGIN, P_ITER_END, P_DONE = range(10)

# ---------------------------------------------------------------- expression code
(
    E_CONST_I,
    E_CONST_F,
    E_NULL,
    E_ROW_LOGICAL,
    E_ROW_PHYS,
    E_ROW_POP,
    E_LOAD_I,
    E_LOAD_F,
    E_CLASSIFIER,
    E_MATCHNO,
    E_AGG,
    E_NEG_I,
    E_NEG_F,
    E_ABS_I,
    E_ABS_F,
    E_ARITH_I,
    E_ARITH_F,
    E_SCALE,
    E_I2F,
    E_F2I,
    E_I2B,
    E_CMP_I,
    E_CMP_F,
    E_NOT,
    E_AND_SKIP,
    E_AND,
    E_OR_SKIP,
    E_OR,
    E_ISNULL,
    E_NOTNULL,
    E_JUMP,
    E_JUMP_UNLESS_TRUE,
    E_JUMP_IF_NOT_NULL,
    E_POP,
    E_ROW_ARG,
) = range(35)

A_ADD, A_SUB, A_MUL, A_DIV, A_MOD = range(5)
C_EQ, C_NE, C_LT, C_LE, C_GT, C_GE = range(6)

# aggregate functions
G_COUNT_ROWS, G_COUNT, G_SUM_I, G_SUM_F, G_AVG_I, G_AVG_F, G_MIN_I, G_MIN_F, G_MAX_I, G_MAX_F = range(10)

# error codes (see ceql.sql.engine for the messages)
ERR_NONE = 0
ERR_DIV_ZERO = 1
ERR_MOD_ZERO = 2
ERR_OVERFLOW = 3  # detail: which operation
ERR_CAST = 4  # value in the float payload
ERR_SKIP_NONE = 5
ERR_SKIP_LOOP = 6
ERR_STEPS = 7
ERR_MORE = 8  # streaming: needs rows not seen yet

# overflow details
O_ADD, O_SUB, O_MUL, O_DIV, O_NEG, O_ABS, O_SUM, O_SCALE = range(8)

INT64_MIN = np.iinfo(np.int64).min
INT64_MAX = np.iinfo(np.int64).max
TWO63 = 9223372036854775808.0


@njit(cache=True, inline="always")
def _add_ovf(a, b):
    r = a + b
    return r, ((a ^ r) & (b ^ r)) < 0


@njit(cache=True, inline="always")
def _sub_ovf(a, b):
    r = a - b
    return r, ((a ^ b) & (a ^ r)) < 0


@njit(cache=True, inline="always")
def _mul_ovf(a, b):
    if a == 0 or b == 0:
        return np.int64(0), False
    r = a * b
    if (a == -1 and b == INT64_MIN) or (b == -1 and a == INT64_MIN):
        return r, True
    return r, r // b != a or (r % b) != 0


@njit(cache=True)
def evaluate(
    code, lo, hi, row0, vis0, start, pstart, pend, upto, full, number, final,
    ci, cin, cf, cfn, consts_i, consts_f, path_var, cls_member, var_code,
    agg_func, agg_final, acc_i, acc_f, acc_cnt, acc_err,
    st_i, st_f, st_n, rows, viss,
):
    """Run expression code ``code[lo:hi]``; returns (int value, float value, is null, error,
    error detail, float payload). ``ROW_ARG`` pushes ``row0`` (an aggregate's argument is read
    on the row being mapped)."""
    sp = 0
    rp = 0
    pc = lo
    while pc < hi:
        op = code[pc]
        if op == E_CONST_I:
            st_i[sp] = consts_i[code[pc + 1]]
            st_n[sp] = 0
            sp += 1
            pc += 2
        elif op == E_CONST_F:
            st_f[sp] = consts_f[code[pc + 1]]
            st_n[sp] = 0
            sp += 1
            pc += 2
        elif op == E_NULL:
            st_i[sp] = 0
            st_f[sp] = 0.0
            st_n[sp] = 1
            sp += 1
            pc += 1
        elif op == E_ROW_LOGICAL:
            is_first = code[pc + 1]
            cls = code[pc + 2]
            offset = code[pc + 3]
            length = full if code[pc + 4] else upto
            row = -1
            count = 0
            if is_first:
                for j in range(length):
                    if cls_member[cls, path_var[j]]:
                        if count == offset:
                            row = start + j
                            break
                        count += 1
            else:
                for j in range(length - 1, -1, -1):
                    if cls_member[cls, path_var[j]]:
                        if count == offset:
                            row = start + j
                            break
                        count += 1
            rows[rp] = row
            viss[rp] = length
            rp += 1
            pc += 5
        elif op == E_ROW_PHYS:
            row = rows[rp - 1]
            if row >= 0:
                row += code[pc + 1]
                if row < pstart:
                    row = -1
                elif row >= pend:
                    if not final:
                        return 0, 0.0, True, ERR_MORE, 0, 0.0
                    row = -1
            rows[rp - 1] = row
            pc += 2
        elif op == E_ROW_POP:
            rp -= 1
            pc += 1
        elif op == E_ROW_ARG:
            rows[rp] = row0
            viss[rp] = vis0
            rp += 1
            pc += 1
        elif op == E_LOAD_I:
            row = rows[rp - 1]
            k = code[pc + 1]
            if row < 0 or cin[k, row] == 0:
                st_i[sp] = 0
                st_n[sp] = 1
            else:
                st_i[sp] = ci[k, row]
                st_n[sp] = 0
            sp += 1
            pc += 2
        elif op == E_LOAD_F:
            row = rows[rp - 1]
            k = code[pc + 1]
            if row < 0 or cfn[k, row] == 0:
                st_f[sp] = 0.0
                st_n[sp] = 1
            else:
                st_f[sp] = cf[k, row]
                st_n[sp] = 0
            sp += 1
            pc += 2
        elif op == E_CLASSIFIER:
            row = rows[rp - 1]
            j = row - start
            if row >= 0 and j >= 0 and j < viss[rp - 1]:
                st_i[sp] = var_code[path_var[j]]
                st_n[sp] = 0
            else:
                st_i[sp] = 0
                st_n[sp] = 1
            sp += 1
            pc += 1
        elif op == E_MATCHNO:
            st_i[sp] = number
            st_n[sp] = 0
            sp += 1
            pc += 1
        elif op == E_AGG:
            k = code[pc + 1]
            depth = full if agg_final[k] else upto
            err = acc_err[k, depth]
            if err != 0:
                return 0, 0.0, True, err >> 8, err & 255, 0.0
            func = agg_func[k]
            cnt = acc_cnt[k, depth]
            st_n[sp] = 0
            if func == G_COUNT_ROWS or func == G_COUNT:
                st_i[sp] = cnt
            elif cnt == 0:
                st_n[sp] = 1
                st_i[sp] = 0
                st_f[sp] = 0.0
            elif func == G_AVG_I:
                st_f[sp] = np.float64(acc_i[k, depth]) / np.float64(cnt)
            elif func == G_AVG_F:
                st_f[sp] = acc_f[k, depth] / np.float64(cnt)
            elif func == G_SUM_I or func == G_MIN_I or func == G_MAX_I:
                st_i[sp] = acc_i[k, depth]
            else:
                st_f[sp] = acc_f[k, depth]
            sp += 1
            pc += 2
        elif op == E_NEG_I:
            if not st_n[sp - 1]:
                if st_i[sp - 1] == INT64_MIN:
                    return 0, 0.0, True, ERR_OVERFLOW, O_NEG, 0.0
                st_i[sp - 1] = -st_i[sp - 1]
            pc += 1
        elif op == E_NEG_F:
            st_f[sp - 1] = -st_f[sp - 1]
            pc += 1
        elif op == E_ABS_I:
            if not st_n[sp - 1]:
                if st_i[sp - 1] == INT64_MIN:
                    return 0, 0.0, True, ERR_OVERFLOW, O_ABS, 0.0
                st_i[sp - 1] = abs(st_i[sp - 1])
            pc += 1
        elif op == E_ABS_F:
            st_f[sp - 1] = abs(st_f[sp - 1])
            pc += 1
        elif op == E_ARITH_I:
            kind = code[pc + 1]
            sp -= 1
            if st_n[sp] or st_n[sp - 1]:
                st_n[sp - 1] = 1
            else:
                a = st_i[sp - 1]
                b = st_i[sp]
                if kind == A_ADD:
                    r, bad = _add_ovf(a, b)
                    if bad:
                        return 0, 0.0, True, ERR_OVERFLOW, O_ADD, 0.0
                elif kind == A_SUB:
                    r, bad = _sub_ovf(a, b)
                    if bad:
                        return 0, 0.0, True, ERR_OVERFLOW, O_SUB, 0.0
                elif kind == A_MUL:
                    r, bad = _mul_ovf(a, b)
                    if bad:
                        return 0, 0.0, True, ERR_OVERFLOW, O_MUL, 0.0
                else:
                    if b == 0:
                        return 0, 0.0, True, ERR_DIV_ZERO if kind == A_DIV else ERR_MOD_ZERO, 0, 0.0
                    if a == INT64_MIN and b == -1:
                        if kind == A_DIV:
                            return 0, 0.0, True, ERR_OVERFLOW, O_DIV, 0.0
                        r = np.int64(0)
                    else:
                        q = abs(a) // abs(b)
                        if (a < 0) != (b < 0):
                            q = -q
                        r = q if kind == A_DIV else a - b * q
                st_i[sp - 1] = r
            pc += 2
        elif op == E_ARITH_F:
            kind = code[pc + 1]
            sp -= 1
            if st_n[sp] or st_n[sp - 1]:
                st_n[sp - 1] = 1
            else:
                a = st_f[sp - 1]
                b = st_f[sp]
                if kind == A_ADD:
                    r = a + b
                elif kind == A_SUB:
                    r = a - b
                elif kind == A_MUL:
                    r = a * b
                elif kind == A_DIV:
                    if b == 0.0:
                        if a == 0.0 or math.isnan(a):
                            r = np.nan
                        else:
                            r = math.copysign(np.inf, a) * math.copysign(1.0, b)
                    else:
                        r = a / b
                else:
                    if b == 0.0 or math.isinf(a) or math.isnan(a) or math.isnan(b):
                        r = np.nan
                    else:
                        r = np.fmod(a, b)
                st_f[sp - 1] = r
            pc += 2
        elif op == E_SCALE:
            if not st_n[sp - 1]:
                r, bad = _mul_ovf(st_i[sp - 1], code[pc + 1])
                if bad:
                    return 0, 0.0, True, ERR_OVERFLOW, O_SCALE, 0.0
                st_i[sp - 1] = r
            pc += 2
        elif op == E_I2F:
            st_f[sp - 1] = np.float64(st_i[sp - 1])
            pc += 1
        elif op == E_F2I:
            if not st_n[sp - 1]:
                v = st_f[sp - 1]
                if math.isnan(v) or not (-TWO63 <= v < TWO63):
                    return 0, 0.0, True, ERR_CAST, 0, v
                st_i[sp - 1] = np.int64(v)
            pc += 1
        elif op == E_I2B:
            st_i[sp - 1] = 1 if st_i[sp - 1] != 0 else 0
            pc += 1
        elif op == E_CMP_I or op == E_CMP_F:
            kind = code[pc + 1]
            sp -= 1
            if st_n[sp] or st_n[sp - 1]:
                st_n[sp - 1] = 1
            else:
                if op == E_CMP_I:
                    a = st_i[sp - 1]
                    b = st_i[sp]
                    if kind == C_EQ:
                        res = a == b
                    elif kind == C_NE:
                        res = a != b
                    elif kind == C_LT:
                        res = a < b
                    elif kind == C_LE:
                        res = a <= b
                    elif kind == C_GT:
                        res = a > b
                    else:
                        res = a >= b
                else:
                    x = st_f[sp - 1]
                    y = st_f[sp]
                    if kind == C_EQ:
                        res = x == y
                    elif kind == C_NE:
                        res = x != y
                    elif kind == C_LT:
                        res = x < y
                    elif kind == C_LE:
                        res = x <= y
                    elif kind == C_GT:
                        res = x > y
                    else:
                        res = x >= y
                st_i[sp - 1] = 1 if res else 0
            pc += 2
        elif op == E_NOT:
            st_i[sp - 1] = 1 - st_i[sp - 1]
            pc += 1
        elif op == E_AND_SKIP:
            # a FALSE left side is the result: skip the right side
            if not st_n[sp - 1] and st_i[sp - 1] == 0:
                pc = code[pc + 1]
            else:
                pc += 2
        elif op == E_AND:
            sp -= 1
            if not st_n[sp] and st_i[sp] == 0:
                st_i[sp - 1] = 0
                st_n[sp - 1] = 0
            elif st_n[sp] or st_n[sp - 1]:
                st_n[sp - 1] = 1
            else:
                st_i[sp - 1] = 1
            pc += 1
        elif op == E_OR_SKIP:
            if not st_n[sp - 1] and st_i[sp - 1] == 1:
                pc = code[pc + 1]
            else:
                pc += 2
        elif op == E_OR:
            sp -= 1
            if not st_n[sp] and st_i[sp] == 1:
                st_i[sp - 1] = 1
                st_n[sp - 1] = 0
            elif st_n[sp] or st_n[sp - 1]:
                st_n[sp - 1] = 1
            else:
                st_i[sp - 1] = 0
            pc += 1
        elif op == E_ISNULL:
            st_i[sp - 1] = 1 if st_n[sp - 1] else 0
            st_n[sp - 1] = 0
            pc += 1
        elif op == E_NOTNULL:
            st_i[sp - 1] = 0 if st_n[sp - 1] else 1
            st_n[sp - 1] = 0
            pc += 1
        elif op == E_JUMP:
            pc = code[pc + 1]
        elif op == E_JUMP_UNLESS_TRUE:
            sp -= 1
            if st_n[sp] or st_i[sp] == 0:
                pc = code[pc + 1]
            else:
                pc += 2
        elif op == E_JUMP_IF_NOT_NULL:
            if not st_n[sp - 1]:
                pc = code[pc + 1]
            else:
                pc += 2
        elif op == E_POP:
            sp -= 1
            pc += 1
        else:  # pragma: no cover - the compiler emits no other op
            return 0, 0.0, True, 99, int(op), 0.0
    return st_i[0], st_f[0], st_n[0] != 0, ERR_NONE, 0, 0.0


@njit(cache=True)
def _grow_i(a, size):
    out = np.empty(max(size, 2 * a.shape[0]), dtype=a.dtype)
    out[: a.shape[0]] = a
    return out


@njit(cache=True)
def _grow_2d(a, size):
    out = np.zeros((a.shape[0], max(size, 2 * a.shape[1])), dtype=a.dtype)
    out[:, : a.shape[1]] = a
    return out


@njit(cache=True)
def match_all(
    prog, masks, cond_lo, cond_hi, starts, bounds, resume, numbers, covered_in,
    times, times_valid, window, memo_ok, max_steps, skip_kind, skip_cls,
    all_rows, empty_mode, meas_lo, meas_hi, meas_float, final,
    code, ci, cin, cf, cfn, consts_i, consts_f, cls_member, var_code,
    agg_func, agg_final, agg_cls, agg_lo, agg_hi, agg_float, nslots, stack_size,
):
    """Match every partition (rows ``bounds[p]`` to ``bounds[p + 1]``, starting at
    ``resume[p]`` with ``numbers[p]`` matches found before and rows up to ``covered_in[p]`` in
    some match). Returns the output rows (row index, -1 for none), whether their measures are
    all null (unmatched rows), the measures, per-partition resume state, and an error."""
    nprog = prog.shape[0]
    nvars = masks.shape[0]
    nmeas = meas_lo.shape[0]
    nagg = agg_func.shape[0]
    nparts = bounds.shape[0] - 1
    cap = 16
    path_var = np.zeros(cap, dtype=np.int64)
    path_excl = np.zeros(cap, dtype=np.uint8)
    acc_i = np.zeros((nagg, cap + 1), dtype=np.int64)
    acc_f = np.zeros((nagg, cap + 1), dtype=np.float64)
    acc_cnt = np.zeros((nagg, cap + 1), dtype=np.int64)
    acc_err = np.zeros((nagg, cap + 1), dtype=np.int64)
    bt_pc = np.zeros(64, dtype=np.int64)
    bt_pos = np.zeros(64, dtype=np.int64)
    bt_excl = np.zeros(64, dtype=np.int64)
    bt_trail = np.zeros(64, dtype=np.int64)
    slots = np.zeros(max(nslots, 1), dtype=np.int64)
    trail_slot = np.zeros(64, dtype=np.int64)
    trail_old = np.zeros(64, dtype=np.int64)
    st_i = np.zeros(stack_size, dtype=np.int64)
    st_f = np.zeros(stack_size, dtype=np.float64)
    st_n = np.zeros(stack_size, dtype=np.uint8)
    rows_st = np.zeros(stack_size, dtype=np.int64)
    viss = np.zeros(stack_size, dtype=np.int64)
    maxlen = 0
    for p in range(nparts):
        maxlen = max(maxlen, bounds[p + 1] - bounds[p])
    memo = np.zeros(nprog * (maxlen + 1) if memo_ok else 1, dtype=np.int64)
    gen = 0
    out_cap = 1024
    out_row = np.zeros(out_cap, dtype=np.int64)
    out_null = np.zeros(out_cap, dtype=np.uint8)
    out_i = np.zeros((nmeas, out_cap), dtype=np.int64)
    out_f = np.zeros((nmeas, out_cap), dtype=np.float64)
    out_n = np.zeros((nmeas, out_cap), dtype=np.uint8)
    nout = 0
    resume_out = resume.copy()
    numbers_out = numbers.copy()
    covered_out = covered_in.copy()
    # error: code, detail, sorted row, partition, match number, payload
    err = np.zeros(5, dtype=np.int64)
    err_f = 0.0
    steps = 0
    for p in range(nparts):
        pstart = bounds[p]
        pend = bounds[p + 1]
        number = numbers[p]
        covered = covered_in[p]
        s = resume[p]
        valid_since = gen + 1
        while s < pend:
            if starts[s] == 0 and not (all_rows and empty_mode == 2 and s > covered):
                # no match can start here: skip to the next candidate row
                s += 1
                continue
            gen += 1
            # ---------------------------------------------------- search from s
            pc = 0
            pos = s
            excl = 0
            nbt = 0
            ntrail = 0
            found = False
            more = False
            failed = False
            while True:
                steps += 1
                if steps > max_steps and max_steps > 0:
                    err[0] = 7
                    err[2] = s
                    err[3] = p
                    return out_row[:nout], out_null[:nout], out_i[:, :nout], out_f[:, :nout], out_n[:, :nout], resume_out, numbers_out, covered_out, err, err_f
                fail = False
                if memo_ok:
                    idx = pc * (maxlen + 1) + (pos - pstart)
                    if memo[idx] >= valid_since:
                        fail = True
                    else:
                        memo[idx] = gen
                if not fail:
                    op = prog[pc, 0]
                    if op == P_MATCH:
                        v = prog[pc, 1]
                        if pos >= pend:
                            if not final:
                                more = True
                                break
                            fail = True
                        elif masks[v, pos] == 0:
                            fail = True
                        elif window >= 0 and (
                            times_valid[pos] == 0 or times_valid[s] == 0 or times[pos] - times[s] >= window
                        ):
                            fail = True
                        else:
                            d = pos - s
                            if d + 1 >= cap:
                                newcap = 2 * cap
                                path_var = _grow_i(path_var, newcap)
                                path_excl = _grow_i(path_excl, newcap)
                                acc_i = _grow_2d(acc_i, newcap + 1)
                                acc_f = _grow_2d(acc_f, newcap + 1)
                                acc_cnt = _grow_2d(acc_cnt, newcap + 1)
                                acc_err = _grow_2d(acc_err, newcap + 1)
                                cap = newcap
                            path_var[d] = v
                            path_excl[d] = 1 if excl > 0 else 0
                            # aggregates over the path including this row
                            for k in range(nagg):
                                acc_i[k, d + 1] = acc_i[k, d]
                                acc_f[k, d + 1] = acc_f[k, d]
                                acc_cnt[k, d + 1] = acc_cnt[k, d]
                                acc_err[k, d + 1] = acc_err[k, d]
                                if acc_err[k, d] != 0 or not cls_member[agg_cls[k], v]:
                                    continue
                                func = agg_func[k]
                                if func == G_COUNT_ROWS:
                                    acc_cnt[k, d + 1] += 1
                                    continue
                                ri, rf, rn, e, ed, ef = evaluate(
                                    code, agg_lo[k], agg_hi[k], pos, d + 1, s, pstart, pend, d + 1, d + 1,
                                    number + 1, final, ci, cin, cf, cfn, consts_i, consts_f, path_var,
                                    cls_member, var_code, agg_func, agg_final, acc_i, acc_f, acc_cnt, acc_err,
                                    st_i, st_f, st_n, rows_st, viss,
                                )
                                if e == ERR_MORE:
                                    more = True
                                    break
                                if e != 0:
                                    acc_err[k, d + 1] = (e << 8) | ed
                                    continue
                                if rn:
                                    continue
                                c = acc_cnt[k, d]
                                acc_cnt[k, d + 1] = c + 1
                                if func == G_SUM_I or func == G_AVG_I:
                                    r, bad = _add_ovf(acc_i[k, d] if c > 0 else np.int64(0), ri)
                                    if bad:
                                        acc_err[k, d + 1] = (ERR_OVERFLOW << 8) | O_SUM
                                    acc_i[k, d + 1] = r
                                elif func == G_SUM_F or func == G_AVG_F:
                                    acc_f[k, d + 1] = (acc_f[k, d] if c > 0 else 0.0) + rf
                                elif func == G_MIN_I:
                                    if c == 0 or ri < acc_i[k, d]:
                                        acc_i[k, d + 1] = ri
                                elif func == G_MAX_I:
                                    if c == 0 or ri > acc_i[k, d]:
                                        acc_i[k, d + 1] = ri
                                elif func == G_MIN_F:
                                    if c == 0 or rf < acc_f[k, d]:
                                        acc_f[k, d + 1] = rf
                                elif func == G_MAX_F:
                                    if c == 0 or rf > acc_f[k, d]:
                                        acc_f[k, d + 1] = rf
                            if more:
                                break
                            if cond_lo[v] < cond_hi[v]:
                                ri, rf, rn, e, ed, ef = evaluate(
                                    code, cond_lo[v], cond_hi[v], -1, 0, s, pstart, pend, d + 1, d + 1,
                                    number + 1, final, ci, cin, cf, cfn, consts_i, consts_f, path_var,
                                    cls_member, var_code, agg_func, agg_final, acc_i, acc_f, acc_cnt, acc_err,
                                    st_i, st_f, st_n, rows_st, viss,
                                )
                                if e == ERR_MORE:
                                    more = True
                                    break
                                if e != 0:
                                    err[0] = e
                                    err[1] = ed
                                    err[2] = pos
                                    err[3] = p
                                    err[4] = number + 1
                                    err_f = ef
                                    return out_row[:nout], out_null[:nout], out_i[:, :nout], out_f[:, :nout], out_n[:, :nout], resume_out, numbers_out, covered_out, err, err_f
                                if rn or ri == 0:
                                    fail = True
                            if not fail:
                                pos += 1
                                pc += 1
                    elif op == P_SPLIT:
                        if nbt == bt_pc.shape[0]:
                            bt_pc = _grow_i(bt_pc, 2 * nbt)
                            bt_pos = _grow_i(bt_pos, 2 * nbt)
                            bt_excl = _grow_i(bt_excl, 2 * nbt)
                            bt_trail = _grow_i(bt_trail, 2 * nbt)
                        bt_pc[nbt] = prog[pc, 2]
                        bt_pos[nbt] = pos
                        bt_excl[nbt] = excl
                        bt_trail[nbt] = ntrail
                        nbt += 1
                        pc = prog[pc, 1]
                    elif op == P_JUMP:
                        pc = prog[pc, 1]
                    elif op == P_START:
                        if pos == pstart:
                            pc += 1
                        else:
                            fail = True
                    elif op == P_END:
                        if pos == pend:
                            if not final:
                                more = True
                                break
                            pc += 1
                        else:
                            fail = True
                    elif op == P_EXCL_IN:
                        excl += 1
                        pc += 1
                    elif op == P_EXCL_OUT:
                        excl -= 1
                        pc += 1
                    elif op == P_ITER_BEGIN:
                        if ntrail == trail_slot.shape[0]:
                            trail_slot = _grow_i(trail_slot, 2 * ntrail)
                            trail_old = _grow_i(trail_old, 2 * ntrail)
                        slot = prog[pc, 1]
                        trail_slot[ntrail] = slot
                        trail_old[ntrail] = slots[slot]
                        ntrail += 1
                        slots[slot] = pos
                        pc += 1
                    elif op == P_ITER_END:
                        if pos == slots[prog[pc, 1]]:
                            fail = True
                        else:
                            pc += 1
                    else:  # P_DONE
                        found = True
                        break
                if fail:
                    if nbt == 0:
                        failed = True
                        break
                    nbt -= 1
                    pc = bt_pc[nbt]
                    pos = bt_pos[nbt]
                    excl = bt_excl[nbt]
                    while ntrail > bt_trail[nbt]:
                        ntrail -= 1
                        slots[trail_slot[ntrail]] = trail_old[ntrail]
            # ---------------------------------------------------- what the search found
            if more:
                break  # streaming: resume from s when more rows arrive
            if failed:
                if all_rows and empty_mode == 2 and s > covered:
                    if nout == out_row.shape[0]:
                        out_row = _grow_i(out_row, 2 * nout)
                        out_null = _grow_i(out_null, 2 * nout)
                        out_i = _grow_2d(out_i, 2 * nout)
                        out_f = _grow_2d(out_f, 2 * nout)
                        out_n = _grow_2d(out_n, 2 * nout)
                    out_row[nout] = s
                    out_null[nout] = 1
                    for m in range(nmeas):
                        out_n[m, nout] = 1
                    nout += 1
                s += 1
                continue
            number += 1
            valid_since = gen + 1  # a successful search's visited states are not failures
            length = pos - s
            emit = 0
            if length == 0:
                emit = 1 if (not all_rows or empty_mode != 1) else 0
            elif all_rows:
                for j in range(length):
                    if path_excl[j] == 0:
                        emit += 1
            else:
                emit = 1
            while nout + emit > out_row.shape[0]:
                out_row = _grow_i(out_row, 2 * out_row.shape[0])
                out_null = _grow_i(out_null, 2 * out_null.shape[0])
                out_i = _grow_2d(out_i, 2 * out_i.shape[1])
                out_f = _grow_2d(out_f, 2 * out_f.shape[1])
                out_n = _grow_2d(out_n, 2 * out_n.shape[1])
            k_out = nout
            for j in range(length if (all_rows and length > 0) else 1):
                if k_out - nout == emit:
                    break
                if all_rows and length > 0:
                    if path_excl[j] != 0:
                        continue
                    out_row[k_out] = s + j
                    upto = j + 1
                elif length == 0:
                    out_row[k_out] = s if all_rows else pstart
                    upto = 0
                else:
                    out_row[k_out] = pstart
                    upto = length
                out_null[k_out] = 0
                for m in range(nmeas):
                    ri, rf, rn, e, ed, ef = evaluate(
                        code, meas_lo[m], meas_hi[m], -1, 0, s, pstart, pend, upto, length, number, final,
                        ci, cin, cf, cfn, consts_i, consts_f, path_var, cls_member, var_code,
                        agg_func, agg_final, acc_i, acc_f, acc_cnt, acc_err, st_i, st_f, st_n, rows_st, viss,
                    )
                    if e == ERR_MORE:
                        more = True
                        break
                    if e != 0:
                        err[0] = e
                        err[1] = ed
                        err[2] = s + max(upto - 1, 0)
                        err[3] = p
                        err[4] = number
                        err_f = ef
                        return out_row[:nout], out_null[:nout], out_i[:, :nout], out_f[:, :nout], out_n[:, :nout], resume_out, numbers_out, covered_out, err, err_f
                    out_i[m, k_out] = ri
                    out_f[m, k_out] = rf
                    out_n[m, k_out] = 1 if rn else 0
                if more:
                    break
                k_out += 1
            if more:
                # a measure reads a row not seen yet (NEXT): match again from s later
                number -= 1
                break
            nout = k_out
            if length == 0:
                s += 1
                continue
            covered = pos - 1
            if skip_kind == 0:
                s = pos
            elif skip_kind == 1:
                s = s + 1
            else:
                target = -1
                if skip_kind == 2:
                    for j in range(length):
                        if cls_member[skip_cls, path_var[j]]:
                            target = j
                            break
                else:
                    for j in range(length - 1, -1, -1):
                        if cls_member[skip_cls, path_var[j]]:
                            target = j
                            break
                if target <= 0:
                    err[0] = ERR_SKIP_NONE if target < 0 else ERR_SKIP_LOOP
                    err[2] = s
                    err[3] = p
                    err[4] = number
                    return out_row[:nout], out_null[:nout], out_i[:, :nout], out_f[:, :nout], out_n[:, :nout], resume_out, numbers_out, covered_out, err, err_f
                s = s + target
        resume_out[p] = s
        numbers_out[p] = number
        covered_out[p] = covered
    return out_row[:nout], out_null[:nout], out_i[:, :nout], out_f[:, :nout], out_n[:, :nout], resume_out, numbers_out, covered_out, err, err_f


@njit(cache=True)
def group_rows(codes, nparts):
    """A stable counting sort of rows by partition code: (permutation, partition bounds)."""
    n = codes.shape[0]
    counts = np.zeros(nparts + 1, dtype=np.int64)
    for i in range(n):
        counts[codes[i] + 1] += 1
    for p in range(nparts):
        counts[p + 1] += counts[p]
    bounds = counts.copy()
    perm = np.empty(n, dtype=np.int64)
    for i in range(n):
        c = codes[i]
        perm[counts[c]] = i
        counts[c] += 1
    return perm, bounds


@njit(cache=True)
def first_appearance(codes, nparts):
    """Renumber codes so that partitions are numbered in order of first appearance."""
    order = np.full(nparts, -1, dtype=np.int64)
    nxt = 0
    out = np.empty(codes.shape[0], dtype=np.int64)
    for i in range(codes.shape[0]):
        c = codes[i]
        if order[c] < 0:
            order[c] = nxt
            nxt += 1
        out[i] = order[c]
    return out
