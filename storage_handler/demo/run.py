"""``hsh demo`` / ``make demo``: the whole product on the embedded default, narrated step by step.

Generates a small partitioned dataset with nulls, starts the embedded metastore, registers the dataset, runs one
query through Spark SQL and the same query through ``pyhive`` against the embedded HiveServer2, prints both with
how many files each read (partition pruning on ``dt``, statistics pruning on ``event_id``, which grows with the
files) and checks they agree. It stops only what it started: a metastore that was already running is left
running.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from storage_handler.cli.output import print_rows, say

TABLE = "demo.events"
QUERY = (
    "SELECT dt, count(*) AS events, count(kind) AS with_kind, sum(amount) AS amount "
    f"FROM {TABLE} WHERE dt >= '2024-01-02' AND event_id < 1600 AND kind = 'purchase' GROUP BY dt ORDER BY dt"
)


def say_pruning(label: str) -> None:
    """One line: how many files the last scan of the demo table read, and what pruned the others."""
    from storage_handler.spark import last_scan_metrics

    m = last_scan_metrics(TABLE)
    if m is None:
        say(f"    {label}: no scan was recorded")
        return
    say(f"    {label} read {m['files_kept']} files ({m['bytes_kept']:,} bytes): the metastore's dt partitions "
        f"kept {m['partitions_kept']} of {m['partitions_total']}, whose {m['files_total']} files were listed "
        f"({m['bytes_total']:,} bytes), and the event_id statistics kept {m['files_kept']} [{m['path']}]")


def run_demo(home: Path | None = None) -> int:
    from metastore.client import MetastoreClient
    from metastore.local import LocalMetastore
    from metastore.names import parse_table_name
    from storage_handler.demo.data import generate_events
    from storage_handler.home import state_home
    from storage_handler.registration.register import apply_registration, plan_registration
    from storage_handler.spark import session
    from storage_handler.spark.config import thrift_server
    from storage_handler.toolchain import find_java

    t0 = time.monotonic()
    find_java()
    home = home or state_home()
    data = home / "demo-data" / "events"
    say(f"1/5 generating a partitioned Parquet dataset under {data}")
    shutil.rmtree(data, ignore_errors=True)
    generate_events(data, days=3, files_per_day=4, rows_per_file=250)

    metastore = LocalMetastore(home)
    started_metastore = metastore.status() is None
    say("2/5 starting the embedded Hive Metastore (first start creates its Derby schema)" if started_metastore
        else "2/5 using the embedded Hive Metastore already running (left running at the end)")
    uri = metastore.start(progress=say).uri
    thrift = thrift_server(uri, home)
    started_thrift = thrift.status() is None
    try:
        say(f"3/5 registering {data} as {TABLE}")
        with MetastoreClient(uri) as client:
            plan = plan_registration(client, parse_table_name(TABLE), str(data), progress=say)
            result = apply_registration(client, plan)
        say(f"    {result['files']} files, {result['partitions_total']} partitions, columns: "
            + ", ".join(f"{c['name']} {c['type']}" for c in result["columns"]))

        say(f"4/5 Spark SQL: {QUERY}")
        spark = session(uri)
        try:
            df = spark.sql(QUERY)
            spark_rows = [tuple(r) for r in df.collect()]
            print_rows(df.columns, spark_rows, title="Spark SQL")
            say_pruning("Spark SQL")
        finally:
            spark.stop()

        say("5/5 the same query through HiveServer2 (Spark Thrift Server) with pyhive")
        port = thrift.start(progress=say).port
        from pyhive import hive

        with hive.connect(host="127.0.0.1", port=port) as conn:
            cursor = conn.cursor()
            cursor.execute(QUERY)
            hive_rows = [tuple(r) for r in cursor.fetchall()]
            columns = [d[0] for d in cursor.description]
        print_rows(columns, hive_rows, title="HiveServer2 (pyhive)")
        say_pruning("HiveServer2")
        same = [tuple(map(str, r)) for r in spark_rows] == [tuple(map(str, r)) for r in hive_rows]
        say(("both paths agree" if same else "MISMATCH between Spark and HiveServer2")
            + f" — demo finished in {time.monotonic() - t0:.0f}s")
        return 0 if same else 1
    finally:
        if started_thrift:
            say("stopping the HiveServer2 the demo started")
            thrift.stop()
        if started_metastore:
            say("stopping the metastore the demo started")
            metastore.stop()


def main() -> int:
    return run_demo()
