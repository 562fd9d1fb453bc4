"""The table schema a filter is bound against: lower-case column name -> Hive type (Hive lower-cases names)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from storage_handler.errors import FilterError, SchemaError
from storage_handler.expr.nodes import Column
from storage_handler.types import HiveType, parse_hive_type, parse_schema_text

Schema = str | Mapping[str, HiveType | str] | Iterable[tuple[str, HiveType | str]]
"""``"a int, b string"``, ``{"a": "int"}``, ``[("a", HiveType("int"))]`` (what ``parse_schema_text`` returns)."""


def normalize_schema(schema: Schema) -> dict[str, HiveType]:
    """``{lower name: HiveType}`` in column order; names equal ignoring case are refused as ambiguous."""
    try:
        if isinstance(schema, str):
            pairs: Iterable[tuple[str, HiveType | str]] = parse_schema_text(schema)
        elif isinstance(schema, Mapping):
            pairs = schema.items()
        else:
            pairs = schema
        columns: dict[str, HiveType] = {}
        for name, hive_type in pairs:
            key = name.lower()
            if key in columns:
                raise FilterError(f"the schema has column {name!r} twice (names are case-insensitive in Hive)")
            columns[key] = parse_hive_type(hive_type) if isinstance(hive_type, str) else hive_type
    except SchemaError as e:
        raise FilterError(f"cannot bind the filter: bad table schema ({e})") from e
    return columns


def bind_column(name: str, columns: Mapping[str, HiveType], context: str = "") -> Column:
    """The bound column for ``name`` (case-insensitive); unknown names raise FilterError listing the known ones."""
    hive_type = columns.get(name.lower())
    if hive_type is None:
        known = ", ".join(columns) or "(none)"
        where = f" in filter {context!r}" if context else ""
        raise FilterError(f"unknown column {name!r}{where}; the table's columns are: {known}")
    return Column(name.lower(), hive_type)
