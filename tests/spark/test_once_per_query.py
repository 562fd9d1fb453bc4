"""Each costly step of planning a scan happens once per query, on every read path (issue 30).

The steps: the prune round trip (one scan recorded per query: the size estimate, the listing and the prefetch
share one answer), the metastore calls of the handler's partition listing (names, then the survivors), the index
load, and Spark's own table lookup. Counted, not timed: a step done twice shows up as a count of two whatever the
machine's speed.
"""

from __future__ import annotations

import collections
import json
import time
from pathlib import Path

import pytest

from storage_handler.spark import read_table, scan_history
from tests.spark.typed_data import register_typed

TABLE = "once.typed"
WHERE = "region = 'eu' AND c_bigint < 100"  # prunes partitions (metastore) and files (index)


@pytest.fixture(scope="module")
def typed(tmp_path_factory: pytest.TempPathFactory, metastore_uri: str) -> Path:
    return register_typed(tmp_path_factory.mktemp("once") / "typed", metastore_uri, TABLE)


def _new_scans(before: int, expected: int = 1, timeout: float = 10.0) -> list[dict]:
    """The scans recorded since ``before`` (the prune service records after answering: wait briefly)."""
    deadline = time.monotonic() + timeout
    while True:
        scans = scan_history(TABLE)[before:]
        if len(scans) >= expected or time.monotonic() > deadline:
            time.sleep(0.3)  # a second, unexpected record would arrive right behind the first
            return scan_history(TABLE)[before:]
        time.sleep(0.05)


def _assert_once(scans: list[dict], path: str) -> None:
    assert len(scans) == 1, [s.get("path") for s in scans]
    scan = scans[0]
    assert scan["path"] == path
    assert scan["partitions_kept"] < scan["partitions_total"] and scan["files_kept"] < scan["files_total"]
    assert scan["metastore_calls"] == 2, scan  # the partition names, then the surviving partitions
    assert scan["index_loads"] == 1, scan


def _jvm_steps(spark) -> collections.Counter:  # noqa: ANN001
    return collections.Counter(e["step"] for e in json.loads(spark._jvm.hsh.spark.Timings.drain()))


def _hive_calls(spark) -> int:  # noqa: ANN001
    return int(spark._jvm.org.apache.spark.metrics.source.HiveCatalogMetrics.METRIC_HIVE_CLIENT_CALLS().getCount())


@pytest.mark.parametrize("how", ["spark.sql", "dataframe"])
def test_a_query_plans_its_scan_once(spark, typed: Path, how: str) -> None:  # noqa: ANN001
    for _ in range(3):  # the third run is counted: the first two fill caches (the table definition takes two)
        before, calls = len(scan_history(TABLE)), _hive_calls(spark)
        _jvm_steps(spark)
        if how == "spark.sql":
            rows = spark.sql(f"SELECT count(*) FROM {TABLE} WHERE {WHERE}").collect()
        else:
            rows = spark.table(TABLE).where(WHERE).groupBy().count().collect()
        scans, steps, hive = _new_scans(before), _jvm_steps(spark), _hive_calls(spark) - calls
    assert rows[0][0] > 0
    _assert_once(scans, "spark-native")
    assert steps["prune_round_trip"] == 1, steps  # the size estimate and the listing reused the prefetched answer
    assert hive <= 1, hive  # the check of the table definition, once


def test_read_table_plans_its_scan_once(spark, typed: Path) -> None:  # noqa: ANN001
    read_table(spark, TABLE, where=WHERE).count()
    before = len(scan_history(TABLE))
    _jvm_steps(spark)
    assert read_table(spark, TABLE, where=WHERE).count() > 0
    _assert_once(_new_scans(before), "read_table")
    assert _jvm_steps(spark)["prune_round_trip"] == 0  # read_table plans in this process, then reads fixed files


def test_a_hiveserver2_query_plans_its_scan_once(hiveserver2, typed: Path) -> None:  # noqa: ANN001
    from pyhive import hive

    host, port = hiveserver2
    with hive.connect(host=host, port=port) as conn:
        cursor = conn.cursor()
        for _ in range(2):
            before = len(scan_history(TABLE))
            cursor.execute(f"SELECT count(*) FROM {TABLE} WHERE {WHERE}")
            assert cursor.fetchall()[0][0] > 0
            scans = _new_scans(before)
    _assert_once(scans, "spark-native")


@pytest.mark.parametrize("where", [None, WHERE], ids=["unfiltered", "filtered"])
def test_a_held_dataframe_prunes_afresh_for_every_action(spark, typed: Path, where: str | None) -> None:  # noqa: ANN001
    """A DataFrame made once and acted on twice (a notebook's ``t = spark.table(...)``) lists and prunes for each
    action: the answer its size estimate and listing share belongs to one query, never to the next one."""
    held = spark.table(TABLE) if where is None else spark.table(TABLE).where(where)
    held.select("c_bigint").collect()
    for _ in range(2):
        before = len(scan_history(TABLE))
        held.select("c_bigint").collect()
        scans = _new_scans(before)
        assert len(scans) == 1, [s.get("path") for s in scans]  # none: the last action's answer was reused
