"""Hive's printed forms of a SearchArgument, character for character (storage-api 2.8.1).

* ``toString`` (new form) inlines the leaves: ``(and leaf-(EQUALS x 1) (not leaf-(IS_NULL z)))``.
* ``toOldString`` lists the leaves first: ``leaf-0 = (EQUALS x 1), leaf-1 = (IS_NULL z), expr = (and leaf-0
  (not leaf-1))`` - the form in Hive's tests and in Hudi's RFC, handy in logs because leaves print once.

Printing walks the tree with an explicit stack, so its cost is the size of the output whatever the depth; shared
sub-expressions are printed in full at each place, as Hive prints them.
"""

from __future__ import annotations

from collections.abc import Sequence

from storage_handler.sarg.leaf import PredicateLeaf
from storage_handler.sarg.tree import ExpressionTree, ExprOp


def _render(root: ExpressionTree, leaf_text: Sequence[str] | None) -> str:
    """Emit the text left to right with an explicit stack: linear in the output, any depth."""
    out: list[str] = []
    stack: list[ExpressionTree | str] = [root]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            out.append(item)
            continue
        op = item.operator
        if op is ExprOp.LEAF:
            assert item.leaf is not None
            out.append("leaf-" + (str(item.leaf) if leaf_text is None else leaf_text[item.leaf]))
        elif op is ExprOp.CONSTANT:
            assert item.constant is not None
            out.append(item.constant.value)
        elif op is ExprOp.NOT:
            out.append("(not ")
            stack += (")", item.children[0])
        else:
            out.append("(or" if op is ExprOp.OR else "(and")
            stack.append(")")
            for child in reversed(item.children):
                stack += (child, " ")
    return "".join(out)


def tree_to_string(root: ExpressionTree, leaves: Sequence[PredicateLeaf]) -> str:
    """Hive's ``ExpressionTree.toString()``: each leaf printed inline as ``leaf-(OP column literal...)``."""
    return _render(root, [leaf.to_string() for leaf in leaves])


def tree_to_old_string(root: ExpressionTree) -> str:
    """Hive's ``ExpressionTree.toOldString()``: leaves printed by number, ``leaf-3``."""
    return _render(root, None)


def sarg_to_old_string(leaves: Sequence[PredicateLeaf], expression: ExpressionTree) -> str:
    """Hive's ``SearchArgumentImpl.toOldString()``: ``leaf-0 = (...), leaf-1 = (...), expr = ...``."""
    listed = "".join(f"leaf-{i} = {leaf.to_string()}, " for i, leaf in enumerate(leaves))
    return listed + "expr = " + tree_to_old_string(expression)
