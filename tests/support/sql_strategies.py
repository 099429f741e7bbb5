"""Hypothesis strategies for MATCH_RECOGNIZE: generated queries (every clause and construct of
docs/sql.md) and generated partitioned inputs, for differential tests against the reference.

Inputs have a partition column ``p`` (with nulls), an order key ``t`` (with ties), a timestamp
``ts`` (milliseconds, non-decreasing in ``t``), integers ``v`` (with nulls), doubles ``w`` and
strings ``s``. Queries draw a pattern over variables A, B, C (and the union variable U = (A, B)
when SUBSET is drawn), conditions from an expression grammar that covers navigation (PREV,
NEXT, FIRST, LAST, with offsets), aggregates, CLASSIFIER, MATCH_NUMBER, arithmetic, CASE,
COALESCE and three-valued logic, measures with RUNNING and FINAL, every ROWS PER MATCH and AFTER
MATCH SKIP option, and WITHIN.
"""

from __future__ import annotations

import pyarrow as pa
from hypothesis import strategies as st

VARIABLES = ["A", "B", "C"]


@st.composite
def tables(draw, max_rows: int = 12) -> pa.Table:
    n = draw(st.integers(1, max_rows))
    p = draw(st.lists(st.one_of(st.none(), st.integers(0, 2)), min_size=n, max_size=n))
    t = draw(st.lists(st.integers(0, 6), min_size=n, max_size=n))
    v = draw(st.lists(st.one_of(st.none(), st.integers(-3, 6)), min_size=n, max_size=n))
    w = draw(st.lists(st.one_of(st.none(), st.sampled_from([0.5, -1.25, 2.0, 3.5, 0.0])), min_size=n, max_size=n))
    s = draw(st.lists(st.one_of(st.none(), st.sampled_from(["a", "b", "c", "ab"])), min_size=n, max_size=n))
    ts = [1_000 * x + draw(st.integers(0, 999)) for x in t]
    return pa.table(
        {
            "p": pa.array(p, pa.int64()),
            "t": pa.array(t, pa.int64()),
            "ts": pa.array(ts, pa.timestamp("ms")),
            "v": pa.array(v, pa.int64()),
            "w": pa.array(w, pa.float64()),
            "s": pa.array(s, pa.string()),
        }
    )


# ---------------------------------------------------------------------------- patterns


@st.composite
def patterns(draw, depth: int = 3) -> str:
    if depth <= 0:
        return draw(st.sampled_from(VARIABLES))
    kind = draw(
        st.sampled_from(
            ["var", "var", "var", "var", "concat", "concat", "concat", "alt", "quant", "quant", "quant", "group", "permute", "exclude", "anchor", "empty"]
        )
    )
    sub = patterns(depth - 1)
    if kind == "var":
        return draw(st.sampled_from(VARIABLES))
    if kind == "concat":
        return " ".join(draw(st.lists(sub, min_size=2, max_size=3)))
    if kind == "alt":
        return " | ".join(draw(st.lists(sub, min_size=2, max_size=3)))
    if kind == "group":
        return f"({draw(sub)})"
    if kind == "permute":
        return f"PERMUTE({', '.join(draw(st.lists(sub, min_size=2, max_size=3)))})"
    if kind == "exclude":
        return draw(sub) + " {- " + draw(sub) + " -}"
    if kind == "anchor":
        return draw(st.sampled_from(["^ ", "", ""])) + draw(sub) + draw(st.sampled_from([" $", "", ""]))
    if kind == "empty":
        return "()"
    quantifier = draw(st.sampled_from(["*", "+", "?", "{2}", "{0,2}", "{1,3}", "{2,}", "{,1}"]))
    reluctant = draw(st.sampled_from(["", "", "?"]))
    return f"({draw(sub)}){quantifier}{reluctant}"


# ---------------------------------------------------------------------------- expressions


def _var(draw, names: tuple[str, ...]) -> str:
    """A variable prefix ("A.") among ``names``, or none (an unqualified column)."""
    return draw(st.sampled_from([f"{n}." for n in names] or [""]))


@st.composite
def numbers(draw, names: tuple[str, ...], depth: int = 2) -> str:
    """An integer expression."""
    x = _var(draw, names)
    leaves = [
        f"{x}v",
        "v",
        f"PREV({x}v)",
        "PREV(v, 2)",
        f"NEXT({x}v)",
        f"FIRST({x}v)",
        f"LAST({x}v, 1)",
        f"FIRST({x}v, 1)",
        f"PREV(LAST({x}v), 1)",
        f"COUNT({x}*)",
        "COUNT(*)",
        f"COUNT({x}v)",
        f"SUM({x}v)",
        f"MIN({x}v)",
        "MAX(v)",
        "MATCH_NUMBER()",
        str(draw(st.integers(-2, 5))),
        f"CAST({x}w AS BIGINT)",
    ]
    if depth <= 0:
        return draw(st.sampled_from(leaves))
    kind = draw(st.sampled_from(["leaf", "leaf", "leaf", "arith", "case", "coalesce", "abs"]))
    if kind == "leaf":
        return draw(st.sampled_from(leaves))
    if kind == "arith":
        op = draw(st.sampled_from(["+", "-", "*", "/", "%"]))
        left = draw(numbers(names, depth - 1))
        right = draw(numbers(names, depth - 1)) if op in "+-*" else str(draw(st.sampled_from([1, 2, 3, -2])))
        return f"({left} {op} {right})"
    if kind == "abs":
        return f"ABS({draw(numbers(names, depth - 1))})"
    if kind == "coalesce":
        return f"COALESCE({draw(numbers(names, depth - 1))}, {draw(numbers(names, depth - 1))})"
    return f"CASE WHEN {draw(conditions(names, depth - 1))} THEN {draw(numbers(names, depth - 1))} ELSE {draw(numbers(names, depth - 1))} END"


@st.composite
def doubles(draw, names: tuple[str, ...]) -> str:
    x = _var(draw, names)
    return draw(
        st.sampled_from(
            [f"{x}w", "w", f"AVG({x}v)", "AVG(w)", f"SUM({x}w)", "PREV(w)", f"{x}w * 2.5", "w / 2", "LAST(w, 1)", "MAX(w)"]
        )
    )


@st.composite
def computed_strings(draw, names: tuple[str, ...]) -> str:
    """A string function of a string computed while matching: CLASSIFIER(), a navigation, an aggregate."""
    x = _var(draw, names)
    inner = draw(st.sampled_from(["CLASSIFIER()", "PREV(CLASSIFIER())", "FIRST(CLASSIFIER())", f"CLASSIFIER({x[:-1]})", "LAST(s, 1)", "MAX(s)", f"MIN({x}s)"]))
    kind = draw(st.sampled_from(["LOWER", "UPPER", "append", "prepend", "MIN", "MAX"]))
    if kind == "append":
        return f"{inner} || 'x'"
    if kind == "prepend":
        return f"'x' || LOWER({inner})"
    if kind in ("MIN", "MAX"):
        return f"{kind}(LOWER(CLASSIFIER({x[:-1]})))"
    return f"{kind}({inner})"


@st.composite
def conditions(draw, names: tuple[str, ...], depth: int = 2) -> str:
    x = _var(draw, names)
    atoms = [
        lambda: f"{draw(numbers(names, depth - 1))} {draw(st.sampled_from(['<', '<=', '>', '>=', '=', '<>']))} {draw(numbers(names, depth - 1))}",
        lambda: f"{draw(doubles(names))} {draw(st.sampled_from(['<', '>', '=']))} {draw(st.sampled_from(['0.5', '1', '2.0', x + 'w']))}",
        lambda: f"{draw(st.sampled_from([x + 's', 's', 'PREV(s)', 'MIN(s)', 'FIRST(' + x + 's)']))} {draw(st.sampled_from(['=', '<', '>=', '<>']))} '{draw(st.sampled_from(['a', 'ab', 'b', 'c']))}'",
        lambda: f"{draw(st.sampled_from(['CLASSIFIER()', 'PREV(CLASSIFIER())', f'CLASSIFIER({names[-1]})' if names else 'CLASSIFIER()', 'FIRST(CLASSIFIER())']))} = '{draw(st.sampled_from(VARIABLES))}'",
        lambda: f"{draw(numbers(names, 0))} IS {draw(st.sampled_from(['', 'NOT ']))}NULL",
        lambda: f"{draw(numbers(names, 0))} BETWEEN {draw(st.integers(-1, 2))} AND {draw(st.integers(2, 5))}",
        lambda: f"{draw(numbers(names, 0))} IN (0, 2, 4)",
        # string functions of values computed while matching (the VM's string tables)
        lambda: f"{draw(computed_strings(names))} {draw(st.sampled_from(['=', '<', '<>']))} '{draw(st.sampled_from(['a', 'ax', 'Ax', 'xa', 'AB', 'b']))}'",
        lambda: f"{draw(computed_strings(names))} LIKE '{draw(st.sampled_from(['a%', '%x', '_', 'A%', '%']))}'",
    ]
    if draw(st.integers(0, 9)) == 0:
        return draw(st.sampled_from(["TRUE", "FALSE", "NULL"]))
    if depth <= 0:
        return draw(st.sampled_from(atoms))()
    kind = draw(st.sampled_from(["atom", "atom", "atom", "and", "or", "not"]))
    if kind == "atom":
        return draw(st.sampled_from(atoms))()
    if kind == "not":
        return f"NOT ({draw(conditions(names, depth - 1))})"
    op = "AND" if kind == "and" else "OR"
    return f"({draw(conditions(names, depth - 1))} {op} {draw(conditions(names, depth - 1))})"


@st.composite
def measures(draw, names: tuple[str, ...], row_aggregates: bool = False) -> list[str]:
    x = _var(draw, names)
    options = [
        lambda: draw(numbers(names, 1)),
        lambda: draw(doubles(names)),
        lambda: draw(st.sampled_from(["CLASSIFIER()", f"CLASSIFIER({x[:-1]})", f"{x}s", "LAST(s, 1)", "MAX(s)", "PREV(CLASSIFIER())", "FINAL LAST(CLASSIFIER())", "NEXT(CLASSIFIER())", "FINAL FIRST(CLASSIFIER(), 1)"])),
        lambda: f"{draw(st.sampled_from(['FINAL', 'RUNNING']))} {draw(st.sampled_from(['LAST', 'FIRST']))}({x}v{draw(st.sampled_from(['', ', 1']))})",
        lambda: f"{draw(st.sampled_from(['FINAL', 'RUNNING']))} {draw(st.sampled_from(['COUNT', 'SUM', 'MAX']))}({x}v)",
        lambda: f"{x}ts",
        lambda: draw(computed_strings(names)),
        lambda: f"{x}ts + INTERVAL '1' SECOND",
        lambda: f"CASE WHEN {draw(conditions(names, 0))} THEN 'yes' ELSE {x}s END",
        lambda: draw(conditions(names, 1)),
    ]
    items = draw(st.lists(st.sampled_from(options), min_size=0, max_size=4))
    if row_aggregates:
        items.append(lambda: draw(row_aggregate_measures(names)))
    return [f"{make()} AS m{i}" for i, make in enumerate(items)]


@st.composite
def row_aggregate_measures(draw, names: tuple[str, ...]) -> str:
    """ARRAY_AGG, MAX_BY, MIN_BY and CONCAT_WS(sep, ARRAY_AGG(...)), RUNNING or FINAL, of a
    variable's rows or every row."""
    x = _var(draw, names)
    label = f"CLASSIFIER({x[:-1]})"
    semantics = draw(st.sampled_from(["", "RUNNING ", "FINAL "]))
    values = [f"{x}v", f"{x}s", label, f"{x}v * 2 + MATCH_NUMBER()", f"{x}w", f"{x}ts", f"{x}v > 2", f"{x}s || {label}"]
    keys = [f"{x}v", f"{x}w", f"{x}s", label, f"{x}ts", f"{x}t"]
    kind = draw(st.sampled_from(["array", "by", "concat"]))
    if kind == "array":
        return f"{semantics}ARRAY_AGG({draw(st.sampled_from(values))})"
    if kind == "concat":
        return f"CONCAT_WS('{draw(st.sampled_from(['', '-']))}', {semantics}ARRAY_AGG({draw(st.sampled_from([f'{x}s', label]))}))"
    func = draw(st.sampled_from(["MAX_BY", "MIN_BY"]))
    return f"{semantics}{func}({draw(st.sampled_from(values))}, {draw(st.sampled_from(keys))})"


@st.composite
def queries(draw, row_aggregates: bool = False) -> str:
    """A query; ``row_aggregates``: with a measure that is ARRAY_AGG, MAX_BY or MIN_BY."""
    union = draw(st.booleans())
    pattern = draw(patterns())
    used = [v for v in VARIABLES if v in pattern.replace("PERMUTE", "")]
    if union and not {"A", "B"} <= set(used):
        union = False
    names = tuple(used) + (("U",) if union else ())
    defines = []
    for var in used:
        if draw(st.integers(0, 4)) > 0:
            defines.append(f"{var} AS {draw(conditions(names))}")
    parts = []
    if draw(st.booleans()):
        parts.append("PARTITION BY p")
    order = draw(st.sampled_from(["ORDER BY t", "ORDER BY t", "ORDER BY t DESC", "ORDER BY ts", "", "ORDER BY s NULLS FIRST, t"]))
    if order:
        parts.append(order)
    m = draw(measures(names, row_aggregates))
    if m:
        parts.append("MEASURES " + ", ".join(m))
    rows = draw(
        st.sampled_from(
            [
                "",
                "ONE ROW PER MATCH",
                "ALL ROWS PER MATCH",
                "ALL ROWS PER MATCH SHOW EMPTY MATCHES",
                "ALL ROWS PER MATCH OMIT EMPTY MATCHES",
                "ALL ROWS PER MATCH WITH UNMATCHED ROWS",
            ]
        )
    )
    if rows:
        parts.append(rows)
    targets = used + (["U"] if union else [])
    skips = ["", "AFTER MATCH SKIP PAST LAST ROW", "AFTER MATCH SKIP TO NEXT ROW"]
    if targets:
        skips += [f"AFTER MATCH SKIP TO FIRST {draw(st.sampled_from(targets))}", f"AFTER MATCH SKIP TO LAST {draw(st.sampled_from(targets))}"]
    skip = draw(st.sampled_from(skips))
    if skip:
        parts.append(skip)
    parts.append(f"PATTERN ({pattern})")
    if order == "ORDER BY ts" and draw(st.integers(0, 2)) == 0:
        parts.append(f"WITHIN INTERVAL '{draw(st.sampled_from(['1', '2', '1.5']))}' SECOND")
    if union:
        parts.append("SUBSET U = (A, B)")
    if defines:
        parts.append("DEFINE " + ", ".join(defines))
    select = draw(st.sampled_from(["*", "*", "T.*"]))
    where = draw(st.sampled_from(["", "", " WHERE T.p IS NOT NULL" if "PARTITION BY p" in parts else ""]))
    return f"SELECT {select} FROM data MATCH_RECOGNIZE ({' '.join(parts)}) AS T{where}"
