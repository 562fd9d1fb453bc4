"""Registered partitions: what a partitioned table is made of.

Hive reads a partitioned table as the union of its metastore partitions, each at the location the metastore
records for it -- the table folder's ``k=v`` subfolders usually, but any folder after ``ALTER TABLE ... ADD
PARTITION ... LOCATION`` (backfills, other buckets), and never a folder nobody registered. The values of a
partition are the metastore's, not parsed from its folder name.

A :class:`PartitionSource` gives the names first (one cheap call: ``get_partition_names``), so a query can prune by
the values in the names, and then fetches only the survivors (``get_partitions_by_names``) for their locations.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from storage_handler.errors import MetastoreError
from storage_handler.hive_paths import unescape_partition_value, unescape_path_name


@dataclass(frozen=True, slots=True)
class Partition:
    """One registered partition: its name (``k1=v1/k2=v2``, Hive-escaped), values in key order (None: Hive's
    default partition) and its location as the metastore records it."""

    name: str
    values: tuple[str | None, ...]
    location: str


class PartitionSource(Protocol):
    """Where a table's partitions come from."""

    def names(self) -> list[str]:
        """Every registered partition's name (Hive's ``k1=v1/k2=v2``), in any order."""
        ...

    def by_names(self, names: Sequence[str]) -> list[Partition]:
        """The partitions called ``names`` (those that still exist), with their locations."""
        ...


def all_partitions(source: PartitionSource) -> list[Partition]:
    """Every partition with its location: one call where the source offers ``all()`` (the metastore's
    ``get_partitions``), else its names and then those partitions."""
    everything = getattr(source, "all", None)
    if callable(everything):
        found: list[Partition] = everything()
        return found
    return source.by_names(source.names())


@dataclass(frozen=True, slots=True)
class StaticPartitions:
    """A fixed list of partitions (tests, and callers that already hold them)."""

    partitions: tuple[Partition, ...]

    def names(self) -> list[str]:
        return [p.name for p in self.partitions]

    def by_names(self, names: Sequence[str]) -> list[Partition]:
        wanted = set(names)
        return [p for p in self.partitions if p.name in wanted]

    def all(self) -> list[Partition]:
        return list(self.partitions)


def parse_partition_name(name: str, keys: Sequence[str], table: str = "?") -> tuple[str | None, ...]:
    """The values of a Hive partition name for ``keys``, unescaped as Hive escapes them; the default partition
    (and an empty value) is None. A name that does not list exactly ``keys`` is refused naming the table."""
    parts = name.split("/")
    values: list[str | None] = []
    if len(parts) != len(keys):
        raise MetastoreError(f"table {table}: partition {name!r} does not name the partition keys {list(keys)}")
    for part, key in zip(parts, keys, strict=True):
        raw_key, sep, raw_value = part.partition("=")
        if not sep or unescape_path_name(raw_key).lower() != key.lower():
            raise MetastoreError(f"table {table}: partition {name!r} does not name the partition keys {list(keys)}")
        values.append(unescape_partition_value(raw_value))
    return tuple(values)
