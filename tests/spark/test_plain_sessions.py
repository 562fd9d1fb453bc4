"""Sessions that were not set up for the handler read registered tables as the plain Hive tables they are.

Real processes: a ``spark-sql`` whose ``PYSPARK_PYTHON`` is a bare virtualenv (no pyspark, no package), and a
Python Spark session with this package installed but none of its settings. Both read the registered, partitioned
table natively (no pruning, no error) and return what the handler session returns; an INSERT from the plain session
is read by the handler session at once (the new file is unknown to the index, so it is kept), and after one
poll of ``hsh follow`` the handler's lookup on it prunes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from storage_handler.spark import last_scan_metrics
from tests.helpers import run_hsh
from tests.spark.typed_data import register_typed

TABLE = "plain.typed"
LEGACY = "plain.legacy"
WHERES = ["c_bigint = 5", "region = 'us' OR c_bigint < 20", "bucket = 10 AND c_str IS NOT NULL", "true"]


@pytest.fixture(scope="module")
def tables(tmp_path_factory, metastore_uri: str, spark) -> Path:
    """A registered table, and one registered the way versions before 0.2 did, then upgraded by ``hsh sync``."""
    from metastore.client import MetastoreClient
    from metastore.names import parse_table_name
    from storage_handler.registration.sync import apply_sync, plan_sync

    root = tmp_path_factory.mktemp("plain")
    register_typed(root / "typed", metastore_uri, TABLE)
    register_typed(root / "legacy", metastore_uri, LEGACY)
    name = parse_table_name(LEGACY)
    with MetastoreClient(metastore_uri) as client:
        table = client.get_table(name.database, name.table)
        table.parameters.update({"spark.sql.sources.provider": "hsh", "spark.sql.sources.schema.numParts": "1",
                                 "spark.sql.sources.schema.part.0": '{"type":"struct","fields":[]}'})
        client.alter_table(table)
        apply_sync(client, plan_sync(client, name))
    return root


def _handler_answers(spark, table: str) -> dict[str, list[int]]:
    return {w: [int(v) for v in spark.sql(f"SELECT count(*), coalesce(sum(c_bigint), 0) FROM {table} WHERE {w}")
                .collect()[0]] for w in WHERES}


def _plain_python_session(metastore_uri: str, tmp_path: Path, **job: object) -> dict:
    spec = {"metastore": metastore_uri, "warehouse": str(tmp_path / "wh"), "table": TABLE, "wheres": WHERES, **job}
    proc = subprocess.run([sys.executable, str(Path(__file__).with_name("plain_session_job.py")), json.dumps(spec)],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path,
                          env={**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_spark_sql_with_a_bare_python_reads_the_table(spark, tables: Path, metastore_uri: str,
                                                      tmp_path: Path) -> None:
    from storage_handler.home import spark_home

    bare = tmp_path / "bare"
    venv.create(bare, with_pip=False)  # a Python with nothing installed: no pyspark, no hive-storage-handler
    union = " UNION ALL ".join(
        f"SELECT '{i}', count(*), coalesce(sum(c_bigint), 0) FROM {table} WHERE {w}"
        for table in (TABLE, LEGACY) for i, w in enumerate(WHERES))
    proc = subprocess.run(
        [str(spark_home() / "bin" / "spark-sql"), "--master", "local[1]", "-S",
         "--conf", f"spark.hadoop.hive.metastore.uris={metastore_uri}", "--conf", "spark.ui.enabled=false",
         "--conf", "spark.sql.session.timeZone=UTC", "--conf", f"spark.sql.warehouse.dir={tmp_path / 'wh'}",
         "-e", union + ";"],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
        env={**os.environ, "SPARK_HOME": str(spark_home()), "PYSPARK_PYTHON": str(bare / "bin" / "python"),
             "SPARK_LOCAL_IP": "127.0.0.1"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = [line.split("\t") for line in proc.stdout.strip().splitlines()]
    expected = [[str(i), *map(str, answer)] for table in (TABLE, LEGACY)
                for i, answer in enumerate(_handler_answers(spark, table).values())]
    assert rows == expected


def test_a_session_with_the_package_but_no_settings_reads_and_writes_the_table(spark, tables: Path,
                                                                              metastore_uri: str,
                                                                              tmp_path: Path) -> None:
    before = _handler_answers(spark, TABLE)
    insert = (f"INSERT INTO {TABLE} PARTITION (region = 'us', bucket = 10) SELECT c_tiny, c_small, c_int, "
              "987654, c_float, c_double, c_dec, c_str, c_bool, c_date, c_ts, c_bin FROM plain.typed LIMIT 2")
    got = _plain_python_session(metastore_uri, tmp_path, before=[insert], datasource=True)
    assert got["extensions"] is None and "HshFileIndex" not in got["plan"]  # read natively, as plain Hive
    after = _handler_answers(spark, TABLE)  # the handler session sees the plain session's rows at once
    assert {w: [int(v) for v in a] for w, a in got["sql"].items()} == after
    assert after["true"][0] == before["true"][0] + 2
    assert after["true"][1] == before["true"][1] + 2 * 987654
    spark.sql(f"SELECT count(*) FROM {TABLE} WHERE c_bigint = 987654").collect()
    assert last_scan_metrics(TABLE)["files_kept"] >= 1 and last_scan_metrics(TABLE)["files_without_stats"] >= 1
    # the explicit Python data source, with Python filter pushdown off (Spark's default): unpruned, no error
    assert {w: [int(v) for v in a] for w, a in got["datasource"].items()} == after
    # the follower catches the other process's write (issue 26): after one poll the lookup prunes the new file
    lookup = f"SELECT count(*) FROM {TABLE} WHERE c_bigint = 987654"
    assert last_scan_metrics(TABLE)["files_kept_unindexed"] >= 1
    proc = run_hsh("follow", TABLE, "--once", "--metastore", metastore_uri)
    assert proc.returncode == 0, proc.stderr
    assert spark.sql(lookup).collect()[0][0] == 2 and _handler_answers(spark, TABLE) == after
    spark.sql(lookup).collect()
    metrics = last_scan_metrics(TABLE)
    assert metrics["files_kept_unindexed"] == 0 and metrics["files_kept"] < metrics["files_total"], metrics


def test_the_explicit_data_source_prunes_when_pushdown_is_on(spark, tables: Path, metastore_uri: str,
                                                             tmp_path: Path) -> None:
    expected = _handler_answers(spark, TABLE)["c_bigint = 5"]
    got = _plain_python_session(metastore_uri, tmp_path, wheres=["c_bigint = 5"], datasource=True,
                                conf={"spark.sql.python.filterPushdown.enabled": "true"})
    metrics = last_scan_metrics(TABLE)  # the child's scan, recorded in the shared state folder
    assert got["datasource"]["c_bigint = 5"] == expected
    assert metrics["path"] == "spark-datasource" and metrics["files_kept"] < metrics["files_total"], metrics
