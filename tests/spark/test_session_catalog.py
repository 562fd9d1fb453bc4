"""The handler's session catalog (``hsh.spark.HshSessionCatalog``) re-uses a registered table's definition only
while the metastore holds exactly the table it was made from (issue 30).

Counted, not timed: the extension records each definition check (``table_definition``, ``reused`` 1 or 0) and
Spark counts its Hive client calls. What can fail: a definition kept after the metastore changed would read the
table's old location; a check on a plain table would cost it a metastore call it does not pay without the handler.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from storage_handler.contract import SETTING_DEFINITION_RECHECK
from storage_handler.spark.jvm import SESSION_CATALOG_CLASS, SESSION_CATALOG_SETTING, native_scan_conf

TABLE = "defs.moving"
PLAIN = "defs.plain"


def _folder(path: Path, values: list[int]) -> Path:
    path.mkdir(parents=True)
    pq.write_table(pa.table({"x": pa.array(values, pa.int64())}), path / "part-0.parquet")
    return path


def _register(root: Path, metastore_uri: str, table: str) -> tuple[Path, Path]:
    """``table`` over a folder of x = 1..10 (sum 55), and a second folder (x = 100..104, sum 510) to move it to."""
    from metastore.client import MetastoreClient
    from metastore.names import parse_table_name
    from storage_handler.registration.register import apply_registration, plan_registration

    first = _folder(root / "first", list(range(1, 11)))
    second = _folder(root / "second", list(range(100, 105)))
    with MetastoreClient(metastore_uri) as client:
        apply_registration(client, plan_registration(client, parse_table_name(table), str(first)))
    return first, second


def _move(metastore_uri: str, table: str, folder: Path) -> None:
    """Another process's ``ALTER TABLE ... SET LOCATION``: nothing in this driver hears of it."""
    from metastore.client import MetastoreClient

    with MetastoreClient(metastore_uri) as client:
        hms_table = client.get_table(*table.split("."))
        hms_table.sd.location = folder.as_uri()
        client.alter_table(hms_table)


def _held(spark, root: Path, metastore_uri: str, table: str) -> Path:  # noqa: ANN001
    """``table`` registered and queried twice (a definition held); the folder to move it to."""
    _, second = _register(root, metastore_uri, table)
    for _ in range(2):
        assert _run(spark, f"SELECT sum(x) FROM {table}")[0] == 55
    return second


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory, metastore_uri: str) -> tuple[Path, Path]:
    return _register(tmp_path_factory.mktemp("defs"), metastore_uri, TABLE)


@pytest.fixture
def recheck(spark):  # noqa: ANN001, ANN201
    def set_seconds(seconds: float) -> None:
        spark.conf.set(SETTING_DEFINITION_RECHECK, str(seconds))

    yield set_seconds
    spark.conf.unset(SETTING_DEFINITION_RECHECK)


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
    _, second = folders
    sql = f"SELECT sum(x) FROM {TABLE}"
    for _ in range(2):  # the first query finds the table registered, the second keeps its definition
        assert _run(spark, sql)[0] == 55
    value, checks, calls = _run(spark, sql)
    assert value == 55
    assert [(c["reused"], c["checked"]) for c in checks] == [(1, 1)]
    assert calls == 1  # the check is the one get_table Spark would make; its conversion is what is saved

    _move(metastore_uri, TABLE, second)
    value, checks, _ = _run(spark, sql)
    assert value == sum(range(100, 105)), "the definition made before the ALTER was used"
    assert [c["reused"] for c in checks] == [0]
    value, checks, _ = _run(spark, sql)
    assert value == sum(range(100, 105)) and [c["reused"] for c in checks] == [1]


def test_a_recheck_interval_bounds_how_late_another_process_change_is_seen(spark, recheck, tmp_path: Path,  # noqa: ANN001
                                                                         metastore_uri: str) -> None:
    table, sql, second = "defs.rechecked", "SELECT sum(x) FROM defs.rechecked", _held(spark, tmp_path, metastore_uri,
                                                                                   "defs.rechecked")
    recheck(3)
    value, checks, calls = _run(spark, sql)
    assert value == 55 and [(c["reused"], c["checked"]) for c in checks] == [(1, 0)] and calls == 0
    _move(metastore_uri, table, second)
    time.sleep(3.2)  # the bound: a definition checked more than 3 s ago is checked again
    value, checks, _ = _run(spark, sql)
    assert value == sum(range(100, 105)), "a change older than the recheck interval was not seen"
    assert [(c["reused"], c["checked"]) for c in checks] == [(0, 1)]


def test_this_drivers_own_change_is_seen_at_once_whatever_the_interval(spark, recheck, tmp_path: Path,  # noqa: ANN001
                                                                     metastore_uri: str) -> None:
    table, sql, second = "defs.own", "SELECT sum(x) FROM defs.own", _held(spark, tmp_path, metastore_uri, "defs.own")
    recheck(3600)
    assert _run(spark, sql)[0] == 55
    spark.sql(f"ALTER TABLE {table} SET LOCATION '{second.as_uri()}'")  # through Spark's catalog: an event
    value, checks, _ = _run(spark, sql)
    assert value == sum(range(100, 105)), "the session's own ALTER was not seen"
    assert checks == []  # the event dropped the definition: the table is looked up as if seen for the first time


def test_a_recheck_interval_that_is_no_number_is_refused_naming_the_setting(spark, recheck, folders) -> None:  # noqa: ANN001
    for _ in range(2):
        _run(spark, f"SELECT count(*) FROM {TABLE}")
    recheck("soon")  # type: ignore[arg-type]
    with pytest.raises(Exception, match=SETTING_DEFINITION_RECHECK.replace(".", r"\.")):
        spark.sql(f"SELECT count(*) FROM {TABLE}").collect()


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


def test_the_handlers_own_settings_keep_the_definition(spark, folders) -> None:  # noqa: ANN001
    sql = f"SELECT count(*) FROM {TABLE}"
    for _ in range(2):
        _run(spark, sql)
    spark.conf.set("spark.hsh.aggregates", "false")  # changes nothing in how Spark reads the definition
    try:
        assert [c["reused"] for c in _run(spark, sql)[1]] == [1]
    finally:
        spark.conf.unset("spark.hsh.aggregates")


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
