"""ExpressionTree: validation, constructors, evaluation, and iteration without recursion limits."""

from __future__ import annotations

import pytest

from storage_handler.errors import FilterError
from storage_handler.sarg import ExpressionTree, ExprOp, TruthValue
from storage_handler.sarg.tree import fold, preorder

E = ExpressionTree
Y, N, NULL = TruthValue.YES, TruthValue.NO, TruthValue.NULL


@pytest.mark.parametrize(
    "make",
    [
        lambda: E(ExprOp.LEAF),
        lambda: E(ExprOp.LEAF, leaf=-1),
        lambda: E(ExprOp.LEAF, leaf=True),
        lambda: E(ExprOp.CONSTANT),
        lambda: E(ExprOp.NOT, ()),
        lambda: E(ExprOp.NOT, (E.make_leaf(0), E.make_leaf(1))),
        lambda: E(ExprOp.AND, ()),
        lambda: E(ExprOp.OR, (E.make_leaf(0),), leaf=1),
        lambda: E(ExprOp.AND, [E.make_leaf(0)]),  # type: ignore[arg-type]
        lambda: E(ExprOp.AND, ("x",)),  # type: ignore[arg-type]
    ],
)
def test_malformed_nodes_are_refused(make) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(FilterError):
        make()


def test_constants_are_singletons_and_nodes_compare_structurally() -> None:
    assert E.make_constant(Y) is E.make_constant(Y)
    assert E.make_and([E.make_leaf(0), E.make_not(E.make_leaf(1))]) == E.make_and(
        (E.make_leaf(0), E.make_not(E.make_leaf(1)))
    )
    assert E.make_leaf(0) != E.make_leaf(1)
    assert str(E.make_or([E.make_leaf(0), E.make_constant(N)])) == "(or leaf-0 NO)"
    assert repr(E.make_leaf(2)) == "ExpressionTree<leaf-2>"


def test_evaluate_follows_hive_folding() -> None:
    tree = E.make_and([E.make_or([E.make_leaf(0), E.make_leaf(1)]), E.make_not(E.make_leaf(2))])
    assert tree.evaluate([N, NULL, N]) is TruthValue.NULL
    assert tree.evaluate([Y, N, Y]) is N
    assert tree.evaluate([N, Y, N]) is Y
    assert E.make_constant(TruthValue.YES_NO).evaluate([]) is TruthValue.YES_NO
    with pytest.raises(FilterError, match="leaf-2"):
        tree.evaluate([Y, Y])


def test_deep_and_shared_trees_need_no_recursion() -> None:
    node = E.make_leaf(0)
    for i in range(50_000):
        node = (
            E.make_not(node) if i % 3 == 0 else (E.make_and if i % 2 else E.make_or)([node, E.make_leaf(1)])
        )
    assert node.evaluate([Y, N]) in set(TruthValue)
    assert list(node.leaf_indexes()) == [0, 1]
    # A DAG whose expansion has 2**60 paths is still walked once per node.
    shared = E.make_leaf(0)
    for _ in range(60):
        shared = E.make_and([shared, shared])
    assert len(list(preorder(shared))) == 61
    assert fold(shared, lambda n, kids: 1 + sum(kids)) == 2**61 - 1
    assert shared.evaluate([Y]) is Y
