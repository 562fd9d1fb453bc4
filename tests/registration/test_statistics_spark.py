"""What a plain Spark session (no handler settings, its own process) makes of the published statistics: the
table's true size and rows in ``DESCRIBE TABLE EXTENDED``, and a small registered table broadcast in a join --
not before publishing, when Spark plans a partitioned table without statistics at ``spark.sql.defaultSizeInBytes``.
Spark's own ``ANALYZE`` statistics (``spark.sql.statistics.*``) are Spark's: never touched, even when ours are
forced over everyone else's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from metastore.names import parse_table_name
from storage_handler.registration.register import apply_registration, plan_registration
from storage_handler.registration.statistics import StatisticsChoice
from tests.helpers import run_hsh
from tests.registration import stats_data as D


def _register_without_statistics(hms: Any, name: str, root: Path) -> None:
    plan = plan_registration(hms, parse_table_name(name), str(root))
    apply_registration(hms, plan, statistics=StatisticsChoice(publish=False))


def test_a_plain_session_broadcasts_the_small_table_once_statistics_are_published(
        hms: Any, metastore_uri: str, tmp_path: Path) -> None:
    big, small = D.generate(tmp_path / "big", files=3), D.generate(tmp_path / "small", files=1, rows=8)
    _register_without_statistics(hms, "stspark.big", big)
    _register_without_statistics(hms, "stspark.small", small)
    job = {"metastore": metastore_uri, "warehouse": str(tmp_path / "wh"), "describe": "stspark.small",
           "join": "SELECT * FROM stspark.big b JOIN stspark.small s ON b.c_int = s.c_int",
           "phases": [{}, {"statements": ["REFRESH TABLE stspark.small"]},
                      {"statements": ["ANALYZE TABLE stspark.big COMPUTE STATISTICS"]}]}
    log = tmp_path / "plain.log"
    with log.open("w") as stderr:
        child = subprocess.Popen([sys.executable, str(Path(__file__).with_name("plain_stats_job.py")),
                                  json.dumps(job)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr,
                                 text=True, cwd=tmp_path, env={**os.environ, "PYSPARK_PYTHON": sys.executable,
                                                               "SPARK_LOCAL_IP": "127.0.0.1"})
    assert child.stdin is not None and child.stdout is not None
    try:
        before = json.loads(child.stdout.readline() or "{}")
        assert before == {"join": "SortMergeJoin", "statistics": None}, log.read_text()[-3000:]

        proc = run_hsh("sync", "stspark.small", "--json", "--metastore", metastore_uri)  # publishes
        assert proc.returncode == 0 and json.loads(proc.stdout)["statistics"]["table_level"] == "written"
        child.stdin.write("\n")
        child.stdin.flush()
        after = json.loads(child.stdout.readline() or "{}")
        truths = [D.oracle(small / f"dt={p}") for p in D.PARTITIONS]
        rows, size = sum(t["rows"] for t in truths), sum(t["size"] for t in truths)
        assert after == {"join": "BroadcastHashJoin", "statistics": f"{size} bytes, {rows} rows"}

        child.stdin.write("\n")  # the last phase: Spark's own ANALYZE of the big table
        child.stdin.close()
        assert json.loads(child.stdout.readline() or "{}")["join"] == "BroadcastHashJoin"
        assert child.wait(timeout=120) == 0
    finally:
        if child.poll() is None:
            child.kill()  # its JVM exits when the Python that launched it is gone (pyspark watches its stdin)
            child.wait(timeout=30)
    spark_stats = {k: v for k, v in hms.get_table("stspark", "big").parameters.items()
                   if k.startswith("spark.sql.statistics.")}
    assert spark_stats  # what ANALYZE wrote
    proc = run_hsh("sync", "stspark.big", "--overwrite-stats", "--json", "--metastore", metastore_uri)
    assert proc.returncode == 0 and json.loads(proc.stdout)["statistics"]["spark_statistics"] is True
    params = hms.get_table("stspark", "big").parameters
    assert {k: v for k, v in params.items() if k.startswith("spark.sql.statistics.")} == spark_stats
    assert params["numRows"] == str(sum(D.oracle(big / f"dt={p}")["rows"] for p in D.PARTITIONS))
