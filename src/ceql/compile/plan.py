"""Everything an evaluator needs that does not change while events flow, built by a list of
named passes (``PASSES``) whose notes ``explain`` prints.

A plan holds the compiled automaton and its lazily determinized form, the predicates and
symbols, the register sites, the columns to read, the window, the partitioning, the strategy,
projection, measures and limits.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ceql.compile.ambiguity import may_repeat
from ceql.compile.autopartition import absence_routing, auto_partition
from ceql.compile.compiler import Compiled, compile_query_formula, label_multiplicity
from ceql.compile.determinize import DetAutomaton, SymbolTable
from ceql.compile.measures import Measures
from ceql.compile.strategies import rewrite_strict, strict_rewritable
from ceql.errors import UnsupportedQueryError
from ceql.lang import ast
from ceql.lang.analysis import CheckedQuery
from ceql.lang.visit import walk

MAX_PREDICATES = 64  # one bit each in a 64-bit mask per event
MAX_MACHINE_STATES = 200_000  # states of the (non-deterministic) automaton


@dataclass
class Plan:
    """The compiled form of a checked query."""

    checked: CheckedQuery
    formula: ast.Formula
    compiled: Compiled
    symbols: SymbolTable
    det: DetAutomaton
    type_names: list[str]
    catalog: Any = None  # the columns the query reads, typed (compile/catalog.py)
    window: int | float | None = None  # window size in measure units, None if no WITHIN
    window_kind: str | None = None  # "events", "time" or "attribute"
    monotone: bool = True  # measures never decrease, so expired structure can be dropped
    time_attributes: dict[str, str] = field(default_factory=dict)  # event type -> its time column
    ordered_time: bool = False  # events must come in non-decreasing primary_time order
    partition_groups: tuple[tuple[str, ...], ...] = ()
    partition_types: dict[str, tuple[str, ...]] = field(default_factory=dict)
    strategy: str = "ALL"
    strict_filter: bool = False  # STRICT checked on each complex event (not rewritable)
    consume: str = "NONE"
    limit: int | None = None
    projection: ast.Projection | None = None
    as_labels: frozenset[str] = frozenset()
    value_attributes: list[str] = field(default_factory=list)  # per-event values kept
    measures: Measures | None = None
    repeats: bool = False  # a complex event may come from two runs: drop repeats at output
    silent_reads: bool = False  # runs may end by reading events they do not report (NOT, PROJECT)
    auto_partition: str | None = None  # an equality made a partition key (matches report none)
    #: ``WHERE f NOT FOLLOWED BY g``: the plan of ``(f AS mark) ; g``, whose complex events cancel
    #: the complex events of f (this plan's) before their deadline (docs/semantics.md, 5.2).
    absence: Plan | None = None
    notes: list[str] = field(default_factory=list)
    passes: list[tuple[str, str]] = field(default_factory=list)  # (pass, what it decided)

    @property
    def registers(self):
        return self.compiled.registers

    def facts(self) -> QueryFacts:
        """What an engine running this plan elsewhere (Spark) needs to know, as plain data."""
        within = self.checked.query.within
        sharding_blockers = (ast.NotEvent, ast.Project, ast.Start)
        shardable = (
            self.absence is None  # (a deadline may pass long after the window of the events)
            and not self.partition_groups
            and within is not None
            and self.monotone
            and self.consume == "NONE"
            and not self.strict_filter
            and not any(isinstance(node, sharding_blockers) for node in walk(self.formula, formulas_only=True))
        )
        return QueryFacts(
            partition_groups=self.partition_groups,
            partition_types=dict(self.partition_types),
            partition_reported=bool(self.partition_groups) and not self.auto_partition,
            window_kind=self.window_kind,
            window=self.window,
            window_attribute=within.attribute if within is not None else None,
            monotone=self.monotone,
            time_attributes=dict(self.time_attributes),
            ordered_time=self.ordered_time,
            shardable=shardable,
            consume=self.consume,
            strategy=self.strategy,
            labels=tuple(sorted(self.as_labels)),
            measures=tuple(self.measures.names) if self.measures is not None else (),
            catalog=self.catalog,
            deadlines=self.absence is not None,
        )


@dataclass(frozen=True)
class QueryFacts:
    """The public facts about a compiled query that a distributed runner needs (see
    ``Query.facts``): how its events may be split, ordered and keyed, and what its results hold.

    ``shardable``: the events may be cut into shards of the window measure that overlap by the
    window, each reporting only the matches its own part triggers, with the same results (no
    partitions, a window on a non-decreasing measure, CONSUME BY NONE, nothing that reads events
    it does not report or anchors at the stream's start)."""

    partition_groups: tuple[tuple[str, ...], ...]
    partition_types: dict[str, tuple[str, ...]]
    partition_reported: bool
    window_kind: str | None
    window: int | float | None
    window_attribute: str | None
    monotone: bool
    time_attributes: dict[str, str]
    ordered_time: bool
    shardable: bool
    consume: str
    strategy: str
    labels: tuple[str, ...]
    measures: tuple[str, ...]
    catalog: Any
    #: NOT FOLLOWED BY: matches come when deadlines pass, which any later event of the stream
    #: may show (a batch runner keeps the stream whole; a stream runner advances time by the
    #: watermark, ``Evaluator.advance``).
    deadlines: bool = False


def referenced_attributes(checked: CheckedQuery, formula: ast.Formula) -> set[str]:
    """Attributes the evaluation reads: in predicates, conditions, windows, partitions, measures."""
    names: set[str] = set()
    roots: list[ast.Node] = [formula, *checked.query.partition_labels]
    if checked.query.projection is not None:
        roots.append(checked.query.projection)
    for root in roots:
        for node in walk(root):
            if isinstance(node, ast.Attr):
                names.add(node.name)
            elif isinstance(node, ast.Aggregate) and node.attr:
                names.add(node.attr)
            elif isinstance(node, ast.Prev):
                names.add(node.attr)
    for group in checked.query.partition_by:
        names.update(group)
    within = checked.query.within
    if within is not None and within.kind == "attribute":
        names.add(within.attribute or "")
    return names


class _Building:
    """The state the passes share."""

    def __init__(self, checked: CheckedQuery) -> None:
        self.checked = checked
        self.query = checked.query
        self.formula: ast.Formula = getattr(checked, "formula", None) or checked.query.formula
        self.fields: dict[str, Any] = {}
        self.notes: list[str] = []


def _pass_auto_partition(b: _Building) -> str:
    found = auto_partition(b.checked, b.formula)
    if found is None:
        return "no equality links every event"
    b.formula = found.formula
    b.query = dataclasses.replace(b.query, partition_labels=())
    b.fields["auto_partition"] = ", ".join(found.linked)
    b.fields["partition_types"] = {name: (attribute,) for name, attribute in found.attributes.items()}
    b.fields["partition_groups"] = tuple(sorted({(a,) for a in found.attributes.values()}))
    keys = ", ".join(f"{name} by {attribute}" for name, attribute in sorted(found.attributes.items()))
    b.notes.append(
        f"{' AND '.join(found.linked)} links every event of the pattern: evaluated per value ({keys}); "
        "the equality holds by construction"
    )
    return f"routed per value: {keys}"


def _pass_strategy(b: _Building) -> str:
    strategy = b.query.effective_strategy
    b.fields["strategy"] = strategy
    if strategy == "STRICT":
        if strict_rewritable(b.formula):
            b.formula = rewrite_strict(b.formula)
            return "STRICT compiled into ':' and ':+'"
        b.fields["strict_filter"] = True
        return "STRICT checked on each complex event (NOT(...) or ALL prevent the rewrite)"
    return strategy


def _pass_compile(b: _Building) -> str:
    compiled = compile_query_formula(b.formula, b.query.partition_labels)
    if len(compiled.predicates) > MAX_PREDICATES:
        raise UnsupportedQueryError(f"a query may use at most {MAX_PREDICATES} distinct predicates")
    states = compiled.machine.hi
    if states > MAX_MACHINE_STATES:
        raise UnsupportedQueryError(
            f"the query's automaton has {states} states (at most {MAX_MACHINE_STATES}); "
            "split the query or shorten its chains of operators"
        )
    b.fields["compiled"] = compiled
    if compiled.registers is not None and compiled.registers.key is not None:
        b.notes.append("runs are indexed by the value of an equality: each event visits only the runs it can extend")
    return f"{states} automaton states, {len(compiled.predicates)} predicates, {len(compiled.sites)} register sites"


def _pass_determinize(b: _Building) -> str:
    schema = b.checked.schema
    type_names = sorted(schema.event_types)
    symbols = SymbolTable(type_names)
    b.fields["type_names"] = type_names
    b.fields["symbols"] = symbols
    b.fields["det"] = DetAutomaton(b.fields["compiled"].machine, symbols)
    registers = b.fields["compiled"].registers
    for tracked in registers.tracked if registers is not None else ():
        tracked.det = DetAutomaton(tracked.machine, symbols)
    return "lazily determinized (states are built as events need them)"


def _silent_reads(formula: ast.Formula) -> bool:
    return any(isinstance(node, (ast.NotEvent, ast.Project)) for node in walk(formula, formulas_only=True))


def _pass_repeats(b: _Building) -> str:
    compiled = b.fields["compiled"]
    b.fields["silent_reads"] = _silent_reads(b.formula)
    relabels = any(isinstance(node, (ast.Rename, ast.Project)) for node in walk(b.formula, formulas_only=True))
    if not compiled.sites and not relabels:
        return "one run per complex event"
    # Event-type labels are not reported: two runs that differ only there report one complex
    # event (a renaming or a projection removes them on one branch and not on another).
    repeats = may_repeat(compiled.machine, b.checked.as_labels)
    b.fields["repeats"] = repeats
    if repeats:
        b.notes.append(
            "a complex event may have several derivations with different conditions to check: "
            "repeats are dropped when it is reported (cost: the number of derivations)"
        )
        return "derivations may repeat: repeats dropped at output"
    return "one run per complex event"


def _pass_window(b: _Building) -> str:
    query, schema = b.query, b.checked.schema
    if query.within is None:
        return "no window"
    kind = query.within.kind
    b.fields["window_kind"] = kind
    b.fields["window"] = query.within.value
    if kind == "time":
        b.fields["ordered_time"] = True
        b.fields["time_attributes"] = {
            name: schema.event_types[name].time_attribute or "" for name in b.checked.used_types
        }
        return f"time window of {query.within.value} ns on primary_time"
    if kind == "attribute":
        attribute = query.within.attribute or ""
        ordered = all(
            schema.event_types[name].attribute(attribute).type == "primary_time" for name in b.checked.used_types
        )
        b.fields["ordered_time"] = ordered
        b.fields["monotone"] = ordered
        b.fields["time_attributes"] = {name: attribute for name in b.checked.used_types}
        if not ordered:
            b.notes.append(
                f"WITHIN {query.within.value} [{attribute}]: the attribute is not a primary_time, so its "
                "values may decrease; matches stay exact but expired partial matches are not freed"
            )
        return f"window of {query.within.value} on {attribute}"
    return f"window of {query.within.value} events"


def _pass_partitions(b: _Building) -> str:
    query, schema = b.query, b.checked.schema
    if b.fields.get("auto_partition"):
        return "routed per value (auto_partition)"
    partition_by = query.partition_by
    b.fields["partition_groups"] = partition_by
    if not partition_by:
        return "one stream"
    partition_types: dict[str, tuple[str, ...]] = {}
    for name in b.fields["type_names"]:
        decl = schema.event_types[name]
        for group in partition_by:
            if all(decl.attribute(a) is not None for a in group):
                partition_types[name] = group
                break
    b.fields["partition_types"] = partition_types
    return "per key of " + ", ".join("[" + ", ".join(g) + "]" for g in partition_by)


def _pass_columns(b: _Building) -> str:
    from ceql.compile.catalog import Catalog

    checked, schema = b.checked, b.checked.schema
    needed = referenced_attributes(checked, b.formula)
    needed |= set(b.fields.get("time_attributes", {}).values())
    for group in b.query.partition_by:
        needed.update(group)
    for group in b.fields.get("partition_types", {}).values():
        needed.update(group)
    catalog = Catalog.for_query(schema, needed)
    b.fields["catalog"] = catalog
    b.fields["compiled"].predicates.int_types = catalog.int_types
    return f"{len(catalog.columns)} columns: " + ", ".join(catalog.columns)


def _pass_outputs(b: _Building) -> str:
    query, checked = b.query, b.checked
    compiled = b.fields["compiled"]
    attributes = list(compiled.attributes)

    def attribute(name: str) -> int:
        if name not in attributes:
            attributes.append(name)
        return attributes.index(name)

    measures = None
    declared = query.projection.measures if query.projection is not None else ()
    if declared:
        multiplicity = getattr(checked, "label_multiplicity", None)
        if multiplicity:
            many = {label for label, kind in multiplicity.items() if kind == "many"}
        else:
            many = {label for label, count in label_multiplicity(b.formula).items() if count > 1}
        measures = Measures(declared, many, attribute)
    b.fields["measures"] = measures
    b.fields["value_attributes"] = attributes
    b.fields["projection"] = query.projection
    b.fields["as_labels"] = checked.as_labels
    b.fields["consume"] = query.effective_consume
    b.fields["limit"] = query.limit
    return f"{len(declared)} measures" if declared else "no measures"


#: The passes, in order: (name, function). Each returns a short note for ``explain``.
PASSES: tuple[tuple[str, Callable[[_Building], str]], ...] = (
    ("auto_partition", _pass_auto_partition),
    ("strategy", _pass_strategy),
    ("compile", _pass_compile),
    ("determinize", _pass_determinize),
    ("repeats", _pass_repeats),
    ("window", _pass_window),
    ("partitions", _pass_partitions),
    ("columns", _pass_columns),
    ("outputs", _pass_outputs),
)


def build_plan(checked: CheckedQuery, passes=PASSES) -> Plan:
    """Compile a checked query into an evaluation plan by running ``passes`` in order."""
    building = _Building(checked)
    log = []
    for name, run in passes:
        log.append((name, run(building)))
    plan = Plan(
        checked=checked,
        formula=building.formula,
        notes=building.notes,
        passes=log,
        **building.fields,
    )
    absence = getattr(checked, "absence", None)
    if absence is not None:
        # One plan per side: this one finds the complex events of f, the other those of
        # (f AS mark) ; g that cancel them. Events are typed once, for the columns of both.
        from ceql.compile.catalog import Catalog

        # An equality inside g linking it to f routes the cancelling runs per value.
        routed = absence_routing(absence)
        plan.absence = build_plan(absence if routed is None else dataclasses.replace(absence, formula=routed), passes)
        both = set(plan.catalog.columns) | set(plan.absence.catalog.columns)
        catalog = Catalog.for_query(checked.schema, both)
        for side in (plan, plan.absence):
            side.catalog = catalog
            side.compiled.predicates.int_types = catalog.int_types
        plan.notes.append(
            "NOT FOLLOWED BY: each complex event waits for its deadline (the window's end); the runs of "
            "(f ; g) cancel it first"
        )
        if routed is not None:
            plan.notes.append(f"NOT FOLLOWED BY: {plan.absence.auto_partition} routes the runs of (f ; g) per value")
        log.append(("absence", "complex events reported at their deadline unless g follows first"))
    return plan


def split_keys(plan: Plan) -> dict[str, tuple[str, ...]] | None:
    """The attributes by which this plan's stream may be split with exact results: event type
    -> the attributes of its key (None when no split is exact).

    Route each event of a type in the answer to the sub-stream of its key (the tuple of its
    values of those attributes; an event with a missing or NaN value goes to the sub-stream of
    key None), and every event to it at its position in the whole stream (``positions`` of
    ``Evaluator.process_table``). Evaluating each sub-stream alone, to its end
    (``Evaluator.finish``), then gives exactly the complex events of that key, each with its
    measures, partition and, for NOT FOLLOWED BY, its deadline, as the whole stream does.
    Events of other types never take part in a complex event.

    For NOT FOLLOWED BY only the trigger differs: a deadline passes at an event of the whole
    stream (the first event at or past it of a type the query names; with ``n EVENTS`` the
    event at that position; else the end of the input). A merge sets each match's trigger to
    ``runtime.absence.deadline_triggers`` of its deadline. So NOT FOLLOWED BY splits only when
    the matches of one trigger do not depend on each other: the strategy ALL, no LIMIT, no
    CONSUME BY; its key is its PARTITION BY, or the equality in g linking every event of a
    one-event f (``Order AS o NOT FOLLOWED BY Payment AS p FILTER p.order = o.id``: orders
    routed by ``id``, payments by ``order``; an order of no id is never cancelled, reported in
    the sub-stream of key None).

    Other plans split by their PARTITION BY (or an equality that partitions them), with
    CONSUME BY NONE or PARTITION. (The answer is sorted by event type.)"""
    if plan.absence is None:
        if not plan.partition_groups or plan.consume not in ("NONE", "PARTITION"):
            return None
        return dict(sorted(plan.partition_types.items()))
    cancelling = plan.absence
    if plan.consume != "NONE" or plan.limit is not None or plan.strategy not in ("ALL", "STRICT") or plan.strict_filter:
        return None
    if not cancelling.partition_groups:
        return None
    routing = dict(cancelling.partition_types)
    if plan.partition_groups:
        # PARTITION BY: both sides keyed alike (every type f reads has the same key).
        for name, attributes in plan.partition_types.items():
            if routing.setdefault(name, attributes) != attributes:
                return None
        return dict(sorted(routing.items()))
    # An equality routes g per value of f's event: f must report one event per complex event
    # (its events all in one sub-stream), and read no other event (nothing across keys).
    if plan.auto_partition is not None or not _one_event(plan.formula):
        return None
    if any(name not in routing for name in plan.type_names if name in set(plan.checked.used_types)):
        return None
    return dict(sorted(routing.items()))


def _one_event(formula: ast.Formula) -> bool:
    """Whether every complex event of ``formula`` is one event (an event type, labelled,
    filtered, or a choice of such)."""
    if isinstance(formula, ast.EventType):
        return True
    if isinstance(formula, (ast.Label, ast.Filter)):
        return _one_event(formula.body)
    if isinstance(formula, ast.Union_):
        return all(_one_event(part) for part in formula.parts)
    return False
