"""Checks the kernel applies to each enumerated complex event, column-wise, instead of keeping
register values per run: the plan decides at compile time whether they are exact and cheap.

- **Conditions across events with one instance per derivation.** A FILTER condition (or a
  PARTITION BY over labels, or inside a formula) that is neither under an iteration nor in an
  OR branch, nor inside UNLESS's right side (below), is decided once per derivation of a complex
  event, on that derivation's events: the automaton's transitions carry the labels it
  reads (private copies of the filtered formula's own labels and of its '*', and its free
  labels). The kernel runs the automaton without registers, so it enumerates every derivation
  of every candidate, and checks each condition on them with its labels so renamed
  (columns.py); then drops the repeats of a complex event that several derivations report.
  Every candidate is enumerated (ANY, NEXT, LAST, MAX and LIMIT apply after the check); with
  CONSUME BY, the kernel hands each trigger's candidates to the check before it consumes (only
  if some pass), so it stays exact. Used when the candidates are few (a contiguous pattern:
  ``:`` and ``:+`` only, at most one candidate per start event; or a window with no iteration
  that can skip events), and on any pattern with strategy ALL and no LIMIT, whose twin without
  the condition enumerates the same candidates. With ANY or LIMIT the enumeration is lazy
  (runner.py's ``_enough``): a trigger pauses every so many candidates and ends once enough
  pass, so it does not enumerate every candidate to keep a few. NEXT and LAST with checks on
  patterns with many candidates are *ranked*: the kernel enumerates each trigger's candidates
  best support first (compiled ``_rank_enumerate``) and the enumeration ends once the best
  that passes is out; MAX with checks on such patterns stays on the Python path (a passing
  candidate is maximal only if no larger passing one contains it: every one would be checked).
  ``NOT(E FILTER c)`` with c reading other
  labels has one instance per E event it reads (under a private label, with its end label):
  the check is ``NOT (c)`` on that event, its free labels read from the whole complex event.
- **NEXT, LAST, MAX** with no other check on patterns with many candidates (MAX on any
  pattern: comparing k candidates pairwise costs k**2): the kernel chooses
  each trigger's best support (NEXT, LAST: compiled ``_choose``) or maximal supports (MAX:
  compiled ``_choose_max``, an antichain per node) over its tECS, memoised per node, and
  enumerates only the complex events with those supports. With checks (conditions, STRICT, a
  double window), on patterns with few candidates: chosen among each trigger's complex events
  by their supports (compiled ``select_supports``); NEXT and LAST on many candidates: ranked
  (above).
- **UNLESS with a one-event right side** whose conditions read other labels (``f UNLESS (D AS
  d FILTER d.n = a.n)``, with PARTITION BY keys, or an OR / AND of such events): the automaton
  marks f's events and the D events of f's span with the compiler's labels; each (complex
  event, D event) pair is checked column-wise, per alternative of g (an OR's branches), and a
  complex event is dropped iff one holds (``RightEvent``, ``right_event_hits``). A right side
  that is a sequence of such events (``D AS d ; B AS e FILTER e.n = a.n``) is checked on each
  choice of increasing events of its steps' types in the span (``RightEvent.steps``).
- **What only registers decide** (other right sides of UNLESS of several events, an UNLESS
  with conditions under an iteration, renaming or projection, labels of an enclosing scope):
  the register programs replayed on each enumerated derivation (replay.py, ``replay``).
- **Windows over a double attribute**: the kernel runs a looser integer window and each
  complex event is checked exactly (``windows.py``).
- **STRICT over NOT(...) or ALL**: a complex event is kept iff its events are consecutive in
  its (sub-)stream, checked on each one from the events' indexes in their sub-stream (as the
  Python path does).
- **Repeats**: when several runs may derive one complex event, the copies a trigger reports are
  dropped (by positions and reported labels), as the Python path does.
"""

from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass, field

import numpy as np

from ceql.compile.plan import Plan
from ceql.compile.predicates import PredicateSet
from ceql.lang import ast
from ceql.lang.scopes import defined_labels
from ceql.lang.visit import walk

#: Key under which a plan caches its PostFilter (or the reason it has none).
_CACHE = "_kernel_post_filter"
#: Kept values: whether an event is of the types of an UNLESS's right side (RightEvent), by number.
RIGHT = "\x00right"
#: explain's note for patterns without a small bound on their candidates.
MANY = "many candidates: each trigger's are all enumerated, as the pattern without the check enumerates them"


@dataclass
class PostFilter:
    """What the kernel checks per complex event, and the plan it runs to enumerate them."""

    plan: Plan  # the plan the kernel runs
    condition: ast.Cond | None = None  # over the whole complex event
    groups: list[tuple[ast.Attr, ...]] = field(default_factory=list)  # PARTITION BY keys: one common value
    strict: bool = False  # STRICT: consecutive in the (sub-)stream
    distinct: bool = False  # drop repeats of a complex event per trigger
    predicates: PredicateSet | None = None  # x[p] inside the condition: one-event predicates
    #: Conditions (or PARTITION BY keys) with one instance per iteration or OR branch taken:
    #: checked on each instance of the filtered formula (the events between two of its ends).
    instances: list[Instanced] = field(default_factory=list)
    select: str | None = None  # NEXT, LAST or MAX: chosen among each trigger's complex events
    #: NEXT / LAST chosen by the kernel over its tECS (nothing else is checked per match).
    in_kernel: bool = False
    #: NEXT / LAST with checks on many candidates: the kernel enumerates each trigger's best
    #: support first (compiled ``_rank_enumerate``) and stops at the first that passes.
    ranked: bool = False
    window: int | None = None  # WITHIN n over a double attribute: checked exactly (windows.py)
    #: ``f UNLESS (E AS e FILTER c)`` with c reading f's labels: checked per complex event.
    unless: tuple[RightEvent, ...] = ()
    #: The register programs replayed on each enumerated derivation (replay.py): the checks
    #: no column-wise form decides (a right side of UNLESS of several events, labels of a
    #: repeated scope). Every condition is then decided by the replay.
    replay: bool = False
    notes: list[str] = field(default_factory=list)  # what is checked, for explain

    @property
    def per_match(self) -> bool:
        """Whether some complex events may be dropped after the enumeration."""
        return (
            self.condition is not None
            or bool(self.groups)
            or self.strict
            or bool(self.instances)
            or self.select is not None
            or self.window is not None
            or bool(self.unless)
            or self.replay
        )


@dataclass(frozen=True)
class RightEvent:
    """The right side of ``f UNLESS g`` where g is one event with conditions (``E AS e FILTER
    c``, c reading other labels): a complex event is dropped iff some event of g's types in the
    span of f's sub-complex event (the automaton labels them ``tick``) makes c true on the
    complex event that c reads: f's events (``rep``) less g's labels, the other events less
    f's and g's labels (labels read from the whole complex event), and that event under g's
    labels."""

    tick: str  # the compiler's label on the events g reads, from f's first event to its last
    rep: str  # the compiler's label on the events f reports
    types: frozenset[str]  # g's event types
    labels: frozenset[str]  # the labels g's event carries (its type and its AS labels)
    left: frozenset[str]  # the labels f defines (g reads them from f's complex event)
    condition: ast.Cond | None  # g's conditions, ANDed (None: only PARTITION BY keys)
    column: str = ""  # the kept column of whether an event is of g's types
    #: PARTITION BY keys inside g, over g's one event (those of its labels): one common value.
    groups: tuple[tuple[ast.Attr, ...], ...] = ()
    #: Every label g defines (all its OR branches): read from g's complex event, never from f's.
    defined: frozenset[str] = frozenset()
    #: g a sequence of one-event steps: the steps after the first (types, labels, kept column).
    after: tuple[tuple[frozenset[str], frozenset[str], str], ...] = ()

    @property
    def steps(self) -> tuple[tuple[frozenset[str], frozenset[str], str], ...]:
        """g's events in sequence order: (types, labels, the kept column of being of those types)."""
        return ((self.types, self.labels, self.column),) + self.after


class RightCheck:
    """g's checks on the derived batch of (complex event, g event) pairs (``right_event_hits``):
    its conditions and its PARTITION BY keys, per pair."""

    def __init__(self, right: RightEvent, predicate=None) -> None:
        from ceql.runtime.kernel.columns import Conditions

        self.right = right
        self.conditions = Conditions(right.condition, predicate) if right.condition is not None else None

    def attributes(self) -> list[str]:
        names = self.conditions.attributes() if self.conditions is not None else []
        for keys in self.right.groups:
            names += [key.name for key in keys if key.name not in names]
        return names

    def holds(self, frame) -> np.ndarray:
        from ceql.runtime.kernel.columns import group_holds

        out = self.conditions.holds(frame) if self.conditions is not None else np.ones(frame.n, dtype=bool)
        for keys in self.right.groups:
            out &= group_holds(frame, keys)
        return out


@dataclass
class Instanced:
    """A condition (or keys) of a site with several instances per derivation: its instances
    end at events labelled ``end``; ``own`` are the labels of its own events, ``free`` those
    read from the whole complex event."""

    source: ast.Cond | tuple[ast.Attr, ...]
    end: str
    own: frozenset[str]
    free: frozenset[str]


def post_filter(plan: Plan) -> PostFilter | str | None:
    """The per-complex-event checks the kernel needs for this plan: None when it needs none, a
    PostFilter, or the reason the plan stays on the Python path (a string)."""
    cached = plan.__dict__.get(_CACHE, _CACHE)
    if cached is _CACHE:
        cached = plan.__dict__[_CACHE] = _with_window(plan, _decide(plan))
    return cached


def _with_window(plan: Plan, decided: PostFilter | str | None) -> PostFilter | str | None:
    """A window over a double attribute: the kernel runs a looser integer window and each
    complex event is checked exactly (windows.py)."""
    from ceql.runtime.kernel.windows import inexact_window

    window = inexact_window(plan)
    if window is None or isinstance(decided, str):
        return decided
    post = decided if decided is not None else PostFilter(plan)
    if post.in_kernel and few_candidates(plan.formula, plan) is None:
        # The kernel's looser window would choose among complex events the exact one drops:
        # ranked, each candidate is checked in the exact window (MAX: every one would be).
        if not _rankable(plan, post.select):
            return f"strategy {post.select} on a pattern with many candidates and a window over a double attribute"
        post.ranked = True
        chosen = f"strategy {post.select} chosen among each trigger's complex events"
        post.notes[:] = [
            f"{chosen} ({_RANKED_NOTE.format(post.select)})" if note.startswith(f"strategy {post.select}:") else note
            for note in post.notes
        ]
    post.in_kernel = False
    post.window = window
    post.notes.append(
        f"WITHIN {window} over a double attribute: the kernel's window is over floor(value) and one wider, "
        "and each complex event is checked exactly"
    )
    return post


def _decide(plan: Plan) -> PostFilter | str | None:
    repeats = plan.repeats and plan.strategy != "ANY"
    select = plan.strategy if plan.strategy in ("NEXT", "LAST", "MAX") else None
    # Every candidate is enumerated and checked column-wise. On a pattern with many candidates
    # that costs what the twin query without the check costs only when the twin enumerates
    # them all too (strategy ALL, no LIMIT); NEXT, LAST, MAX, ANY and LIMIT pick few of them,
    # and enumerating all would cost exponentially more there.
    bounded = few_candidates(plan.formula, plan)
    # NEXT, LAST and MAX alone are chosen over the kernel's tECS where the candidates are many
    # (few are cheaper to enumerate and compare: select_supports), and MAX always: comparing a
    # trigger's k candidates pairwise costs k**2 (``A ; B`` under a long window: k = the A's);
    # not with CONSUME BY there, which consume.py applies after the kernel, before the strategy.
    alone = select is not None and plan.registers is None and not plan.strict_filter
    in_kernel = alone and (bounded is None or select == "MAX" and plan.consume == "NONE")
    # With checks, NEXT and LAST enumerate each trigger's candidates best support first and
    # stop at the first that passes (ranked); MAX would have to check every candidate.
    ranked = bounded is None and select is not None and not in_kernel and _rankable(plan, select)
    if bounded is None:
        if select is not None and not in_kernel and not ranked:
            return f"strategy {select} on a pattern with many candidates"
        # (ANY and LIMIT: the kernel enumerates lazily and stops once enough pass.)
        bounded = _RANKED_NOTE.format(select) if ranked else MANY
    if plan.registers is None:
        if not plan.strict_filter and not repeats and select is None:
            return None
        post = PostFilter(
            plan, strict=plan.strict_filter, distinct=repeats, select=select, in_kernel=in_kernel, ranked=ranked
        )
        if in_kernel:
            chosen = "maximal supports" if select == "MAX" else "best support"
            post.notes.append(f"strategy {select}: each trigger's {chosen} chosen over the tECS")
        elif select is not None:
            post.notes.append(f"strategy {select} chosen among each trigger's complex events ({bounded})")
        if plan.strict_filter:
            post.notes.append("STRICT: each complex event's events are checked to be consecutive in its sub-stream")
        if repeats:
            post.notes.append("repeats of a complex event dropped per trigger")
        return post
    # Conditions across events: each has one instance in every derivation of a complex event,
    # so it can be checked on each enumerated derivation (the automaton's transitions carry
    # the labels it reads: its own labels' private copies, its free labels, its '*').
    registers = plan.registers
    unless: tuple[RightEvent, ...] = ()
    if registers.tracked:
        found = right_events(plan)
        if isinstance(found, str):
            return _replayed(plan, select, bounded, found)
        unless = found
    inner = {id(site) for u in registers.tracked for site in u.sites}
    conditions: list[ast.Cond] = []
    groups: list[tuple[ast.Attr, ...]] = []
    instances: list[Instanced] = []
    for site in registers.all_sites:
        if id(site) in inner:
            continue  # g's conditions: checked per complex event and event of g (RightEvent)
        if site.source is None:
            return "a condition site without its source (registers)"  # pragma: no cover
        if any(role.home is not None for role in site.free_roles.values()):
            return _replayed(plan, select, bounded, "conditions across events on labels of a repeated scope")
        roles = {**site.free_roles, **site.own_roles}
        if isinstance(site.source, tuple):
            source: ast.Node = tuple(_relabel_key(key, roles, site.star_label) for key in site.source)
        else:
            source = _relabel(site.source, roles, site.star_label)
        if not site.top and site.end_label is not None:
            # One instance per iteration (or per OR branch taken): checked on each.
            own = {role.event_label for role in site.own_roles.values()} | {site.end_label}
            if site.star_label is not None:
                own.add(site.star_label)
            free = frozenset(role.event_label for role in site.free_roles.values())
            instances.append(Instanced(source, site.end_label, frozenset(own), free))
        elif isinstance(source, tuple):
            groups.append(source)
        else:
            # One instance (or, in an OR branch, a universal condition on its events: true
            # when the branch is not taken).
            conditions.append(source)
    condition = _and(conditions) if conditions else None
    predicates = None
    read = [condition] + [i.source for i in instances if not isinstance(i.source, tuple)]
    read += [right.condition for right in unless if right.condition is not None]
    if any(isinstance(n, ast.LabelCond) for c in read if c is not None for n in walk(c)):
        predicates = PredicateSet()
        predicates.int_types = plan.catalog.int_types if plan.catalog is not None else {}
        for c in read:
            for node in walk(c) if c is not None else ():
                if isinstance(node, ast.LabelCond):
                    predicates.intern(node.pred)
    post = PostFilter(
        plan,
        condition=condition,
        groups=groups,
        strict=plan.strict_filter,
        distinct=plan.repeats and plan.strategy != "ANY",
        predicates=predicates,
        instances=instances,
        select=select,
        unless=unless,
        ranked=ranked,
    )
    if conditions or groups or instances:
        post.notes.append(f"conditions across events checked on each complex event after the enumeration ({bounded})")
    for right in unless:
        steps = " then ".join(", ".join(sorted(types)) for types, _, _ in right.steps)
        post.notes.append(
            f"UNLESS: each complex event of the left side is checked against the events of {steps} in its "
            "span (the right side's condition on each choice of them)"
        )
    if plan.strict_filter:
        post.notes.append("STRICT: each complex event's events are checked to be consecutive in its sub-stream")
    if post.distinct:
        post.notes.append("repeats of a complex event dropped per trigger")
    return post


def _replayed(plan: Plan, select: str | None, bounded: str, why: str) -> PostFilter:
    """The checks no column-wise form decides, by the Python path's own register programs
    replayed on each derivation the kernel enumerates (replay.py): exact, as every derivation
    of every candidate is enumerated (``bounded`` says why that costs what the twin costs)."""
    post = PostFilter(
        plan,
        strict=plan.strict_filter,
        distinct=plan.repeats and plan.strategy != "ANY",
        select=select,
        replay=True,
    )
    reason = why.removesuffix(" (registers)")
    post.notes.append(
        f"conditions across events decided by the register programs replayed on each enumerated derivation "
        f"({reason}; {bounded})"
    )
    if select is not None:
        post.notes.append(f"strategy {select} chosen among each trigger's complex events ({bounded})")
    if plan.strict_filter:
        post.notes.append("STRICT: each complex event's events are checked to be consecutive in its sub-stream")
    if post.distinct:
        post.notes.append("repeats of a complex event dropped per trigger")
    return post


_RANKED_NOTE = "many candidates: {} enumerates each trigger's best support first and stops at the first that passes"


def _rankable(plan: Plan, select: str | None) -> bool:
    """Whether NEXT / LAST may be ranked over the kernel's tECS: its supports are those the
    strategy compares, so no event is reported only under the compiler's own labels (the
    event a NOT(E FILTER c) reads, UNLESS's right-side events)."""
    if select not in ("NEXT", "LAST"):
        return False
    if plan.registers is not None and plan.registers.tracked:
        return False
    return not any(isinstance(node, ast.NotEvent) for node in walk(plan.formula, formulas_only=True))


#: Formulas above an UNLESS the kernel checks per complex event: each keeps the events and
#: labels of its operands (no iteration re-choosing labels, no renaming or projection).
_ABOVE = (ast.Sequence, ast.Union_, ast.Conjunction, ast.AllOf, ast.Filter, ast.Label, ast.PartitionBy, ast.Start)


def right_events(plan: Plan) -> tuple[RightEvent, ...] | str:
    """The UNLESS the registers track, when the kernel checks them per complex event: each
    under sequences, OR, AND, ALL, FILTER, AS, PARTITION BY, START and UNLESS's left side only
    (not in an iteration, a renaming or a projection), its right side one event (``E`` under
    ``AS``, ``FILTER``, ``PARTITION BY``; OR and AND of such). Else the reason the plan stays
    on the Python path."""
    registers = plan.registers
    assert registers is not None
    every: list[tuple[ast.Unless, bool]] = []  # each UNLESS, and whether no blocking scope encloses it
    stack: list[tuple[ast.Node, bool]] = [(plan.formula, True)]
    while stack:
        node, open_ = stack.pop()
        if isinstance(node, ast.Unless):
            every.append((node, open_))
            stack.append((node.left, open_))  # (conditions inside g's own UNLESS: refused by the compiler)
            continue
        for child in _children(node):
            stack.append((child, open_ and isinstance(node, _ABOVE)))
    out = []
    for u in registers.tracked:
        # The tracked UNLESS is the one whose right side holds its sites' conditions.
        # (A site's source is its FILTER's condition, or a conjunct of it, or a copy: compared
        # by value. The same condition in several right sides leaves the owner unknown, unless
        # those UNLESS are equal and all open: each then has the same check, under its own
        # compiler labels. One of them under a blocking scope would be checked as if open.)
        sources = [site.source for site in u.sites]
        owner = [(node, open_) for node, open_ in every if any(_source_of(n) in sources for n in walk(node.right))]
        if not owner or not all(open_ and node == owner[0][0] for node, open_ in owner):
            return "conditions across events inside the right side of UNLESS, under an iteration, renaming or projection (registers)"
        found = _right_event(owner[0][0], u.labels)
        if isinstance(found, str):
            return found
        out.extend(_columned(right, f"{RIGHT}{len(out) + i}") for i, right in enumerate(found))
    return tuple(out)


def _columned(right: RightEvent, column: str) -> RightEvent:
    """``right`` with the kept columns of its steps named after ``column``."""
    after = tuple((types, labels, f"{column}.{i + 1}") for i, (types, labels, _) in enumerate(right.after))
    return dataclasses.replace(right, column=column, after=after)


def _source_of(node: ast.Node) -> object:
    """What a register site inside a right side reads as its source: a condition node, or a
    PARTITION BY's keys (None for other nodes)."""
    if isinstance(node, (ast.LabelCond, ast.Compare, ast.And, ast.Or, ast.Not)):
        return node
    return node.keys if isinstance(node, ast.PartitionBy) else None


#: The most one-event alternatives a right side of UNLESS is checked as (ORs multiply them).
_MAX_ALTERNATIVES = 8
_MANY_EVENTS = "conditions across events inside the right side of UNLESS when it is more than one event (registers)"


@dataclass
class _Alternative:
    """One way g matches one event: its type, the labels it carries, the conditions and the
    PARTITION BY keys on it."""

    type: str
    labels: set[str]
    conditions: list[ast.Cond]
    keyed: list[tuple[ast.Attr, ...]]


def _alternatives(node: ast.Formula) -> list[_Alternative] | str:
    """g as one-event alternatives: an event under AS, FILTER and PARTITION BY, an OR of such
    (one alternative per branch), an AND of such (one event carrying every part's labels, of
    the type all parts name: no alternative where they differ). Else why not."""
    if isinstance(node, ast.EventType):
        if node.stream is not None:
            return "conditions across events inside the right side of UNLESS on a named stream's event (registers)"
        return [_Alternative(node.name, {node.name}, [], [])]
    if isinstance(node, (ast.Label, ast.Filter, ast.PartitionBy)):
        found = _alternatives(node.body)
        for alt in found if not isinstance(found, str) else ():
            if isinstance(node, ast.Label):
                alt.labels.add(node.label)
            elif isinstance(node, ast.Filter):
                alt.conditions.append(node.cond)
            else:
                alt.keyed.append(node.keys)
        return found
    if isinstance(node, (ast.Union_, ast.Conjunction)):
        parts = [_alternatives(part) for part in node.parts]
        for part in parts:
            if isinstance(part, str):
                return part
        out: list[_Alternative] = []
        if isinstance(node, ast.Union_):
            out = [alt for part in parts for alt in part]  # type: ignore[union-attr]
        else:
            out = parts[0]  # type: ignore[assignment]
            for part in parts[1:]:
                out = [
                    _Alternative(a.type, a.labels | b.labels, a.conditions + b.conditions, a.keyed + b.keyed)
                    for a in out
                    for b in part  # type: ignore[union-attr]
                    if a.type == b.type
                ]
        return out if len(out) <= _MAX_ALTERNATIVES else _MANY_EVENTS
    return _MANY_EVENTS


#: The most steps of a sequence on the right side of UNLESS checked column-wise (the tuples
#: of a span's events grow as its events to the power of the steps).
_MAX_STEPS = 3


def _steps(node: ast.Formula) -> list[tuple[list[_Alternative], list[ast.Cond]]] | str:
    """g as a sequence (``;``) of one-event steps, under FILTER: per way of matching (an OR in
    a step gives several), the steps' alternatives and the conditions on the whole sequence.
    Else why not: a ``:`` chain, a label on several events, PARTITION BY, a step's condition
    reading a label other steps carry too, or conditions that read the order or the count of
    g's events (aggregates, PREV, attributes without a label)."""
    conditions: list[ast.Cond] = []
    while isinstance(node, ast.Filter):
        conditions.append(node.cond)
        node = node.body
    if not isinstance(node, ast.Sequence) or node.contiguous or len(node.parts) > _MAX_STEPS:
        return _MANY_EVENTS
    parts = [_alternatives(part) for part in node.parts]
    for part in parts:
        if isinstance(part, str):
            return part
    out = []
    for combination in itertools.product(*parts):  # type: ignore[arg-type]
        steps = list(combination)
        labels = [label for alt in steps for label in alt.labels]
        shared = {label for label in labels if labels.count(label) > 1}
        if any(alt.keyed for alt in steps):
            return _MANY_EVENTS
        read = conditions + [cond for alt in steps for cond in alt.conditions]
        for cond in read:
            for item in walk(cond):
                if isinstance(item, (ast.Aggregate, ast.Prev)) or isinstance(item, ast.Attr) and item.label is None:
                    return _MANY_EVENTS
        # A label on several steps (a type's) read by one step's own condition would read
        # that step's event only; on the sequence's conditions it reads them all, as here.
        for alt in steps:
            for cond in alt.conditions:
                if any(_label_of(item) in shared for item in walk(cond)):
                    return _MANY_EVENTS
        out.append((steps, read))
        if len(out) > _MAX_ALTERNATIVES:
            return _MANY_EVENTS
    return out


def _label_of(node: ast.Node) -> str | None:
    """The label a condition's node reads (an attribute, a one-event predicate), if any."""
    return node.label if isinstance(node, (ast.Attr, ast.LabelCond)) else None


def _right_event(unless: ast.Unless, tracked: dict[str, str]) -> list[RightEvent] | str:
    """The checks of one UNLESS whose right side is one event (one per alternative: g holds
    iff one does), or a sequence of one-event steps, or why there are none."""
    found = _alternatives(unless.right)
    if found == _MANY_EVENTS:
        steps = _steps(unless.right)
        if isinstance(steps, str):
            return steps
        defined = frozenset(label for alts, _ in steps for alt in alts for label in alt.labels)
        return [
            RightEvent(
                tracked["tick"],
                tracked["rep"],
                frozenset({alts[0].type}),
                frozenset(alts[0].labels),
                defined_labels(unless.left),
                _and(read) if read else None,
                defined=defined,
                after=tuple((frozenset({alt.type}), frozenset(alt.labels), "") for alt in alts[1:]),
            )
            for alts, read in steps
        ]
    if isinstance(found, str):
        return found
    defined = frozenset(label for alt in found for label in alt.labels)
    out = []
    for alt in found:
        # '*' reads g's complex event: its one event, which alone carries g's type label in
        # the checked rows.
        conditions = [_every_event_as(cond, alt.type) for cond in alt.conditions]
        # PARTITION BY keys designate events of g's own complex event (the checker allows no
        # other label). Keys over labels: every designated value one common value. Keys
        # without a label: one tuple per event, so on g's one event each value need only be
        # present (one group per key, over the event's type label).
        groups: list[tuple[ast.Attr, ...]] = []
        for keys in alt.keyed:
            if keys[0].label is None:
                groups.extend((ast.Attr(key.name, alt.type),) for key in keys)
            else:
                own = tuple(key for key in keys if key.label in alt.labels)
                if own:
                    groups.append(own)
        out.append(
            RightEvent(
                tracked["tick"],
                tracked["rep"],
                frozenset({alt.type}),
                frozenset(alt.labels),
                defined_labels(unless.left),
                _and(conditions) if conditions else None,
                groups=tuple(groups),
                defined=defined,
            )
        )
    return out


def _every_event_as(node: ast.Node, label: str) -> ast.Node:
    """``node`` with its bare attributes and ``COUNT(*)``-style aggregates (every event of the
    complex event the condition sees) read from ``label``, outside the one-event predicates of
    ``x[p]`` (which read the event they test)."""
    if isinstance(node, ast.LabelCond):
        return node
    if isinstance(node, (ast.Attr, ast.Aggregate)) and node.label is None:
        return dataclasses.replace(node, label=label)
    changes = {}
    for item in dataclasses.fields(node):
        value = getattr(node, item.name)
        if isinstance(value, ast.Node):
            changes[item.name] = _every_event_as(value, label)
        elif isinstance(value, tuple) and any(isinstance(v, ast.Node) for v in value):
            changes[item.name] = tuple(_every_event_as(v, label) if isinstance(v, ast.Node) else v for v in value)
    return dataclasses.replace(node, **changes) if changes else node


def _relabel(cond: ast.Node, roles: dict, star: str | None) -> ast.Node:
    """A site's condition over the labels its events carry in a derivation: an own label's
    private copy, a free label's (the label itself, or a scope's copy), '*' for COUNT(*)."""
    if isinstance(cond, (ast.And, ast.Or)):
        return type(cond)(tuple(_relabel(p, roles, star) for p in cond.parts))
    if isinstance(cond, ast.Not):
        return ast.Not(_relabel(cond.operand, roles, star))
    if isinstance(cond, ast.LabelCond):
        return dataclasses.replace(cond, label=roles[cond.label].event_label)
    if isinstance(cond, ast.Compare):
        return ast.Compare(cond.op, _relabel(cond.left, roles, star), _relabel(cond.right, roles, star))
    if isinstance(cond, ast.Arith):
        return ast.Arith(cond.op, _relabel(cond.left, roles, star), _relabel(cond.right, roles, star))
    if isinstance(cond, ast.Neg):
        return ast.Neg(_relabel(cond.operand, roles, star))
    if isinstance(cond, ast.Attr) and cond.label is not None:
        return ast.Attr(cond.name, roles[cond.label].event_label)
    if isinstance(cond, ast.Prev):
        return ast.Prev(roles[cond.label].event_label, cond.attr)
    if isinstance(cond, ast.Aggregate):
        label = star if cond.label is None else roles[cond.label].event_label
        return ast.Aggregate(cond.func, label, cond.attr)
    return cond


def _relabel_key(key: ast.Attr, roles: dict, star: str | None) -> ast.Attr:
    return ast.Attr(key.name, star if key.label is None else roles[key.label].event_label)


def _and(parts: list[ast.Cond]) -> ast.Cond:
    return parts[0] if len(parts) == 1 else ast.And(tuple(parts))


def few_candidates(body: ast.Formula, plan: Plan) -> str | None:
    """Why the unfiltered pattern reports few candidates (None: it may report many)."""
    skipping = False
    iterating = False
    stack = [body]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Unless):
            stack.append(node.left)  # the right side reports nothing
            continue
        if isinstance(node, ast.Sequence) and not node.contiguous or isinstance(node, ast.AllOf):
            skipping = True
        if isinstance(node, ast.Iteration) and not node.contiguous:
            iterating = True
        stack.extend(child for child in _children(node))
    if not skipping and not iterating:
        return "a contiguous pattern: one candidate per start event"
    if plan.window is not None and not iterating:
        return "a window and no iteration that skips events"
    return None


def _children(node: ast.Formula) -> list:
    from ceql.lang.visit import formula_children

    return list(formula_children(node))


def local_indexes(codes: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Each event's index in its sub-stream (``codes``: key codes, -1 for no key, which get
    -1), continuing from ``counts`` (events seen per code, updated in place)."""
    out = np.full(len(codes), -1, dtype=np.int64)
    keyed = np.flatnonzero(codes >= 0)
    if not len(keyed):
        return out
    chosen = codes[keyed]
    order = np.argsort(chosen, kind="stable")
    sorted_codes = chosen[order]
    starts = np.r_[0, np.flatnonzero(np.diff(sorted_codes)) + 1]
    rank = np.arange(len(order)) - np.repeat(starts, np.diff(np.r_[starts, len(order)]))
    out[keyed[order]] = counts[sorted_codes] + rank
    np.add.at(counts, chosen, 1)
    return out


def select_matches(chunk, keep: np.ndarray):
    """The matches of a KernelMatches whose ``keep`` is true."""
    from ceql.runtime.kernel.engine import KernelMatches

    if keep.all():
        return chunk
    counts = np.diff(chunk.offsets)
    events = np.repeat(keep, counts)
    offsets = np.zeros(int(keep.sum()) + 1, dtype=np.int64)
    np.cumsum(counts[keep], out=offsets[1:])
    return KernelMatches(
        chunk.trigger[keep],
        np.asarray(chunk.partition)[keep],
        offsets,
        chunk.positions[chunk.offsets[0] :][events] if chunk.offsets[0] else chunk.positions[events],
        (chunk.labels[events] if chunk.labels is not None else None),
        chunk.label_sets,
        {name: column.take(np.flatnonzero(keep)) for name, column in chunk.measures.items()}
        if chunk.measures
        else None,
    )


def public_supports(chunk, frame) -> tuple[np.ndarray, np.ndarray]:
    """Each complex event's support (offsets, positions) without the events reported only under
    the compiler's own labels (the event a ``NOT(E FILTER c)`` reads is not a position of the
    match: NEXT, LAST and MAX compare the supports the user sees)."""
    public = frame.has(None)
    if public.all():
        return chunk.offsets, chunk.positions
    base, end = int(chunk.offsets[0]), int(chunk.offsets[-1])
    counts = np.bincount(frame.segment[public], minlength=frame.n)
    offsets = np.zeros(frame.n + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    return offsets, chunk.positions[base:end][public]


def first_per_trigger(trigger: np.ndarray, keep: np.ndarray, limit: int) -> np.ndarray:
    """``keep`` restricted to the first ``limit`` kept matches of each trigger (matches of one
    trigger are consecutive)."""
    index = np.flatnonzero(keep)
    if not len(index):
        return keep
    chosen = trigger[index]
    starts = np.r_[0, np.flatnonzero(chosen[1:] != chosen[:-1]) + 1]
    rank = np.arange(len(index)) - np.repeat(starts, np.diff(np.r_[starts, len(index)]))
    out = np.zeros(len(keep), dtype=bool)
    out[index[rank < limit]] = True
    return out


def right_event_hits(frame, right: RightEvent, holds) -> np.ndarray:
    """Per complex event of ``frame`` (columns.Frame): whether some complex event of g in its
    span makes g's condition true (``holds``: the condition per complex event of a frame), so
    that UNLESS drops it. g is one event, or a sequence of one-event steps (``right.steps``):
    each choice of increasing events of the steps' types in the span is one complex event of a
    derived frame: the complex event's reported events with g's labels taken off (g reads its
    own labels from its own complex event, docs/semantics.md 3.4), then g's events, each under
    its step's labels only."""
    n = frame.n
    none = np.zeros(max(n, 0), dtype=bool)
    if n <= 0 or frame.events == 0:
        return none
    ticked = frame.has(right.tick)
    segment = frame.segment
    rows = None  # (tuple, step) -> event index: increasing events of one complex event
    for _, _, name in right.steps:
        column = frame.column(name)
        candidates = np.flatnonzero(ticked & column.data.astype(bool) & column.valid)
        if not len(candidates):
            return none
        if rows is None:
            rows = candidates.reshape(-1, 1)
            continue
        # Extend each tuple by every candidate after its last event, in the same complex event.
        last = rows[:, -1]
        lo = np.searchsorted(candidates, last, side="right")
        hi = np.searchsorted(candidates, frame.ends[segment[last]], side="left")
        count = np.maximum(hi - lo, 0)
        total = int(count.sum())
        if not total:
            return none
        tuple_of = np.repeat(np.arange(len(rows)), count)
        step = np.arange(total) - np.repeat(np.cumsum(count) - count, count)
        rows = np.column_stack([rows[tuple_of], candidates[np.repeat(lo, count) + step]])
    assert rows is not None
    k = rows.shape[1]
    sets = list(frame.label_sets)
    ids = frame.label_ids[frame.base : frame.base + frame.events]
    reported = np.flatnonzero(frame.has(None))  # (not the events under the compiler's labels only)
    per_match = np.bincount(segment[reported], minlength=n)
    first = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(per_match, out=first[1:])
    # Each tuple: its complex event's reported events, then g's events.
    match = segment[rows[:, 0]]
    sizes = per_match[match] + k
    offsets = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    pair = np.repeat(np.arange(len(rows)), sizes)
    within = np.arange(int(offsets[-1])) - offsets[pair]
    slot = within - per_match[match[pair]]  # g's step, or negative for f's events
    from_left = np.minimum(first[match[pair]] + within, max(len(reported) - 1, 0))
    mine = slot >= 0
    index = np.where(mine, rows[pair, np.maximum(slot, 0)], reported[from_left] if len(reported) else 0)
    # Label sets: f's less g's labels and the compiler's own; g's events: their step's labels.
    # f's events read as f's complex event; the others read as the whole complex event's,
    # where the labels f or g define are theirs.
    in_left = [right.rep in labels for labels in sets]
    stripped = [
        tuple(
            label
            for label in labels
            if label[0] != "\x00" and label not in (right.defined or right.labels) and (left or label not in right.left)
        )
        for labels, left in zip(sets, in_left)
    ]
    table = {labels: i for i, labels in enumerate(dict.fromkeys(stripped))}
    derived = list(table)
    own = len(derived)
    derived.extend(tuple(sorted(labels)) for _, labels, _ in right.steps)
    remap = np.array([table[labels] for labels in stripped], dtype=np.int64)
    sub = frame.subframe(offsets, index)
    sub.label_sets = derived
    sub.label_ids = np.where(mine, own + slot, remap[ids[index]])
    hit = holds(sub)
    return np.bincount(match[hit], minlength=n)[:n] > 0
