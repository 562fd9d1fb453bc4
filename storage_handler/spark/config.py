"""Spark settings shared by the session helper and the embedded Thrift server: one place, so both agree.

Kerberos (a metastore with ``hive.metastore.sasl.enabled``): the settings come from
:func:`metastore.security.config.current` unless given, and a secured driver needs three things, each verified
(tests/kerberos/FINDINGS.md, "Spark"): the ``spark.hadoop.*`` metastore keys, ``spark.kerberos.keytab/principal``
and the krb5.conf (:func:`~metastore.security.spark.spark_kerberos_conf`, merged by :func:`spark_conf`); and, before
its JVM starts, a ``HADOOP_CONF_DIR`` whose core-site.xml says ``hadoop.security.authentication=kerberos`` plus
the ``HSH_*`` variables its Python children inherit (:func:`kerberos_environment`).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from metastore.local import LocalThriftServer
from metastore.security.config import (
    AUTHENTICATION_KEY,
    KerberosSettings,
    current,
    krb5_conf_path,
    site_config,
    to_environment,
)
from metastore.security.server import ServiceKerberos
from metastore.security.spark import (
    spark_kerberos_conf,
    spark_kerberos_env,
    thriftserver_kerberos_hiveconf,
    without_credentials,
    write_hadoop_conf_dir,
)
from metastore.uri import parse_metastore_uris
from storage_handler.errors import ConfigurationError
from storage_handler.home import spark_jars, state_home
from storage_handler.spark.jvm import native_scan_conf

LOOPBACK = "127.0.0.1"


def spark_conf(metastore_uri: str, warehouse: str | None = None, *, native_scan: bool = True,
               security: KerberosSettings | None = None) -> dict[str, str]:
    """The configuration a Hive-enabled Spark needs to read tables registered by this project.

    Decisions: the session time zone is UTC (the statistics index stores timestamps as UTC wall-clock time, so
    pruning and Spark agree on what a timestamp literal means); the UI is off and everything binds to loopback
    (an embedded tool must not open ports to the network); Python data-source filter pushdown is on, or the
    handler never sees the query's filters; with ``native_scan`` (and a JDK) the session extension of
    :mod:`storage_handler.spark.jvm` is loaded, so ``spark.sql`` reads kept files with Spark's own Parquet scan.
    A secured metastore (``security``, default :func:`~metastore.security.config.current`) adds the Kerberos
    settings; the rest of what such a driver needs is :func:`kerberos_environment`.
    """
    conf = {
        "spark.sql.catalogImplementation": "hive",
        # thrift://host:port only: the binary metastore protocol never uses URI credentials, and a command line
        # is visible to every local user.
        "spark.hadoop.hive.metastore.uris": ",".join(a.uri for a in parse_metastore_uris(metastore_uri)),
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
    settings = current() if security is None else security
    conf.update(spark_kerberos_conf(settings, krb5_conf=krb5_conf_path(),
                                    extra_java_options=conf.get("spark.driver.extraJavaOptions", "")))
    return conf


def kerberos_environment(settings: KerberosSettings, folder: Path | None = None) -> dict[str, str]:
    """The variables the process that starts a Spark JVM must have for a secured metastore (empty otherwise):
    ``HADOOP_CONF_DIR``, ``KRB5_CONFIG`` and the ``HSH_*`` settings (inherited by the prune service and Spark's
    Python workers).

    ``HADOOP_CONF_DIR`` stays the user's when its core-site.xml already says Kerberos (a cluster's own); else a
    folder under ``folder`` (default ``$HSH_HOME``), ``hadoop-conf/<digest>``, gets a core-site.xml that does, with
    the user's other Hadoop files and keys carried over. One folder per settings and base folder: sessions with
    other settings under the same ``$HSH_HOME`` must not rewrite the files a running one's children re-read.
    """
    if not settings.sasl_enabled:
        return {}
    given = os.environ.get("HADOOP_CONF_DIR")
    if given and site_config({"HADOOP_CONF_DIR": given}).get(AUTHENTICATION_KEY) == "kerberos":
        conf_dir = Path(given)
    else:
        digest = hashlib.sha256(repr((settings, given or "")).encode()).hexdigest()[:16]
        conf_dir = write_hadoop_conf_dir((folder or state_home()) / "hadoop-conf" / digest, settings,
                                         base=Path(given) if given else None)
    return spark_kerberos_env(settings, conf_dir=conf_dir, krb5_conf=krb5_conf_path())


def thrift_server(metastore_uri: str, home: Path | None = None, *, security: KerberosSettings | None = None,
                  kerberos: ServiceKerberos | None = None) -> LocalThriftServer:
    """The embedded HiveServer2 (Spark's Thrift server) for ``metastore_uri``, with the handler's extension, its
    warehouse and state under ``home`` (default ``$HSH_HOME``).

    ``kerberos`` makes it require Kerberos as that principal (``doAs`` off: see
    :func:`~metastore.security.spark.thriftserver_kerberos_args`), and it then authenticates to a secured metastore
    (``security``, default :func:`~metastore.security.config.current`) with the same keytab. Its credentials are
    its Spark settings only (``spark.kerberos.keytab/principal``; keytab variables inherited from the shell that
    starts it are removed): its driver hands them to the prune service.
    """
    folder = home if home is not None else state_home()
    settings = current() if security is None else security
    if kerberos is not None and settings.sasl_enabled:
        settings = replace(settings, keytab=kerberos.keytab, client_principal=kerberos.principal)
    conf = spark_conf(metastore_uri, warehouse=str(folder / "warehouse"), security=settings)
    if kerberos is None and not settings.sasl_enabled:
        return LocalThriftServer(conf, home)
    hiveconf: dict[str, str] = {}
    krb5_conf = kerberos.krb5_conf if kerberos is not None and kerberos.krb5_conf else krb5_conf_path()
    if kerberos is not None:
        # without its own keytab login Spark connects to the metastore before HiveServer2 logs in, and dies
        conf.update({"spark.kerberos.keytab": kerberos.keytab, "spark.kerberos.principal": kerberos.principal})
        hiveconf = thriftserver_kerberos_hiveconf(principal=kerberos.principal, keytab=kerberos.keytab)
        java_option = f"-Djava.security.krb5.conf={krb5_conf}" if krb5_conf else ""
        options = conf.get("spark.driver.extraJavaOptions", "")
        if java_option and java_option not in options:
            conf["spark.driver.extraJavaOptions"] = f"{options} {java_option}".strip()
    given = os.environ.get("HADOOP_CONF_DIR")
    conf_dir = write_hadoop_conf_dir(folder / "thriftserver" / "conf", settings, kerberos=True,
                                     base=Path(given) if given else None)
    environment = {"HADOOP_CONF_DIR": str(conf_dir)}
    if settings.sasl_enabled:
        environment.update(to_environment(replace(settings, keytab=None, client_principal=None)))
    if krb5_conf:
        environment["KRB5_CONFIG"] = krb5_conf
    return LocalThriftServer(conf, home, hiveconf=hiveconf, environment=without_credentials(environment),
                             kerberos_principal=kerberos.principal if kerberos is not None else "")


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
