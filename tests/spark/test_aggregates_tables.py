"""COUNT, MIN and MAX answered from the index (issue 28) on the tables users have: partitions at their own
locations, group keys, columns some files lack, plans above the answer, DataFrames, files changed after indexing,
the threshold, and HiveServer2 clients."""

from __future__ import annotations

import datetime as dt
import os
import re

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.spark.aggregate_tables import (
    DRIVER_BYTES,
    answered_steps,
    canonical,
    executed_plan,
    files_from_index,
    register_pair,
    rewrites,
    steps_named,
    with_jobs,
)

pytestmark = pytest.mark.usefixtures("answer_whatever_it_saves")


def test_partitions_at_their_own_locations_are_answered_and_read_with_the_metastore_s_values(
        spark, catalog, metastore_uri, tmp_path) -> None:  # noqa: ANN001
    """A partition added with ``LOCATION`` outside the table's folder, under a path that names no ``k=v``: its
    partition value comes from the metastore, whether the driver reads its file or the index answers it."""
    from tests.helpers import run_hsh

    root = tmp_path / "table"
    for p in range(2):
        (root / f"p={p}").mkdir(parents=True)
        pq.write_table(pa.table({"i": pa.array(range(p * 10, p * 10 + 10), pa.int64())}),
                       root / f"p={p}" / "part-0.parquet")
    handled, plain = register_pair(catalog, root)
    away = tmp_path / "elsewhere" / "batch 7"  # no p=... anywhere in it; a space too
    away.mkdir(parents=True)
    pq.write_table(pa.table({"i": pa.array([70, 71, 72, None], pa.int64())}), away / "part-0.parquet")
    for name in (handled, plain):
        spark.sql(f"ALTER TABLE {name} ADD PARTITION (p=7) LOCATION 'file://{away}'")
    sql = "SELECT p, count(*) AS n, count(i) AS c, min(i) AS lo, max(i) AS hi FROM {t} GROUP BY p ORDER BY p"
    expected = spark.sql(sql.format(t=plain)).collect()
    assert [(r["p"], r["n"], r["c"], r["hi"]) for r in expected] == [(0, 10, 10, 9), (1, 10, 10, 19), (7, 4, 3, 72)]
    answered_steps(spark)
    # p=7 not yet indexed: its row count unknown, so read by a Spark job, never in the driver
    ours, jobs = with_jobs(spark, lambda: spark.sql(sql.format(t=handled)).collect())
    assert ours == expected and jobs >= 1
    assert [(e["answered"], e["read"]) for e in answered_steps(spark)] == [(2, 1)]  # a rewrite, not in the driver
    refreshed = run_hsh("follow", handled, "--once", "--metastore", metastore_uri)  # indexes p=7
    assert refreshed.returncode == 0, refreshed.stderr
    assert spark.sql(sql.format(t=handled)).collect() == expected  # now every file answered from the index
    driver = [e for e in answered_steps(spark) if e["step"] == "aggregate_in_driver"]
    assert [(e["answered"], e["read"]) for e in driver] == [(3, 0)], driver
    # p=7's file cut by the filter (its null and 71 do not match): read in the driver, with the metastore's p
    cut = sql.replace("GROUP BY", "WHERE i <> 71 GROUP BY")
    ours = spark.sql(cut.format(t=handled)).collect()  # (the ORDER BY above the answer runs its own jobs)
    assert ours == spark.sql(cut.format(t=plain)).collect() and ours[-1]["p"] == 7
    driver = [e for e in answered_steps(spark) if e["step"] == "aggregate_in_driver"]
    assert [(e["answered"], e["read"], e["rows_read"]) for e in driver] == [(2, 1, 4)], driver


@pytest.mark.parametrize("driver", [True, False])
def test_group_keys_are_the_partition_values_spark_reads(spark, catalog, tmp_path, driver: bool) -> None:  # noqa: ANN001
    """Grouped by partition columns whose folder names Hive escapes (``:``, ``=``, ``%``, ``/``), with non-ASCII
    and Hive's default (null) partition: each group's key, answered or read, is the value Spark reads."""
    from storage_handler.hive_paths import escape_path_name

    root = tmp_path / "t"
    values = ["a:b", "x=y", "50%x", "sl/ash", "é ü", None]
    for n, s in enumerate(values):
        folder = root / f"s={'__HIVE_DEFAULT_PARTITION__' if s is None else escape_path_name(s)}" / \
            f"d={dt.date(2024, 1, 1 + n % 2)}"
        folder.mkdir(parents=True)
        pq.write_table(pa.table({"i": pa.array(range(n, n + 5), pa.int64())}), folder / "part-0.parquet")
    handled, plain = register_pair(catalog, root)
    spark.conf.set(DRIVER_BYTES, str(4 << 20) if driver else "0")
    for sql in ("SELECT s, d, count(*), min(i), max(i) FROM {t} GROUP BY s, d",
                "SELECT d, count(*), max(i) FROM {t} WHERE i >= 2 GROUP BY d",  # cut files: read
                "SELECT s, count(i) FROM {t} WHERE s IS NULL OR s >= 'x' GROUP BY s",
                # d is a string column: Spark compares cast(d AS date), which no data-source filter expresses,
                # so it is evaluated on each partition's values (PartitionConjuncts) and the rest is proven
                "SELECT d, count(*), max(i) FROM {t} WHERE d = DATE '2024-01-02' AND i >= 0 GROUP BY d",
                "SELECT count(*), min(i) FROM {t} WHERE upper(s) IN ('A:B', 'É Ü') OR d < DATE '2024-01-02'"):
        answered_steps(spark)
        ours = canonical(spark.sql(sql.format(t=handled)).collect())
        assert [e["answered"] > 0 for e in rewrites(spark)] == [True], sql
        assert ours == canonical(spark.sql(sql.format(t=plain)).collect()), sql
    keys = {r[0] for r in spark.sql(f"SELECT s, count(*) FROM {handled} GROUP BY s").collect()}
    assert keys == set(values)


def test_a_python_udf_on_a_partition_column_plans_as_spark_plans_it(spark, catalog, tmp_path) -> None:  # noqa: ANN001
    """A Python UDF over partition columns is extracted by Spark's planning after the rewrite: it cannot be
    evaluated on partition values there, so the query is answered as it is without the handler."""
    from pyspark.sql.types import StringType

    root = tmp_path / "t"
    for region in ("eu", "us"):
        (root / f"region={region}").mkdir(parents=True)
        pq.write_table(pa.table({"i": pa.array(range(5), pa.int64())}), root / f"region={region}" / "part-0.parquet")
    handled, plain = register_pair(catalog, root)
    spark.udf.register("hsh_test_up", lambda v: None if v is None else v.upper(), StringType())
    sql = "SELECT count(*), max(i) FROM {t} WHERE hsh_test_up(region) = 'EU'"
    steps_named(spark, "")
    assert spark.sql(sql.format(t=handled)).collect() == spark.sql(sql.format(t=plain)).collect() == [(5, 4)]
    # recognised up front: not left to the rule's fallback for a conjunct it fails to evaluate (which, checked by
    # removing the recognition, also gives these rows)
    assert steps_named(spark, "aggregate_partition_conjuncts_failed") == 0


@pytest.mark.parametrize("shape", [
    "SELECT * FROM ({agg}) a JOIN (SELECT DATE '2024-01-03' AS d UNION ALL SELECT DATE '2024-01-09') b USING (d)",
    "SELECT * FROM ({agg}) a WHERE n > (SELECT count(*) / 20 FROM {t} WHERE i < 33)",  # a scalar subquery too
    "SELECT d, n FROM ({agg}) UNION ALL SELECT d, n FROM ({agg})",
    "SELECT * FROM ({agg}) ORDER BY hi DESC LIMIT 2",
    "SELECT d, n FROM ({agg}) UNION ALL SELECT d, hi FROM ({agg}) ORDER BY n",  # a sort ships itself and its child
    "SELECT count(*), sum(n) FROM ({agg})",  # an aggregation above the answer (with a shuffle between)
])
@pytest.mark.parametrize("driver", [True, False])
def test_plans_above_the_answer_equal_plain_spark(spark, dated, shape: str, driver: bool) -> None:  # noqa: ANN001
    """Operators above the answer take its rows as Spark's nodes take a child's: by collecting it, or as one
    partition shipped to the executors (a join, a union, a sort and a second aggregation over it)."""
    handled, plain, _ = dated
    agg = "SELECT min(d) AS d, count(*) AS n, max(i) AS hi FROM {t} WHERE i >= 25"  # day 3 cut: one file read
    sql = shape.replace("{agg}", agg)
    spark.conf.set(DRIVER_BYTES, str(4 << 20) if driver else "0")
    answered_steps(spark)
    ours = canonical(spark.sql(sql.format(t=handled)).collect())
    assert any(e["step"] == "aggregate_in_driver" for e in answered_steps(spark)) == driver
    assert ours == canonical(spark.sql(sql.format(t=plain)).collect()) and ours
    df = spark.sql(sql.format(t=handled)).cache()  # built through execute(): the answer as an RDD
    try:
        assert canonical(df.collect()) == ours and df.count() == len(ours)
    finally:
        df.unpersist()


@pytest.mark.parametrize("driver", [True, False])
def test_columns_in_another_case_and_columns_some_files_lack(spark, catalog, tmp_path, driver: bool) -> None:  # noqa: ANN001
    """The files say ``UserId`` and ``Extra`` (the metastore: ``userid``, ``extra``), and one file has no
    ``Extra`` at all: Spark reads it as all null, so the index's numbers for it must say the same."""
    root = tmp_path / "t"
    root.mkdir()
    pq.write_table(pa.table({"UserId": pa.array([1, 2, 3], pa.int64())}), root / "a.parquet")
    pq.write_table(pa.table({"UserId": pa.array([4, 5, None], pa.int64()),
                             "Extra": pa.array([7, None, 9], pa.int32())}), root / "b.parquet")
    handled, plain = register_pair(catalog, root)
    spark.conf.set(DRIVER_BYTES, str(4 << 20) if driver else "0")
    for sql, answered in [("SELECT count(userid), max(userid), min(UserId), count(*) FROM {t}", 2),
                          ("SELECT count(extra), max(extra), min(EXTRA), count(*) FROM {t}", 2),
                          ("SELECT count(extra), max(extra), count(*) FROM {t} WHERE userid >= 1", 1),
                          ("SELECT count(USERID), max(Extra) FROM {t} WHERE Extra IS NULL", 1)]:
        answered_steps(spark)
        ours = canonical(spark.sql(sql.format(t=handled)).collect())
        assert [e["answered"] for e in rewrites(spark)] == [answered], sql
        assert ours == canonical(spark.sql(sql.format(t=plain)).collect()), sql


def test_dataframes_get_it_too(spark, dated) -> None:  # noqa: ANN001
    from pyspark.sql import functions as F

    handled, plain, _ = dated
    where = "d >= DATE '2024-01-05'"
    answered_steps(spark)
    assert spark.table(handled).where(where).count() == spark.table(plain).where(where).count() == 60
    assert rewrites(spark)[-1]["answered"] == 6  # days 5..10: one file each
    assert spark.table(handled).where(where).agg(F.max("i"), F.min("d")).collect() == \
        spark.table(plain).where(where).agg(F.max("i"), F.min("d")).collect()
    assert rewrites(spark)[-1]["answered"] == 6


def test_a_file_changed_after_indexing_is_read_not_answered(spark, dated, catalog) -> None:  # noqa: ANN001

    handled, plain, root = dated
    victim = root / "part-3.parquet"
    stat = victim.stat()
    try:
        # the same rows but one: a different file behind the index (its version tag changed)
        pq.write_table(pa.table({"i": pa.array(range(30, 39), pa.int64()),
                                 "d": pa.array([dt.date(2024, 1, 4)] * 9, pa.date32()),
                                 "s": pa.array(["v"] * 9)}), victim)
        answered_steps(spark)
        sql = "SELECT count(*), max(i) FROM {} WHERE d <= DATE '2024-01-05'"
        assert spark.sql(sql.format(handled)).collect() == spark.sql(sql.format(plain)).collect()
        step = rewrites(spark)[-1]
        assert step["answered"] == 4 and step["read"] == 1  # part-3 is read; four unchanged files answered
    finally:
        os.utime(victim, ns=(stat.st_atime_ns, stat.st_mtime_ns))


def test_small_savings_are_read_and_nothing_left_to_read_is_answered(spark, catalog, tmp_path) -> None:  # noqa: ANN001
    root = tmp_path / "days"
    root.mkdir()
    for k in range(4):  # its own table: the module's `dated` one has a file changed behind the index
        pq.write_table(pa.table({"i": pa.array(range(k * 10, k * 10 + 10), pa.int64()),
                                 "d": pa.array([dt.date(2024, 2, 1 + k)] * 10, pa.date32()),
                                 "s": pa.array(["v"] * 10)}), root / f"part-{k}.parquet")
    handled, _ = register_pair(catalog, root)
    spark.conf.set("spark.hsh.aggregates.minAnsweredBytes", str(1 << 30))
    mixed = f"SELECT count(*) FROM {handled} WHERE i < 35"
    whole = f"SELECT count(*) FROM {handled} WHERE d >= DATE '2024-02-01'"
    # the rest is small: read in the driver, no job at all -- whatever the index saves is worth it
    assert "3 files answered from the index, 1 file (" in executed_plan(spark, mixed)
    spark.conf.set(DRIVER_BYTES, "0")
    try:
        # three files whole (answered) and one cut by the filter (read): an extra job for a few KB -- read them all
        assert files_from_index(executed_plan(spark, mixed)) is None
        assert "count_all_of_4_files_from_index" in executed_plan(spark, whole)  # nothing to read: always worth it
        spark.conf.set("spark.hsh.aggregates.minAnsweredBytes", "0")
        assert "count_all_of_3_files_from_index" in executed_plan(spark, mixed)  # the same query, below the threshold
    finally:
        spark.conf.unset(DRIVER_BYTES)


def test_a_declined_query_plans_without_asking_until_its_table_is_refreshed(spark, catalog, tmp_path) -> None:  # noqa: ANN001
    """The rule's ask waits inside the optimizer, where the scan's own request would overlap with planning: a query
    found not worth rewriting is not asked about again (for a minute), unless its table was refreshed."""
    root = tmp_path / "days"
    root.mkdir()
    for k in range(4):
        pq.write_table(pa.table({"i": pa.array(range(k * 10, k * 10 + 10), pa.int64())}), root / f"p-{k}.parquet")
    handled, plain = register_pair(catalog, root)
    spark._jvm.hsh.spark.AggregateDecisions.clear()
    spark.conf.set("spark.hsh.aggregates.minAnsweredBytes", str(1 << 30))
    spark.conf.set(DRIVER_BYTES, "0")  # the rest is read by Spark's plan, so the threshold decides
    mixed = f"SELECT count(*) FROM {handled} WHERE i < 35"
    first = re.sub(r"(#|plan_id=)\d+", "", executed_plan(spark, mixed))  # the same plan but for the expression ids
    steps_named(spark, "")
    assert re.sub(r"(#|plan_id=)\d+", "", executed_plan(spark, mixed)) == first and "files_from_index" not in first
    assert steps_named(spark, "aggregate_declined_recently") == 1  # the second run did not ask
    assert spark.sql(mixed).collect() == spark.sql(f"SELECT count(*) FROM {plain} WHERE i < 35").collect()
    spark.sql(f"REFRESH TABLE {handled}")
    steps_named(spark, "")
    executed_plan(spark, mixed)
    assert steps_named(spark, "aggregate_declined_recently") == 0  # refreshed: asked again (and declined again)
    spark.conf.set("spark.hsh.aggregates.minAnsweredBytes", "0")  # another threshold: another decision
    assert "count_all_of_3_files_from_index" in executed_plan(spark, mixed)


def test_hiveserver2_clients_get_it(hiveserver2, dated) -> None:  # noqa: ANN001
    from pyhive import hive

    handled, plain, _ = dated
    host, port = hiveserver2
    with hive.connect(host=host, port=port) as conn:
        cursor = conn.cursor()
        cursor.execute("SET spark.hsh.aggregates.minAnsweredBytes=0")  # a tiny table (see the fixture above)
        results = []
        for table in (handled, plain):
            cursor.execute(f"SELECT count(*), min(i), max(d) FROM {table} WHERE d > DATE '2024-01-02'")
            results.append(cursor.fetchall())
        assert results[0] == results[1]
        cursor.execute(f"EXPLAIN SELECT count(*) FROM {handled} WHERE d > DATE '2024-01-02'")
        assert files_from_index(str(cursor.fetchall())) is not None


@pytest.mark.parametrize("driver", [True, False])
def test_a_filter_the_index_holds_only_in_part_proves_no_file(spark, catalog, tmp_path, driver: bool) -> None:  # noqa: ANN001
    """``LIKE '%y%'``, ``contains``, ``NOT LIKE`` and binary comparisons reach the handler as filters but become
    YES_NO_NULL in the SearchArgument, which Hive's normalization drops from an AND (or lets swallow an OR / NOT):
    what is left proves a weaker condition, so no file may count as fully matched. (Found by review: these
    counted every row.)"""
    root = tmp_path / "t"
    root.mkdir()
    for k in range(3):
        pq.write_table(pa.table({"i": pa.array([10 + k, 11 + k, 12 + k], pa.int64()),
                                 "s": pa.array(["a", "b", "xyz"]), "bin": pa.array([b"a", None, b"c"])}),
                       root / f"part-{k}.parquet")
    handled, plain = register_pair(catalog, root)
    spark.conf.set(DRIVER_BYTES, str(4 << 20) if driver else "0")
    for sql in ("SELECT count(*) FROM {t} WHERE s LIKE '%y%'",
                "SELECT count(*), max(i) FROM {t} WHERE i > 0 AND s LIKE '%z'",
                "SELECT count(*) FROM {t} WHERE i > 0 AND NOT (s LIKE '%y%')",
                "SELECT count(*), min(i) FROM {t} WHERE contains(s, 'y') OR i > 100",
                "SELECT count(*) FROM {t} WHERE NOT (s LIKE 'x%')",
                "SELECT count(*) FROM {t} WHERE bin IS NOT NULL",
                "SELECT count(*) FROM {t} WHERE i > 0 AND bin = X'61'"):
        answered_steps(spark)
        ours = canonical(spark.sql(sql.format(t=handled)).collect())
        assert ours == canonical(spark.sql(sql.format(t=plain)).collect()), sql
        assert all(e["answered"] == 0 for e in rewrites(spark)), sql


def test_case_sensitive_sessions_count_rows_only(spark, catalog, tmp_path) -> None:  # noqa: ANN001
    """With ``spark.sql.caseSensitive`` Spark reads the file's ``I`` as a missing column ``i`` (all null), while
    the index matched it ignoring case: only ``count(*)`` may come from the index then."""
    root = tmp_path / "t"
    root.mkdir()
    pq.write_table(pa.table({"I": pa.array([1, 2, None], pa.int64())}), root / "part-0.parquet")
    handled, plain = register_pair(catalog, root)
    spark.conf.set("spark.sql.caseSensitive", "true")
    try:
        for sql, answered in (("SELECT count(i), max(i), count(*) FROM {t}", []), ("SELECT count(*) FROM {t}", [1])):
            answered_steps(spark)
            ours = canonical(spark.sql(sql.format(t=handled)).collect())
            assert ours == canonical(spark.sql(sql.format(t=plain)).collect()), sql
            assert [e["answered"] for e in rewrites(spark)] == answered, sql
    finally:
        spark.conf.unset("spark.sql.caseSensitive")


def test_grouping_by_a_double_partition_column_is_left_to_spark(spark, catalog, tmp_path) -> None:  # noqa: ANN001
    """Spark's aggregation makes ``-0.0`` and ``0.0`` one group; the index's answer would keep two."""
    root = tmp_path / "t"
    for v in ("0.0", "-0.0", "1.5"):
        (root / f"pd={v}").mkdir(parents=True)
        pq.write_table(pa.table({"i": pa.array([1, 2], pa.int64())}), root / f"pd={v}" / "part-0.parquet")
    handled, plain = register_pair(catalog, root)
    for name in (handled, plain):
        db, table = name.split(".")
        t = catalog.get_table(db, table)
        t.partitionKeys[0].type = "double"
        catalog.alter_table(t)
        spark.catalog.refreshTable(name)
    sql = "SELECT pd, count(*), max(i) FROM {t} GROUP BY pd"
    answered_steps(spark)
    ours = canonical(spark.sql(sql.format(t=handled)).collect())
    assert ours == canonical(spark.sql(sql.format(t=plain)).collect()) and len(ours) == 2
    assert rewrites(spark) == []


def test_dates_spark_rebases_are_read_not_answered_or_pruned(spark, catalog, tmp_path) -> None:  # noqa: ANN001
    """Under ``datetimeRebaseModeInRead=LEGACY`` Spark reads the stored 1000-01-01 as 0999-12-27 (hybrid Julian
    calendar): the footer's bounds describe other values than Spark's, so they neither answer nor prune."""
    root = tmp_path / "t"
    root.mkdir()
    pq.write_table(pa.table({"i": pa.array([1, 2], pa.int64()),
                             "d": pa.array([dt.date(1000, 1, 1), dt.date(1200, 3, 1)], pa.date32())}),
                   root / "part-0.parquet")
    handled, plain = register_pair(catalog, root)
    spark.conf.set("spark.sql.parquet.datetimeRebaseModeInRead", "LEGACY")
    try:
        for sql in ("SELECT min(d), max(d), count(*) FROM {t}",
                    "SELECT count(*) FROM {t} WHERE d >= DATE '1000-01-01'",
                    "SELECT i FROM {t} WHERE d < DATE '0999-12-30'"):
            ours = canonical(spark.sql(sql.format(t=handled)).collect())
            assert ours == canonical(spark.sql(sql.format(t=plain)).collect()), sql
        assert canonical(spark.sql(f"SELECT i FROM {handled} WHERE d < DATE '0999-12-30'").collect()) == [(1,)]
    finally:
        spark.conf.unset("spark.sql.parquet.datetimeRebaseModeInRead")


def test_counts_of_nested_columns_are_read(spark, catalog, tmp_path) -> None:  # noqa: ANN001
    """Complex columns are not in the index (``layout.indexed_columns``): a nested column's own nulls are not what
    every footer layout counts (a bare repeated field has none of its own), so its count is left to Spark's
    reader, while count(*) beside it is still answered."""
    root = tmp_path / "t"
    root.mkdir()
    pq.write_table(pa.table({"a": pa.array([[1], None, [], [2, None]], pa.list_(pa.int32())),
                             "st": pa.array([{"x": 1}, None, {"x": None}, {"x": 4}], pa.struct([("x", pa.int32())])),
                             "i": pa.array([1, 2, 3, 4], pa.int64())}), root / "part-0.parquet")
    handled, plain = register_pair(catalog, root)
    for sql, answered in (("SELECT count(a), count(st), count(*) FROM {t}", []), ("SELECT count(*) FROM {t}", [1])):
        answered_steps(spark)
        ours = canonical(spark.sql(sql.format(t=handled)).collect())
        assert ours == canonical(spark.sql(sql.format(t=plain)).collect()), sql
        assert [e["answered"] for e in rewrites(spark)] == answered, sql
