"""A colleague's plain Hive-enabled Spark session (none of the handler's settings), run as a child process by
``test_statistics_spark.py``.

Reads a JSON job from argv[1]: the metastore, a warehouse folder, a join query, the table whose ``DESCRIBE TABLE
EXTENDED`` statistics to show, and phases. Per phase it runs the phase's statements, prints one JSON line (the join's
physical strategy, the statistics line) and then, unless it is the last phase, waits for a line on stdin: the parent
changes the metastore meanwhile. One JVM for the whole job.
"""

from __future__ import annotations

import json
import sys


def strategy(plan: str) -> str:
    for name in ("BroadcastHashJoin", "SortMergeJoin", "ShuffledHashJoin", "BroadcastNestedLoopJoin"):
        if name in plan:
            return name
    return "unknown"


def main() -> None:
    job = json.loads(sys.argv[1])
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.master("local[1]").appName("plain-stats").enableHiveSupport() \
        .config("spark.hadoop.hive.metastore.uris", job["metastore"]).config("spark.ui.enabled", "false") \
        .config("spark.driver.host", "127.0.0.1").config("spark.sql.warehouse.dir", job["warehouse"]) \
        .config("spark.sql.shuffle.partitions", "2").getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    try:
        phases = job["phases"]
        for i, phase in enumerate(phases):
            for statement in phase.get("statements", []):
                spark.sql(statement).collect()
            plan = spark.sql(job["join"])._jdf.queryExecution().executedPlan().toString()
            line = next((r.data_type for r in spark.sql(f"DESCRIBE TABLE EXTENDED {job['describe']}").collect()
                         if r.col_name == "Statistics"), None)
            print(json.dumps({"join": strategy(plan), "statistics": line}), flush=True)
            if i + 1 < len(phases):
                sys.stdin.readline()
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
