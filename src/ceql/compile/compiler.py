"""Compile a checked query's formula into a machine (see automata.py).

Conditions are normalised first: a FILTER condition is put in disjunctive normal form over its
atoms; a universal unary atom (``x[p]``, or a comparison naming one label such as ``x.a > 5``)
restricts the transitions that report x; a disjunction becomes a union of copies of the
filtered formula. Comparisons that name two or more labels are cross-event conditions: they
cannot be decided on one event, so they are kept aside and checked on the enumerated complex
events (see ``CrossCondition``).
"""

from __future__ import annotations

from dataclasses import dataclass

from ceql.compile import automata, guards
from ceql.compile.predicates import PredicateSet
from ceql.errors import UnsupportedQueryError
from ceql.lang import ast

MAX_DISJUNCTS = 64


@dataclass(frozen=True)
class CrossCondition:
    """A FILTER conjunct that compares events of several labels, checked on whole complex events.

    ``cond`` is a boolean combination of LabelCond and Compare atoms; its one-label parts are
    also interned as predicates (``unary``: id(atom) -> predicate id) so that they are read from
    the events' predicate bits. A condition inside a sub-formula only constrains the events of
    that sub-formula, which the compiler marks with a private label (``scope_label``).
    """

    cond: ast.Cond
    scope_label: str
    unary: dict[int, int]
    # Inside an iteration the condition holds per iteration: the events are split into
    # iterations at the events carrying this label (the last event of each iteration).
    group_label: str | None = None

    @property
    def compares(self) -> list[ast.Compare]:
        """The cross-event comparisons inside the condition."""
        out = []
        stack = [self.cond]
        while stack:
            item = stack.pop()
            if isinstance(item, (ast.And, ast.Or)):
                stack.extend(item.parts)
            elif isinstance(item, ast.Compare) and len(compare_labels(item)) > 1:
                out.append(item)
        return out


@dataclass
class Compiled:
    """The result of compilation: the machine, its predicates and the cross-event conditions."""

    machine: automata.Machine
    predicates: PredicateSet
    cross: list[CrossCondition]


def compile_formula(formula: ast.Formula, allow_cross: bool = True) -> Compiled:
    """Compile a formula; raise UnsupportedQueryError for what the engine cannot evaluate."""
    compiler = _Compiler(allow_cross)
    machine = compiler.build(formula)
    return Compiled(machine, compiler.predicates, compiler.cross)


def unary_pred(cond: ast.Cond) -> ast.Pred:
    """A condition on one label as a one-event predicate (labels dropped)."""
    if isinstance(cond, ast.LabelCond):
        return cond.pred
    if isinstance(cond, ast.And):
        return ast.And(tuple(unary_pred(p) for p in cond.parts))
    if isinstance(cond, ast.Or):
        return ast.Or(tuple(unary_pred(p) for p in cond.parts))
    return ast.Compare(cond.op, _strip(cond.left), _strip(cond.right))


def _strip(expr: ast.Expr) -> ast.Expr:
    if isinstance(expr, ast.Attr):
        return ast.Attr(expr.name)
    if isinstance(expr, ast.Neg):
        return ast.Neg(_strip(expr.operand))
    if isinstance(expr, ast.Arith):
        return ast.Arith(expr.op, _strip(expr.left), _strip(expr.right))
    return expr


def compare_labels(compare: ast.Compare) -> tuple[str, ...]:
    """The distinct labels a comparison names, sorted."""
    return tuple(sorted({attr.label for attr in ast.attributes(compare) if attr.label}))


def dnf(cond: ast.Cond) -> list[list[ast.Cond]]:
    """The condition as a disjunction of conjunctions of atoms (LabelCond or Compare)."""
    if isinstance(cond, ast.Or):
        out: list[list[ast.Cond]] = []
        for part in cond.parts:
            out.extend(dnf(part))
    elif isinstance(cond, ast.And):
        out = [[]]
        for part in cond.parts:
            out = [left + right for left in out for right in dnf(part)]
            if len(out) > MAX_DISJUNCTS:
                break
    else:
        out = [[cond]]
    if len(out) > MAX_DISJUNCTS:
        raise UnsupportedQueryError(
            f"a FILTER condition has more than {MAX_DISJUNCTS} alternatives once expanded; "
            "simplify it or move OR inside label[...] predicates"
        )
    return out


class _Compiler:
    def __init__(self, allow_cross: bool) -> None:
        self.counter = automata.Counter()
        self.predicates = PredicateSet()
        self.cross: list[CrossCondition] = []
        self.allow_cross = allow_cross
        self.scopes = 0
        # Cross-event conditions are checked on whole complex events, which is exact only where
        # the filtered sub-formula matches at most once per complex event and is reported.
        self.cross_blocker: str | None = None
        self.iterations: list[list] = []  # enclosing iterations: [end label, has cross conditions]

    def build(self, node: ast.Formula) -> automata.Machine:
        if isinstance(node, ast.EventType):
            return automata.atom(self.counter, node.name)
        if isinstance(node, ast.NotEvent):
            matched = guards.type_is(node.atom.name)
            if node.cond is not None:
                pid = self.predicates.intern(unary_pred(node.cond))
                matched = matched | guards.pred(pid)
            return automata.not_atom(self.counter, matched)
        if isinstance(node, ast.Label):
            return automata.LabelWith(self.build(node.body), node.label)
        if isinstance(node, ast.Iteration):
            self.scopes += 1
            frame = [f"\x00iteration{self.scopes}", False]
            self.iterations.append(frame)
            try:
                body = self.build(node.body)
            finally:
                self.iterations.pop()
            if frame[1]:
                if has_not(node.body):
                    raise UnsupportedQueryError(
                        "a cross-event condition inside an iteration whose body uses NOT(...) is not supported yet "
                        "(the reference evaluator, ceql.reference, evaluates it)"
                    )
                body = automata.MarkEnds(body, frame[0])
            return automata.Iteration(self.counter, body, node.contiguous)
        if isinstance(node, ast.Sequence):
            machine = self.build(node.parts[0])
            for part in node.parts[1:]:
                machine = automata.Sequence(self.counter, machine, self.build(part), node.contiguous)
            return machine
        if isinstance(node, ast.Union_):
            return automata.Union([self.build(part) for part in node.parts])
        if isinstance(node, ast.Conjunction):
            machine = self.build(node.parts[0])
            for part in node.parts[1:]:
                machine = automata.Conjunction(self.counter, machine, self.build(part))
            return machine
        if isinstance(node, ast.AllOf):
            machine = self.build(node.parts[0])
            for part in node.parts[1:]:
                machine = automata.AllOf(self.counter, machine, self.build(part))
            return machine
        if isinstance(node, ast.Unless):
            left = self.build(node.left)
            return automata.Unless(
                self.counter, left, self.build_inside(node.right, "the right side of UNLESS")
            )
        if isinstance(node, ast.Filter):
            return self.build_filter(node)
        raise TypeError(f"unknown formula node {node!r}")

    def build_inside(self, node: ast.Formula, where: str) -> automata.Machine:
        saved = self.cross_blocker
        self.cross_blocker = saved or where
        try:
            return self.build(node)
        finally:
            self.cross_blocker = saved

    def build_filter(self, node: ast.Filter) -> automata.Machine:
        # Conjuncts made of one-label atoms restrict transitions; the others are checked on
        # complex events (whole, so that a disjunction never duplicates a complex event).
        conjuncts = list(node.cond.parts) if isinstance(node.cond, ast.And) else [node.cond]
        unary = [c for c in conjuncts if not _has_cross(c)]
        cross = [c for c in conjuncts if _has_cross(c)]
        alternatives = []
        for conjunction in dnf(ast.And(tuple(unary))) if unary else [[]]:
            required: dict[str, set[int]] = {}
            for atom in conjunction:
                label = atom.label if isinstance(atom, ast.LabelCond) else compare_labels(atom)[0]
                required.setdefault(label, set()).add(self.predicates.intern(unary_pred(atom)))
            machine = self.build(node.body)
            if required:
                machine = automata.Restrict(machine, {k: frozenset(v) for k, v in required.items()})
            alternatives.append(machine)
        machine = alternatives[0] if len(alternatives) == 1 else automata.Union(alternatives)
        if cross:
            if not self.allow_cross:
                raise UnsupportedQueryError("cross-event conditions are not supported by this evaluator")
            if self.cross_blocker:
                raise UnsupportedQueryError(
                    f"a cross-event condition inside {self.cross_blocker} is not supported yet "
                    "(the reference evaluator, ceql.reference, evaluates it)"
                )
            # The events this FILTER applies to get a private label, so that the condition
            # constrains exactly them, wherever the sub-formula sits in the query.
            self.scopes += 1
            scope = f"\x00scope{self.scopes}"
            machine = automata.LabelWith(machine, scope)
            cond = cross[0] if len(cross) == 1 else ast.And(tuple(cross))
            unary_ids = {}
            for atom in _atoms(cond):
                if isinstance(atom, ast.LabelCond) or len(compare_labels(atom)) == 1:
                    unary_ids[id(atom)] = self.predicates.intern(unary_pred(atom))
            group = None
            if self.iterations:
                self.iterations[-1][1] = True
                group = self.iterations[-1][0]
            self.cross.append(CrossCondition(cond, scope, unary_ids, group))
        return machine


def _atoms(cond: ast.Cond) -> list[ast.Cond]:
    out = []
    stack = [cond]
    while stack:
        item = stack.pop()
        if isinstance(item, (ast.And, ast.Or)):
            stack.extend(item.parts)
        else:
            out.append(item)
    return out


def has_not(formula: ast.Formula) -> bool:
    """Whether the formula uses NOT(...) anywhere."""
    stack = [formula]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.NotEvent):
            return True
        stack.extend(ast.children(node))
    return False


def _has_cross(cond: ast.Cond) -> bool:
    return any(isinstance(a, ast.Compare) and len(compare_labels(a)) > 1 for a in _atoms(cond))
