"""A held table's two-part name is parsed as the session catalog's three-part name (``hsh.spark.QualifiedNames``),
and only where that names the same table (issue 30: Spark otherwise searches for a catalog named like the
database, throwing two exceptions, on every query).

What can fail: a name left two-part costs every query the search (the parsed plan shows it); a name rewritten where
the current catalog is another, where the database's name is a catalog, or in an ``INSERT``'s target, a view's
text or a statement that switches catalogs (``SET CATALOG``, a script) would read or write another table than the
one written.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

TABLE = "names.held"
OTHER_CATALOG = "spark.sql.catalog.names_other"


@pytest.fixture(scope="module")
def held(spark, tmp_path_factory: pytest.TempPathFactory, metastore_uri: str) -> str:  # noqa: ANN001
    """A registered table of x = 1..10, queried once so that the session catalog holds it."""
    from metastore.client import MetastoreClient
    from metastore.names import parse_table_name
    from storage_handler.registration.register import apply_registration, plan_registration

    folder = tmp_path_factory.mktemp("names") / "held"
    folder.mkdir()
    pq.write_table(pa.table({"x": pa.array(range(1, 11), pa.int64())}), folder / "part-0.parquet")
    with MetastoreClient(metastore_uri) as client:
        apply_registration(client, plan_registration(client, parse_table_name(TABLE), str(folder)))
    assert spark.sql(f"SELECT sum(x) FROM {TABLE}").collect()[0][0] == 55
    return TABLE


def _parsed(spark, sql: str) -> str:  # noqa: ANN001
    return spark._jsparkSession.sessionState().sqlParser().parsePlan(sql).toString()


QUALIFIED = "[spark_catalog, names, held]"
AS_WRITTEN = "[names, held]"


def test_a_held_tables_name_is_parsed_with_the_session_catalog(spark, held: str) -> None:  # noqa: ANN001
    assert QUALIFIED in _parsed(spark, f"SELECT sum(x) FROM {held}")
    assert "[spark_catalog, NAMES, Held]" in _parsed(spark, "SELECT sum(x) FROM NAMES.Held")  # as written, qualified
    # a subquery's relation too
    assert _parsed(spark, f"SELECT 1 FROM {held} WHERE x IN (SELECT x FROM {held})").count(QUALIFIED) == 2
    assert spark.sql(f"SELECT sum(x) FROM {held} WHERE x > 5").collect()[0][0] == 40
    assert spark.sql(f"SELECT {held}.x FROM {held} WHERE x = 3").collect()[0][0] == 3  # qualified columns resolve


def test_other_names_are_parsed_as_spark_parses_them(spark, held: str) -> None:  # noqa: ANN001
    assert "[names, unknown]" in _parsed(spark, "SELECT * FROM names.unknown")  # not held: untouched
    assert "[held]" in _parsed(spark, "SELECT * FROM held")  # one part: the current database
    assert "[global_temp, held]" in _parsed(spark, "SELECT * FROM global_temp.held")
    plan = _parsed(spark, f"INSERT INTO {held} SELECT x FROM {held}")
    assert AS_WRITTEN in plan and QUALIFIED in plan  # the target as written, what it reads qualified


def test_a_catalog_named_like_the_database_keeps_the_name(spark, held: str) -> None:  # noqa: ANN001
    spark.conf.set("spark.sql.catalog.names", "org.apache.spark.sql.execution.datasources.v2.jdbc.JDBCTableCatalog")
    try:
        assert QUALIFIED not in _parsed(spark, f"SELECT * FROM {held}")
    finally:
        spark.conf.unset("spark.sql.catalog.names")


def test_another_current_catalog_keeps_the_name(spark, held: str) -> None:  # noqa: ANN001
    # a real catalog of another kind (Spark's JDBC catalog connects only when asked for a table)
    spark.conf.set(OTHER_CATALOG, "org.apache.spark.sql.execution.datasources.v2.jdbc.JDBCTableCatalog")
    spark.conf.set(OTHER_CATALOG + ".url", "jdbc:derby:memory:hsh_names;create=true")
    try:
        spark.sql("SET CATALOG 'names_other'")
        try:
            assert QUALIFIED not in _parsed(spark, f"SELECT * FROM {held}")
        finally:
            spark.sql("SET CATALOG 'spark_catalog'")
    finally:
        spark.conf.unset(OTHER_CATALOG)
        spark.conf.unset(OTHER_CATALOG + ".url")


def test_a_sql_script_that_may_switch_catalogs_keeps_its_names(spark, held: str) -> None:  # noqa: ANN001
    script = f"BEGIN SELECT sum(x) FROM {held}; END"  # any script: a statement in it may switch catalogs
    try:
        plan = _parsed(spark, script)
    except Exception:  # noqa: BLE001 - a line without SQL scripting parses no script at all
        pytest.skip("this Spark line has no SQL scripting")
    assert QUALIFIED not in plan and AS_WRITTEN in plan


def test_a_view_over_the_table_reads_it_and_an_insert_writes_it(spark, held: str, tmp_path: Path) -> None:  # noqa: ANN001
    spark.sql(f"CREATE OR REPLACE VIEW names.v AS SELECT x FROM {held} WHERE x <= 4")
    assert spark.sql("SELECT sum(x) FROM names.v").collect()[0][0] == 10
    spark.sql("CREATE TABLE IF NOT EXISTS names.copied (x BIGINT) STORED AS PARQUET "
              f"LOCATION '{(tmp_path / 'copied').as_uri()}'")
    spark.sql(f"INSERT INTO names.copied SELECT x FROM {held} WHERE x > 8")
    assert sorted(r[0] for r in spark.sql("SELECT x FROM names.copied").collect()) == [9, 10]
