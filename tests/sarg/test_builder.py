"""The builder API: Hive's methods in snake_case, its error cases, leaf numbering and big inputs."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from storage_handler.errors import FilterError
from storage_handler.sarg import (
    Builder,
    ExpressionTree,
    ExprOp,
    LeafOperator,
    LeafType,
    PredicateLeaf,
    SearchArgument,
    SearchArgumentFactory,
    TruthValue,
)

new = SearchArgumentFactory.new_builder


def test_chaining_and_design_doc_example() -> None:
    b = new()
    assert isinstance(b, Builder)
    assert b.start_or() is b
    sarg = (
        b.start_and()
        .equals("x", LeafType.LONG, 1)
        .less_than("y", LeafType.STRING, "abc")
        .end()
        .start_not()
        .is_null("z", LeafType.LONG)
        .end()
        .end()
        .build()
    )
    assert isinstance(sarg, SearchArgument)
    assert sarg.to_old_string() == (
        "leaf-0 = (IS_NULL z), leaf-1 = (EQUALS x 1), leaf-2 = (LESS_THAN y abc), "
        "expr = (and (or (not leaf-0) leaf-1) (or (not leaf-0) leaf-2))"
    )
    assert [leaf.operator for leaf in sarg.leaves] == [
        LeafOperator.IS_NULL,
        LeafOperator.EQUALS,
        LeafOperator.LESS_THAN,
    ]
    assert sarg.expression.operator is ExprOp.AND
    assert str(sarg.compact_expression) == "(or (and leaf-1 leaf-2) (not leaf-0))"
    assert sarg.extra_leaves == ()
    assert sarg.evaluate([TruthValue.YES, TruthValue.NO, TruthValue.YES]) is TruthValue.NO
    assert "leaf-0 = (IS_NULL z)" in repr(sarg)


def test_every_leaf_method() -> None:
    sarg = (
        new()
        .start_and()
        .equals("a", LeafType.LONG, 1)
        .null_safe_equals("b", LeafType.FLOAT, 1.5)
        .less_than("c", LeafType.DATE, dt.date(2024, 1, 2))
        .less_than_equals("d", LeafType.TIMESTAMP, dt.datetime(2024, 1, 2, 3, 4, 5, 600000))
        .in_("e", LeafType.STRING, "p", "q")
        .in_("e2", LeafType.LONG, [1, 2])
        .between("f", LeafType.DECIMAL, Decimal("1.50"), Decimal("2"))
        .is_null("g", LeafType.BOOLEAN)
        .equals("h", "BOOLEAN", True)  # type names are accepted as strings too
        .literal(TruthValue.YES)
        .end()
        .build()
    )
    assert sarg.to_string() == (
        "(and leaf-(EQUALS a 1) leaf-(NULL_SAFE_EQUALS b 1.5) leaf-(LESS_THAN c 2024-01-02) "
        "leaf-(LESS_THAN_EQUALS d 2024-01-02 03:04:05.6) leaf-(IN e p q) leaf-(IN e2 1 2) "
        "leaf-(BETWEEN f 1.5 2) leaf-(IS_NULL g) leaf-(EQUALS h true) YES)"
    )
    assert sarg.leaves[6] == PredicateLeaf(
        LeafOperator.BETWEEN, LeafType.DECIMAL, "f", None, (Decimal("1.50"), Decimal("2"))
    )


def test_null_column_or_literal_means_cannot_tell() -> None:
    assert new().equals(None, LeafType.LONG, 1).build().to_string() == "YES_NO_NULL"
    assert (
        new()
        .start_or()
        .less_than("x", LeafType.LONG, None)
        .equals("y", LeafType.LONG, 1)
        .end()
        .build()
        .to_string()
        == "YES_NO_NULL"
    )
    assert new().is_null(None, LeafType.LONG).build().expression.is_constant(TruthValue.YES_NO_NULL)
    assert new().in_(None, LeafType.LONG).build().to_string() == "YES_NO_NULL"


@pytest.mark.parametrize(
    ("calls", "message"),
    [
        (lambda b: b.end(), "without a matching"),
        (lambda b: b.start_and().end(), "no children"),
        (
            lambda b: b.start_not().equals("x", LeafType.LONG, 1).equals("y", LeafType.LONG, 2).end(),
            "exactly one",
        ),
        (lambda b: b.start_or().equals("x", LeafType.LONG, 1).build(), "Failed to end 1"),
        (lambda b: b.in_("x", LeafType.LONG), "no literals"),
        (lambda b: b.literal("YES"), "TruthValue"),
        (lambda b: b.equals("x", "INT", 1), "Unknown leaf type"),
        (lambda b: b.equals("x", LeafType.LONG, 1.0), "Wrong literal class"),
        (lambda b: b.between("x", LeafType.FLOAT, 1.0, 2), "Wrong literal class"),
        (
            lambda b: b.in_("x", LeafType.DATE, dt.date(2024, 1, 1), dt.datetime(2024, 1, 1)),
            "Wrong literal class",
        ),
    ],
)
def test_misuse_raises_filter_error(calls, message: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(FilterError, match=message):
        calls(new())


def test_leaves_are_deduplicated_and_numbered_depth_first() -> None:
    sarg = (
        new()
        .start_or()
        .start_and()
        .equals("y", LeafType.LONG, 2)
        .equals("x", LeafType.LONG, 1)
        .end()
        .start_and()
        .equals("x", LeafType.LONG, 1)
        .equals("z", LeafType.FLOAT, float("nan"))
        .end()
        .equals("z", LeafType.FLOAT, float("nan"))
        .end()
        .build()
    )
    assert [leaf.column_name for leaf in sarg.leaves] == ["z", "y", "x"]
    assert sarg.to_old_string().startswith(
        "leaf-0 = (EQUALS z NaN), leaf-1 = (EQUALS y 2), leaf-2 = (EQUALS x 1)"
    )


def test_leaves_only_in_the_compact_expression_are_extra() -> None:
    b = new().start_and().equals("keep", LeafType.LONG, 0).start_or()
    for column, width in (("a", 17), ("b", 16)):
        b.start_and()
        for i in range(width):
            b.equals(column, LeafType.LONG, i)
        b.end()
    sarg = b.end().end().build()
    assert sarg.to_old_string() == "leaf-0 = (EQUALS keep 0), expr = (and leaf-0 YES_NO_NULL)"
    assert len(sarg.extra_leaves) == 33
    assert sarg.compact_leaves[0] == sarg.leaves[0]
    assert sorted(sarg.compact_expression.leaf_indexes()) == list(range(34))
    values = [TruthValue.YES] + [TruthValue.NO] * 33
    assert sarg.evaluate(values[:1]) is TruthValue.YES_NO_NULL
    assert sarg.evaluate_compact(values) is TruthValue.NO


def test_build_is_repeatable_and_does_not_consume_the_builder() -> None:
    b = new().start_not().start_or().equals("x", LeafType.LONG, 1).is_null("y", LeafType.LONG).end().end()
    first, second = b.build(), b.build()
    assert first == second and first.to_string() == "(and (not leaf-(EQUALS x 1)) (not leaf-(IS_NULL y)))"


def test_very_deep_nesting_builds_without_recursion_errors() -> None:
    b = new()
    depth = 20_000
    for i in range(depth):  # NOT (OR x=1 (NOT (OR x=3 (NOT ...))))
        if i % 2:
            b.start_or().equals("x", LeafType.LONG, i % 7)
        else:
            b.start_not()
    for _ in range(depth):
        b.end()
    sarg = b.build()
    assert len(sarg.leaves) == 7
    assert sarg.to_string().startswith(
        "(and (not leaf-(EQUALS x 1)) (or leaf-(EQUALS x 3) (not leaf-(EQUALS x 5)))"
    )
    assert sarg.evaluate([TruthValue.NO] * 7) in set(TruthValue)


def test_long_in_list_as_chain_of_ors_flattens() -> None:
    b = new()
    for i in range(5_000):
        b.start_or().equals("x", LeafType.LONG, i)
    b.equals("x", LeafType.LONG, -1)
    for _ in range(5_000):
        b.end()
    sarg = b.build()
    assert sarg.expression.operator is ExprOp.OR and len(sarg.expression.children) == 5_001
    assert all(child.operator is ExprOp.LEAF for child in sarg.expression.children)


def test_expression_nodes_are_immutable() -> None:
    sarg = new().equals("x", LeafType.LONG, 1).build()
    with pytest.raises(AttributeError):
        sarg.expression.leaf = 3  # type: ignore[misc]
    with pytest.raises(AttributeError):
        sarg.leaves = ()  # type: ignore[misc]
    assert sarg.expression == ExpressionTree.make_leaf(0)
