"""Checked MATCH_RECOGNIZE query to the arrays the matcher (``ceql.sql.vm``) runs.

What is decided here, and why:

- Each DEFINE condition is split at its top-level ANDs. The leading conjuncts that read only
  the row being matched (its columns, and PREV/NEXT of them) are **row masks**: evaluated once,
  column-wise, over the whole input (``vector.py``), so a row that fails them is rejected
  without any per-row Python or VM work. When the whole condition is such a conjunction, the mask
  is the condition. Otherwise the mask only rules out rows where a leading conjunct is FALSE
  (a NULL one does not stop SQL from evaluating the rest) and the whole condition runs in the
  expression VM on the rows the mask lets through.
- Columns the VM reads (``vcols``) are computed column-wise too: the largest sub-expressions
  that read one row and cannot fail (comparisons, logic, CASE, double arithmetic) become one
  precomputed column; integer arithmetic, which can fail, stays in the VM so that it fails only
  where SQL evaluates it.
- Aggregates are accumulated along the match as rows are mapped (one step per row), so an
  aggregate in a condition costs O(1) per attempt.
- Strings are codes in one sorted dictionary (of every string the VM can see), so that the VM
  compares codes as SQL compares the strings.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ceql.errors import UnsupportedQueryError
from ceql.sql import ir, vm
from ceql.sql.analysis import Checked
from ceql.sql.parser import allows_deep_expressions
from ceql.sql.program import Program, compile_pattern
from ceql.sql.types import STRING, SqlType
from ceql.sql.vector import Shift

_CMP = {"=": vm.C_EQ, "<>": vm.C_NE, "<": vm.C_LT, "<=": vm.C_LE, ">": vm.C_GT, ">=": vm.C_GE}
_ARITH = {"+": vm.A_ADD, "-": vm.A_SUB, "*": vm.A_MUL, "/": vm.A_DIV, "%": vm.A_MOD}
_SAFE_OPS = {"=", "<>", "<", "<=", ">", ">=", "and", "or", "not", "isnull", "notnull", "coalesce", *ir.STRING_FUNCTIONS, *ir.MATH_FUNCTIONS}
#: String functions: computed column-wise only (the VM holds strings as codes of a dictionary
#: built before matching), on a row's columns; of a value only the VM has (CLASSIFIER(), an
#: aggregate) they are refused.
_STRING_OPS = {"like": "LIKE", "lower": "LOWER", "upper": "UPPER", "concat": "||", "length": "LENGTH", "substr": "SUBSTRING"}
STACK_SIZE = 512


def is_float(t: SqlType) -> bool:
    return t.kind == "double"


@dataclass
class Compiled:
    """Everything ``engine.run`` needs besides the input."""

    checked: Checked
    program: Program
    masks: list[list[ir.Node]]  # per variable: conjuncts (row expressions with Shift) of its mask
    mask_exact: list[bool]  # per variable: the mask is the whole condition
    cond_ranges: list[tuple[int, int, int, int]]  # per variable: code of the rest, of the whole
    measure_ranges: list[tuple[int, int]]
    code: list[int] = field(default_factory=list)
    consts_i: list[int] = field(default_factory=list)
    consts_f: list[float] = field(default_factory=list)
    strings: dict[int, str] = field(default_factory=dict)  # consts_i index -> string
    vcols: list[ir.Node] = field(default_factory=list)  # row expressions the VM reads
    vcol_slot: list[int] = field(default_factory=list)  # index into the int or float columns
    vcol_sorted: list[bool] = field(default_factory=list)  # read while matching: kept in sorted order
    classes: list[str | None] = field(default_factory=list)
    aggregates: list[tuple[int, int, int, int, bool]] = field(default_factory=list)  # func, cls, lo, hi, final
    memo: bool = False
    dynamic: set[str] = field(default_factory=set)  # variables whose condition runs in the VM
    # string functions of computed strings, in code order (inner first): the consts_i slot of
    # the table's offset, and the function with its computed operand as ``STRING_OPERAND``
    string_maps: list[tuple[int, ir.Op]] = field(default_factory=list)

    @property
    def int_vcols(self) -> list[int]:
        return [i for i, node in enumerate(self.vcols) if not is_float(node.type)]

    @property
    def float_vcols(self) -> list[int]:
        return [i for i, node in enumerate(self.vcols) if is_float(node.type)]


@allows_deep_expressions
def compile_query(checked: Checked) -> Compiled:
    """Compile a checked query (see the module docstring)."""
    return _Compiler(checked).run()


class _Compiler:
    def __init__(self, checked: Checked) -> None:
        self.q = checked
        self.code: list[int] = []
        self.consts_i: list[int] = []
        self.consts_f: list[float] = []
        self.strings: dict[int, str] = {}
        self.vcols: list[ir.Node] = []
        self.vcol_index: dict[ir.Node, int] = {}
        self.vcol_slot: list[int] = []
        self.vcol_sorted: list[bool] = []
        self.matching = True  # compiling conditions (read during matching) or measures
        self.n_int = 0
        self.n_float = 0
        self.classes: list[str | None] = [ir.UNIVERSAL, *checked.variables, *checked.subsets]
        self.aggregates: list[tuple[int, int, int, int, bool]] = []
        self.string_maps: list[tuple[int, ir.Op]] = []

    def run(self) -> Compiled:
        q = self.q
        program = compile_pattern(q.pattern, q.variables)
        masks: list[list[ir.Node]] = []
        exact: list[bool] = []
        ranges: list[tuple[int, int, int, int]] = [(0, 0, 0, 0)] * len(q.variables)
        dynamic: set[str] = set()
        for i, v in enumerate(q.variables):
            condition = q.defines.get(v)
            if condition is None:
                masks.append([])
                exact.append(True)
                continue
            conjuncts = _conjuncts(condition)
            local = []
            for c in conjuncts:
                row = self.local(c, v)
                if row is None:
                    break
                local.append(row)
            whole = len(local) == len(conjuncts)
            masks.append(local)
            exact.append(whole)
            if not whole:
                # Where the leading row-local conjuncts are all TRUE (mask 1), only the rest
                # runs; where one is NULL (mask 2), the whole condition does.
                dynamic.add(v)
                lo = len(self.code)
                self.expr(_chain(conjuncts[len(local):]))
                rest = (lo, len(self.code))
                lo = len(self.code)
                if local:
                    self.expr(condition)
                    ranges[i] = (*rest, lo, len(self.code))
                else:
                    ranges[i] = (*rest, *rest)
        measure_ranges = []
        self.matching = False
        for _, node in q.measures:
            lo = len(self.code)
            if ir.row_measure(node):  # computed after matching, from the match's rows (engine)
                self.code.append(vm.E_NULL)
            else:
                self.expr(node)
            measure_ranges.append((lo, len(self.code)))
        # Failed states can be remembered only when nothing but the row decides a condition
        # (and no window ties a state to the match's first row); inside an iteration that may map
        # no row, only once it has mapped one (vm: instruction field 3).
        branches = bool((program.instructions[:, 0] == vm.P_SPLIT).any())  # else nothing is revisited
        memo = branches and not dynamic and q.within is None
        return Compiled(
            checked=q,
            program=program,
            masks=masks,
            mask_exact=exact,
            cond_ranges=ranges,
            measure_ranges=measure_ranges,
            code=self.code,
            consts_i=self.consts_i,
            consts_f=self.consts_f,
            strings=self.strings,
            vcols=self.vcols,
            vcol_slot=self.vcol_slot,
            vcol_sorted=self.vcol_sorted,
            classes=self.classes,
            aggregates=self.aggregates,
            string_maps=self.string_maps,
            memo=memo,
            dynamic=dynamic,
        )

    # ------------------------------------------------------------------ row masks

    def local(self, node: ir.Node, var: str) -> ir.Node | None:
        """``node`` as a row expression over the row mapped to ``var`` (Shift for PREV/NEXT of
        it), if it reads only that row and its neighbours and cannot fail; else None."""
        if isinstance(node, ir.At):
            delta = self._current_row(node.locator, var)
            if delta is None or not _safe_row(node.expr):
                return None
            return node.expr if delta == 0 else Shift(node.type, node.expr, delta)
        if isinstance(node, ir.Const):
            return node
        if isinstance(node, ir.Op) and (node.op in _SAFE_OPS or _safe_float(node)):
            args = []
            for a in node.args:
                row = self.local(a, var)
                if row is None:
                    return None
                args.append(row)
            return ir.Op(node.type, node.op, tuple(args))
        if isinstance(node, ir.Case):
            whens = []
            for c, value in node.whens:
                rc, rv = self.local(c, var), self.local(value, var)
                if rc is None or rv is None:
                    return None
                whens.append((rc, rv))
            otherwise = None
            if node.otherwise is not None:
                otherwise = self.local(node.otherwise, var)
                if otherwise is None:
                    return None
            return ir.Case(node.type, tuple(whens), otherwise)
        return None

    def _current_row(self, loc: ir.Locator, var: str) -> int | None:
        """0 if the locator designates the row being matched to ``var``, +-n for n rows after or
        before it, None otherwise."""
        if isinstance(loc, ir.Physical):
            base = self._current_row(loc.base, var)
            return None if base is None else base + loc.delta
        if loc.func == "LAST" and loc.offset == 0 and not loc.final and var in self.q.classes_of(loc.cls):
            return 0
        return None

    # ------------------------------------------------------------------ expression code

    def const_i(self, value: int) -> None:
        self.consts_i.append(int(value))
        self.code += [vm.E_CONST_I, len(self.consts_i) - 1]

    def const(self, node: ir.Const) -> None:
        t = node.type
        if node.value is None:
            self.code.append(vm.E_NULL)
        elif t.kind == "double":
            self.consts_f.append(float(node.value))  # type: ignore[arg-type]
            self.code += [vm.E_CONST_F, len(self.consts_f) - 1]
        elif t.kind == "string":
            self.consts_i.append(0)
            self.strings[len(self.consts_i) - 1] = str(node.value)
            self.code += [vm.E_CONST_I, len(self.consts_i) - 1]
        elif t.kind == "bool":
            self.const_i(1 if node.value else 0)
        elif t.kind == "decimal":  # the unscaled integer
            self.const_i(int(node.value.scaleb(t.scale)))  # type: ignore[union-attr]
        else:
            self.const_i(int(node.value))  # type: ignore[call-overload]

    def vcol(self, node: ir.Node) -> int:
        """The VM column holding ``node`` (a row expression) computed column-wise."""
        if node not in self.vcol_index:
            self.vcol_index[node] = len(self.vcols)
            self.vcols.append(node)
            self.vcol_sorted.append(False)
            if is_float(node.type):
                self.vcol_slot.append(self.n_float)
                self.n_float += 1
            else:
                self.vcol_slot.append(self.n_int)
                self.n_int += 1
        k = self.vcol_index[node]
        # A column read while matching is kept in sorted order (sequential reads); one read only
        # by measures stays in input order and is read through the permutation (no copy).
        self.vcol_sorted[k] = self.vcol_sorted[k] or self.matching
        return k

    def load(self, node: ir.Node) -> None:
        k = self.vcol(node)
        self.code += [vm.E_LOAD_F if is_float(node.type) else vm.E_LOAD_I, self.vcol_slot[k]]

    def locator(self, loc: ir.Locator) -> None:
        if isinstance(loc, ir.Physical):
            self.locator(loc.base)
            self.code += [vm.E_ROW_PHYS, loc.delta]
            return
        self.code += [
            vm.E_ROW_LOGICAL,
            1 if loc.func == "FIRST" else 0,
            self.classes.index(loc.cls),
            loc.offset,
            1 if loc.final else 0,
        ]

    def expr(self, node: ir.Node, row: bool = False) -> None:  # noqa: C901 - one case per node
        """Emit code leaving ``node``'s value on the stack. ``row``: a row expression, read on
        the row on top of the row stack."""
        if isinstance(node, ir.Const):
            self.const(node)
        elif isinstance(node, ir.At):
            self.locator(node.locator)
            self.expr(node.expr, row=True)
            self.code.append(vm.E_ROW_POP)
        elif row and _safe_row(node) and not isinstance(node, ir.Const):
            self.load(node)
        elif isinstance(node, ir.RowClassifier):
            self.code.append(vm.E_CLASSIFIER)
        elif isinstance(node, ir.MatchNo):
            self.code.append(vm.E_MATCHNO)
        elif isinstance(node, ir.Agg):
            self.aggregate(node)
        elif not row and (hoisted := _hoist(node)) is not None:
            # e.g. B.kind = 'BUY': one column computed column-wise, read on B's row
            self.expr(hoisted)
        elif isinstance(node, ir.Case):
            ends = []
            for condition, value in node.whens:
                self.expr(condition, row)
                skip = len(self.code)
                self.code += [vm.E_JUMP_UNLESS_TRUE, 0]
                self.expr(value, row)
                ends.append(len(self.code))
                self.code += [vm.E_JUMP, 0]
                self.code[skip + 1] = len(self.code)
            if node.otherwise is not None:
                self.expr(node.otherwise, row)
            else:
                self.code.append(vm.E_NULL)
            for at in ends:
                self.code[at + 1] = len(self.code)
        elif isinstance(node, ir.Op):
            self.op(node, row)
        else:  # pragma: no cover
            raise TypeError(node)

    def op(self, node: ir.Op, row: bool) -> None:  # noqa: C901
        op = node.op
        args = node.args
        if op in ("and", "or"):
            self.expr(args[0], row)
            jump = len(self.code)
            self.code += [vm.E_AND_SKIP if op == "and" else vm.E_OR_SKIP, 0]
            self.expr(args[1], row)
            self.code.append(vm.E_AND if op == "and" else vm.E_OR)
            self.code[jump + 1] = len(self.code)
            return
        if op == "coalesce":
            ends = []
            for i, arg in enumerate(args):
                self.expr(arg, row)
                if i < len(args) - 1:
                    ends.append(len(self.code))
                    self.code += [vm.E_JUMP_IF_NOT_NULL, 0]
                    self.code.append(vm.E_POP)
            for at in ends:
                self.code[at + 1] = len(self.code)
            return
        if op in _STRING_OPS and (mapped := _string_map(node)) is not None:
            operand, template = mapped
            self.expr(operand, row)
            self.consts_i.append(0)  # the engine puts the table's offset here
            self.string_maps.append((len(self.consts_i) - 1, template))
            self.code += [vm.E_STRMAP, len(self.consts_i) - 1]
            return
        if op in _STRING_OPS:
            raise UnsupportedQueryError(
                f"{_STRING_OPS[op]} of a value computed while matching (CLASSIFIER(), an aggregate, a navigation "
                f"of several rows) is not supported; {_STRING_OPS[op]} of a row's columns is"
            )
        if op == "/" and node.type.kind == "decimal":
            self.expr(args[0], row)
            self.expr(args[1], row)
            self.code += [vm.E_DDIV, 10 ** ir.dividend_scale(node)]
            return
        for arg in args if op != "scale" else args[:1]:
            self.expr(arg, row)
        if op == "not":
            self.code.append(vm.E_NOT)
        elif op == "isnull":
            self.code.append(vm.E_ISNULL)
        elif op == "notnull":
            self.code.append(vm.E_NOTNULL)
        elif op in _CMP:
            self.code += [vm.E_CMP_F if is_float(args[0].type) else vm.E_CMP_I, _CMP[op]]
        elif op in _ARITH:
            self.code += [vm.E_ARITH_F if is_float(node.type) else vm.E_ARITH_I, _ARITH[op]]
        elif op == "neg":
            self.code.append(vm.E_NEG_F if is_float(node.type) else vm.E_NEG_I)
        elif op == "abs":
            self.code.append(vm.E_ABS_F if is_float(node.type) else vm.E_ABS_I)
        elif op == "scale":
            self.code += [vm.E_SCALE, int(args[1].value)]  # type: ignore[attr-defined]
        elif op in ir.MATH_FUNCTIONS:
            f = ir.MATH_FUNCTIONS.index(op)
            self.code += [vm.E_ARITH_F, vm.A_MATH + f] if len(args) == 2 else [vm.E_MATH, f]
        elif op == "rescale":
            k = node.type.scale - args[0].type.scale
            self.code += [vm.E_RESCALE, 10**k if k >= 0 else -(10**-k)]
        elif op == "fit":
            if node.type.precision < 19:  # else every int64 fits
                self.code += [vm.E_FIT, 10**node.type.precision]
        elif op == "cast":
            source, target = args[0].type.kind, node.type.kind
            if target == "double" and source == "decimal":
                self.code.append(vm.E_I2F)
                self.consts_f.append(float(10 ** args[0].type.scale))
                self.code += [vm.E_CONST_F, len(self.consts_f) - 1, vm.E_ARITH_F, vm.A_DIV]
            elif target == "double" and source != "double":
                self.code.append(vm.E_I2F)
            elif target == "int" and source == "double":
                self.code.append(vm.E_F2I)
            elif target == "bool" and source == "int":
                self.code.append(vm.E_I2B)
            # bool -> int and same-kind casts change nothing in the VM
        else:  # pragma: no cover
            raise TypeError(op)

    def aggregate(self, node: ir.Agg) -> None:
        """Register an accumulator (MAX_BY and MIN_BY: the key's, then the value's) and read it."""
        arg_float = node.arg is not None and is_float(node.arg.type)
        if node.func in ("MAX_BY", "MIN_BY"):  # in a condition (a measure's are computed after matching)
            assert node.key is not None
            key_float = is_float(node.key.type)
            if node.func == "MAX_BY":
                self.accumulator(vm.G_MAXK_F if key_float else vm.G_MAX_I, node.cls, node.key, node.final)
            else:
                self.accumulator(vm.G_MINK_F if key_float else vm.G_MIN_I, node.cls, node.key, node.final)
            func = vm.G_BYVAL_F if arg_float else vm.G_BYVAL_I
        elif node.func == "COUNT":
            func = vm.G_COUNT_ROWS if node.arg is None else vm.G_COUNT
        else:
            base = {"SUM": vm.G_SUM_I, "AVG": vm.G_AVG_I, "MIN": vm.G_MIN_I, "MAX": vm.G_MAX_I}[node.func]
            func = base + (1 if arg_float else 0)
        self.accumulator(func, node.cls, node.arg, node.final)
        self.code += [vm.E_AGG, len(self.aggregates) - 1]

    def accumulator(self, func: int, cls_name: str | None, arg: ir.Node | None, final: bool) -> None:
        """Register an accumulator: its argument's code is compiled apart (it is run on each
        row as it is mapped)."""
        cls = self.classes.index(cls_name)
        # the argument's code is jumped over in place; it runs on each row as it is mapped
        matching, self.matching = self.matching, True
        jump = len(self.code)
        self.code += [vm.E_JUMP, 0]
        lo = len(self.code)
        if arg is not None:
            self.code.append(vm.E_ROW_ARG)
            self.expr(arg, row=True)
        hi = len(self.code)
        self.code[jump + 1] = hi
        self.matching = matching
        self.aggregates.append((func, cls, lo, hi, final))


#: the computed operand of a string function in ``Compiled.string_maps`` (engine: the dictionary)
STRING_OPERAND = ir.RowCol(STRING, "\x00string")


def _string_map(node: ir.Op) -> tuple[ir.Node, ir.Op] | None:
    """A string function of one computed operand (the others constants), as that operand and the
    function of ``STRING_OPERAND``: the VM maps the operand's dictionary code through a table."""
    computed = [i for i, a in enumerate(node.args) if not isinstance(a, ir.Const)]
    if len(computed) != 1:
        return None
    i = computed[0]
    args = tuple(STRING_OPERAND if k == i else a for k, a in enumerate(node.args))
    return node.args[i], ir.Op(node.type, node.op, args)


def _chain(conjuncts: list[ir.Node]) -> ir.Node:
    """``c1 AND c2 AND ...``, associated as the parser does (to the left)."""
    node = conjuncts[0]
    for c in conjuncts[1:]:
        node = ir.Op(node.type, "and", (node, c))
    return node


def _conjuncts(node: ir.Node) -> list[ir.Node]:
    if isinstance(node, ir.Op) and node.op == "and":
        return _conjuncts(node.args[0]) + _conjuncts(node.args[1])
    return [node]


_STRICT = {"=", "<>", "<", "<=", ">", ">=", "+", "-", "*", "/", "%", "neg", "abs", "cast", "not", "scale", "rescale", "fit", *ir.STRING_FUNCTIONS, *ir.MATH_FUNCTIONS}


def _hoist(node: ir.Node) -> ir.At | None:
    """``f(At(loc, a), At(loc, b), const)`` as ``At(loc, f(a, b, const))`` when f is strict (null
    in, null out: so a missing row gives null either way) and the result is computed
    column-wise."""
    located = _located(node)
    if located is None or located[0] is None or isinstance(node, ir.At):
        return None
    loc, row = located
    if not _safe_row(row):
        return None
    return ir.At(node.type, loc, row)


def _located(node: ir.Node):
    if isinstance(node, ir.Const):
        return None, node
    if isinstance(node, ir.At):
        return node.locator, node.expr
    if isinstance(node, ir.Op) and node.op in _STRICT:
        loc = None
        args = []
        for a in node.args:
            found = _located(a)
            if found is None or (found[0] is not None and loc is not None and found[0] != loc):
                return None
            loc = loc or found[0]
            args.append(found[1])
        return loc, ir.Op(node.type, node.op, tuple(args))
    return None


def _safe_float(node: ir.Op) -> bool:
    """Double arithmetic cannot fail (IEEE 754), nor can int to double."""
    if node.op in ("+", "-", "*", "/", "%", "neg", "abs"):
        return node.type.kind == "double"
    if node.op == "cast":
        return node.type.kind == "double" or (node.type.kind == "bool" and node.args[0].type.kind == "int")
    return False


def _safe_row(node: ir.Node) -> bool:
    """A row expression over columns that cannot fail: computed column-wise."""
    if isinstance(node, (ir.RowCol, ir.Const)):
        return True
    if isinstance(node, ir.Op):
        if node.op in _SAFE_OPS or _safe_float(node):
            return all(_safe_row(a) for a in node.args)
        return False
    if isinstance(node, ir.Case):
        parts = [x for pair in node.whens for x in pair] + ([node.otherwise] if node.otherwise is not None else [])
        return all(_safe_row(p) for p in parts)
    return False
