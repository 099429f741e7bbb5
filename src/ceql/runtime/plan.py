"""Everything an evaluator needs that does not change while events flow: the compiled
automaton, predicates, symbols, columns, window, partitioning, projection and policies."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from ceql.compile.autopartition import partition_attribute
from ceql.compile.catalog import Catalog
from ceql.compile.compiler import Compiled, compile_formula
from ceql.compile.determinize import DetAutomaton, SymbolTable
from ceql.compile.strategies import rewrite_strict
from ceql.errors import UnsupportedQueryError
from ceql.lang import ast
from ceql.lang.analysis import CheckedQuery
from ceql.runtime.batches import BatchBuilder

SUPPORTED_STRATEGIES = ("ALL", "ANY", "STRICT", "NEXT", "LAST", "MAX")


@dataclass
class Plan:
    """The compiled form of a checked query."""

    checked: CheckedQuery
    compiled: Compiled
    symbols: SymbolTable
    det: DetAutomaton
    builder: BatchBuilder
    type_names: list[str]
    window: float | None  # window size in measure units, None if no WITHIN
    window_kind: str | None
    monotone: bool  # measures never decrease, so expired structure can be dropped for good
    time_attributes: dict[str, str] = field(default_factory=dict)  # event type -> its time column
    ordered_time: bool = False  # events must come in non-decreasing primary_time order
    partition_groups: tuple[tuple[str, ...], ...] = ()
    partition_types: dict[str, tuple[str, ...]] = field(default_factory=dict)
    strategy: str = "ALL"
    consume: str = "NONE"
    limit: int | None = None
    projection: ast.Projection | None = None
    as_labels: frozenset[str] = frozenset()
    cross_attributes: tuple[str, ...] = ()
    auto_partition: str | None = None  # an equality made a partition key (matches report none)
    notes: list[str] = field(default_factory=list)


def referenced_attributes(checked: CheckedQuery) -> set[str]:
    """Attributes the evaluation reads: in predicates, conditions, windows and partitions."""
    names: set[str] = set()

    def visit(value) -> None:
        stack = [value]
        while stack:
            item = stack.pop()
            if isinstance(item, tuple):
                stack.extend(item)
            elif isinstance(item, ast.Attr):
                names.add(item.name)
            elif isinstance(item, ast.Node):
                stack.extend(getattr(item, f) for f in item.__dataclass_fields__ if f != "pos")

    visit(checked.query.formula)
    for group in checked.query.partition_by:
        names.update(group)
    within = checked.query.within
    if within is not None and within.kind == "attribute":
        names.add(within.attribute or "")
    return names


def build_plan(checked: CheckedQuery) -> Plan:
    """Compile a checked query into an evaluation plan."""
    query = checked.query
    auto_partition = partition_attribute(checked)
    if auto_partition is not None:
        query = dataclasses.replace(query, partition_by=((auto_partition,),))
    strategy = query.effective_strategy
    if strategy not in SUPPORTED_STRATEGIES:
        raise UnsupportedQueryError(f"selection strategy {strategy} is not supported yet")
    formula = rewrite_strict(query.formula) if strategy == "STRICT" else query.formula
    compiled = compile_formula(formula)
    if len(compiled.predicates) > 64:  # one bit each in a 64-bit mask per event
        raise UnsupportedQueryError("a query may use at most 64 distinct predicates")
    schema = checked.schema
    type_names = sorted(schema.event_types)
    symbols = SymbolTable(type_names)
    det = DetAutomaton(compiled.machine, symbols)

    # Which event types can take part (rows of other types carry no attribute values).
    participating = set(checked.used_types)
    partition_by = query.partition_by
    partition_types: dict[str, tuple[str, ...]] = {}
    if partition_by:
        for name in type_names:
            decl = schema.event_types[name]
            for group in partition_by:
                if all(decl.attribute(a) is not None for a in group):
                    partition_types[name] = group
                    break
        participating |= set(partition_types)

    window = None
    window_kind = None
    monotone = True
    ordered_time = False
    time_attributes: dict[str, str] = {}
    if query.within is not None:
        window_kind = query.within.kind
        window = float(query.within.value)
        if window_kind == "time":
            ordered_time = True
            for name in checked.used_types:
                time_attributes[name] = schema.event_types[name].time_attribute or ""
        elif window_kind == "attribute":
            attribute = query.within.attribute or ""
            ordered_time = all(
                schema.event_types[name].attribute(attribute).type == "primary_time"
                for name in checked.used_types
            )
            monotone = ordered_time
            time_attributes = {name: attribute for name in checked.used_types}

    needed = (
        referenced_attributes(checked) | set(time_attributes.values()) | {a for g in partition_by for a in g}
    )
    builder = BatchBuilder(Catalog.for_query(schema, needed, participating))

    cross_attributes = sorted(
        {
            attr.name
            for condition in compiled.cross
            for compare in condition.compares
            for attr in ast.attributes(compare)
        }
    )
    plan = Plan(
        checked=checked,
        compiled=compiled,
        symbols=symbols,
        det=det,
        builder=builder,
        type_names=type_names,
        window=window,
        window_kind=window_kind,
        monotone=monotone,
        time_attributes=time_attributes,
        ordered_time=ordered_time,
        partition_groups=partition_by,
        partition_types=partition_types,
        strategy=strategy,
        consume=query.effective_consume,
        limit=query.limit,
        projection=query.projection,
        as_labels=checked.as_labels,
        cross_attributes=tuple(cross_attributes),
        auto_partition=auto_partition,
    )
    if auto_partition is not None:
        plan.notes.append(
            f"the equality on {auto_partition} links every event of the pattern: evaluated per {auto_partition} "
            f"(as PARTITION BY [{auto_partition}]), which gives the same matches"
        )
    if window_kind == "attribute" and not monotone:
        plan.notes.append(
            f"WITHIN {query.within.value} [{query.within.attribute}]: the attribute is not a primary_time, "
            "so its values may decrease; matches stay exact but expired partial matches are not freed"
        )
    return plan
