"""How a registered table looks in the metastore: Hive's Parquet storage descriptor plus our namespaced parameters.

The storage descriptor is exactly what Hive writes for ``STORED AS PARQUET``, so Hive, Trino and plain Spark read
the table natively. The handler's identity is kept under ``hsh.*`` table parameters, never under Hive's reserved
``storage_handler`` key: Spark fails on any table whose storage handler class it cannot load.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

from hmsclient.genthrift.hive_metastore import ttypes as hms

from metastore.names import TableName
from storage_handler.contract import (
    LEGACY_PROVIDER,
    LEGACY_PROVIDER_VALUE,
    LEGACY_SCHEMA_PREFIX,
    PARAM_HANDLER,
)
from storage_handler.handler import INPUT_FORMAT, OUTPUT_FORMAT, SERDE
from storage_handler.hive_paths import HIVE_DEFAULT_PARTITION as DEFAULT_PARTITION
from storage_handler.hive_paths import partition_path
from storage_handler.storage.location import metastore_location
from storage_handler.types import HiveType

PARAM_PREFIX = "hsh."
HANDLER_CLASS = "storage_handler.handler.StorageHandler"

def storage_descriptor(location: str, columns: Sequence[tuple[str, HiveType]]) -> hms.StorageDescriptor:
    return hms.StorageDescriptor(
        cols=[hms.FieldSchema(name=n, type=str(t), comment=None) for n, t in columns],
        location=metastore_location(location),
        inputFormat=INPUT_FORMAT,
        outputFormat=OUTPUT_FORMAT,
        compressed=False,
        numBuckets=-1,
        serdeInfo=hms.SerDeInfo(name=None, serializationLib=SERDE, parameters={"serialization.format": "1"}),
        bucketCols=[],
        sortCols=[],
        parameters={},
        skewedInfo=hms.SkewedInfo(skewedColNames=[], skewedColValues=[], skewedColValueLocationMaps={}),
        storedAsSubDirectories=False,
    )


def build_table(
    name: TableName,
    location: str,
    columns: Sequence[tuple[str, HiveType]],
    partition_keys: Sequence[tuple[str, HiveType]],
    *,
    owner: str,
    parameters: Mapping[str, str] | None = None,
) -> hms.Table:
    params = {"EXTERNAL": "TRUE", PARAM_HANDLER: HANDLER_CLASS}
    params.update(parameters or {})
    return hms.Table(
        tableName=name.table,
        dbName=name.database,
        owner=owner,
        createTime=int(time.time()),
        lastAccessTime=0,
        retention=0,
        sd=storage_descriptor(location, columns),
        partitionKeys=[hms.FieldSchema(name=n, type=str(t), comment=None) for n, t in partition_keys],
        parameters=params,
        tableType="EXTERNAL_TABLE",
    )


def build_partition(table: hms.Table, values: Sequence[str | None], location: str,
                    files: tuple[int, int] | None = None, statistics: Mapping[str, str] | None = None) -> hms.Partition:
    """A partition sharing the table's storage descriptor; None values are stored as Hive's default partition.

    ``files`` -- (count, total bytes) of the partition's data files as just listed -- become the partition's
    ``numFiles`` and ``totalSize``: exactly the values the metastore computes itself when they are missing
    (``MetaStoreUtils.updatePartitionStatsFast``: visible files, their lengths), so it does not list every new
    partition's folder again. On an object store that listing is a request per partition; on the embedded
    metastore it was a quarter of the time of adding 2,000 partitions.

    ``statistics`` -- the partition's statistics parameters from the index (``numFiles``, ``numRows``,
    ``totalSize``, ``COLUMN_STATS_ACCURATE`` and the ``hsh.stats`` marker, see
    :meth:`storage_handler.registration.statistics.StatisticsPlan.new_partition_parameters`) -- replace them: a
    new partition then carries its basic statistics from the start, with no second write.
    """
    sd = storage_descriptor(location, [])
    sd.cols = list(table.sd.cols)
    now = int(time.time())
    parameters = {} if files is None else {"numFiles": str(files[0]), "totalSize": str(files[1])}
    parameters.update(statistics or {})
    return hms.Partition(
        values=[DEFAULT_PARTITION if v is None else v for v in values],
        dbName=table.dbName,
        tableName=table.tableName,
        createTime=now,
        lastAccessTime=0,
        sd=sd,
        parameters=parameters,
    )


def partition_name_of(keys: Sequence[str], values: Sequence[str]) -> str:
    """Hive's name of a registered partition from its values (``k1=v1/k2=v2``, escaped; the default partition is
    NULL), as ``get_partition_names`` lists it and the statistics calls take it."""
    plain = [None if v == DEFAULT_PARTITION else v for v in values]
    return partition_path(list(zip(keys, plain, strict=True)))


def table_columns(table: hms.Table) -> list[tuple[str, str]]:
    return [(c.name, c.type) for c in table.sd.cols]


def table_partition_keys(table: hms.Table) -> list[tuple[str, str]]:
    return [(c.name, c.type) for c in (table.partitionKeys or [])]


def legacy_parameters(parameters: Mapping[str, str] | None) -> list[str]:
    """The table parameters an earlier version of this project wrote for Spark, which ``hsh sync`` removes.

    Those versions set ``spark.sql.sources.provider=hsh`` plus the ``spark.sql.sources.schema*`` parts, which makes
    every Spark session without this package fail on the table. Only a table whose provider is ``hsh`` has them
    removed: schema parts that plain Spark saved itself (its ``INFER_AND_SAVE`` of a Hive table's case-sensitive
    schema, with no provider) are Spark's and stay.
    """
    params = parameters or {}
    if params.get(LEGACY_PROVIDER) != LEGACY_PROVIDER_VALUE:
        return []
    return sorted(k for k in params if k == LEGACY_PROVIDER or k.startswith(LEGACY_SCHEMA_PREFIX))


def drop_legacy_parameters(table: hms.Table) -> list[str]:
    """Remove :func:`legacy_parameters` from ``table`` (in place); the keys removed."""
    keys = legacy_parameters(table.parameters)
    for key in keys:
        del table.parameters[key]
    return keys
