"""Check a parsed query against the declared schema and collect what later stages need.

Every problem is a QueryError pointing at the offending part of the query text. The passes:

1. the formula (``_FormulaChecker``): event types exist, labels label something, renamed and
   projected labels exist, PARTITION BY keys exist; collects every label with its event types;
2. the conditions (``_ConditionChecker``), now that every label of the query is known: a label
   the filtered formula does not define is *free* (read from an enclosing scope, see scopes.py)
   and must be defined somewhere in the query; types of comparisons and aggregates;
3. the clauses (SELECT labels and measures, PARTITION BY, WITHIN, LIMIT);
4. the quantifier rewrite (desugar.py) into the core formula that evaluators run;
5. label multiplicity (may a complex event hold several events under a label?) and the types
   of the measures.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from ceql.errors import QueryError, did_you_mean
from ceql.lang import ast, scopes
from ceql.lang.desugar import desugar
from ceql.lang.multiplicity import label_multiplicity
from ceql.lang.printer import print_cond, print_formula, print_within
from ceql.lang.schema import NUMERIC_TYPES, EventTypeDecl, Schema
from ceql.lang.typecheck import TypeChecker, attribute_type, kind
from ceql.lang.visit import Visitor, children, walk


@dataclass
class CheckedQuery:
    """A query that passed analysis, with the facts derived from it.

    Attributes:
        query: the syntax tree as written (what printers and explain show).
        schema: the declarations it was checked against.
        text: the query text (for error messages of later stages).
        formula: the core formula to evaluate: ``query.formula`` with quantifiers rewritten
            (no ``Repeat`` node; see desugar.py). Evaluators run this one.
        used_types: every event type the formula mentions (NOT atoms included).
        label_types: label -> event types its events can have (event type names are labels),
            over the whole query (UNLESS right sides included).
        label_sites: label -> offsets in the text where the label is defined.
        as_labels: the labels introduced with AS or as a renaming's target: the ones reported
            in ``Match.labels`` (event type labels only with ``type_labels=True``).
        reported_labels: the labels a reported complex event may carry (not those only inside
            UNLESS right sides or projected away).
        label_multiplicity: label -> "one" or "many": whether a reported complex event may
            hold several events under that label.
        measure_types: measure name -> its type: int, double, string, boolean, timestamp, or
            ``list<T>`` for ``x.a`` on a label that may hold several events.
        interval_measures: the measures typed int that are spans of time in nanoseconds
            (``b.ts - a.ts``): ``output="pandas"`` shows them as durations.
        features: the language extensions the query uses (measures, aggregates, PREV, NOT over a
            condition, free labels, PARTITION BY over labels / inside a formula, quantifiers,
            START, renaming, PROJECT), for engines that do not evaluate all of them yet.
        conditions: (offset, text) of every FILTER condition, for display.
        warnings: "line:column: message" for what is valid but probably not meant (a time
            mixed with a plain number, read as nanoseconds); ``ceql check`` shows them.
        absence: for ``WHERE f NOT FOLLOWED BY g``, the checked ``(f AS mark) ; g`` (SELECT *, the
            query's PARTITION BY and WITHIN): its complex events cancel those of f (the
            attributes above describe the query of f, whose complex events are reported).
        partition_keys: event type -> the attributes forming its partition key.
    """

    query: ast.Query
    schema: Schema
    text: str
    used_types: tuple[str, ...]
    label_types: dict[str, frozenset[str]]
    label_sites: dict[str, list[int]]
    as_labels: frozenset[str]
    conditions: list[tuple[int, str]] = field(default_factory=list)
    partition_keys: dict[str, tuple[str, ...]] = field(default_factory=dict)
    formula: ast.Formula = None  # type: ignore[assignment]  # set by analyze()
    reported_labels: frozenset[str] = frozenset()
    label_multiplicity: dict[str, str] = field(default_factory=dict)
    measure_types: dict[str, str] = field(default_factory=dict)
    interval_measures: frozenset[str] = frozenset()
    features: frozenset[str] = frozenset()
    warnings: tuple[str, ...] = ()
    absence: CheckedQuery | None = None

    def __post_init__(self) -> None:
        if self.formula is None:
            self.formula = self.query.formula

    def time_attribute(self, event_type: str) -> str | None:
        """The primary_time attribute of an event type (None if it has none)."""
        decl = self.schema.event_types.get(event_type)
        return decl.time_attribute if decl else None


def analyze(query: ast.Query, schema: Schema, text: str) -> CheckedQuery:
    """Check ``query`` (parsed from ``text``) against ``schema``; raise QueryError if invalid."""
    if query.absent is not None:
        return _analyze_absence(query, schema, text)
    return _Analyzer(query, schema, text).run()


#: NOT FOLLOWED BY's windows are below this (docs/limits.md): a deadline beyond int64 needs
#: a time past about 2116 (``DeadlineError`` at that event).
MAX_DEADLINE_WINDOW = 1 << 62


def _analyze_absence(query: ast.Query, schema: Schema, text: str) -> CheckedQuery:
    """``WHERE f NOT FOLLOWED BY g`` (docs/semantics.md, 5.2): the query reports the complex
    events of f, so it is checked as the query of f; g is checked in ``(f AS mark) ; g`` (its
    conditions read f's labels as free labels), the query that finds the complex events of f
    that g cancels (``CheckedQuery.absence``)."""
    analyzer = _Analyzer(query, schema, text)
    within = query.within
    where = query.absent.pos if query.absent.pos >= 0 else query.pos
    if within is None:
        raise analyzer.fail(
            "NOT FOLLOWED BY needs a window: its matches are reported when the window's deadline passes "
            "(WITHIN 10 MINUTES, WITHIN 100 EVENTS)",
            where,
            "WITHIN",
        )
    if within.value >= MAX_DEADLINE_WINDOW:
        # A deadline is the first event's measure plus the window, an int64 in every output.
        raise analyzer.fail(
            "NOT FOLLOWED BY's window must be under 2**62 units (146 years of nanoseconds): its deadlines "
            "(the first event's time plus the window) are int64 values",
            within.pos if within.pos >= 0 else where,
        )
    for node in walk(query.formula, formulas_only=True):
        if isinstance(node, (ast.NotEvent, ast.Project)):
            word = "NOT(...)" if isinstance(node, ast.NotEvent) else "PROJECT"
            raise analyzer.fail(
                f"the formula before NOT FOLLOWED BY cannot use {word}: its complex events must end with "
                "the last event they report (the deadline counts from their first event)",
                node.pos,
            )
    main = _Analyzer(dataclasses.replace(query, absent=None), schema, text).run()
    cancelling = dataclasses.replace(
        query,
        projection=ast.Projection("star"),
        formula=ast.Sequence((ast.Label(query.formula, ast.ABSENCE_MARK), query.absent), pos=query.formula.pos),
        absent=None,
        strategy=None,
        consume=None,
        limit=None,
    )
    absence = _Analyzer(cancelling, schema, text).run()
    if within.kind == "attribute":
        attribute = within.attribute or ""
        for name in absence.used_types:
            declared = schema.event_types[name].attribute(attribute)
            if declared is None or declared.type != "primary_time":
                raise analyzer.fail(
                    f"NOT FOLLOWED BY needs a window over a measure that never decreases: {attribute} is not "
                    f"the primary_time of {name} (use WITHIN n EVENTS, a time span, or a primary_time attribute)",
                    within.pos,
                )
    return dataclasses.replace(main, query=query, absence=absence)


class _Analyzer:
    def __init__(self, query: ast.Query, schema: Schema, text: str) -> None:
        self.query = query
        self.schema = schema
        self.text = text

    def fail(self, message: str, pos: int, expected: str | None = None) -> QueryError:
        return QueryError(message, self.text, pos if pos >= 0 else 0, expected)

    def run(self) -> CheckedQuery:
        query = self.query
        allowed = self.check_streams()
        checker = _FormulaChecker(self, allowed)
        reported = checker.visit(query.formula)
        all_labels = checker.all_labels
        types = TypeChecker(self, all_labels)
        conditions = []
        for node, own in checker.filters:
            types.condition(node.cond, own)
            conditions.append((node.cond.pos, print_cond(node.cond)))
        self.check_projection(reported)
        partition_keys = self.check_partition(checker.used, reported)
        self.check_within(checker.used)
        if query.limit is not None and query.limit < 1:
            raise self.fail(
                f"LIMIT must be at least 1, found {query.limit}", query.limit_pos, "a whole number >= 1"
            )
        formula = desugar(query.formula, self.text)
        multiplicity = label_multiplicity(formula)
        measure_types = types.measures(query.projection.measures, reported, multiplicity)
        return CheckedQuery(
            query=query,
            schema=self.schema,
            text=self.text,
            used_types=tuple(checker.used),
            label_types={k: frozenset(v) for k, v in all_labels.items()},
            label_sites=checker.sites,
            as_labels=frozenset(checker.as_labels),
            conditions=conditions,
            partition_keys=partition_keys,
            formula=formula,
            reported_labels=frozenset(reported),
            label_multiplicity={label: multiplicity.get(label, "one") for label in sorted(all_labels)},
            measure_types=measure_types,
            interval_measures=frozenset(types.interval_measures),
            features=_features(query, checker),
            warnings=tuple(types.warnings),
        )

    def check_streams(self) -> dict[str, str | None]:
        """Event types the query may use -> None (FROM absent) or the stream that provides it."""
        if not self.query.streams:
            return {name: None for name in self.schema.event_types}
        allowed: dict[str, str | None] = {}
        positions = self.query.streams_pos or (self.query.pos,) * len(self.query.streams)
        for stream, pos in zip(self.query.streams, positions):
            if stream not in self.schema.streams:
                known = ", ".join(sorted(self.schema.streams)) or "none declared"
                raise self.fail(f"unknown stream {stream}", pos, f"one of: {known}")
            for type_name in self.schema.streams[stream]:
                allowed.setdefault(type_name, stream)
        return allowed

    # ------------------------------------------------------------------ clauses

    def check_projection(self, reported: dict[str, set[str]]) -> None:
        projection = self.query.projection
        for item in projection.items:
            if item.label not in reported:
                defined = ", ".join(sorted(reported)) or "none"
                raise self.fail(
                    f"label {item.label} in SELECT is not defined in the formula",
                    item.pos,
                    f"one of: {defined}",
                )
            for attribute in item.attributes or ():
                attribute_type(self, ast.Attr(attribute, pos=item.pos), reported[item.label], item.label)
        seen: dict[str, int] = {}
        for measure in projection.measures:
            if measure.name in seen:
                raise self.fail(f"two SELECT values are named {measure.name}", measure.pos)
            seen[measure.name] = measure.pos

    def check_partition(self, used: dict[str, None], reported: dict[str, set[str]]) -> dict[str, tuple[str, ...]]:
        if self.query.partition_labels:
            if self.query.partition_by:
                raise self.fail("a query has one PARTITION BY clause", self.query.partition_pos)
            self.check_label_keys(self.query.partition_labels, reported, "the formula")
            return {}
        groups = self.query.partition_by
        if not groups:
            return {}
        if len(groups) == 2 and len(groups[0]) != len(groups[1]):
            raise self.fail(
                "both PARTITION BY lists must have the same number of attributes", self.query.partition_pos
            )
        keys: dict[str, tuple[str, ...]] = {}
        for type_name in used:
            decl = self.schema.event_types[type_name]
            for group in groups:
                if all(decl.attribute(a) is not None for a in group):
                    keys[type_name] = group
                    break
            else:
                missing = [a for a in groups[0] if decl.attribute(a) is None]
                hint = did_you_mean(missing[0], [a.name for a in decl.attributes])
                raise self.fail(
                    f"event type {type_name} has no attribute {missing[0]} to PARTITION BY{hint}",
                    self.query.partition_pos,
                )
        for index in range(len(groups[0])):
            kinds = {
                kind(self.schema.event_types[t].attribute(key[index]).value_type) for t, key in keys.items()
            }
            if len(kinds) > 1:
                raise self.fail("PARTITION BY compares attributes of different types", self.query.partition_pos)
        return keys

    def check_label_keys(self, keys: tuple[ast.Attr, ...], labels: dict[str, set[str]], where: str) -> None:
        """``[x.a, y.b, ...]``: every label is defined in ``where`` and every event type it may
        label has the attribute; all the attributes have one kind of value."""
        kinds: dict[str, int] = {}
        for key in keys:
            label = key.label or ""
            if label not in labels:
                defined = ", ".join(sorted(labels)) or "none"
                raise self.fail(f"label {label} is not defined in {where}", key.pos, f"one of: {defined}")
            for type_name in sorted(labels[label]):
                declared = self.schema.event_types[type_name].attribute(key.name)
                if declared is None:
                    raise self.fail(
                        f"event type {type_name} (labelled {label}) has no attribute {key.name} to PARTITION BY",
                        key.pos,
                    )
                kinds.setdefault(kind(declared.value_type), key.pos)
        if len(kinds) > 1:
            raise self.fail("PARTITION BY compares attributes of different types", max(kinds.values()))

    def check_plain_keys(self, keys: tuple[ast.Attr, ...], types: set[str]) -> None:
        """``(f PARTITION BY [a, b])``: every event type of f has each attribute."""
        for key in keys:
            for type_name in sorted(types):
                if self.schema.event_types[type_name].attribute(key.name) is None:
                    raise self.fail(f"event type {type_name} has no attribute {key.name} to PARTITION BY", key.pos)

    def check_within(self, used: dict[str, None]) -> None:
        within = self.query.within
        if within is None:
            return
        if within.value < 1:
            raise self.fail("a WITHIN window must be at least 1", within.pos)
        if within.kind == "time":
            for type_name in used:
                if self.schema.event_types[type_name].time_attribute is None:
                    raise self.fail(
                        f"a time window needs a primary_time attribute, and event type {type_name} has none "
                        f"(use WITHIN n EVENTS or WITHIN n [attribute])",
                        within.pos,
                    )
        elif within.kind == "attribute":
            for type_name in used:
                declared = self.schema.event_types[type_name].attribute(within.attribute or "")
                if declared is None:
                    raise self.fail(
                        f"event type {type_name} has no attribute {within.attribute} for WITHIN", within.pos
                    )
                if declared.type not in NUMERIC_TYPES:
                    raise self.fail(f"WITHIN [{within.attribute}] needs a numeric attribute", within.pos)


# --------------------------------------------------------------------------- formulas


class _FormulaChecker(Visitor):
    """Pass 1: returns, for each formula, the labels its complex events may carry -> their
    event types; records every label of the query and the conditions to check."""

    pass_name = "the formula analysis"
    families = (ast.FORMULA_NODES,)

    def __init__(self, analyzer: _Analyzer, allowed: dict[str, str | None]) -> None:
        self.a = analyzer
        self.allowed = allowed
        self.used: dict[str, None] = {}
        self.sites: dict[str, list[int]] = {}
        self.as_labels: set[str] = set()
        self.all_labels: dict[str, set[str]] = {}
        #: (Filter or NotEvent, its own labels -> types), in query order.
        self.filters: list[tuple[ast.Filter | ast.NotEvent, dict[str, set[str]]]] = []
        self.plain_partition = False

    def define(self, label: str, types: set[str], pos: int) -> None:
        self.sites.setdefault(label, []).append(pos)
        self.all_labels.setdefault(label, set()).update(types)

    def event_type(self, node: ast.EventType) -> EventTypeDecl:
        schema = self.a.schema
        if node.stream is not None:
            if node.stream not in schema.streams:
                raise self.a.fail(f"unknown stream {node.stream}", node.pos)
            if self.a.query.streams and node.stream not in self.a.query.streams:
                raise self.a.fail(f"stream {node.stream} is not in the FROM clause", node.pos)
            if node.name not in schema.streams[node.stream]:
                raise self.a.fail(f"stream {node.stream} has no event type {node.name}", node.pos)
        decl = schema.event_types.get(node.name)
        if decl is None:
            known = ", ".join(sorted(self.allowed)) or "none declared"
            hint = did_you_mean(node.name, self.allowed)
            raise self.a.fail(f"unknown event type {node.name}{hint}", node.pos, f"one of: {known}")
        if node.name not in self.allowed:
            raise self.a.fail(
                f"event type {node.name} is not in the streams of the FROM clause "
                f"({', '.join(self.a.query.streams)})",
                node.pos,
            )
        self.used.setdefault(decl.name, None)
        return decl

    def visit_EventType(self, node: ast.EventType) -> dict[str, set[str]]:
        decl = self.event_type(node)
        self.define(decl.name, {decl.name}, node.pos)
        return {decl.name: {decl.name}}

    def visit_NotEvent(self, node: ast.NotEvent) -> dict[str, set[str]]:
        decl = self.event_type(node.atom)
        if node.cond is not None:
            self.filters.append((node, {decl.name: {decl.name}}))
        return {}

    def visit_Label(self, node: ast.Label) -> dict[str, set[str]]:
        inner = self.visit(node.body)
        covered = set().union(*inner.values()) if inner else set()
        if not covered:
            raise self.a.fail(
                f"label {node.label} would label no event (its formula only has NOT(...))", node.pos
            )
        self.as_labels.add(node.label)
        self.define(node.label, covered, node.pos)
        merged = {k: set(v) for k, v in inner.items()}
        merged.setdefault(node.label, set()).update(covered)
        return merged

    def visit_Filter(self, node: ast.Filter) -> dict[str, set[str]]:
        inner = self.visit(node.body)
        self.filters.append((node, inner))
        return inner

    def visit_PartitionBy(self, node: ast.PartitionBy) -> dict[str, set[str]]:
        inner = self.visit(node.body)
        if node.keys[0].label is not None:
            self.a.check_label_keys(node.keys, inner, "the formula this PARTITION BY applies to")
        else:
            self.a.check_plain_keys(node.keys, set().union(*inner.values()) if inner else set())
        return inner

    def _body(self, node) -> dict[str, set[str]]:
        return self.visit(node.body)

    visit_Iteration = visit_Start = _body

    def visit_Repeat(self, node: ast.Repeat) -> dict[str, set[str]]:
        if node.low < 0 or (node.high is not None and (node.high < node.low or node.high < 1)):
            high = "" if node.high is None else node.high
            raise self.a.fail(f"invalid quantifier bounds {{{node.low},{high}}}", node.pos)
        return self.visit(node.body)

    def _parts(self, node) -> dict[str, set[str]]:
        merged: dict[str, set[str]] = {}
        for part in node.parts:
            for label, types in self.visit(part).items():
                merged.setdefault(label, set()).update(types)
        return merged

    visit_Sequence = visit_Union_ = visit_Conjunction = visit_AllOf = _parts

    def visit_Unless(self, node: ast.Unless) -> dict[str, set[str]]:
        left = self.visit(node.left)
        self.visit(node.right)  # checked, but its complex events are not reported
        return left

    def visit_Rename(self, node: ast.Rename) -> dict[str, set[str]]:
        inner = self.visit(node.body)
        out = {k: set(v) for k, v in inner.items() if k not in dict(node.mapping)}
        for source, target in node.mapping:
            if source not in inner:
                defined = ", ".join(sorted(inner)) or "none"
                raise self.a.fail(
                    f"label {source} is not defined in the formula it renames", node.pos, f"one of: {defined}"
                )
            self.as_labels.add(target)
            self.define(target, inner[source], node.pos)
        for source, target in node.mapping:
            out.setdefault(target, set()).update(inner[source])
        return out

    def visit_Project(self, node: ast.Project) -> dict[str, set[str]]:
        inner = self.visit(node.body)
        for label in node.labels:
            if label not in inner:
                defined = ", ".join(sorted(inner)) or "none"
                raise self.a.fail(
                    f"label {label} in PROJECT is not defined in the formula it projects",
                    node.pos,
                    f"one of: {defined}",
                )
        return {k: v for k, v in inner.items() if k in node.labels}


# --------------------------------------------------------------------------- features


def _features(query: ast.Query, checker: _FormulaChecker) -> frozenset[str]:
    """The language extensions the query uses (see CheckedQuery.features)."""
    found: set[str] = set()
    if query.projection.measures:
        found.add("measures")
    if query.partition_labels:
        found.add("PARTITION BY over labels")
    kinds = {
        ast.PartitionBy: "PARTITION BY inside a formula",
        ast.Repeat: "quantifiers",
        ast.Start: "START",
        ast.Rename: "renaming",
        ast.Project: "PROJECT",
    }
    for node in walk(query.formula, formulas_only=True):
        if type(node) in kinds:
            found.add(kinds[type(node)])
    index = scopes.LabelIndex()
    for node, _ in checker.filters:
        if scopes.free_labels(node, index):
            found.add("free labels")
        stack: list[ast.Node] = [node.cond]
        while stack:  # conditions, but not inside one-event predicates x[...]
            item = stack.pop()
            if isinstance(item, ast.Not):
                found.add("NOT over a condition")
            if isinstance(item, ast.Aggregate):
                found.add("aggregates")
            if isinstance(item, ast.Prev):
                found.add("PREV")
            if not isinstance(item, ast.LabelCond):
                stack.extend(children(item))
    return frozenset(found)


# --------------------------------------------------------------------------- describe


def describe(checked: CheckedQuery) -> str:
    """A human-readable summary of the analysis (used by ``ceql check``)."""
    lines = ["event types: " + ", ".join(checked.used_types)]
    lines.append("labels:")
    for label in sorted(checked.label_types):
        kind = "AS label" if label in checked.as_labels else "event type"
        sites = ", ".join(_line_col(checked.text, p) for p in checked.label_sites.get(label, []))
        types = ", ".join(sorted(checked.label_types[label]))
        many = "; may hold several events" if checked.label_multiplicity.get(label) == "many" else ""
        lines.append(f"  {label} ({kind}; events of {types}{many}) defined at {sites}")
    if checked.conditions:
        lines.append("conditions:")
        for pos, text in checked.conditions:
            lines.append(f"  {_line_col(checked.text, pos)}: {text}")
    if checked.measure_types:
        lines.append("values reported (SELECT):")
        for name, kind in checked.measure_types.items():
            lines.append(f"  {name}: {kind}")
    if checked.partition_keys:
        lines.append("partition keys:")
        for type_name, key in checked.partition_keys.items():
            lines.append(f"  {type_name}: [{', '.join(key)}]")
    if checked.features:
        lines.append("extensions used: " + ", ".join(sorted(checked.features)))
    if checked.formula is not checked.query.formula:
        lines.append("quantifiers rewritten: " + print_formula(checked.formula))
    query = checked.query
    if query.absent is not None and query.within is not None:
        lines.append(
            f"not followed by: {print_formula(query.absent)} (each complex event is reported when its window "
            f"of {print_within(query.within)} ends, unless that follows it first)"
        )
    lines.append(f"strategy: {query.effective_strategy}; consume by: {query.effective_consume}")
    return "\n".join(lines)


def _line_col(text: str, pos: int) -> str:
    if pos < 0:
        return "?"
    line = text.count("\n", 0, pos) + 1
    column = pos - (text.rfind("\n", 0, pos) + 1) + 1
    return f"{line}:{column}"


__all__ = ["CheckedQuery", "analyze", "describe"]
