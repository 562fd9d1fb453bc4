"""``read_table``: the native-reader path for DataFrame users.

The handler decides which files to read (``list_status`` on the driver, in this process), then Spark's own
Parquet reader builds the DataFrame over exactly those files -- with column pruning, vectorized decoding and
row-group filtering -- and the filter is applied on top, so results equal a full scan.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

from storage_handler.spark.metrics import record_scan
from storage_handler.spark.table_props import spark_type_json
from storage_handler.stats.listing import local_path

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from storage_handler.input_format import FileStatus
    from storage_handler.table_desc import TableDesc


def _metastore_uri(spark: SparkSession) -> str:
    uri = spark.conf.get("spark.hadoop.hive.metastore.uris", None) or spark.sparkContext.getConf().get(
        "spark.hadoop.hive.metastore.uris", None
    )
    if not uri:
        from metastore.local import resolve_metastore_uri

        uri = resolve_metastore_uri(None)
    return uri


def load_table_desc(spark: SparkSession, table: str) -> TableDesc:
    from metastore.client import MetastoreClient
    from metastore.table_spec import parse_table_name
    from storage_handler.table_desc import TableDesc

    name = parse_table_name(table)
    with MetastoreClient(_metastore_uri(spark)) as client:
        return TableDesc.from_hms(client.get_table(name.database, name.table))


@contextmanager
def _serial_listing(spark: SparkSession, paths: int) -> Iterator[None]:
    """Stat the kept files on the driver instead of in a Spark job.

    With more than ``spark.sql.sources.parallelPartitionDiscovery.threshold`` (32) paths Spark lists them with a
    distributed job of one task per path, which costs more than the pruning saves; the handler already listed
    them, so a serial stat is cheap. The setting is restored afterwards (the DataFrame's file index is built here).
    """
    key = "spark.sql.sources.parallelPartitionDiscovery.threshold"
    old = spark.conf.get(key, None)
    spark.conf.set(key, str(max(paths + 1, 32)))
    try:
        yield
    finally:
        if old is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, old)


def read_table(spark: SparkSession, table: str, where: str | None = None) -> DataFrame:
    """A DataFrame of ``table`` (``db.table``) reading only the files that may match ``where`` (HiveQL)."""
    from storage_handler.handler import list_status_for

    desc = load_table_desc(spark, table)
    result, _props = list_status_for(desc, where)
    record_scan({**result.metrics.as_dict(), "path": "read_table", "where": where})
    df = _over_kept_files(spark, desc, result.files)
    if df is None:
        df = _over_paths(spark, desc, result.files)
    df = df.select(*[n for n, _ in desc.schema])
    return df.where(where) if where else df


def _over_kept_files(spark: SparkSession, desc: TableDesc, files: Sequence[FileStatus]) -> DataFrame | None:
    """Spark's native Parquet relation over exactly ``files``, built by the session extension's classes.

    Spark neither lists nor stats the files again (that costs ~50 us a file on a local disk, a request each on
    object storage). None when the extension is not on the driver's class path (see :mod:`.jvm`).
    """
    from py4j.java_gateway import JavaClass
    from pyspark.sql import DataFrame

    from storage_handler.spark.planning import file_rows
    from storage_handler.spark.table_props import spark_schema_json

    jsession = getattr(spark, "_jsparkSession", None)
    relations = getattr(getattr(getattr(spark, "_jvm", None), "hsh", None), "spark", None)
    factory = getattr(relations, "HshRelations", None) if relations is not None else None
    if jsession is None or not isinstance(factory, JavaClass):
        return None
    schema = spark_schema_json(desc.name, desc.location, desc.columns, desc.partition_keys)
    relation = factory.keptFiles(jsession, schema, json.dumps(file_rows(desc.location, files)))
    return DataFrame(jsession.baseRelationToDataFrame(relation), spark)


def _over_paths(spark: SparkSession, desc: TableDesc, files: Sequence[FileStatus]) -> DataFrame:
    """Without the extension: ``spark.read.parquet`` over the kept files' paths (Spark stats each one)."""
    from pyspark.sql.types import StructType

    schema = StructType.fromJson({"type": "struct", "fields": [
        {"name": n, "type": spark_type_json(t), "nullable": True, "metadata": {}} for n, t in desc.schema
    ]})
    if not files:
        return spark.createDataFrame([], schema)
    from storage_handler.spark.planning import file_rows

    paths = [row[0] for row in file_rows(desc.location, files)]
    root = "file://" + local_path(desc.location).rstrip("/")
    with _serial_listing(spark, len(paths)):
        return spark.read.schema(schema).option("basePath", root).parquet(*paths)


def explain_json(spark: SparkSession, table: str, where: str | None = None) -> str:
    """The scan decision for ``read_table`` as JSON (what would be read), without building a DataFrame."""
    from storage_handler.handler import list_status_for

    result, _ = list_status_for(load_table_desc(spark, table), where)
    return json.dumps(result.metrics.as_dict())
