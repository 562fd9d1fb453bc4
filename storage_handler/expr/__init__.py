"""Typed expression model of a pushed predicate (like Hive's ``ExprNodeDesc``), its HiveQL text and serialization.

``Column``, ``Constant`` and ``Call`` are frozen, slotted dataclasses; ``to_hiveql`` renders HiveQL that
``storage_handler.decode.hiveql.parse_filter`` reads back; ``storage_handler.expr.serde`` holds the versioned JSON
form stored in the ``hsh.filter.expr`` job property (Hive's own Kryo form is read by ``storage_handler.decode.kryo``).
"""

from __future__ import annotations

from storage_handler.expr.nodes import (
    Call,
    Column,
    Constant,
    ConstantValue,
    Expr,
    and_,
    between,
    call,
    col,
    columns_of,
    conjuncts,
    in_,
    lit,
    not_,
    or_,
    type_of_value,
)
from storage_handler.expr.render import to_hiveql

__all__ = [
    "Call", "Column", "Constant", "ConstantValue", "Expr", "and_", "between", "call", "col", "columns_of",
    "conjuncts", "in_", "lit", "not_", "or_", "to_hiveql", "type_of_value",
]
