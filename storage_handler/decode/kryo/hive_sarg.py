"""A decoded ``SearchArgumentImpl`` graph (``sarg.pushdown``) -> :class:`~storage_handler.sarg.SearchArgument`.

Hive's reader uses the deserialized object as it is: no normalization runs again. So we rebuild the same object --
its ``leaves`` list in order, its ``normalizedExpression`` (what ``toString``/``toOldString`` print) and its
``compactExpression`` -- without passing them through the builder. Leaves are shared objects in the graph (Kryo
writes each once and refers back to it); a leaf of the normalized expression must be one of ``leaves``, at the
position its ``id`` says, or the bytes are not a SearchArgument Hive built.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from storage_handler.decode.kryo.graph import JavaEnum, JavaInstant, JavaObject, class_of
from storage_handler.decode.kryo.hive_expr import hive_decimal
from storage_handler.decode.kryo.javatime import sql_date, sql_timestamp
from storage_handler.decode.kryo.stream import KryoFormatError
from storage_handler.errors import FilterError
from storage_handler.sarg import (
    ExpressionTree,
    ExprOp,
    LeafOperator,
    LeafType,
    PredicateLeaf,
    SearchArgument,
    TruthValue,
)

_SARG = "org.apache.hadoop.hive.ql.io.sarg."
_LEAF = _SARG + "SearchArgumentImpl$PredicateLeafImpl"
_TREE = _SARG + "ExpressionTree"
_DECIMAL_WRITABLE = "org.apache.hadoop.hive.serde2.io.HiveDecimalWritable"


def to_search_argument(root: Any, zone: dt.tzinfo) -> SearchArgument:
    """The SearchArgument a decoded ``SearchArgumentImpl`` holds."""
    if not isinstance(root, JavaObject) or root.cls != _SARG + "SearchArgumentImpl":
        raise KryoFormatError(f"sarg.pushdown holds a {class_of(root)}, not a SearchArgumentImpl")
    raw_leaves = root["leaves"]
    if not isinstance(raw_leaves, list):
        raise KryoFormatError(f"the SearchArgument's leaves are a {class_of(raw_leaves)}, not a list")
    index: dict[int, int] = {}  # id(PredicateLeafImpl object) -> position in the leaf list
    leaves: list[PredicateLeaf] = []
    for position, raw in enumerate(raw_leaves):
        leaf = _leaf(raw, zone)
        if raw["id"] != position or id(raw) in index:
            raise KryoFormatError(f"leaf {position} of the SearchArgument has id {raw['id']} or appears twice")
        index[id(raw)] = position
        leaves.append(leaf)
    extra: list[PredicateLeaf] = []
    expression = _tree(root["normalizedExpression"], index, None, zone)
    compact = _tree(root["compactExpression"], dict(index), extra, zone)
    try:
        return SearchArgument(tuple(leaves), expression, compact, tuple(extra))
    except FilterError as e:
        raise KryoFormatError(f"the SearchArgument is inconsistent: {e}") from e


def _enum(value: Any, cls: str, what: str) -> str:
    if not isinstance(value, JavaEnum) or value.cls != cls:
        raise KryoFormatError(f"{what} is a {class_of(value)}, not a {cls.rsplit('.', 1)[-1]}")
    return value.name


def _leaf(raw: Any, zone: dt.tzinfo) -> PredicateLeaf:
    if not isinstance(raw, JavaObject) or raw.cls != _LEAF:
        raise KryoFormatError(f"a SearchArgument leaf is a {class_of(raw)}, not a PredicateLeafImpl")
    operator = LeafOperator(_enum(raw["operator"], _SARG + "PredicateLeaf$Operator", "a leaf operator"))
    leaf_type = LeafType(_enum(raw["type"], _SARG + "PredicateLeaf$Type", "a leaf type"))
    column = raw["columnName"]
    literals = raw["literalList"]
    if literals is not None and not isinstance(literals, list):
        raise KryoFormatError(f"the literal list of a leaf is a {class_of(literals)}")
    try:
        return PredicateLeaf(
            operator, leaf_type, column, _literal(raw["literal"], leaf_type, zone),
            tuple(_literal(item, leaf_type, zone) for item in literals or ()),
        )
    except FilterError as e:
        raise KryoFormatError(f"a leaf of the SearchArgument is not one Hive builds: {e}") from e


def _literal(raw: Any, leaf_type: LeafType, zone: dt.tzinfo) -> Any:
    """A leaf literal, held in the Java class Hive's ``PredicateLeafImpl`` insists on for the leaf type."""
    if raw is None:
        return None
    if leaf_type in (LeafType.DATE, LeafType.TIMESTAMP) and isinstance(raw, JavaInstant):
        if leaf_type is LeafType.DATE and raw.cls == "java.sql.Date":
            return sql_date(raw.millis, zone)
        if leaf_type is LeafType.TIMESTAMP and raw.cls == "java.sql.Timestamp":
            return sql_timestamp(raw.millis, raw.nanos, zone)
    if leaf_type is LeafType.DECIMAL and isinstance(raw, JavaObject) and raw.cls == _DECIMAL_WRITABLE:
        return hive_decimal(raw)
    if leaf_type in (LeafType.LONG, LeafType.FLOAT, LeafType.STRING, LeafType.BOOLEAN):
        return raw  # PredicateLeaf checks the class (int, float, str, bool)
    raise KryoFormatError(f"a {leaf_type.value} leaf holds a literal of class {class_of(raw)}")


def _tree(root: Any, index: dict[int, int], extra: list[PredicateLeaf] | None, zone: dt.tzinfo) -> ExpressionTree:
    """Rebuild an ``ExpressionTree`` graph iteratively (shared nodes once), numbering leaves by ``index``.

    ``extra`` None: every leaf must be in ``index`` (the normalized expression). Otherwise leaves not in the list
    are appended to ``extra`` and numbered after it (the compact expression may keep leaves the CNF dropped).
    """
    built: dict[int, ExpressionTree] = {}
    open_nodes: set[int] = set()  # expanded, children not built yet: meeting one again is a cycle
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, expanded = stack.pop()
        if id(node) in built:
            continue
        if not expanded and id(node) in open_nodes:
            # Kryo lets a reference name an object still being read; a tree holds no such loop, and following
            # one grew this stack without end
            raise KryoFormatError("a SearchArgument expression node is its own descendant (a cycle)")
        if not isinstance(node, JavaObject) or node.cls != _TREE:
            raise KryoFormatError(f"a SearchArgument expression node is a {class_of(node)}")
        operator = ExprOp(_enum(node["operator"], _TREE + "$Operator", "an expression operator"))
        children = node["children"] or []
        if not isinstance(children, list):
            raise KryoFormatError(f"the children of an expression node are a {class_of(children)}")
        if operator in (ExprOp.AND, ExprOp.OR, ExprOp.NOT) and not expanded:
            open_nodes.add(id(node))
            stack.append((node, True))
            stack.extend((child, False) for child in reversed(children) if id(child) not in built)
            continue
        open_nodes.discard(id(node))
        try:
            built[id(node)] = _make(node, operator, children, built, index, extra, zone)
        except FilterError as e:
            raise KryoFormatError(f"a SearchArgument expression node is malformed: {e}") from e
    return built[id(root)]


def _make(node: JavaObject, operator: ExprOp, children: list[Any], built: dict[int, ExpressionTree],
          index: dict[int, int], extra: list[PredicateLeaf] | None, zone: dt.tzinfo) -> ExpressionTree:
    if operator is ExprOp.CONSTANT:
        if children or node["leaf"] is not None:
            raise KryoFormatError("a CONSTANT expression node has children or a leaf")
        return ExpressionTree.make_constant(
            TruthValue(_enum(node["constant"], _SARG + "SearchArgument$TruthValue", "a constant")))
    if node["constant"] is not None:
        raise KryoFormatError(f"a {operator.value} expression node holds a constant")
    if operator is ExprOp.LEAF:
        raw = node["leaf"]
        if children or raw is None:
            raise KryoFormatError("a LEAF expression node has children or no leaf")
        position = index.get(id(raw))
        if position is None:
            if extra is None:
                raise KryoFormatError("the expression uses a leaf that is not in the SearchArgument's leaf list")
            extra.append(_leaf(raw, zone))
            position = index[id(raw)] = len(index)
        return ExpressionTree.make_leaf(position)
    if node["leaf"] is not None:
        raise KryoFormatError(f"a {operator.value} expression node holds a leaf")
    return ExpressionTree(operator, tuple(built[id(child)] for child in children))
