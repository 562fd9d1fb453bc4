"""``hsh spark-conf``: the printed flags make Spark's own ``spark-sql`` read a registered table with pruning."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from storage_handler.home import spark_home
from storage_handler.spark import last_scan_metrics
from tests.helpers import run_hsh
from tests.spark.typed_data import register_typed


def test_json_and_flags_agree() -> None:
    as_json = run_hsh("spark-conf", "--json")
    flags = run_hsh("spark-conf")
    assert as_json.returncode == flags.returncode == 0, (as_json.stderr, flags.stderr)
    conf = json.loads(as_json.stdout)
    assert conf["spark.sql.extensions"] == "hsh.spark.HshExtensions"
    assert Path(conf["spark.driver.extraClassPath"], "hsh", "spark", "HshExtensions.class").is_file()
    words = shlex.split(flags.stdout)
    assert words[::2] == ["--conf"] * len(conf)
    assert dict(w.split("=", 1) for w in words[1::2]) == conf


@pytest.mark.jvm
def test_spark_sql_cli_prunes_with_the_printed_flags(metastore_uri: str, tmp_path: Path) -> None:
    register_typed(tmp_path / "typed", metastore_uri, "cliconf.typed", files_per_partition=1)
    flags = shlex.split(run_hsh("spark-conf").stdout)
    cmd = [str(spark_home() / "bin" / "spark-sql"), *flags,
           "--conf", f"spark.hadoop.hive.metastore.uris={metastore_uri}",
           "--conf", "spark.driver.bindAddress=127.0.0.1", "--conf", "spark.driver.host=127.0.0.1",
           "--conf", "spark.ui.enabled=false", "--conf", "spark.sql.session.timeZone=UTC",
           "--conf", f"spark.sql.warehouse.dir={tmp_path / 'warehouse'}",
           "-e", "SELECT count(*) FROM cliconf.typed WHERE c_bigint = 5"]
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip().splitlines()[-1] == "1"
    metrics = last_scan_metrics("cliconf.typed")
    assert metrics is not None and metrics["path"] == "spark-native"
    assert metrics["files_kept"] == 1 and metrics["files_total"] == 6
