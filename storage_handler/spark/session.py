"""Build a Hive-enabled SparkSession connected to a metastore (the embedded one by default)."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

from storage_handler.spark.config import kerberos_environment, spark_conf

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from metastore.security.config import KerberosSettings


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
    os.environ.update(kerberos_environment(settings))
    # Python workers (the data source's readers) must import this project: use this very interpreter.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = SparkSession.builder.appName(app_name).master(master).enableHiveSupport()
    conf = spark_conf(uri, warehouse=str(state_home() / "warehouse"), security=settings)
    conf.update(extra_conf or {})
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark
