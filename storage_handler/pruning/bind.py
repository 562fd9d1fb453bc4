"""Bind an evaluator tree to a table schema, once.

Binding resolves every leaf's column (case-insensitively; partition columns first), converts its literals into the
column's domain (``domain.py``) and picks where the leaf's values come from:

* a data column -> :class:`StatsColumn` (the index's ``min_values`` / ``max_values`` / ``null_count`` fields);
* a partition column -> ``partition_value(element_at(partition_values, key), type)`` (``partitions.py``).

Anything that cannot be evaluated safely -- an unknown column, a column type without statistics, a literal that
does not convert -- becomes an :class:`UnboundLeaf`, which always evaluates to ``YES_NO_NULL`` (keep) and records
why. Binding never raises for such leaves: a wrong prune is the one outcome that is never acceptable.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from storage_handler.pruning.domain import (
    COMPARABLE_TYPES,
    DomainPoint,
    UnconvertibleLiteral,
    convert_literal,
)
from storage_handler.pruning.partitions import (
    PARSED_TYPES,
    PARTITION_VALUES_COLUMN,
    ElementAt,
    PartitionValue,
)
from storage_handler.pruning.tree import And, Constant, Leaf, Node, Not, Or, children_of, postorder
from storage_handler.sarg import LeafOperator
from storage_handler.types import HiveType, parse_hive_type

SchemaLike = Iterable[tuple[str, HiveType | str]]


@dataclass(frozen=True, slots=True)
class StatsColumn:
    """A data column's per-file statistics in the index (field ``name`` of the three stats structs)."""

    name: str
    hive_type: HiveType


Source = StatsColumn | PartitionValue


@dataclass(frozen=True, slots=True)
class BoundLeaf:
    """A leaf ready to evaluate: where its values come from and its literals located in the column's domain."""

    leaf: Leaf
    source: Source
    points: tuple[DomainPoint, ...]

    @property
    def children(self) -> tuple[()]:
        return ()


@dataclass(frozen=True, slots=True)
class UnboundLeaf:
    """A leaf that cannot be evaluated; always ``YES_NO_NULL``. ``reason`` says why (shown by ``explain``)."""

    leaf: Leaf
    reason: str

    @property
    def children(self) -> tuple[()]:
        return ()


BoundNode = And | Or | Not | Constant | BoundLeaf | UnboundLeaf


def normalize_schema(columns: SchemaLike) -> dict[str, HiveType]:
    """``[(name, type)]`` -> ``{lower name: HiveType}``; type strings are parsed."""
    result: dict[str, HiveType] = {}
    for name, hive_type in columns:
        result[name.lower()] = parse_hive_type(hive_type) if isinstance(hive_type, str) else hive_type
    return result


def bind(node: Node, schema: SchemaLike, partition_columns: SchemaLike = ()) -> BoundNode:
    """Bind ``node`` (from :func:`~storage_handler.pruning.tree.from_sarg`) to the table's data and partition
    columns. Iterative: the depth of the tree does not matter."""
    data = normalize_schema(schema)
    partitions = normalize_schema(partition_columns)
    built: dict[int, BoundNode] = {}
    for current in postorder(node):
        kids = tuple(built[id(c)] for c in children_of(current))
        result: BoundNode
        if isinstance(current, Leaf):
            result = bind_leaf(current, data, partitions)
        elif isinstance(current, And):
            result = And(kids)
        elif isinstance(current, Or):
            result = Or(kids)
        elif isinstance(current, Not):
            result = Not(kids[0])
        else:
            result = current  # type: ignore[assignment]  # Constant
        built[id(current)] = result
    return built[id(node)]


def bind_leaf(leaf: Leaf, data: dict[str, HiveType], partitions: dict[str, HiveType]) -> BoundLeaf | UnboundLeaf:
    """Bind one leaf (see the module docstring for what becomes unbound)."""
    column = leaf.column.lower()
    source: Source
    if column in partitions:
        hive_type = partitions[column]
        if hive_type.name not in PARSED_TYPES:
            return UnboundLeaf(leaf, f"partition column {column!r} has type {hive_type}, whose values are not parsed")
        source = PartitionValue(ElementAt(PARTITION_VALUES_COLUMN, column), hive_type)
    elif column in data:
        hive_type = data[column]
        if hive_type.name not in COMPARABLE_TYPES:
            return UnboundLeaf(leaf, f"column {column!r} has type {hive_type}, which has no usable statistics")
        source = StatsColumn(column, hive_type)
    else:
        return UnboundLeaf(leaf, f"column {leaf.column!r} is not a column of the table")
    if leaf.operator == LeafOperator.IS_NULL:
        return BoundLeaf(leaf, source, ())
    expected = {LeafOperator.BETWEEN: 2}.get(leaf.operator)
    if (expected is not None and len(leaf.literals) != expected) or not leaf.literals:
        return UnboundLeaf(leaf, f"{leaf.operator.name} has {len(leaf.literals)} literals")
    try:
        points = tuple(convert_literal(value, hive_type) for value in leaf.literals)
    except UnconvertibleLiteral as exc:
        return UnboundLeaf(leaf, f"literal does not convert to column {column!r} of type {hive_type}: {exc}")
    return BoundLeaf(leaf, source, points)


def bound_leaves(root: BoundNode) -> Sequence[BoundLeaf | UnboundLeaf]:
    """The distinct leaf nodes of a bound tree, in evaluation order."""
    return [n for n in postorder(root) if isinstance(n, (BoundLeaf, UnboundLeaf))]
