"""Spark's native scan through the session extension (``java/hsh/spark``) and its Python side.

Real parts only: a real metastore, a real Spark driver with the compiled extension, the real prune service
process. The property test generates predicates (AND/OR/NOT over every operator and type, partition and data
columns mixed) and requires spark.sql over the registered table to return exactly what Spark returns over all the
rows read by pyarrow: a file the handler wrongly skipped would lose rows.
"""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from storage_handler.spark import last_scan_metrics
from tests.spark.typed_data import COLUMNS, WORDS, register_typed

TABLE = "native.typed"


@pytest.fixture(scope="module")
def typed(tmp_path_factory, metastore_uri: str, spark) -> Path:
    return register_typed(tmp_path_factory.mktemp("native") / "typed", metastore_uri, TABLE, spark,
                          oracle_view="oracle_native")


def _rows(df) -> list[tuple]:
    return sorted((tuple(r) for r in df.collect()), key=repr)


# ------------------------------------------------------------------------------------------- property test
def _atoms() -> st.SearchStrategy[str]:
    ints = st.integers(-5, 500)
    ops = st.sampled_from(["=", "<>", "<", "<=", ">", ">=", "<=>"])
    days = st.integers(-2, 14).map(lambda d: f"DATE '2024-01-{1 + d:02d}'" if 0 <= d < 14 else "DATE '2023-12-30'")
    words = st.sampled_from([*WORDS, "omega"]).map(lambda w: "'" + w + "'")
    return st.one_of(
        st.builds("c_bigint {} {}".format, ops, ints),
        st.builds("c_bigint IN ({})".format, st.lists(ints, min_size=1, max_size=4).map(lambda v: ", ".join(map(str, v)))),
        st.builds(lambda a, b: f"c_bigint BETWEEN {min(a, b)} AND {max(a, b)}", ints, ints),
        st.builds("c_date {} {}".format, ops, days),
        st.builds(lambda o, h: f"c_ts {o} TIMESTAMP '2024-01-05 {h:02d}:00:00'", ops, st.integers(0, 23)),
        st.builds("c_str {} {}".format, ops, words),
        st.builds("c_str IN ({})".format, st.lists(words, min_size=1, max_size=3).map(", ".join)),
        st.builds("c_str LIKE '{}%'".format, st.sampled_from(["al", "z", "é", ""])),
        st.builds("c_dec {} {}".format, ops, st.decimals(-1, 25, places=2).map(str)),
        st.builds("c_float {} {}".format, ops, st.sampled_from(["0.0", "-0.0", "0.5", "1.5"])),
        st.builds("c_int {} {}".format, ops, st.integers(-1, 31)),
        st.sampled_from(["c_bool", "NOT c_bool", "c_bool IS NULL", "c_str IS NULL", "c_bigint IS NOT NULL"]),
        st.builds("region {} {}".format, ops, st.sampled_from(["'eu'", "'us'", "'zz'"])),
        st.sampled_from(["region IS NULL", "region IS NOT NULL"]),
        st.builds("bucket {} {}".format, ops, st.sampled_from(["2", "10", "5"])),
        st.builds("c_bin {} X'{:02X}'".format, ops, st.integers(0, 45)),
        st.builds("c_tiny {} {}".format, ops, st.integers(-130, 130)),
        st.builds("c_small {} {}".format, ops, st.integers(-1001, 1001)),
        st.builds("c_double {} {}".format, ops, st.sampled_from(["0.0", "0.25", "1.0", "-1.0"])),
    )


PREDICATES = st.recursive(
    _atoms(),
    lambda inner: st.one_of(
        st.builds("({}) AND ({})".format, inner, inner),
        st.builds("({}) OR ({})".format, inner, inner),
        st.builds("NOT ({})".format, inner),
    ),
    max_leaves=5,
)


@settings(max_examples=int(os.environ.get("HSH_NATIVE_EXAMPLES", "40")), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(where=PREDICATES)
def test_native_scan_returns_what_a_full_scan_returns(spark, typed: Path, where: str) -> None:
    got = _rows(spark.sql(f"SELECT {COLUMNS} FROM {TABLE} WHERE {where}"))
    assert got == _rows(spark.sql(f"SELECT {COLUMNS} FROM oracle_native WHERE {where}")), where
    metrics = last_scan_metrics(TABLE)
    assert metrics is not None and metrics["path"] == "spark-native" and metrics["partitions_total"] == 6


# ------------------------------------------------------------------------------------------ targeted checks
def test_or_across_partition_and_data_columns_prunes(spark, typed: Path) -> None:
    where = "region = 'us' OR c_bigint < 20"  # Spark passes this to no file index: the filter rule hands it over
    assert _rows(spark.sql(f"SELECT {COLUMNS} FROM {TABLE} WHERE {where}")) == \
        _rows(spark.sql(f"SELECT {COLUMNS} FROM oracle_native WHERE {where}"))
    metrics = last_scan_metrics(TABLE)
    assert "(or leaf-0 leaf-1)" in metrics["sarg"], metrics
    assert metrics["files_kept"] == 5, metrics  # the 4 us files and the first file (region eu, c_bigint 0..39)


@pytest.mark.parametrize("where", [
    "upper(region) = 'EU'", "region LIKE '%u'", "coalesce(bucket, 0) = 2", "bucket + 1 = 3",
    "nvl(region, 'x') = 'x'", "length(region) = 2 AND region <> 'us'", "bucket IN (2, NULL)",
    "NOT (region = 'eu')", "region <=> NULL",
])
def test_partition_predicates_are_exact(spark, typed: Path, where: str) -> None:
    """Spark does not re-check partition-only predicates on rows: the partitions listed must match exactly, even
    where the handler cannot translate the predicate and keeps every file (spark.sql and read_table alike)."""
    from storage_handler.spark import read_table

    expected = _rows(spark.sql(f"SELECT {COLUMNS} FROM oracle_native WHERE {where}"))
    assert _rows(spark.sql(f"SELECT {COLUMNS} FROM {TABLE} WHERE {where}")) == expected, where
    assert _rows(read_table(spark, TABLE, where=where).selectExpr(*COLUMNS.split(", "))) == expected, where


def test_partition_values_come_back_typed(spark, typed: Path) -> None:
    rows = spark.sql(f"SELECT DISTINCT region, bucket FROM {TABLE} WHERE bucket = 10").collect()
    assert sorted(rows, key=repr) == sorted([(r, 10) for r in ("eu", "us", None)], key=repr)
    assert isinstance(rows[0].bucket, int)


def test_a_scan_that_cannot_be_planned_fails_naming_the_table(spark, metastore_uri: str, tmp_path: Path) -> None:
    """A table whose location the handler cannot list (a file): the error reaches the query, nothing is read."""
    from metastore.client import MetastoreClient

    register_typed(tmp_path / "remote", metastore_uri, "native.remote", files_per_partition=1)
    not_a_folder = tmp_path / "not-a-folder"
    not_a_folder.write_text("x")
    with MetastoreClient(metastore_uri) as client:
        table = client.get_table("native", "remote")
        table.sd.location = str(not_a_folder)
        client.alter_table(table)
    with pytest.raises(Exception, match=r"cannot plan the scan of native\.remote: .*not-a-folder.* is a file"):
        spark.sql("SELECT count(*) FROM native.remote WHERE c_bigint = 5").collect()


def test_size_estimate_is_what_the_query_reads(spark, typed: Path) -> None:
    """Join planning sees the kept files' size: a selective scan of a big table is broadcast, a full one is not."""
    def scan_size(sql: str) -> int:
        leaf = spark.sql(sql)._jdf.queryExecution().optimizedPlan().collectLeaves().head()
        return int(leaf.stats().sizeInBytes())  # a Scala BigInt, which py4j converts

    total = sum(f.stat().st_size for f in typed.glob("region=*/*/*.parquet"))
    assert scan_size(f"SELECT * FROM {TABLE}") == total
    where = "c_bigint < 20"
    selective = scan_size(f"SELECT * FROM {TABLE} WHERE {where}")
    spark.sql(f"SELECT sum(c_int) FROM {TABLE} WHERE {where}").collect()  # a sum: never answered from the index
    assert selective == last_scan_metrics(TABLE)["bytes_kept"] < total / 4

    join = f"SELECT a.c_bigint, b.c_bigint FROM {TABLE} a JOIN {TABLE} b ON a.c_int = b.c_int"
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", str(selective + 1))
    try:
        plan = spark.sql(f"{join} WHERE a.{where}")._jdf.queryExecution().executedPlan().toString()
        assert "BroadcastHashJoin" in plan, plan
        plan = spark.sql(join)._jdf.queryExecution().executedPlan().toString()
        assert "SortMergeJoin" in plan and "BroadcastHashJoin" not in plan, plan
    finally:
        spark.conf.unset("spark.sql.autoBroadcastJoinThreshold")


# -------------------------------------------------------------------------------- the Python side, directly
def test_prune_service_protocol(typed: Path, metastore_uri: str) -> None:
    from storage_handler.contract import VERSION
    from storage_handler.spark.prune_service import serve
    from storage_handler.spark.table_props import TableIdentity
    from storage_handler.types import parse_hive_type

    columns = (("c_bigint", parse_hive_type("bigint")), ("c_str", parse_hive_type("string")))
    keys = (("region", parse_hive_type("string")), ("bucket", parse_hive_type("int")))
    table = TableIdentity(TABLE, str(typed), columns, keys, metastore_uri).to_contract()
    scan = {"op": "scan", "contract": VERSION, "table": table, "record": False, "complete": True, "aggregate": None}
    requests = [
        {**scan, "filters": [{"op": "Or", "left": {"op": "EqualTo", "attribute": "c_bigint",
                                                   "value": {"t": "int", "v": 5}},
                              "right": {"op": "IsNull", "attribute": "region"}}]},
        {**scan, "filters": [
            {"op": "Nope"}, {"op": "EqualTo", "attribute": "c_bigint", "value": {"t": "date", "v": "-0001-01-01"}}]},
        {**scan, "filters": "c_bigint = 5"},
        {"op": "drop"},
        {**scan, "contract": VERSION - 1, "filters": []},
        {"op": "scan", "contract": VERSION, "table": table, "filters": []},
        {**scan, "table": {k: v for k, v in table.items() if k != "location"}, "filters": []},
    ]
    out = io.StringIO()
    serve(io.StringIO("".join(json.dumps(r) + "\n" for r in requests)), out)
    first, undecodable, bad, unknown, old, no_record, no_location = (
        json.loads(line) for line in out.getvalue().splitlines())
    assert first["ok"] and first["metrics"]["files_kept"] == 5 and first["metrics"]["files_total"] == 12
    path, length, _mtime, partition = first["files"][0]
    assert path.startswith("file:///") and path.endswith(".parquet") and length > 0
    assert set(partition) == {"region", "bucket"}
    # filters this side cannot decode only prune less: every file is kept
    assert undecodable["ok"] and undecodable["metrics"]["files_kept"] == 12
    assert not bad["ok"] and "must be a JSON list" in bad["error"]
    assert not unknown["ok"] and "drop" in unknown["error"]
    # another contract version, or a field missing: one line naming what is wrong, never a guess
    assert not old["ok"] and f"contract version {VERSION - 1}" in old["error"]
    assert not no_record["ok"] and "lacks 'record'" in no_record["error"]
    assert not no_location["ok"] and "lacks 'location'" in no_location["error"]


def test_prune_service_repeats_see_storage_anew_and_log_after_answering(tmp_path: Path, hsh_home: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The service remembers how a (table, filters) pair is configured, never what storage held: a file written
    between two identical requests is read by the second. Scans are logged after the answer; a log that cannot
    be written costs the log line, never the answer or the next request."""
    from storage_handler.contract import VERSION
    from storage_handler.spark import metrics
    from storage_handler.spark.prune_service import serve
    from storage_handler.spark.table_props import TableIdentity
    from storage_handler.stats import update_index
    from storage_handler.types import parse_hive_type
    from tests.reliability.util import ints, write_parquet

    root = tmp_path / "t"
    write_parquet(root / "a.parquet", ints(range(0, 10)))
    columns = (("v", parse_hive_type("bigint")),)
    update_index(str(root), columns)
    table = TableIdentity("native.repeat", str(root), columns, ()).to_contract()
    request = json.dumps({"op": "scan", "contract": VERSION, "table": table, "record": True, "complete": True, "aggregate": None,
                          "filters": [{"op": "EqualTo", "attribute": "v", "value": {"t": "int", "v": 15}}]}) + "\n"
    answers = []
    for step in range(3):
        if step == 1:
            write_parquet(root / "b.parquet", ints(range(10, 20)))  # unknown to the index: kept
        if step == 2:
            monkeypatch.setattr(metrics, "record_scan", lambda entry: (_ for _ in ()).throw(RuntimeError("gone")))
        out = io.StringIO()
        serve(io.StringIO(request * 2), out)
        answers.append([json.loads(line) for line in out.getvalue().splitlines()])
    assert [[a["metrics"]["files_kept"] for a in pair] for pair in answers] == [[0, 0], [1, 1], [1, 1]]
    assert answers[1][0]["files"][0][0].endswith("/b.parquet")
    monkeypatch.undo()
    logged = [e for e in metrics.scan_history("native.repeat") if e.get("path") == "spark-native"]
    assert [e["files_kept"] for e in logged] == [0, 0, 1, 1]  # the third pair's log failed, its answers did not


def test_insert_into_works_and_new_rows_are_read_before_the_index_knows_them(spark, metastore_uri: str,
                                                                             tmp_path: Path) -> None:
    """A handler session writes through Spark's own Hive write path, as any session does. With the commit hook
    off (a write the handler does not see) the new file is unknown to the index, so it is kept (never pruned)
    until ``hsh index refresh`` indexes it; the hook itself is tests/spark/test_index_on_write.py's."""
    from metastore.client import MetastoreClient
    from metastore.names import parse_table_name
    from storage_handler.meta_hook import IndexMetaHook

    register_typed(tmp_path / "ins", metastore_uri, "native.ins", files_per_partition=1)
    where = "c_bigint = 123456"  # outside every indexed file's range: only the new file can hold it
    assert spark.sql(f"SELECT count(*) FROM native.ins WHERE {where}").collect()[0][0] == 0
    before = last_scan_metrics("native.ins")
    spark.conf.set("spark.hsh.indexOnWrite", "false")
    try:
        spark.sql("INSERT INTO native.ins PARTITION (region = 'eu', bucket = 2) "
                  "SELECT c_tiny, c_small, c_int, 123456, c_float, c_double, c_dec, c_str, c_bool, c_date, c_ts, "
                  "c_bin FROM native.ins WHERE c_bigint IS NOT NULL LIMIT 1")
    finally:
        spark.conf.unset("spark.hsh.indexOnWrite")
    assert spark.sql(f"SELECT count(*) FROM native.ins WHERE {where}").collect()[0][0] == 1
    after = last_scan_metrics("native.ins")
    assert after["files_total"] == before["files_total"] + 1 and after["files_kept"] == 1, after
    assert after["files_without_stats"] == 1, after
    # once indexed, the new file is pruned by its statistics like any other
    name = parse_table_name("native.ins")
    with MetastoreClient(metastore_uri) as client:
        from storage_handler.registration import hooked

        hooked.refresh_table(client, name.database, name.table, IndexMetaHook())
    assert spark.sql(f"SELECT count(*) FROM native.ins WHERE {where}").collect()[0][0] == 1
    indexed = last_scan_metrics("native.ins")
    assert indexed["files_without_stats"] == 0 and indexed["files_kept"] == 1, indexed
    assert spark.sql("SELECT count(*) FROM native.ins WHERE c_bigint = -7").collect()[0][0] == 0
    assert last_scan_metrics("native.ins")["files_kept"] == 0


def test_prune_service_stdout_carries_only_answers() -> None:
    """A stray print or a native write to fd 1 while answering must not corrupt the protocol."""
    import subprocess
    import sys

    noisy = ("import os, storage_handler.spark.prune_service as p; real = p.answer_line; "
             "p.answer_line = lambda r, *more: (os.write(1, b'native noise\\n'), print('stray print'), "
             "real(r, *more))[2]; p.main()")
    proc = subprocess.run([sys.executable, "-c", noisy], input='{"op": "nope"}\n', capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert [json.loads(line)["ok"] for line in proc.stdout.splitlines()] == [False]
    assert "native noise" in proc.stderr and "stray print" in proc.stderr


def test_dates_and_timestamps_before_the_gregorian_switch(spark, metastore_uri: str, tmp_path: Path) -> None:
    """Spark hands old dates/timestamps to filters rebased to the Julian calendar; pruning must undo that. The
    files' own old values have no bounds (Spark may rebase them too, ``convert.FIRST_TRUSTED_DAY``): a file holding
    a date before 1582-10-15 or a timestamp before 1900 is always kept, the others are pruned by the literal."""
    import datetime as dt

    import pyarrow as pa
    import pyarrow.parquet as pq

    root = tmp_path / "old"
    root.mkdir()
    # 1582-10-05..14 exist in the proleptic calendar of the data, not in the hybrid one of java.sql.Date
    days = [dt.date(1400, 1, 1), dt.date(1582, 10, 4), dt.date(1582, 10, 8), dt.date(1582, 10, 15),
            dt.date(2000, 1, 1)]
    for i, day in enumerate(days):
        pq.write_table(pa.table({"d": pa.array([day], pa.date32()),
                                 "t": pa.array([dt.datetime.combine(day, dt.time(12))], pa.timestamp("us"))}),
                       root / f"part-{i}.parquet")
    from metastore.client import MetastoreClient
    from metastore.names import parse_table_name
    from storage_handler.registration.register import apply_registration, plan_registration

    with MetastoreClient(metastore_uri) as client:
        apply_registration(client, plan_registration(client, parse_table_name("native.old"), str(root)))
    # (filter, rows, files kept): the three oldest files are kept for every filter on d, the four before 1900 for
    # every filter on t; the rest only when they match
    queries = [("d = DATE '1400-01-01'", 1, 3), ("d < DATE '1582-10-15'", 3, 3), ("d = DATE '1582-10-04'", 1, 3),
               ("d = DATE '1582-10-08'", 1, 3), ("d BETWEEN DATE '1582-10-07' AND DATE '1582-10-09'", 1, 3),
               ("d > DATE '1582-10-06'", 3, 5), ("t = TIMESTAMP '1582-10-08 12:00:00'", 1, 4),
               ("t = TIMESTAMP '1400-01-01 12:00:00'", 1, 4), ("t >= TIMESTAMP '1582-10-15 00:00:00'", 2, 5),
               ("d = DATE '2000-01-01'", 1, 4), ("t < TIMESTAMP '1999-01-01 00:00:00'", 4, 4)]
    # Spark's own row-group filter has the same calendar problem (plain Spark reads 0 rows for 1582-10-08): off
    # here, so that the counts show what the handler's pruning lets through
    spark.conf.set("spark.sql.parquet.filterPushdown", "false")
    spark.read.format("hsh").option("metastore", metastore_uri).option("pruneByQueryFilters", "true") \
        .load("native.old").createOrReplaceTempView("old_ds")  # every query below filters: safe to reuse
    for native in ("true", "false"):  # the native scan, and the Python data source
        source = "native.old" if native == "true" else "old_ds"
        try:
            for where, rows, kept in queries:
                count = spark.sql(f"SELECT count(*) FROM {source} WHERE {where}").collect()[0][0]
                metrics = last_scan_metrics("native.old")
                # a literal of 1582-10-05..24 prunes nothing: Hive's builder merges each gap day with the day ten
                # days later into one leaf (pruning/domain.py); Spark hands the Python data source gap days as
                # 1582-10-15 anyway
                lossy = any(f"1582-10-{day:02d}" in where for day in range(5, 25))
                kept = len(days) if lossy else kept
                assert (count, metrics["files_kept"]) == (rows, kept), (native, where, metrics)
        finally:
            spark.conf.unset("spark.sql.parquet.filterPushdown")


def test_catalog_refresh_table(spark, typed: Path) -> None:
    """spark.catalog.refreshTable (and REFRESH TABLE) work on a table the native scan reads."""
    spark.catalog.refreshTable(TABLE)
    spark.sql(f"REFRESH TABLE {TABLE}")
    assert spark.sql(f"SELECT count(*) FROM {TABLE} WHERE c_bigint < 20").collect()[0][0] == \
        spark.sql("SELECT count(*) FROM oracle_native WHERE c_bigint < 20").collect()[0][0]


@pytest.mark.parametrize("key", ["spark.hsh.nativeScan", "spark.hsh.aggregates"])
def test_a_switch_set_to_a_word_other_than_true_or_false_is_refused(spark, typed: Path, key: str) -> None:
    """`=1`, `=yes`, `=on` turned these off without a word (and `=0`, `=off` left index-on-write on); Spark's own
    switches refuse such values, and so do these, naming the setting. `TRUE` and `False` are fine."""
    from pyspark.errors import IllegalArgumentException

    try:
        for value in ("yes", "1", "off"):
            spark.conf.set(key, value)
            with pytest.raises(IllegalArgumentException, match=f"{key} is '{value}'; set it to true or false"):
                spark.sql(f"SELECT count(*) FROM {TABLE} WHERE c_bigint < 20").collect()
        spark.conf.set(key, "TRUE")
        spark.sql(f"SELECT count(*) FROM {TABLE} WHERE c_bigint < 20").collect()
    finally:
        spark.conf.unset(key)
