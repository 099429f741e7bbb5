"""Running a compiled MATCH_RECOGNIZE query over an Arrow table.

1. Rows are grouped by partition (numbered in order of first appearance) and ordered by ORDER
   BY within each partition, ties in input order: one stable sort of the order keys (skipped
   when the input is already in order) and a counting sort by partition.
2. Row masks and the VM's columns are computed column-wise (``vector.py``), on the input order
   where they need no neighbouring row (the result is then permuted, which is cheaper than
   permuting the columns), on the sorted rows where they read PREV/NEXT.
3. The compiled matcher (``vm.match_all``) runs every partition in one call: the only work per
   row is a test of the row's candidate mask, so rows that cannot start a match cost nanoseconds.
4. The result table: the PARTITION BY columns (ONE ROW PER MATCH) or the matched rows' columns
   (ALL ROWS PER MATCH) are taken from the input in one ``take``; the measures come from the
   matcher's buffers; then the outer SELECT and WHERE, column-wise.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ceql.errors import EventError, LimitError
from ceql.sql import ir, vector, vm
from ceql.sql.analysis import Checked
from ceql.sql.compiler import Compiled
from ceql.sql.parser import allows_deep_expressions
from ceql.sql.values import python_values
from ceql.sql.vector import Env, Shift, Vec

#: Instructions the matcher may run for one query (backtracking is exponential in the worst
#: case when conditions depend on the match so far); ``max_steps=0`` removes the bound.
MAX_STEPS = 2_000_000_000

_OVERFLOW = {
    vm.O_ADD: "addition",
    vm.O_SUB: "subtraction",
    vm.O_MUL: "multiplication",
    vm.O_DIV: "division",
    vm.O_NEG: "negation",
    vm.O_ABS: "ABS",
    vm.O_SUM: "SUM",
    vm.O_SCALE: "timestamp conversion",
    vm.O_RESCALE: "decimal scaling",
}


@allows_deep_expressions
def run(compiled: Compiled, table: pa.Table, *, max_steps: int = MAX_STEPS) -> pa.Table:
    """The query's result over ``table`` (the input it was checked against)."""
    prepared = Prepared(compiled, table)
    state = prepared.initial_state()
    found = prepared.match(state, final=True, max_steps=max_steps)
    return prepared.result(found)


class Prepared:
    """The input grouped and sorted, with the matcher's arrays built (see the module doc)."""

    @allows_deep_expressions
    def __init__(self, compiled: Compiled, table: pa.Table) -> None:
        self.c = compiled
        self.q: Checked = compiled.checked
        self.table = table
        self.n = table.num_rows
        codes, nparts = partition_codes(table, self.q.partition)
        order = order_permutation(table, self.q.order)
        if order is None:
            perm, bounds = vm.group_rows(codes, nparts)
        else:
            inner, bounds = vm.group_rows(codes[order], nparts)
            perm = order[inner]
        self.identity = nparts <= 1 and order is None
        self.perm = perm
        self.bounds = bounds
        self._sorted_columns: dict[str, pa.Array] = {}
        self.original = Env(self.n, self._original_column)
        self.sorted = Env(self.n, self._sorted_column, bounds)
        self._build()

    # ------------------------------------------------------------------ columns

    def _original_column(self, name: str) -> pa.Array:
        column = self.table.column(name)
        if isinstance(column, pa.ChunkedArray):
            return column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()
        return column

    def _sorted_column(self, name: str) -> pa.Array:
        if name not in self._sorted_columns:
            column = self._original_column(name)
            self._sorted_columns[name] = column if self.identity else column.take(pa.array(self.perm))
        return self._sorted_columns[name]

    def sorted_vec(self, node: ir.Node) -> Vec:
        """``node`` on every row, in sorted order."""
        if self.identity:
            return vector.evaluate(node, self.sorted)
        for part in _unshifted(node):
            if part not in self.sorted._cache:
                self.sorted._cache[part] = _permute(vector.evaluate(part, self.original), self.perm)
        return vector.evaluate(node, self.sorted)

    # ------------------------------------------------------------------ matcher arrays

    def _build(self) -> None:
        c, q, n = self.c, self.q, self.n
        nvars = len(q.variables)
        masks = np.ones((nvars, n), dtype=np.uint8)
        self.mask_errors: dict[tuple[int, int], int] = {}  # (variable, sorted row): vector error code
        for i, conjuncts in enumerate(c.masks):
            if conjuncts:
                masks[i] = self._mask(conjuncts, c.mask_exact[i], i)
        self.masks = masks
        first = [q.variables.index(v) for v in c.program.first]
        if c.program.nullable or not first:
            self.starts = np.ones(n, dtype=np.uint8)
        elif len(first) == 1:
            self.starts = masks[first[0]]
        else:
            self.starts = np.bitwise_or.reduce(masks[first], axis=0).astype(np.uint8)
        # strings the VM sees, as codes in one sorted dictionary
        string_vecs = {}
        values = [pa.array(sorted(set(c.strings.values()) | set(q.variables)), pa.string())]
        for k, node in enumerate(c.vcols):
            if node.type.kind == "string":
                vec = vector.dense(self._vcol(k), n)
                string_vecs[k] = vec
                values.append(pc.unique(vec.values).drop_null())
        merged = pc.unique(pa.concat_arrays([v.cast(pa.string()) for v in values]))
        for _, template in c.string_maps:  # the strings they make (inner functions first)
            if template.type.kind == "string":
                merged = pc.unique(pa.concat_arrays([merged, _string_map(template, merged).drop_null()]))
        self.dictionary = merged.take(pc.sort_indices(merged))
        consts_i = list(c.consts_i)
        for index, text in c.strings.items():
            consts_i[index] = self._code(text)
        for slot, template in c.string_maps:  # code -> result code (or 0/1), -1: null
            image = _string_map(template, self.dictionary)
            if template.type.kind == "string":
                image = pc.index_in(image, value_set=self.dictionary)
            else:
                image = image.cast(pa.int64())
            consts_i[slot] = len(consts_i)
            consts_i.extend(image.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64).tolist())
        self.consts_i = np.array(consts_i or [0], dtype=np.int64)
        self.consts_f = np.array(c.consts_f or [0.0], dtype=np.float64)
        self.var_code = np.array([self._code(v) for v in q.variables] or [0], dtype=np.int64)
        ints = c.int_vcols
        floats = c.float_vcols
        extra = 1 if q.within is not None else 0  # the WITHIN time column, read by the matcher
        nvi = len(ints) + extra
        self.ci = np.zeros((nvi, n), dtype=np.int64)
        self.cf = np.zeros((len(floats), n), dtype=np.float64)
        self.valid = np.zeros((nvi + len(floats), n), dtype=np.uint8)
        for k, node in enumerate(c.vcols):
            slot = c.vcol_slot[k]
            vec = string_vecs.get(k) or self._vcol(k)
            if node.type.kind == "double":
                self.cf[slot] = vec.values
                self.valid[nvi + slot] = vec.valid
            elif node.type.kind == "string":
                codes = pc.index_in(vec.values, value_set=self.dictionary)
                self.ci[slot] = codes.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
                self.valid[slot] = vec.valid
            else:
                self.ci[slot] = vec.values
                self.valid[slot] = vec.valid
        self.time_slot = 0
        self.window = -1
        if q.within is not None:
            self.time_slot = len(ints)
            time = self.sorted_vec(ir.RowCol(_time_type(q), q.time_column))  # type: ignore[arg-type]
            self.ci[self.time_slot] = np.asarray(time.values, dtype=np.int64)
            self.valid[self.time_slot] = time.valid
            self.window = int(q.within)
        classes = c.classes
        self.cls_member = np.zeros((len(classes), max(nvars, 1)), dtype=np.uint8)
        for k, cls in enumerate(classes):
            for v in q.classes_of(cls):
                self.cls_member[k, q.variables.index(v)] = 1
        skip = {"PAST_LAST": 0, "NEXT_ROW": 1, "FIRST": 2, "LAST": 3}[q.skip]
        self.skip_kind = skip
        self.skip_cls = classes.index(q.skip_to) if q.skip in ("FIRST", "LAST") else 0
        # (func, final, class, code lo, code hi) per aggregate
        aggregates = [(a[0], 1 if a[4] else 0, a[1], a[2], a[3]) for a in c.aggregates]
        self.K = vm.pack_program(
            c.program.instructions,
            np.array(c.cond_ranges or [(0, 0, 0, 0)], dtype=np.int64),
            c.code or [0],
            consts_i,
            self.var_code,
            self.cls_member,
            np.array(aggregates, dtype=np.int64).reshape(-1, vm.AGG_FIELDS),
            [r[0] for r in c.measure_ranges],
            [r[1] for r in c.measure_ranges],
            self.time_slot,
            nvi,
            512,
            [1 if c.vcol_sorted[k] else 0 for k in ints] + [1] * extra + [1 if c.vcol_sorted[k] else 0 for k in floats],
        )
        self.KF = self.consts_f

    def _vcol(self, k: int) -> Vec:
        """A VM column: in sorted order if the matcher reads it, else in input order."""
        node = self.c.vcols[k]
        return self.sorted_vec(node) if self.c.vcol_sorted[k] else vector.evaluate(node, self.original)

    def _mask(self, conjuncts: list[ir.Node], exact: bool, var: int) -> np.ndarray:
        """A variable's row mask, in sorted order, from its leading row-local conjuncts: 0 where
        one is FALSE (or, when they are the whole condition, not TRUE), 1 where all are TRUE, 2
        where one is NULL and none FALSE (the whole condition then runs in the VM), 3 where a
        conjunct that AND evaluates (no earlier one FALSE) fails: division by zero, overflow.
        The matcher raises that error only if it tries the row (``mask_errors``), as evaluating
        the condition there would. Conjuncts without PREV/NEXT are evaluated on the input order
        and permuted."""
        true = np.ones(self.n, dtype=np.bool_)
        null = np.zeros(self.n, dtype=np.bool_)
        decided_false = np.zeros(self.n, dtype=np.bool_)
        failed = np.zeros(self.n, dtype=np.int8)  # the first error per row, in evaluation order
        for conjunct in conjuncts:  # in AND's evaluation order: a FALSE stops it
            if _has_shift(conjunct):
                vec = self.sorted_vec(conjunct)
            else:
                vec = vector.evaluate(conjunct, self.original)
                if not self.identity:
                    vec = _permute(vec, self.perm)
            value = np.asarray(vec.values, dtype=np.bool_)
            if value.ndim == 0:
                value = np.full(self.n, bool(value))
            valid = np.asarray(vec.valid, dtype=np.bool_)
            if vec.err is not None:
                fails = (vec.err != 0) & ~decided_false & (failed == 0)
                failed = np.where(fails, vec.err, failed).astype(np.int8)
                valid = valid & (vec.err == 0)
            true &= value & valid
            null |= ~valid & (failed == 0)
            decided_false |= valid & ~value & (failed == 0)
        if exact:
            mask = true.astype(np.uint8)
        else:
            mask = np.where(true, 1, np.where(null & ~decided_false, 2, 0)).astype(np.uint8)
        if failed.any():
            mask = np.where(failed != 0, 3, mask).astype(np.uint8)
            for row in np.flatnonzero(failed):
                self.mask_errors[(var, int(row))] = int(failed[row])
        return np.ascontiguousarray(mask, dtype=np.uint8)

    def _code(self, text: str) -> int:
        index = pc.index_in(pa.array([text], pa.string()), value_set=self.dictionary)[0].as_py()
        return int(index)

    # ------------------------------------------------------------------ matching

    def initial_state(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per partition: where matching resumes, matches found so far, last row in a match."""
        starts = self.bounds[:-1].copy()
        return starts, np.zeros(len(starts), dtype=np.int64), starts - 1

    def match(self, state, *, final: bool, max_steps: int = MAX_STEPS):
        resume, numbers, covered = state
        q = self.q
        found = vm.match_all(
            self.K,
            self.KF,
            self.masks,
            self.starts,
            self.ci,
            self.cf,
            self.valid,
            self.perm,
            self.bounds,
            resume,
            numbers,
            covered,
            window=self.window,
            memo_ok=self.c.memo,
            max_steps=max_steps,
            skip_kind=self.skip_kind,
            skip_cls=self.skip_cls,
            all_rows=q.rows_per_match == "ALL",
            empty_mode={"SHOW": 0, "OMIT": 1, "UNMATCHED": 2}[q.empty],
            final=final,
            nslots=self.c.program.slots,
            track=any(ir.row_measure(node) for _, node in q.measures),
        )
        err, err_f = found[8], found[9]
        if err[0]:
            raise self.error(err, err_f, max_steps)
        return found

    def error(self, err: np.ndarray, payload: float, max_steps: int) -> Exception:
        code, detail, row, part, number = (int(x) for x in err)
        original = int(self.perm[row]) if 0 <= row < self.n else None
        if code == vm.ERR_MASK:  # a row mask's condition failed on a row the matcher tried
            vcode = self.mask_errors.get((detail, row), 0)
            return _vector_error(vcode, row=original)
        if code == vm.ERR_DIV_ZERO:
            return EventError("division by zero", row=original)
        if code == vm.ERR_MOD_ZERO:
            return EventError("modulo by zero", row=original)
        if code == vm.ERR_OVERFLOW:
            return EventError(f"integer overflow in {_OVERFLOW.get(detail, 'arithmetic')}", row=original)
        if code == vm.ERR_CAST:
            return EventError(f"CAST of {payload} to BIGINT is out of range", row=original)
        if code == vm.ERR_FIT:
            return EventError(vector.MESSAGES[vector.E_FIT], row=original)
        if code == vm.ERR_STEPS:
            from ceql.sql.plan import why_no_memo

            if self.c.memo:
                why = "failed search states are remembered, each explored once, but the partitions are long (past"
                why += " 2^24 states none are remembered) or the pattern large"
            else:  # say why, without blaming conditions that do not read the match
                why = f"failed search states cannot be remembered: {why_no_memo(self.c)}; such a pattern can"
                why += " need exponential backtracking"
            return LimitError(
                f"MATCH_RECOGNIZE stopped after {max_steps} matching steps ({why}); raise max_steps (0: no bound)"
                " if the query is meant to be this hard",
                "max_steps",
                max_steps,
            )
        q = self.q
        key = _shown_key(self.partition_key(part))
        if code == vm.ERR_SKIP_NONE:
            return EventError(
                f"AFTER MATCH SKIP TO {q.skip} {q.skip_to}: the match number {number} of partition {key} has no row "
                f"mapped to {q.skip_to}",
                row=original,
            )
        if code == vm.ERR_SKIP_LOOP:
            return EventError(
                f"AFTER MATCH SKIP TO {q.skip} {q.skip_to} would resume at the first row of the match number "
                f"{number} of partition {key} (an endless loop)",
                row=original,
            )
        return EventError(f"internal error {code} in the MATCH_RECOGNIZE matcher", row=original)

    def partition_key(self, part: int) -> tuple:
        row = int(self.perm[self.bounds[part]])
        return tuple(python_values(self.table.column(c).slice(row, 1))[0] for c in self.q.partition)

    # ------------------------------------------------------------------ the result

    @allows_deep_expressions
    def result(self, found) -> pa.Table:
        out_row, out_null, out_i, out_f, out_n = found[:5]
        q = self.q
        rows = pa.array(self.perm[out_row] if len(out_row) else np.zeros(0, dtype=np.int64))
        arrays = []
        matches = None
        for column in q.output:
            if column.source is not None:
                arrays.append(self._original_column(column.source).take(rows))
                continue
            m = column.measure
            node = q.measures[m][1]  # type: ignore[index]
            if ir.row_measure(node):
                matches = matches or MatchRows(self, found[10], found[11])
                array = matches.measure(node)
                arrays.append(array if array.type == column.type else array.cast(column.type))
            else:
                arrays.append(self._measure(node.type, column.type, out_i[m], out_f[m], out_n[m]))
        table = pa.Table.from_arrays(arrays, schema=pa.schema([pa.field(c.name, c.type) for c in q.output]))
        return outer(q, table)

    def _measure(self, t, arrow_type: pa.DataType, ints, floats, nulls) -> pa.Array:
        mask = np.asarray(nulls, dtype=np.bool_)
        kind = t.kind
        if kind == "null":
            return pa.nulls(len(mask), arrow_type)
        if kind == "double":
            array = pa.array(np.ascontiguousarray(floats), type=pa.float64(), mask=mask)
        elif kind == "string":
            codes = pa.array(np.ascontiguousarray(ints), type=pa.int64(), mask=mask)
            array = self.dictionary.take(codes)
        elif kind == "bool":
            array = pa.array(np.ascontiguousarray(ints) != 0, type=pa.bool_(), mask=mask)
        elif kind == "decimal":
            array = vector.decimal_array(np.ascontiguousarray(ints), ~mask, t.arrow())
        else:
            array = pa.array(np.ascontiguousarray(ints), type=pa.int64(), mask=mask)
        return array if array.type == arrow_type else array.cast(arrow_type)


def _string_map(template: ir.Op, strings: pa.Array) -> pa.Array:
    """A string function (``Compiled.string_maps``) of each of ``strings``."""
    env = Env(len(strings), lambda name: strings)
    return vector.to_arrow(vector.evaluate(template, env), template.type)


class MatchRows:
    """The rows of the matches (``vm.match_all`` with ``track``), for the measures computed
    from them once the matches are found: ARRAY_AGG, MAX_BY, MIN_BY (``ir.ROW_AGGREGATES``).
    One *entry* per row of a match (a row in two matches, AFTER MATCH SKIP TO, has two): its
    sorted row, its variable, its match's number. An output row sees the entries of its match
    from the first up to its own row (RUNNING) or all of them (FINAL)."""

    def __init__(self, prepared: Prepared, om: np.ndarray, ol: np.ndarray) -> None:
        self.p = prepared
        total = int(vm.match_length_sum(ol))
        rows, variables, numbers, starts, first = vm.match_rows(ol, total)
        self.rows, self.variables, self.numbers, self.starts = rows, variables, numbers, starts.astype(np.bool_)
        matched = om[0] >= 0
        self.matched = matched
        at = np.where(matched, om[0], 0)
        self.begin = np.where(matched, first[at], 0)  # the output row's match's first entry
        length = np.where(matched, ol[np.minimum(at + 1, len(ol) - 1)], 0)
        self.running = np.where(matched, om[1], 0)
        self.length = length
        variable_names = pa.array(prepared.q.variables or [""], pa.string())
        self.env = Env(total, self._column)
        self._labels = variable_names.take(pa.array(variables))

    def _column(self, name: str) -> pa.Array:
        if name == _LABEL:
            return self._labels
        if name == _NUMBER:
            return pa.array(self.numbers, pa.int64())
        return self.p._sorted_column(name).take(pa.array(self.rows))

    def _values(self, node: ir.Node) -> Vec:
        """A row expression on every entry (its CLASSIFIER and MATCH_NUMBER are the entry's)."""
        vec = vector.evaluate(_entry_expression(node), self.env)
        failure = vector.first_error(vec)
        if failure is not None:
            raise _vector_error(failure[1], vec, int(self.p.perm[self.rows[failure[0]]]))
        return vector.dense(vec, len(self.rows))

    def measure(self, node: ir.Node) -> pa.Array:
        separator = None
        if isinstance(node, ir.Op):  # CONCAT_WS(separator, ARRAY_AGG(...))
            separator = node.args[0].value  # type: ignore[attr-defined]
            node = node.args[1]
        assert isinstance(node, ir.Agg) and node.arg is not None
        member = self.p.cls_member[self.p.c.classes.index(node.cls)].astype(np.bool_)[self.variables]
        end = self.begin + (self.length if node.final else self.running)
        if node.func == "ARRAY_AGG" and separator is None:
            return self._array_agg(node, member, end)
        if node.func == "ARRAY_AGG":
            # Trino's concat_ws(string, array(varchar)): the non-null elements joined; a null
            # array (no row) is null
            return pc.binary_join(self._array_agg(node, member, end, drop_nulls=True), separator)
        return self._by(node, member, end)

    def _array_agg(self, node: ir.Agg, member: np.ndarray, end: np.ndarray, drop_nulls: bool = False) -> pa.Array:
        vec = self._values(node.arg)  # type: ignore[arg-type]
        values = vector.to_arrow(vec, node.arg.type)  # type: ignore[union-attr]
        # no row of the class seen: NULL, as an aggregate of no rows is (SQL, Trino)
        counts = np.concatenate([[0], np.cumsum(member, dtype=np.int64)])
        empty = pa.array(~self.matched | (counts[end] == counts[self.begin]))
        if drop_nulls:
            member = member & np.asarray(vec.valid, dtype=np.bool_)
            counts = np.concatenate([[0], np.cumsum(member, dtype=np.int64)])
        indices = np.flatnonzero(member)
        lo, hi = counts[self.begin], counts[end]
        lengths = np.where(self.matched, hi - lo, 0)
        offsets = np.concatenate([[0], np.cumsum(lengths, dtype=np.int64)])
        # element k of output row o is member entry lo[o] + k
        take = np.arange(offsets[-1], dtype=np.int64) - np.repeat(offsets[:-1] - lo, lengths)
        elements = values.take(pa.array(indices[take], pa.int64()))
        return pa.ListArray.from_arrays(pa.array(offsets.astype(np.int32)), elements, mask=empty)

    def _by(self, node: ir.Agg, member: np.ndarray, end: np.ndarray) -> pa.Array:
        values = vector.to_arrow(self._values(node.arg), node.arg.type)  # type: ignore[arg-type, union-attr]
        key = self._values(node.key)  # type: ignore[arg-type]
        keys = vector.to_arrow(key, node.key.type)  # type: ignore[union-attr]
        ranks = np.asarray(pc.rank(keys, sort_keys="ascending", tiebreaker="dense").to_numpy(zero_copy_only=False))
        usable = member & np.asarray(key.valid, dtype=np.bool_)
        best = vm.prefix_best(ranks.astype(np.int64), usable, self.starts, node.func == "MAX_BY")
        last = np.where(self.matched & (end > self.begin), end - 1, 0)
        chosen = np.where(self.matched & (end > self.begin), best[last] if len(best) else -1, -1)
        picked = values.take(pa.array(np.maximum(chosen, 0), pa.int64())) if len(values) else pa.nulls(len(chosen), values.type)
        return pc.if_else(pa.array(chosen >= 0), picked, pa.scalar(None, values.type))


_LABEL, _NUMBER = "\x00classifier", "\x00match_number"  # the entries' own columns (not input names)


def _entry_expression(node: ir.Node) -> ir.Node:
    """A row expression with CLASSIFIER() and MATCH_NUMBER() read from the entries' columns."""
    if isinstance(node, ir.RowClassifier):
        return ir.RowCol(node.type, _LABEL)
    if isinstance(node, ir.MatchNo):
        return ir.RowCol(node.type, _NUMBER)
    if isinstance(node, ir.Op):
        return ir.Op(node.type, node.op, tuple(_entry_expression(a) for a in node.args))
    if isinstance(node, ir.Case):
        whens = tuple((_entry_expression(c), _entry_expression(v)) for c, v in node.whens)
        otherwise = _entry_expression(node.otherwise) if node.otherwise is not None else None
        return ir.Case(node.type, whens, otherwise)
    return node


def outer(q: Checked, table: pa.Table) -> pa.Table:
    """The outer SELECT and WHERE over the MATCH_RECOGNIZE result."""
    plain = all(isinstance(c.expr, ir.RowCol) for c in q.select)
    # by position: a column may be in the result twice (ORDER BY c ASC, c DESC), both the same
    index = {}
    for i, name in enumerate(table.column_names):
        index.setdefault(name, i)
    if q.where is None and plain:
        out = table.select([index[c.expr.column] for c in q.select])  # type: ignore[attr-defined]
        return out.rename_columns([c.name for c in q.select])
    env = Env(table.num_rows, lambda name: table.column(index[name]))
    keep = np.ones(table.num_rows, dtype=np.bool_)
    failures = []
    if q.where is not None:
        where = vector.evaluate(q.where, env)
        failure = vector.first_error(where)
        if failure is not None:
            failures.append((failure[0], 0, failure[1], where))
        keep = where.valid & np.asarray(where.values, dtype=np.bool_)
        if where.err is not None:
            keep &= where.err == 0
    columns = []
    for i, column in enumerate(q.select):
        if isinstance(column.expr, ir.RowCol):
            columns.append(table.column(index[column.expr.column]))
            continue
        vec = vector.evaluate(column.expr, env)
        failure = vector.first_error(vec, keep)
        if failure is not None:
            failures.append((failure[0], i + 1, failure[1], vec))
        columns.append(vector.to_arrow(vec, column.expr.type))
    if failures:
        row, _, code, vec = min(failures, key=lambda f: (f[0], f[1]))
        raise _vector_error(code, vec, row)
    schema = q.output_schema
    arrays = []
    for column, field in zip(columns, schema):
        array = column if column.type == field.type else column.cast(field.type)
        arrays.append(array)
    result = pa.Table.from_arrays(arrays, schema=schema)
    if q.where is not None:
        result = result.filter(pa.array(keep))
    return result


def _vector_error(code: int, vec: Vec | None = None, row: int | None = None) -> EventError:
    if code == vector.E_CAST:
        return EventError("CAST to BIGINT of a value out of range", row=row)
    return EventError(vector.MESSAGES.get(code, f"error {code}"), row=row)


def _shown_key(key: tuple) -> str:
    return "(" + ", ".join(repr(k) for k in key) + ")" if key else "(the whole input)"


def _time_type(q: Checked):
    from ceql.sql.types import sql_type

    return sql_type(q.schema.field(q.time_column).type)


def _unshifted(node: ir.Node) -> list[ir.Node]:
    """The largest sub-expressions without PREV/NEXT that read a column."""
    if not _has_shift(node):
        return [node] if _reads_column(node) else []
    out = []
    if isinstance(node, Shift):
        return _unshifted(node.expr)
    for child in ir.children(node):
        out.extend(_unshifted(child))
    return out


def _has_shift(node: ir.Node) -> bool:
    if isinstance(node, Shift):
        return True
    return any(_has_shift(c) for c in ir.children(node))


def _reads_column(node: ir.Node) -> bool:
    if isinstance(node, ir.RowCol):
        return True
    if isinstance(node, Shift):
        return True
    return any(_reads_column(c) for c in ir.children(node))


def _permute(vec: Vec, perm: np.ndarray) -> Vec:
    if isinstance(vec.values, (pa.Array, pa.ChunkedArray)):
        values = vec.values.take(pa.array(perm))
    elif isinstance(vec.values, pa.Scalar) or np.ndim(vec.values) == 0:
        values = vec.values
    else:
        values = np.asarray(vec.values)[perm]
    return Vec(values, vec.valid[perm], None if vec.err is None else vec.err[perm])


# ---------------------------------------------------------------------------- grouping and order


def partition_codes(table: pa.Table, columns: list[str]) -> tuple[np.ndarray, int]:
    """Each row's partition, numbered in order of first appearance; and the number of them."""
    n = table.num_rows
    if not columns:
        return np.zeros(n, dtype=np.int64), 1 if n else 0
    combined = None
    size = 1
    for name in columns:
        column = vector.plain(table.column(name))
        encoded = pc.dictionary_encode(column, null_encoding="encode")
        codes = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        k = len(encoded.dictionary)
        combined = codes if combined is None else combined * k + codes
        size *= max(k, 1)
        if size > 2**62:  # renumber before the product can overflow
            _, combined = np.unique(combined, return_inverse=True)
            size = int(combined.max()) + 1 if n else 1
    assert combined is not None
    if len(columns) > 1 or size != (int(combined.max()) + 1 if n else 0):
        _, combined = np.unique(combined, return_inverse=True)
        size = int(combined.max()) + 1 if n else 0
        combined = vm.first_appearance(combined.astype(np.int64), size)
    return combined.astype(np.int64), size


def order_permutation(table: pa.Table, order: list[tuple[str, bool, bool]]) -> np.ndarray | None:
    """The stable permutation putting rows in ORDER BY order, or None if they already are."""
    if not order:
        return None
    keys = []
    for name, descending, nulls_first in order:
        keys.extend(_order_keys(table.column(name), descending, nulls_first))
    if _already_sorted(keys):
        return None
    # np.lexsort sorts by the last key first
    return np.lexsort(list(reversed(keys))).astype(np.int64)


def _order_keys(column, descending: bool, nulls_first: bool) -> list[np.ndarray]:
    """Integer sort keys (most significant first) for one ORDER BY column."""
    column = vector.plain(column)
    t = column.type
    if column.null_count:
        is_null = np.asarray(column.is_null().to_numpy(zero_copy_only=False), dtype=np.bool_)
        null_keys = [(~is_null if nulls_first else is_null).astype(np.int8)]
    else:
        is_null = None
        null_keys = []
    if pa.types.is_floating(t):
        column = column.cast(pa.float64())
        values = np.asarray((column.fill_null(0.0) if column.null_count else column).to_numpy(zero_copy_only=False))
        nan = np.isnan(values)
        if nan.any():
            values = np.where(nan, 0.0, values)
            nan_key = nan.astype(np.int8)
            return null_keys + ([-nan_key, -values] if descending else [nan_key, values])
        return null_keys + [-values if descending else values]
    if pa.types.is_integer(t) or pa.types.is_timestamp(t) or pa.types.is_boolean(t):
        column = column.cast(pa.int64())
        values = np.asarray((column.fill_null(0) if column.null_count else column).to_numpy(zero_copy_only=False))
        return null_keys + [~values if descending else values]
    # strings and anything else Arrow can order: dense ranks
    ranks = pc.rank(column, sort_keys="descending" if descending else "ascending", tiebreaker="dense")
    values = np.asarray(ranks.to_numpy(zero_copy_only=False), dtype=np.int64)
    return null_keys + [values if is_null is None else np.where(is_null, 0, values)]


def _already_sorted(keys: list[np.ndarray]) -> bool:
    if not keys or len(keys[0]) < 2:
        return True
    # strictly: rows are in order if, comparing keys lexicographically, no row is after the next
    undecided = np.ones(len(keys[0]) - 1, dtype=np.bool_)
    for key in keys:
        a, b = key[:-1], key[1:]
        if np.any(undecided & (a > b)):
            return False
        undecided &= a == b
    return True
