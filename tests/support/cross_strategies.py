"""Generated conditions across events, in every position (issue 13).

``cross_conditions(own, free)`` builds FILTER conditions that read several events at a time:
comparisons of two labels with every operator, arithmetic (``+ - * / %`` on ints and doubles:
``v`` is an int on A, B, D and a double on C), string order, aggregates, PREV, NOT over
conditions, free labels (named but defined elsewhere in the query), mixed with one-event
conditions. ``cross_queries`` places them in every position the semantics gives them: inside
``+`` and ``:+``, OR branches, ALL, AND, the right side of UNLESS, NOT(E FILTER ...) bodies,
nested filters, PART-BY over labels (query clause) and inside formulas; with the stream
generator's nulls, missing values reach every comparison.
"""

from __future__ import annotations

from hypothesis import strategies as st

from ceql.lang import ast
from tests.support.strategies import (
    LABELS,
    TYPES,
    WINDOWS_NOT_NULL,
    _relabel,
    _repair_labels,
    covers_events,
    label_keys,
    shaped_formulas,
    shaped_queries,
    simple_pred,
    time_conditions,
)

ARITH_OPS = ("+", "-", "*", "/", "%")
NUMERIC = ("v", "id")
#: Every formula operator; FILTER twice, since conditions are what this generator is about.
CROSS_OPERATORS = (
    "seq", "cseq", "or", "and", "all", "unless", "iter", "citer", "as", "filter", "filter", "not", "partition",
)
CROSS_STRATEGIES = (None, None, None, None, "ALL", "ANY", "NEXT", "LAST", "MAX", "STRICT")
#: Every operator; the ones that hold on more pairs a little more often (more matches).
cross_op = st.sampled_from(["=", "!=", "!=", "<", "<=", "<=", ">", ">=", ">="])
literal = st.one_of(st.builds(ast.Literal, st.integers(0, 3)), st.builds(ast.Literal, st.sampled_from([0.5, 1.5, 2.0])))


def numeric_operand(labels: tuple[str, ...]) -> st.SearchStrategy[ast.Expr]:
    """``x.a``, ``x.a op literal``, ``x.a op y.b``, ``-x.a``: numeric expressions over labels."""
    attr = st.builds(lambda label, name: ast.Attr(name, label), st.sampled_from(labels), st.sampled_from(NUMERIC))
    return st.one_of(
        attr,
        attr,
        st.builds(ast.Arith, st.sampled_from(ARITH_OPS), attr, literal),
        st.builds(ast.Arith, st.sampled_from(ARITH_OPS), attr, attr),
        st.builds(ast.Arith, st.sampled_from(("+", "-", "*")), literal, attr),
        st.builds(ast.Neg, attr),
    )


def aggregate(labels: tuple[str, ...]) -> st.SearchStrategy[ast.Expr]:
    """Aggregates over a label (and COUNT(*))."""
    label = st.sampled_from(labels)
    return st.one_of(
        st.builds(lambda lab: ast.Aggregate("COUNT", lab), label),
        st.just(ast.Aggregate("COUNT", None)),
        st.builds(lambda func, lab: ast.Aggregate(func, lab, "v"), st.sampled_from(("SUM", "AVG", "MIN", "MAX")), label),
        st.builds(lambda func, lab: ast.Aggregate(func, lab, "v"), st.sampled_from(("FIRST", "LAST")), label),
        st.builds(lambda lab: ast.Aggregate("MAX", lab, "s"), label),
    )


def _pair(draw, labels: tuple[str, ...]) -> tuple[str, str]:
    """Two labels, different when there are several (a comparison across events)."""
    first = draw(st.sampled_from(labels))
    others = [label for label in labels if label != first] or [first]
    return first, draw(st.sampled_from(others))


@st.composite
def cross_atom(draw, own: tuple[str, ...], free: tuple[str, ...]):
    """One comparison that reads several events (or a one-event condition, now and then)."""
    named = own + free
    kind = draw(st.sampled_from(["pair"] * 5 + ["string", "aggregate", "aggregate", "prev", "free", "unary", "time"]))
    if kind == "time":  # TIMESTAMP and INTERVAL literals with the times of two labels
        return draw(time_conditions(_pair(draw, named)))
    if kind == "pair":
        left, right = _pair(draw, named)
        return ast.Compare(draw(cross_op), draw(numeric_operand((left,))), draw(numeric_operand((right,))))
    if kind == "string":
        left, right = _pair(draw, named)
        return ast.Compare(draw(cross_op), ast.Attr("s", left), ast.Attr("s", right))
    if kind == "aggregate":
        func = draw(aggregate(named))
        if func.attr == "s":
            other: ast.Expr = ast.Attr("s", draw(st.sampled_from(named)))
        else:
            other = draw(
                st.one_of(literal, literal, numeric_operand(named), aggregate(named).filter(lambda a: a.attr != "s"))
            )
        if func.func == "COUNT" and isinstance(other, ast.Literal):
            # COUNT is small: bounds that hold on some complex events and not on others.
            return ast.Compare(draw(st.sampled_from(["<=", ">=", "<", ">", "!="])), func, ast.Literal(draw(st.integers(1, 3))))
        return ast.Compare(draw(cross_op), func, other)
    if kind == "prev":
        label = draw(st.sampled_from(own))
        current: ast.Expr = ast.Attr("v", label)
        previous: ast.Expr = ast.Prev(label, "v")
        if draw(st.booleans()):
            previous = ast.Arith(draw(st.sampled_from(("+", "-"))), previous, draw(literal))
        return ast.Compare(draw(cross_op), current, previous)
    if kind == "free" and free:
        # An own label against a label read from an enclosing scope.
        return ast.Compare(
            draw(cross_op),
            draw(numeric_operand((draw(st.sampled_from(own)),))),
            draw(numeric_operand((draw(st.sampled_from(free)),))),
        )
    return ast.LabelCond(draw(st.sampled_from(own)), draw(simple_pred()))


def cross_conditions(own: tuple[str, ...], free: tuple[str, ...] = ()) -> st.SearchStrategy[ast.Cond]:
    """Conditions across events over the filtered formula's labels ``own`` and the labels
    ``free`` defined elsewhere: atoms, NOT, AND, OR."""
    atom = cross_atom(own, free)
    return st.one_of(
        atom,
        atom,
        atom,
        st.builds(ast.Not, atom),
        st.lists(atom, min_size=2, max_size=2).map(lambda p: ast.Or(tuple(p))),
        st.lists(atom, min_size=2, max_size=2).map(lambda p: ast.And(tuple(p))),
        st.builds(lambda a, b: ast.Or((ast.Not(a), b)), atom, atom),
    )


@st.composite
def cross_queries(draw, depth: int = 3, strategies_: tuple[str | None, ...] = CROSS_STRATEGIES):
    """A query with conditions across events somewhere in its formula (or in its PARTITION BY
    over labels): when the random formula has none, one is put on the whole formula."""
    from tests.support.agreement import has_cross_condition

    free = TYPES + LABELS
    query = draw(
        shaped_queries(depth, CROSS_OPERATORS, cross_conditions, clauses=False, strategies_=strategies_, free=free)
    )
    formula = query.formula
    if not has_cross_condition(formula):
        own = tuple(sorted(_defined(formula)))
        formula = ast.Filter(formula, draw(cross_conditions(own, ())))
    within = draw(
        st.one_of(
            st.none(),
            st.none(),
            st.builds(ast.Within, st.just("events"), st.integers(3, 8)),
            st.builds(ast.Within, st.just("time"), st.integers(3, 10)),
        )
    )
    partition_labels: tuple = ()
    labels = tuple(sorted(_defined(formula)))
    if draw(st.sampled_from([False] * 5 + [True])):
        partition_labels = draw(label_keys(labels))
    return ast.Query(
        projection=ast.Projection("star"),
        formula=formula,
        strategy=query.strategy,
        within=within,
        partition_labels=partition_labels,
        limit=draw(st.sampled_from([None] * 7 + [1, 2])),
    )


#: PART-BY over labels (in formulas and as the clause) with the operators that combine runs
#: out of order or by support: ALL, AND, UNLESS, iterations (issue 25's bug lived there).
PARTITION_OPERATORS = ("seq", "or", "all", "all", "and", "and", "unless", "iter", "as", "filter", "partition", "partition")


@st.composite
def partition_queries(draw, depth: int = 3, strategies_: tuple[str | None, ...] = CROSS_STRATEGIES):
    """A query with PART-BY over labels inside ALL / AND (``(f ALL g) PARTITION BY [x.v,
    y.id]`` as a part of a larger formula) and, in most cases, the PARTITION BY clause over
    labels on top of ALL, AND, UNLESS and iterations; keys read different attributes per label."""
    free = TYPES + LABELS
    left = draw(shaped_formulas(depth - 1, PARTITION_OPERATORS, cross_conditions, free))
    right = draw(shaped_formulas(depth - 1, PARTITION_OPERATORS, cross_conditions, free))
    kind = draw(st.sampled_from(["all", "and", "and-same", "unless", "iter", "seq"]))
    if kind == "all":
        formula: ast.Formula = ast.AllOf((left, right))
    elif kind == "and":
        formula = ast.Conjunction((left, right))
    elif kind == "and-same":
        # The same formula twice, relabelled: AND then has complex events (same support).
        formula = ast.Conjunction((left, _relabel(left, draw(st.permutations(LABELS)))))
    elif kind == "unless":
        formula = ast.Unless(left, right)
    elif kind == "iter":
        formula = ast.Iteration(ast.AllOf((left, right)) if draw(st.booleans()) else left)
    else:
        formula = ast.Sequence((left, right))
    labels = tuple(sorted(_defined(formula)))
    if labels and kind != "unless" and draw(st.booleans()):
        # PART-BY over labels right on the ALL / AND, inside what comes around it.
        formula = ast.PartitionBy(formula, draw(label_keys(labels)))
        around = draw(st.sampled_from(["none", "none", "iter", "seq", "all"]))
        if around == "iter":
            formula = ast.Iteration(formula)
        elif around in ("seq", "all"):
            other = draw(shaped_formulas(1, ("as",), cross_conditions, free))
            formula = ast.Sequence((formula, other)) if around == "seq" else ast.AllOf((other, formula))
    formula = _repair_labels(formula)
    if not covers_events(formula):
        formula = ast.Sequence((formula, ast.Label(ast.EventType("A"), "x")))
    labels = tuple(sorted(_defined(formula)))
    partition_labels: tuple = ()
    if labels and draw(st.sampled_from([True, True, False])):
        partition_labels = draw(label_keys(labels))
    within = draw(st.one_of(st.none(), st.none(), st.builds(ast.Within, st.just("events"), st.integers(3, 8))))
    return ast.Query(
        projection=ast.Projection("star"),
        formula=formula,
        strategy=draw(st.sampled_from(strategies_)),
        within=within,
        partition_labels=partition_labels,
        limit=draw(st.sampled_from([None] * 7 + [1, 2])),
    )


EXTENDED_OPERATORS = CROSS_OPERATORS + ("repeat", "start", "rename", "project")


@st.composite
def extended_matching_queries(draw, depth: int = 3):
    """Queries over every construct of the semantics (quantifiers, START, renaming, PROJECT,
    PART-BY in every position, conditions across events) with measures, windows, strategies
    and LIMIT, tuned to match often."""
    query = draw(
        shaped_queries(
            depth,
            EXTENDED_OPERATORS,
            cross_conditions,
            clauses=True,
            strategies_=CROSS_STRATEGIES,
            free=TYPES + LABELS,
            windows=WINDOWS_NOT_NULL,
        )
    )
    labels = tuple(sorted(_defined(query.formula)))
    measures: tuple = ()
    if labels and draw(st.booleans()):
        from ceql.lang.printer import print_expr

        exprs = draw(st.lists(st.one_of(aggregate(labels), st.builds(ast.Attr, st.sampled_from(NUMERIC), st.sampled_from(labels))), min_size=1, max_size=2))
        named = {print_expr(expr): ast.Measure(expr, print_expr(expr)) for expr in exprs}
        measures = tuple(named.values())
    partition_labels: tuple = ()
    if labels and not query.partition_by and draw(st.sampled_from([False] * 4 + [True])):
        partition_labels = draw(label_keys(labels))
    projection = ast.Projection(query.projection.kind, query.projection.items, measures)
    return ast.Query(
        projection=projection,
        formula=query.formula,
        strategy=query.strategy,
        partition_by=query.partition_by,
        partition_labels=partition_labels,
        within=query.within,
        consume=query.consume,
        limit=query.limit,
    )


def event_type_name(node: ast.Formula) -> str:
    """The event type under labels (``E AS x AS y``)."""
    while isinstance(node, ast.Label):
        node = node.body
    assert isinstance(node, ast.EventType)
    return node.name


def _defined(formula: ast.Formula) -> frozenset[str]:
    from ceql.lang import scopes

    return scopes.defined_labels(formula)




@st.composite
def unless_event_queries(draw, depth: int = 2):
    """``f UNLESS (E AS w FILTER c)`` with c reading w and f's labels (the kernel checks it per
    complex event: runtime/kernel/postfilter.py's RightEvent), sometimes with a PARTITION BY
    over the right side's own event (on c, or alone), the UNLESS the whole pattern or in a
    sequence, an OR or under AS; f and the clauses from ``cross_queries``."""
    base = draw(cross_queries(depth))
    left = base.formula
    own = ("w",) if draw(st.booleans()) else ("w", "x")  # g's labels, also one f may define
    event: ast.Formula = ast.EventType(draw(st.sampled_from(TYPES)))
    for label in own:
        event = ast.Label(event, label)
    free = tuple(sorted(_defined(left) - set(own)))
    right = ast.Filter(event, draw(cross_conditions(own, free or ("A",))))
    keyed = draw(st.sampled_from(["none", "none", "none", "labels", "plain", "only"]))
    if keyed != "none":
        # PARTITION BY inside the one-event right side: over its own labels (or every event),
        # on its condition or alone.
        body = event if keyed == "only" else right
        if keyed == "plain":
            keys = tuple(dict.fromkeys(ast.Attr(name) for name in draw(st.lists(st.sampled_from(("id", "v")), min_size=1, max_size=2))))
        else:
            keys = draw(label_keys(own + (event_type_name(event),)))
        right = ast.PartitionBy(body, keys)
    combine = draw(st.sampled_from(["none", "none", "none", "or", "and", "and-other"]))
    if combine != "none":
        # Still one event: an OR of two (one per branch), or an AND of two on one event (of
        # one type; of two types it never matches).
        kind = event_type_name(event) if combine == "and" else draw(st.sampled_from(TYPES))
        other: ast.Formula = ast.EventType(kind)
        if draw(st.booleans()):
            other = ast.Label(other, draw(st.sampled_from(("w", "v2"))))
        other = ast.Filter(other, draw(cross_conditions(tuple(sorted(_defined(other))), free or ("A",))))
        right = ast.Union_((right, other)) if combine == "or" else ast.Conjunction((right, other))
    formula: ast.Formula = ast.Unless(left, right)
    where = draw(st.sampled_from(["top", "top", "seq", "or", "as"]))
    if where == "seq":
        formula = ast.Sequence((ast.Label(ast.EventType(draw(st.sampled_from(TYPES))), "y"), formula))
    elif where == "or":
        formula = ast.Union_((formula, ast.EventType(draw(st.sampled_from(TYPES)))))
    elif where == "as":
        formula = ast.Label(formula, "z")
    return ast.Query(
        projection=base.projection,
        formula=formula,
        strategy=base.strategy,
        within=base.within,
        partition_labels=base.partition_labels,
        limit=base.limit,
    )


@st.composite
def project_window_queries(draw, depth: int = 2):
    """Conditions across events inside ``PROJECT[...]`` under a window (issue 40): ``f`` from
    ``cross_queries``, projected on all its labels (the kernel's enumerated complex event then
    has the reported one's events) or on some (events PROJECT drops: the Python path), the
    PROJECT the whole pattern or next to one more event, sometimes filtered outside."""
    base = draw(cross_queries(depth))
    labels = tuple(sorted(_defined(base.formula)))
    if not labels:
        labels = ("A",)
    kept = labels if draw(st.booleans()) else tuple(draw(st.lists(st.sampled_from(labels), min_size=1, max_size=2, unique=True)))
    formula: ast.Formula = ast.Project(base.formula, kept)
    where = draw(st.sampled_from(["top", "top", "before", "after", "filter"]))
    other = ast.Label(ast.EventType(draw(st.sampled_from(TYPES))), "y")
    if where == "before":
        formula = ast.Sequence((other, formula))
    elif where == "after":
        formula = ast.Sequence((formula, other))
    elif where == "filter":
        formula = ast.Filter(formula, draw(cross_conditions(kept, ())))
    within = draw(
        st.one_of(
            st.builds(ast.Within, st.just("events"), st.integers(2, 6)),
            st.builds(ast.Within, st.just("time"), st.integers(2, 8)),
        )
    )
    return ast.Query(
        projection=ast.Projection("star"),
        formula=formula,
        strategy=base.strategy,
        within=within,
        partition_labels=base.partition_labels,
        limit=base.limit,
    )


@st.composite
def replayed_queries(draw, depth: int = 2):
    """Conditions across events that only registers decide (issue 40; the kernel replays the
    register programs on each derivation: runtime/kernel/replay.py): ``f UNLESS g`` with g of
    several events (a sequence, a ``:`` chain, ALL, an iteration, a sequence with an iteration)
    whose conditions read g's labels and f's, the UNLESS the whole pattern, in a sequence, under
    an iteration, a renaming or a projection; or conditions reading labels of a repeated scope
    (``(E AS p ; E AS q FILTER q.v > p.v)+``), alone or after f. f and the clauses from
    ``cross_queries``, always under a window (the kernel enumerates every candidate)."""
    base = draw(cross_queries(depth))
    left = base.formula
    kind = draw(st.sampled_from(["seq", "seq", "cseq", "all", "iter", "seq-iter", "repeated"]))
    if kind == "repeated":
        first = ast.Label(ast.EventType(draw(st.sampled_from(TYPES))), "p")
        second = ast.Label(ast.EventType(draw(st.sampled_from(TYPES))), "q")
        free = tuple(sorted(_defined(left) - {"p", "q"}))
        body = ast.Sequence((first, ast.Filter(second, draw(cross_conditions(("q",), ("p",) + free)))))
        formula: ast.Formula = ast.Iteration(body)
        if draw(st.booleans()):
            formula = ast.Sequence((left, formula))
    else:
        free = tuple(sorted(_defined(left) - {"w", "u"})) or ("A",)
        first = ast.Label(ast.EventType(draw(st.sampled_from(TYPES))), "w")
        second = ast.Label(ast.EventType(draw(st.sampled_from(TYPES))), "u")
        if kind in ("seq", "cseq"):
            if draw(st.booleans()):  # the condition on the second event, w read from g
                right: ast.Formula = ast.Sequence(
                    (first, ast.Filter(second, draw(cross_conditions(("u",), ("w",) + free)))), kind == "cseq"
                )
            else:
                right = ast.Filter(ast.Sequence((first, second), kind == "cseq"), draw(cross_conditions(("w", "u"), free)))
        elif kind == "all":
            right = ast.Filter(ast.AllOf((first, second)), draw(cross_conditions(("w", "u"), free)))
        elif kind == "iter":
            right = ast.Filter(ast.Label(ast.Iteration(ast.EventType(draw(st.sampled_from(TYPES)))), "w"), draw(cross_conditions(("w",), free)))
        else:
            right = ast.Sequence((first, ast.Iteration(ast.Filter(second, draw(cross_conditions(("u",), ("w",) + free))))))
        formula = ast.Unless(left, right)
        where = draw(st.sampled_from(["top", "top", "seq", "iter", "rename", "project"]))
        if where == "seq":
            formula = ast.Sequence((ast.Label(ast.EventType(draw(st.sampled_from(TYPES))), "y"), formula))
        elif where == "iter":
            formula = ast.Iteration(formula)
        elif where == "rename":
            labels = sorted(_defined(left))
            if labels:
                formula = ast.Rename(formula, ((draw(st.sampled_from(labels)), "z"),))
        elif where == "project":
            labels = sorted(_defined(left))
            if labels:
                formula = ast.Project(formula, tuple(draw(st.lists(st.sampled_from(labels), min_size=1, max_size=2, unique=True))))
    return ast.Query(
        projection=base.projection,
        formula=formula,
        strategy=base.strategy,
        within=base.within or ast.Within("events", draw(st.integers(3, 8))),
        partition_labels=base.partition_labels,
        limit=base.limit,
    )


@st.composite
def twin_unless_queries(draw, depth: int = 2):
    """Two equal copies of ``unless_event_queries``' formula (the same condition in two right
    sides: the kernel checks each under its own compiler labels), joined by AND, ALL or a
    sequence, sometimes the second copy under an iteration (then on the Python path)."""
    base = draw(unless_event_queries(depth))
    formula = base.formula
    kind = draw(st.sampled_from(["and", "all", "seq", "seq-iter"]))
    if kind == "and":
        joined: ast.Formula = ast.Conjunction((formula, formula))
    elif kind == "all":
        joined = ast.AllOf((formula, formula))
    elif kind == "seq":
        joined = ast.Sequence((formula, formula))
    else:
        joined = ast.Sequence((formula, ast.Iteration(formula)))
    return ast.Query(
        projection=base.projection,
        formula=joined,
        strategy=base.strategy,
        within=base.within or ast.Within("events", 8),
        partition_labels=base.partition_labels,
        limit=base.limit,
    )
