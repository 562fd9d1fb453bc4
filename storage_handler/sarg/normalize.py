"""Hive's SearchArgument normalization (``SearchArgumentImpl.BuilderImpl.build``), step by step, in Hive's order.

1. :func:`push_not_down` - De Morgan down to the leaves; NOT NOT x = x; NOT of a constant is evaluated.
2. :func:`fold_maybe` - YES_NO_NULL ("cannot tell") is dropped from an AND and swallows an OR; an AND left empty
   becomes YES_NO_NULL.
3. :func:`flatten` - AND in AND and OR in OR are merged; an AND/OR with one child is replaced by the child.
   The result of 1-3 is the *compact* expression.
4. :func:`convert_to_cnf` - an OR over ANDs is distributed into an AND of ORs, unless the number of combinations
   exceeds 256, in which case the OR becomes YES_NO_NULL (and, unlike in step 2, is not folded away later).
5. :func:`flatten` again; leaves are then numbered depth-first over the result (see ``builder``).

Hive mutates one tree in place through these steps; each function here is a pure rewrite with the same result
(the in-place version only ever re-flattens already flat shared nodes, which changes nothing). Identical subtrees
are never merged, and constants other than YES_NO_NULL are kept as they are: both are Hive's behaviour and both
show in its printed form.
"""

from __future__ import annotations

from storage_handler.errors import FilterError
from storage_handler.sarg.tree import ExpressionTree, ExprOp, rebuild, same_children
from storage_handler.sarg.truth import TruthValue

#: Hive's ``CNF_COMBINATIONS_THRESHOLD``.
CNF_COMBINATIONS_THRESHOLD = 256

_MAYBE = ExpressionTree.make_constant(TruthValue.YES_NO_NULL)
_DUAL = {ExprOp.AND: ExprOp.OR, ExprOp.OR: ExprOp.AND}


def push_not_down(root: ExpressionTree) -> ExpressionTree:
    """Move every NOT down to a leaf (step 1). Iterative: state is (node, negated)."""
    done: dict[tuple[int, bool], ExpressionTree] = {}

    def strip(node: ExpressionTree, negated: bool) -> tuple[ExpressionTree, bool]:
        while node.operator is ExprOp.NOT:
            node, negated = node.children[0], not negated
        return node, negated

    start = strip(root, False)
    stack = [(start[0], start[1], False)]
    while stack:
        node, negated, expanded = stack.pop()
        key = (id(node), negated)
        if key in done:
            continue
        op = node.operator
        if op is ExprOp.LEAF:
            done[key] = ExpressionTree.make_not(node) if negated else node
        elif op is ExprOp.CONSTANT:
            assert node.constant is not None
            done[key] = ExpressionTree.make_constant(node.constant.not_()) if negated else node
        else:
            kids = [strip(child, negated) for child in node.children]
            if not expanded:
                stack.append((node, negated, True))
                stack.extend((kid, neg, False) for kid, neg in reversed(kids))
                continue
            new_kids = tuple(done[id(kid), neg] for kid, neg in kids)
            new_op = _DUAL[op] if negated else op
            if new_op is op and same_children(node, new_kids):
                done[key] = node
            else:
                done[key] = ExpressionTree(new_op, new_kids)
    return done[id(start[0]), start[1]]


def fold_maybe(root: ExpressionTree) -> ExpressionTree:
    """Remove YES_NO_NULL (step 2); assumes NOTs were pushed down."""

    def combine(node: ExpressionTree, kids: tuple[ExpressionTree, ...]) -> ExpressionTree:
        if not kids:
            return node
        op = node.operator
        if op is ExprOp.OR:
            if any(kid.is_constant(TruthValue.YES_NO_NULL) for kid in kids):
                return _MAYBE
        elif op is ExprOp.AND:
            kids = tuple(kid for kid in kids if not kid.is_constant(TruthValue.YES_NO_NULL))
            if not kids:
                return _MAYBE
        elif kids[0].is_constant(TruthValue.YES_NO_NULL):
            raise FilterError(f"Got a maybe as child of {op.value}; was push_not_down skipped?")
        return node if same_children(node, kids) else ExpressionTree(op, kids)

    return rebuild(root, combine)


def flatten(root: ExpressionTree) -> ExpressionTree:
    """Merge nested AND/AND and OR/OR and unwrap one-child AND/OR (steps 3 and 5)."""

    def combine(node: ExpressionTree, kids: tuple[ExpressionTree, ...]) -> ExpressionTree:
        if not kids:
            return node
        op = node.operator
        merged: list[ExpressionTree] = []
        for kid in kids:
            if kid.operator is op and op is not ExprOp.NOT:
                merged.extend(kid.children)
            else:
                merged.append(kid)
        if op in _DUAL and len(merged) == 1:
            return merged[0]
        new_kids = tuple(merged)
        return node if same_children(node, new_kids) else ExpressionTree(op, new_kids)

    return rebuild(root, combine)


def convert_to_cnf(root: ExpressionTree) -> ExpressionTree:
    """Distribute OR over AND bottom-up (step 4), giving up with YES_NO_NULL past the threshold.

    For ``(or n1 n2 (and a b) (and c d))`` Hive produces ``(and (or n1 n2 a c) (or n1 n2 b c) (or n1 n2 a d)
    (or n1 n2 b d))``: non-AND children first (the children of an OR child pulled up one level), then one child of
    each AND, the first AND varying fastest. The chosen children are shared between clauses, not copied.
    """

    def combine(node: ExpressionTree, kids: tuple[ExpressionTree, ...]) -> ExpressionTree:
        if not kids:
            return node
        if node.operator is not ExprOp.OR:
            return node if same_children(node, kids) else ExpressionTree(node.operator, kids)
        non_and: list[ExpressionTree] = []
        and_list: list[ExpressionTree] = []
        for kid in kids:
            if kid.operator is ExprOp.AND:
                and_list.append(kid)
            elif kid.operator is ExprOp.OR:
                non_and.extend(kid.children)
            else:
                non_and.append(kid)
        if not and_list:
            return node if same_children(node, kids) else ExpressionTree(ExprOp.OR, kids)
        combinations = 1
        for conjunction in and_list:
            combinations *= len(conjunction.children)
            if combinations > CNF_COMBINATIONS_THRESHOLD:
                return _MAYBE
        clauses: list[tuple[ExpressionTree, ...]] = [(*non_and, kid) for kid in and_list[0].children]
        for conjunction in and_list[1:]:
            clauses = [(*clause, kid) for kid in conjunction.children for clause in clauses]
        return ExpressionTree(ExprOp.AND, tuple(ExpressionTree(ExprOp.OR, clause) for clause in clauses))

    return rebuild(root, combine)


def compact(root: ExpressionTree) -> ExpressionTree:
    """Steps 1-3: Hive's ``optimize`` (the SearchArgument's compact expression)."""
    return flatten(fold_maybe(push_not_down(root)))


def normalize(compact_expression: ExpressionTree) -> ExpressionTree:
    """Steps 4-5 applied to a compact expression: the CNF expression Hive prints and evaluates."""
    return flatten(convert_to_cnf(compact_expression))
