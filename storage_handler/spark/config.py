"""Spark settings shared by the session helper and the embedded Thrift server: one place, so both agree."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from metastore.local import LocalThriftServer
from metastore.uri import parse_metastore_uri
from storage_handler.errors import ConfigurationError
from storage_handler.home import spark_jars, state_home
from storage_handler.spark.jvm import native_scan_conf

LOOPBACK = "127.0.0.1"


def spark_conf(metastore_uri: str, warehouse: str | None = None, *, native_scan: bool = True) -> dict[str, str]:
    """The configuration a Hive-enabled Spark needs to read tables registered by this project.

    Decisions: the session time zone is UTC (the statistics index stores timestamps as UTC wall-clock time, so
    pruning and Spark agree on what a timestamp literal means); the UI is off and everything binds to loopback
    (an embedded tool must not open ports to the network); Python data-source filter pushdown is on, or the
    handler never sees the query's filters; with ``native_scan`` (and a JDK) the session extension of
    :mod:`storage_handler.spark.jvm` is loaded, so ``spark.sql`` reads kept files with Spark's own Parquet scan.
    """
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
        conf.update(native_scan_conf())
    return conf


def thrift_server(metastore_uri: str, home: Path | None = None) -> LocalThriftServer:
    """The embedded HiveServer2 (Spark's Thrift server) for ``metastore_uri``, with the handler's extension, its
    warehouse and state under ``home`` (default ``$HSH_HOME``)."""
    folder = home if home is not None else state_home()
    return LocalThriftServer(spark_conf(metastore_uri, warehouse=str(folder / "warehouse")), home)


def hadoop_version() -> str:
    """The Hadoop version of the Spark in use (from its ``hadoop-client-api-X.jar``)."""
    for jar in sorted(spark_jars().glob("hadoop-client-api-*.jar")):
        return jar.name[len("hadoop-client-api-"):-len(".jar")]
    raise ConfigurationError("cannot tell the Hadoop version of this pyspark: no hadoop-client-api jar in its jars/")


def s3_spark_conf(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """What a Spark session needs to read S3 tables natively: ``hadoop-aws`` matching its Hadoop (Hadoop's
    S3A connector; it brings the AWS SDK bundle it needs), S3A for ``s3://`` and ``s3n://`` too, and -- when
    ``AWS_ENDPOINT_URL[_S3]`` names a custom endpoint -- that endpoint with path-style addressing. Credentials are
    never written: S3A reads the same AWS chain (environment, profile, instance role) -- through AWS SDK v2's
    provider from Hadoop 3.4 (Spark 4.x), SDK v1's before (Spark 3.5 ships Hadoop 3.3)."""
    env = os.environ if environ is None else environ
    hadoop = hadoop_version()
    sdk_v2 = tuple(int(p) for p in hadoop.split(".")[:2] if p.isdigit()) >= (3, 4)
    conf = {
        "spark.jars.packages": f"org.apache.hadoop:hadoop-aws:{hadoop}",
        "spark.hadoop.fs.s3.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem",
        "spark.hadoop.fs.s3n.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem",
        "spark.hadoop.fs.s3a.aws.credentials.provider":
            "software.amazon.awssdk.auth.credentials.DefaultCredentialsProvider" if sdk_v2
            else "com.amazonaws.auth.DefaultAWSCredentialsProviderChain",
    }
    endpoint = env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL")
    if endpoint:
        conf["spark.hadoop.fs.s3a.endpoint"] = endpoint
        conf["spark.hadoop.fs.s3a.path.style.access"] = "true"
    return conf
