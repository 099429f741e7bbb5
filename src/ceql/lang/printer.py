"""Print a query tree as canonical CEQL text: ``parse_query(print_query(q)) == q``.

Canonical form: upper-case keywords, ``=`` and ``!=`` for equality, one clause per line,
parentheses only where precedence requires them, names back-quoted when they are keywords.
"""

from __future__ import annotations

import re

from ceql.lang import ast
from ceql.lang.lexer import KEYWORDS

_BARE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")

# Precedence of formula nodes (higher binds tighter); see parser.py.
_FILTER, _OR, _UNLESS, _ALL, _AND, _COLON, _SEMI, _POSTFIX, _ATOM = range(1, 10)


def name(text: str) -> str:
    """An identifier as CEQL source, back-quoted when needed."""
    if _BARE_NAME.match(text) and text.upper() not in KEYWORDS:
        return text
    return "`" + text.replace("`", "``") + "`"


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


def print_query(query: ast.Query) -> str:
    """The canonical text of a query."""
    lines = []
    head = "SELECT "
    if query.strategy:
        head += query.strategy + " "
    head += print_projection(query.projection)
    if query.streams:
        head += " FROM " + ", ".join(name(s) for s in query.streams)
    lines.append(head)
    lines.append("WHERE " + print_formula(query.formula))
    if query.partition_by:
        lists = ", ".join("[" + ", ".join(name(a) for a in group) + "]" for group in query.partition_by)
        lines.append("PARTITION BY " + lists)
    if query.within is not None:
        lines.append("WITHIN " + print_within(query.within))
    if query.consume:
        lines.append("CONSUME BY " + query.consume)
    if query.limit is not None:
        lines.append(f"LIMIT {query.limit}")
    return "\n".join(lines)


def print_projection(projection: ast.Projection) -> str:
    if projection.kind == "star":
        return "*"
    if projection.kind == "none":
        return "NONE"
    items = []
    for item in projection.items:
        text = (name(item.stream) + ">" if item.stream else "") + name(item.label)
        if item.attributes is not None:
            text += "[" + ", ".join(name(a) for a in item.attributes) + "]"
        items.append(text)
    return ", ".join(items)


def print_within(within: ast.Within) -> str:
    if within.kind == "events":
        return f"{within.value} EVENTS"
    if within.kind == "attribute":
        return f"{within.value} [{name(within.attribute or '')}]"
    ns = within.value
    if ns % 10**9 == 0:
        return f"{ns // 10**9} SECONDS"
    return f"{ns / 10**9!r} SECONDS"


def _precedence(node: ast.Formula) -> int:
    if isinstance(node, ast.Filter):
        return _FILTER
    if isinstance(node, ast.Union_):
        return _OR
    if isinstance(node, ast.Unless):
        return _UNLESS
    if isinstance(node, ast.AllOf):
        return _ALL
    if isinstance(node, ast.Conjunction):
        return _AND
    if isinstance(node, ast.Sequence):
        return _COLON if node.contiguous else _SEMI
    if isinstance(node, (ast.Label, ast.Iteration)):
        return _POSTFIX
    return _ATOM


def print_formula(node: ast.Formula) -> str:
    """The canonical text of a formula."""
    if isinstance(node, ast.EventType):
        return (name(node.stream) + ">" if node.stream else "") + name(node.name)
    if isinstance(node, ast.NotEvent):
        inner = print_formula(node.atom)
        if node.cond is not None:
            inner += " FILTER " + print_cond(node.cond)
        return f"NOT({inner})"
    if isinstance(node, ast.Label):
        return _child(node.body, _POSTFIX) + " AS " + name(node.label)
    if isinstance(node, ast.Iteration):
        return _child(node.body, _POSTFIX) + (":+" if node.contiguous else "+")
    if isinstance(node, ast.Filter):
        return _child(node.body, _FILTER) + " FILTER " + print_cond(node.cond)
    if isinstance(node, ast.Unless):
        return _child(node.left, _UNLESS) + " UNLESS " + _child(node.right, _UNLESS + 1)
    level = _precedence(node)
    separator = {
        _OR: " OR ",
        _ALL: " ALL ",
        _AND: " AND ",
        _COLON: " : ",
        _SEMI: "; ",
    }[level]
    return separator.join(_child(part, level + 1) for part in node.parts)


def _child(node: ast.Formula, minimum: int) -> str:
    text = print_formula(node)
    return text if _precedence(node) >= minimum else f"({text})"


def print_cond(cond: ast.Cond) -> str:
    """The canonical text of a FILTER condition."""
    if isinstance(cond, ast.LabelCond):
        prefix = (name(cond.stream) + ">" if cond.stream else "") + name(cond.label)
        return f"{prefix}[{print_pred(cond.pred)}]"
    if isinstance(cond, ast.Compare):
        return f"{print_expr(cond.left)} {cond.op} {print_expr(cond.right)}"
    if isinstance(cond, ast.And):
        return " AND ".join(_cond_child(p, or_parent=False) for p in cond.parts)
    return " OR ".join(_cond_child(p, or_parent=True) for p in cond.parts)


def _cond_child(cond: ast.Cond, or_parent: bool) -> str:
    text = print_cond(cond)
    if isinstance(cond, ast.Or) or (isinstance(cond, ast.And) and or_parent is False):
        return f"({text})"
    return text


def print_pred(pred: ast.Pred) -> str:
    """The canonical text of a one-event predicate (inside ``label[...]``)."""
    if isinstance(pred, ast.Compare):
        return f"{print_expr(pred.left)} {pred.op} {print_expr(pred.right)}"
    if isinstance(pred, ast.Like):
        return f"{print_expr(pred.operand)} LIKE {string(pred.pattern)}"
    if isinstance(pred, ast.InSet):
        keyword = "NOT IN" if pred.negated else "IN"
        return f"{print_expr(pred.operand)} {keyword} {{{', '.join(value(v) for v in pred.values)}}}"
    if isinstance(pred, ast.InInterval):
        keyword = "NOT IN" if pred.negated else "IN"
        low = "" if pred.low is None else value(pred.low)
        high = "" if pred.high is None else value(pred.high)
        return f"{print_expr(pred.operand)} {keyword} {{{low}..{high}}}"
    if isinstance(pred, ast.InRange):
        return f"{print_expr(pred.operand)} IN RANGE({print_expr(pred.low)}, {print_expr(pred.high)})"
    if isinstance(pred, ast.Not):
        inner = print_pred(pred.operand)
        if isinstance(pred.operand, (ast.And, ast.Or)):
            inner = f"({inner})"
        return "NOT " + inner
    if isinstance(pred, ast.And):
        return " AND ".join(_pred_child(p, or_parent=False) for p in pred.parts)
    return " OR ".join(_pred_child(p, or_parent=True) for p in pred.parts)


def _pred_child(pred: ast.Pred, or_parent: bool) -> str:
    text = print_pred(pred)
    if isinstance(pred, ast.Or) or (isinstance(pred, ast.And) and not or_parent):
        return f"({text})"
    return text


_EXPR_LEVEL = {"+": 1, "-": 1, "*": 2, "/": 2, "%": 2}


def print_expr(expr: ast.Expr) -> str:
    """The canonical text of an arithmetic expression."""
    if isinstance(expr, ast.Attr):
        return (name(expr.label) + "." if expr.label else "") + name(expr.name)
    if isinstance(expr, ast.Literal):
        return value(expr.value)
    if isinstance(expr, ast.Neg):
        inner = print_expr(expr.operand)
        if isinstance(expr.operand, (ast.Arith, ast.Neg)):
            inner = f"({inner})"
        return "-" + inner
    level = _EXPR_LEVEL[expr.op]
    left = print_expr(expr.left)
    if isinstance(expr.left, ast.Arith) and _EXPR_LEVEL[expr.left.op] < level:
        left = f"({left})"
    right = print_expr(expr.right)
    if isinstance(expr.right, ast.Arith) and _EXPR_LEVEL[expr.right.op] <= level:
        right = f"({right})"
    return f"{left} {expr.op} {right}"
