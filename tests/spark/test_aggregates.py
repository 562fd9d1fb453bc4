"""COUNT, MIN and MAX answered from the index for fully matched files, the rest read (issue 28).

Differential: on random partitioned tables and random filters, every aggregate query through the handler returns
exactly what plain Spark returns from the same files (the folder registered a second time without the handler's
parameters, read natively in the same session) and what DuckDB computes from the files themselves. The tables
are made to break an answer taken from the index wrongly: nulls and all-null columns, empty files, files written
without statistics, a file added after indexing (unindexed), a file rewritten after indexing (changed), strings
over 4 KiB (writers drop or truncate their bounds), NaN in doubles, timestamps, decimals and dates.
"""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers import examples
from tests.spark.aggregate_tables import (
    COUNTER,
    DRIVER_BYTES,
    DRIVER_ROWS,
    FILTERS,
    answered_steps,
    executed_plan,
    files_from_index,
    open_in_jvm,
    register_pair,
    run_case,
    steps_named,
    with_jobs,
)

pytestmark = pytest.mark.usefixtures("answer_whatever_it_saves")


@settings(max_examples=examples(20), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10**6), template=FILTERS, n=st.integers(0, 250), m=st.integers(0, 250),
       p=st.integers(0, 2), day=st.integers(1, 28), mutate=st.booleans(), driver=st.booleans())
def test_aggregates_equal_plain_spark_and_duckdb(spark, catalog, tmp_path_factory, seed: int,  # noqa: ANN001
                                                 template: str, n: int, m: int, p: int, day: int,
                                                 mutate: bool, driver: bool) -> None:
    root = tmp_path_factory.mktemp("agg") / "table"
    run_case(spark, catalog, root, seed, template.format(n=n, m=m, p=p, day=day), mutate, driver)


def test_explain_shows_the_rewrite_only_where_it_applies(spark, dated) -> None:  # noqa: ANN001
    handled, _, _ = dated
    where = "d BETWEEN DATE '2024-01-03' AND DATE '2024-01-07'"
    query = f"SELECT count(*), max(i) FROM {handled} WHERE {where}"
    plan = executed_plan(spark, query)  # nothing left to read: answered in the driver, no scan, no job
    assert plan.startswith("HshAggregateFromIndex") and "5 files answered from the index, 0 files" in plan
    assert "FileScan" not in plan
    spark.conf.set(DRIVER_BYTES, "0")  # Spark's plan of the same rewrite
    try:
        plan = executed_plan(spark, query)
    finally:
        spark.conf.unset(DRIVER_BYTES)
    assert "LocalTableScan" in plan and "count_all_of_5_files_from_index" in plan
    assert "files_read" not in plan and "FileScan" not in plan and "HshAggregateFromIndex" not in plan
    for sql in (f"SELECT sum(i) FROM {handled} WHERE {where}",  # not an answerable function
                f"SELECT s, count(*) FROM {handled} WHERE {where} GROUP BY s",  # grouped by a data column
                f"SELECT count(DISTINCT i) FROM {handled} WHERE {where}",
                f"SELECT max(i + 1) FROM {handled} WHERE {where}",  # an expression over a column
                f"SELECT min(s) FROM {handled} WHERE {where}"):  # strings: no exact bounds
        assert files_from_index(executed_plan(spark, sql)) is None, sql
    spark.conf.set("spark.hsh.aggregates", "false")
    try:
        assert files_from_index(executed_plan(spark, f"SELECT count(*) FROM {handled} WHERE {where}")) is None
    finally:
        spark.conf.unset("spark.hsh.aggregates")


def test_answered_in_the_driver_runs_no_job_and_equals_plain_spark(spark, dated) -> None:  # noqa: ANN001
    from pyspark.sql import functions as F

    handled, plain, _ = dated
    where = "d BETWEEN DATE '2024-01-03' AND DATE '2024-01-07' AND i % 10 < 6"  # every file cut: all read
    sql = "SELECT count(*) AS n, min(i) AS lo, max(d) AS hi, count(s) AS c FROM {t} WHERE d >= DATE '2024-01-04'"
    ours, jobs = with_jobs(spark, lambda: spark.sql(sql.format(t=handled)).collect())
    assert ours == spark.sql(sql.format(t=plain)).collect() and ours[0]["n"] == 70
    assert jobs == 0  # seven files answered, none read: no job
    steps = answered_steps(spark)
    assert [(e["answered"], e["read"], e["rows_read"]) for e in steps if e["step"] == "aggregate_in_driver"] == [
        (7, 0, 0)]  # no file read
    count, jobs = with_jobs(spark, lambda: spark.table(handled).where("d >= DATE '2024-01-04' AND i < 55").count())
    assert count == spark.table(plain).where("d >= DATE '2024-01-04' AND i < 55").count() == 25 and jobs == 0
    # no file whole: nothing answered, so nothing rewritten: Spark's own plan (its jobs)
    mixed = f"SELECT count(*) FROM {{t}} WHERE {where}"
    assert files_from_index(executed_plan(spark, mixed.format(t=handled))) is None
    # an operator above the answer (a sort) gets its rows as one partition
    grouped = ("SELECT d, count(*) AS n, max(i) AS hi FROM {t} WHERE d >= DATE '2024-01-08' GROUP BY d "
               "ORDER BY d DESC")
    answered_steps(spark)
    ours = spark.sql(grouped.format(t=handled)).collect()
    assert ours == spark.sql(grouped.format(t=plain)).collect() and len(ours) == 3
    df = spark.table(handled).where("d >= DATE '2024-01-06'").agg(F.min("i"), F.max("i"), F.count(F.lit(1)))
    assert df.collect() == spark.table(plain).where("d >= DATE '2024-01-06'").agg(
        F.min("i"), F.max("i"), F.count(F.lit(1))).collect()


def test_several_files_read_in_the_driver_interpreted_or_generated(spark, dated) -> None:  # noqa: ANN001
    """Four files read in the driver, with the expressions interpreted (few rows: the default) and as generated
    code: both answer in the driver, every time, with plain Spark's rows -- a fault there would be hidden from a
    comparison of rows, since Spark's plan then runs instead. Files 3-6 are cut by the filter (read), 7-9 are
    whole (answered), 0-2 pruned."""
    handled, plain, _ = dated
    sql = "SELECT count(*) AS n, max(i) AS hi, min(i) AS lo FROM {t} WHERE i >= 35 AND i <> 47 AND i <> 53 AND i <> 66"
    expected = spark.sql(sql.format(t=plain)).collect()
    assert expected[0]["n"] == 65 - 3  # 35..99 but 47, 53 and 66
    for interpreted in ("10000", "0"):  # the few rows read interpreted (default), and as generated code
        spark.conf.set("spark.hsh.aggregates.driverInterpretedRows", interpreted)
        try:
            json.loads(spark._jvm.hsh.spark.Timings.drain())
            for _ in range(12):
                assert spark.sql(sql.format(t=handled)).collect() == expected
            steps = json.loads(spark._jvm.hsh.spark.Timings.drain())
        finally:
            spark.conf.unset("spark.hsh.aggregates.driverInterpretedRows")
        assert not [e for e in steps if e["step"] == "aggregate_in_driver_failed"]
        driver = [e for e in steps if e["step"] == "aggregate_in_driver"]
        assert [(e["answered"], e["read"], e["rows_read"], e["interpreted"]) for e in driver] == [
            (3, 4, 40, 1 if interpreted == "10000" else 0)] * 12


def test_files_left_to_read_above_the_driver_limit_are_read_by_spark(spark, dated) -> None:  # noqa: ANN001
    handled, plain, _ = dated
    sql = "SELECT count(*), max(i) FROM {t} WHERE i >= 15 AND d <= DATE '2024-01-05'"  # day 2 cut: read
    spark.conf.set(DRIVER_BYTES, "1")  # below any file's size
    plan = executed_plan(spark, sql.format(t=handled))
    assert "HshAggregateFromIndex" not in plan and "count_all_of_3_files_from_index" in plan
    assert "count_all_of_1_files_read" in plan
    ours, jobs = with_jobs(spark, lambda: spark.sql(sql.format(t=handled)).collect())
    assert ours == spark.sql(sql.format(t=plain)).collect() and jobs >= 1
    spark.conf.unset(DRIVER_BYTES)
    plan = executed_plan(spark, sql.format(t=handled))
    assert "HshAggregateFromIndex" in plan and "3 files answered from the index, 1 file (" in plan
    ours, jobs = with_jobs(spark, lambda: spark.sql(sql.format(t=handled)).collect())
    assert ours == spark.sql(sql.format(t=plain)).collect() and jobs == 0
    assert [e["rows_read"] for e in answered_steps(spark) if e["step"] == "aggregate_in_driver"][-1] == 10  # day 2's
    # the reader is kept between queries under every setting it is built from: a change builds another
    assert spark.sql(sql.format(t=handled)).collect() == ours
    assert [e["readers_built"] for e in answered_steps(spark) if e["step"] == "aggregate_in_driver"] == [0]
    spark.conf.set("spark.sql.parquet.enableVectorizedReader", "false")
    try:
        assert spark.sql(sql.format(t=handled)).collect() == ours
    finally:
        spark.conf.unset("spark.sql.parquet.enableVectorizedReader")
    hadoop = spark.sparkContext._jsc.hadoopConfiguration()
    hadoop.set("hsh.test.reader", str(next(COUNTER)))
    try:
        assert spark.sql(sql.format(t=handled)).collect() == ours
    finally:
        hadoop.unset("hsh.test.reader")
    assert [e["readers_built"] for e in answered_steps(spark) if e["step"] == "aggregate_in_driver"] == [1, 1]
    spark.conf.set(DRIVER_BYTES, "lots")
    with pytest.raises(Exception, match="driverReadBytes is 'lots'; set it to a whole number of bytes"):
        spark.sql(sql.format(t=handled)).collect()


def test_files_with_more_rows_than_the_driver_limit_are_read_by_spark(spark, catalog, tmp_path) -> None:  # noqa: ANN001
    """Bytes do not bound rows: a file of repetitive values holds many rows in a few KiB. Past
    ``spark.hsh.aggregates.driverReadRows`` (the index's row counts of the files left to read) a job reads them."""
    root = tmp_path / "repetitive"
    root.mkdir()
    pq.write_table(pa.table({"x": pa.array([k % 5 for k in range(1000)], pa.int64())}), root / "whole.parquet")
    many = 300_000  # above the default limit (250,000), in a few KiB
    pq.write_table(pa.table({"x": pa.array([k % 7 for k in range(many)], pa.int64())}), root / "cut.parquet")
    assert (root / "cut.parquet").stat().st_size < 64 << 10  # far below the bytes limit
    handled, plain = register_pair(catalog, root)
    sql = "SELECT count(*) AS n, max(x) AS hi FROM {t} WHERE x < 5"
    expected = spark.sql(sql.format(t=plain)).collect()
    assert expected[0]["n"] == 1000 + sum(1 for k in range(many) if k % 7 < 5)
    plan = executed_plan(spark, sql.format(t=handled))
    assert "HshAggregateFromIndex" not in plan and "count_all_of_1_files_from_index" in plan  # rewritten, a job
    ours, jobs = with_jobs(spark, lambda: spark.sql(sql.format(t=handled)).collect())
    assert ours == expected and jobs >= 1
    spark.conf.set(DRIVER_ROWS, str(many))
    try:
        plan = executed_plan(spark, sql.format(t=handled))
        assert "1 file answered from the index, 1 file (" in plan and f"bytes, {many} rows) read in the driver" in plan
        answered_steps(spark)
        ours, jobs = with_jobs(spark, lambda: spark.sql(sql.format(t=handled)).collect())
        assert ours == expected and jobs == 0
        assert [e["rows_read"] for e in answered_steps(spark) if e["step"] == "aggregate_in_driver"] == [many]
        spark.conf.set(DRIVER_ROWS, "lots")
        with pytest.raises(Exception, match="driverReadRows is 'lots'; set it to a whole number of rows"):
            spark.sql(sql.format(t=handled)).collect()
        spark.conf.set(DRIVER_ROWS, str(many))
        spark.conf.set("spark.hsh.aggregates.driverInterpretedRows", "few")  # refused while planning, not ignored
        with pytest.raises(Exception, match="driverInterpretedRows is 'few'; set it to a whole number of rows"):
            spark.sql(sql.format(t=handled)).collect()
    finally:
        spark.conf.unset(DRIVER_ROWS)
        spark.conf.unset("spark.hsh.aggregates.driverInterpretedRows")


def test_a_file_the_driver_cannot_read_is_left_to_spark_s_own_plan(spark, catalog, tmp_path) -> None:  # noqa: ANN001
    """A corrupt file among those left to read: Spark's plan runs instead, so the query fails as Spark's does, or
    skips the file when ``spark.sql.files.ignoreCorruptFiles`` says so -- the same rows as plain Spark.

    The file's footer is sound (the index knows its statistics and row count, so the driver may read it) and its
    only data page's header is not: the driver's read fails where a scan task's would."""
    root = tmp_path / "days"
    root.mkdir()
    for k in range(3):
        pq.write_table(pa.table({"i": pa.array(range(k * 10, k * 10 + 10), pa.int64())}), root / f"p-{k}.parquet")
    broken = root / "p-9.parquet"
    pq.write_table(pa.table({"i": pa.array(range(-5, 5), pa.int64())}), broken, use_dictionary=False)
    page = pq.ParquetFile(broken).metadata.row_group(0).column(0).data_page_offset
    with broken.open("r+b") as f:
        f.seek(page)
        f.write(b"\xff" * 8)  # no valid page header starts so
    handled, plain = register_pair(catalog, root)
    sql = "SELECT count(*) AS n, max(i) AS hi FROM {t} WHERE i >= 0"  # p-9 cut: read
    assert "HshAggregateFromIndex" in executed_plan(spark, sql.format(t=handled))
    answered_steps(spark)
    with pytest.raises(Exception, match="FAILED_READ_FILE|p-9.parquet") as ours:
        spark.sql(sql.format(t=handled)).collect()
    with pytest.raises(Exception) as theirs:
        spark.sql(sql.format(t=plain)).collect()
    assert type(ours.value) is type(theirs.value)
    assert steps_named(spark, "aggregate_in_driver_failed") == 1
    # the reader the driver left mid-file is closed (no task's completion would close it in the driver)
    assert open_in_jvm(spark, broken) == [], "the driver's reader of the corrupt file was left open"
    spark.conf.set("spark.sql.files.ignoreCorruptFiles", "true")
    try:
        rows = spark.sql(sql.format(t=handled)).collect()
        assert rows == spark.sql(sql.format(t=plain)).collect() and rows[0]["n"] == 30
    finally:
        spark.conf.unset("spark.sql.files.ignoreCorruptFiles")
