"""Build a Hive-enabled SparkSession connected to a metastore (the embedded one by default)."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from storage_handler.spark.config import kerberos_environment, spark_conf

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from metastore.security.config import KerberosSettings

log = logging.getLogger(__name__)


def session(
    metastore_uri: str | None = None,
    *,
    app_name: str = "hive-storage-handler",
    master: str = "local[2]",
    extra_conf: dict[str, str] | None = None,
    security: KerberosSettings | None = None,
) -> SparkSession:
    """A Hive-enabled SparkSession reading this project's tables with pruning.

    ``metastore_uri`` defaults to ``$HSH_METASTORE_URI``, else the embedded metastore (started if needed). In your
    own builder what matters is ``.enableHiveSupport()``, the settings of
    :func:`storage_handler.spark.native_scan_conf` (Spark's native scan over the kept files) and
    ``.config("spark.sql.python.filterPushdown.enabled", "true")`` (for the Python data source, used without them).

    A Kerberos-secured metastore (``security``; by default Hive's keys in the site files or the ``HSH_*``
    variables, with the embedded metastore's principal when it runs secured): the session authenticates with the
    ticket cache (``kinit``) or ``spark.kerberos.keytab``/``principal``, and this process's environment gets what
    the Spark JVM and its Python children need before the JVM starts (see
    :func:`storage_handler.spark.config.kerberos_environment`). One Spark JVM per process: a session that has to
    be secured must be the process's first.
    """
    from dataclasses import replace

    from pyspark.sql import SparkSession

    from metastore.client import MetastoreClient
    from metastore.local import embedded_kerberos_principal, resolve_metastore_uri
    from metastore.security.config import current
    from storage_handler.home import state_home
    from storage_handler.toolchain import find_java

    find_java()  # one clear line instead of pyspark's JAVA_GATEWAY_EXITED traceback
    uri = resolve_metastore_uri(metastore_uri)
    settings = current() if security is None else security.validated()
    if not settings.sasl_enabled and security is None:
        principal = embedded_kerberos_principal(uri)
        if principal:
            settings = replace(settings, sasl_enabled=True, service_principal=principal).validated()
    with MetastoreClient(uri, security=settings) as client:  # not there, or wanting another authentication:
        client.get_all_databases()  # one line here, not Spark's error after a JVM started
    prepare_process(settings)
    builder = SparkSession.builder.appName(app_name).master(master).enableHiveSupport()
    conf = spark_conf(uri, warehouse=str(state_home() / "warehouse"), security=settings)
    conf.update(merged_conf(conf, extra_conf or {}))
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    _show_warnings_of_the_handler(spark)
    return spark


def _show_warnings_of_the_handler(spark: SparkSession) -> None:
    """The extension's own warnings (a write whose files could not be indexed, naming the command to run) at WARN,
    while Spark's chatter stays at ERROR: the README promises that warning, and ERROR hid it."""
    jvm: Any = spark.sparkContext._jvm
    try:
        jvm.org.apache.logging.log4j.core.config.Configurator.setLevel("hsh", jvm.org.apache.logging.log4j.Level.WARN)
    except Exception as e:  # noqa: BLE001 - a Spark without log4j 2 keeps its own levels
        log.debug("cannot set the hsh logger's level: %s", e)


def prepare_process(settings: KerberosSettings) -> None:
    """What this process's environment must say before a Spark JVM starts from it, inherited by that JVM, its
    prune service and its Python workers: the Kerberos hand-over for ``settings`` -- and *only* theirs: keytab
    variables a parent left (``hsh spark-conf --env``, an earlier session's settings) are removed when these
    settings use the ticket cache, or the prune service would log in from that keytab as another principal than
    the session's -- and this interpreter for the Python workers (the data source's readers import this
    project)."""
    from metastore.security.config import configure_process
    from storage_handler.errors import ConfigurationError

    cache = os.environ.get("KRB5CCNAME", "")
    if settings.sasl_enabled and not settings.keytab and ":" in cache and not cache.startswith("FILE:"):
        raise ConfigurationError(
            f"the ticket cache KRB5CCNAME={cache.split(':', 1)[0]}:... is one Java cannot read (it reads FILE: "
            "caches only), so Spark's metastore client would find no ticket: `kinit -c FILE:/tmp/krb5cc_$(id -u)` "
            "with KRB5CCNAME set to that, or give the session a keytab (spark.kerberos.keytab / principal)")
    os.environ.update(kerberos_environment(settings))
    if settings.sasl_enabled:
        configure_process(settings)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")


#: settings whose value is a list of JVM options: the caller's are added to ours (a caller's
#: ``-XX:...`` must not drop the ``-Djava.security.krb5.conf`` a secured metastore needs)
JVM_OPTION_KEYS = ("spark.driver.extraJavaOptions", "spark.executor.extraJavaOptions")


def merged_conf(ours: Mapping[str, str], extra: Mapping[str, str]) -> dict[str, str]:
    """``extra`` (the caller's settings) as they should override ``ours``: every key replaces ours, except JVM
    option lists, which keep ours and add the caller's after them (the later of two equal flags wins in Java)."""
    merged = dict(extra)
    for key in JVM_OPTION_KEYS:
        if key in extra and ours.get(key) and ours[key] not in extra[key]:
            merged[key] = f"{ours[key]} {extra[key]}".strip()
    return merged
