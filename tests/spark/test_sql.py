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


@pytest.mark.parametrize("connective", ["or", "and_not"])
def test_a_deep_dataframe_condition_prunes(spark, registered: Path, connective: str) -> None:
    """``reduce(|, ...)`` nests as deep as it is long; the extension sends such chains as balanced trees (JSON
    nesting stays far from where Python's decoder stops, ~1,000 levels) and the parts of a top-level AND as
    separate conjuncts. 150 terms: Spark's own column conversion overflows the Py4J thread's stack from ~300."""
    import functools
    import operator

    from pyspark.sql import functions as F

    from storage_handler.spark import last_scan_metrics

    event_id = F.col("event_id")
    if connective == "or":
        terms = [event_id == -v for v in range(1, 149)] + [event_id == 5, event_id == 130]
        condition = functools.reduce(operator.or_, terms)
        expected, kept = [5, 130], 2
    else:  # NOT (a OR b OR ...): Spark pushes it as ANDed <>s
        terms = [event_id == v for v in range(121, 241)] + [event_id == -v for v in range(1, 30)]
        condition = ~functools.reduce(operator.or_, terms) & (event_id <= 240)
        expected, kept = list(range(1, 121)), 2  # <> prunes no range; event_id <= 240 drops 4 files
    got = spark.table("sqltest.events").where(condition).select("event_id").collect()
    assert sorted(r.event_id for r in got) == expected
    metrics = last_scan_metrics("sqltest.events")
    assert (metrics["files_kept"], metrics["files_total"]) == (kept, 6), metrics


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
