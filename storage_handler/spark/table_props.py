"""A registered table's identity, as the Spark read paths hand it around.

* :class:`TableIdentity` is the table the handler plans a scan of: ``db.table``, location, Hive-typed columns and
  partition keys. The session extension sends it in the contract's ``table`` message
  (:mod:`storage_handler.contract`), built from the catalog entry Spark resolved.
* The explicit Python data source (``spark.read.format("hsh").load("db.t")``) learns its table from the schema its
  ``schema()`` returned: Spark hands ``reader(schema)`` that schema, field metadata included, and nothing else
  (a data source's options are not always passed on). So every field carries ``hsh.hive_type`` (the exact Hive type,
  e.g. ``varchar(5)``) and ``hsh.partition`` (bool); the first field also ``hsh.table`` and ``hsh.location``.

Nothing here is written into the metastore: a registered table stays a plain Hive Parquet table for every reader.
Earlier versions wrote ``spark.sql.sources.provider=hsh`` and the schema above as table parameters, which broke
every Spark session without this package; ``hsh sync`` removes them (:func:`storage_handler.registration.table_spec.legacy_parameters`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from storage_handler import contract
from storage_handler.errors import SchemaError
from storage_handler.storage import s3a_settings
from storage_handler.types import HiveType, parse_hive_type

PROVIDER = "hsh"  # the Python data source's short name: spark.read.format("hsh")

MD_TABLE = "hsh.table"
MD_LOCATION = "hsh.location"
MD_HIVE_TYPE = "hsh.hive_type"
MD_PARTITION = "hsh.partition"
MD_METASTORE = "hsh.metastore"
MD_STORAGE = "hsh.storage"

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
    table: str, location: str, columns: Sequence[tuple[str, HiveType]], partition_keys: Sequence[tuple[str, HiveType]],
    metastore_uri: str | None = None, storage: Mapping[str, str] | None = None,
) -> str:
    fields = []
    for i, (name, t) in enumerate([*columns, *partition_keys]):
        metadata: dict[str, Any] = {MD_HIVE_TYPE: str(t), MD_PARTITION: i >= len(columns)}
        if i == 0:
            metadata.update({MD_TABLE: table, MD_LOCATION: location, MD_METASTORE: metastore_uri,
                             MD_STORAGE: json.dumps(s3a_settings(storage), sort_keys=True)})
        fields.append({"name": name, "type": spark_type_json(t), "nullable": True, "metadata": metadata})
    return json.dumps({"type": "struct", "fields": fields}, separators=(",", ":"))


@dataclass(frozen=True, slots=True)
class TableIdentity:
    """What the data source learns about its table from the schema's field metadata."""

    table: str
    location: str
    columns: tuple[tuple[str, HiveType], ...]
    partition_keys: tuple[tuple[str, HiveType], ...]
    metastore_uri: str | None = None  # where a partitioned table's partitions are listed at read time
    storage: tuple[tuple[str, str], ...] = ()  # the table's fs.s3a.* settings (no secrets)

    @property
    def schema(self) -> list[tuple[str, HiveType]]:
        return [*self.columns, *self.partition_keys]

    def to_contract(self) -> dict[str, Any]:
        """The contract's ``table`` message (what the session extension sends, and reads in ``read_table``)."""
        message = {
            "name": self.table, "location": self.location,
            "columns": [[n, str(t)] for n, t in self.columns],
            "partition_keys": [[n, str(t)] for n, t in self.partition_keys],
            "metastore": self.metastore_uri,
            "storage": dict(self.storage),
        }
        contract.require(message, contract.TABLE, "table message")
        return message

    @classmethod
    def from_contract(cls, message: Mapping[str, Any]) -> TableIdentity:
        """The table of a contract ``table`` message; column names lower-cased as Hive stores them."""
        contract.require(message, contract.TABLE, "table message")

        def pairs(key: str) -> tuple[tuple[str, HiveType], ...]:
            return tuple((str(n).lower(), parse_hive_type(str(t))) for n, t in message[key])

        metastore = message["metastore"]
        return cls(str(message["name"]), str(message["location"]), pairs("columns"), pairs("partition_keys"),
                   str(metastore) if metastore else None, storage_pairs(message["storage"]))


def identity_from_metadata(fields: Sequence[tuple[str, Mapping[str, Any]]]) -> TableIdentity:
    """Rebuild the table identity from (field name, field metadata) pairs, as ``reader(schema)`` receives them."""
    if not fields or MD_TABLE not in fields[0][1]:
        raise SchemaError(
            "the hsh data source was given a schema without the handler's table metadata: load a registered table "
            "by name, spark.read.format('hsh').load('db.table'), without .schema(...)"
        )
    first = fields[0][1]
    columns: list[tuple[str, HiveType]] = []
    keys: list[tuple[str, HiveType]] = []
    for name, md in fields:
        t = parse_hive_type(md[MD_HIVE_TYPE])
        (keys if md.get(MD_PARTITION) else columns).append((name.lower(), t))
    storage = json.loads(first.get(MD_STORAGE) or "{}")
    return TableIdentity(first[MD_TABLE], first[MD_LOCATION], tuple(columns), tuple(keys), first.get(MD_METASTORE),
                         storage_pairs(storage))


def storage_pairs(settings: Mapping[str, Any] | None) -> tuple[tuple[str, str], ...]:
    """A table's ``fs.s3a.*`` settings as a sorted, hashable tuple (credential keys left out)."""
    return tuple(sorted(s3a_settings({str(k): str(v) for k, v in (settings or {}).items()}).items()))
