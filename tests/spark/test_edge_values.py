"""Values at the edges of what Spark hands over, through both Spark read paths (found by a false-negative hunt).

Each case compares a registered table with Spark reading the same files itself (its Parquet filter pushdown off,
so the reference is the rows, not Spark's own row-group filter), for the native scan and the Python data source.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from metastore.names import parse_table_name
from storage_handler.registration.register import apply_registration, plan_registration
from storage_handler.spark import last_scan_metrics

TABLE = "edges.t"
BIG = Decimal("12345678901234567890.1234567890")  # 30 digits: more than pyspark's 28-digit context holds


@pytest.fixture(scope="module")
def table(tmp_path_factory, metastore_uri: str, spark) -> Path:
    """Folders ``p=1`` and ``p=+2`` (registration types p as int); a decimal(38,10) column with one big value."""
    from metastore.client import MetastoreClient

    root = tmp_path_factory.mktemp("edges") / "t"
    for folder, values in (("p=1", [BIG, Decimal(1)]), ("p=+2", [Decimal(2), Decimal(3)])):
        (root / folder).mkdir(parents=True)
        pq.write_table(pa.table({"w": pa.array(values, pa.decimal128(38, 10)), "x": pa.array([1, 2], pa.int64())}),
                       root / folder / "a.parquet")
    with MetastoreClient(metastore_uri) as client:
        apply_registration(client, plan_registration(client, parse_table_name(TABLE), str(root)))
    spark.read.schema("w decimal(38,10), x bigint, p int").option("basePath", str(root)).parquet(str(root)) \
        .createOrReplaceTempView("edges_reference")
    return root


@pytest.fixture(params=["native-scan", "python-data-source"])
def path(request, spark, metastore_uri: str):
    """What to query: the registered table (the native scan) or a view over the explicit Python data source."""
    spark.conf.set("spark.sql.parquet.filterPushdown", "false")
    if request.param == "python-data-source":
        spark.read.format("hsh").option("metastore", metastore_uri).option("pruneByQueryFilters", "true") \
            .load(TABLE).createOrReplaceTempView("edges_ds")
    yield request.param
    spark.conf.unset("spark.sql.parquet.filterPushdown")


@pytest.mark.parametrize("where", [
    "p = 2", "p > 1", "p IN (2, 3)",                     # the +2 folder is the int 2, on both paths
    f"w = {BIG}", f"w >= {BIG}", f"w IN ({BIG}, 7)",     # a 30-digit literal: no pruning on a rounded value
    "x = 1000", "p = 9 AND x = 1",                       # nothing kept: an empty answer, not an error
])
def test_matches_spark_reading_the_files(spark, table: Path, path: str, where: str) -> None:
    def rows(source: str) -> list[tuple]:
        return sorted(tuple(r) for r in spark.sql(f"SELECT w, x, p FROM {source} WHERE {where}").collect())

    assert rows(TABLE if path == "native-scan" else "edges_ds") == rows("edges_reference"), where
    assert last_scan_metrics(TABLE)["path"] == ("spark-native" if path == "native-scan" else "spark-datasource")


def test_case_sensitive_session_prunes_only_by_partitions(spark, metastore_uri: str, tmp_path: Path) -> None:
    """With ``spark.sql.caseSensitive`` on, Spark's reader takes a Parquet column ``EventId`` as missing (NULL)
    for the table's ``eventid``, while the index matched it ignoring case: its statistics must not prune then."""
    from metastore.client import MetastoreClient
    from storage_handler.spark import read_table

    root = tmp_path / "cased"
    for k, ids in ((1, [1, 2]), (2, [3, 4])):
        (root / f"k={k}").mkdir(parents=True)
        pq.write_table(pa.table({"EventId": pa.array(ids, pa.int64())}), root / f"k={k}" / "a.parquet")
    with MetastoreClient(metastore_uri) as client:
        apply_registration(client, plan_registration(client, parse_table_name("edges.cased"), str(root)))
    spark.conf.set("spark.sql.caseSensitive", "true")
    try:
        reference = spark.read.schema("eventid bigint, k int").option("basePath", str(root)).parquet(str(root))
        for where, kept in (("eventid IS NULL", 2), ("eventid = 1 OR k = 2", 2), ("k = 2", 1)):
            assert spark.sql(f"SELECT count(*) FROM edges.cased WHERE {where}").collect()[0][0] == \
                reference.where(where).count(), where
            assert last_scan_metrics("edges.cased")["files_kept"] == kept, where
            assert read_table(spark, "edges.cased", where).count() == reference.where(where).count(), where
    finally:
        spark.conf.unset("spark.sql.caseSensitive")
    assert spark.sql("SELECT count(*) FROM edges.cased WHERE eventid = 1").collect()[0][0] == 1
    assert last_scan_metrics("edges.cased")["files_kept"] == 1  # ignoring case again: statistics prune


def _register(metastore_uri: str, name: str, root: Path) -> None:
    from metastore.client import MetastoreClient

    with MetastoreClient(metastore_uri) as client:
        apply_registration(client, plan_registration(client, parse_table_name(name), str(root)))


@pytest.fixture
def session_zone(spark):
    yield lambda zone: spark.conf.set("spark.sql.session.timeZone", zone)
    spark.conf.set("spark.sql.session.timeZone", "UTC")


def test_timestamp_partitions_in_a_session_zone_other_than_utc(spark, metastore_uri: str, tmp_path: Path,
                                                               session_zone) -> None:
    """Spark reads a ``timestamp`` partition folder's text in the session zone, the handler in UTC: the native
    scan must not prune by the handler's reading then (Spark's exact partition check still applies)."""
    from metastore.client import MetastoreClient

    root = tmp_path / "tsparts"
    for i, text in enumerate(["2024-01-01 00%3A00%3A00", "2024-01-01 05%3A00%3A00"]):
        (root / f"k={text}").mkdir(parents=True)
        pq.write_table(pa.table({"x": pa.array([i], pa.int32())}), root / f"k={text}" / "f.parquet")
    _register(metastore_uri, "edges.tsparts", root)
    with MetastoreClient(metastore_uri) as client:  # registration infers string; a user may declare timestamp
        table = client.get_table("edges", "tsparts")
        table.partitionKeys[0].type = "timestamp"
        client.alter_table(table)
    spark.sql("REFRESH TABLE edges.tsparts")
    for zone in ("UTC", "America/New_York"):
        session_zone(zone)
        for where in ("k = timestamp '2024-01-01 00:00:00'", "k >= '2024-01-01 05:00:00'"):
            assert spark.sql(f"SELECT x FROM edges.tsparts WHERE {where}").collect() == \
                [(0,) if "00:00:00'" in where else (1,)], (zone, where)


def test_read_table_reads_where_as_spark_does(spark, metastore_uri: str, tmp_path: Path, session_zone) -> None:
    """read_table applies ``where`` with Spark's parser, so it must choose files by Spark's reading of the text:
    doubled quotes, \\U escapes, the session time zone, a dotted column name."""
    from storage_handler.spark import read_table

    root = tmp_path / "texts"
    values = ["it's", "A", 'say "hi"', "other"]
    stamps = [dt.datetime(2024, 1, 1, h, tzinfo=dt.UTC) for h in (0, 5, 12, 18)]
    root.mkdir()
    for i, (s, ts) in enumerate(zip(values, stamps, strict=True)):
        pq.write_table(pa.table({"s": [s], "ts": pa.array([ts], pa.timestamp("us", tz="UTC")), "a.b": [i]}),
                       root / f"f{i}.parquet")
    _register(metastore_uri, "edges.texts", root)
    cases = [("UTC", "s = 'it''s'"), ("UTC", "s IN ('it''s', 'x')"), ("UTC", "s = 'say \"hi\"'"),
             ("UTC", "s = '\\U00000041'"), ("UTC", "`a.b` = 3"),
             ("America/New_York", "ts = timestamp '2023-12-31 19:00:00'"),
             ("Asia/Kolkata", "ts < '2024-01-01 10:30:01'")]
    for zone, where in cases:
        session_zone(zone)
        expected = spark.sql(f"SELECT s FROM edges.texts WHERE {where}").collect()
        assert len(expected) == 1 if "ts <" not in where else len(expected) == 2, (zone, where)
        assert read_table(spark, "edges.texts", where).select("s").collect() == expected, (zone, where)


def test_without_the_extension_read_table_prunes_only_where_hiveql_agrees(spark, session_zone) -> None:
    """The fallback reads ``where`` as HiveQL: texts and sessions where that may differ from Spark do not prune."""
    from storage_handler.spark.native import _hiveql_reads_it_as_spark

    assert _hiveql_reads_it_as_spark(spark, "x = 1 AND s = 'a'")
    for text in ("s = 'it''s'", "s = '\\U00000041'", 's = "a"'):
        assert not _hiveql_reads_it_as_spark(spark, text), text
    session_zone("Europe/Paris")
    assert not _hiveql_reads_it_as_spark(spark, "x = 1")


def test_read_table_where_with_subqueries_and_qualified_names(spark, metastore_uri: str, tmp_path: Path) -> None:
    """A subquery's own filters (on another table, or another instance of this one) must not prune this table;
    ``t.x`` and a correlated ``t.p`` work as with ``spark.table``."""
    from storage_handler.spark import read_table

    root, other = tmp_path / "sub", tmp_path / "other"
    for p in range(4):
        (root / f"p={p}").mkdir(parents=True)
        xs = list(range(p * 100, p * 100 + 100))
        pq.write_table(pa.table({"x": pa.array(xs, pa.int32())}), root / f"p={p}" / "f.parquet")
    other.mkdir()
    pq.write_table(pa.table({"x": pa.array([120, 350], pa.int32()), "k": pa.array([1, 3], pa.int32())}),
                   other / "a.parquet")
    _register(metastore_uri, "edges.sub", root)
    _register(metastore_uri, "edges.other", other)
    for where in ("x NOT IN (SELECT x FROM edges.other WHERE x > 300)",
                  "p NOT IN (SELECT k FROM edges.other WHERE k > 2)",
                  "x IN (SELECT x FROM edges.sub WHERE x > 350) OR x < 5",  # another instance of the same table
                  "sub.x > 350", "EXISTS (SELECT 1 FROM edges.other o WHERE o.k = sub.p)"):
        expected = spark.table("edges.sub").where(where).count()
        assert read_table(spark, "edges.sub", where).count() == expected, where


def test_varchar_values_longer_than_the_column_are_read_whole(spark, catalog, tmp_path: Path) -> None:  # noqa: ANN001
    """Spark reads a varchar(3) value 'xyzzz' whole (Hive would cut it to 'xyz'): bounds cut to the length pruned
    the file holding it from ``v = 'xyzzz'`` (found by review)."""
    from storage_handler.stats import update_index
    from storage_handler.types import parse_hive_type
    from tests.spark.aggregate_tables import canonical, register_pair

    root = tmp_path / "vc"
    root.mkdir()
    pq.write_table(pa.table({"v": ["xyzzz", "abcdef"], "k": pa.array([1, 2], pa.int64())}), root / "a.parquet")
    pq.write_table(pa.table({"v": ["b"], "k": pa.array([3], pa.int64())}), root / "b.parquet")
    handled, plain = register_pair(catalog, root)
    for name in (handled, plain):
        db, table = name.split(".")
        t = catalog.get_table(db, table)
        next(c for c in t.sd.cols if c.name == "v").type = "varchar(3)"
        catalog.alter_table(t)
    update_index(f"file:{root}", [("v", parse_hive_type("varchar(3)")), ("k", parse_hive_type("bigint"))],
                 partition_columns=[], max_workers=1)
    for name in (handled, plain):
        spark.sql(f"REFRESH TABLE {name}")
    for where in ("v = 'xyzzz'", "v > 'xyz'", "v LIKE 'xyzz%'", "v IN ('abcdef', 'q')", "NOT (v <=> 'abc')"):
        ours = canonical(spark.sql(f"SELECT v, k FROM {handled} WHERE {where}").collect())
        assert ours == canonical(spark.sql(f"SELECT v, k FROM {plain} WHERE {where}").collect()), where
    assert canonical(spark.sql(f"SELECT k FROM {handled} WHERE v = 'xyzzz'").collect()) == [(1,)]


def test_read_table_pads_char_columns_as_spark_reads_them(spark, metastore_uri: str, tmp_path: Path) -> None:
    """A ``char(5)`` column reads padded to 5 characters in Spark's read of the table; read_table's relation
    (declared ``string``) gave 'ab', and ``c = 'ab   '`` found nothing there."""
    from metastore.client import MetastoreClient
    from storage_handler.spark import read_table

    root = tmp_path / "chars"
    root.mkdir()
    pq.write_table(pa.table({"c": ["ab", "abcde", None], "i": [1, 2, 3]}), root / "f.parquet")
    _register(metastore_uri, "edges.chars", root)
    with MetastoreClient(metastore_uri) as client:  # registration infers string; a user may declare char(5)
        table = client.get_table("edges", "chars")
        table.sd.cols[0].type = "char(5)"
        client.alter_table(table)
    spark.sql("REFRESH TABLE edges.chars")
    plain = sorted(tuple(r) for r in spark.sql("SELECT i, c FROM edges.chars").collect())
    assert plain == [(1, "ab   "), (2, "abcde"), (3, None)]
    assert sorted(tuple(r) for r in read_table(spark, "edges.chars").select("i", "c").collect()) == plain
    assert [r.i for r in read_table(spark, "edges.chars", "c = 'ab   '").collect()] == [1]


def test_a_string_column_with_a_collation(spark, metastore_uri: str, tmp_path: Path) -> None:
    """Spark 4 accepts ``ALTER COLUMN s TYPE STRING COLLATE UTF8_LCASE`` on a registered table. Every handler query
    of the table then failed (the type did not parse), and read_table compared ``s`` byte by byte (the row 'A' was
    lost for ``s = 'a'``); the collated column's byte-ordered statistics must prune nothing."""
    from storage_handler.spark import read_table

    root = tmp_path / "collated"
    (root / "p=1").mkdir(parents=True)
    pq.write_table(pa.table({"s": ["a", "b"], "i": pa.array([1, 2], pa.int32())}), root / "p=1" / "lower.parquet")
    pq.write_table(pa.table({"s": ["A", "B"], "i": pa.array([3, 4], pa.int32())}), root / "p=1" / "upper.parquet")
    _register(metastore_uri, "edges.collated", root)
    spark.sql("ALTER TABLE edges.collated ALTER COLUMN s TYPE STRING COLLATE UTF8_LCASE")
    expected = [("A", 3), ("a", 1)]
    assert sorted(tuple(r) for r in spark.sql("SELECT s, i FROM edges.collated WHERE s = 'a'").collect()) == expected
    assert [tuple(r) for r in spark.sql("SELECT i FROM edges.collated WHERE i = 1").collect()] == [(1,)]
    assert sorted(tuple(r) for r in read_table(spark, "edges.collated", "s = 'a'").select("s", "i").collect()) \
        == expected


def test_a_string_column_with_a_collation_without_the_extension(spark, metastore_uri: str, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the extension read_table prunes from the metastore's types, which lack the collation: the file
    holding only 'A' and 'B' was pruned by its bounds for ``s = 'a'``."""
    from storage_handler.spark import native, read_table

    root = tmp_path / "collated2"
    root.mkdir()
    pq.write_table(pa.table({"s": ["a", "b"], "i": pa.array([1, 2], pa.int32())}), root / "lower.parquet")
    pq.write_table(pa.table({"s": ["A", "B"], "i": pa.array([3, 4], pa.int32())}), root / "upper.parquet")
    _register(metastore_uri, "edges.collated2", root)
    spark.sql("ALTER TABLE edges.collated2 ALTER COLUMN s TYPE STRING COLLATE UTF8_LCASE")
    monkeypatch.setattr(native, "_relations", lambda spark: None)  # as without the extension's classes
    assert sorted(tuple(r) for r in read_table(spark, "edges.collated2", "s = 'a'").select("s", "i").collect()) \
        == [("A", 3), ("a", 1)]


def test_without_the_extension_read_table_reads_unpruned_what_hiveql_cannot_read(
        spark, metastore_uri: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Valid Spark SQL the handler's HiveQL reader refuses (a binary literal, ``IN (SELECT ...)``) failed read_table
    in a session without the extension's classes, instead of reading without pruning."""
    from storage_handler.spark import native, read_table

    root = tmp_path / "binary"
    root.mkdir()
    pq.write_table(pa.table({"b": pa.array([b"\x05", b"\x06"]), "id": [1, 2]}), root / "f.parquet")
    _register(metastore_uri, "edges.binary", root)
    monkeypatch.setattr(native, "_relations", lambda spark: None)  # as without the extension's classes
    for where in ("b = X'05'", "id IN (SELECT id FROM edges.binary WHERE id < 2)"):
        assert [r.id for r in read_table(spark, "edges.binary", where).collect()] == [1], where
