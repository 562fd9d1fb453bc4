"""A Spark job run in a child process by ``test_plain_sessions``: a colleague's ordinary Hive-enabled session.

It has this package installed (its Python is the test's) but none of the handler's settings: no extension, Python
filter pushdown at Spark's default (off) unless asked. Reads JSON from argv[1], prints one JSON line of results.
"""

from __future__ import annotations

import json
import sys


def main() -> None:
    job = json.loads(sys.argv[1])
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master("local[1]").appName("plain").enableHiveSupport() \
        .config("spark.hadoop.hive.metastore.uris", job["metastore"]).config("spark.ui.enabled", "false") \
        .config("spark.sql.session.timeZone", "UTC").config("spark.driver.host", "127.0.0.1") \
        .config("spark.sql.warehouse.dir", job["warehouse"])
    for key, value in job.get("conf", {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    try:
        out: dict[str, object] = {"extensions": spark.conf.get("spark.sql.extensions", None)}
        for statement in job.get("before", []):
            spark.sql(statement).collect()
        out["sql"] = {w: list(spark.sql(f"SELECT count(*), coalesce(sum(c_bigint), 0) FROM {job['table']} WHERE {w}")
                              .collect()[0]) for w in job["wheres"]}
        out["plan"] = spark.sql(f"SELECT * FROM {job['table']}")._jdf.queryExecution().executedPlan().toString()
        if job.get("datasource"):
            out["datasource"] = {}
            for w in job["wheres"]:  # a view loaded per query: see the pruneByQueryFilters option's docstring
                spark.read.format("hsh").option("metastore", job["metastore"]) \
                    .option("pruneByQueryFilters", "true").load(job["table"]).createOrReplaceTempView("through_hsh")
                out["datasource"][w] = list(spark.sql(
                    f"SELECT count(*), coalesce(sum(c_bigint), 0) FROM through_hsh WHERE {w}").collect()[0])
        print(json.dumps(out))
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
