"""A table is what the metastore says: its registered partitions, wherever they live (issue: table model).

Real metastore and real Spark. A partitioned table is registered, then changed the ways Hive tables change: a
partition dropped with its folder kept, a folder nobody registered, partitions registered at their own locations
(outside the table folder, on another table's folder, and at a folder that does not exist), odd values and the
default partition. ``list_status`` (``hsh scan``'s path) and ``spark.sql`` through the handler must read exactly
what plain Spark reads of the same table (its Hive read: ``spark.hsh.nativeScan=false``).
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import pyarrow as pa
import pytest

from metastore.names import parse_table_name
from storage_handler.handler import list_status_for
from storage_handler.hive_paths import escape_partition_value
from storage_handler.registration.register import apply_registration, plan_registration
from storage_handler.registration.table_spec import build_partition
from storage_handler.spark import last_scan_metrics
from storage_handler.table_desc import TableDesc
from tests.reliability.util import write_parquet

TABLE = "model.t"


def _rows(spark, sql: str) -> list[tuple]:
    return sorted((tuple(r) for r in spark.sql(sql).collect()), key=repr)


def _plain(spark, sql: str) -> list[tuple]:
    """What plain Spark reads (its own Hive read of the table; the extension steps aside)."""
    spark.conf.set("spark.hsh.nativeScan", "false")
    try:
        return _rows(spark, sql)
    finally:
        spark.conf.unset("spark.hsh.nativeScan")


def _ints(start: int, n: int = 10) -> pa.Table:
    return pa.table({"v": pa.array(range(start, start + n), pa.int64())})


@pytest.fixture(scope="module")
def changed_table(tmp_path_factory, metastore_uri: str, spark) -> dict[str, Path]:
    from metastore.client import MetastoreClient

    base = tmp_path_factory.mktemp("model")
    root, other, backfill = base / "t", base / "other", base / "backfill" / "somewhere"
    for i, value in enumerate(["1", "2", "3", "a/b", None]):
        write_parquet(root / f"dt={escape_partition_value(value)}" / "f.parquet", _ints(100 * i))
    write_parquet(other / "dt=5" / "f.parquet", _ints(5000))  # another table's folder
    write_parquet(backfill / "part-0.parquet", _ints(9000, 100))
    name = parse_table_name(TABLE)
    with MetastoreClient(metastore_uri) as client:
        apply_registration(client, plan_registration(client, name, str(root)))
        client.drop_partitions(name.database, name.table, ["dt=1"])  # dropped, folder kept
        write_parquet(root / "dt=4" / "f.parquet", _ints(400))  # written, never registered
        table = client.get_table(name.database, name.table)
        client.add_partitions(name.database, name.table, [
            build_partition(table, ["2031-01-01"], str(backfill)),  # outside the table folder
            build_partition(table, ["7"], str(other / "dt=5")),  # on another table's folder
            build_partition(table, ["8"], str(base / "gone")),  # registered, folder missing
        ])
    shutil.rmtree(base / "gone", ignore_errors=True)  # the metastore creates a new partition's folder
    return {"root": root, "backfill": backfill, "other": other}


def test_list_status_reads_exactly_the_registered_partitions(hms, metastore_uri: str, changed_table, caplog) -> None:
    desc = TableDesc.from_hms(hms.get_table("model", "t"), metastore_uri)
    with caplog.at_level(logging.WARNING):
        result, _ = list_status_for(desc)
    by_partition = {dict(f.partition_values)["dt"]: f.path for f in result.files}
    assert by_partition == {
        "2": "dt=2/f.parquet", "3": "dt=3/f.parquet", "a/b": "dt=a%2Fb/f.parquet",
        None: "dt=__HIVE_DEFAULT_PARTITION__/f.parquet",
        "2031-01-01": str(changed_table["backfill"] / "part-0.parquet"),
        "7": str(changed_table["other"] / "dt=5" / "f.parquet"),
    }
    assert result.metrics.partitions_total == 7 and result.metrics.partitions_kept == 7
    assert "partition dt=8 is registered at" in caplog.text and "does not exist" in caplog.text


def test_partitions_are_pruned_before_storage_is_listed(hms, metastore_uri: str, changed_table) -> None:
    desc = TableDesc.from_hms(hms.get_table("model", "t"), metastore_uri)
    result, _ = list_status_for(desc, "dt = '2031-01-01' and v >= 9050")
    assert [f.path for f in result.files] == [str(changed_table["backfill"] / "part-0.parquet")]
    assert (result.metrics.partitions_total, result.metrics.partitions_kept, result.metrics.files_total) == (7, 1, 1)


@pytest.mark.parametrize("where", [
    "true", "dt = '2031-01-01'", "v >= 9050", "dt = '1'", "dt = '4'", "dt = '7' or v < 5", "dt is null",
    "dt = 'a/b'", "dt > '2' and v < 10000", "dt = '8'",
])
def test_spark_reads_what_plain_spark_reads(spark, changed_table, where: str) -> None:
    sql = f"SELECT dt, v FROM {TABLE} WHERE {where}"
    expected = _plain(spark, sql)
    assert _rows(spark, sql) == expected, where
    assert last_scan_metrics(TABLE)["path"] == "spark-native"
    if where == "true":  # the backfill's 100 rows are there, the dropped and unregistered folders are not
        assert sum(1 for dt, _ in expected if dt == "2031-01-01") == 100
        assert not any(dt in ("1", "4") for dt, _ in expected)


@pytest.fixture(scope="module")
def odd_partitions(tmp_path_factory, metastore_uri: str) -> Path:
    """``model.odd``: partitions ``dt='a'``, ``dt=''`` (a value the metastore takes and names like the default
    partition) and ``dt='h'`` at a folder whose name holds ``#`` and ``?`` next to one named like their prefix."""
    from metastore.client import MetastoreClient

    base = tmp_path_factory.mktemp("odd")
    root = base / "t"
    write_parquet(root / "dt=a" / "f.parquet", _ints(0))
    write_parquet(base / "empty" / "f.parquet", _ints(100))
    write_parquet(base / "h#1?x" / "f.parquet", _ints(200))
    write_parquet(base / "h" / "f.parquet", _ints(900))  # what a URL parser makes of the folder above
    name = parse_table_name("model.odd")
    with MetastoreClient(metastore_uri) as client:
        apply_registration(client, plan_registration(client, name, str(root)))
        write_parquet(root / "dt=zzz" / "f.parquet", _ints(300))  # under the table, named after other values
        write_parquet(root / "custom" / "f.parquet", _ints(400))  # under the table, not named k=v
        table = client.get_table(name.database, name.table)
        client.add_partitions(name.database, name.table, [
            build_partition(table, [""], str(base / "empty")),
            build_partition(table, ["h"], f"file:{base / 'h#1?x'}"),
            build_partition(table, ["m"], str(root / "dt=zzz")),
            build_partition(table, ["k"], str(root / "custom")),
        ])
    return base


@pytest.mark.parametrize("where", ["dt = ''", "dt <> 'a'", "dt is null", "dt is not null", "dt = 'h'", "true",
                                   "dt in ('', 'h') and v > 5"])
def test_empty_values_and_odd_folders_read_as_plain_spark(spark, hms, metastore_uri: str, odd_partitions: Path,
                                                          where: str) -> None:
    desc = TableDesc.from_hms(hms.get_table("model", "odd"), metastore_uri)
    kept = {dict(f.partition_values)["dt"] for f in list_status_for(desc, where)[0].files}
    sql = f"SELECT dt, v FROM model.odd WHERE {where}"
    expected = _plain(spark, sql)
    assert kept >= {dt for dt, _ in expected}, where
    assert _rows(spark, sql) == expected, where
    if where == "true":
        assert {dt for dt, _ in expected} == {"a", "", "h", "m", "k"} and not any(v >= 900 for _, v in expected)


@pytest.mark.parametrize("where", ["dt = 'm'", "dt = 'k'", "v >= 300", None])
def test_read_table_without_the_extension_reads_the_metastores_values(spark, odd_partitions: Path, monkeypatch,
                                                                      where: str | None) -> None:
    """Without the extension's classes read_table reads files under the table folder with Spark's partition
    discovery: a partition registered at dt=zzz read as 'zzz' (and dt = 'm' found nothing), one at custom/ failed
    the read (CONFLICTING_DIRECTORY_STRUCTURES)."""
    from storage_handler.spark import native, read_table

    monkeypatch.setattr(native, "_relations", lambda spark: None)
    got = sorted((tuple(r) for r in read_table(spark, "model.odd", where).select("dt", "v").collect()), key=repr)
    assert got == _plain(spark, f"SELECT dt, v FROM model.odd WHERE {where or 'true'}")
    assert got


def test_read_table_reads_partitions_outside_the_table_folder(spark, changed_table) -> None:
    from storage_handler.spark import read_table

    got = sorted((tuple(r) for r in read_table(spark, TABLE, "v >= 5000").select("dt", "v").collect()), key=repr)
    assert got == _plain(spark, f"SELECT dt, v FROM {TABLE} WHERE v >= 5000")
    assert len(got) == 110


def test_the_metastore_unreachable_fails_naming_table_and_uri(changed_table, hms, metastore_uri: str) -> None:
    from storage_handler.errors import MetastoreError

    desc = TableDesc.from_hms(hms.get_table("model", "t"), "thrift://127.0.0.1:9")
    with pytest.raises(MetastoreError, match=r"model\.t.*thrift://127\.0\.0\.1:9"):
        list_status_for(desc, "v = 1")


def test_a_partitioned_table_without_a_metastore_is_refused(changed_table, hms) -> None:
    from storage_handler.errors import ConfigurationError

    desc = TableDesc.from_hms(hms.get_table("model", "t"))
    with pytest.raises(ConfigurationError, match=r"model\.t is partitioned.*hive\.metastore\.uris"):
        list_status_for(desc, "v = 1")


def test_describe_and_sync_see_the_metastores_table(hms, metastore_uri: str, changed_table) -> None:
    """describe hints at the folders nobody registered; sync would add them, and counts as missing only the
    partition whose own location is gone (not those registered elsewhere)."""
    from storage_handler.registration.describe import describe_table
    from storage_handler.registration.sync import plan_sync

    name = parse_table_name(TABLE)
    described = describe_table(hms, name)
    assert described["partitions"] == 7 and described["unregistered_partition_folders"] == 2
    plan = plan_sync(hms, name)
    assert sorted(plan.dataset.partition_name(v) for v in plan.partitions_to_add) == ["dt=1", "dt=4"]
    assert plan.missing_partitions == ("dt=8",) and plan.partitions_to_drop == ()


def test_index_refresh_indexes_partitions_registered_elsewhere(hms, metastore_uri: str, changed_table) -> None:
    """After a refresh the backfill's file has statistics, so a query that rules it out skips it."""
    from storage_handler.meta_hook import IndexMetaHook
    from storage_handler.registration import hooked

    desc = TableDesc.from_hms(hms.get_table("model", "t"), metastore_uri)
    before, _ = list_status_for(desc, "dt = '2031-01-01' and v > 99999")
    assert before.metrics.files_kept == 1 and before.metrics.files_without_stats == 1  # unknown: kept
    hooked.refresh_table(hms, "model", "t", IndexMetaHook())
    after, _ = list_status_for(desc, "dt = '2031-01-01' and v > 99999")
    assert after.metrics.files_kept == 0 and after.metrics.files_without_stats == 0
    still, _ = list_status_for(desc, "dt = '2031-01-01' and v >= 9099")
    assert [f.path for f in still.files] == [str(changed_table["backfill"] / "part-0.parquet")]


def test_hsh_scan_reads_the_metastores_table_and_hints_at_unregistered_folders(metastore_uri: str,
                                                                               changed_table) -> None:
    import json

    from tests.helpers import run_hsh

    proc = run_hsh("scan", TABLE, "--where", "v >= 0", "--json", "--metastore", metastore_uri)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert (out["partitions_total"], out["files_total"], out["unregistered_partition_folders"]) == (7, 6, 2)
    assert str(changed_table["backfill"] / "part-0.parquet") in out["kept_paths"]
    text = run_hsh("scan", TABLE, "--metastore", metastore_uri)
    assert "partitions kept 7/7" in text.stdout and "2 partition folder(s)" in text.stdout, text.stdout
