"""Compile a checked query's formula into a machine (automata.py) and its register sites.

A FILTER condition is split into its top-level conjuncts. A conjunct made only of one-event
tests on labels the filtered formula defines (``x[p]``, ``x.a > 5``, and OR of those) restricts
the transitions that report those labels, as in the papers' unary CEL (a disjunction becomes a
union of restricted copies; determinization merges them). Everything else -- comparisons across
labels, aggregates, PREV, NOT over conditions, labels the formula does not define (free labels),
and every PARTITION BY over label attributes or inside a formula -- becomes a *site*, decided on
registers as the events arrive (registers.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ceql.compile import automata, guards
from ceql.compile.predicates import PredicateSet
from ceql.compile.registers import (
    AggregateAtom,
    AggregateRegister,
    AllAtom,
    Atom,
    ConstAtom,
    GroupAtom,
    Home,
    PairAtom,
    Registers,
    Role,
    Site,
    Tracked,
    ValuesAtom,
    private,
)
from ceql.compile.values import compare, compile_expr, expression_nodes, universal_labels
from ceql.errors import UnsupportedQueryError
from ceql.lang import ast
from ceql.lang.multiplicity import label_multiplicity as lang_multiplicity
from ceql.lang.printer import print_cond, print_expr
from ceql.lang.scopes import LabelIndex, cond_labels, labels_anywhere
from ceql.lang.scopes import defined_labels as scope_defined_labels
from ceql.lang.visit import Visitor, walk

MAX_DISJUNCTS = 64


@dataclass
class Compiled:
    """The result of compilation: the machine, its predicates and the register sites."""

    machine: automata.Machine
    predicates: PredicateSet
    sites: list[Site] = field(default_factory=list)
    registers: Registers | None = None
    attributes: list[str] = field(default_factory=list)  # event values the registers read


def compile_query_formula(
    formula: ast.Formula,
    partition_labels: tuple[ast.Attr, ...] = (),
    type_attributes: dict[str, frozenset[str]] | None = None,
) -> Compiled:
    """Compile a formula (and a ``PARTITION BY [x.a, ...]`` clause, a site over the whole
    complex event); raise UnsupportedQueryError for what the engine cannot evaluate."""
    compiler = _Compiler(formula)
    machine = compiler.build(formula)
    if partition_labels:
        machine = compiler.partition_site(machine, formula, partition_labels, top=True, text=None)
    registers = None
    if compiler.sites:
        registers = Registers(compiler.sites, compiler.attributes, compiler.homes, compiler.tracked)
        registers.keys = _index_keys(compiler.sites, compiler.attribute_index)
        registers.key = registers.keys[0] if registers.keys else None
    return Compiled(machine, compiler.predicates, compiler.sites, registers, compiler.attributes)


def unary_pred(cond: ast.Cond) -> ast.Pred:
    """A condition on one label as a one-event predicate (labels dropped)."""
    if isinstance(cond, ast.LabelCond):
        return cond.pred
    if isinstance(cond, ast.And):
        return ast.And(tuple(unary_pred(p) for p in cond.parts))
    if isinstance(cond, ast.Or):
        return ast.Or(tuple(unary_pred(p) for p in cond.parts))
    if isinstance(cond, ast.Not):
        return ast.Not(unary_pred(cond.operand))
    return ast.Compare(cond.op, _strip(cond.left), _strip(cond.right))


def _strip(expr: ast.Expr) -> ast.Expr:
    if isinstance(expr, ast.Attr):
        return ast.Attr(expr.name)
    if isinstance(expr, ast.Neg):
        return ast.Neg(_strip(expr.operand))
    if isinstance(expr, ast.Arith):
        return ast.Arith(expr.op, _strip(expr.left), _strip(expr.right))
    return expr


def compare_labels(compare_node: ast.Compare) -> tuple[str, ...]:
    """The distinct labels a comparison reads outside aggregates, sorted."""
    return tuple(sorted(universal_labels(compare_node)))


def _plain_compare(node: ast.Compare) -> bool:
    """No aggregate and no PREV."""
    return all(isinstance(n, ast.Attr) for n in expression_nodes(node))


def dnf(cond: ast.Cond) -> list[list[ast.Cond]]:
    """A condition without NOT as a disjunction of conjunctions of atoms."""
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


class _Mandatory(Visitor):
    """Labels that every complex event of a formula has at least one event of, and whether
    every complex event has at least one event: (labels, reports)."""

    pass_name = "the mandatory-label analysis"
    families = (ast.CORE_FORMULA_NODES,)

    def visit_EventType(self, node: ast.EventType):
        return {node.name}, True

    def visit_NotEvent(self, node: ast.NotEvent):
        return set(), False

    def visit_Label(self, node: ast.Label):
        labels, reports = self.visit(node.body)
        return (labels | {node.label} if reports else labels), reports

    def _body(self, node):
        return self.visit(node.body)

    visit_Filter = visit_Iteration = visit_PartitionBy = visit_Start = _body

    def visit_Union_(self, node: ast.Union_):
        parts = [self.visit(p) for p in node.parts]
        return set.intersection(*(labels for labels, _ in parts)), all(reports for _, reports in parts)

    def _together(self, node):
        parts = [self.visit(p) for p in node.parts]
        return set().union(*(labels for labels, _ in parts)), any(reports for _, reports in parts)

    visit_Sequence = visit_Conjunction = visit_AllOf = _together

    def visit_Unless(self, node: ast.Unless):
        return self.visit(node.left)

    def visit_Rename(self, node: ast.Rename):
        labels, reports = self.visit(node.body)
        mapping = dict(node.mapping)
        return {mapping.get(label, label) for label in labels}, reports

    def visit_Project(self, node: ast.Project):
        labels, _ = self.visit(node.body)
        kept = labels & set(node.labels)
        return kept, bool(kept)


def defined_labels(formula: ast.Formula) -> set[str]:
    """The labels a formula gives to the events it reports (event types, AS labels, renaming
    targets; not the right side of UNLESS)."""
    return set(scope_defined_labels(formula))


def mandatory_labels(formula: ast.Formula) -> set[str]:
    """Labels that every complex event of the formula has at least one event of."""
    return _Mandatory().visit(formula)[0]


def label_multiplicity(formula: ast.Formula) -> dict[str, int]:
    """For each label, the most events one complex event can give it: 1, or 2 for "several"."""
    return {label: 1 if kind == "one" else 2 for label, kind in lang_multiplicity(formula).items()}


def has_not(formula: ast.Formula) -> bool:
    """Whether the formula uses NOT(...) anywhere (reads events it does not report)."""
    return any(isinstance(node, ast.NotEvent) for node in walk(formula, formulas_only=True))


def _event_types(formula: ast.Formula) -> list[str]:
    return [node.name for node in walk(formula, formulas_only=True) if isinstance(node, ast.EventType)]


@dataclass
class _Frame:
    """A scope being built: the labels its body defines, whether it repeats, and the private
    copies of labels that conditions inside read from it."""

    index: int
    labels: frozenset[str]
    repeated: bool
    depth: int
    requested: dict[str, str] = field(default_factory=dict)
    local: bool = False  # inside an UNLESS right side: its values belong to a run of it


class _Compiler(Visitor):
    """Builds the machine and the register sites of a core formula (quantifiers rewritten)."""

    pass_name = "the compiler"
    families = (ast.CORE_FORMULA_NODES,)

    def __init__(self, root: ast.Formula) -> None:
        self.counter = automata.Counter()
        self.predicates = PredicateSet()
        self.sites: list[Site] = []
        self.attributes: list[str] = []
        self.attribute_index: dict[str, int] = {}
        self.root = root
        self.query_labels = set(labels_anywhere(root))
        self.label_index = LabelIndex()
        self.frames: list[_Frame] = []  # enclosing scopes that may be homes of free labels
        self.frame_count = 0
        self.homes: list[Home] = []
        self.tracked: list[Tracked] = []
        self.root_mandatory = mandatory_labels(root)
        self.multiplicity = label_multiplicity(root)
        # Context of the node being built.
        self.iterated = 0  # enclosing iterations
        self.optional = 0  # enclosing OR branches (a site there may not be in the derivation)
        self.negated = 0  # inside the right side of UNLESS

    # ------------------------------------------------------------------ formulas

    def build(self, node: ast.Formula) -> automata.Machine:
        """The machine of a formula (dispatch: ``visit_<Class>``; an unknown node raises)."""
        return self.visit(node)

    def visit_EventType(self, node: ast.EventType) -> automata.Machine:
        return automata.atom(self.counter, node.name)

    def visit_NotEvent(self, node: ast.NotEvent) -> automata.Machine:
        matched = guards.type_is(node.atom.name)
        if node.cond is not None:
            reads_more = any(isinstance(n, (ast.Aggregate, ast.Prev)) for n in walk(node.cond))
            if reads_more or cond_labels(node.cond) - {node.atom.name}:
                # Other labels, an aggregate or PREV: decided on registers, not per event.
                return self.condition_site(None, node.atom, node.cond, {node.atom.name}, negated_event=True)
            pid = self.predicates.intern(unary_pred(node.cond))
            matched = matched | guards.pred(pid)
        return automata.not_atom(self.counter, matched)

    def visit_Label(self, node: ast.Label) -> automata.Machine:
        return automata.LabelWith(self.build(node.body), node.label)

    def visit_Iteration(self, node: ast.Iteration) -> automata.Machine:
        self.iterated += 1
        try:
            body = self._framed(node.body, True)
        finally:
            self.iterated -= 1
        return automata.Iteration(self.counter, body, node.contiguous)

    def visit_Sequence(self, node: ast.Sequence) -> automata.Machine:
        return automata.Sequence(self.counter, [self.build(p) for p in node.parts], node.contiguous)

    def visit_Union_(self, node: ast.Union_) -> automata.Machine:
        self.optional += 1
        try:
            return automata.Union([self.build(part) for part in node.parts])
        finally:
            self.optional -= 1

    def visit_Conjunction(self, node: ast.Conjunction) -> automata.Machine:
        return automata.Conjunction(self.counter, [self.build(p) for p in node.parts])

    def visit_AllOf(self, node: ast.AllOf) -> automata.Machine:
        return automata.AllOf(self.counter, [self.build(p) for p in node.parts])

    def visit_Unless(self, node: ast.Unless) -> automata.Machine:
        return self.build_unless(node)

    def visit_Filter(self, node: ast.Filter) -> automata.Machine:
        return self.build_filter(node)

    def visit_PartitionBy(self, node: ast.PartitionBy) -> automata.Machine:
        body = self.build(node.body)
        return self.partition_site(body, node.body, node.keys, top=self._top(), text=None)

    def visit_Start(self, node: ast.Start) -> automata.Machine:
        return automata.Start(self.counter, self.build(node.body))

    def visit_Rename(self, node: ast.Rename) -> automata.Machine:
        return automata.Rename(self._framed(node.body, bool(self.iterated)), dict(node.mapping))

    def visit_Project(self, node: ast.Project) -> automata.Machine:
        return automata.Project(self._framed(node.body, bool(self.iterated)), frozenset(node.labels))

    def build_unless(self, node: ast.Unless) -> automata.Machine:
        """``f UNLESS g``. When g has no condition that needs registers, g is tracked in the
        automaton's states (symbolic); otherwise by the registers (``Tracked``). Conditions in g
        read labels g defines from g's complex event, then labels of f from f's."""
        left_frame = _Frame(self.frame_count, self.label_index.defined(node.left), bool(self.iterated), len(self.frames))
        self.frame_count += 1
        left = self.build(node.left)
        sites_before = len(self.sites)
        frames_before = self.frame_count
        right_frame = _Frame(self.frame_count, self.label_index.defined(node.right), False, len(self.frames) + 1)
        right_frame.local = True
        self.frame_count += 1
        saved = (self.iterated, self.optional)
        self.iterated = self.optional = 0  # conditions in g are read per run of g
        self.negated += 1
        self.frames += [left_frame, right_frame]
        try:
            right = self.build(node.right)
        finally:
            del self.frames[-2:]
            self.negated -= 1
            self.iterated, self.optional = saved
        inner_sites = self.sites[sites_before:]
        if not inner_sites:
            return automata.Unless(self.counter, left, right)
        if self.negated:
            raise UnsupportedQueryError(
                "a condition across events inside the right side of an UNLESS that is itself inside "
                "the right side of an UNLESS is not supported"
            )
        if right_frame.requested:
            right = automata.ScopeLabels(right, dict(right_frame.requested), None)
        if left_frame.requested:
            left = automata.ScopeLabels(left, dict(left_frame.requested), None)
            if left_frame.repeated:
                end = f"\x00H{left_frame.index}:end"
                left = automata.MarkEnds(left, end)
                self.homes.append(Home(left_frame.index, end, left_frame.depth))
        number = len(self.tracked)
        labels = {name: f"\x00U{number}:{name}" for name in ("start", "tick", "rep", "end")}
        right_types = None if has_not(node.right) else frozenset(_event_types(node.right))
        machine = automata.UnlessTracked(self.counter, left, labels, right_types)
        frames = frozenset({right_frame.index} | set(range(frames_before, self.frame_count)))
        self.tracked.append(Tracked(number, labels, inner_sites, frames, machine=right, left_frame=left_frame.index))
        return machine

    def _framed(self, body: ast.Formula, repeated: bool) -> automata.Machine:
        """Build a scope's body (an iteration's, a renaming's, a projection's): a free label that
        a condition inside reads and the body defines is read from the body's complex event,
        per instance when the scope repeats."""
        frame = _Frame(self.frame_count, self.label_index.defined(body), repeated, len(self.frames))
        self.frame_count += 1
        self.frames.append(frame)
        try:
            machine = self.build(body)
        finally:
            self.frames.pop()
        if frame.requested:
            machine = automata.ScopeLabels(machine, dict(frame.requested), None)
            if repeated:
                end = f"\x00H{frame.index}:end"
                machine = automata.MarkEnds(machine, end)
                self.homes.append(Home(frame.index, end, frame.depth))
        return machine

    def _free_role(self, label: str) -> Role:
        """Where a free label is read: the nearest enclosing scope that defines it, else the
        whole complex event."""
        for frame in reversed(self.frames):
            if label in frame.labels:
                event_label = frame.requested.setdefault(label, f"\x00H{frame.index}:{label}")
                home = frame.index if frame.repeated or frame.local else None
                return Role(label, event_label, False, home)
        return Role(label, label, False)

    def _top(self) -> bool:
        """Whether a site here has exactly one instance in every derivation of a complex event
        (inside an UNLESS right side: of a run of it)."""
        return not (self.iterated or self.optional)

    def build_filter(self, node: ast.Filter) -> automata.Machine:
        own = defined_labels(node.body)
        conjuncts = list(node.cond.parts) if isinstance(node.cond, ast.And) else [node.cond]
        restricting = [c for c in conjuncts if self._restricts(c, own)]
        rest = [c for c in conjuncts if not self._restricts(c, own)]
        alternatives = []
        for conjunction in dnf(ast.And(tuple(restricting))) if restricting else [[]]:
            required: dict[str, set[int]] = {}
            for atom in conjunction:
                label = atom.label if isinstance(atom, ast.LabelCond) else compare_labels(atom)[0]
                required.setdefault(label, set()).add(self.predicates.intern(unary_pred(atom)))
            # Each alternative is a copy of the body, and sites inside a copy belong to that
            # alternative only (an OR branch).
            copies = len(alternatives) > 0 or (restricting and len(dnf(ast.And(tuple(restricting)))) > 1)
            if copies:
                self.optional += 1
            try:
                machine = self.build(node.body)
            finally:
                if copies:
                    self.optional -= 1
            if required:
                machine = automata.Restrict(machine, {k: frozenset(v) for k, v in required.items()})
            alternatives.append(machine)
        machine = alternatives[0] if len(alternatives) == 1 else automata.Union(alternatives)
        if rest:
            cond = rest[0] if len(rest) == 1 else ast.And(tuple(rest))
            machine = self.condition_site(machine, node.body, cond, own)
        return machine

    def _restricts(self, cond: ast.Cond, own: set[str]) -> bool:
        """Whether a conjunct is made of one-event tests on own labels (AND/OR, no NOT)."""
        for atom in _atoms_no_not(cond):
            if atom is None:
                return False
            if isinstance(atom, ast.LabelCond):
                if atom.label not in own:
                    return False
                continue
            if not _plain_compare(atom):
                return False
            labels = compare_labels(atom)
            if len(labels) != 1 or labels[0] not in own:
                return False
        return True

    # ------------------------------------------------------------------ sites

    def _attribute(self, name: str) -> int:
        index = self.attribute_index.get(name)
        if index is None:
            index = len(self.attributes)
            self.attribute_index[name] = index
            self.attributes.append(name)
        return index

    def _value_fn(self, expr: ast.Expr):
        """A closure over one event's value tuple (labels ignored); tagged with the expression
        text (and, for a plain attribute, its index) so that equal sides can be recognised."""

        def resolve(node: ast.Node):
            if not isinstance(node, ast.Attr):
                raise UnsupportedQueryError("an aggregate or PREV cannot be read from one event")
            index = self._attribute(node.name)
            return lambda values: values[index]

        fn = compile_expr(expr, resolve)
        fn.__ceql_key__ = print_expr(_strip(expr))  # type: ignore[attr-defined]
        if isinstance(expr, ast.Attr):
            fn.__ceql_attribute__ = self._attribute(expr.name)  # type: ignore[attr-defined]
        return fn

    def _new_site_index(self) -> int:
        return len(self.sites)

    def condition_site(
        self,
        machine: automata.Machine | None,
        body: ast.Formula,
        cond: ast.Cond,
        own: set[str],
        negated_event: bool = False,
    ) -> automata.Machine:
        """A site for ``body FILTER cond`` (``machine`` is body's); with ``negated_event``, for
        ``NOT(E FILTER cond)``: the read of an E event is allowed only if cond does not hold."""
        index = self._new_site_index()
        labels = cond_labels(cond)
        missing = labels - self.query_labels - set(own)
        if missing:
            raise UnsupportedQueryError(f"label {sorted(missing)[0]} is not defined in the query")
        roles: dict[str, Role] = {}
        for label in sorted(labels):
            if label in own:
                roles[label] = Role(label, private(index, label), True)
            else:
                roles[label] = self._free_role(label)
        site_atoms: list[Atom] = []
        aggregates: dict[ast.Aggregate, AggregateRegister] = {}
        star = private(index, "*")
        uses_star = False
        body_mandatory = mandatory_labels(body)

        def mandatory(label: str) -> bool:
            return label in body_mandatory if label in own else label in self.root_mandatory

        def aggregate_register(node: ast.Aggregate) -> AggregateRegister:
            nonlocal uses_star
            found = aggregates.get(node)
            if found is None:
                if node.label is None:
                    uses_star = True
                    role, event_label = None, star
                else:
                    role = roles[node.label]
                    event_label = role.event_label
                attribute = self._attribute(node.attr) if node.attr else None
                found = AggregateRegister(node, role, event_label, attribute)
                aggregates[node] = found
            return found

        def atom_for(item: ast.Cond) -> Atom:
            if isinstance(item, ast.LabelCond):
                return AllAtom(roles[item.label], self.predicates.intern(item.pred))
            nodes = expression_nodes(item)
            has_aggregate = any(isinstance(n, ast.Aggregate) for n in nodes)
            has_prev = any(isinstance(n, ast.Prev) for n in nodes)
            universal = compare_labels(item)
            if not has_aggregate and not has_prev:
                if not universal:
                    value = compile_expr(item.left, lambda n: None), compile_expr(item.right, lambda n: None)
                    return ConstAtom(compare(item.op, value[0](None), value[1](None)))
                if len(universal) == 1:
                    return AllAtom(roles[universal[0]], self.predicates.intern(unary_pred(item)))
                left, right = universal_labels(item.left), universal_labels(item.right)
                if len(left) == 1 and len(right) == 1 and left != right:
                    (a,), (b,) = left, right
                    return PairAtom(item.op, roles[a], self._value_fn(item.left), roles[b], self._value_fn(item.right))
            registers = {n: aggregate_register(n) for n in nodes if isinstance(n, ast.Aggregate)}
            if not universal and not has_prev:
                return AggregateAtom(item, registers)
            attribute_index = {}
            for n in nodes:
                if isinstance(n, ast.Attr):
                    attribute_index[n.name] = self._attribute(n.name)
                elif isinstance(n, ast.Prev):
                    attribute_index[n.attr] = self._attribute(n.attr)
            used = {n.label for n in nodes if isinstance(n, (ast.Attr, ast.Prev)) and n.label}
            return ValuesAtom(item, {label: roles[label] for label in sorted(used)}, attribute_index, registers)

        def tree_for(item: ast.Cond):
            if isinstance(item, ast.And):
                return ("and", tuple(tree_for(p) for p in item.parts))
            if isinstance(item, ast.Or):
                return ("or", tuple(tree_for(p) for p in item.parts))
            if isinstance(item, ast.Not):
                return ("not", tree_for(item.operand))
            site_atoms.append(atom_for(item))
            return ("atom", len(site_atoms) - 1)

        tree = tree_for(cond)
        if negated_event:
            (label,) = own
            end = private(index, "end")
            # The event read carries the private labels the check reads: E's copy, and '*'
            # (COUNT(*) in NOT(E FILTER c) counts E's one event, not the whole complex event).
            marks = {end} | ({roles[label].event_label} if label in roles else set()) | ({star} if uses_star else set())
            machine = automata.NotWithRegisters(self.counter, guards.type_is(label), frozenset(marks))
            return self._finish_site(
                machine, index, "NOT " + print_cond(cond), site_atoms, ("not", tree), list(aggregates.values()),
                roles, star if uses_star else None, False, end_label=end, source=ast.Not(cond),
            )
        conjunctive = _conjunctive(tree, site_atoms)
        if conjunctive:
            site_atoms = _group_equalities(site_atoms, mandatory)
            tree = ("and", tuple(("atom", i) for i in range(len(site_atoms))))
            # Across instances, a comparison with a free label is universal over the union of
            # the instances only when it reads one own label.
            for atom in site_atoms:
                own_roles = [r for r in atom.roles if r.own]
                if len(own_roles) > 1 and any(not r.own for r in atom.roles):
                    conjunctive = False
        return self._finish_site(
            machine, index, print_cond(cond), site_atoms, tree, list(aggregates.values()), roles,
            star if uses_star else None, conjunctive, source=cond,
        )

    def partition_site(
        self,
        machine: automata.Machine,
        body: ast.Formula,
        keys: tuple[ast.Attr, ...],
        top: bool,
        text: str | None,
    ) -> automata.Machine:
        """``f PARTITION BY [a]`` / ``[x.a, y.b]``: one common value over the designated events."""
        index = self._new_site_index()
        own = defined_labels(body)
        star = private(index, "*")
        roles: dict[str, Role] = {}
        members = []
        uses_star = False
        for key in keys:
            fn = self._value_fn(ast.Attr(key.name))
            if key.label is None:
                uses_star = True
                members.append((Role("*", star, True), fn))
                continue
            if key.label not in roles:
                if key.label in own:
                    roles[key.label] = Role(key.label, private(index, key.label), True)
                else:
                    roles[key.label] = self._free_role(key.label)
            members.append((roles[key.label], fn))
        atom = GroupAtom(members)
        if text is None:
            text = "PARTITION BY [" + ", ".join((k.label + "." if k.label else "") + k.name for k in keys) + "]"
        saved = (self.iterated, self.optional, self.negated)
        if top:
            self.iterated = self.optional = self.negated = 0
        try:
            return self._finish_site(
                machine, index, text, [atom], ("atom", 0), [], roles, star if uses_star else None, True, source=keys
            )
        finally:
            self.iterated, self.optional, self.negated = saved

    def _finish_site(
        self,
        machine: automata.Machine,
        index: int,
        text: str,
        site_atoms: list[Atom],
        tree,
        aggregates: list[AggregateRegister],
        roles: dict[str, Role],
        star: str | None,
        conjunctive: bool,
        end_label: str | None = None,
        source=None,
    ) -> automata.Machine:
        """Register the site; wrap the machine with the private labels it reads (unless
        ``end_label`` is given: the machine already carries them)."""
        own_roles = {label: role for label, role in roles.items() if role.own}
        free_roles = {label: role for label, role in roles.items() if not role.own}
        if any(role.home is not None for role in free_roles.values()):
            conjunctive = False  # read per instance of a repeated scope: decided on snapshots
        top = self._top()
        prewired = end_label is not None
        if prewired:
            top = False
        else:
            needs_end = not top and (self.iterated or not conjunctive or bool(free_roles))
            end_label = private(index, "end") if needs_end else None
        single_free = frozenset(label for label in free_roles if self.multiplicity.get(label, 2) <= 1)
        if conjunctive:
            where = "as the events arrive"
        elif top or free_roles:
            where = "when the complex event is reported (before: as soon as it can no longer hold)"
        else:
            where = "when the filtered formula ends (before: as soon as it can no longer hold)"
        site = Site(
            index=index,
            text=text,
            atoms=site_atoms,
            tree=tree,
            aggregates=aggregates,
            own_roles=own_roles,
            free_roles=free_roles,
            star_label=star,
            end_label=end_label,
            top=top,
            single_free=single_free,
            conjunctive=conjunctive,
            where=where,
            source=source,
        )
        self.sites.append(site)
        if prewired:
            return machine
        copies = {label: role.event_label for label, role in own_roles.items() if label != "*"}
        if copies or star:
            machine = automata.ScopeLabels(machine, copies, star)
        if end_label:
            machine = automata.MarkEnds(machine, end_label)
        return machine


def _atoms_no_not(cond: ast.Cond):
    stack = [cond]
    while stack:
        item = stack.pop()
        if isinstance(item, (ast.And, ast.Or)):
            stack.extend(item.parts)
        elif isinstance(item, ast.Not):
            yield None
        else:
            yield item


def _conjunctive(tree, site_atoms: list[Atom]) -> bool:
    """An AND of monotone atoms (decided as events arrive, nothing left for later)."""
    if tree[0] == "atom":
        return site_atoms[tree[1]].monotone
    if tree[0] == "and":
        return all(_conjunctive(part, site_atoms) for part in tree[1])
    return False


def _group_equalities(site_atoms: list[Atom], mandatory) -> list[Atom]:
    """In an AND, equalities ``x.a = y.b`` between labels that every instance has become one
    common value over all their events (the PART-BY reading), which later events can look up."""
    groups: list[list] = []
    rest: list[Atom] = []
    for atom in site_atoms:
        if (
            isinstance(atom, PairAtom)
            and atom.op == "="
            and all(mandatory(role.label) for role in atom.roles)
        ):
            members = [(atom.roles[0], atom.fns[0]), (atom.roles[1], atom.fns[1])]
            keys = {_member_key(m) for m in members}
            joined = [g for g in groups if keys & {_member_key(m) for m in g}]
            merged = [m for g in joined for m in g] + members
            groups = [g for g in groups if g not in joined] + [merged]
        else:
            rest.append(atom)
    out = [GroupAtom(_dedupe(g)) for g in groups]
    return out + rest


def _member_key(member) -> tuple:
    role, fn = member
    return (role.event_label, getattr(fn, "__ceql_key__", id(fn)))


def _dedupe(members: list) -> list:
    seen = set()
    out = []
    for member in members:
        key = _member_key(member)
        if key not in seen:
            seen.add(key)
            out.append(member)
    return out


def _index_keys(sites: list[Site], attribute_index: dict[str, int]) -> tuple:
    """The register slots to index run classes by: every common value (GroupAtom) that the
    transitions reporting its labels must match, so that an event only visits the classes
    whose values it can extend. Each key is ``(slot, {event label: attribute index},
    started slot)``."""
    keys = []
    for site in sites:
        if not site.conjunctive:
            continue
        for atom in site.atoms:
            if isinstance(atom, GroupAtom) and all(role.own for role in atom.roles):
                attrs = {}
                for role, fn in atom.members:
                    attribute = getattr(fn, "__ceql_attribute__", None)
                    if attribute is None:
                        break
                    attrs.setdefault(role.event_label, attribute)
                else:
                    keys.append((atom.slot, attrs, site.started_slot))
    return tuple(keys)
