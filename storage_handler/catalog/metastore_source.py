"""The metastore as a table's :class:`~storage_handler.catalog.PartitionSource`: names first, then survivors.

Two calls for a query that keeps few partitions: ``get_partition_names`` (strings only) and
``get_partitions_by_names`` for the survivors, fetched in batches so a query keeping thousands of partitions does
not send one huge request; one call (``get_partitions``) for a query that cannot prune by partition. Both are idempotent and retried by :class:`~metastore.client.MetastoreClient`; when the
metastore cannot be reached, planning fails naming the table and the URI -- it never falls back to walking storage,
which would read folders nobody registered.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from metastore.client import MetastoreClient
from metastore.names import TableName
from storage_handler.catalog.partitions import Partition, parse_partition_name
from storage_handler.contract import PARAM_HANDLER
from storage_handler.errors import ConfigurationError, MetastoreError
from storage_handler.hive_paths import HIVE_DEFAULT_PARTITION, partition_path
from storage_handler.work import METASTORE_CALLS, count

BATCH = 500
TABLES_BATCH = 100  # tables per get_table_objects_by_name call


def registered_tables(client: MetastoreClient, databases: Sequence[str] | None = None
                      ) -> Iterator[tuple[TableName, Any]]:
    """Every table of ``databases`` (default: all) carrying the handler's parameter, with its metastore object:
    one call per database and one per :data:`TABLES_BATCH` tables (the follower's discovery, ``hsh drop``'s
    look for another table on the same folder)."""
    for db in databases or client.get_all_databases():
        names = client.get_tables(db)
        for start in range(0, len(names), TABLES_BATCH):
            objects = client.raw(f"tables of database {db!r}",
                                 _objects_by_name(db, list(names[start:start + TABLES_BATCH])), idempotent=True)
            for table in objects:
                if PARAM_HANDLER in (table.parameters or {}):
                    yield TableName(db, table.tableName.lower()), table


def _objects_by_name(db: str, names: list[str]) -> Callable[[Any], list[Any]]:
    def call(thrift: Any) -> list[Any]:
        return list(thrift.get_table_objects_by_name(db, names))

    return call


@dataclass
class MetastorePartitions:
    """The partitions of ``db.table`` (partition ``keys`` in order) in the metastore at ``uri``; one connection,
    opened on first use (close it, or use the object as a context manager)."""

    uri: str
    database: str
    table: str
    keys: tuple[str, ...]
    client: MetastoreClient | None = field(default=None, repr=False)
    owns_client: bool = field(default=True, repr=False)

    @classmethod
    def using(cls, client: MetastoreClient, database: str, table: str, keys: Sequence[str]) -> MetastorePartitions:
        """A source over an open ``client`` that stays the caller's (``close`` leaves it open)."""
        return cls(client.uris, database, table, tuple(keys), client, owns_client=False)

    def _client(self) -> MetastoreClient:
        count(METASTORE_CALLS)
        if self.client is None:
            self.client = _POOL.borrow(self.uri)
        return self.client

    def close(self) -> None:
        if self.client is not None and self.owns_client:
            _POOL.give_back(self.client)
            self.client = None

    def __enter__(self) -> MetastorePartitions:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def _name(self) -> str:
        return f"{self.database}.{self.table}"

    def names(self) -> list[str]:
        try:
            return self._client().get_partition_names(self.database, self.table)
        except MetastoreError as e:
            raise type(e)(f"cannot list the partitions of {self._name}: {e}") from e

    def all(self) -> list[Partition]:
        """Every partition in one ``get_partitions`` call (what Spark's own planning asks when it cannot prune):
        one round trip instead of the names and then the same partitions in batches (at 4,000 partitions
        260 ms against 670 ms here)."""
        try:
            found = self._client().get_partitions(self.database, self.table)
        except MetastoreError as e:
            raise type(e)(f"cannot read the partitions of {self._name}: {e}") from e
        out = []
        for p in found:
            values = tuple(None if v == HIVE_DEFAULT_PARTITION else v for v in p.values)
            if len(values) != len(self.keys):
                raise MetastoreError(f"table {self._name}: partition {list(p.values)} does not give a value for "
                                     f"each of the partition keys {list(self.keys)}")
            out.append(Partition(partition_path(list(zip(self.keys, values, strict=True))), values, p.sd.location))
        return out

    def by_names(self, names: Sequence[str]) -> list[Partition]:
        by_values = {parse_partition_name(n, self.keys, self._name): n for n in names}
        out: list[Partition] = []
        try:
            for start in range(0, len(names), BATCH):
                chunk = list(names[start:start + BATCH])
                for p in self._client().get_partitions_by_names(self.database, self.table, chunk):
                    values = tuple(None if v == HIVE_DEFAULT_PARTITION else v for v in p.values)
                    # a value '' is named like the default partition (and read as '', so kept as it is)
                    name = by_values.get(tuple(v or None for v in values))
                    if name is not None:
                        out.append(Partition(name, values, p.sd.location))
        except MetastoreError as e:
            raise type(e)(f"cannot read the partitions of {self._name}: {e}") from e
        return out


class _ClientPool:
    """Open metastore connections kept between scans, per metastore URI: a long-lived planner (the prune service,
    a Thrift server) then pays a connection (and, on a secured metastore, its SASL handshake) once, not per
    query. A connection serves one scan at a time; a broken one reconnects on its next call
    (:class:`~metastore.client.MetastoreClient`)."""

    def __init__(self, keep: int = 4) -> None:
        self.keep = keep
        self._idle: dict[tuple[str, object], list[MetastoreClient]] = {}
        self._lock = threading.Lock()

    def borrow(self, uri: str) -> MetastoreClient:
        # not connected yet: its normalized URI and the security settings it resolved are the key (a connection
        # is reused only with the same credentials)
        client = MetastoreClient(uri)
        with self._lock:
            idle = self._idle.get((client.uris, client.security))
            if idle:
                return idle.pop()
        client.open()
        return client

    def give_back(self, client: MetastoreClient) -> None:
        with self._lock:
            idle = self._idle.setdefault((client.uris, client.security), [])
            if len(idle) < self.keep:
                idle.append(client)
                return
        client.close()


_POOL = _ClientPool()

METASTORE_URIS = "hive.metastore.uris"  # as in every Hive job configuration: the metastore the planner used


def partition_source(job_conf: Mapping[str, str], table: str, keys: Sequence[str]) -> MetastorePartitions:
    """The partitions of a partitioned ``table`` (``db.table``), from the metastore its job configuration names.

    A partitioned table is what its metastore partitions are: without a metastore there is no correct answer, so
    this refuses (naming the table and the setting) rather than walking the table folder.
    """
    uri = (job_conf.get(METASTORE_URIS) or "").split(",")[0].strip()
    if not uri:
        raise ConfigurationError(
            f"table {table} is partitioned and its partitions are the metastore's, but the job configuration names "
            f"no metastore ({METASTORE_URIS}); configure the read with the metastore's thrift:// URI"
        )
    database, _, name = table.partition(".")
    return MetastorePartitions(uri, database, name, tuple(keys))
