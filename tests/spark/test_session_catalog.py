"""The handler's session catalog (``hsh.spark.HshSessionCatalog``) re-uses a registered table's definition only
while the metastore holds exactly the table it was made from (issue 30).

Counted, not timed: the extension records each definition check (``table_definition``, ``reused`` 1 or 0) and
Spark counts its Hive client calls. What can fail: a definition kept after the metastore changed would read the
table's old location; a check on a plain table would cost it a metastore call it does not pay without the handler.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from storage_handler.spark.jvm import SESSION_CATALOG_CLASS, SESSION_CATALOG_SETTING, native_scan_conf

TABLE = "defs.moving"
PLAIN = "defs.plain"


def _folder(path: Path, values: list[int]) -> Path:
    path.mkdir(parents=True)
    pq.write_table(pa.table({"x": pa.array(values, pa.int64())}), path / "part-0.parquet")
    return path


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory, metastore_uri: str) -> tuple[Path, Path]:
    from metastore.client import MetastoreClient
    from metastore.names import parse_table_name
    from storage_handler.registration.register import apply_registration, plan_registration

    root = tmp_path_factory.mktemp("defs")
    first = _folder(root / "first", list(range(1, 11)))
    second = _folder(root / "second", list(range(100, 105)))
    with MetastoreClient(metastore_uri) as client:
        apply_registration(client, plan_registration(client, parse_table_name(TABLE), str(first)))
    return first, second


def _run(spark, sql: str) -> tuple[int, list[dict], int]:  # noqa: ANN001
    """The query's single value, the definition checks it made, and the Hive client calls Spark made for it."""
    metric = spark._jvm.org.apache.spark.metrics.source.HiveCatalogMetrics.METRIC_HIVE_CLIENT_CALLS()
    spark._jvm.hsh.spark.Timings.drain()
    calls = metric.getCount()
    value = spark.sql(sql).collect()[0][0]
    checks = [e for e in json.loads(spark._jvm.hsh.spark.Timings.drain()) if e["step"] == "table_definition"]
    return value, checks, int(metric.getCount() - calls)


def test_the_session_uses_the_handlers_catalog(spark) -> None:  # noqa: ANN001
    assert spark.conf.get(SESSION_CATALOG_SETTING) == SESSION_CATALOG_CLASS


def test_a_definition_is_reused_until_the_metastore_changes_it(spark, folders, metastore_uri: str) -> None:  # noqa: ANN001
    from metastore.client import MetastoreClient

    first, second = folders
    sql = f"SELECT sum(x) FROM {TABLE}"
    for _ in range(2):  # the first query finds the table registered, the second keeps its definition
        assert _run(spark, sql)[0] == 55
    value, checks, calls = _run(spark, sql)
    assert value == 55
    assert [c["reused"] for c in checks] == [1]
    assert calls == 1  # the check is the one get_table Spark would make; its conversion is what is saved

    with MetastoreClient(metastore_uri) as client:  # another client moves the table: nothing tells this session
        table = client.get_table(*TABLE.split("."))
        table.sd.location = second.as_uri()
        client.alter_table(table)
    value, checks, _ = _run(spark, sql)
    assert value == sum(range(100, 105)), "the definition made before the ALTER was used"
    assert [c["reused"] for c in checks] == [0]
    value, checks, _ = _run(spark, sql)
    assert value == sum(range(100, 105)) and [c["reused"] for c in checks] == [1]


def test_a_setting_changed_in_the_session_makes_the_definition_anew(spark, folders) -> None:  # noqa: ANN001
    sql = f"SELECT count(*) FROM {TABLE}"
    for _ in range(2):
        _run(spark, sql)
    spark.conf.set("spark.sql.legacy.charVarcharAsString", "true")
    try:
        assert [c["reused"] for c in _run(spark, sql)[1]] == [0]
        assert [c["reused"] for c in _run(spark, sql)[1]] == [1]
    finally:
        spark.conf.unset("spark.sql.legacy.charVarcharAsString")


def test_a_plain_table_costs_what_it_costs_without_the_handler(spark, tmp_path: Path) -> None:  # noqa: ANN001
    spark.sql("CREATE DATABASE IF NOT EXISTS defs")
    spark.sql(f"CREATE TABLE IF NOT EXISTS {PLAIN} (x BIGINT) STORED AS PARQUET LOCATION '{tmp_path.as_uri()}'")
    spark.sql(f"INSERT INTO {PLAIN} VALUES (1), (2)")
    for _ in range(2):
        _run(spark, f"SELECT sum(x) FROM {PLAIN}")
    value, checks, calls = _run(spark, f"SELECT sum(x) FROM {PLAIN}")
    assert value == 3 and checks == [] and calls == 1  # Spark's own lookup, nothing added


def test_a_catalog_the_installation_configures_is_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    delta = "org.apache.spark.sql.delta.catalog.DeltaCatalog"
    (tmp_path / "spark-defaults.conf").write_text(f"# Delta's\n{SESSION_CATALOG_SETTING}   {delta}\n")
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path))
    assert SESSION_CATALOG_SETTING not in native_scan_conf()
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path / "none"))
    assert native_scan_conf()[SESSION_CATALOG_SETTING] == SESSION_CATALOG_CLASS
