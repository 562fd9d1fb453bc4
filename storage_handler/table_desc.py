"""``TableDesc``: what the handler knows about a table, built from the metastore or from Spark's metadata."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from storage_handler.types import HiveType, parse_hive_type


@dataclass(frozen=True, slots=True)
class TableDesc:
    """Hive's TableDesc reduced to what pruning needs: name, location, data columns, partition keys, parameters."""

    name: str
    location: str
    columns: tuple[tuple[str, HiveType], ...]
    partition_keys: tuple[tuple[str, HiveType], ...] = ()
    parameters: Mapping[str, str] = field(default_factory=dict)
    #: the metastore the table was read from: a partitioned table's partitions are listed there at read time
    metastore_uri: str | None = None

    @property
    def schema(self) -> list[tuple[str, HiveType]]:
        return [*self.columns, *self.partition_keys]

    @classmethod
    def from_hms(cls, table: Any, metastore_uri: str | None = None) -> TableDesc:
        """From a Thrift ``Table`` (``hmsclient`` types) read from the metastore at ``metastore_uri``."""
        return cls(
            name=f"{table.dbName}.{table.tableName}",
            location=table.sd.location,
            columns=tuple((c.name.lower(), parse_hive_type(c.type)) for c in table.sd.cols),
            partition_keys=tuple((c.name.lower(), parse_hive_type(c.type)) for c in (table.partitionKeys or [])),
            parameters=dict(table.parameters or {}),
            metastore_uri=metastore_uri,
        )
