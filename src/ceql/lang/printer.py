"""Print a query tree as canonical CEQL text: ``parse_query(print_query(q)) == q``.

Canonical form: upper-case keywords, ``=`` and ``!=`` for equality, one clause per line,
parentheses only where the precedence table (grammar.py) requires them, names back-quoted when
they are keywords.
"""

from __future__ import annotations

import re

from ceql.lang import ast, grammar
from ceql.lang.lexer import KEYWORDS
from ceql.lang.timetext import format_interval, format_timestamp
from ceql.lang.visit import Visitor

_BARE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def name(text: str) -> str:
    """An identifier as CEQL source, back-quoted when needed."""
    if _BARE_NAME.match(text) and text.upper() not in KEYWORDS:
        return text
    return "`" + text.replace("`", "``") + "`"


def _atom_name(text: str) -> str:
    # START( and PROJECT[ are operators: an event type with that name is back-quoted.
    if text.upper() in grammar.FORMULA_PREFIXES:
        return "`" + text + "`"
    return name(text)


def string(text: str) -> str:
    """A string literal as CEQL source."""
    return "'" + text.replace("'", "''") + "'"


def value(v: object) -> str:
    """A literal value as CEQL source."""
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if isinstance(v, str):
        return string(v)
    if isinstance(v, float):
        return repr(v)
    return str(v)


# --------------------------------------------------------------------------- query


def print_query(query: ast.Query) -> str:
    """The canonical text of a query."""
    head = "SELECT "
    if query.strategy:
        head += query.strategy + " "
    head += print_projection(query.projection)
    if query.streams:
        head += " FROM " + ", ".join(name(s) for s in query.streams)
    lines = [head, "WHERE " + print_formula(query.formula, top=True)]
    if query.absent is not None:
        lines.append("NOT FOLLOWED BY " + print_formula(query.absent, top=True))
    if query.partition_by:
        lists = ", ".join("[" + ", ".join(name(a) for a in group) + "]" for group in query.partition_by)
        lines.append("PARTITION BY " + lists)
    elif query.partition_labels:
        lines.append("PARTITION BY " + print_keys(query.partition_labels))
    if query.within is not None:
        lines.append("WITHIN " + print_within(query.within))
    if query.consume:
        lines.append("CONSUME BY " + query.consume)
    if query.limit is not None:
        lines.append(f"LIMIT {query.limit}")
    return "\n".join(lines)


def print_projection(projection: ast.Projection) -> str:
    """The SELECT list."""
    items: list[str] = []
    if projection.kind == "star":
        items.append("*")
    elif projection.kind == "none":
        items.append("NONE")
    for item in projection.items:
        text = (name(item.stream) + ">" if item.stream else "") + name(item.label)
        if item.attributes is not None:
            text += "[" + ", ".join(name(a) for a in item.attributes) + "]"
        items.append(text)
    items.extend(print_measure(m) for m in projection.measures)
    return ", ".join(items)


def print_measure(measure: ast.Measure) -> str:
    """A SELECT expression, with ``AS name`` unless the name is the expression's own text."""
    text = print_expr(measure.expr)
    return text if measure.name == text else f"{text} AS {name(measure.name)}"


def print_keys(keys: tuple[ast.Attr, ...]) -> str:
    """A PARTITION BY key list: ``[a, b]`` or ``[x.a, y.b]``."""
    return "[" + ", ".join(print_expr(k) for k in keys) + "]"


def print_within(within: ast.Within) -> str:
    """The WITHIN clause's argument; time spans as whole units, largest first."""
    if within.kind == "events":
        return f"{within.value} EVENTS"
    if within.kind == "attribute":
        return f"{within.value} [{name(within.attribute or '')}]"
    rest = int(within.value)
    parts = []
    for plural, singular, ns in grammar.TIME_UNITS:
        count, rest = divmod(rest, ns)
        if count:
            parts.append(f"{count} {singular if count == 1 else plural}")
    return " ".join(parts) or "0 SECONDS"


# --------------------------------------------------------------------------- formulas


def print_formula(node: ast.Formula, top: bool = False) -> str:
    """The canonical text of a formula. ``top``: the formula of a query, where PARTITION BY
    would be read as the query clause, so a formula's own PARTITION BY is parenthesised."""
    return _FORMULA.visit(node, top=top)


def _wrap(text: str, parenthesise: bool) -> str:
    return f"({text})" if parenthesise else text


class _FormulaPrinter(Visitor):
    pass_name = "the formula printer"
    families = (ast.FORMULA_NODES,)

    def child(self, node: ast.Formula, minimum: int) -> str:
        return _wrap(self.visit(node), grammar.formula_level(node) < minimum)

    def postfix_body(self, body: ast.Formula, chain: bool) -> str:
        """The operand of a postfix operator. In a ':' chain, a quantifier that does not repeat
        contiguously is parenthesised (only a bare one does)."""
        if chain and isinstance(body, ast.Repeat) and not body.contiguous:
            return f"({self.visit(body)})"
        if chain and isinstance(body, (ast.Label, ast.Rename)):
            return self.visit(body, chain=True)
        return self.child(body, grammar.POSTFIX)

    def visit_EventType(self, node: ast.EventType, **_: object) -> str:
        return (name(node.stream) + ">" if node.stream else "") + _atom_name(node.name)

    def visit_NotEvent(self, node: ast.NotEvent, **_: object) -> str:
        inner = self.visit(node.atom)
        if node.cond is not None:
            inner += " FILTER " + print_cond(node.cond)
        return f"NOT({inner})"

    def visit_Label(self, node: ast.Label, chain: bool = False, **_: object) -> str:
        return self.postfix_body(node.body, chain) + " AS " + name(node.label)

    def visit_Iteration(self, node: ast.Iteration, **_: object) -> str:
        return self.child(node.body, grammar.POSTFIX) + (":+" if node.contiguous else "+")

    def visit_Repeat(self, node: ast.Repeat, **_: object) -> str:
        body = self.child(node.body, grammar.POSTFIX)
        if (node.low, node.high) == (0, 1):
            return body + "?"
        if (node.low, node.high) == (0, None):
            return body + "*"
        if node.high is None:
            return f"{body}{{{node.low},}}"
        if node.high == node.low:
            return f"{body}{{{node.low}}}"
        return f"{body}{{{node.low},{node.high}}}"

    def visit_Rename(self, node: ast.Rename, chain: bool = False, **_: object) -> str:
        pairs = ", ".join(f"{name(a)} -> {name(b)}" for a, b in node.mapping)
        return self.postfix_body(node.body, chain) + f"[{pairs}]"

    def visit_Sequence(self, node: ast.Sequence, **_: object) -> str:
        level = grammar.formula_level(node)
        if not node.contiguous:
            return "; ".join(self.child(p, level + 1) for p in node.parts)
        texts = []
        for part in node.parts:
            if isinstance(part, ast.Repeat) and not part.contiguous:
                texts.append(f"({self.visit(part)})")
            elif isinstance(part, (ast.Label, ast.Rename)):
                texts.append(self.visit(part, chain=True))
            else:
                texts.append(self.child(part, level + 1))
        return " : ".join(texts)

    def _nary(self, node, separator: str) -> str:
        level = grammar.formula_level(node)
        return separator.join(self.child(p, level + 1) for p in node.parts)

    def visit_Union_(self, node: ast.Union_, **_: object) -> str:
        return self._nary(node, " OR ")

    def visit_Conjunction(self, node: ast.Conjunction, **_: object) -> str:
        return self._nary(node, " AND ")

    def visit_AllOf(self, node: ast.AllOf, **_: object) -> str:
        return self._nary(node, " ALL ")

    def visit_Unless(self, node: ast.Unless, **_: object) -> str:
        return (
            self.child(node.left, grammar.UNLESS) + " UNLESS " + self.child(node.right, grammar.UNLESS + 1)
        )

    def visit_Filter(self, node: ast.Filter, top: bool = False, **_: object) -> str:
        # FILTER binds loosest: its body never needs parentheses.
        return self.visit(node.body, top=top) + " FILTER " + print_cond(node.cond)

    def visit_PartitionBy(self, node: ast.PartitionBy, top: bool = False, **_: object) -> str:
        body = self.child(node.body, grammar.FILTER)
        return _wrap(body + " PARTITION BY " + print_keys(node.keys), top)

    def visit_Start(self, node: ast.Start, **_: object) -> str:
        return f"START({self.visit(node.body)})"

    def visit_Project(self, node: ast.Project, **_: object) -> str:
        labels = ", ".join(name(label) for label in node.labels)
        return f"PROJECT[{labels}]({self.visit(node.body)})"


# --------------------------------------------------------------------------- conditions


def print_cond(cond: ast.Cond) -> str:
    """The canonical text of a FILTER condition."""
    return _COND.visit(cond)


class _CondPrinter(Visitor):
    pass_name = "the condition printer"
    families = (ast.COND_NODES,)

    def visit_LabelCond(self, cond: ast.LabelCond) -> str:
        prefix = (name(cond.stream) + ">" if cond.stream else "") + name(cond.label)
        return f"{prefix}[{print_pred(cond.pred)}]"

    def visit_Compare(self, cond: ast.Compare) -> str:
        return f"{print_expr(cond.left)} {cond.op} {print_expr(cond.right)}"

    def visit_And(self, cond: ast.And) -> str:
        # n-ary: a nested AND only comes from parentheses, so it keeps them.
        return " AND ".join(_wrap(self.visit(p), grammar.cond_level(p) <= grammar.COND_AND) for p in cond.parts)

    def visit_Or(self, cond: ast.Or) -> str:
        return " OR ".join(_wrap(self.visit(p), grammar.cond_level(p) <= grammar.COND_OR) for p in cond.parts)

    def visit_Not(self, cond: ast.Not) -> str:
        return f"NOT ({self.visit(cond.operand)})"


def print_pred(pred: ast.Pred) -> str:
    """The canonical text of a one-event predicate (inside ``label[...]``)."""
    return _PRED.visit(pred)


class _PredPrinter(Visitor):
    pass_name = "the predicate printer"
    families = (ast.PRED_NODES,)

    def visit_Compare(self, pred: ast.Compare) -> str:
        return f"{print_expr(pred.left)} {pred.op} {print_expr(pred.right)}"

    def visit_Like(self, pred: ast.Like) -> str:
        return f"{print_expr(pred.operand)} LIKE {string(pred.pattern)}"

    def visit_InSet(self, pred: ast.InSet) -> str:
        keyword = "NOT IN" if pred.negated else "IN"
        return f"{print_expr(pred.operand)} {keyword} {{{', '.join(value(v) for v in pred.values)}}}"

    def visit_InInterval(self, pred: ast.InInterval) -> str:
        keyword = "NOT IN" if pred.negated else "IN"
        low = "" if pred.low is None else value(pred.low)
        high = "" if pred.high is None else value(pred.high)
        return f"{print_expr(pred.operand)} {keyword} {{{low}..{high}}}"

    def visit_InRange(self, pred: ast.InRange) -> str:
        return f"{print_expr(pred.operand)} IN RANGE({print_expr(pred.low)}, {print_expr(pred.high)})"

    def visit_Not(self, pred: ast.Not) -> str:
        return "NOT " + _wrap(self.visit(pred.operand), grammar.cond_level(pred.operand) < grammar.COND_NOT)

    def visit_And(self, pred: ast.And) -> str:
        return " AND ".join(_wrap(self.visit(p), grammar.cond_level(p) <= grammar.COND_AND) for p in pred.parts)

    def visit_Or(self, pred: ast.Or) -> str:
        return " OR ".join(_wrap(self.visit(p), grammar.cond_level(p) <= grammar.COND_OR) for p in pred.parts)


# --------------------------------------------------------------------------- expressions


def print_expr(expr: ast.Expr) -> str:
    """The canonical text of an arithmetic expression (also the default name of a measure)."""
    return _EXPR.visit(expr)


class _ExprPrinter(Visitor):
    pass_name = "the expression printer"
    families = (ast.EXPR_NODES,)

    def visit_Attr(self, expr: ast.Attr) -> str:
        return (name(expr.label) + "." if expr.label else "") + name(expr.name)

    def visit_Literal(self, expr: ast.Literal) -> str:
        if expr.kind == "timestamp":
            return f"TIMESTAMP '{format_timestamp(int(expr.value))}'"
        if expr.kind == "interval":
            return format_interval(int(expr.value))
        return value(expr.value)

    def visit_Neg(self, expr: ast.Neg) -> str:
        # Never "--" (a comment): anything but an atom is parenthesised.
        return "-" + _wrap(self.visit(expr.operand), grammar.expr_level(expr.operand) < grammar.EXPR_ATOM)

    def visit_Arith(self, expr: ast.Arith) -> str:
        level = grammar.ARITH_LEVEL[expr.op]
        left = _wrap(self.visit(expr.left), grammar.expr_level(expr.left) < level)
        right = _wrap(self.visit(expr.right), grammar.expr_level(expr.right) <= level)
        return f"{left} {expr.op} {right}"

    def visit_Aggregate(self, expr: ast.Aggregate) -> str:
        if expr.func == "COUNT":
            return f"COUNT({'*' if expr.label is None else name(expr.label)})"
        if expr.func in ("FIRST", "LAST"):
            return f"{expr.func}({name(expr.label or '')}).{name(expr.attr or '')}"
        return f"{expr.func}({name(expr.label or '')}.{name(expr.attr or '')})"

    def visit_Prev(self, expr: ast.Prev) -> str:
        return f"PREV({name(expr.label)}.{name(expr.attr)})"


_FORMULA = _FormulaPrinter()
_COND = _CondPrinter()
_PRED = _PredPrinter()
_EXPR = _ExprPrinter()
