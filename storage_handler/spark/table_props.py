"""The Spark data-source properties written on a registered HMS table, and how the data source reads them back.

Spark reads a Hive table whose parameters say ``spark.sql.sources.provider=hsh`` through our Python data source,
while the storage descriptor stays Hive's Parquet one (so Hive and Trino still read the table natively).

The trap: Spark hands a catalog table's data source *empty options* (not the table's OPTIONS, not its LOCATION).
What does reach ``DataSource.reader(schema)`` is the field metadata inside ``spark.sql.sources.schema``. So the
table's identity travels there: every field carries ``hsh.hive_type`` (the exact Hive type, e.g. ``varchar(5)``)
and ``hsh.partition`` (bool); the first field also carries ``hsh.table`` and ``hsh.location``. The reader needs
nothing else: files, partitions and the index pointer are read from storage, which is the truth.

Partition columns are declared to Spark as ordinary trailing columns (the data source fills them in); Spark's own
partition management never sees them, so it never tries to list partitions of a table it does not read itself.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from storage_handler.errors import SchemaError
from storage_handler.types import HiveType, parse_hive_type

PROVIDER = "hsh"
PROP_PROVIDER = "spark.sql.sources.provider"
PROP_SCHEMA = "spark.sql.sources.schema"
PROP_NUM_PARTS = "spark.sql.sources.schema.numParts"
PROP_PART = "spark.sql.sources.schema.part.{}"
MAX_PARAM_LENGTH = 4000  # HMS parameter values are capped at 4000 characters on several metastore databases

MD_TABLE = "hsh.table"
MD_LOCATION = "hsh.location"
MD_HIVE_TYPE = "hsh.hive_type"
MD_PARTITION = "hsh.partition"

_SIMPLE = {
    "tinyint": "byte", "smallint": "short", "int": "integer", "bigint": "long", "float": "float",
    "double": "double", "boolean": "boolean", "string": "string", "varchar": "string", "char": "string",
    "binary": "binary", "date": "date", "timestamp": "timestamp",
}


def spark_type_json(t: HiveType) -> Any:
    """Spark's JSON form of the type a Hive column is read as (Spark's own Hive mapping)."""
    if t.name in _SIMPLE:
        return _SIMPLE[t.name]
    if t.name == "decimal":
        return f"decimal({t.precision},{t.scale})"
    if t.name == "array":
        return {"type": "array", "elementType": spark_type_json(t.children[0][1]), "containsNull": True}
    if t.name == "map":
        return {"type": "map", "keyType": spark_type_json(t.children[0][1]),
                "valueType": spark_type_json(t.children[1][1]), "valueContainsNull": True}
    if t.name == "struct":
        return {"type": "struct", "fields": [
            {"name": n, "type": spark_type_json(c), "nullable": True, "metadata": {}} for n, c in t.children
        ]}
    raise SchemaError(f"no Spark type for Hive type {t}")


def spark_schema_json(
    table: str, location: str, columns: Sequence[tuple[str, HiveType]], partition_keys: Sequence[tuple[str, HiveType]]
) -> str:
    fields = []
    for i, (name, t) in enumerate([*columns, *partition_keys]):
        metadata: dict[str, Any] = {MD_HIVE_TYPE: str(t), MD_PARTITION: i >= len(columns)}
        if i == 0:
            metadata.update({MD_TABLE: table, MD_LOCATION: location})
        fields.append({"name": name, "type": spark_type_json(t), "nullable": True, "metadata": metadata})
    return json.dumps({"type": "struct", "fields": fields}, separators=(",", ":"))


def spark_table_properties(
    table: str, location: str, columns: Sequence[tuple[str, HiveType]], partition_keys: Sequence[tuple[str, HiveType]]
) -> dict[str, str]:
    """Table parameters making Spark read the table through the ``hsh`` data source (schema split in parts)."""
    schema = spark_schema_json(table, location, columns, partition_keys)
    props = {PROP_PROVIDER: PROVIDER}
    parts = [schema[i : i + MAX_PARAM_LENGTH] for i in range(0, len(schema), MAX_PARAM_LENGTH)]
    props[PROP_NUM_PARTS] = str(len(parts))
    for i, part in enumerate(parts):
        props[PROP_PART.format(i)] = part
    return props


def is_spark_property(key: str) -> bool:
    return key == PROP_PROVIDER or key.startswith(PROP_SCHEMA)


@dataclass(frozen=True, slots=True)
class TableIdentity:
    """What the data source learns about its table from the schema's field metadata."""

    table: str
    location: str
    columns: tuple[tuple[str, HiveType], ...]
    partition_keys: tuple[tuple[str, HiveType], ...]

    @property
    def schema(self) -> list[tuple[str, HiveType]]:
        return [*self.columns, *self.partition_keys]


def identity_from_metadata(fields: Sequence[tuple[str, Mapping[str, Any]]]) -> TableIdentity:
    """Rebuild the table identity from (field name, field metadata) pairs, as ``reader(schema)`` receives them."""
    if not fields or MD_TABLE not in fields[0][1]:
        raise SchemaError(
            "the hsh data source was used without table metadata: read tables registered with `hsh register` "
            "through the catalog (spark.sql / spark.table), or use storage_handler.spark.read_table(...)"
        )
    first = fields[0][1]
    columns: list[tuple[str, HiveType]] = []
    keys: list[tuple[str, HiveType]] = []
    for name, md in fields:
        t = parse_hive_type(md[MD_HIVE_TYPE])
        (keys if md.get(MD_PARTITION) else columns).append((name.lower(), t))
    return TableIdentity(first[MD_TABLE], first[MD_LOCATION], tuple(columns), tuple(keys))
