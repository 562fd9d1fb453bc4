"""Evaluator tree from a SearchArgument, and binding to a schema."""

from __future__ import annotations

import dataclasses
import datetime as dt
from decimal import Decimal

import pyarrow as pa
import pytest

from storage_handler.pruning import (
    And,
    BoundLeaf,
    Constant,
    Leaf,
    Not,
    Or,
    PartitionValue,
    PredicateEvaluator,
    StatsColumn,
    UnboundLeaf,
    bind,
    from_sarg,
    leaf_text,
)
from storage_handler.pruning.bind import bound_leaves
from storage_handler.sarg import (
    ExpressionTree,
    LeafOperator,
    LeafType,
    PredicateLeaf,
    SearchArgument,
    TruthValue,
)
from storage_handler.types import parse_hive_type, parse_schema_text
from tests.pruning.helpers import builder, index_table


def design_example() -> SearchArgument:
    """``(x = 1 AND y < 'abc') OR NOT (z IS NULL)`` from DESIGN.md section 3."""
    return (builder().start_or()
            .start_and().equals("x", LeafType.LONG, 1).less_than("y", LeafType.STRING, "abc").end()
            .start_not().is_null("z", LeafType.LONG).end()
            .end().build())


def test_from_sarg_keeps_the_cnf_shape_and_leaf_numbers() -> None:
    sarg = design_example()
    tree = from_sarg(sarg)
    assert isinstance(tree, And) and len(tree.children) == 2
    first, second = tree.children
    assert isinstance(first, Or) and isinstance(first.children[0], Not)
    z = first.children[0].child
    assert isinstance(z, Leaf) and (z.index, z.operator, z.column, z.literals) == (0, LeafOperator.IS_NULL, "z", ())
    assert second.children[0].child is z  # shared, as in the SearchArgument
    assert [leaf_text(leaf) for leaf in (z, first.children[1], second.children[1])] == [
        "(IS_NULL z)", "(EQUALS x 1)", "(LESS_THAN y abc)"]


def test_from_sarg_compact_uses_the_pre_cnf_tree() -> None:
    tree = from_sarg(design_example(), compact=True)
    assert isinstance(tree, Or) and isinstance(tree.children[0], And)


def test_constants_and_literal_shapes() -> None:
    sarg = builder().start_or().literal(TruthValue.YES_NO).in_("x", LeafType.LONG, 1, 2).between(
        "y", LeafType.DECIMAL, Decimal("1.50"), Decimal("2")).end().build()
    tree = from_sarg(sarg)
    leaves = [n for n in tree.children if isinstance(n, Leaf)] if isinstance(tree, Or) else []
    assert [leaf.literals for leaf in leaves] == [(1, 2), (Decimal("1.50"), Decimal("2"))]
    assert any(isinstance(n, Constant) and n.value is TruthValue.YES_NO for n in tree.children)
    assert leaf_text(leaves[1]) == "(BETWEEN y 1.5 2)"


def test_nodes_are_frozen_and_slotted() -> None:
    leaf = from_sarg(builder().equals("x", LeafType.LONG, 1).build())
    with pytest.raises(dataclasses.FrozenInstanceError):
        leaf.column = "y"  # type: ignore[misc]
    assert not hasattr(leaf, "__dict__")


def test_deep_and_wide_trees_need_no_recursion() -> None:
    leaves = tuple(PredicateLeaf(LeafOperator.EQUALS, LeafType.LONG, "x", i) for i in range(3000))
    deep = ExpressionTree.make_leaf(0)
    for i in range(1, 3000):
        deep = ExpressionTree.make_or([ExpressionTree.make_leaf(i), ExpressionTree.make_not(deep)])
    wide = ExpressionTree.make_or([ExpressionTree.make_leaf(i) for i in range(3000)])
    table = index_table("x bigint", [{"min": {"x": 5000}, "max": {"x": 6000}, "nulls": {"x": 0}},
                                     {"min": {"x": 2999}, "max": {"x": 2999}, "nulls": {"x": 0}}])
    for expression in (deep, wide):
        sarg = SearchArgument(leaves, expression, expression)
        evaluator = PredicateEvaluator(sarg, parse_schema_text("x bigint"))
        assert len(evaluator.eval(table)) == 2
    assert PredicateEvaluator(SearchArgument(leaves, wide, wide), [("x", "bigint")]).eval(table).to_pylist() == [
        False, True]


def test_bind_resolves_columns_case_insensitively_partitions_first() -> None:
    sarg = builder().start_and().equals("X", LeafType.LONG, 1).equals("DT", LeafType.STRING, "2024-01-01").end().build()
    bound = bind(from_sarg(sarg), [("x", "bigint"), ("dt", "string")], [("Dt", parse_hive_type("date"))])
    x, day = bound_leaves(bound)
    assert isinstance(x, BoundLeaf) and x.source == StatsColumn("x", parse_hive_type("bigint"))
    assert isinstance(day, BoundLeaf) and isinstance(day.source, PartitionValue)
    assert day.points[0].floor == dt.date(2024, 1, 1)


@pytest.mark.parametrize(("column", "kind", "literal", "reason"), [
    ("nope", LeafType.LONG, 1, "not a column"),
    ("c", LeafType.STRING, "a", "char(3)"),
    ("bin", LeafType.STRING, "a", "binary"),
    ("m", LeafType.STRING, "a", "map"),
    ("x", LeafType.STRING, "1", "does not convert"),
    ("x", LeafType.FLOAT, float("nan"), "NaN"),
    ("p", LeafType.LONG, 1, "partition column 'p' has type float"),
])
def test_unusable_leaves_are_unbound_with_a_reason(column: str, kind: LeafType, literal: object,
                                                   reason: str) -> None:
    sarg = builder().equals(column, kind, literal).build()
    schema = parse_schema_text("x bigint, c char(3), bin binary, m map<string,int>")
    evaluator = PredicateEvaluator(sarg, schema, [("p", "float")])
    (leaf,) = evaluator.unbound_leaves
    assert isinstance(leaf, UnboundLeaf) and reason in leaf.reason
    table = index_table("x bigint", [{"min": {"x": 5}, "max": {"x": 5}, "nulls": {"x": 0}}])
    assert evaluator.truth_values(table).to_pylist() == [7]
    assert evaluator.eval(pa.table({"path": ["a"]})).to_pylist() == [True]
