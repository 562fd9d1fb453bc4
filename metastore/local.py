"""The embedded default: a real Hive Metastore and a real HiveServer2 started from the jars in the pyspark wheel.

Both run as background JVMs owned by a state folder (``$HSH_HOME``, default ``~/.local/state/hsh``):

    <state>/metastore/{service.json, metastore.log, metastore_db/}     Derby-backed HMS
    <state>/thriftserver/{service.json, thriftserver.log}              Spark Thrift Server (HiveServer2)
    <state>/warehouse/                                                  hive.metastore.warehouse.dir

``service.json`` records the PID, the port and the URI. ``start`` reuses a running, answering service; ``stop``
signals exactly that PID's process group (the one ``start`` created), never anything found by name.

Both are unauthenticated by default, and bound to 127.0.0.1 always. Given a :class:`~metastore.security.server.
ServiceKerberos` (``hsh metastore start --kerberos``) the metastore is ``SecureLoopbackMetaStore`` instead: SASL/GSSAPI
as the keytab's principal, still on 127.0.0.1 only; its record names the principal (never the keytab) so that
clients of the embedded metastore know it (:func:`embedded_kerberos_principal`). The Thrift server's Kerberos
settings are built on the Spark side (:func:`storage_handler.spark.config.thrift_server`) and reach this launcher
as ``--hiveconf`` values and environment.

How starting, reusing and stopping them stays safe is :mod:`metastore.service`'s.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

from metastore.security.server import LAUNCHER_CLASS as SECURE_LAUNCHER_CLASS
from metastore.security.server import ServiceKerberos
from metastore.service import LOOPBACK, LocalService, ServiceInfo, port_open
from metastore.uri import METASTORE_URI_ENV
from storage_handler.errors import MetastoreUnavailableError, ProcessError
from storage_handler.home import spark_home, spark_jars, spark_version
from storage_handler.toolchain import compile_java, find_java

log = logging.getLogger(__name__)


# Warnings and errors (with stack traces) to the service log; Hive's default config logs nothing useful here.
_LOG4J2 = """status = error
appender.console.type = Console
appender.console.name = console
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{ISO8601} %p %c{1}: %m%n
rootLogger.level = warn
rootLogger.appenderRef.console.ref = console
"""


class LocalMetastore(LocalService):
    """Hive Metastore 2.3 from the Spark in use (2.3.9 in Spark 3.5, 2.3.10 in 4.x), Derby-backed, Thrift on the
    given port; requiring Kerberos when ``kerberos`` is given."""

    name = "metastore"

    def __init__(self, home: Path | None = None, *, kerberos: ServiceKerberos | None = None) -> None:
        super().__init__(home)
        self.kerberos = kerberos
        self.kerberos_principal = kerberos.principal if kerberos else ""
        self.kerberos_protection = kerberos.protection if kerberos else ""

    def command(self, port: int) -> list[str]:
        db = self.folder / "metastore_db"
        warehouse = self.home / "warehouse"
        log_config = self.folder / "log4j2.properties"
        log_config.write_text(_LOG4J2)
        extra_classpath, main = self._main_class(port)
        return [
            find_java(), "-Xmx1g", "-cp", f"{spark_jars()}/*{extra_classpath}",
            f"-Dlog4j.configurationFile={log_config}",
            "-Dhive.async.log.enabled=false",
            "-Ddatanucleus.schema.autoCreateAll=true",
            "-Dhive.metastore.schema.verification=false",
            "-Ddatanucleus.connectionPoolingType=HikariCP",
            "-Dhive.in.test=true",  # enables the HMS lock API on this Derby-backed metastore
            f"-Djavax.jdo.option.ConnectionURL=jdbc:derby:;databaseName={db};create=true",
            f"-Dhive.metastore.warehouse.dir={warehouse}",
            f"-Dderby.stream.error.file={self.folder / 'derby.log'}",
            *(self.kerberos.metastore_properties() if self.kerberos else []),
            *main,
        ]

    def _main_class(self, port: int) -> tuple[str, list[str]]:
        """Our loopback-only launcher when it can be compiled; otherwise Hive's main, which binds every interface
        (never for a secured one: it would need a core-site.xml on its class path and listen everywhere)."""
        classes = compile_launcher()
        if classes is not None and self.kerberos:
            return f"{os.pathsep}{classes}", [SECURE_LAUNCHER_CLASS, LOOPBACK, str(port)]
        if self.kerberos:
            raise ProcessError("starting the embedded metastore with Kerberos needs javac (a JDK 17) to build its "
                               "loopback launcher")
        if classes is None:
            log.warning("no javac: the embedded metastore falls back to Hive's launcher, which listens on every "
                        "interface; install a JDK to keep it on 127.0.0.1")
            return "", ["org.apache.hadoop.hive.metastore.HiveMetaStore", "-p", str(port)]
        return f"{os.pathsep}{classes}", ["LoopbackMetaStore", LOOPBACK, str(port)]

    def uri_for(self, port: int) -> str:
        return f"thrift://{LOOPBACK}:{port}"

    def probe(self, port: int) -> bool:
        """Ready means a real Thrift call answers, not just an open port (a secured one: authenticated as the
        service itself, from its keytab)."""
        if not port_open(port):
            return False
        from metastore.client import MetastoreClient
        from metastore.security.config import KerberosSettings

        security = self.kerberos.as_client() if self.kerberos else KerberosSettings()
        try:
            with MetastoreClient(self.uri_for(port), connect_timeout=2, socket_timeout=10, retries=0,
                                 security=security) as client:
                client.get_all_databases()
            return True
        except Exception:  # noqa: BLE001 - any failure here just means "not ready yet"
            return False

    def probe_running(self, info: ServiceInfo) -> bool:
        """A running secured metastore that this starter has no keytab for (a plain ``start``, or a command that
        needs "the" metastore) is checked by its open port: the client's own connection authenticates later, and
        fails in one line if it cannot."""
        if info.kerberos_principal and not self.kerberos:
            return port_open(info.port)
        return self.probe(info.port)


def compile_launcher() -> Path | None:
    """Compile ``java/*.java`` (the launcher and its object-store folders) against the Spark in use, once per
    source and Spark version (:mod:`storage_handler.toolchain`); None without javac."""
    version = spark_version()
    return compile_java(f"metastore-launcher-spark{version.spark}",
                        sorted(Path(__file__).with_name("java").glob("*.java")), f"{spark_jars()}/*",
                        key=f"spark {version.spark} scala {version.scala}")


class LocalThriftServer(LocalService):
    """Spark's HiveServer2 (HiveThriftServer2 of the Spark in use) bound to 127.0.0.1.

    ``spark_conf`` is the whole Spark configuration it runs with (its metastore included); the Spark side builds it
    (:func:`storage_handler.spark.config.thrift_server`), so this launcher knows nothing of the handler.
    """

    name = "thriftserver"

    def __init__(self, spark_conf: Mapping[str, str] | None = None, home: Path | None = None, *,
                 hiveconf: Mapping[str, str] | None = None, environment: Mapping[str, str | None] | None = None,
                 kerberos_principal: str = "") -> None:
        super().__init__(home)
        self.spark_conf = dict(spark_conf or {})
        self.hiveconf = dict(hiveconf or {})  # more --hiveconf settings (Kerberos authentication)
        self.environment = dict(environment or {})  # variables to set (a value) or remove (None)
        self.kerberos_principal = kerberos_principal

    def command(self, port: int) -> list[str]:
        if not self.spark_conf.get("spark.hadoop.hive.metastore.uris"):
            raise ProcessError("the Thrift server needs a metastore: spark.hadoop.hive.metastore.uris is not set")
        args = [str(spark_home() / "bin" / "spark-submit"), "--class",
                "org.apache.spark.sql.hive.thriftserver.HiveThriftServer2", "--name", "hsh-thriftserver"]
        for key, value in self.spark_conf.items():
            args += ["--conf", f"{key}={value}"]
        args += [
            "--hiveconf", f"hive.server2.thrift.port={port}",
            "--hiveconf", f"hive.server2.thrift.bind.host={LOOPBACK}",
            "--hiveconf", "hive.server2.transport.mode=binary",
        ]
        for key, value in self.hiveconf.items():
            args += ["--hiveconf", f"{key}={value}"]
        return [*args, "spark-internal"]

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env["SPARK_HOME"] = str(spark_home())
        env["PYSPARK_PYTHON"] = sys.executable  # the data source runs in this interpreter's environment
        env.setdefault("SPARK_LOCAL_IP", LOOPBACK)
        env["SPARK_LOG_DIR"] = str(self.folder)
        env["SPARK_PID_DIR"] = str(self.folder)
        for key, value in self.environment.items():
            if value is None:
                env.pop(key, None)
            else:
                env[key] = value
        return env

    def uri_for(self, port: int) -> str:
        return f"{LOOPBACK}:{port}"


def embedded_kerberos_principal(uri: str, home: Path | None = None) -> str | None:
    """The principal the embedded metastore runs as, if ``uri`` is that metastore and it requires Kerberos."""
    info = LocalMetastore(home).status()
    if info is None or not info.kerberos_principal or info.uri != uri:
        return None
    return info.kerberos_principal


def ensure_metastore(progress: Callable[[str], None] | None = None) -> str:
    """URI of the embedded metastore, starting it if needed."""
    return LocalMetastore().start(progress=progress).uri


def resolve_metastore_uri(option: str | None, progress: Callable[[str], None] | None = None) -> str:
    """``--metastore`` beats ``$HSH_METASTORE_URI``; otherwise the embedded metastore (started on demand)."""
    uri = option or os.environ.get(METASTORE_URI_ENV)
    if uri:
        return uri
    try:
        return ensure_metastore(progress)
    except ProcessError as e:
        raise MetastoreUnavailableError(f"no metastore given and the embedded one could not start: {e}") from e
