"""Expression trees over predicate leaves, Hive's ``ExpressionTree`` made immutable.

Nodes are frozen and may be shared: Hive's CNF expansion puts the same sub-expression into many clauses, and we
keep that as a DAG instead of copying (printing still expands it, as Hive does). Every traversal here is iterative
and visits a shared node once, so neither a 5,000-deep chain of ORs from a long ``IN`` rewritten by a decoder nor a
heavily shared CNF result runs into Python's recursion limit or exponential time.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TypeVar

from storage_handler.errors import FilterError
from storage_handler.sarg.truth import TruthValue

T = TypeVar("T")


class ExprOp(enum.Enum):
    """Hive's ``ExpressionTree.Operator``."""

    OR = "OR"
    AND = "AND"
    NOT = "NOT"
    LEAF = "LEAF"
    CONSTANT = "CONSTANT"


@dataclass(frozen=True, slots=True, repr=False)
class ExpressionTree:
    """One node: OR / AND (one or more children), NOT (one child), LEAF (``leaf`` indexes the leaf list of the
    owning SearchArgument) or CONSTANT (a fixed TruthValue, e.g. YES_NO_NULL for "cannot tell").

    Build nodes with :meth:`make_leaf`, :meth:`make_constant`, :meth:`make_and`, :meth:`make_or`, :meth:`make_not`.
    ``==`` and ``hash`` are the dataclass ones and therefore recursive: compare trees thousands of levels deep by
    their printed form instead (every other operation here is iterative).
    """

    operator: ExprOp
    children: tuple[ExpressionTree, ...] = ()
    leaf: int | None = None
    constant: TruthValue | None = None

    def __post_init__(self) -> None:
        op = self.operator
        if op is ExprOp.LEAF:
            ok = type(self.leaf) is int and self.leaf >= 0 and not self.children and self.constant is None
        elif op is ExprOp.CONSTANT:
            ok = isinstance(self.constant, TruthValue) and not self.children and self.leaf is None
        elif op is ExprOp.NOT:
            ok = len(self.children) == 1 and self.leaf is None and self.constant is None
        elif op in (ExprOp.AND, ExprOp.OR):
            ok = len(self.children) >= 1 and self.leaf is None and self.constant is None
        else:
            raise FilterError(f"Unknown expression operator {op!r}")
        if not ok:
            raise FilterError(
                f"Malformed {op.value} node (children={len(self.children)}, leaf={self.leaf!r}, "
                f"constant={self.constant!r})"
            )
        if not isinstance(self.children, tuple) or not all(
            isinstance(c, ExpressionTree) for c in self.children
        ):
            raise FilterError(f"Children of a {op.value} node must be a tuple of ExpressionTree")

    # -- constructors -------------------------------------------------------------------------------------------
    @staticmethod
    def make_leaf(index: int) -> ExpressionTree:
        """A LEAF node referring to ``leaves[index]``."""
        return ExpressionTree(ExprOp.LEAF, leaf=index)

    @staticmethod
    def make_constant(value: TruthValue) -> ExpressionTree:
        """The shared CONSTANT node for ``value``."""
        return _CONSTANTS[value]

    @staticmethod
    def make_and(children: Sequence[ExpressionTree]) -> ExpressionTree:
        return ExpressionTree(ExprOp.AND, tuple(children))

    @staticmethod
    def make_or(children: Sequence[ExpressionTree]) -> ExpressionTree:
        return ExpressionTree(ExprOp.OR, tuple(children))

    @staticmethod
    def make_not(child: ExpressionTree) -> ExpressionTree:
        return ExpressionTree(ExprOp.NOT, (child,))

    # -- queries ------------------------------------------------------------------------------------------------
    def is_constant(self, value: TruthValue) -> bool:
        return self.operator is ExprOp.CONSTANT and self.constant is value

    def evaluate(self, leaf_values: Sequence[TruthValue]) -> TruthValue:
        """Hive's ``ExpressionTree.evaluate``: folds children left to right as ``child.or_(accumulated)``."""

        def combine(node: ExpressionTree, kids: list[TruthValue]) -> TruthValue:
            op = node.operator
            if op is ExprOp.LEAF:
                assert node.leaf is not None
                if node.leaf >= len(leaf_values):
                    raise FilterError(
                        f"evaluate() got {len(leaf_values)} leaf values but the expression uses leaf-{node.leaf}"
                    )
                return leaf_values[node.leaf]
            if op is ExprOp.CONSTANT:
                assert node.constant is not None
                return node.constant
            if op is ExprOp.NOT:
                return kids[0].not_()
            result: TruthValue | None = None
            for value in kids:
                result = value.or_(result) if op is ExprOp.OR else value.and_(result)
            assert result is not None
            return result

        return fold(self, combine)

    def leaf_indexes(self) -> Iterator[int]:
        """Leaf indexes in depth-first, left-to-right order of first appearance (each once)."""
        seen: set[int] = set()
        for node in preorder(self):
            if node.leaf is not None and node.leaf not in seen:
                seen.add(node.leaf)
                yield node.leaf

    def render(self, leaf_text: Sequence[str] | None = None) -> str:
        """Hive's printed form of the tree: ``toOldString`` (``leaf-3``) without ``leaf_text``, ``toString``
        (``leaf-`` followed by ``leaf_text[3]``) with it.

        An explicit stack emits the text left to right, so the cost is the size of the output whatever the depth;
        shared sub-expressions are printed in full at each place, as Hive prints them.
        """
        out: list[str] = []
        stack: list[ExpressionTree | str] = [self]
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

    def __str__(self) -> str:
        return self.render()

    def __repr__(self) -> str:
        return f"ExpressionTree<{self}>"


_CONSTANTS = {value: ExpressionTree(ExprOp.CONSTANT, constant=value) for value in TruthValue}


def preorder(root: ExpressionTree) -> Iterator[ExpressionTree]:
    """Each distinct node once, parents before children, children left to right (iterative)."""
    seen: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        yield node
        stack.extend(reversed(node.children))


def fold(root: ExpressionTree, combine: Callable[[ExpressionTree, list[T]], T]) -> T:
    """Post-order fold: ``combine(node, results_of_children)``, computed once per distinct node (iterative)."""
    done: dict[int, T] = {}
    stack: list[tuple[ExpressionTree, bool]] = [(root, False)]
    while stack:
        node, expanded = stack.pop()
        key = id(node)
        if key in done:
            continue
        if node.children and not expanded:
            stack.append((node, True))
            stack.extend((child, False) for child in reversed(node.children) if id(child) not in done)
            continue
        done[key] = combine(node, [done[id(child)] for child in node.children])
    return done[id(root)]


def rebuild(
    root: ExpressionTree, combine: Callable[[ExpressionTree, tuple[ExpressionTree, ...]], ExpressionTree]
) -> ExpressionTree:
    """Post-order rewrite keeping sharing; ``combine`` receives the node and its rewritten children."""

    def step(node: ExpressionTree, kids: list[ExpressionTree]) -> ExpressionTree:
        return combine(node, tuple(kids))

    return fold(root, step)


def same_children(node: ExpressionTree, kids: tuple[ExpressionTree, ...]) -> bool:
    """Whether rewritten children are the very same objects (then the node itself can be reused)."""
    return len(kids) == len(node.children) and all(a is b for a, b in zip(kids, node.children, strict=True))
