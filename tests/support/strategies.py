"""Hypothesis strategies: random valid CEQL queries over a small schema, and random streams."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from hypothesis import strategies as st

from ceql.lang import ast, scopes, visit

TEST_DECLARATION = """
CREATE STREAM S {
  EVENT A { id:int, v:int, s:string, t:primary_time },
  EVENT B { id:int, v:int, s:string, t:primary_time },
  EVENT C { id:int, v:double, s:string, t:primary_time },
  EVENT D { id:int, v:int, s:string, t:primary_time }
}
"""
TYPES = ("A", "B", "C", "D")
LABELS = ("x", "y", "z")
STRINGS = ("a", "b", "ab")


def defined_labels(node: ast.Formula) -> set[str]:
    """Labels a condition on ``node`` may name as its own: event types outside NOT, and AS
    labels, outside the right sides of UNLESS (scopes.defined_labels)."""
    return set(scopes.defined_labels(node))


def covers_events(node: ast.Formula) -> bool:
    """Whether the formula can report at least one event (is not made of NOT(...) only)."""
    return any(label in TYPES for label in defined_labels(node))


# --------------------------------------------------------------------------- predicates

value_attr = st.just(ast.Attr("v"))
small_int = st.integers(min_value=0, max_value=4)


def number_expr(labels: tuple[str, ...] | None) -> st.SearchStrategy[ast.Expr]:
    """Numeric expressions; ``labels`` None means one-event (bare attributes)."""
    if labels is None:
        attrs = st.sampled_from([ast.Attr("v"), ast.Attr("id")])
    else:
        attrs = st.builds(
            lambda lab, name: ast.Attr(name, lab), st.sampled_from(labels), st.sampled_from(["v", "id"])
        )
    base = st.one_of(attrs, st.builds(ast.Literal, small_int))
    return st.one_of(
        base,
        st.builds(ast.Arith, st.sampled_from(["+", "-", "*"]), base, base),
        st.builds(ast.Neg, attrs),
    )


compare_op = st.sampled_from(["=", "!=", "<", "<=", ">", ">="])

atomic_pred = st.one_of(
    st.builds(ast.Compare, compare_op, number_expr(None), number_expr(None)),
    st.builds(
        ast.Compare,
        st.sampled_from(["=", "!="]),
        st.just(ast.Attr("s")),
        st.builds(ast.Literal, st.sampled_from(STRINGS)),
    ),
    st.builds(ast.Like, st.just(ast.Attr("s")), st.sampled_from(["a.*", "b", "(a|b)+", ".*b"])),
    st.builds(ast.InSet, value_attr, st.lists(small_int, min_size=1, max_size=3).map(tuple), st.booleans()),
    st.builds(
        ast.InSet,
        st.just(ast.Attr("s")),
        st.lists(st.sampled_from(STRINGS), min_size=1, max_size=2).map(tuple),
        st.booleans(),
    ),
    st.builds(ast.InInterval, value_attr, st.one_of(st.none(), small_int), small_int, st.booleans()),
    st.builds(ast.InInterval, value_attr, small_int, st.none(), st.booleans()),
    st.builds(ast.InRange, value_attr, st.builds(ast.Literal, small_int), st.builds(ast.Literal, small_int)),
)

preds = st.recursive(
    atomic_pred,
    lambda inner: st.one_of(
        st.builds(ast.Not, inner),
        st.lists(inner, min_size=2, max_size=3).map(lambda p: ast.And(tuple(p))),
        st.lists(inner, min_size=2, max_size=3).map(lambda p: ast.Or(tuple(p))),
    ),
    max_leaves=4,
)


def conditions(labels: tuple[str, ...], cross: bool = True) -> st.SearchStrategy[ast.Cond]:
    """Conditions over the given labels (LabelCond, and cross-event comparisons if ``cross``)."""
    label_cond = st.builds(ast.LabelCond, st.sampled_from(labels), preds)
    atoms = [label_cond]
    if cross:
        atoms.append(
            st.builds(ast.Compare, compare_op, number_expr(labels), number_expr(labels)).filter(_has_label)
        )
    atom = st.one_of(*atoms)
    return st.recursive(
        atom,
        lambda inner: st.one_of(
            st.lists(inner, min_size=2, max_size=3).map(lambda p: ast.And(tuple(p))),
            st.lists(inner, min_size=2, max_size=3).map(lambda p: ast.Or(tuple(p))),
        ),
        max_leaves=3,
    )


def _has_label(compare: ast.Compare) -> bool:
    stack = [compare.left, compare.right]
    while stack:
        item = stack.pop()
        if isinstance(item, ast.Attr) and item.label:
            return True
        if isinstance(item, ast.Arith):
            stack.extend((item.left, item.right))
        elif isinstance(item, ast.Neg):
            stack.append(item.operand)
    return False


# --------------------------------------------------------------------------- formulas

OPERATORS_ALL = ("seq", "cseq", "or", "iter", "citer", "as", "filter", "not", "and", "all", "unless")


@st.composite
def formulas(draw, depth: int = 3, operators: tuple[str, ...] = OPERATORS_ALL, cross: bool = True):
    """A random formula using only the given operators (atoms are always allowed)."""
    choices = ["atom"]
    if depth > 0:
        choices += [op for op in operators if op != "not"]
    if "not" in operators:
        choices.append("not")
    kind = draw(st.sampled_from(choices))
    if kind == "atom":
        return ast.EventType(draw(st.sampled_from(TYPES)))
    if kind == "not":
        atom = ast.EventType(draw(st.sampled_from(TYPES)))
        cond = draw(st.one_of(st.none(), st.builds(ast.LabelCond, st.just(atom.name), preds)))
        return ast.NotEvent(atom, cond)
    sub = formulas(depth - 1, operators, cross)
    if kind in ("seq", "cseq"):
        parts = draw(st.lists(sub, min_size=2, max_size=3))
        return ast.Sequence(tuple(parts), kind == "cseq")
    if kind in ("or", "and", "all"):
        parts = tuple(draw(st.lists(sub, min_size=2, max_size=2)))
        return {"or": ast.Union_, "and": ast.Conjunction, "all": ast.AllOf}[kind](parts)
    if kind == "unless":
        return ast.Unless(draw(sub), draw(sub))
    body = draw(sub)
    if kind in ("iter", "citer"):
        return ast.Iteration(body, kind == "citer")
    if kind == "as":
        if not covers_events(body):
            return body
        return ast.Label(body, draw(st.sampled_from(LABELS)))
    labels = tuple(sorted(defined_labels(body)))
    if not labels:
        return body
    return ast.Filter(body, draw(conditions(labels, cross)))


@st.composite
def queries(
    draw,
    depth: int = 3,
    operators: tuple[str, ...] = OPERATORS_ALL,
    strategies_: tuple[str | None, ...] = (None, "ALL", "ANY", "NEXT", "LAST", "MAX", "STRICT"),
    cross: bool = True,
    clauses: bool = True,
):
    """A random valid query over TEST_DECLARATION."""
    formula = draw(formulas(depth, operators, cross).filter(covers_events))
    labels = sorted(defined_labels(formula))
    projection_kind = draw(st.sampled_from(["star", "star", "none", "list"]))
    items: tuple = ()
    if projection_kind == "list":
        chosen = draw(st.lists(st.sampled_from(labels), min_size=1, max_size=2, unique=True))
        items = tuple(ast.ProjectionItem(label) for label in chosen)
    within = None
    partition: tuple = ()
    consume = None
    limit = None
    if clauses:
        within = draw(
            st.one_of(
                st.none(),
                st.none(),
                st.none(),
                st.builds(ast.Within, st.just("events"), st.integers(1, 8)),
                st.builds(ast.Within, st.just("attribute"), st.integers(1, 10), st.just("t")),
                st.builds(ast.Within, st.just("attribute"), st.integers(1, 10), st.just("v")),
                st.builds(ast.Within, st.just("time"), st.integers(1, 10)),
            )
        )
        partition = draw(st.sampled_from([(), (), (("id",),)]))
        consume = draw(st.sampled_from([None, None, "NONE", "ANY", "PARTITION"]))
        limit = draw(st.one_of(st.none(), st.none(), st.integers(1, 3)))
    return ast.Query(
        projection=ast.Projection(projection_kind, items),
        formula=formula,
        strategy=draw(st.sampled_from(strategies_)),
        streams=draw(st.sampled_from([(), ("S",)])),
        partition_by=partition,
        within=within,
        consume=consume,
        limit=limit,
    )


@st.composite
def streams(draw, min_size: int = 0, max_size: int = 8, types: tuple[str, ...] = TYPES):
    # Mostly A, B and C so that patterns over them often match.
    """A random stream of events over TEST_DECLARATION, with non-decreasing time ``t``."""
    size = draw(st.integers(min_size, max_size))
    events = []
    time = 0
    for _ in range(size):
        time += draw(st.integers(0, 3))
        event_type = draw(st.sampled_from(types + ("A", "B", "C")))
        value = draw(st.integers(0, 4))
        events.append(
            {
                "event_type": event_type,
                "id": draw(st.integers(0, 1)),
                "v": float(value) if event_type == "C" else value,
                "s": draw(st.sampled_from(STRINGS)),
                "t": time,
            }
        )
    return events


# =========================================================================== language extensions
#
# Generators for the constructs of docs/semantics.md that the engine may not evaluate yet:
# quantifiers, START, renaming, PROJECT, PARTITION BY inside formulas and over labels,
# aggregates, PREV, NOT over conditions, free labels, measures. Used by the round-trip and
# reference property tests; the differential tests can use them once the engine runs them.

OPERATORS_EXTENDED = OPERATORS_ALL + ("repeat", "start", "rename", "project", "partition")
AGGREGATE_FUNCS = ("SUM", "AVG", "MIN", "MAX", "FIRST", "LAST")
BOUNDS = ((0, 1), (0, None), (1, 2), (2, 2), (2, None), (1, None), (2, 3))


def _extended_operand(labels: tuple[str, ...]) -> st.SearchStrategy[ast.Expr]:
    """Operands of FILTER comparisons: label attributes, aggregates, literals."""
    return st.one_of(
        st.builds(lambda lab, name: ast.Attr(name, lab), st.sampled_from(labels), st.sampled_from(["v", "id"])),
        st.builds(lambda lab: ast.Aggregate("COUNT", lab), st.sampled_from(labels)),
        st.just(ast.Aggregate("COUNT", None)),
        st.builds(
            lambda func, lab: ast.Aggregate(func, lab, "v"), st.sampled_from(AGGREGATE_FUNCS), st.sampled_from(labels)
        ),
        st.builds(ast.Literal, small_int),
    )


def extended_conditions(labels: tuple[str, ...]) -> st.SearchStrategy[ast.Cond]:
    """Conditions with aggregates, PREV and NOT over conditions, over the given labels."""
    operand = _extended_operand(labels)
    compare = st.builds(
        ast.Compare,
        compare_op,
        operand,
        st.one_of(operand, st.builds(ast.Arith, st.sampled_from(["+", "-", "*", "/", "%"]), operand, operand)),
    ).filter(lambda c: any(isinstance(n, (ast.Aggregate, ast.Attr)) for n in (c.left, c.right)))
    prev = st.builds(
        lambda lab, op: ast.Compare(op, ast.Attr("v", lab), ast.Prev(lab, "v")), st.sampled_from(labels), compare_op
    )
    atom = st.one_of(compare, prev, st.builds(ast.LabelCond, st.sampled_from(labels), preds), time_conditions(labels))
    return st.recursive(
        atom,
        lambda inner: st.one_of(
            st.builds(ast.Not, inner),
            st.lists(inner, min_size=2, max_size=2).map(lambda p: ast.And(tuple(p))),
            st.lists(inner, min_size=2, max_size=2).map(lambda p: ast.Or(tuple(p))),
        ),
        max_leaves=3,
    )


#: The attributes a PART-BY reads. Keys over labels read each label's own one, so that one
#: event type can be keyed by different attributes in different roles (``[x.v, y.id]``: an
#: equality between two attributes, where the engine's equality index must read, per move, the
#: attribute of the label that move reports; issue 25).
KEY_ATTRIBUTES = ("id", "id", "v")


@st.composite
def label_keys(draw, labels: tuple[str, ...], max_size: int = 3):
    """The keys of a PART-BY over labels: one to ``max_size`` (label, attribute) pairs, each
    label once or twice (twice with two attributes: one event keyed twice must agree)."""
    chosen = draw(st.lists(st.sampled_from(labels), min_size=1, max_size=max_size))
    keys = dict.fromkeys(ast.Attr(draw(st.sampled_from(KEY_ATTRIBUTES)), label) for label in chosen)
    return tuple(keys)


def _mark_contiguous(part: ast.Formula) -> ast.Formula:
    """A quantifier written as an element of a ':' chain (under AS or renaming) repeats
    contiguously, as the parser reads it."""
    if isinstance(part, ast.Repeat):
        return dataclasses.replace(part, contiguous=True)
    if isinstance(part, (ast.Label, ast.Rename)):
        return dataclasses.replace(part, body=_mark_contiguous(part.body))
    return part


@st.composite
def extended_formulas(draw, depth: int = 3, free: tuple[str, ...] = ()):
    """A random formula over every construct; conditions may also name the ``free`` labels."""
    # FILTER three times as likely as the other operators: conditions carry most extensions.
    kind = draw(st.sampled_from(["atom"] + (list(OPERATORS_EXTENDED) + ["filter"] * 2 if depth > 0 else [])))
    if kind == "atom":
        return ast.EventType(draw(st.sampled_from(TYPES)))
    if kind == "not":
        atom = ast.EventType(draw(st.sampled_from(TYPES)))
        return ast.NotEvent(atom, draw(st.one_of(st.none(), st.builds(ast.LabelCond, st.just(atom.name), preds))))
    sub = extended_formulas(depth - 1, free)
    if kind in ("seq", "cseq"):
        parts = tuple(draw(st.lists(sub, min_size=2, max_size=3)))
        if kind == "cseq" and draw(st.booleans()):
            parts = tuple(_mark_contiguous(p) for p in parts)
        return ast.Sequence(parts, kind == "cseq")
    if kind in ("or", "and", "all"):
        parts = tuple(draw(st.lists(sub, min_size=2, max_size=2)))
        return {"or": ast.Union_, "and": ast.Conjunction, "all": ast.AllOf}[kind](parts)
    if kind == "unless":
        return ast.Unless(draw(sub), draw(sub))
    if kind == "partition" and draw(st.booleans()):
        # PART-BY over labels right on an ALL / AND, each side labelled (issue 25's bug lived
        # there: ``((B AS x1)+ ALL B AS x2) PARTITION BY [x1.v, x2.id]``).
        sides = []
        for side in (draw(sub), draw(sub)):
            if not scopes.defined_labels(side) or draw(st.booleans()):
                side = ast.Label(side, draw(st.sampled_from(LABELS)))
            sides.append(side)
        combined = draw(st.sampled_from([ast.AllOf, ast.Conjunction]))(tuple(sides))
        return ast.PartitionBy(combined, draw(label_keys(tuple(sorted(scopes.defined_labels(combined))))))
    body = draw(sub)
    defined = tuple(sorted(scopes.defined_labels(body)))
    if kind in ("iter", "citer"):
        return ast.Iteration(body, kind == "citer")
    if kind == "repeat":
        low, high = draw(st.sampled_from(BOUNDS))
        return ast.Repeat(body, low, high)
    if kind == "start":
        return ast.Start(body)
    if not defined:
        return body
    if kind == "as":
        return ast.Label(body, draw(st.sampled_from(LABELS)))
    if kind == "rename":
        source = draw(st.sampled_from(defined))
        return ast.Rename(body, ((source, draw(st.sampled_from(LABELS + ("w",)))),))
    if kind == "project":
        return ast.Project(body, tuple(draw(st.lists(st.sampled_from(defined), min_size=1, max_size=2, unique=True))))
    if kind == "partition":
        if draw(st.booleans()):
            return ast.PartitionBy(body, (ast.Attr("id"),))
        return ast.PartitionBy(body, draw(label_keys(defined)))
    named = tuple(sorted(set(defined) | set(free)))
    return ast.Filter(body, draw(extended_conditions(named)))


@st.composite
def extended_queries(draw, depth: int = 3):
    """A random query over every construct (not always valid: callers check it first)."""
    formula = _repair_labels(draw(extended_formulas(depth, free=TYPES + LABELS)))
    labels = sorted(scopes.defined_labels(formula))
    measures: tuple = ()
    items: tuple = ()
    kind = draw(st.sampled_from(["star", "none", "list"]))
    if labels and kind == "list":
        items = tuple(ast.ProjectionItem(label) for label in draw(st.lists(st.sampled_from(labels), min_size=1, max_size=2, unique=True)))
    if labels and draw(st.booleans()):
        exprs = draw(st.lists(_extended_operand(tuple(labels)), min_size=1, max_size=2))
        from ceql.lang.printer import print_expr

        named = {}
        for index, expr in enumerate(exprs):
            name = print_expr(expr) if draw(st.booleans()) else f"m{index}"
            named.setdefault(name, ast.Measure(expr, name))
        measures = tuple(named.values())
    partition_labels: tuple = ()
    if labels and draw(st.booleans()):
        partition_labels = draw(label_keys(tuple(labels)))
    within = draw(
        st.one_of(
            st.none(),
            st.builds(ast.Within, st.just("events"), st.integers(1, 8)),
            st.builds(ast.Within, st.just("time"), st.sampled_from([1, 999, 10**9, 5400 * 10**9 + 7])),
        )
    )
    if kind == "list" and not items:
        kind = "star"
    return ast.Query(
        projection=ast.Projection(kind, items, measures),
        formula=formula,
        strategy=draw(st.sampled_from([None, "ALL", "NEXT", "LAST", "MAX", "STRICT"])),
        partition_labels=partition_labels,
        within=within,
        limit=draw(st.one_of(st.none(), st.integers(1, 3))),
    )


def _repair_labels(formula: ast.Formula) -> ast.Formula:
    """Conditions may name labels the query defines nowhere: rename those to one it defines
    (every event type has the same attributes, so types stay right)."""
    known = sorted(scopes.labels_anywhere(formula))
    if not known:
        return formula

    def fix(label: str | None) -> str | None:
        return label if label is None or label in known else known[sum(map(ord, label)) % len(known)]

    def rewrite(node: ast.Node) -> ast.Node:
        if isinstance(node, (ast.Attr, ast.Aggregate, ast.Prev, ast.LabelCond)) and fix(node.label) != node.label:
            return dataclasses.replace(node, label=fix(node.label))
        return node

    return visit.transform(formula, rewrite)


# =========================================================================== cases that match
#
# The generators above produce many cases where nothing matches (random predicates over four
# event types, streams that rarely hold the query's types). The ones below are tuned so that
# most cases report complex events: formulas over few types, short simple predicates over the
# values the streams hold, streams made mostly of the types the query names, windows wide
# enough to hold a match. ``Case`` bundles a query, a stream, the points where the stream is
# cut into batches, and the point where the evaluator's state is saved and reloaded.

MATCH_TYPES = ("A", "B", "C")
CORE_OPERATORS = ("seq", "cseq", "or", "iter", "citer", "as", "filter", "not")
#: A condition factory: (labels the filtered formula defines, other labels it may name) -> conditions.
CondFactory = Callable[[tuple[str, ...], tuple[str, ...]], st.SearchStrategy[ast.Cond]]


@dataclasses.dataclass(frozen=True)
class Case:
    """One differential case: a query, its stream, batch cuts and where the state round-trips."""

    query: ast.Query
    events: list
    cuts: tuple[int, ...]
    save_at: int | None

    def __repr__(self) -> str:
        from ceql.lang import print_query

        return f"Case({print_query(self.query)!r}, events={self.events!r}, cuts={self.cuts}, save_at={self.save_at})"


#: Time literals over the small times ``matching_streams`` produce (nanoseconds 0..12).
timestamps = st.builds(ast.Literal, st.integers(0, 12), st.just("timestamp"))
intervals = st.builds(ast.Literal, st.integers(0, 4), st.just("interval"))


def time_conditions(labels: tuple[str, ...]) -> st.SearchStrategy[ast.Cond]:
    """Conditions on times with TIMESTAMP and INTERVAL literals: ``x.t < TIMESTAMP '...'``,
    ``x.t + INTERVAL '2' NANOSECONDS >= y.t``, ``y.t - x.t <= INTERVAL '3' NANOSECONDS``."""
    time = st.builds(lambda lab: ast.Attr("t", lab), st.sampled_from(labels))
    return st.one_of(
        st.builds(ast.Compare, compare_op, time, timestamps),
        st.builds(ast.Compare, compare_op, st.builds(ast.Arith, st.sampled_from(["+", "-"]), time, intervals), time),
        st.builds(ast.Compare, compare_op, st.builds(ast.Arith, st.just("-"), time, time), intervals),
        st.builds(ast.LabelCond, st.sampled_from(labels), st.builds(ast.Compare, compare_op, st.just(ast.Attr("t")), timestamps)),
    )


def simple_pred() -> st.SearchStrategy[ast.Pred]:
    """One-event predicates over the values ``matching_streams`` produce (often true)."""
    value = st.integers(0, 3)
    return st.one_of(
        st.builds(ast.Compare, compare_op, st.sampled_from([ast.Attr("v"), ast.Attr("id")]), st.builds(ast.Literal, value)),
        st.builds(ast.InSet, st.just(ast.Attr("v")), st.lists(value, min_size=2, max_size=3, unique=True).map(tuple), st.booleans()),
        st.builds(ast.Compare, st.sampled_from(["=", "!="]), st.just(ast.Attr("s")), st.builds(ast.Literal, st.sampled_from(STRINGS))),
        st.builds(ast.Like, st.just(ast.Attr("s")), st.sampled_from(["a.*", ".*b", "a|b"])),
        st.builds(ast.InInterval, st.just(ast.Attr("v")), st.sampled_from([None, 0, 1]), st.sampled_from([None, 2, 3]), st.booleans()).filter(
            lambda p: p.low is not None or p.high is not None
        ),
        st.builds(ast.Compare, compare_op, st.just(ast.Attr("t")), timestamps),
    )


def unary_conditions(own: tuple[str, ...], free: tuple[str, ...] = ()) -> st.SearchStrategy[ast.Cond]:
    """Conditions on one event at a time: ``x[pred]`` over the filtered formula's labels."""
    label_cond = st.builds(ast.LabelCond, st.sampled_from(own), simple_pred())
    return st.one_of(
        label_cond,
        label_cond,
        st.lists(label_cond, min_size=2, max_size=2).map(lambda p: ast.And(tuple(p))),
        st.lists(label_cond, min_size=2, max_size=2).map(lambda p: ast.Or(tuple(p))),
    )


def positive_types(formula: ast.Formula) -> set[str]:
    """The event types of the formula's atoms outside NOT(...) (the types a match is made of)."""
    negated = {id(node.atom) for node in visit.walk(formula, formulas_only=True) if isinstance(node, ast.NotEvent)}
    return {
        node.name
        for node in visit.walk(formula, formulas_only=True)
        if isinstance(node, ast.EventType) and id(node) not in negated
    }


@st.composite
def shaped_formulas(
    draw,
    depth: int = 3,
    operators: tuple[str, ...] = CORE_OPERATORS,
    conditions: CondFactory = unary_conditions,
    free: tuple[str, ...] = (),
    types: tuple[str, ...] = MATCH_TYPES,
):
    """A random formula over ``types`` using the given operators; FILTER conditions come from
    ``conditions(own labels, free labels)``. Operators: seq cseq or and all unless iter citer as
    filter not partition repeat start rename project."""
    inner = [op for op in operators if op != "not"]
    kinds = ["atom"] * (2 if depth > 1 else 3) + (inner if depth > 0 else [])
    if "not" in operators and depth > 0:
        kinds.append("seq-not")
    kind = draw(st.sampled_from(kinds))
    sub = shaped_formulas(depth - 1, operators, conditions, free, types)
    if kind == "atom":
        atom: ast.Formula = ast.EventType(draw(st.sampled_from(types)))
        if draw(st.sampled_from([True, True, False])):
            atom = ast.Label(atom, draw(st.sampled_from(LABELS)))
        return atom
    if kind == "seq-not":
        # NOT(E) needs neighbours: it only ever appears between two parts of a sequence.
        negated = ast.EventType(draw(st.sampled_from(types + ("D", "D"))))
        cond = None
        if draw(st.booleans()):
            cond = draw(conditions((negated.name,), free))
        contiguous = draw(st.sampled_from([False, False, False, True]))
        return ast.Sequence((draw(sub), ast.NotEvent(negated, cond), draw(sub)), contiguous)
    if kind in ("seq", "cseq"):
        return ast.Sequence(tuple(draw(st.lists(sub, min_size=2, max_size=3))), kind == "cseq")
    if kind in ("or", "all"):
        parts = tuple(draw(st.lists(sub, min_size=2, max_size=2)))
        return ast.Union_(parts) if kind == "or" else ast.AllOf(parts)
    if kind == "and":
        # Two random formulas rarely have a complex event with the same support: the second
        # part is mostly the first one relabelled and filtered.
        first = draw(sub)
        if draw(st.sampled_from([False, False, False, True])):
            return ast.Conjunction((first, draw(sub)))
        second = _relabel(first, draw(st.permutations(LABELS)))
        defined = tuple(sorted(scopes.defined_labels(second)))
        if defined and draw(st.booleans()):
            second = ast.Filter(second, draw(conditions(defined, free)))
        return ast.Conjunction((first, second))
    if kind == "unless":
        # A right side that matches rarely (D is rare in the streams), so that some left
        # complex events survive.
        right_types = draw(st.sampled_from([("D",), ("D",), types]))
        right = draw(shaped_formulas(max(0, depth - 2), operators, conditions, free, right_types))
        right_labels = tuple(sorted(scopes.defined_labels(right)))
        if "filter" in operators and right_labels and draw(st.booleans()):
            # A condition on the right side, which may read the left side's labels.
            right = ast.Filter(right, draw(conditions(right_labels, free)))
        return ast.Unless(draw(sub), right)
    body = draw(sub)
    defined = tuple(sorted(scopes.defined_labels(body)))
    if kind in ("iter", "citer"):
        return ast.Iteration(body, kind == "citer")
    if kind == "repeat":
        low, high = draw(st.sampled_from(((1, 2), (2, 2), (2, None), (1, None), (2, 3))))
        return ast.Repeat(body, low, high)
    if kind == "start":
        return ast.Start(body)
    if not defined:
        return body
    if kind == "as":
        return ast.Label(body, draw(st.sampled_from(LABELS)))
    if kind == "filter":
        return ast.Filter(body, draw(conditions(defined, free)))
    if kind == "partition":
        if draw(st.booleans()):
            return ast.PartitionBy(body, (ast.Attr(draw(st.sampled_from(KEY_ATTRIBUTES))),))
        return ast.PartitionBy(body, draw(label_keys(defined)))
    if kind == "rename":
        return ast.Rename(body, ((draw(st.sampled_from(defined)), draw(st.sampled_from(LABELS + ("w",)))),))
    if kind == "project":
        return ast.Project(body, tuple(draw(st.lists(st.sampled_from(defined), min_size=1, max_size=2, unique=True))))
    raise ValueError(f"unknown operator {kind}")


def _relabel(formula: ast.Formula, order: list[str]) -> ast.Formula:
    """The formula with its AS labels permuted (LABELS[i] -> order[i])."""
    mapping = dict(zip(LABELS, order))

    def rewrite(node: ast.Node) -> ast.Node:
        if isinstance(node, ast.Label) and node.label in mapping:
            return dataclasses.replace(node, label=mapping[node.label])
        if isinstance(node, (ast.Attr, ast.Aggregate, ast.Prev, ast.LabelCond)) and node.label in mapping:
            return dataclasses.replace(node, label=mapping[node.label])
        return node

    return visit.transform(formula, rewrite)


#: Windows of the three kinds. (A window over an attribute that may be null, such as v with
#: ``matching_streams(nulls=True)``, has no defined meaning yet: WINDOWS_NOT_NULL avoids it.)
WINDOWS_NOT_NULL = st.one_of(
    st.builds(ast.Within, st.just("events"), st.integers(2, 10)),
    st.builds(ast.Within, st.just("time"), st.integers(2, 12)),
    st.builds(ast.Within, st.just("attribute"), st.integers(2, 12), st.just("t")),
)
WINDOWS = st.one_of(WINDOWS_NOT_NULL, st.builds(ast.Within, st.just("attribute"), st.integers(1, 4), st.just("v")))


@st.composite
def shaped_queries(
    draw,
    depth: int = 3,
    operators: tuple[str, ...] = CORE_OPERATORS,
    conditions: CondFactory = unary_conditions,
    clauses: bool = False,
    strategies_: tuple[str | None, ...] = (None,),
    free: tuple[str, ...] = (),
    windows: st.SearchStrategy[ast.Within] = WINDOWS,
):
    """A query whose formula comes from ``shaped_formulas``; with ``clauses``, also windows of
    the three kinds, PARTITION BY, CONSUME BY, LIMIT and projections."""
    formula = draw(shaped_formulas(depth, operators, conditions, free).filter(covers_events))
    formula = _repair_labels(formula)
    labels = sorted(defined_labels(formula))
    projection = ast.Projection("star")
    within = partition = consume = limit = None
    if clauses:
        kind = draw(st.sampled_from(["star", "star", "none", "list"]))
        items: tuple = ()
        if kind == "list":
            chosen = draw(st.lists(st.sampled_from(labels), min_size=1, max_size=2, unique=True))
            items = tuple(ast.ProjectionItem(label) for label in chosen)
        projection = ast.Projection(kind, items)
        within = draw(st.one_of(st.none(), windows, windows))
        partition = draw(st.sampled_from([None, None, (("id",),)]))
        consume = draw(st.sampled_from([None, None, None, "NONE", "ANY", "PARTITION"]))
        limit = draw(st.sampled_from([None, None, None, 1, 2]))
    return ast.Query(
        projection=projection,
        formula=formula,
        strategy=draw(st.sampled_from(strategies_)),
        partition_by=partition or (),
        within=within,
        consume=consume,
        limit=limit,
    )


@st.composite
def matching_streams(
    draw, types: tuple[str, ...] = MATCH_TYPES, min_size: int = 5, max_size: int = 10, nulls: bool = False
):
    """A stream made mostly of ``types`` (the types a query names), values in 0..3, ids 0..1,
    non-decreasing time ``t``; with ``nulls``, some missing values."""
    pool = tuple(types) * 4 + TYPES
    size = draw(st.integers(min_size, max_size))
    events = []
    time = 0
    for _ in range(size):
        time += draw(st.integers(0, 2))
        event_type = draw(st.sampled_from(pool))
        value = draw(st.integers(0, 3))
        v: object = float(value) + draw(st.sampled_from([0.0, 0.0, 0.0, 0.5])) if event_type == "C" else value
        s: object = draw(st.sampled_from(STRINGS))
        # (Hypothesis prefers the first element of sampled_from: the common case goes first.)
        if nulls and draw(st.sampled_from([False] * 11 + [True])):
            v = None
        if nulls and draw(st.sampled_from([False] * 15 + [True])):
            s = None
        events.append({"event_type": event_type, "id": draw(st.integers(0, 1)), "v": v, "s": s, "t": time})
    return events


@st.composite
def cases(draw, queries_: st.SearchStrategy[ast.Query], min_size: int = 5, max_size: int = 10, nulls: bool = False):
    """A ``Case``: a query, a stream made mostly of its types, random batch cuts and (mostly)
    a state round trip at a random position."""
    query = draw(queries_)
    types = tuple(sorted(positive_types(query.formula))) or MATCH_TYPES
    events = draw(matching_streams(types, min_size, max_size, nulls))
    cuts = tuple(draw(st.lists(st.integers(1, max(1, len(events) - 1)), max_size=3)))
    save_at = draw(st.one_of(st.none(), st.integers(1, max(1, len(events) - 1))))
    return Case(query, events, cuts, save_at)


# =========================================================================== NOT FOLLOWED BY

#: Windows over measures that never decrease (NOT FOLLOWED BY needs one), short enough that
#: deadlines pass inside the generated streams.
ABSENCE_WINDOWS = st.one_of(
    st.builds(ast.Within, st.just("events"), st.integers(1, 5)),
    st.builds(ast.Within, st.just("time"), st.integers(1, 6)),
    st.builds(ast.Within, st.just("attribute"), st.integers(1, 6), st.just("t")),
)


@st.composite
def absent_formulas(draw, labels: tuple[str, ...]):
    """What must not follow: an event type (or two in sequence), often filtered, often
    correlated with a label of the formula before it (``p.id = x.id``)."""
    first = ast.Label(ast.EventType(draw(st.sampled_from(MATCH_TYPES))), "p")
    body: ast.Formula = first
    if draw(st.sampled_from([False, False, True])):
        body = ast.Sequence((first, ast.EventType(draw(st.sampled_from(MATCH_TYPES)))))
    kind = draw(st.sampled_from(["plain", "filter", "correlated", "correlated", "time"]))
    if kind == "plain":
        return body
    if kind == "filter":
        return ast.Filter(body, ast.LabelCond("p", draw(simple_pred())))
    other = draw(st.sampled_from(labels))
    if kind == "time":  # g within some time of the formula's event
        return ast.Filter(
            body,
            ast.Compare(draw(compare_op), ast.Attr("t", "p"), ast.Arith("+", ast.Attr("t", other), draw(intervals))),
        )
    attribute = draw(st.sampled_from(["id", "v"]))
    return ast.Filter(body, ast.Compare(draw(st.sampled_from(["=", "=", "!=", "<"])), ast.Attr(attribute, "p"), ast.Attr(attribute, other)))


@st.composite
def absence_queries(draw, strategies_: tuple[str | None, ...] = (None, None, "ALL", "ANY", "NEXT", "LAST", "MAX", "STRICT")):
    """``WHERE f NOT FOLLOWED BY g WITHIN ...``: f without NOT or PROJECT, every clause."""
    operators = tuple(op for op in CORE_OPERATORS if op != "not")
    query = draw(shaped_queries(2, operators, clauses=True, strategies_=strategies_, windows=ABSENCE_WINDOWS))
    labels = tuple(sorted(label for label in defined_labels(query.formula) if label != "p"))
    within = query.within if query.within is not None else draw(ABSENCE_WINDOWS)
    projection = query.projection
    if draw(st.booleans()):  # values of the reported complex event (read from columns g does not read)
        label = draw(st.sampled_from(labels))
        measures = (
            ast.Measure(ast.Aggregate("FIRST", label, "s"), "first_s"),
            ast.Measure(ast.Aggregate("COUNT", None), "n_events"),
        )
        projection = dataclasses.replace(projection, measures=measures)
    return dataclasses.replace(query, absent=draw(absent_formulas(labels)), within=within, projection=projection)
