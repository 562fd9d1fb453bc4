"""The evaluator tree: a SearchArgument reshaped for evaluation (the shape of Hudi's RFC).

Parent nodes are :class:`And`, :class:`Or`, :class:`Not`; leaves are :class:`Leaf` (operator, column, typed
literals) and :class:`Constant` (a fixed TruthValue). Nodes are immutable, slotted and compared by value; traversal
is iterative (:func:`postorder`) so a wide or deep tree never meets Python's recursion limit.

The same parent classes carry *bound* trees (``bind.py``), whose leaves are bound leaves instead of :class:`Leaf`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from storage_handler.errors import FilterError
from storage_handler.sarg import ExprOp, LeafOperator, LeafType, SearchArgument, TruthValue
from storage_handler.types import EXACT_DECIMALS


@dataclass(frozen=True, slots=True)
class And:
    children: tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class Or:
    children: tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class Not:
    child: Any

    @property
    def children(self) -> tuple[Any, ...]:
        return (self.child,)


@dataclass(frozen=True, slots=True)
class Constant:
    value: TruthValue

    @property
    def children(self) -> tuple[Any, ...]:
        return ()


@dataclass(frozen=True, slots=True)
class Leaf:
    """One predicate leaf. ``literals`` is ``()`` for IS_NULL, ``(lo, hi)`` for BETWEEN, the list for IN and
    ``(literal,)`` otherwise; ``index`` is the leaf's number in the SearchArgument (``leaf-<index>``)."""

    index: int
    operator: LeafOperator
    column: str
    leaf_type: LeafType
    literals: tuple[object, ...]
    text: str = ""  # the SearchArgument's own printing of the leaf, when it has one

    @property
    def children(self) -> tuple[Any, ...]:
        return ()

    def __str__(self) -> str:
        return leaf_text(self)


Node = And | Or | Not | Constant | Leaf

_CONSTANTS: dict[str, Constant] = {}


def constant(value: TruthValue) -> Constant:
    """The shared :class:`Constant` node for ``value``."""
    node = _CONSTANTS.get(value.name)
    if node is None:
        node = _CONSTANTS.setdefault(value.name, Constant(value))
    return node


def children_of(node: object) -> tuple[Any, ...]:
    """Children of any tree node (leaves of bound trees have none)."""
    return getattr(node, "children", ())


def postorder(root: object) -> Iterator[object]:
    """Each *distinct* node (by identity) once, after all of its children -- iteratively.

    SearchArguments share sub-expressions (the CNF puts one node into many clauses), so trees here are DAGs;
    visiting a shared node once keeps every pass linear in the number of distinct nodes, and the explicit stack
    keeps any depth within reach.
    """
    done: set[int] = set()
    stack: list[tuple[object, bool]] = [(root, False)]
    while stack:
        node, expanded = stack.pop()
        if id(node) in done:
            continue
        kids = children_of(node)
        if expanded or not kids:
            done.add(id(node))
            yield node
            continue
        stack.append((node, True))
        stack.extend((child, False) for child in reversed(kids) if id(child) not in done)


def format_literal(value: object) -> str:
    """Hive's printing of a literal inside a leaf (``12.50`` -> ``12.5``, timestamps with a trimmed fraction)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, Decimal):
        return format(value.normalize(EXACT_DECIMALS), "f")
    if isinstance(value, dt.datetime):
        text = value.strftime("%Y-%m-%d %H:%M:%S")
        fraction = f"{value.microsecond:06d}".rstrip("0") or "0"
        return f"{text}.{fraction}"
    return str(value)


def leaf_text(leaf: Leaf) -> str:
    """``(EQUALS x 1)``, ``(IN x 1 2 3)``, ``(IS_NULL z)`` -- the form of ``SearchArgument.to_string()``."""
    if leaf.text:
        return leaf.text
    parts = [leaf.operator.name, leaf.column, *(format_literal(v) for v in leaf.literals)]
    return "(" + " ".join(parts) + ")"


def leaf_from_sarg(index: int, predicate: Any) -> Leaf:
    """A :class:`Leaf` from a ``PredicateLeaf``."""
    op = predicate.operator
    if op in (LeafOperator.IN, LeafOperator.BETWEEN):
        literals = tuple(predicate.literal_list)
    elif op == LeafOperator.IS_NULL:
        literals = ()
    else:
        literals = (predicate.literal,)
    to_string = getattr(predicate, "to_string", None)
    text = to_string() if callable(to_string) else ""
    return Leaf(index, op, predicate.column_name, predicate.type, literals, text)


def from_sarg(sarg: SearchArgument, compact: bool = False) -> Node:
    """Convert a SearchArgument into an evaluator tree (iteratively, keeping shared sub-expressions shared).

    By default the CNF ``expression`` is used -- what Hive evaluates. ``compact=True`` uses the
    ``compact_expression`` (before CNF expansion, over ``compact_leaves``): never less precise, and still the real
    predicate where the CNF gave up past 256 combinations.
    """
    predicates = sarg.compact_leaves if compact else sarg.leaves
    leaves = [leaf_from_sarg(i, p) for i, p in enumerate(predicates)]
    built: dict[int, Node] = {}
    root_expr = sarg.compact_expression if compact else sarg.expression
    for expr in postorder(root_expr):
        op = expr.operator  # type: ignore[attr-defined]
        kids = tuple(built[id(c)] for c in expr.children)  # type: ignore[attr-defined]
        node: Node
        if op == ExprOp.LEAF:
            ref = expr.leaf  # type: ignore[attr-defined]
            if ref is None or not 0 <= ref < len(leaves):
                raise FilterError(
                    f"SearchArgument leaf reference {ref!r} is out of range ({len(leaves)} leaves); rebuild it"
                )
            node = leaves[ref]
        elif op == ExprOp.CONSTANT:
            node = constant(expr.constant)  # type: ignore[attr-defined]
        elif op == ExprOp.NOT:
            if len(kids) != 1:
                raise FilterError(f"a NOT node needs exactly one child, found {len(kids)}")
            node = Not(kids[0])
        elif op == ExprOp.AND:
            node = And(kids)
        elif op == ExprOp.OR:
            node = Or(kids)
        else:  # pragma: no cover - ExprOp is closed
            raise FilterError(f"unknown SearchArgument operator {op!r}")
        built[id(expr)] = node
    return built[id(root_expr)]
