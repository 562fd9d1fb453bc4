"""Spark SQL and HiveServer2 over a registered table return exactly what pyarrow reads from the files."""

from __future__ import annotations

from pathlib import Path

import pyarrow.dataset as ds
import pytest

from metastore.names import parse_table_name
from storage_handler.registration.register import apply_registration, plan_registration


@pytest.fixture(scope="module")
def registered(tmp_path_factory, metastore_uri: str) -> Path:
    from metastore.client import MetastoreClient
    from storage_handler.demo.data import generate_events

    root = generate_events(tmp_path_factory.mktemp("sql") / "events", days=3, files_per_day=2, rows_per_file=120)
    with MetastoreClient(metastore_uri) as client:
        apply_registration(client, plan_registration(client, parse_table_name("sqltest.events"), str(root)))
    return root


def _arrow(root: Path, filter_=None):
    dataset = ds.dataset(root, format="parquet", partitioning="hive")
    return dataset.to_table(filter=filter_)


def test_spark_sql_returns_the_rows_in_the_files(spark, registered: Path) -> None:
    expected = _arrow(registered)
    rows = spark.sql("SELECT event_id, kind, amount, ok, dt FROM sqltest.events").collect()
    got = sorted((r.event_id, r.kind, r.amount, r.ok, r.dt) for r in rows)
    want = sorted(zip(*(expected.column(c).to_pylist() for c in ("event_id", "kind", "amount", "ok", "dt")), strict=False))
    assert got == want


def test_spark_sql_with_partition_and_data_filter(spark, registered: Path) -> None:
    expected = _arrow(registered, (ds.field("dt") >= "2024-01-02") & (ds.field("kind") == "view"))
    got = spark.sql(
        "SELECT event_id FROM sqltest.events WHERE dt >= '2024-01-02' AND kind = 'view'"
    ).collect()
    assert sorted(r.event_id for r in got) == sorted(expected.column("event_id").to_pylist())
    assert len(got) > 0


def test_pyhive_count_matches(hiveserver2, registered: Path) -> None:
    from pyhive import hive

    host, port = hiveserver2
    expected = _arrow(registered, ds.field("dt") == "2024-01-03").num_rows
    with hive.connect(host=host, port=port) as conn:
        cursor = conn.cursor()
        cursor.execute("SELECT count(*) FROM sqltest.events WHERE dt = '2024-01-03'")
        assert cursor.fetchall() == [(expected,)]
        cursor.execute("SELECT count(*) FROM sqltest.events")
        assert cursor.fetchall() == [(_arrow(registered).num_rows,)]
