"""Run in its own process by the Kerberos tests: the project's Spark session on the secured metastore.

Its own process because a Python process has one Spark JVM, and this one must start with Kerberos settings
(``HADOOP_CONF_DIR``, ``spark.kerberos.*``) that the test session's shared Spark must not get. It is built the
way a user builds one -- :func:`storage_handler.spark.session` with the settings in ``HSH_*`` variables (a keytab,
no ticket cache) -- and reads the registered table three ways: ``spark.sql`` through the session extension (its
prune service, a Python child of the JVM, asks the metastore for partitions), ``read_table``, and the ``hsh``
Python data source (in Spark's Python workers); and a count answered from the index. Prints one JSON line: what Spark saw, or the error.

Usage: python -m tests.kerberos.spark_probe METASTORE_URI TABLE WHERE AGGREGATE_WHERE
"""

from __future__ import annotations

import json
import sys
import time


def main() -> int:
    uri, table, where, whole = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
    from storage_handler.spark import read_table, session

    t0 = time.monotonic()
    spark = session(uri, app_name="hsh-kerberos-probe", master="local[1]")
    result: dict[str, object] = {"started_in": round(time.monotonic() - t0, 1)}
    try:
        jvm = spark.sparkContext._jvm  # type: ignore[attr-defined]
        ugi = jvm.org.apache.hadoop.security.UserGroupInformation.getCurrentUser()
        result["user"] = ugi.getUserName()
        result["kerberos"] = bool(ugi.hasKerberosCredentials())
        result["conf"] = {k: v for k, v in spark.sparkContext.getConf().getAll() if "kerberos" in k or "sasl" in k}
        result["sql"] = spark.sql(f"select count(*) from {table} where {where}").collect()[0][0]
        result["sql_all"] = spark.sql(f"select count(*) from {table}").collect()[0][0]
        result["read_table"] = read_table(spark, table, where=where).count()
        result["data_source"] = spark.read.format("hsh").load(table).where(where).count()
        # answered from the index (the extension's aggregate rule asks the prune service, which authenticates)
        aggregate = spark.sql(f"select count(*) from {table} where {whole}")
        result["aggregate_plan"] = aggregate._jdf.queryExecution().executedPlan().toString()[:3000]
        result["aggregate"] = aggregate.collect()[0][0]
        result["seconds"] = round(time.monotonic() - t0, 1)
    except Exception as e:  # noqa: BLE001 - reported to the test as data
        result["error"] = f"{type(e).__name__}: {str(e)[:3000]}"
    finally:
        spark.stop()
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
