"""Writes from a handler session are indexed at commit (issue 26): by the time the session's next query is planned
(or the statement returns, with ``spark.hsh.indexOnWrite.async=false``), the index covers exactly the files on disk -- every visible data file has an index row with its size, modification time and
version tag, and no row is left of a file the write replaced -- for every way Spark inserts into a registered
table, on both of Spark's write paths (converted, its default; Hive's, ``convertMetastoreParquet=false``).

Each test also checks the other side: the rows equal what plain pyarrow reads from the folder, a failed write
indexes nothing, and with ``spark.hsh.indexOnWrite=false`` the new files stay unindexed (so the assertions above
could fail).
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from storage_handler.demo.data import generate_events
from storage_handler.stats import list_data_files, load
from storage_handler.stats.columns import MODIFICATION_TIME, PATH, SIZE, VERSION_TAG
from tests.helpers import run_hsh, session_settings

_names = itertools.count()


def _register(metastore_uri: str, root: Path, days: int = 2, partitioned: bool = True) -> tuple[str, Path]:
    name = f"iow.t{next(_names)}"
    if partitioned:
        generate_events(root, days=days, files_per_day=2, rows_per_file=20)
    else:
        generate_events(root / "_gen", days=1, files_per_day=2, rows_per_file=20)
        for i, f in enumerate(sorted((root / "_gen").rglob("*.parquet"))):
            f.rename(root / f"part-{i}.parquet")
    proc = run_hsh("register", name, str(root), "--metastore", metastore_uri)
    assert proc.returncode == 0, proc.stderr
    return name, root


def coverage(root: Path, keys: list[str]) -> tuple[set[str], set[str], int | None]:
    """(files on disk the index lacks or has stale, index rows of files no longer there, index version)."""
    files = list_data_files(str(root), keys)
    on_disk = {(p, int(s), int(m), v) for p, s, m, v in zip(files.paths.to_pylist(), files.sizes, files.mtimes,
                                                             files.versions.to_pylist(), strict=True)}
    snapshot = load(str(root), membership=())
    if snapshot is None:
        return {p for p, *_ in on_disk}, set(), None
    t = snapshot.table
    rows = set(zip(t[PATH].to_pylist(), t[SIZE].to_pylist(), t[MODIFICATION_TIME].to_pylist(),
                   t[VERSION_TAG].to_pylist(), strict=True))
    return {p for p, *_ in on_disk - rows}, {p for p, *_ in rows - on_disk}, snapshot.version


@pytest.fixture()
def events(metastore_uri: str, tmp_path: Path) -> tuple[str, Path]:
    return _register(metastore_uri, tmp_path / "events")


@pytest.fixture(params=["converted", "hive"])
def write_path(request: pytest.FixtureRequest, spark) -> Iterator[str]:  # noqa: ANN001
    """Spark's two ways of writing a Parquet Hive table."""
    spark.conf.set("spark.sql.hive.convertMetastoreParquet", "false" if request.param == "hive" else "true")
    spark.conf.set("hive.exec.dynamic.partition.mode", "nonstrict")  # Hive's path refuses a fully dynamic insert
    try:
        yield request.param
    finally:
        spark.conf.unset("spark.sql.hive.convertMetastoreParquet")
        spark.conf.unset("hive.exec.dynamic.partition.mode")


def _assert_current(root: Path, keys: list[str], spark, name: str) -> None:  # noqa: ANN001
    """The next query of the session reads every row, and by then (its prune request waits for the statement's
    hand-off: ``spark.hsh.indexOnWrite.async``) the index covers exactly the files on disk."""
    on_disk = sum(pq.read_metadata(root / p).num_rows for p in list_data_files(str(root), keys).paths.to_pylist())
    assert spark.sql(f"SELECT count(*) FROM {name}").collect()[0][0] == on_disk
    missing, stale, _ = coverage(root, keys)
    assert missing == set() and stale == set(), (missing, stale)


def test_waiting_for_the_index_the_statement_returns_with_it_current(spark, events) -> None:  # noqa: ANN001
    name, root = events
    with session_settings(spark, {"spark.hsh.indexOnWrite.async": "false"}):
        spark.sql(f"INSERT INTO {name} PARTITION (dt='2024-08-01') SELECT event_id + 9000, user_id, kind, amount, "
                  f"score, ok, ts, day FROM {name} WHERE dt = '2024-01-01'")
    missing, stale, _ = coverage(root, ["dt"])  # no query in between: the statement itself waited
    assert missing == set() and stale == set(), (missing, stale)


def test_insert_into_a_new_static_partition(spark, events, write_path, hms) -> None:  # noqa: ANN001
    name, root = events
    spark.sql(f"INSERT INTO {name} PARTITION (dt='2024-02-01') SELECT event_id + 1000, user_id, kind, amount, "
              f"score, ok, ts, day FROM {name} WHERE dt = '2024-01-01'")
    _assert_current(root, ["dt"], spark, name)
    assert any(p.startswith("dt=2024-02-01/") for p in load(str(root)).table[PATH].to_pylist())
    # the published statistics follow, just after the statement returned (issue 27)
    rows = str(sum(pq.read_metadata(root / p).num_rows for p in list_data_files(str(root), ["dt"]).paths.to_pylist()))
    deadline = time.monotonic() + 60
    while hms.get_table(*name.split(".")).parameters.get("numRows") != rows and time.monotonic() < deadline:
        time.sleep(0.2)
    assert hms.get_table(*name.split(".")).parameters.get("numRows") == rows


def test_dynamic_insert_into_existing_and_new_partitions(spark, events, write_path) -> None:  # noqa: ANN001
    name, root = events
    spark.sql(f"INSERT INTO {name} PARTITION (dt) SELECT event_id + 5000, user_id, kind, amount, score, ok, ts, day, "
              f"CASE WHEN event_id % 2 = 0 THEN '2024-01-02' ELSE '2024-03-0' || CAST(event_id % 3 AS STRING) END "
              f"FROM {name} WHERE dt = '2024-01-01'")
    _assert_current(root, ["dt"], spark, name)
    partitions = {p.split("/")[0] for p in load(str(root)).table[PATH].to_pylist()}
    assert {"dt=2024-03-00", "dt=2024-03-01", "dt=2024-03-02", "dt=2024-01-02"} <= partitions


def test_insert_overwrite_of_a_partition_drops_the_replaced_files(spark, events, write_path) -> None:  # noqa: ANN001
    name, root = events
    before = {p for p in load(str(root)).table[PATH].to_pylist() if p.startswith("dt=2024-01-02/")}
    # Spark refuses to overwrite a table the statement reads: the rows come from the files themselves
    spark.read.parquet(str(root / "dt=2024-01-01")).createOrReplaceTempView("iow_source")
    spark.sql(f"INSERT OVERWRITE TABLE {name} PARTITION (dt='2024-01-02') SELECT event_id, user_id, kind, amount, "
              f"score, ok, ts, day FROM iow_source WHERE event_id < 5")
    _assert_current(root, ["dt"], spark, name)
    after = {p for p in load(str(root)).table[PATH].to_pylist() if p.startswith("dt=2024-01-02/")}
    assert after and not (after & before)


def test_dataframe_insert_into_and_save_as_table(spark, events) -> None:  # noqa: ANN001
    name, root = events
    spark.conf.set("hive.exec.dynamic.partition.mode", "nonstrict")  # saveAsTable(format hive) is Hive's path
    df = spark.sql(f"SELECT event_id + 9000 AS event_id, user_id, kind, amount, score, ok, ts, day, "
                   f"'2024-04-01' AS dt FROM {name} WHERE dt = '2024-01-01'")
    df.write.insertInto(name)
    _assert_current(root, ["dt"], spark, name)
    df.selectExpr("event_id + 1 AS event_id", "user_id", "kind", "amount", "score", "ok", "ts", "day",
                  "'2024-04-02' AS dt").write.format("hive").mode("append").partitionBy("dt").saveAsTable(name)
    _assert_current(root, ["dt"], spark, name)
    spark.conf.unset("hive.exec.dynamic.partition.mode")
    assert {"dt=2024-04-01", "dt=2024-04-02"} <= {p.split("/")[0] for p in load(str(root)).table[PATH].to_pylist()}


def test_unpartitioned_insert_and_overwrite(spark, metastore_uri, tmp_path, write_path) -> None:  # noqa: ANN001
    name, root = _register(metastore_uri, tmp_path / "flat", partitioned=False)
    spark.sql(f"INSERT INTO {name} SELECT * FROM {name} WHERE event_id < 10")
    _assert_current(root, [], spark, name)
    outside = tmp_path / "source.parquet"
    outside.write_bytes(next(root.glob("*.parquet")).read_bytes())  # Spark refuses to overwrite what it reads
    spark.read.parquet(str(outside)).createOrReplaceTempView("iow_flat_source")
    spark.sql(f"INSERT OVERWRITE TABLE {name} SELECT * FROM iow_flat_source WHERE event_id < 30")
    _assert_current(root, [], spark, name)  # Spark's converted overwrite deletes _hsh_index too: rebuilt


def test_a_query_right_after_the_insert_prunes_the_new_files(spark, events) -> None:  # noqa: ANN001
    from storage_handler.spark import last_scan_metrics

    name, _ = events
    spark.sql(f"INSERT INTO {name} PARTITION (dt='2024-05-01') SELECT event_id + 70000, user_id, kind, amount, "
              f"score, ok, ts, day FROM {name}")
    assert spark.sql(f"SELECT count(*) FROM {name} WHERE dt = '2024-05-01' AND event_id = 70001").collect()[0][0] == 1
    metrics = last_scan_metrics(name)
    assert metrics["files_without_stats"] == 0 and metrics["files_kept"] < metrics["files_total"], metrics


def test_a_failed_write_indexes_nothing(spark, events) -> None:  # noqa: ANN001
    name, root = events
    _, _, version = coverage(root, ["dt"])
    with pytest.raises(Exception, match="no such row"):  # noqa: B017 - Spark's error class differs by line
        spark.sql(f"INSERT INTO {name} PARTITION (dt='2024-06-01') SELECT event_id, user_id, kind, amount, score, "
                  f"ok, ts, day FROM {name} WHERE raise_error('no such row') IS NULL").collect()
    assert coverage(root, ["dt"])[2] == version


def test_turned_off_the_new_files_stay_unindexed_and_the_lag_shows(spark, events, metastore_uri) -> None:  # noqa: ANN001
    from storage_handler.spark import last_scan_metrics

    name, root = events
    spark.conf.set("spark.hsh.indexOnWrite", "false")
    try:
        spark.sql(f"INSERT INTO {name} PARTITION (dt='2024-07-01') SELECT event_id, user_id, kind, amount, score, "
                  f"ok, ts, day FROM {name} WHERE dt = '2024-01-01'")
    finally:
        spark.conf.unset("spark.hsh.indexOnWrite")
    missing, _, _ = coverage(root, ["dt"])
    assert missing and all(p.startswith("dt=2024-07-01/") for p in missing)
    # still read: an unindexed file is kept by every query, and the scan says why
    assert spark.sql(f"SELECT count(*) FROM {name} WHERE dt = '2024-07-01' AND event_id = 1").collect()[0][0] == 1
    metrics = last_scan_metrics(name)
    assert metrics["files_kept_unindexed"] == len(missing) == metrics["files_kept"], metrics
    assert metrics["bytes_kept_unindexed"] == sum((root / p).stat().st_size for p in missing)
    described = json.loads(run_hsh("describe", name, "--json", "--metastore", metastore_uri).stdout)
    lag = described["unindexed_files"]
    assert (lag["count"], set(lag["files"])) == (len(missing), missing) and lag["oldest_age_seconds"] >= 0
    assert run_hsh("index", "refresh", name, "--metastore", metastore_uri).returncode == 0
    assert json.loads(run_hsh("describe", name, "--json", "--metastore", metastore_uri).stdout)[
        "unindexed_files"]["count"] == 0
    spark.sql(f"SELECT count(*) FROM {name} WHERE dt = '2024-07-01' AND event_id = 1").collect()
    assert last_scan_metrics(name)["files_kept_unindexed"] == 0


def test_an_answer_planned_long_before_it_runs_sees_a_file_another_process_added(spark, events) -> None:  # noqa: ANN001
    """``df.explain()``, then a loader copies a file into a partition, then ``df.collect()`` seconds later: Spark
    lists a partitioned table when the query runs, so the count includes the file. The index's numbers asked at
    planning are not reused past 5 s (the prune answer's bound): the aggregation is planned anew."""
    import shutil
    import time

    name, root = events
    rows = spark.sql(f"SELECT count(*) FROM {name}").collect()[0][0]
    with session_settings(spark, {"spark.hsh.aggregates.minAnsweredBytes": "0"}):
        counted = spark.sql(f"SELECT count(*) FROM {name}")
        plan = counted._jdf.queryExecution().optimizedPlan().toString()
        assert "files_from_index" in plan, plan
        source = sorted((root / "dt=2024-01-01").glob("*.parquet"))[0]
        shutil.copy(source, source.with_name("copied-by-a-loader.parquet"))
        time.sleep(5.5)
        assert counted.collect()[0][0] == rows + pq.read_metadata(source).num_rows


def test_without_observation_the_static_prefix_is_listed(spark, events) -> None:  # noqa: ANN001
    name, root = events
    with session_settings(spark, {"spark.hsh.indexOnWrite.observePartitions": "false"}):
        spark.sql(f"INSERT INTO {name} PARTITION (dt) SELECT event_id + 300, user_id, kind, amount, score, ok, ts, "
                  f"day, dt FROM {name}")
    _assert_current(root, ["dt"], spark, name)


def test_a_query_planned_before_a_write_and_run_after_it_reads_what_spark_reads(spark, events) -> None:  # noqa: ANN001
    """Spark lists a table's files when the query runs; the extension settles part of a query while it is planned
    (the prefetched prune answer, an aggregate's numbers from the index). Planned, then a write, then run: the scan
    must see the new rows (its prefetched answer was reused for 5 s), and an answer from the index must not be the
    old one (it was, for as long as the DataFrame lived): in the driver it is planned anew, and a Spark job reading
    the files it left refuses with a message saying to run the query again."""
    from py4j.protocol import Py4JJavaError

    name, _root = events
    insert = f"INSERT INTO {name} PARTITION (dt='2024-01-02') SELECT 9999, 1, 'z', 1.5, 0.5, true, " \
             "timestamp'2024-01-02 01:00:00', date'2024-01-02'"
    rows = spark.sql(f"SELECT count(*) FROM {name}").collect()[0][0]
    scan = spark.table(name).where("event_id >= 0").select("event_id")
    scan._jdf.queryExecution().optimizedPlan()  # planned: the prune request is asked now
    spark.sql(insert)
    assert len(scan.collect()) == rows + 1
    counted = spark.sql(f"SELECT count(*), max(event_id) FROM {name} WHERE event_id >= 0")
    plan = counted._jdf.queryExecution().optimizedPlan().toString()  # planned: numbers from the index now
    assert "files_from_index" in plan, plan
    spark.sql(insert)
    assert tuple(counted.collect()[0]) == (rows + 2, 9999)  # answered in the driver: planned anew
    assert tuple(spark.sql(f"SELECT count(*), max(event_id) FROM {name} WHERE event_id >= 0").collect()[0]) == \
        (rows + 2, 9999)
    # a file left to read by a Spark job (not in the driver): that job refuses, naming what to do
    with session_settings(spark, {"spark.hsh.aggregates.driverReadBytes": "0",
                                  "spark.hsh.aggregates.minAnsweredBytes": "0"}):
        partial = spark.sql(f"SELECT count(*) FROM {name} WHERE event_id >= 5")
        plan = partial._jdf.queryExecution().optimizedPlan().toString()
        assert "files_from_index" in plan and "files_read" in plan, plan
        spark.sql(insert)
        with pytest.raises(Py4JJavaError, match="was written after this query was planned"):
            partial.collect()
        assert spark.sql(f"SELECT count(*) FROM {name} WHERE event_id >= 5").collect()[0][0] == rows + 3 - 4


def test_one_shot_aggregates_run_beside_refreshes_from_another_thread(spark, events) -> None:  # noqa: ANN001
    """A Thrift server or notebook runs statements from many threads. A count planned and run in one action whose
    rest is read by a Spark job failed ("written after this query was planned") whenever another thread ran
    ``REFRESH TABLE`` or wrote in between, though plain Spark never fails there: within one action the answer and
    the files left are one snapshot, as any read beside a write may see."""
    import threading
    import time

    name, root = events
    source = sorted((root / "dt=2024-01-01").glob("*.parquet"))[0]
    pq.write_table(pq.read_table(source), source.with_name("unindexed.parquet"))  # left to a Spark job
    query = f"SELECT count(*) FROM {name} WHERE event_id >= 5"
    with session_settings(spark, {"spark.hsh.aggregates.driverReadBytes": "0",
                                  "spark.hsh.aggregates.minAnsweredBytes": "0"}):
        spark.sql(f"REFRESH TABLE {name}")
        expected = spark.sql(query).collect()[0][0]
        plan = spark.sql(query)._jdf.queryExecution().optimizedPlan().toString()
        assert "files_from_index" in plan and "files_read" in plan, plan
        done = threading.Event()

        def refresh() -> None:
            while not done.is_set():
                spark.sql(f"REFRESH TABLE {name}")
                time.sleep(0.02)

        refresher = threading.Thread(target=refresh)
        refresher.start()
        try:
            counts = [spark.sql(query).collect()[0][0] for _ in range(25)]
        finally:
            done.set()
            refresher.join()
    assert counts == [expected] * 25


def test_the_warning_for_a_write_left_unindexed_is_shown(spark) -> None:  # noqa: ANN001
    """session() sets Spark's logging to ERROR, which hid the one warning the README promises when a write's files
    could not be indexed (naming the `hsh index refresh` to run); the handler's loggers stay at WARN."""
    log4j = spark._jvm.org.apache.logging.log4j.LogManager
    assert log4j.getLogger("hsh.spark.IndexOnWrite").isWarnEnabled()
    assert not log4j.getRootLogger().isWarnEnabled()  # Spark's own chatter stays quiet
