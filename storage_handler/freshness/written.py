"""A handler session's write, indexed at commit: the Spark extension names the partitions it wrote, this indexes
exactly those (:mod:`storage_handler.freshness.scoped`).

Which partitions a write touched: static ones come from the statement; dynamic ones from the values Spark
observed while writing (the extension collects them, see ``IndexOnWrite.java``), or -- when observation is off --
every registered partition under the statement's static prefix (the whole table for a fully dynamic insert:
correct, slower). Partition locations are the metastore's: a partition registered at its own folder is listed
there, like a query would. Without a metastore (Spark's own embedded catalog) a partition's folder is the
table's ``k=v/`` subfolder, where Spark writes it.

Nothing here can fail the user's write: the extension calls this after Spark committed, and logs an error answer
as a warning (the files stay unindexed, so they are read, until the follower or a refresh catches up).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from storage_handler.catalog.listing import normalize_partition_name
from storage_handler.catalog.metastore_source import MetastorePartitions
from storage_handler.catalog.partitions import Partition
from storage_handler.freshness.scoped import IndexedTable, ScopedUpdate, update_partitions
from storage_handler.hive_paths import partition_path
from storage_handler.storage import parse_location

Spec = Mapping[str, str | None]


def written_partitions(table: IndexedTable, metastore_uri: str | None, specs: Sequence[Spec] | None,
                       prefix: Spec | None) -> list[Partition] | None:
    """The registered partitions a write touched (None: the table is unpartitioned).

    ``specs``: the exact partitions (static values merged with each observed dynamic combination); ``prefix``:
    only the leading static values are known, so every registered partition starting with them.
    """
    keys = table.partition_keys
    if not keys:
        return None
    if specs is not None:
        names = sorted({partition_path([(k, _value(spec, k, table.name)) for k in keys]) for spec in specs})
        if metastore_uri is None:
            return [_default(table, name, spec) for name, spec in zip(names, _specs_by_name(specs, keys), strict=True)]
        database, _, name = table.name.partition(".")
        with MetastorePartitions(metastore_uri, database, name, keys) as source:
            return source.by_names(names)
    start = normalize_partition_name(partition_path(list((prefix or {}).items()))) if prefix else ""
    if metastore_uri is None:
        raise ValueError(f"table {table.name}: the written partitions were not observed and there is no metastore "
                         "to list them from; run 'hsh index refresh' for the table")
    database, _, name = table.name.partition(".")
    with MetastorePartitions(metastore_uri, database, name, keys) as source:
        names = [n for n in source.names() if not start or n == start or n.startswith(start + "/")]
        return source.by_names(names) if names else []


def index_written(table: IndexedTable, metastore_uri: str | None, specs: Sequence[Spec] | None,
                  prefix: Spec | None = None) -> ScopedUpdate:
    """Index the files of the partitions a committed write touched, and only those."""
    return update_partitions(table, written_partitions(table, metastore_uri, specs, prefix))


def _value(spec: Spec, key: str, table: str) -> str | None:
    for k, v in spec.items():
        if k.lower() == key:
            return v
    raise ValueError(f"table {table}: a written partition {dict(spec)} gives no value for partition key {key!r}")


def _specs_by_name(specs: Sequence[Spec], keys: Sequence[str]) -> list[Spec]:
    by_name = {partition_path([(k, {a.lower(): b for a, b in s.items()}[k]) for k in keys]): s for s in specs}
    return [by_name[n] for n in sorted(by_name)]


def _default(table: IndexedTable, name: str, spec: Spec) -> Partition:
    lowered = {k.lower(): v for k, v in spec.items()}
    location = parse_location(table.location).join(name).uri
    return Partition(name, tuple(lowered[k] for k in table.partition_keys), location)
