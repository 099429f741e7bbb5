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
reads a precomputed column (``vcol``, kept in input order: ``perm`` maps a sorted row to its
input row) on the row on top of the row stack. Errors (division by
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
    E_STRMAP,
    E_RESCALE,
    E_DDIV,
    E_FIT,
    E_MATH,
) = range(40)

# functions of doubles (E_MATH: of the top value; of two, ARITH_F's kind A_MATH + the function),
# in the order of ir.MATH_FUNCTIONS
M_SQRT, M_LN, M_EXP, M_FLOOR, M_CEIL, M_ROUND, M_SIGN, M_POWER = range(8)

A_ADD, A_SUB, A_MUL, A_DIV, A_MOD, A_MATH = range(6)
C_EQ, C_NE, C_LT, C_LE, C_GT, C_GE = range(6)

# aggregate functions
G_COUNT_ROWS, G_COUNT, G_SUM_I, G_SUM_F, G_AVG_I, G_AVG_F, G_MIN_I, G_MIN_F, G_MAX_I, G_MAX_F = range(10)
# MAX_BY/MIN_BY in a condition: two accumulators, the key's (MAX/MIN; of doubles NaN is the
# largest: MAXK_F, MINK_F) and then the value's (BYVAL), which takes the row's value where the
# key's accumulator changed (its first row of the largest key); BYVAL's count is 1 when that
# value is not null
G_MAXK_F, G_MINK_F, G_BYVAL_I, G_BYVAL_F = range(10, 14)

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
ERR_MASK = 9  # a row mask's condition failed on the row (mask value 3); detail: the variable
ERR_FIT = 10  # CAST to DECIMAL(p, s): more than p digits

# overflow details
O_ADD, O_SUB, O_MUL, O_DIV, O_NEG, O_ABS, O_SUM, O_SCALE, O_RESCALE = range(9)

INT64_MIN = np.iinfo(np.int64).min
INT64_MAX = np.iinfo(np.int64).max
TWO63 = 9223372036854775808.0


@njit(cache=True)
def math_scalar(f, x, y):
    """A function of doubles as IEEE 754 and the C library compute it (NaN and infinities, never
    an error). One implementation for the VM, the column-wise evaluation and the reference, so
    that the last bit of EXP, LN and POWER is the same on every path. ROUND is half away from
    zero, to ``y`` digits."""
    if f == M_SQRT:
        return math.sqrt(x) if (x >= 0.0 or math.isnan(x)) else np.nan
    if f == M_LN:
        if math.isnan(x) or x < 0.0:
            return np.nan
        if x == 0.0:
            return -np.inf
        return math.log(x)
    if f == M_EXP:
        return math.exp(x)
    if f == M_FLOOR:
        return np.floor(x)
    if f == M_CEIL:
        return np.ceil(x)
    if f == M_SIGN:
        if math.isnan(x):
            return x
        return 1.0 if x > 0.0 else (-1.0 if x < 0.0 else x)
    if f == M_POWER:
        return math.pow(x, y)
    factor = 10.0**y
    scaled = abs(x) * factor
    if not math.isfinite(scaled):
        return x
    r = np.floor(scaled)
    if scaled - r >= 0.5:
        r += 1.0
    return math.copysign(r / factor, x)


@njit(cache=True)
def math_array(f, x, y):
    """``math_scalar`` of each pair of values."""
    out = np.empty(len(x), dtype=np.float64)
    for i in range(len(x)):
        out[i] = math_scalar(f, x[i], y[i])
    return out


@njit(cache=True, inline="always")
def _by_value(K, W, WF, aggoff, k, at, cap1, acci, accf, accc, acce, func, ri, rf, rn):
    """MAX_BY/MIN_BY's value accumulator ``k`` on a row mapped at ``at``: the key's accumulator
    (k - 1) has just been updated for the row; where it failed, so does the value (the value is
    read first, then the key, row by row); where it changed, the row's value is taken."""
    kat = at - cap1
    if W[acce + kat + 1] != 0:
        W[acce + at + 1] = W[acce + kat + 1]
        return
    before = W[accc + kat]
    if W[accc + kat + 1] == before:  # the key is null on this row
        return
    kfunc = K[aggoff + (k - 1) * AGG_FIELDS]
    if kfunc == G_MAXK_F or kfunc == G_MINK_F:
        old = WF[accf + kat]
        new = WF[accf + kat + 1]
        changed = new != old and not (math.isnan(new) and math.isnan(old))
    else:
        changed = W[acci + kat + 1] != W[acci + kat]
    if before == 0 or changed:
        W[accc + at + 1] = 0 if rn else 1
        if func == G_BYVAL_I:
            W[acci + at + 1] = ri
        else:
            WF[accf + at + 1] = rf


@njit(cache=True, inline="always")
def _compare(kind, a, b):
    """``a kind b`` (C_EQ ... C_GE), for ints or doubles (compiled once per type)."""
    if kind == C_EQ:
        return a == b
    if kind == C_NE:
        return a != b
    if kind == C_LT:
        return a < b
    if kind == C_LE:
        return a <= b
    if kind == C_GT:
        return a > b
    return a >= b


@njit(cache=True, inline="always")
def _round_div(a, b):
    """a / b rounded half away from zero (b != 0, not INT64_MIN / -1): decimal division."""
    q = abs(a) // abs(b)
    r = abs(a) - q * abs(b)
    if r >= abs(b) - r:  # 2r >= |b| without overflow
        q += 1
    return -q if (a < 0) != (b < 0) else q


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
    # Bounds checked by division, never on the wrapped product: LLVM may assume that a signed
    # multiplication does not wrap and fold ``(a * b) // b`` to ``a``.
    if a > 0:
        bad = (b > 0 and a > INT64_MAX // b) or (b < 0 and b < INT64_MIN // a)
    elif b > 0:
        bad = a < INT64_MIN // b
    else:
        bad = b < INT64_MAX // a
    return r, bad



# ---------------------------------------------------------------- packed arrays
# Few array arguments per call: numba increments and decrements the reference count of every
# array argument of a call it cannot prove safe, which costs more than a search step. So the
# read-only program is one int64 array K (header offsets, then the sections), the matcher's
# working state one int64 array W and one float64 array WF (header offsets in W).
K_PROG, K_NPROG, K_CODE, K_CONSTI, K_VARCODE, K_NVARS, K_CLS, K_NCLS = range(8)
K_AGG, K_NAGG, K_COND, K_MEAS, K_NMEAS, K_TIME, K_NVI, K_STACK = range(8, 16)
K_DIRECT = 16  # per VM column (ints, then floats): 1 if kept in sorted order, 0 if in input order
K_HEADER = 17
AGG_FIELDS = 5  # func, final, class, code lo, code hi

W_CAP, W_PATH, W_EXCL, W_ACCI, W_ACCC, W_ACCE, W_STI, W_STN = range(8)
W_ROWS, W_VISS, W_BT, W_BTCAP, W_SLOTS, W_TRAIL, W_TRAILCAP, W_ERR = range(8, 16)
W_STATE, W_ACCF, W_STF, W_ERRF = range(16, 20)
W_HEADER = 20


@njit(cache=True)
def evaluate(K, KF, ci, cf, valid, perm, W, WF, lo, hi, row0, vis0, start, pstart, pend, upto, full, number, final):
    """Run expression code ``K[code + lo : code + hi]``; returns (int value, float value, is
    null, error, error detail, float payload). ``ROW_ARG`` pushes ``row0`` (an aggregate's
    argument is read on the row being mapped)."""
    code = K[K_CODE]
    consti = K[K_CONSTI]
    varcode = K[K_VARCODE]
    nvars = K[K_NVARS]
    clsoff = K[K_CLS]
    aggoff = K[K_AGG]
    nvi = K[K_NVI]
    direct = K[K_DIRECT]
    cap1 = W[W_CAP] + 1
    path = W[W_PATH]
    acci = W[W_ACCI]
    accc = W[W_ACCC]
    acce = W[W_ACCE]
    sti = W[W_STI]
    stn = W[W_STN]
    rws = W[W_ROWS]
    vss = W[W_VISS]
    accf = W[W_ACCF]
    stf = W[W_STF]
    sp = 0
    rp = 0
    pc = lo
    while pc < hi:
        op = K[code + pc]
        if op == E_CONST_I:
            W[sti + sp] = K[consti + K[code + pc + 1]]
            W[stn + sp] = 0
            sp += 1
            pc += 2
        elif op == E_CONST_F:
            WF[stf + sp] = KF[K[code + pc + 1]]
            W[stn + sp] = 0
            sp += 1
            pc += 2
        elif op == E_NULL:
            W[sti + sp] = 0
            WF[stf + sp] = 0.0
            W[stn + sp] = 1
            sp += 1
            pc += 1
        elif op == E_ROW_LOGICAL:
            is_first = K[code + pc + 1]
            member = clsoff + K[code + pc + 2] * nvars
            offset = K[code + pc + 3]
            length = full if K[code + pc + 4] else upto
            row = -1
            count = 0
            if is_first:
                for j in range(length):
                    if K[member + W[path + j]]:
                        if count == offset:
                            row = start + j
                            break
                        count += 1
            else:
                for j in range(length - 1, -1, -1):
                    if K[member + W[path + j]]:
                        if count == offset:
                            row = start + j
                            break
                        count += 1
            W[rws + rp] = row
            W[vss + rp] = length
            rp += 1
            pc += 5
        elif op == E_ROW_PHYS:
            row = W[rws + rp - 1]
            if row >= 0:
                row += K[code + pc + 1]
                if row < pstart:
                    row = -1
                elif row >= pend:
                    if not final:
                        return 0, 0.0, True, ERR_MORE, 0, 0.0
                    row = -1
            W[rws + rp - 1] = row
            pc += 2
        elif op == E_ROW_POP:
            rp -= 1
            pc += 1
        elif op == E_ROW_ARG:
            W[rws + rp] = row0
            W[vss + rp] = vis0
            rp += 1
            pc += 1
        elif op == E_LOAD_I:
            row = W[rws + rp - 1]
            k = K[code + pc + 1]
            if row >= 0 and K[direct + k] == 0:
                row = perm[row]  # a column kept in input order
            if row < 0 or valid[k, row] == 0:
                W[sti + sp] = 0
                W[stn + sp] = 1
            else:
                W[sti + sp] = ci[k, row]
                W[stn + sp] = 0
            sp += 1
            pc += 2
        elif op == E_LOAD_F:
            row = W[rws + rp - 1]
            k = K[code + pc + 1]
            if row >= 0 and K[direct + nvi + k] == 0:
                row = perm[row]
            if row < 0 or valid[nvi + k, row] == 0:
                WF[stf + sp] = 0.0
                W[stn + sp] = 1
            else:
                WF[stf + sp] = cf[k, row]
                W[stn + sp] = 0
            sp += 1
            pc += 2
        elif op == E_CLASSIFIER:
            row = W[rws + rp - 1]
            j = row - start
            # any row of the match (the match so far in DEFINE): NEXT(CLASSIFIER()) under RUNNING
            # is the next row's variable, as in Trino (semantics.md 12)
            if row >= 0 and j >= 0 and j < full:
                W[sti + sp] = K[varcode + W[path + j]]
                W[stn + sp] = 0
            else:
                W[sti + sp] = 0
                W[stn + sp] = 1
            sp += 1
            pc += 1
        elif op == E_MATCHNO:
            W[sti + sp] = number
            W[stn + sp] = 0
            sp += 1
            pc += 1
        elif op == E_AGG:
            k = K[code + pc + 1]
            a = aggoff + k * AGG_FIELDS
            depth = full if K[a + 1] else upto
            at = k * cap1 + depth
            e = W[acce + at]
            if e != 0:
                return 0, 0.0, True, e >> 8, e & 255, 0.0
            func = K[a]
            cnt = W[accc + at]
            W[stn + sp] = 0
            if func == G_COUNT_ROWS or func == G_COUNT:
                W[sti + sp] = cnt
            elif cnt == 0:
                W[stn + sp] = 1
                W[sti + sp] = 0
                WF[stf + sp] = 0.0
            elif func == G_AVG_I:
                WF[stf + sp] = np.float64(W[acci + at]) / np.float64(cnt)
            elif func == G_AVG_F:
                WF[stf + sp] = WF[accf + at] / np.float64(cnt)
            elif func == G_SUM_I or func == G_MIN_I or func == G_MAX_I or func == G_BYVAL_I:
                W[sti + sp] = W[acci + at]
            else:
                WF[stf + sp] = WF[accf + at]
            sp += 1
            pc += 2
        elif op == E_NEG_I:
            if not W[stn + sp - 1]:
                if W[sti + sp - 1] == INT64_MIN:
                    return 0, 0.0, True, ERR_OVERFLOW, O_NEG, 0.0
                W[sti + sp - 1] = -W[sti + sp - 1]
            pc += 1
        elif op == E_NEG_F:
            WF[stf + sp - 1] = -WF[stf + sp - 1]
            pc += 1
        elif op == E_ABS_I:
            if not W[stn + sp - 1]:
                if W[sti + sp - 1] == INT64_MIN:
                    return 0, 0.0, True, ERR_OVERFLOW, O_ABS, 0.0
                W[sti + sp - 1] = abs(W[sti + sp - 1])
            pc += 1
        elif op == E_ABS_F:
            WF[stf + sp - 1] = abs(WF[stf + sp - 1])
            pc += 1
        elif op == E_ARITH_I:
            kind = K[code + pc + 1]
            sp -= 1
            if W[stn + sp] or W[stn + sp - 1]:
                W[stn + sp - 1] = 1
            else:
                a = W[sti + sp - 1]
                b = W[sti + sp]
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
                W[sti + sp - 1] = r
            pc += 2
        elif op == E_ARITH_F:
            kind = K[code + pc + 1]
            sp -= 1
            if W[stn + sp] or W[stn + sp - 1]:
                W[stn + sp - 1] = 1
            else:
                x = WF[stf + sp - 1]
                y = WF[stf + sp]
                if kind == A_ADD:
                    z = x + y
                elif kind == A_SUB:
                    z = x - y
                elif kind == A_MUL:
                    z = x * y
                elif kind >= A_MATH:  # POWER, ROUND(x, digits)
                    z = math_scalar(kind - A_MATH, x, y)
                elif kind == A_DIV:
                    if y == 0.0:
                        if x == 0.0 or math.isnan(x):
                            z = np.nan
                        else:
                            z = math.copysign(np.inf, x) * math.copysign(1.0, y)
                    else:
                        z = x / y
                else:
                    if y == 0.0 or math.isinf(x) or math.isnan(x) or math.isnan(y):
                        z = np.nan
                    else:
                        z = np.fmod(x, y)
                WF[stf + sp - 1] = z
            pc += 2
        elif op == E_SCALE:
            if not W[stn + sp - 1]:
                r, bad = _mul_ovf(W[sti + sp - 1], K[code + pc + 1])
                if bad:
                    return 0, 0.0, True, ERR_OVERFLOW, O_SCALE, 0.0
                W[sti + sp - 1] = r
            pc += 2
        elif op == E_RESCALE:
            # a decimal to another scale: times 10^k (k > 0: an error past 64 bits), or divided by
            # 10^-k rounded half away from zero (the immediate is then negative)
            if not W[stn + sp - 1]:
                factor = K[code + pc + 1]
                if factor > 0:
                    r, bad = _mul_ovf(W[sti + sp - 1], factor)
                    if bad:
                        return 0, 0.0, True, ERR_OVERFLOW, O_RESCALE, 0.0
                    W[sti + sp - 1] = r
                else:
                    W[sti + sp - 1] = _round_div(W[sti + sp - 1], -factor)
            pc += 2
        elif op == E_DDIV:
            # decimal a / b: a's unscaled value times the immediate (the scale that makes the
            # quotient's unscaled value an integer division), then divided rounding half away
            sp -= 1
            if W[stn + sp] or W[stn + sp - 1]:
                W[stn + sp - 1] = 1
            else:
                a, bad = _mul_ovf(W[sti + sp - 1], K[code + pc + 1])
                if bad:
                    return 0, 0.0, True, ERR_OVERFLOW, O_RESCALE, 0.0
                b = W[sti + sp]
                if b == 0:
                    return 0, 0.0, True, ERR_DIV_ZERO, 0, 0.0
                if a == INT64_MIN and b == -1:
                    return 0, 0.0, True, ERR_OVERFLOW, O_DIV, 0.0
                W[sti + sp - 1] = _round_div(a, b)
            pc += 2
        elif op == E_FIT:
            # CAST to DECIMAL(p, s): the unscaled value must be below the immediate, 10^p
            if not W[stn + sp - 1]:
                v = W[sti + sp - 1]
                if v >= K[code + pc + 1] or v <= -K[code + pc + 1]:
                    return 0, 0.0, True, ERR_FIT, 0, 0.0
            pc += 2
        elif op == E_MATH:
            if not W[stn + sp - 1]:
                WF[stf + sp - 1] = math_scalar(K[code + pc + 1], WF[stf + sp - 1], 0.0)
            pc += 2
        elif op == E_I2F:
            WF[stf + sp - 1] = np.float64(W[sti + sp - 1])
            pc += 1
        elif op == E_F2I:
            if not W[stn + sp - 1]:
                v = WF[stf + sp - 1]
                if math.isnan(v) or not (-TWO63 <= v < TWO63):
                    return 0, 0.0, True, ERR_CAST, 0, v
                W[sti + sp - 1] = np.int64(v)
            pc += 1
        elif op == E_I2B:
            W[sti + sp - 1] = 1 if W[sti + sp - 1] != 0 else 0
            pc += 1
        elif op == E_CMP_I or op == E_CMP_F:
            kind = K[code + pc + 1]
            sp -= 1
            if W[stn + sp] or W[stn + sp - 1]:
                W[stn + sp - 1] = 1
            else:
                if op == E_CMP_I:
                    res = _compare(kind, W[sti + sp - 1], W[sti + sp])
                else:
                    res = _compare(kind, WF[stf + sp - 1], WF[stf + sp])
                W[sti + sp - 1] = 1 if res else 0
            pc += 2
        elif op == E_NOT:
            W[sti + sp - 1] = 1 - W[sti + sp - 1]
            pc += 1
        elif op == E_STRMAP:
            # a string function of a computed string (LOWER(CLASSIFIER()), x || 'c', x LIKE 'p'):
            # a table from string codes to results, built over the dictionary (engine)
            if not W[stn + sp - 1]:
                mapped = K[consti + K[consti + K[code + pc + 1]] + W[sti + sp - 1]]
                if mapped < 0:
                    W[stn + sp - 1] = 1
                else:
                    W[sti + sp - 1] = mapped
            pc += 2
        elif op == E_AND_SKIP or op == E_OR_SKIP:
            # a decisive left side (FALSE for AND, TRUE for OR) is the result: skip the right side
            if not W[stn + sp - 1] and W[sti + sp - 1] == (0 if op == E_AND_SKIP else 1):
                pc = K[code + pc + 1]
            else:
                pc += 2
        elif op == E_AND or op == E_OR:
            # three-valued (the left side is not decisive, see *_SKIP): a decisive right side is
            # the result, else a null side makes it null, else it is the other truth value
            decisive = 0 if op == E_AND else 1
            sp -= 1
            if not W[stn + sp] and W[sti + sp] == decisive:
                W[sti + sp - 1] = decisive
                W[stn + sp - 1] = 0
            elif W[stn + sp] or W[stn + sp - 1]:
                W[stn + sp - 1] = 1
            else:
                W[sti + sp - 1] = 1 - decisive
            pc += 1
        elif op == E_ISNULL:
            W[sti + sp - 1] = 1 if W[stn + sp - 1] else 0
            W[stn + sp - 1] = 0
            pc += 1
        elif op == E_NOTNULL:
            W[sti + sp - 1] = 0 if W[stn + sp - 1] else 1
            W[stn + sp - 1] = 0
            pc += 1
        elif op == E_JUMP:
            pc = K[code + pc + 1]
        elif op == E_JUMP_UNLESS_TRUE:
            sp -= 1
            if W[stn + sp] or W[sti + sp] == 0:
                pc = K[code + pc + 1]
            else:
                pc += 2
        elif op == E_JUMP_IF_NOT_NULL:
            if not W[stn + sp - 1]:
                pc = K[code + pc + 1]
            else:
                pc += 2
        elif op == E_POP:
            sp -= 1
            pc += 1
        else:  # pragma: no cover - the compiler emits no other op
            return 0, 0.0, True, 99, op, 0.0
    return W[sti], WF[stf], W[stn] != 0, ERR_NONE, 0, 0.0


# _run's results
# (R_GROW_OUT: the output rows are full; R_GROW_LIST: the match list, ``track``'s, is.)
R_DONE, R_GROW_PATH, R_GROW_BT, R_GROW_TRAIL, R_GROW_OUT, R_ERROR, R_GROW_LIST = range(7)
# _run's state (W[W[W_STATE] + i]): partition, start row (-1: a fresh partition), matches so
# far, last row in a match, output rows, search generation, memo valid since, steps
S_PART, S_START, S_NUMBER, S_COVERED, S_NOUT, S_GEN, S_VALID, S_STEPS = range(8)
# where a search ended
F_NONE, F_FOUND, F_GROW_PATH, F_GROW_BT, F_GROW_TRAIL, F_ERROR, F_MORE, F_STEPS = range(8)


@njit(cache=True, inline="always")
def _save(W, st, p, s, number, covered, nout):
    """Save where ``_run`` stopped (a buffer is full): the next call resumes there."""
    W[st + S_PART] = p
    W[st + S_START] = s
    W[st + S_NUMBER] = number
    W[st + S_COVERED] = covered
    W[st + S_NOUT] = nout


@njit(cache=True, inline="always")
def _unmatched_row(OI, ON, OM, nout, s, nmeas):
    """Output row ``nout``: the unmatched row ``s`` (WITH UNMATCHED ROWS), no measures."""
    OI[0, nout] = s
    ON[0, nout] = 1
    OM[0, nout] = -1
    for m in range(nmeas):
        ON[m + 1, nout] = 1


@njit(cache=True)
def _run(
    K, KF, masks, starts, ci, cf, valid, perm, W, WF, memo, P, OI, OF, ON, OM, OL,
    window, memo_ok, stride, max_steps, skip_kind, skip_cls, all_rows, empty_mode, final, track,
):
    """Match the partitions from the saved state on (see ``match_all``). Stops early, with the
    state saved, when a buffer is full (the caller grows it and calls again) or on an error.
    Nothing is reallocated here, so that the per-row loops carry no reference counting.
    ``track``: record each match's rows (``OL``: start row, length, match number, variable per
    row, after ``OL[0]``, the used length) and each output row's match and row count (``OM``)."""
    nparts = P.shape[1] - 1
    nmeas = K[K_NMEAS]
    nagg = K[K_NAGG]
    prog = K[K_PROG]
    clsoff = K[K_CLS]
    nvars = K[K_NVARS]
    aggoff = K[K_AGG]
    condoff = K[K_COND]
    measoff = K[K_MEAS]
    tslot = K[K_TIME]
    out_cap = OI.shape[1]
    cap = W[W_CAP]
    cap1 = cap + 1
    path = W[W_PATH]
    pexcl = W[W_EXCL]
    acci = W[W_ACCI]
    accc = W[W_ACCC]
    acce = W[W_ACCE]
    accf = W[W_ACCF]
    bt = W[W_BT]
    btcap = W[W_BTCAP]
    slots = W[W_SLOTS]
    trail = W[W_TRAIL]
    trailcap = W[W_TRAILCAP]
    err = W[W_ERR]
    st = W[W_STATE]
    errf = W[W_ERRF]
    unmatched = all_rows and empty_mode == 2
    p = W[st + S_PART]
    while p < nparts:
        pstart = P[0, p]
        pend = P[0, p + 1]
        if W[st + S_START] >= 0:
            s = W[st + S_START]
            number = W[st + S_NUMBER]
            covered = W[st + S_COVERED]
        else:
            s = P[1, p]
            number = P[2, p]
            covered = P[3, p]
            W[st + S_VALID] = W[st + S_GEN] + 1
        nout = W[st + S_NOUT]
        while s < pend:
            if not unmatched:
                while s < pend and starts[s] == 0:
                    s += 1
                if s >= pend:
                    break
            elif starts[s] == 0:
                if s > covered:
                    if nout == out_cap:
                        _save(W, st, p, s, number, covered, nout)
                        return R_GROW_OUT
                    _unmatched_row(OI, ON, OM, nout, s, nmeas)
                    nout += 1
                s += 1
                continue
            gen = W[st + S_GEN] + 1
            W[st + S_GEN] = gen
            valid_since = W[st + S_VALID]
            # ------------------------------------------------ the preferred match from s
            pc = 0
            pos = s
            excl = 0
            nbt = 0
            ntrail = 0
            status = F_NONE
            while True:
                W[st + S_STEPS] += 1
                if max_steps > 0 and W[st + S_STEPS] > max_steps:
                    status = F_STEPS
                    break
                fail = False
                # A state inside an iteration that may map no row (ITER_BEGIN/ITER_END) is
                # remembered only once that iteration has mapped a row: then no ITER_END check
                # ahead can see its start again, and (instruction, row) decides the outcome.
                if memo_ok and (K[prog + 4 * pc + 3] == 0 or W[slots + K[prog + 4 * pc + 3] - 1] < pos):
                    idx = pc * stride + (pos - pstart)
                    if memo[idx] >= valid_since:
                        fail = True
                    else:
                        memo[idx] = gen
                if not fail:
                    op = K[prog + 4 * pc]
                    if op == P_MATCH:
                        v = K[prog + 4 * pc + 1]
                        if pos >= pend:
                            if not final:
                                status = F_MORE
                                break
                            fail = True
                        elif masks[v, pos] == 0:  # 1: run the rest of the condition, 2: all of it
                            fail = True
                        elif masks[v, pos] == 3:  # the condition fails here (engine.Prepared._mask)
                            W[err] = ERR_MASK
                            W[err + 1] = v
                            W[err + 2] = pos
                            status = F_ERROR
                            break
                        elif window >= 0 and (
                            valid[tslot, pos] == 0 or valid[tslot, s] == 0 or ci[tslot, pos] - ci[tslot, s] >= window
                        ):
                            fail = True
                        else:
                            d = pos - s
                            if d + 1 >= cap:
                                status = F_GROW_PATH
                                break
                            W[path + d] = v
                            W[pexcl + d] = 1 if excl > 0 else 0
                            for k in range(nagg):
                                a = aggoff + k * AGG_FIELDS
                                at = k * cap1 + d
                                W[acci + at + 1] = W[acci + at]
                                WF[accf + at + 1] = WF[accf + at]
                                W[accc + at + 1] = W[accc + at]
                                W[acce + at + 1] = W[acce + at]
                                if W[acce + at] != 0 or not K[clsoff + K[a + 2] * nvars + v]:
                                    continue
                                func = K[a]
                                if func == G_COUNT_ROWS:
                                    W[accc + at + 1] += 1
                                    continue
                                ri, rf, rn, e, ed, ef = evaluate(
                                    K, KF, ci, cf, valid, perm, W, WF, K[a + 3], K[a + 4], pos, d + 1, s, pstart, pend,
                                    d + 1, d + 1, number + 1, final,
                                )
                                if e == ERR_MORE:
                                    status = F_MORE
                                    break
                                if e != 0:
                                    W[acce + at + 1] = (e << 8) | ed
                                    continue
                                if func == G_BYVAL_I or func == G_BYVAL_F:
                                    _by_value(K, W, WF, aggoff, k, at, cap1, acci, accf, accc, acce, func, ri, rf, rn)
                                    continue
                                if rn:
                                    continue
                                c = W[accc + at]
                                W[accc + at + 1] = c + 1
                                if func == G_SUM_I or func == G_AVG_I:
                                    r, bad = _add_ovf(W[acci + at] if c > 0 else np.int64(0), ri)
                                    if bad:
                                        W[acce + at + 1] = (ERR_OVERFLOW << 8) | O_SUM
                                    W[acci + at + 1] = r
                                elif func == G_SUM_F or func == G_AVG_F:
                                    WF[accf + at + 1] = (WF[accf + at] if c > 0 else 0.0) + rf
                                elif func == G_MIN_I:
                                    if c == 0 or ri < W[acci + at]:
                                        W[acci + at + 1] = ri
                                elif func == G_MAX_I:
                                    if c == 0 or ri > W[acci + at]:
                                        W[acci + at + 1] = ri
                                elif func == G_MIN_F:
                                    if c == 0 or rf < WF[accf + at]:
                                        WF[accf + at + 1] = rf
                                elif func == G_MAX_F:
                                    if c == 0 or rf > WF[accf + at]:
                                        WF[accf + at + 1] = rf
                                elif func == G_MAXK_F:  # NaN is the largest key
                                    old = WF[accf + at]
                                    if c == 0 or (math.isnan(rf) and not math.isnan(old)) or rf > old:
                                        WF[accf + at + 1] = rf
                                elif func == G_MINK_F:
                                    old = WF[accf + at]
                                    if c == 0 or (not math.isnan(rf) and (math.isnan(old) or rf < old)):
                                        WF[accf + at + 1] = rf
                            if status == F_MORE:
                                break
                            which = condoff + 4 * v + (0 if masks[v, pos] == 1 else 2)
                            lo = K[which]
                            hi = K[which + 1]
                            if lo < hi:
                                ri, rf, rn, e, ed, ef = evaluate(
                                    K, KF, ci, cf, valid, perm, W, WF, lo, hi, -1, 0, s, pstart, pend, d + 1, d + 1,
                                    number + 1, final,
                                )
                                if e == ERR_MORE:
                                    status = F_MORE
                                    break
                                if e != 0:
                                    W[err] = e
                                    W[err + 1] = ed
                                    W[err + 2] = pos
                                    WF[errf] = ef
                                    status = F_ERROR
                                    break
                                if rn or ri == 0:
                                    fail = True
                            if not fail:
                                pos += 1
                                pc += 1
                    elif op == P_SPLIT:
                        if nbt == btcap:
                            status = F_GROW_BT
                            break
                        b = bt + 4 * nbt
                        W[b] = K[prog + 4 * pc + 2]
                        W[b + 1] = pos
                        W[b + 2] = excl
                        W[b + 3] = ntrail
                        nbt += 1
                        pc = K[prog + 4 * pc + 1]
                    elif op == P_JUMP:
                        pc = K[prog + 4 * pc + 1]
                    elif op == P_START:
                        if pos == pstart:
                            pc += 1
                        else:
                            fail = True
                    elif op == P_END:
                        if pos == pend:
                            if not final:
                                status = F_MORE
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
                        if ntrail == trailcap:
                            status = F_GROW_TRAIL
                            break
                        slot = K[prog + 4 * pc + 1]
                        W[trail + 2 * ntrail] = slot
                        W[trail + 2 * ntrail + 1] = W[slots + slot]
                        ntrail += 1
                        W[slots + slot] = pos
                        pc += 1
                    elif op == P_ITER_END:
                        if pos == W[slots + K[prog + 4 * pc + 1]]:
                            fail = True
                        else:
                            pc += 1
                    else:  # P_DONE
                        status = F_FOUND
                        break
                if fail:
                    if nbt == 0:
                        status = F_NONE
                        break
                    nbt -= 1
                    b = bt + 4 * nbt
                    pc = W[b]
                    pos = W[b + 1]
                    excl = W[b + 2]
                    while ntrail > W[b + 3]:
                        ntrail -= 1
                        W[slots + W[trail + 2 * ntrail]] = W[trail + 2 * ntrail + 1]
            # ------------------------------------------------ what the search found
            if status == F_GROW_PATH or status == F_GROW_BT or status == F_GROW_TRAIL:
                _save(W, st, p, s, number, covered, nout)
                W[st + S_VALID] = W[st + S_GEN] + 1  # the interrupted search left marks
                if status == F_GROW_PATH:
                    return R_GROW_PATH
                return R_GROW_BT if status == F_GROW_BT else R_GROW_TRAIL
            if status == F_ERROR or status == F_STEPS:
                if status == F_STEPS:
                    W[err] = ERR_STEPS
                    W[err + 2] = s
                W[err + 3] = p
                W[err + 4] = number + 1
                return R_ERROR
            if status == F_MORE:
                break  # streaming: match from s again when more rows have arrived
            if status == F_NONE:
                if unmatched and s > covered:
                    if nout == out_cap:
                        _save(W, st, p, s, number, covered, nout)
                        return R_GROW_OUT
                    _unmatched_row(OI, ON, OM, nout, s, nmeas)
                    nout += 1
                s += 1
                continue
            # ------------------------------------------------ a match: rows s .. pos - 1
            length = pos - s
            emit = 0
            if length == 0:
                emit = 1 if (not all_rows or empty_mode != 1) else 0
            elif all_rows:
                for j in range(length):
                    if W[pexcl + j] == 0:
                        emit += 1
            else:
                emit = 1
            if nout + emit > out_cap or (track and OL[0] + length + 3 > OL.shape[0]):
                _save(W, st, p, s, number, covered, nout)
                W[st + S_VALID] = W[st + S_GEN] + 1
                return R_GROW_OUT if nout + emit > out_cap else R_GROW_LIST
            number += 1
            W[st + S_VALID] = gen + 1  # a successful search's marks are not failures
            k_out = nout
            more = False
            at = OL[0]
            if track:
                OL[at] = s
                OL[at + 1] = length
                OL[at + 2] = number
                for j in range(length):
                    OL[at + 3 + j] = W[path + j]
            for j in range(length if (all_rows and length > 0) else 1):
                if k_out - nout == emit:
                    break
                if all_rows and length > 0:
                    if W[pexcl + j] != 0:
                        continue
                    OI[0, k_out] = s + j
                    upto = j + 1
                elif length == 0:
                    OI[0, k_out] = s if all_rows else pstart
                    upto = 0
                else:
                    OI[0, k_out] = pstart
                    upto = length
                ON[0, k_out] = 0
                OM[0, k_out] = at
                OM[1, k_out] = upto
                for m in range(nmeas):
                    ri, rf, rn, e, ed, ef = evaluate(
                        K, KF, ci, cf, valid, perm, W, WF, K[measoff + 2 * m], K[measoff + 2 * m + 1], -1, 0, s,
                        pstart, pend, upto, length, number, final,
                    )
                    if e == ERR_MORE:
                        more = True
                        break
                    if e != 0:
                        W[err] = e
                        W[err + 1] = ed
                        W[err + 2] = s + max(upto - 1, 0)
                        W[err + 3] = p
                        W[err + 4] = number
                        WF[errf] = ef
                        return R_ERROR
                    OI[m + 1, k_out] = ri
                    OF[m, k_out] = rf
                    ON[m + 1, k_out] = 1 if rn else 0
                if more:
                    break
                k_out += 1
            if more:
                number -= 1  # a measure reads a row not seen yet (NEXT): match s again later
                break
            nout = k_out
            if track:
                OL[0] = at + 3 + length
            if length == 0:
                s += 1
                continue
            covered = pos - 1
            if skip_kind == 0:
                s = pos
            elif skip_kind == 1:
                s = s + 1
            else:
                member = clsoff + skip_cls * nvars
                target = -1
                if skip_kind == 2:
                    for j in range(length):
                        if K[member + W[path + j]]:
                            target = j
                            break
                else:
                    for j in range(length - 1, -1, -1):
                        if K[member + W[path + j]]:
                            target = j
                            break
                if target <= 0:
                    W[err] = ERR_SKIP_NONE if target < 0 else ERR_SKIP_LOOP
                    W[err + 2] = s
                    W[err + 3] = p
                    W[err + 4] = number
                    return R_ERROR
                s = s + target
        P[1, p] = s
        P[2, p] = number
        P[3, p] = covered
        W[st + S_START] = -1
        W[st + S_NOUT] = nout
        p += 1
        W[st + S_PART] = p
    return R_DONE


def pack_program(prog, conditions, code, consts_i, var_code, cls_member, aggregates, meas_lo, meas_hi, time_slot, nvi, stack, direct):
    """The read-only int64 array K (see the header constants)."""
    nvars = cls_member.shape[1]
    sections = [
        ("prog", np.asarray(prog, dtype=np.int64).ravel()),
        ("code", np.asarray(code, dtype=np.int64)),
        ("consti", np.asarray(consts_i, dtype=np.int64)),
        ("varcode", np.asarray(var_code, dtype=np.int64)),
        ("cls", np.asarray(cls_member, dtype=np.int64).ravel()),
        ("agg", np.asarray(aggregates, dtype=np.int64).ravel()),
        ("cond", np.asarray(conditions, dtype=np.int64).ravel()),
        ("meas", np.stack([np.asarray(meas_lo, np.int64), np.asarray(meas_hi, np.int64)], axis=1).ravel()),
        ("direct", np.asarray(direct, dtype=np.int64)),
    ]
    header = np.zeros(K_HEADER, dtype=np.int64)
    offset = K_HEADER
    where = {}
    for name, data in sections:
        where[name] = offset
        offset += len(data)
    header[K_PROG] = where["prog"]
    header[K_NPROG] = len(sections[0][1]) // 4
    header[K_CODE] = where["code"]
    header[K_CONSTI] = where["consti"]
    header[K_VARCODE] = where["varcode"]
    header[K_NVARS] = nvars
    header[K_CLS] = where["cls"]
    header[K_NCLS] = cls_member.shape[0]
    header[K_AGG] = where["agg"]
    header[K_NAGG] = len(aggregates)
    header[K_COND] = where["cond"]
    header[K_MEAS] = where["meas"]
    header[K_NMEAS] = len(meas_lo)
    header[K_TIME] = time_slot
    header[K_NVI] = nvi
    header[K_STACK] = stack
    header[K_DIRECT] = where["direct"]
    return np.concatenate([header] + [data for _, data in sections])


def _workspace(nagg: int, cap: int, stack: int, btcap: int, nslots: int, trailcap: int, old=None):
    """The working arrays W and WF for these capacities (copying the state from ``old``)."""
    sizes = [
        ("path", cap),
        ("excl", cap),
        ("acci", nagg * (cap + 1)),
        ("accc", nagg * (cap + 1)),
        ("acce", nagg * (cap + 1)),
        ("sti", stack),
        ("stn", stack),
        ("rows", stack),
        ("viss", stack),
        ("bt", 4 * btcap),
        ("slots", max(nslots, 1)),
        ("trail", 2 * trailcap),
        ("err", 5),
        ("state", 8),
    ]
    W = np.zeros(W_HEADER + sum(n for _, n in sizes), dtype=np.int64)
    offset = W_HEADER
    where = {}
    for name, n in sizes:
        where[name] = offset
        offset += n
    for key, name in [
        (W_PATH, "path"), (W_EXCL, "excl"), (W_ACCI, "acci"), (W_ACCC, "accc"), (W_ACCE, "acce"),
        (W_STI, "sti"), (W_STN, "stn"), (W_ROWS, "rows"), (W_VISS, "viss"), (W_BT, "bt"),
        (W_SLOTS, "slots"), (W_TRAIL, "trail"), (W_ERR, "err"), (W_STATE, "state"),
    ]:
        W[key] = where[name]
    W[W_CAP] = cap
    W[W_BTCAP] = btcap
    W[W_TRAILCAP] = trailcap
    fsizes = [("accf", nagg * (cap + 1)), ("stf", stack), ("errf", 1)]
    WF = np.zeros(sum(n for _, n in fsizes), dtype=np.float64)
    offset = 0
    for key, (_, n) in zip((W_ACCF, W_STF, W_ERRF), fsizes):
        W[key] = offset
        offset += n
    if old is not None:
        W_old, _ = old
        W[W[W_STATE] : W[W_STATE] + 8] = W_old[W_old[W_STATE] : W_old[W_STATE] + 8]
        W[W[W_ERR] : W[W_ERR] + 5] = W_old[W_old[W_ERR] : W_old[W_ERR] + 5]
    return W, WF


MEMO_ENTRIES = 1 << 24


def match_all(K, KF, masks, starts, ci, cf, valid, perm, bounds, resume, numbers, covered, *, window, memo_ok, max_steps,
              skip_kind, skip_cls, all_rows, empty_mode, final, nslots, track=False):
    """Match every partition (rows ``bounds[p]`` to ``bounds[p + 1]``, resuming at
    ``resume[p]`` with ``numbers[p]`` matches found before and rows up to ``covered[p]`` in some
    match). Returns (output rows as sorted row indices, their "no measures" flags, the measures'
    int values, float values and null flags, resume, numbers, covered, error fields, error float
    payload, and with ``track`` the matches' rows: per output row its match's offset in the
    match list (-1: an unmatched row) and the rows it sees (running), and the match list: per
    match its first sorted row, its length, its number and its rows' variables)."""
    nagg = int(K[K_NAGG])
    nmeas = int(K[K_NMEAS])
    stack = int(K[K_STACK])
    maxlen = int(np.max(np.diff(bounds))) if len(bounds) > 1 else 0
    stride = maxlen + 1
    # Remembering failed (instruction, row) states costs 8 bytes each: only up to MEMO_ENTRIES
    # (a longer partition is matched without it, correctly, with more backtracking).
    memo_ok = memo_ok and int(K[K_NPROG]) * stride <= MEMO_ENTRIES
    memo = np.zeros(int(K[K_NPROG]) * stride if memo_ok else 1, dtype=np.int64)
    cap, btcap, trailcap = 64, 256, 64
    W, WF = _workspace(nagg, cap, stack, btcap, nslots, trailcap)
    W[W[W_STATE] + S_START] = -1
    P = np.stack([bounds, np.append(resume, 0), np.append(numbers, 0), np.append(covered, 0)]).astype(np.int64)
    out_cap = 1024
    OI = np.zeros((nmeas + 1, out_cap), dtype=np.int64)
    OF = np.zeros((max(nmeas, 1), out_cap), dtype=np.float64)
    ON = np.zeros((nmeas + 1, out_cap), dtype=np.uint8)
    OM = np.zeros((2, out_cap), dtype=np.int64)
    OL = np.zeros(4096 if track else 1, dtype=np.int64)
    OL[0] = 1
    while True:
        status = _run(
            K, KF, masks, starts, ci, cf, valid, perm, W, WF, memo, P, OI, OF, ON, OM, OL,
            window, memo_ok, stride, max_steps, skip_kind, skip_cls, all_rows, empty_mode, final, track,
        )
        if status == R_DONE or status == R_ERROR:
            break
        if status == R_GROW_PATH:
            cap *= 2
        elif status == R_GROW_BT:
            btcap *= 2
        elif status == R_GROW_TRAIL:
            trailcap *= 2
        elif status == R_GROW_LIST:  # (only the match list: the output rows have room)
            OL = np.concatenate([OL, np.zeros_like(OL)])
            continue
        else:
            OI = np.concatenate([OI, np.zeros_like(OI)], axis=1)
            OF = np.concatenate([OF, np.zeros_like(OF)], axis=1)
            ON = np.concatenate([ON, np.zeros_like(ON)], axis=1)
            OM = np.concatenate([OM, np.zeros_like(OM)], axis=1)
            continue
        W, WF = _workspace(nagg, cap, stack, btcap, nslots, trailcap, old=(W, WF))
    state = W[W[W_STATE] : W[W_STATE] + 8]
    err = W[W[W_ERR] : W[W_ERR] + 5].copy()
    nout = int(state[S_NOUT])
    nparts = len(bounds) - 1
    return (
        OI[0, :nout], ON[0, :nout], OI[1:, :nout], OF[:nmeas, :nout], ON[1:, :nout],
        P[1, :nparts].copy(), P[2, :nparts].copy(), P[3, :nparts].copy(), err, float(WF[W[W_ERRF]]),
        OM[:, :nout], OL[: OL[0]],
    )


@njit(cache=True)
def match_rows(OL, nrows):
    """``match_all``'s match list (``track``) flattened, one entry per matched row: its sorted
    row, its variable, its match's number, and whether it starts its match; and per offset of a
    match in the list, the entry of its first row. ``nrows``: the entries (the lengths' sum)."""
    rows = np.empty(nrows, dtype=np.int64)
    variables = np.empty(nrows, dtype=np.int64)
    numbers = np.empty(nrows, dtype=np.int64)
    starts = np.zeros(nrows, dtype=np.uint8)
    first = np.zeros(OL.shape[0], dtype=np.int64)
    at = 1
    e = 0
    while at < OL[0]:
        length = OL[at + 1]
        first[at] = e
        for j in range(length):
            rows[e + j] = OL[at] + j
            variables[e + j] = OL[at + 3 + j]
            numbers[e + j] = OL[at + 2]
        if length > 0:
            starts[e] = 1
        e += length
        at += 3 + length
    return rows, variables, numbers, starts, first


@njit(cache=True)
def match_length_sum(OL):
    """The number of matched rows in ``match_all``'s match list."""
    total = 0
    at = 1
    while at < OL[0]:
        total += OL[at + 1]
        at += 3 + OL[at + 1]
    return total


@njit(cache=True)
def prefix_best(ranks, usable, starts, largest):
    """Per entry, the entry (from its match's first row up to it) with the largest (smallest)
    rank among the usable ones, the first of equals; -1 if none. MAX_BY and MIN_BY, running."""
    n = ranks.shape[0]
    best = np.empty(n, dtype=np.int64)
    current = -1
    for i in range(n):
        if starts[i]:
            current = -1
        if usable[i]:
            if current < 0 or (ranks[i] > ranks[current] if largest else ranks[i] < ranks[current]):
                current = i
        best[i] = current
    return best


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
