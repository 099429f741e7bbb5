"""The one traversal of the syntax tree and its fail-loud visitors."""

from __future__ import annotations

import importlib
import pkgutil
import typing

import pytest

import ceql
from ceql.lang import ast, parse_query, visit


def _import_everything() -> None:
    """Import every module of ceql, so that every Visitor subclass is registered."""
    for module in pkgutil.walk_packages(ceql.__path__, "ceql."):
        if ".spark" in module.name or module.name.endswith("__main__"):
            continue  # Spark: slow to import, no visitor; __main__ runs the CLI
        importlib.import_module(module.name)


def test_families_list_every_node_class() -> None:
    assert set(ast.FORMULA_NODES) == set(typing.get_args(ast.Formula))
    assert set(ast.EXPR_NODES) == set(typing.get_args(ast.Expr))
    assert set(ast.COND_NODES) == set(typing.get_args(ast.Cond))
    assert set(ast.PRED_NODES) == set(typing.get_args(ast.Pred))
    assert ast.Repeat not in ast.CORE_FORMULA_NODES


def test_every_visitor_covers_its_families() -> None:
    _import_everything()
    visitors = [cls for cls in visit.Visitor.registry if cls.families]
    assert len(visitors) >= 10
    for cls in visitors:
        assert cls.missing_methods() == [], f"{cls.__qualname__} ({cls.pass_name})"
    formula_visitors = [cls for cls in visitors if ast.FORMULA_NODES in cls.families]
    assert {cls.__name__ for cls in formula_visitors} >= {"_FormulaPrinter", "_FormulaChecker", "LabelIndex", "_Desugar"}


def test_a_missing_rule_fails_loudly() -> None:
    class Partial(visit.Visitor):
        pass_name = "a partial pass"

        def visit_EventType(self, node):
            return node.name

    assert Partial().visit(ast.EventType("A")) == "A"
    with pytest.raises(visit.UnhandledNode, match="a partial pass .*has no rule for Repeat nodes"):
        Partial().visit(ast.Repeat(ast.EventType("A"), 0, 1))
    assert Partial.missing_methods() == []  # it declares no family


def test_child_slots_are_derived_from_the_fields() -> None:
    assert visit.child_slots(ast.Filter) == ("body", "cond")
    assert visit.formula_slots(ast.Filter) == ("body",)
    assert visit.child_slots(ast.Query) == ("projection", "formula", "partition_labels", "within", "absent")
    assert visit.child_slots(ast.Aggregate) == ()
    assert visit.formula_children(ast.NotEvent(ast.EventType("A"))) == (ast.EventType("A"),)


def test_walk_reaches_every_node_iteratively() -> None:
    query = parse_query("SELECT x.v AS w WHERE (A AS x ; B{2}) FILTER COUNT(x) > 1 AND x[v IN RANGE(1, 2)]")
    kinds = {type(node).__name__ for node in visit.walk(query)}
    assert kinds >= {"Query", "Projection", "Measure", "Attr", "Filter", "Sequence", "Label", "Repeat",
                     "EventType", "And", "Compare", "Aggregate", "Literal", "LabelCond", "InRange"}  # fmt: skip
    deep = ast.EventType("A")
    for _ in range(50_000):
        deep = ast.Iteration(deep)
    assert sum(1 for _ in visit.walk(deep)) == 50_001
    assert max(depth for _, depth in visit.walk_depth(deep)) == 50_001


def test_transform_rebuilds_only_what_changed() -> None:
    query = parse_query("SELECT * WHERE A AS x ; B FILTER x[v > 1]")

    def rename(node):
        return ast.EventType("C", pos=node.pos) if isinstance(node, ast.EventType) and node.name == "B" else node

    result = visit.transform(query, rename)
    assert result.formula.body.parts[1] == ast.EventType("C")
    assert result.formula.body.parts[0] is query.formula.body.parts[0]  # untouched: the same object
    assert result.formula.cond is query.formula.cond
    assert result.formula.pos == query.formula.pos
