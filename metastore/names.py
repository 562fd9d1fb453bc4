"""Hive's names for databases and tables: ``db.table``, lower-cased as the metastore stores them."""

from __future__ import annotations

import re
from dataclasses import dataclass

from storage_handler.errors import InvalidNameError

_NAME = re.compile(r"^[A-Za-z0-9_]+$")


@dataclass(frozen=True, slots=True)
class TableName:
    database: str
    table: str

    def __str__(self) -> str:
        return f"{self.database}.{self.table}"


def parse_table_name(text: str) -> TableName:
    """``db.table`` (or ``table`` in ``default``), lower-cased as Hive stores it; illegal characters refused."""
    parts = text.strip().split(".")
    if len(parts) == 1:
        parts = ["default", parts[0]]
    if len(parts) != 2 or not all(_NAME.match(p) for p in parts):
        raise InvalidNameError(
            f"invalid table name {text!r}: use DB.TABLE where each part has only letters, digits and underscores"
        )
    return TableName(parts[0].lower(), parts[1].lower())
