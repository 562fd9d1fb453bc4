"""``read_table``: the native-reader path for DataFrame users.

The handler decides which files to read (``list_status`` on the driver, in this process), then Spark's own
Parquet reader builds the DataFrame over exactly those files -- with column pruning, vectorized decoding and
row-group filtering -- and the filter is applied on top, so results equal a full scan.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from storage_handler.errors import FilterError
from storage_handler.spark.metrics import record_scan
from storage_handler.spark.table_props import spark_type_json, storage_pairs
from storage_handler.storage import file_uri, is_absolute, parse_location

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from storage_handler.input_format import FileStatus, ListStatusResult
    from storage_handler.table_desc import TableDesc
    from storage_handler.types import HiveType

log = logging.getLogger(__name__)


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
    from metastore.names import parse_table_name
    from metastore.security.config import resolve
    from storage_handler.table_desc import TableDesc

    name = parse_table_name(table)
    # a session started with --conf only has its Kerberos keytab in the Spark configuration, not in this
    # process's environment: resolve the metastore's security from both
    security = resolve(spark_conf=dict(spark.sparkContext.getConf().getAll()))
    with MetastoreClient(_metastore_uri(spark), security=security) as client:
        return TableDesc.from_hms(client.get_table(name.database, name.table), client.uris)


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
    """A DataFrame of ``table`` (``db.table``) reading only the files that may match ``where``.

    ``where`` is a Spark SQL condition; the DataFrame applies it with ``DataFrame.where``, so results are exact.
    The files are chosen from the same text read the same way: with the session extension's classes on the driver
    (:func:`storage_handler.spark.session`, :func:`native_scan_conf`) Spark itself parses and resolves it, in this
    session's time zone and settings. Without them the handler reads it as HiveQL, which agrees with Spark except
    for a few quoting rules and session settings; in those cases (:func:`_hiveql_reads_it_as_spark`) it does not
    prune by ``where`` at all rather than risk skipping a matching file.
    """
    from storage_handler.handler import list_status_for

    desc = load_table_desc(spark, table)
    collations = _collations(spark, table)
    factory = _relations(spark)
    if factory is not None:
        result, pushed = _plan_with_spark(spark, factory, desc, table, where)
    else:
        pruning_where = where if where and _hiveql_reads_it_as_spark(spark, where) else None
        # the metastore's types lack Spark's collations: without them byte-ordered bounds would prune 'A' for 'a'
        collated = dataclasses.replace(desc, columns=tuple(
            (n, dataclasses.replace(t, collation=collations[n]) if n in collations else t) for n, t in desc.columns))
        try:
            result, _props = list_status_for(collated, pruning_where)
        except FilterError as e:  # Spark SQL HiveQL cannot read (X'05', IN (SELECT ...)): read it all, unpruned
            log.info("read_table %s: not pruning by %r, which the handler's HiveQL reader cannot read (%s)",
                     table, where, e)
            pruning_where = None
            result, _props = list_status_for(desc, None)
        pushed = [pruning_where] if pruning_where else []
    record_scan({**result.metrics.as_dict(), "path": "read_table", "where": where, "pushed_filters": pushed})
    df = _over_kept_files(spark, factory, desc, result) if factory is not None else \
        _over_paths(spark, desc, result.files)
    # named like the table, as spark.table(...) is, so that `where` may say t.x or correlate a subquery with it
    df = df.select(*[_as_spark_reads(n, t, collations.get(n.lower())) for n, t in desc.schema]) \
        .alias(desc.name.split(".")[-1])
    return df.where(where) if where else df


def _collations(spark: SparkSession, table: str) -> dict[str, str]:
    """The table's string columns with a collation other than binary (Spark 4's ``COLLATE UTF8_LCASE`` ...), by
    lower-case name, as Spark's catalog declares them: the metastore's column types do not carry them, and
    without them ``where`` compared such a column byte by byte (``s = 'a'`` lost the row holding 'A')."""
    import pyspark

    if int(pyspark.__version__.split(".")[0]) < 4:
        return {}  # no collations before Spark 4
    from pyspark.sql.types import StringType

    found = {}
    for fld in spark.table(table).schema.fields:
        collation = getattr(fld.dataType, "collation", None)
        if isinstance(fld.dataType, StringType) and collation and collation.upper() != "UTF8_BINARY":
            found[fld.name.lower()] = collation
    return found


def _as_spark_reads(name: str, hive_type: HiveType, collation: str | None = None) -> Any:
    """The column as Spark's read of the table gives it: a ``char(n)`` padded with spaces to ``n`` characters
    (read-side padding; a longer value stays whole), a string with its declared ``collation``. The DataFrame's type
    is ``string`` either way, so ``where`` compares a char column as a string here: write its literals padded."""
    from pyspark.sql import functions as F

    quoted = f"`{name.replace('`', '``')}`"
    if collation is not None:
        return F.expr(f"{quoted} COLLATE {collation}").alias(name)
    column = F.col(quoted)
    if hive_type.name == "char" and hive_type.length is not None:
        n = hive_type.length
        column = F.when(F.length(column) < n, F.rpad(column, n, " ")).otherwise(column).alias(name)
    return column


def _relations(spark: SparkSession) -> Any:
    """The extension's ``hsh.spark.HshRelations`` class on this driver, or None when it is not on the class path."""
    from py4j.java_gateway import JavaClass

    relations = getattr(getattr(getattr(spark, "_jvm", None), "hsh", None), "spark", None)
    factory = getattr(relations, "HshRelations", None) if relations is not None else None
    if getattr(spark, "_jsparkSession", None) is None or not isinstance(factory, JavaClass):
        return None
    return factory


def _plan_with_spark(spark: SparkSession, factory: Any, desc: TableDesc, table: str,
                     where: str | None) -> tuple[ListStatusResult, list[str]]:
    """``list_status`` for the filters Spark makes of ``where`` (what a query's native scan would be handed)."""
    from storage_handler.spark.filter_json import decode_filters
    from storage_handler.spark.planning import configure, list_files
    from storage_handler.spark.table_props import TableIdentity

    nodes = json.loads(factory.filtersFor(spark._jsparkSession, table, where)) if where else []
    filters = decode_filters(nodes, on_undecodable=lambda e: log.warning("read_table: filter left out of pruning "
                                                                         "(%s)", e))
    identity = TableIdentity(desc.name, desc.location, desc.columns, desc.partition_keys, desc.metastore_uri,
                             storage_pairs(desc.parameters))
    configured = configure(identity, filters)
    return list_files(configured, path="read_table", record=False), list(configured.pushed_filters)


def _hiveql_reads_it_as_spark(spark: SparkSession, where: str) -> bool:
    """Whether the handler's HiveQL reading of ``where`` surely means what Spark's does in this session.

    Not when: Spark reads zone-less timestamp literals in a zone other than UTC; it matches Parquet columns by
    exact case; its parser settings change string literals or double quotes; or the text has a doubled quote
    (``'it''s'``: an escaped quote for Spark, two adjacent strings for Hive), a ``\\U`` escape, or double quotes.
    """
    def setting(key: str, default: str) -> str:
        return (spark.conf.get(key, None) or default).strip().lower()

    return (
        setting("spark.sql.session.timeZone", "UTC") in ("utc", "etc/utc", "z", "gmt", "+00:00")
        and all(setting(key, "false") != "true" for key in (
            "spark.sql.caseSensitive", "spark.sql.parser.escapedStringLiterals", "spark.sql.ansi.doubleQuotedIdentifiers"))
        and not any(token in where for token in ("''", "\\U", '"'))
    )


def _over_kept_files(spark: SparkSession, factory: Any, desc: TableDesc, result: ListStatusResult) -> DataFrame:
    """Spark's native Parquet relation over exactly the files ``result`` kept, built by the extension's classes.

    Spark neither lists nor stats the files again (that costs ~50 us a file on a local disk, a request each on
    object storage). ``factory`` is :func:`_relations`' class.
    """
    from pyspark.sql import DataFrame

    from storage_handler.spark.planning import file_rows_json
    from storage_handler.spark.table_props import TableIdentity

    table = TableIdentity(desc.name, desc.location, desc.columns, desc.partition_keys, desc.metastore_uri,
                          storage_pairs(desc.parameters)).to_contract()
    relation = factory.keptFiles(spark._jsparkSession, json.dumps(table), file_rows_json(desc.location, result.kept))
    return DataFrame(spark._jsparkSession.baseRelationToDataFrame(relation), spark)


def _over_paths(spark: SparkSession, desc: TableDesc, files: Sequence[FileStatus]) -> DataFrame:
    """Without the extension: ``spark.read.parquet`` over the kept files' paths (Spark stats each one).

    Files under the table folder are read in one go, their partition values parsed by Spark from the ``k=v``
    folders below ``basePath``. A partition registered elsewhere (outside the table folder, or at a folder under it
    not named after its values) is read on its own, with the metastore's values as typed literals, and unioned in.
    """
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructType

    from storage_handler.catalog import absolute_path

    def struct(pairs: Sequence[tuple[str, Any]]) -> StructType:
        return StructType.fromJson({"type": "struct", "fields": [
            {"name": n, "type": spark_type_json(t), "nullable": True, "metadata": {}} for n, t in pairs]})

    schema = struct(desc.schema)
    # Spark's discovery gives a file the values of its folders' names: right only for a file directly in the
    # folder Hive names after its partition's values; any other (a partition registered at another folder under
    # the table, or outside it) is read with the metastore's values
    inside = [f for f in files if not is_absolute(f.path) and _in_own_folder(f)]
    outside = [f for f in files if is_absolute(f.path) or not _in_own_folder(f)]
    frames = []
    root = file_uri(parse_location(desc.location).uri).rstrip("/")
    if inside:
        paths = [f"{root}/{f.path}" for f in inside]
        with _serial_listing(spark, len(paths)):
            frames.append(spark.read.schema(schema).option("basePath", root).parquet(*paths))
    groups: dict[tuple[tuple[str, str | None], ...], list[str]] = {}
    for f in outside:
        groups.setdefault(f.partition_values, []).append(file_uri(absolute_path(desc.location, f.path)))
    for values, paths in groups.items():
        by_key = dict(values)
        with _serial_listing(spark, len(paths)):
            df = spark.read.schema(struct(desc.columns)).parquet(*paths)
        frames.append(df.select(*df.columns, *[
            F.lit(by_key.get(k)).cast(schema[k].dataType).alias(k) for k, _ in desc.partition_keys]))
    if not frames:
        return spark.createDataFrame([], schema)
    out = frames[0]
    for frame in frames[1:]:
        out = out.unionByName(frame)
    return out


def explain_json(spark: SparkSession, table: str, where: str | None = None) -> str:
    """The scan decision for ``read_table`` as JSON (what would be read), without building a DataFrame."""
    from storage_handler.handler import list_status_for

    result, _ = list_status_for(load_table_desc(spark, table), where)
    return json.dumps(result.metrics.as_dict())


def _in_own_folder(f: FileStatus) -> bool:
    """Whether ``f`` (relative to the table folder) lies directly in the folder Hive names after its partition's
    values (``k1=v1/k2=v2/``), where Spark's partition discovery reads exactly those values."""
    from storage_handler.hive_paths import partition_path

    folder = f.path.rpartition("/")[0]
    if not f.partition_values:
        return folder == ""
    if any(v == "" for _, v in f.partition_values):
        return False  # named like the default partition, which Spark's discovery reads as NULL
    return folder == partition_path(list(f.partition_values))
