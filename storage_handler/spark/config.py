"""Spark settings shared by the session helper and the embedded Thrift server: one place, so both agree."""

from __future__ import annotations

LOOPBACK = "127.0.0.1"


def spark_conf(metastore_uri: str, warehouse: str | None = None, *, native_scan: bool = True) -> dict[str, str]:
    """The configuration a Hive-enabled Spark needs to read tables registered by this project.

    Decisions: the session time zone is UTC (the statistics index stores timestamps as UTC wall-clock time, so
    pruning and Spark agree on what a timestamp literal means); the UI is off and everything binds to loopback
    (an embedded tool must not open ports to the network); Python data-source filter pushdown is on, or the
    handler never sees the query's filters; with ``native_scan`` (and a JDK) the session extension of
    :mod:`storage_handler.spark.jvm` is loaded, so ``spark.sql`` reads kept files with Spark's own Parquet scan.
    """
    from metastore.client import parse_metastore_uri

    conf = {
        "spark.sql.catalogImplementation": "hive",
        # thrift://host:port only: the binary metastore protocol never uses URI credentials, and a command line
        # is visible to every local user.
        "spark.hadoop.hive.metastore.uris": parse_metastore_uri(metastore_uri).uri,
        "spark.sql.python.filterPushdown.enabled": "true",
        "spark.sql.session.timeZone": "UTC",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": "4",
        "spark.driver.host": LOOPBACK,
        "spark.driver.bindAddress": LOOPBACK,
        "spark.driver.memory": "1g",
    }
    if warehouse:
        conf["spark.sql.warehouse.dir"] = warehouse
    if native_scan:
        from storage_handler.spark.jvm import native_scan_conf

        conf.update(native_scan_conf())
    return conf
