"""Each normalization step on its own (the whole pipeline is compared with Hive in test_conformance)."""

from __future__ import annotations

from storage_handler.sarg import ExpressionTree, TruthValue
from storage_handler.sarg.normalize import (
    compact,
    convert_to_cnf,
    flatten,
    fold_maybe,
    normalize,
    push_not_down,
)
from storage_handler.sarg.printing import tree_to_old_string as show

E = ExpressionTree
a, b, c, d, n = (E.make_leaf(i) for i in range(5))
MAYBE = E.make_constant(TruthValue.YES_NO_NULL)


def test_push_not_down() -> None:
    tree = E.make_not(E.make_and([a, E.make_or([b, E.make_not(c)]), E.make_constant(TruthValue.YES_NULL)]))
    assert show(push_not_down(tree)) == "(or (not leaf-0) (and (not leaf-1) leaf-2) NO_NULL)"
    assert push_not_down(E.make_not(E.make_not(a))) is a
    assert show(push_not_down(E.make_not(a))) == "(not leaf-0)"
    untouched = E.make_and([a, b])
    assert push_not_down(untouched) is untouched


def test_fold_maybe() -> None:
    assert show(fold_maybe(E.make_and([a, MAYBE, b]))) == "(and leaf-0 leaf-1)"
    assert fold_maybe(E.make_and([a, E.make_or([b, MAYBE])])) == E.make_and([a])
    assert fold_maybe(E.make_and([MAYBE, E.make_and([MAYBE])])) is MAYBE
    assert fold_maybe(E.make_or([a, E.make_and([MAYBE])])) is MAYBE
    kept = E.make_or([a, E.make_constant(TruthValue.NO)])
    assert fold_maybe(kept) is kept


def test_flatten() -> None:
    tree = E.make_and([E.make_and([a, E.make_or([E.make_and([b, c])])]), E.make_or([d, E.make_or([n])])])
    assert show(flatten(tree)) == "(and leaf-0 leaf-1 leaf-2 (or leaf-3 leaf-4))"
    assert flatten(E.make_or([a])) is a
    assert show(flatten(E.make_not(a))) == "(not leaf-0)"


def test_cnf_order_sharing_and_threshold() -> None:
    tree = E.make_or([n, E.make_and([a, b]), E.make_and([c, d])])
    cnf = convert_to_cnf(tree)
    assert (
        show(cnf)
        == "(and (or leaf-4 leaf-0 leaf-2) (or leaf-4 leaf-1 leaf-2) (or leaf-4 leaf-0 leaf-3) (or leaf-4 leaf-1 leaf-3))"
    )
    assert cnf.children[0].children[2] is cnf.children[1].children[2]  # shared, not copied
    wide = E.make_or([E.make_and([a] * 16), E.make_and([b] * 16)])
    assert len(convert_to_cnf(wide).children) == 256
    assert convert_to_cnf(E.make_or([E.make_and([a] * 16), E.make_and([b] * 17)])) is MAYBE
    no_and = E.make_or([a, E.make_or([b, c])])
    assert convert_to_cnf(no_and) is no_and  # Hive leaves an OR without AND children as it is


def test_maybe_from_cnf_is_not_folded_afterwards() -> None:
    tree = compact(E.make_and([a, E.make_or([E.make_and([b] * 17), E.make_and([c] * 16)])]))
    assert show(normalize(tree)) == "(and leaf-0 YES_NO_NULL)"
    assert show(tree).startswith("(and leaf-0 (or (and leaf-1")
