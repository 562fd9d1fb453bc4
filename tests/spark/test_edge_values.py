"""Values at the edges of what Spark hands over, through both Spark read paths (found by a false-negative hunt).

Each case compares a registered table with Spark reading the same files itself (its Parquet filter pushdown off,
so the reference is the rows, not Spark's own row-group filter), for the native scan and the Python data source.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from metastore.register import apply_registration, plan_registration
from metastore.table_spec import parse_table_name
from storage_handler.spark import last_scan_metrics

TABLE = "edges.t"
BIG = Decimal("12345678901234567890.1234567890")  # 30 digits: more than pyspark's 28-digit context holds


@pytest.fixture(scope="module")
def table(tmp_path_factory, metastore_uri: str, spark) -> Path:
    """Folders ``p=1`` and ``p=+2`` (registration types p as int); a decimal(38,10) column with one big value."""
    from metastore.client import MetastoreClient

    root = tmp_path_factory.mktemp("edges") / "t"
    for folder, values in (("p=1", [BIG, Decimal(1)]), ("p=+2", [Decimal(2), Decimal(3)])):
        (root / folder).mkdir(parents=True)
        pq.write_table(pa.table({"w": pa.array(values, pa.decimal128(38, 10)), "x": pa.array([1, 2], pa.int64())}),
                       root / folder / "a.parquet")
    with MetastoreClient(metastore_uri) as client:
        apply_registration(client, plan_registration(client, parse_table_name(TABLE), str(root)))
    spark.read.schema("w decimal(38,10), x bigint, p int").option("basePath", str(root)).parquet(str(root)) \
        .createOrReplaceTempView("edges_reference")
    return root


@pytest.fixture(params=["true", "false"], ids=["native-scan", "python-data-source"])
def path(request, spark):
    spark.conf.set("spark.hsh.nativeScan", request.param)
    spark.conf.set("spark.sql.parquet.filterPushdown", "false")
    yield request.param
    spark.conf.unset("spark.hsh.nativeScan")
    spark.conf.unset("spark.sql.parquet.filterPushdown")


@pytest.mark.parametrize("where", [
    "p = 2", "p > 1", "p IN (2, 3)",                     # the +2 folder is the int 2, on both paths
    f"w = {BIG}", f"w >= {BIG}", f"w IN ({BIG}, 7)",     # a 30-digit literal: no pruning on a rounded value
    "x = 1000", "p = 9 AND x = 1",                       # nothing kept: an empty answer, not an error
])
def test_matches_spark_reading_the_files(spark, table: Path, path: str, where: str) -> None:
    def rows(source: str) -> list[tuple]:
        return sorted(tuple(r) for r in spark.sql(f"SELECT w, x, p FROM {source} WHERE {where}").collect())

    assert rows(TABLE) == rows("edges_reference"), where
    assert last_scan_metrics(TABLE)["path"] == ("spark-native" if path == "true" else "spark-datasource")


def test_case_sensitive_session_prunes_only_by_partitions(spark, metastore_uri: str, tmp_path: Path) -> None:
    """With ``spark.sql.caseSensitive`` on, Spark's reader takes a Parquet column ``EventId`` as missing (NULL)
    for the table's ``eventid``, while the index matched it ignoring case: its statistics must not prune then."""
    from metastore.client import MetastoreClient

    root = tmp_path / "cased"
    for k, ids in ((1, [1, 2]), (2, [3, 4])):
        (root / f"k={k}").mkdir(parents=True)
        pq.write_table(pa.table({"EventId": pa.array(ids, pa.int64())}), root / f"k={k}" / "a.parquet")
    with MetastoreClient(metastore_uri) as client:
        apply_registration(client, plan_registration(client, parse_table_name("edges.cased"), str(root)))
    spark.conf.set("spark.sql.caseSensitive", "true")
    try:
        reference = spark.read.schema("eventid bigint, k int").option("basePath", str(root)).parquet(str(root))
        for where, kept in (("eventid IS NULL", 2), ("eventid = 1 OR k = 2", 2), ("k = 2", 1)):
            assert spark.sql(f"SELECT count(*) FROM edges.cased WHERE {where}").collect()[0][0] == \
                reference.where(where).count(), where
            assert last_scan_metrics("edges.cased")["files_kept"] == kept, where
    finally:
        spark.conf.unset("spark.sql.caseSensitive")
    assert spark.sql("SELECT count(*) FROM edges.cased WHERE eventid = 1").collect()[0][0] == 1
    assert last_scan_metrics("edges.cased")["files_kept"] == 1  # ignoring case again: statistics prune
