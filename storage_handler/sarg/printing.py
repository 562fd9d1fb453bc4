"""Hive's printed forms of a SearchArgument, character for character (storage-api 2.8.1).

* ``toString`` (new form) inlines the leaves: ``(and leaf-(EQUALS x 1) (not leaf-(IS_NULL z)))``.
* ``toOldString`` lists the leaves first: ``leaf-0 = (EQUALS x 1), leaf-1 = (IS_NULL z), expr = (and leaf-0
  (not leaf-1))`` - the form in Hive's tests and in Hudi's RFC, handy in logs because leaves print once.

The tree prints itself (:meth:`ExpressionTree.render`, iterative, any depth); this module adds the forms that
need the leaves.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from storage_handler.sarg.leaf import PredicateLeaf
    from storage_handler.sarg.tree import ExpressionTree


def tree_to_string(root: ExpressionTree, leaves: Sequence[PredicateLeaf]) -> str:
    """Hive's ``ExpressionTree.toString()``: each leaf printed inline as ``leaf-(OP column literal...)``."""
    return root.render([leaf.to_string() for leaf in leaves])


def tree_to_old_string(root: ExpressionTree) -> str:
    """Hive's ``ExpressionTree.toOldString()``: leaves printed by number, ``leaf-3``."""
    return root.render()


def sarg_to_old_string(leaves: Sequence[PredicateLeaf], expression: ExpressionTree) -> str:
    """Hive's ``SearchArgumentImpl.toOldString()``: ``leaf-0 = (...), leaf-1 = (...), expr = ...``."""
    listed = "".join(f"leaf-{i} = {leaf.to_string()}, " for i, leaf in enumerate(leaves))
    return listed + "expr = " + expression.render()
