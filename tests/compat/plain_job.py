"""A colleague's ordinary Hive-enabled Spark job, run in a child process by the compatibility suite.

This package is installed (its Python is the test's) but none of the handler's settings are set. Reads a JSON job
from argv[1] (metastore, warehouse, table, wheres, statements to run after reading) and prints one JSON line:
the session's extensions, its plan of a full read, and count(*) / sum(c_bigint) per WHERE.
"""

from __future__ import annotations

import json
import sys


def main() -> None:
    job = json.loads(sys.argv[1])
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.master("local[1]").appName("plain").enableHiveSupport() \
        .config("spark.hadoop.hive.metastore.uris", job["metastore"]).config("spark.ui.enabled", "false") \
        .config("spark.sql.session.timeZone", "UTC").config("spark.driver.host", "127.0.0.1") \
        .config("spark.sql.warehouse.dir", job["warehouse"]).getOrCreate()
    try:
        table = job["table"]
        out: dict[str, object] = {
            "extensions": spark.conf.get("spark.sql.extensions", None),
            "plan": spark.sql(f"SELECT * FROM {table}")._jdf.queryExecution().executedPlan().toString(),
            "counts": {w: [int(v) for v in spark.sql(
                f"SELECT count(*), coalesce(sum(c_bigint), 0) FROM {table} WHERE {w}").collect()[0]]
                for w in job["wheres"]},
        }
        for statement in job.get("after", []):
            spark.sql(statement).collect()
        print(json.dumps(out))
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
