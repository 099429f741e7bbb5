"""Check a parsed query against the declared schema and collect what later stages need.

Every problem is a QueryError pointing at the offending part of the query text.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ceql.errors import QueryError
from ceql.lang import ast
from ceql.lang.printer import print_cond
from ceql.lang.schema import NUMERIC_TYPES, EventTypeDecl, Schema


@dataclass
class CheckedQuery:
    """A query that passed analysis, with the facts derived from it.

    Attributes:
        query: the syntax tree.
        schema: the declarations it was checked against.
        text: the query text (for error messages of later stages).
        used_types: every event type the formula mentions (NOT atoms included).
        label_types: label -> event types its events can have (event type names are labels).
        label_sites: label -> offsets in the text where the label is defined.
        as_labels: the labels introduced with AS (the ones reported in Match.labels).
        conditions: (offset, text) of every FILTER condition, for display.
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

    def time_attribute(self, event_type: str) -> str | None:
        """The primary_time attribute of an event type (None if it has none)."""
        decl = self.schema.event_types.get(event_type)
        return decl.time_attribute if decl else None


def analyze(query: ast.Query, schema: Schema, text: str) -> CheckedQuery:
    """Check ``query`` (parsed from ``text``) against ``schema``; raise QueryError if invalid."""
    return _Analyzer(query, schema, text).run()


class _Analyzer:
    def __init__(self, query: ast.Query, schema: Schema, text: str) -> None:
        self.query = query
        self.schema = schema
        self.text = text
        self.label_sites: dict[str, list[int]] = {}
        self.as_labels: set[str] = set()
        self.conditions: list[tuple[int, str]] = []
        self.used: dict[str, None] = {}

    def fail(self, message: str, pos: int, expected: str | None = None) -> QueryError:
        return QueryError(message, self.text, pos if pos >= 0 else 0, expected)

    # ------------------------------------------------------------------ entry

    def run(self) -> CheckedQuery:
        query = self.query
        self.allowed_types = self.check_streams()
        labels = self.formula(query.formula)
        self.check_projection(labels)
        partition_keys = self.check_partition()
        self.check_within()
        if query.limit is not None and query.limit < 1:
            raise self.fail(
                f"LIMIT must be at least 1, found {query.limit}", query.limit_pos, "a whole number >= 1"
            )
        return CheckedQuery(
            query=query,
            schema=self.schema,
            text=self.text,
            used_types=tuple(self.used),
            label_types={k: frozenset(v) for k, v in labels.items()},
            label_sites=self.label_sites,
            as_labels=frozenset(self.as_labels),
            conditions=self.conditions,
            partition_keys=partition_keys,
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

    # ------------------------------------------------------------------ formulas

    def formula(self, node: ast.Formula) -> dict[str, set[str]]:
        """Check a formula; return the labels it defines -> the event types they can cover."""
        if isinstance(node, ast.EventType):
            decl = self.event_type(node)
            self.label_sites.setdefault(decl.name, []).append(node.pos)
            return {decl.name: {decl.name}}
        if isinstance(node, ast.NotEvent):
            decl = self.event_type(node.atom)
            if node.cond is not None:
                self.condition(node.cond, {decl.name: {decl.name}}, node.pos)
            return {}
        if isinstance(node, ast.Label):
            inner = self.formula(node.body)
            covered = set().union(*inner.values()) if inner else set()
            if not covered:
                raise self.fail(
                    f"label {node.label} would label no event (its formula only has NOT(...))",
                    node.pos,
                )
            self.as_labels.add(node.label)
            self.label_sites.setdefault(node.label, []).append(node.pos)
            merged = {k: set(v) for k, v in inner.items()}
            merged.setdefault(node.label, set()).update(covered)
            return merged
        if isinstance(node, ast.Filter):
            inner = self.formula(node.body)
            self.condition(node.cond, inner, node.pos)
            return inner
        merged: dict[str, set[str]] = {}
        for child in ast.children(node):
            for label, types in self.formula(child).items():
                merged.setdefault(label, set()).update(types)
        return merged

    def event_type(self, node: ast.EventType) -> EventTypeDecl:
        if node.stream is not None:
            if node.stream not in self.schema.streams:
                raise self.fail(f"unknown stream {node.stream}", node.pos)
            if self.query.streams and node.stream not in self.query.streams:
                raise self.fail(f"stream {node.stream} is not in the FROM clause", node.pos)
            if node.name not in self.schema.streams[node.stream]:
                raise self.fail(f"stream {node.stream} has no event type {node.name}", node.pos)
        decl = self.schema.event_types.get(node.name)
        if decl is None:
            known = ", ".join(sorted(self.allowed_types)) or "none declared"
            raise self.fail(f"unknown event type {node.name}", node.pos, f"one of: {known}")
        if node.name not in self.allowed_types:
            raise self.fail(
                f"event type {node.name} is not in the streams of the FROM clause "
                f"({', '.join(self.query.streams)})",
                node.pos,
            )
        self.used.setdefault(decl.name, None)
        return decl

    # ------------------------------------------------------------------ conditions

    def condition(self, cond: ast.Cond, labels: dict[str, set[str]], filter_pos: int) -> None:
        self.conditions.append((cond.pos, print_cond(cond)))
        self._condition(cond, labels)

    def _condition(self, cond: ast.Cond, labels: dict[str, set[str]]) -> None:
        if isinstance(cond, (ast.And, ast.Or)):
            for part in cond.parts:
                self._condition(part, labels)
            return
        if isinstance(cond, ast.LabelCond):
            types = self.label_in_scope(cond.label, cond.pos, labels)
            if cond.stream is not None and cond.stream not in self.schema.streams:
                raise self.fail(f"unknown stream {cond.stream}", cond.pos)
            self.pred(cond.pred, types, cond.label)
            return
        # A comparison over labelled attributes (x.a < y.b, or x.a > 5).
        attrs = list(ast.attributes(cond))
        if not attrs:
            raise self.fail("a condition must name at least one label (x[pred] or x.attr op ...)", cond.pos)
        for attr in attrs:
            types = self.label_in_scope(attr.label or "", attr.pos, labels)
            self.attribute_type(attr, types, attr.label or "")
        self.compare(cond, lambda a: self.attribute_type(a, labels[a.label or ""], a.label or ""))

    def label_in_scope(self, label: str, pos: int, labels: dict[str, set[str]]) -> set[str]:
        if label in labels:
            return labels[label]
        defined = ", ".join(sorted(labels)) or "none"
        raise self.fail(
            f"label {label} is not defined in the formula this FILTER applies to",
            pos,
            f"a label defined there: {defined}",
        )

    def attribute_type(self, attr: ast.Attr, types: set[str], label: str) -> str:
        """The value type of ``attr`` on events labelled ``label`` (which have ``types``)."""
        found: dict[str, str] = {}
        for type_name in sorted(types):
            declared = self.schema.event_types[type_name].attribute(attr.name)
            if declared is not None:
                found[type_name] = declared.value_type
        if not found:
            names = ", ".join(sorted(types))
            raise self.fail(
                f"unknown attribute {attr.name} for label {label} (event types: {names})", attr.pos
            )
        kinds = {_kind(t) for t in found.values()}
        if len(kinds) > 1:
            detail = ", ".join(f"{t}.{attr.name} is {k}" for t, k in found.items())
            raise self.fail(f"attribute {attr.name} has different types ({detail})", attr.pos)
        return kinds.pop()

    def pred(self, pred: ast.Pred, types: set[str], label: str) -> None:
        def attr_kind(attr: ast.Attr) -> str:
            return self.attribute_type(attr, types, label)

        if isinstance(pred, (ast.And, ast.Or)):
            for part in pred.parts:
                self.pred(part, types, label)
        elif isinstance(pred, ast.Not):
            self.pred(pred.operand, types, label)
        elif isinstance(pred, ast.Compare):
            self.compare(pred, attr_kind)
        elif isinstance(pred, ast.Like):
            if self.expr(pred.operand, attr_kind) != "string":
                raise self.fail("LIKE applies to strings only", pred.pos)
            self.check_regex(pred)
        elif isinstance(pred, ast.InSet):
            kind = self.expr(pred.operand, attr_kind)
            for value in pred.values:
                if _kind_of_value(value) != kind:
                    raise self.fail(
                        f"IN mixes types: the tested value is a {kind}, {value!r} is a "
                        f"{_kind_of_value(value)}",
                        pred.pos,
                    )
        elif isinstance(pred, ast.InInterval):
            if self.expr(pred.operand, attr_kind) != "number":
                raise self.fail("a range {a..b} applies to numbers only", pred.pos)
        elif isinstance(pred, ast.InRange):
            for part in (pred.operand, pred.low, pred.high):
                if self.expr(part, attr_kind) != "number":
                    raise self.fail("IN RANGE applies to numbers only", part.pos)

    def compare(self, node: ast.Compare, attr_kind) -> None:
        left = self.expr(node.left, attr_kind)
        right = self.expr(node.right, attr_kind)
        if left != right:
            raise self.fail(f"cannot compare a {left} with a {right}", node.pos)
        if left == "boolean" and node.op not in ("=", "!="):
            raise self.fail(f"booleans can only be compared with = or !=, not {node.op}", node.pos)

    def expr(self, expr: ast.Expr, attr_kind) -> str:
        if isinstance(expr, ast.Attr):
            return attr_kind(expr)
        if isinstance(expr, ast.Literal):
            return _kind_of_value(expr.value)
        if isinstance(expr, ast.Neg):
            if self.expr(expr.operand, attr_kind) != "number":
                raise self.fail("unary minus applies to numbers only", expr.pos)
            return "number"
        for side in (expr.left, expr.right):
            if self.expr(side, attr_kind) != "number":
                raise self.fail(f"arithmetic '{expr.op}' applies to numbers only", side.pos)
        return "number"

    def check_regex(self, pred: ast.Like) -> None:
        import pyarrow as pa
        import pyarrow.compute as pc

        try:
            pc.match_substring_regex(pa.array([""], pa.string()), f"^(?:{pred.pattern})$")
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            detail = str(exc).splitlines()[0]
            raise self.fail(f"invalid regular expression {pred.pattern!r}: {detail}", pred.pos) from None

    # ------------------------------------------------------------------ clauses

    def check_projection(self, labels: dict[str, set[str]]) -> None:
        projection = self.query.projection
        for item in projection.items:
            if item.label not in labels:
                defined = ", ".join(sorted(labels)) or "none"
                raise self.fail(
                    f"label {item.label} in SELECT is not defined in the formula",
                    item.pos,
                    f"one of: {defined}",
                )
            for attribute in item.attributes or ():
                self.attribute_type(ast.Attr(attribute, pos=item.pos), labels[item.label], item.label)

    def check_partition(self) -> dict[str, tuple[str, ...]]:
        groups = self.query.partition_by
        if not groups:
            return {}
        if len(groups) == 2 and len(groups[0]) != len(groups[1]):
            raise self.fail(
                "both PARTITION BY lists must have the same number of attributes", self.query.partition_pos
            )
        keys: dict[str, tuple[str, ...]] = {}
        for type_name in self.used:
            decl = self.schema.event_types[type_name]
            for group in groups:
                if all(decl.attribute(a) is not None for a in group):
                    keys[type_name] = group
                    break
            else:
                missing = [a for a in groups[0] if decl.attribute(a) is None]
                raise self.fail(
                    f"event type {type_name} has no attribute {missing[0]} to PARTITION BY",
                    self.query.partition_pos,
                )
        for index in range(len(groups[0])):
            kinds = {
                _kind(self.schema.event_types[t].attribute(key[index]).value_type) for t, key in keys.items()
            }
            if len(kinds) > 1:
                raise self.fail(
                    "PARTITION BY compares attributes of different types", self.query.partition_pos
                )
        return keys

    def check_within(self) -> None:
        within = self.query.within
        if within is None:
            return
        if within.value < 1:
            raise self.fail("a WITHIN window must be at least 1", within.pos)
        if within.kind == "time":
            for type_name in self.used:
                if self.schema.event_types[type_name].time_attribute is None:
                    raise self.fail(
                        f"a time window needs a primary_time attribute, and event type {type_name} has none "
                        f"(use WITHIN n EVENTS or WITHIN n [attribute])",
                        within.pos,
                    )
        elif within.kind == "attribute":
            for type_name in self.used:
                declared = self.schema.event_types[type_name].attribute(within.attribute or "")
                if declared is None:
                    raise self.fail(
                        f"event type {type_name} has no attribute {within.attribute} for WITHIN", within.pos
                    )
                if declared.type not in NUMERIC_TYPES:
                    raise self.fail(f"WITHIN [{within.attribute}] needs a numeric attribute", within.pos)


def _kind(value_type: str) -> str:
    return "number" if value_type in NUMERIC_TYPES else value_type


def _kind_of_value(value: object) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, str):
        return "string"
    return "number"


def describe(checked: CheckedQuery) -> str:
    """A human-readable summary of the analysis (used by ``ceql check``)."""
    lines = ["event types: " + ", ".join(checked.used_types)]
    lines.append("labels:")
    for label in sorted(checked.label_types):
        kind = "AS label" if label in checked.as_labels else "event type"
        sites = ", ".join(_line_col(checked.text, p) for p in checked.label_sites.get(label, []))
        types = ", ".join(sorted(checked.label_types[label]))
        lines.append(f"  {label} ({kind}; events of {types}) defined at {sites}")
    if checked.conditions:
        lines.append("conditions:")
        for pos, text in checked.conditions:
            lines.append(f"  {_line_col(checked.text, pos)}: {text}")
    if checked.partition_keys:
        lines.append("partition keys:")
        for type_name, key in checked.partition_keys.items():
            lines.append(f"  {type_name}: [{', '.join(key)}]")
    query = checked.query
    lines.append(f"strategy: {query.effective_strategy}; consume by: {query.effective_consume}")
    return "\n".join(lines)


def _line_col(text: str, pos: int) -> str:
    if pos < 0:
        return "?"
    line = text.count("\n", 0, pos) + 1
    column = pos - (text.rfind("\n", 0, pos) + 1) + 1
    return f"{line}:{column}"


__all__ = ["CheckedQuery", "analyze", "describe"]
