"""Every read path (spark.sql through the data source, read_table, pyhive) returns what a full scan returns.

The oracle reads every file with pyarrow (no handler, no index), loads the rows into Spark as a temporary view and
evaluates the same predicate there; each path must return exactly those rows, and selective predicates must have
read fewer files than the table has.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from storage_handler.spark import last_scan_metrics, read_table
from tests.spark.typed_data import COLUMNS, QUERIES, register_typed

TABLE = "paths.typed"
TABLE_FILES = 12  # 6 partitions of 2 files


@pytest.fixture(scope="module")
def typed_table(tmp_path_factory, metastore_uri: str, spark) -> str:
    root = tmp_path_factory.mktemp("typed") / "typed"
    return str(register_typed(root, metastore_uri, TABLE, spark, oracle_view="oracle_typed"))


def _rows(rows) -> list[tuple]:
    return sorted((tuple(r) for r in rows), key=repr)


def _oracle(spark, where: str) -> list[tuple]:
    return _rows(spark.sql(f"SELECT {COLUMNS} FROM oracle_typed WHERE {where}").collect())


@pytest.fixture(params=["spark-native", "spark-datasource"])
def scan_path(request, spark, metastore_uri: str) -> Iterator[tuple[str, str]]:
    """(path, what to query): the registered table through the session extension (Spark's native scan), or a view
    over the explicit hsh Python data source, ``spark.read.format("hsh").load(table)``."""
    if request.param == "spark-datasource":
        spark.read.format("hsh").option("metastore", metastore_uri).option("pruneByQueryFilters", "true") \
            .load(TABLE).createOrReplaceTempView("typed_ds")
        yield request.param, "typed_ds"
    else:
        yield request.param, TABLE


@pytest.mark.parametrize(("where", "selective"), QUERIES, ids=[q for q, _ in QUERIES])
def test_spark_sql_through_the_handler(spark, typed_table: str, scan_path: tuple[str, str], where: str,
                                       selective: bool) -> None:
    scan_path, source = scan_path
    got = _rows(spark.sql(f"SELECT {COLUMNS} FROM {source} WHERE {where}").collect())
    assert got == _oracle(spark, where)
    metrics = last_scan_metrics(TABLE)
    assert metrics is not None and metrics["path"] == scan_path
    assert metrics["partitions_total"] == 6
    # Spark hands a Python data source only AND-ed simple filters: an OR cannot reach the handler on that path.
    if selective and (scan_path == "spark-native" or " OR " not in where):
        assert metrics["files_kept"] < TABLE_FILES, metrics  # by partitions (never listed) or by statistics


def test_native_scan_is_sparks_own_parquet_reader(spark, typed_table: str) -> None:
    plan = spark.sql(f"SELECT c_int FROM {TABLE} WHERE c_int = 3")._jdf.queryExecution().executedPlan().toString()
    assert "FileScan parquet" in plan and "HshFileIndex" in plan, plan
    assert "ReadSchema: struct<c_int:int>" in plan, plan  # column pruning: only the needed column is read


@pytest.mark.parametrize(("where", "selective"), QUERIES, ids=[q for q, _ in QUERIES])
def test_read_table(spark, typed_table: str, where: str, selective: bool) -> None:
    got = _rows(read_table(spark, TABLE, where).selectExpr(*COLUMNS.split(", ")).collect())
    assert got == _oracle(spark, where)
    metrics = last_scan_metrics(TABLE)
    assert metrics["path"] == "read_table"
    if selective:
        assert metrics["files_kept"] < TABLE_FILES, metrics


def test_full_table_through_every_path_has_every_row(spark, typed_table: str) -> None:
    everything = _rows(spark.sql(f"SELECT {COLUMNS} FROM oracle_typed").collect())
    assert _rows(spark.sql(f"SELECT {COLUMNS} FROM {TABLE}").collect()) == everything
    assert _rows(read_table(spark, TABLE).selectExpr(*COLUMNS.split(", ")).collect()) == everything
    assert len(everything) == 12 * 40


PYHIVE_QUERIES = [q for q, _ in QUERIES if "upper" not in q][:: 3] + ["c_bigint = 5", "bucket > 2"]


@pytest.mark.parametrize("where", PYHIVE_QUERIES)
def test_pyhive_through_hiveserver2(spark, hiveserver2, typed_table: str, where: str) -> None:
    from pyhive import hive

    host, port = hiveserver2
    with hive.connect(host=host, port=port) as conn:
        cursor = conn.cursor()
        cursor.execute(f"SELECT count(*), count(c_str), max(c_bigint) FROM {TABLE} WHERE {where}")
        got = cursor.fetchall()
    expected = spark.sql(f"SELECT count(*), count(c_str), max(c_bigint) FROM oracle_typed WHERE {where}").collect()
    assert [tuple(r) for r in got] == [tuple(r) for r in expected]
    metrics = last_scan_metrics(TABLE)
    assert metrics["path"] == "spark-native"
    if not os.environ.get("HSH_HIVESERVER2"):
        assert metrics["pid"] != os.getpid()  # planned inside the Thrift server's worker, not here


def test_pyhive_pruning_is_visible(spark, hiveserver2, typed_table: str) -> None:
    from pyhive import hive

    host, port = hiveserver2
    with hive.connect(host=host, port=port) as conn:
        cursor = conn.cursor()
        cursor.execute(f"SELECT count(*) FROM {TABLE} WHERE c_bigint = 5")
        assert cursor.fetchall() == [(1,)]
    metrics = last_scan_metrics(TABLE)
    assert metrics["files_kept"] == 1 and metrics["partitions_total"] == 6
    assert "EQUALS c_bigint 5" in metrics["sarg"]


def test_read_table_reads_exactly_the_kept_files(spark, typed_table: str) -> None:
    df = read_table(spark, TABLE, "c_bigint < 30 OR region IS NULL")
    metrics = last_scan_metrics(TABLE)
    plan = df._jdf.queryExecution().executedPlan().toString()
    assert "FileScan parquet" in plan and "HshFileIndex" in plan, plan  # no second listing by Spark
    assert len(df.inputFiles()) == metrics["files_kept"] == 5


def test_read_table_without_the_extension_reads_the_same_rows(spark, typed_table: str) -> None:
    """The fallback for sessions without the extension's classes: Spark reads the kept files by path."""
    from storage_handler.handler import list_status_for
    from storage_handler.spark.native import _over_kept_files, _over_paths, _relations, load_table_desc

    desc = load_table_desc(spark, TABLE)
    result, _ = list_status_for(desc, "bucket = 10")
    names = [n for n, _ in desc.schema]
    by_paths = _over_paths(spark, desc, result.files).select(*names)
    kept = _over_kept_files(spark, _relations(spark), desc, result)
    assert _rows(by_paths.collect()) == _rows(kept.select(*names).collect())
    assert len(by_paths.collect()) == 6 * 40
    assert _over_paths(spark, desc, ()).count() == 0
