"""Hive's ``SearchArgument.Builder`` API in snake_case, producing Hive-identical SearchArguments.

Usage mirrors Hive's (the builder's root is an implicit AND; methods chain)::

    sarg = (SearchArgumentFactory.new_builder()
            .start_or()
              .start_and().equals("x", LeafType.LONG, 1).less_than("y", LeafType.STRING, "abc").end()
              .start_not().is_null("z", LeafType.LONG).end()
            .end()
            .build())

As in Hive, a leaf whose column or literal is ``None`` becomes the constant YES_NO_NULL ("cannot tell"), equal
leaves are stored once, and ``build()`` normalizes (see :mod:`storage_handler.sarg.normalize`).
"""

from __future__ import annotations

from typing import Any

from storage_handler.errors import FilterError
from storage_handler.sarg.leaf import LeafOperator, LeafType, PredicateLeaf
from storage_handler.sarg.literals import coerce_literal
from storage_handler.sarg.normalize import compact, normalize
from storage_handler.sarg.search_argument import SearchArgument
from storage_handler.sarg.tree import ExpressionTree, ExprOp, rebuild, same_children
from storage_handler.sarg.truth import TruthValue

_MAYBE = ExpressionTree.make_constant(TruthValue.YES_NO_NULL)


class Builder:
    """Collects a predicate tree (``start_*`` / ``end`` and leaf methods), then ``build()`` normalizes it."""

    def __init__(self) -> None:
        # Open nodes: (operator, children so far). The bottom one is the implicit root AND.
        self._stack: list[tuple[ExprOp, list[ExpressionTree]]] = [(ExprOp.AND, [])]
        self._leaf_ids: dict[tuple[Any, ...], int] = {}
        self._leaves: list[PredicateLeaf] = []
        self._leaf_nodes: list[ExpressionTree] = []

    # -- structure ----------------------------------------------------------------------------------------------
    def start_and(self) -> Builder:
        self._stack.append((ExprOp.AND, []))
        return self

    def start_or(self) -> Builder:
        self._stack.append((ExprOp.OR, []))
        return self

    def start_not(self) -> Builder:
        self._stack.append((ExprOp.NOT, []))
        return self

    def end(self) -> Builder:
        """Close the innermost ``start_*``; it needs at least one child (a NOT exactly one), as in Hive."""
        if len(self._stack) == 1:
            raise FilterError("end() without a matching start_and()/start_or()/start_not()")
        op, children = self._stack.pop()
        if not children:
            raise FilterError(
                f"Can't create a {op.value} expression with no children; add a leaf before end()"
            )
        if op is ExprOp.NOT and len(children) != 1:
            raise FilterError(
                f"Can't create a NOT expression with {len(children)} children; NOT takes exactly one"
            )
        self._add(ExpressionTree(op, tuple(children)))
        return self

    def literal(self, truth: TruthValue) -> Builder:
        """Add a constant, e.g. YES_NO_NULL for a condition that cannot be pushed down."""
        if not isinstance(truth, TruthValue):
            raise FilterError(f"literal() takes a TruthValue, got {truth!r}")
        self._add(ExpressionTree.make_constant(truth))
        return self

    # -- leaves -------------------------------------------------------------------------------------------------
    def equals(self, column: str | None, type: LeafType | str, literal: Any) -> Builder:
        return self._single(LeafOperator.EQUALS, column, type, literal)

    def null_safe_equals(self, column: str | None, type: LeafType | str, literal: Any) -> Builder:
        return self._single(LeafOperator.NULL_SAFE_EQUALS, column, type, literal)

    def less_than(self, column: str | None, type: LeafType | str, literal: Any) -> Builder:
        return self._single(LeafOperator.LESS_THAN, column, type, literal)

    def less_than_equals(self, column: str | None, type: LeafType | str, literal: Any) -> Builder:
        return self._single(LeafOperator.LESS_THAN_EQUALS, column, type, literal)

    def in_(self, column: str | None, type: LeafType | str, *literals: Any) -> Builder:
        """``column IN (literals)``; a single list/tuple argument is taken as the literals. ``None`` elements
        are kept (printed ``null``) as Hive keeps them."""
        if len(literals) == 1 and isinstance(literals[0], (list, tuple)):
            literals = tuple(literals[0])
        leaf_type = _leaf_type(type)
        if column is None:
            return self._add(_MAYBE)
        if not literals:
            raise FilterError(f"Can't create an IN expression on column {column!r} with no literals")
        values = tuple(None if x is None else coerce_literal(leaf_type.value, x) for x in literals)
        return self._add_leaf(PredicateLeaf(LeafOperator.IN, leaf_type, column, None, values))

    def between(self, column: str | None, type: LeafType | str, lower: Any, upper: Any) -> Builder:
        leaf_type = _leaf_type(type)
        if column is None or lower is None or upper is None:
            return self._add(_MAYBE)
        values = (coerce_literal(leaf_type.value, lower), coerce_literal(leaf_type.value, upper))
        return self._add_leaf(PredicateLeaf(LeafOperator.BETWEEN, leaf_type, column, None, values))

    def is_null(self, column: str | None, type: LeafType | str) -> Builder:
        leaf_type = _leaf_type(type)
        if column is None:
            return self._add(_MAYBE)
        return self._add_leaf(PredicateLeaf(LeafOperator.IS_NULL, leaf_type, column))

    def _single(self, op: LeafOperator, column: str | None, type: LeafType | str, literal: Any) -> Builder:
        leaf_type = _leaf_type(type)
        if column is None or literal is None:
            return self._add(_MAYBE)
        value = coerce_literal(leaf_type.value, literal)
        return self._add_leaf(PredicateLeaf(op, leaf_type, column, value))

    def _add_leaf(self, leaf: PredicateLeaf) -> Builder:
        """Store the leaf once per Java-equality key (Hive keeps the first instance) and add a node for it."""
        key = leaf.key()
        index = self._leaf_ids.get(key)
        if index is None:
            index = self._leaf_ids[key] = len(self._leaves)
            self._leaves.append(leaf)
            self._leaf_nodes.append(ExpressionTree.make_leaf(index))
        return self._add(self._leaf_nodes[index])

    def _add(self, node: ExpressionTree) -> Builder:
        self._stack[-1][1].append(node)
        return self

    # -- build --------------------------------------------------------------------------------------------------
    def build(self) -> SearchArgument:
        """Normalize as Hive does and number the surviving leaves depth-first over the CNF expression."""
        if len(self._stack) != 1:
            raise FilterError(
                f"Failed to end {len(self._stack) - 1} operations: call end() for each start_*()"
            )
        children = self._stack[0][1]
        compact_tree = compact(ExpressionTree(ExprOp.AND, tuple(children))) if children else _MAYBE
        cnf_tree = normalize(compact_tree)
        numbering: dict[int, int] = {}
        for old in cnf_tree.leaf_indexes():
            numbering[old] = len(numbering)
        leaf_count = len(numbering)
        for old in compact_tree.leaf_indexes():
            numbering.setdefault(old, len(numbering))
        by_new = sorted(numbering, key=numbering.__getitem__)
        leaves = tuple(self._leaves[old] for old in by_new)
        leaf_nodes: dict[int, ExpressionTree] = {}
        return SearchArgument(
            leaves=leaves[:leaf_count],
            expression=_renumber(cnf_tree, numbering, leaf_nodes),
            compact_expression=_renumber(compact_tree, numbering, leaf_nodes),
            extra_leaves=leaves[leaf_count:],
        )


def _renumber(
    root: ExpressionTree, numbering: dict[int, int], nodes: dict[int, ExpressionTree]
) -> ExpressionTree:
    """Rewrite LEAF indexes through ``numbering``, keeping shared nodes shared (one node per new index)."""

    def combine(node: ExpressionTree, kids: tuple[ExpressionTree, ...]) -> ExpressionTree:
        if node.operator is ExprOp.LEAF:
            assert node.leaf is not None
            new = numbering[node.leaf]
            if new not in nodes:
                nodes[new] = ExpressionTree.make_leaf(new)
            return nodes[new]
        return node if same_children(node, kids) else ExpressionTree(node.operator, kids)

    return rebuild(root, combine)


def _leaf_type(value: LeafType | str) -> LeafType:
    if isinstance(value, LeafType):
        return value
    try:
        return LeafType(value)
    except ValueError:
        raise FilterError(
            f"Unknown leaf type {value!r}; use one of {', '.join(t.value for t in LeafType)}"
        ) from None


class SearchArgumentFactory:
    """Entry point, as Hive's ``SearchArgumentFactory``."""

    @staticmethod
    def new_builder() -> Builder:
        """A fresh builder whose root is an implicit AND."""
        return Builder()
