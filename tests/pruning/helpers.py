"""Shared builders for the pruning tests: index tables in the contract's schema, and SearchArguments."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

import pyarrow as pa
from hypothesis import strategies as st

from storage_handler.sarg import LeafType, SearchArgument, SearchArgumentFactory
from storage_handler.types import HiveType, hive_to_arrow, parse_schema_text

MAP = pa.map_(pa.string(), pa.string())


def leaf_type_of(value: object) -> LeafType:
    """The LeafType whose literal class ``value`` has (what a decoder would pick)."""
    if isinstance(value, bool):
        return LeafType.BOOLEAN
    if isinstance(value, int):
        return LeafType.LONG
    if isinstance(value, float):
        return LeafType.FLOAT
    if isinstance(value, Decimal):
        return LeafType.DECIMAL
    if isinstance(value, dt.datetime):
        return LeafType.TIMESTAMP
    if isinstance(value, dt.date):
        return LeafType.DATE
    return LeafType.STRING


def index_table(columns: Sequence[tuple[str, HiveType]] | str, files: Sequence[dict[str, Any]]) -> pa.Table:
    """An index table for ``columns`` (stats-capable data columns). Each file is a dict with optional keys
    ``num_records``, ``partition_values`` (list of pairs or None), ``min``/``max``/``nulls`` (dict per column, or
    None for a null struct), ``error`` and ``path``."""
    cols = parse_schema_text(columns) if isinstance(columns, str) else list(columns)
    bound_type = pa.struct([pa.field(n, hive_to_arrow(t)) for n, t in cols])
    count_type = pa.struct([pa.field(n, pa.int64()) for n, _ in cols])

    def struct_rows(key: str) -> list[dict[str, Any] | None]:
        rows: list[dict[str, Any] | None] = []
        for f in files:
            given = f.get(key, {})
            rows.append(None if given is None else {n: given.get(n) for n, _ in cols})
        return rows

    return pa.table({
        "path": pa.array([f.get("path", f"part-{i}.parquet") for i, f in enumerate(files)], pa.string()),
        "size": pa.array([100] * len(files), pa.int64()),
        "modification_time": pa.array([0] * len(files), pa.int64()),
        "num_records": pa.array([f.get("num_records", 10) for f in files], pa.int64()),
        "partition_values": pa.array([f.get("partition_values", []) for f in files], MAP),
        "min_values": pa.array(struct_rows("min"), bound_type),
        "max_values": pa.array(struct_rows("max"), bound_type),
        "null_count": pa.array(struct_rows("nulls"), count_type),
        "stats_error": pa.array([f.get("error") for f in files], pa.string()),
    })


def builder() -> Any:
    return SearchArgumentFactory.new_builder()


def single(op: str, column: str, *literals: object) -> SearchArgument:
    """A one-leaf SearchArgument: ``single("less_than", "x", 5)``; the LeafType follows the literal's class."""
    b = builder()
    kind = leaf_type_of(literals[0]) if literals and literals[0] is not None else LeafType.LONG
    add_leaf(b, op, column, kind, literals)
    return b.build()


def add_leaf(b: Any, op: str, column: str, kind: LeafType, literals: Sequence[object]) -> None:
    """Call the builder method named ``op`` with the literals in the shape that method takes."""
    if op == "is_null":
        b.is_null(column, kind)
    elif op == "in_":
        b.in_(column, kind, *literals)
    elif op == "between":
        b.between(column, kind, *literals)
    else:
        getattr(b, op)(column, kind, literals[0])


def negated(op: str, column: str, *literals: object) -> SearchArgument:
    """``NOT (leaf)``."""
    b = builder().start_not()
    kind = leaf_type_of(literals[0]) if literals else LeafType.LONG
    if op == "is_null":
        b.is_null(column, kind)
    elif op == "in_":
        b.in_(column, kind, *literals)
    elif op == "between":
        b.between(column, kind, *literals)
    else:
        getattr(b, op)(column, kind, literals[0])
    return b.end().build()


def trees(leaves: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Predicate trees for the property tests: leaves, ``("and"|"or", [children])`` and ``("not", [child])``."""
    return st.recursive(
        leaves,
        lambda kids: st.one_of(
            st.tuples(st.sampled_from(["and", "or"]), st.lists(kids, min_size=1, max_size=3)),
            st.tuples(st.just("not"), st.lists(kids, min_size=1, max_size=1)),
        ),
        max_leaves=6,
    )
