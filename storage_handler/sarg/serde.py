"""Versioned JSON form of a SearchArgument, for the ``sarg.pushdown`` job property.

Format (version 1)::

    {"format": "hsh-sarg", "version": 1,
     "leaves": [{"operator": "EQUALS", "type": "LONG", "column": "x", "literal": 1, "literal_list": []}, ...],
     "leaf_count": 1,                       # leaves[:leaf_count] are SearchArgument.leaves, the rest extra_leaves
     "nodes": [["leaf", 0], ["const", "YES"], ["and", [0, 1]], ["not", [0]], ...],
     "expression": 2, "compact_expression": 2}

Nodes form one table in post-order; children are indexes of earlier nodes, so shared sub-expressions (CNF output
shares clauses) are stored once, there are no cycles, and no recursion is needed to read deep trees. Literals are
typed by their leaf's type so the round trip is lossless: LONG a JSON integer, FLOAT ``repr`` text ("nan", "-0.0",
"1e+300"), STRING a JSON string, DATE ``yyyy-mm-dd``, DECIMAL ``str(Decimal)`` (scale kept: "12.50"),
TIMESTAMP ``yyyy-mm-dd hh:mm:ss.ffffff`` (nine fraction digits for a ``NanoTimestamp``), BOOLEAN a JSON boolean, a null IN element JSON null.

Anything unreadable raises :class:`FilterError`: a reader must never take a corrupt filter for "no filter",
which would silently read everything - or, worse, for a different filter.
"""

from __future__ import annotations

import datetime as _dt
import decimal
import json
from typing import Any

from storage_handler.errors import FilterError
from storage_handler.sarg.leaf import LeafOperator, LeafType, PredicateLeaf
from storage_handler.sarg.literals import NanoTimestamp
from storage_handler.sarg.search_argument import SearchArgument
from storage_handler.sarg.tree import ExpressionTree, ExprOp, fold
from storage_handler.sarg.truth import TruthValue

FORMAT = "hsh-sarg"
VERSION = 1

_OP_NAMES = {ExprOp.AND: "and", ExprOp.OR: "or", ExprOp.NOT: "not"}
_OPS_BY_NAME = {name: op for op, name in _OP_NAMES.items()}


def dumps(sarg: SearchArgument) -> str:
    """Serialize ``sarg`` to compact JSON (ASCII only, so it survives any property store)."""
    if not isinstance(sarg, SearchArgument):
        raise FilterError(f"dumps() takes a SearchArgument, got {type(sarg).__qualname__}")
    nodes: list[list[Any]] = []
    # One table for both trees; a node reachable from both is written once.
    both = ExpressionTree(ExprOp.AND, (sarg.expression, sarg.compact_expression))

    def emit(node: ExpressionTree, kids: list[Any]) -> Any:
        if node is both:
            return kids
        if node.operator is ExprOp.LEAF:
            nodes.append(["leaf", node.leaf])
        elif node.operator is ExprOp.CONSTANT:
            assert node.constant is not None
            nodes.append(["const", node.constant.value])
        else:
            nodes.append([_OP_NAMES[node.operator], kids])
        return len(nodes) - 1

    roots = fold(both, emit)
    document = {
        "format": FORMAT,
        "version": VERSION,
        "leaves": [_leaf_to_json(leaf) for leaf in sarg.compact_leaves],
        "leaf_count": len(sarg.leaves),
        "nodes": nodes,
        "expression": roots[0],
        "compact_expression": roots[1],
    }
    return json.dumps(document, separators=(",", ":"), allow_nan=False)


def loads(text: str | bytes) -> SearchArgument:
    """Parse what :func:`dumps` wrote; raise FilterError for anything else."""
    try:
        document = json.loads(text, parse_constant=_refuse_constant)
    except (ValueError, TypeError, RecursionError) as exc:
        raise FilterError(
            f"Corrupt serialized SearchArgument (not JSON: {exc}); re-create the filter"
        ) from None
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise FilterError(f"Serialized filter is not an {FORMAT!r} document; re-create the filter")
    version = document.get("version")
    if version != VERSION:
        raise FilterError(
            f"Serialized SearchArgument has version {version!r}; this build reads version {VERSION} only. "
            "Use the same hive-storage-handler version to write and read the job properties"
        )
    try:
        return _read_document(document)
    except FilterError:
        raise
    except (KeyError, IndexError, TypeError, ValueError, AttributeError, decimal.InvalidOperation) as exc:
        raise FilterError(f"Corrupt serialized SearchArgument: {type(exc).__name__}: {exc}") from None


def _refuse_constant(name: str) -> None:
    raise ValueError(f"bare {name} is not valid here")


def _read_document(document: dict[str, Any]) -> SearchArgument:
    leaves = tuple(_leaf_from_json(item) for item in _expect(document["leaves"], list, "leaves"))
    leaf_count = _expect(document["leaf_count"], int, "leaf_count")
    if not 0 <= leaf_count <= len(leaves):
        raise FilterError(
            f"Corrupt serialized SearchArgument: leaf_count {leaf_count} of {len(leaves)} leaves"
        )
    nodes: list[ExpressionTree] = []
    for position, item in enumerate(_expect(document["nodes"], list, "nodes")):
        kind, arg = _expect(item, list, f"node {position}")
        if kind == "leaf":
            index = _expect(arg, int, f"node {position} leaf index")
            if not 0 <= index < len(leaves):
                raise FilterError(
                    f"Corrupt serialized SearchArgument: node {position} uses missing leaf {index}"
                )
            nodes.append(ExpressionTree.make_leaf(index))
        elif kind == "const":
            nodes.append(ExpressionTree.make_constant(TruthValue(arg)))
        elif kind in _OPS_BY_NAME:
            kids = [_node_ref(ref, position) for ref in _expect(arg, list, f"node {position} children")]
            nodes.append(ExpressionTree(_OPS_BY_NAME[kind], tuple(nodes[ref] for ref in kids)))
        else:
            raise FilterError(f"Corrupt serialized SearchArgument: unknown node kind {kind!r}")
    expression = nodes[_node_ref(document["expression"], len(nodes))]
    compact_expression = nodes[_node_ref(document["compact_expression"], len(nodes))]
    for index in expression.leaf_indexes():
        if index >= leaf_count:
            raise FilterError(f"Corrupt serialized SearchArgument: expression uses extra leaf {index}")
    return SearchArgument(leaves[:leaf_count], expression, compact_expression, leaves[leaf_count:])


def _node_ref(ref: Any, limit: int) -> int:
    """Children (and roots) must point at earlier nodes: that rules out cycles."""
    if type(ref) is not int or not 0 <= ref < limit:
        raise FilterError(f"Corrupt serialized SearchArgument: bad node reference {ref!r}")
    return ref


def _expect(value: Any, cls: type, what: str) -> Any:
    if type(value) is not cls:
        raise FilterError(
            f"Corrupt serialized SearchArgument: {what} should be {cls.__name__}, got {value!r}"
        )
    return value


def _leaf_to_json(leaf: PredicateLeaf) -> dict[str, Any]:
    encode = _ENCODERS[leaf.type]
    return {
        "operator": leaf.operator.value,
        "type": leaf.type.value,
        "column": leaf.column_name,
        "literal": None if leaf.literal is None else encode(leaf.literal),
        "literal_list": [None if x is None else encode(x) for x in leaf.literal_list],
    }


def _leaf_from_json(item: Any) -> PredicateLeaf:
    _expect(item, dict, "leaf")
    leaf_type = LeafType(item["type"])
    decode = _DECODERS[leaf_type]
    literal = item["literal"]
    return PredicateLeaf(
        LeafOperator(item["operator"]),
        leaf_type,
        _expect(item["column"], str, "leaf column"),
        None if literal is None else decode(literal),
        tuple(None if x is None else decode(x) for x in _expect(item["literal_list"], list, "literal_list")),
    )


def _decode_float(value: Any) -> float:
    return float(_expect(value, str, "FLOAT literal"))


def _decode_decimal(value: Any) -> decimal.Decimal:
    return decimal.Decimal(_expect(value, str, "DECIMAL literal"))


def _decode_date(value: Any) -> _dt.date:
    return _dt.date.fromisoformat(_expect(value, str, "DATE literal"))


def _decode_timestamp(value: Any) -> _dt.datetime | NanoTimestamp:
    text = _expect(value, str, "TIMESTAMP literal")
    head, dot, fraction = text.rpartition(".")
    if dot and len(fraction) == 9 and fraction.isdigit():
        stamp = _dt.datetime.fromisoformat(f"{head}.{fraction[:6]}")
        return NanoTimestamp(stamp, int(fraction[6:])) if fraction[6:] != "000" else stamp
    return _dt.datetime.fromisoformat(text)


def _encode_timestamp(value: _dt.datetime | NanoTimestamp) -> str:
    return value.isoformat(" ") if isinstance(value, NanoTimestamp) else value.isoformat(sep=" ", timespec="microseconds")


_ENCODERS: dict[LeafType, Any] = {
    LeafType.LONG: int,
    LeafType.FLOAT: repr,
    LeafType.STRING: str,
    LeafType.DATE: lambda d: d.isoformat(),
    LeafType.DECIMAL: str,
    LeafType.TIMESTAMP: _encode_timestamp,
    LeafType.BOOLEAN: bool,
}
_DECODERS: dict[LeafType, Any] = {
    LeafType.LONG: lambda v: _expect(v, int, "LONG literal"),
    LeafType.FLOAT: _decode_float,
    LeafType.STRING: lambda v: _expect(v, str, "STRING literal"),
    LeafType.DATE: _decode_date,
    LeafType.DECIMAL: _decode_decimal,
    LeafType.TIMESTAMP: _decode_timestamp,
    LeafType.BOOLEAN: lambda v: _expect(v, bool, "BOOLEAN literal"),
}
