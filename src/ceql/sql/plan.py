"""How a MATCH_RECOGNIZE query is run, in words (``ceql.sql.explain``, ``ceql check --sql``):
the CEQL query it corresponds to, which conditions are row masks computed column-wise and which
run in the VM, and the matcher's program.

``to_ceql`` writes the CEQL equivalent of the queries that have one: each row is an event of
one type ``R`` holding all the input's columns, each pattern variable a label, concatenation
CEQL's ``:`` (contiguity, within the partition), ``+``/``{n}`` CEQL's ``:+`` and repeated ``:``,
``|`` ``OR``, a DEFINE condition a FILTER, PARTITION BY CEQL's sub-streams and WITHIN a window
over the time column. CEQL reports *every* complex event; MATCH_RECOGNIZE keeps, per starting
row, the preferred one and then skips (AFTER MATCH SKIP): the two agree when at most one match
can start at a row (for instance when the variables' conditions are disjoint) under AFTER MATCH
SKIP TO NEXT ROW. What CEQL has no equivalent for is named.
"""

from __future__ import annotations

from ceql.sql import ast, ir
from ceql.sql.analysis import Checked
from ceql.sql.compiler import Compiled
from ceql.sql.parser import allows_deep_expressions
from ceql.sql.types import sql_type

_CEQL_TYPES = {"int": "int", "double": "double", "string": "string", "bool": "boolean", "timestamp": "int"}


@allows_deep_expressions
def describe(compiled: Compiled) -> str:
    """The plan of a compiled query as text."""
    q = compiled.checked
    lines = [f"MATCH_RECOGNIZE over {q.table}"]
    lines.append(f"  partitions: {', '.join(q.partition) or '(the whole input)'}")
    order = ", ".join(f"{c}{' DESC' if d else ''}" for c, d, _ in q.order)
    lines.append(f"  order: {order or '(input order)'}, ties in input order")
    rows = "ONE ROW PER MATCH" if q.rows_per_match == "ONE" else f"ALL ROWS PER MATCH ({q.empty.lower()})"
    skip = {"PAST_LAST": "PAST LAST ROW", "NEXT_ROW": "TO NEXT ROW"}.get(q.skip, f"TO {q.skip} {q.skip_to}")
    lines.append(f"  {rows}, AFTER MATCH SKIP {skip}")
    declaration, text, reason = to_ceql(q)
    lines.append("")
    if text is not None:
        lines.append("CEQL equivalent (every complex event; MATCH_RECOGNIZE keeps the preferred one per start):")
        lines.append(f"  {declaration}")
        lines.append(f"  {text}")
    else:
        lines.append(f"CEQL equivalent: none ({reason})")
    lines.append("")
    memo = "yes" if compiled.memo else f"no ({why_no_memo(compiled)})"
    lines.append("evaluator: compiled matcher (numba): row masks computed column-wise, then a backtracking search")
    lines.append(f"  in order of preference per start row; failed states remembered: {memo}")
    lines.append("row masks (column-wise, once over the input):")
    for var, conjuncts, exact in zip(q.variables, compiled.masks, compiled.mask_exact):
        if not conjuncts and var not in q.defines:
            lines.append(f"  {var}: every row (no DEFINE)")
        elif conjuncts:
            what = "the whole condition" if exact else "leading conjuncts; the rest runs in the VM"
            lines.append(f"  {var}: {' AND '.join(_row_text(c) for c in conjuncts)}  [{what}]")
        else:
            lines.append(f"  {var}: every row; its condition runs in the VM")
    dynamic = [v for v in q.variables if v in compiled.dynamic]
    if dynamic:
        lines.append("conditions in the VM (they read other rows of the match):")
        for var in dynamic:
            lines.append(f"  {var}: {_text(q.defines[var])}")
    if q.measures:
        lines.append("measures (VM, per output row):")
        for name, node in q.measures:
            after = " (after matching, from the match's rows)" if ir.row_measure(node) else ""
            lines.append(f"  {name} = {_text(node)}{after}")
    lines.append("program:")
    lines.extend(f"  {line}" for line in compiled.program.describe())
    return "\n".join(lines)


def why_no_memo(compiled: Compiled) -> str:
    """Why the matcher cannot remember failed states for this query (for explain and LimitError)."""
    from ceql.sql import vm

    q = compiled.checked
    if not (compiled.program.instructions[:, 0] == vm.P_SPLIT).any():
        return "not needed: the pattern has no choice to revisit"
    if compiled.dynamic:
        return f"the conditions of {', '.join(sorted(compiled.dynamic))} read the match so far"
    if q.within is not None:
        return "WITHIN ties a state to the match's first row"
    return "the matcher was compiled without it"  # pragma: no cover - every other case remembers


# ---------------------------------------------------------------------------- CEQL equivalent


class _NoEquivalent(Exception):
    pass


def to_ceql(q: Checked) -> tuple[str | None, str | None, str]:
    """(CEQL declaration, CEQL query, "") or (None, None, why there is none). The stream's
    events are the input's rows, all of type R (an ``event_type`` column of "R"); timestamps are
    their integer value in the column's unit."""
    try:
        columns = sorted(q.columns_read)
        fields = []
        for name in columns:
            t = sql_type(q.schema.field(name).type)
            if t is None:
                raise _NoEquivalent(f"column {name} has no CEQL type")
            if t.kind not in _CEQL_TYPES:
                raise _NoEquivalent(f"column {name} is {t} (CEQL has no exact decimals)")
            fields.append(f"{_name(name)}:{_CEQL_TYPES[t.kind]}")
        declaration = f"CREATE STREAM S {{ EVENT R {{ {', '.join(fields)} }} }}"
        formula = _pattern(q.pattern, top=True)
        single = _single_before(q.pattern)
        conditions = [_condition(node, var, single.get(var, set())) for var, node in q.defines.items()]
        query = f"SELECT * FROM S WHERE ({formula})"
        if conditions:
            query += " FILTER " + " AND ".join(conditions)
        if q.partition:
            query += f" PARTITION BY [{', '.join(_name(c) for c in q.partition)}]"
        if q.within is not None:
            query += f" WITHIN {q.within} [{_name(q.time_column)}]"  # type: ignore[arg-type]
        return declaration, query, ""
    except _NoEquivalent as exc:
        return None, None, str(exc)


def _name(text: str) -> str:
    return text if text.isidentifier() and text.upper() not in _CEQL_KEYWORDS else f"`{text}`"


_CEQL_KEYWORDS = {"SELECT", "FROM", "WHERE", "PARTITION", "BY", "WITHIN", "CONSUME", "LIMIT", "AS", "OR", "AND",
                  "NOT", "FILTER", "ALL", "ANY", "NEXT", "LAST", "MAX", "STRICT", "NONE", "IN", "RANGE", "LIKE",
                  "UNLESS", "EVENTS", "TRUE", "FALSE"}


def _pattern(node: ast.Pattern, top: bool = False) -> str:
    if isinstance(node, ast.PVar):
        return f"R AS {_name(node.name.key)}"
    if isinstance(node, ast.PConcat):
        return " : ".join(_element(item) for item in node.items)
    if isinstance(node, ast.PAlt):
        return " OR ".join(f"({_pattern(item)})" for item in node.items)
    if isinstance(node, ast.PQuant):
        return _element(node)
    if isinstance(node, ast.PExclude):
        return _pattern(node.body)
    kind = {ast.PEmpty: "the empty pattern ()", ast.PAnchor: "the anchors ^ and $", ast.PPermute: "PERMUTE"}
    raise _NoEquivalent(f"{kind.get(type(node), type(node).__name__)} (write the alternatives out)")


def _element(node: ast.Pattern) -> str:
    if isinstance(node, ast.PQuant):
        if not node.greedy or node.low == 0:
            raise _NoEquivalent(
                "an optional or reluctant quantifier (CEQL reports every length; the preference between them "
                "is MATCH_RECOGNIZE's)"
            )
        body = _element(node.body)
        if node.high is None:
            return " : ".join([body] * (node.low - 1) + [f"({body}):+" if " " in body else f"{body}:+"])
        if node.high != node.low:
            return "(" + " OR ".join(f"({' : '.join([body] * k)})" for k in range(node.low, node.high + 1)) + ")"
        return " : ".join([body] * node.low)
    text = _pattern(node)
    return f"({text})" if " OR " in text or " : " in text else text


def _single_before(pattern: ast.Pattern) -> dict[str, set[str]]:
    """Per variable of a top-level concatenation: the variables before it that map exactly one
    row (their LAST row, which a condition reads with running semantics, is then their only
    row, as in CEQL's reading of a label)."""
    items = pattern.items if isinstance(pattern, ast.PConcat) else (pattern,)
    counts: dict[str, int] = {}
    for item in items:
        for name in _variables(item):
            counts[name] = counts.get(name, 0) + 1
    out: dict[str, set[str]] = {}
    before: set[str] = set()
    for item in items:
        for name in _variables(item):
            out.setdefault(name, set()).update(before)
        if isinstance(item, ast.PVar) and counts[item.name.key] == 1:
            before.add(item.name.key)
    return out


def _variables(node: ast.Pattern) -> list[str]:
    if isinstance(node, ast.PVar):
        return [node.name.key]
    if isinstance(node, (ast.PConcat, ast.PAlt, ast.PPermute)):
        return [v for item in node.items for v in _variables(item)]
    if isinstance(node, (ast.PQuant, ast.PExclude)):
        return _variables(node.body)
    return []


def _condition(node: ir.Node, var: str, single: set[str]) -> str:
    for part in ir.walk(node):
        if isinstance(part, ir.Agg):
            raise _NoEquivalent(
                "an aggregate in DEFINE (it reads the match so far, row by row; a CEQL FILTER reads the whole match)"
            )
        if isinstance(part, ir.At) and isinstance(part.locator, ir.Logical):
            cls = part.locator.cls
            if cls is not None and cls != var and cls not in single:
                raise _NoEquivalent(
                    f"the condition of {var} reads {cls or 'an unqualified column'}, which is not the variable "
                    "itself nor one that maps exactly one row before it"
                )
    return _cond(node, var)


def _cond(node: ir.Node, var: str) -> str:  # noqa: C901 - one case per node
    if isinstance(node, ir.Const):
        if node.value is None:
            raise _NoEquivalent("NULL literals")
        if node.type.kind == "string":
            return "'" + str(node.value).replace("'", "''") + "'"
        if node.type.kind == "bool":
            raise _NoEquivalent("boolean literals in conditions")
        return repr(node.value)
    if isinstance(node, ir.At):
        loc = node.locator
        if not isinstance(loc, ir.Logical) or loc.func != "LAST" or loc.offset != 0:
            raise _NoEquivalent(
                f"navigation {ir.describe_locator(loc)} (CEQL reads a label's events, not rows around them)"
            )
        if not isinstance(node.expr, ir.RowCol):
            raise _NoEquivalent("an expression inside navigation")
        return f"{_name(loc.cls or var)}.{_name(node.expr.column)}"  # unqualified: the row being mapped
    if isinstance(node, ir.Agg):
        if node.cls is None:
            raise _NoEquivalent("an aggregate over every variable")
        if node.arg is None:
            return f"COUNT({_name(node.cls)})"
        if not isinstance(node.arg, ir.RowCol):
            raise _NoEquivalent("an aggregate of an expression")
        return f"{node.func}({_name(node.cls)}.{_name(node.arg.column)})"
    if isinstance(node, ir.Op):
        if node.op in ("and", "or"):
            return f"({_cond(node.args[0], var)} {node.op.upper()} {_cond(node.args[1], var)})"
        if node.op == "not":
            return f"NOT ({_cond(node.args[0], var)})"
        if node.op in ("=", "<>", "<", "<=", ">", ">="):
            op = "!=" if node.op == "<>" else node.op
            return f"{_cond(node.args[0], var)} {op} {_cond(node.args[1], var)}"
        if node.op in ("+", "-", "*", "/", "%"):
            return f"({_cond(node.args[0], var)} {node.op} {_cond(node.args[1], var)})"
        if node.op == "neg":
            return f"-{_cond(node.args[0], var)}"
        if node.op == "cast" and node.type.kind == "double":
            return _cond(node.args[0], var)
    raise _NoEquivalent(f"{_text(node)} (no CEQL counterpart: SQL's three-valued logic, CASE, IS NULL, CLASSIFIER, ...)")


# ---------------------------------------------------------------------------- IR as text


def _row_text(node: ir.Node) -> str:
    from ceql.sql.vector import Shift

    if isinstance(node, Shift):
        func = "PREV" if node.delta < 0 else "NEXT"
        return f"{func}({_row_text(node.expr)}, {abs(node.delta)})"
    return _text(node)


def _text(node: ir.Node) -> str:  # noqa: C901
    from ceql.sql.vector import Shift

    if isinstance(node, Shift):
        return _row_text(node)
    if isinstance(node, ir.Const):
        if node.value is None:
            return "NULL"
        if node.type.kind == "string":
            return "'" + str(node.value) + "'"
        if node.type.kind == "bool":
            return "TRUE" if node.value else "FALSE"
        return str(node.value)
    if isinstance(node, ir.RowCol):
        return node.column
    if isinstance(node, ir.RowClassifier):
        return "CLASSIFIER()"
    if isinstance(node, ir.MatchNo):
        return "MATCH_NUMBER()"
    if isinstance(node, ir.At):
        return f"{_text(node.expr)} at {ir.describe_locator(node.locator)}"
    if isinstance(node, ir.Agg):
        sem = "FINAL " if node.final else ""
        arg = "*" if node.arg is None else _text(node.arg)
        key = "" if node.key is None else f" by {_text(node.key)}"
        return f"{sem}{node.func}({arg}{key} over {node.cls or '*'})"
    if isinstance(node, ir.Case):
        whens = " ".join(f"WHEN {_text(c)} THEN {_text(v)}" for c, v in node.whens)
        otherwise = f" ELSE {_text(node.otherwise)}" if node.otherwise is not None else ""
        return f"CASE {whens}{otherwise} END"
    if isinstance(node, ir.Op):
        args = [_text(a) for a in node.args]
        if node.op in ("isnull", "notnull"):
            return f"{args[0]} IS {'NOT ' if node.op == 'notnull' else ''}NULL"
        if node.op in ("and", "or"):
            return f"({args[0]} {node.op.upper()} {args[1]})"
        if node.op == "not":
            return f"NOT {args[0]}"
        if node.op == "like":
            return f"{args[0]} LIKE {args[1]}"
        if node.op == "concat":
            return f"{args[0]} || {args[1]}"
        if node.op in ir.MATH_FUNCTIONS or node.op in ("length", "substr", "rescale", "fit"):
            return f"{node.op.upper()}({', '.join(args)})"
        if node.op in ("neg", "abs", "coalesce", "cast", "scale", "lower", "upper"):
            name = {"neg": "-", "abs": "ABS", "coalesce": "COALESCE", "cast": f"CAST AS {node.type}", "scale": "SCALE",
                    "lower": "LOWER", "upper": "UPPER"}
            return f"{name[node.op]}({', '.join(args)})"
        return f"{args[0]} {node.op} {args[1]}"
    return repr(node)
