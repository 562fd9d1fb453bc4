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

Two rules make it safe for several ``hsh`` commands (scripts, notebooks) to start the same service at once:

* **Check-then-start under a lock.** ``start`` holds an exclusive ``flock`` on ``<service>/start.lock`` from
  reading ``service.json`` until the service answers (or fails), so exactly one starter launches a JVM and the
  others wait and reuse it; the record is written through a temporary file of the writer's own, so no starter can
  remove another's.
* **Liveness by a held lock, not by /proc.** The JVM inherits an open ``<service>/alive.lock`` that the starter
  locked; the lock lives exactly as long as the JVM (the kernel drops it when the last holder exits), so a
  recycled PID is never mistaken for ours and no ``/proc`` is needed. Records of older versions, without it,
  fall back to the PID and its ``/proc`` start time.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

from metastore.security.server import LAUNCHER_CLASS as SECURE_LAUNCHER_CLASS
from metastore.security.server import ServiceKerberos
from storage_handler.errors import MetastoreUnavailableError, ProcessError
from storage_handler.home import spark_home, spark_jars, spark_version, state_home
from storage_handler.toolchain import compile_java, find_java

log = logging.getLogger(__name__)
LOOPBACK = "127.0.0.1"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((LOOPBACK, 0))
        return int(s.getsockname()[1])


def _port_open(port: int, host: str = LOOPBACK) -> bool:
    try:
        with socket.create_connection((host, port), timeout=1.0):
            return True
    except OSError:
        return False


def _process_start_time(pid: int) -> str | None:
    """Kernel start time of a process (field 22 of /proc/PID/stat); None if the process is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


@dataclass(frozen=True, slots=True)
class ServiceInfo:
    """What ``service.json`` records about a running embedded service."""

    name: str
    pid: int
    port: int
    uri: str
    log_path: str
    started_at: float
    proc_start: str | None
    alive_lock: str = ""  # the lock file the service's JVM holds while it lives (empty in older records)
    kerberos_principal: str = ""  # the principal a Kerberos-secured service runs as (empty: unauthenticated)

    def alive(self) -> bool:
        if self.alive_lock:
            held = _lock_held(Path(self.alive_lock))
            if held is not None:
                return held
        start = _process_start_time(self.pid)
        if start is None:
            return _pid_exists(self.pid) and self.proc_start is None
        return self.proc_start is None or start == self.proc_start


def _lock_held(path: Path) -> bool | None:
    """Whether some process holds ``path``'s lock (None: no such file)."""
    try:
        fd = os.open(path, os.O_RDWR)
    except FileNotFoundError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing also drops the lock if we just took it
    return False


def _pid_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@contextlib.contextmanager
def _exclusive(path: Path) -> Iterator[None]:
    """Hold ``path``'s lock (blocking) for the ``with`` block."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


class LocalService:
    """A background JVM with a pid file, a log file, a readiness probe and stop-by-PID."""

    name = "service"
    ready_timeout = 180.0
    kerberos_principal = ""  # what a Kerberos-secured service runs as; recorded in service.json

    def __init__(self, home: Path | None = None) -> None:
        self.home = (home or state_home()).resolve()
        self.folder = self.home / self.name
        self.info_path = self.folder / "service.json"
        self.log_path = self.folder / f"{self.name}.log"
        self.start_lock = self.folder / "start.lock"
        self.alive_lock = self.folder / "alive.lock"

    # -- to be provided by subclasses
    def command(self, port: int) -> list[str]:
        raise NotImplementedError

    def env(self) -> dict[str, str]:
        return dict(os.environ)

    def uri_for(self, port: int) -> str:
        return f"{LOOPBACK}:{port}"

    def probe(self, port: int) -> bool:
        return _port_open(port)

    def probe_running(self, info: ServiceInfo) -> bool:
        """Whether a service found running (started by anyone) answers."""
        return self.probe(info.port)

    def check_reuse(self, info: ServiceInfo) -> None:
        """Raise a one-line ProcessError if the running service is not what this starter asks for."""
        if self.kerberos_principal and info.kerberos_principal != self.kerberos_principal:
            now = f"as {info.kerberos_principal}" if info.kerberos_principal else "without Kerberos"
            raise ProcessError(
                f"the embedded {self.name} (pid {info.pid}, {info.uri}) already runs {now}; stop it first "
                f"(`hsh {self.name} stop`) to start it with Kerberos as {self.kerberos_principal}"
            )

    # -- lifecycle
    def status(self) -> ServiceInfo | None:
        """The running service, or None (a stale pid file is removed)."""
        try:
            info = ServiceInfo(**json.loads(self.info_path.read_text()))
        except (OSError, ValueError, TypeError):
            return None
        if not info.alive():
            self.info_path.unlink(missing_ok=True)
            return None
        return info

    def start(self, port: int | None = None, *, progress: Callable[[str], None] | None = None) -> ServiceInfo:
        """Start the service, or return the running one if it answers. Blocks until it is ready; concurrent
        starters wait for the first one and reuse its service (see the module docstring)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        with _exclusive(self.start_lock):
            return self._start_locked(port, progress or (lambda _msg: None))

    def _start_locked(self, port: int | None, say: Callable[[str], None]) -> ServiceInfo:
        running = self.status()
        if running is not None:
            self.check_reuse(running)
            if self.probe_running(running):
                return running
            raise ProcessError(
                f"the embedded {self.name} (pid {running.pid}) is running but does not answer on port "
                f"{running.port}; see {running.log_path}, or run `hsh {self.name} stop` and start it again"
            )
        find_java()
        port = port or free_port()
        if _port_open(port):
            raise ProcessError(f"cannot start the embedded {self.name}: port {port} is already in use")
        say(f"starting the embedded {self.name} on {LOOPBACK}:{port} (log: {self.log_path})")
        command = self.command(port)
        alive_fd = os.open(self.alive_lock, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            try:
                fcntl.flock(alive_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise ProcessError(
                    f"an embedded {self.name} started earlier still runs (it holds {self.alive_lock}) but its "
                    f"record {self.info_path} is gone: stop that process (`fuser {self.alive_lock}` names it), "
                    "then start again"
                ) from None
            with open(self.log_path, "ab") as log_file:
                proc = subprocess.Popen(
                    command, cwd=self.folder, env=self.env(), stdin=subprocess.DEVNULL, stdout=log_file,
                    stderr=subprocess.STDOUT, start_new_session=True, pass_fds=(alive_fd,),
                )
        finally:
            os.close(alive_fd)  # the JVM keeps its copy, and with it the lock, for as long as it runs
        info = ServiceInfo(
            name=self.name, pid=proc.pid, port=port, uri=self.uri_for(port), log_path=str(self.log_path),
            started_at=time.time(), proc_start=_process_start_time(proc.pid), alive_lock=str(self.alive_lock),
            kerberos_principal=self.kerberos_principal,
        )
        with tempfile.NamedTemporaryFile("w", dir=self.folder, prefix=".service-", suffix=".tmp",
                                         delete=False) as tmp:
            tmp.write(json.dumps(asdict(info), indent=2))
        os.replace(tmp.name, self.info_path)
        deadline = time.monotonic() + self.ready_timeout
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                self.info_path.unlink(missing_ok=True)
                raise ProcessError(
                    f"the embedded {self.name} exited with code {proc.returncode} while starting; "
                    f"last lines of {self.log_path}:\n{_tail(self.log_path)}"
                )
            if self.probe(port):
                say(f"{self.name} ready at {info.uri} (pid {proc.pid})")
                return info
            time.sleep(0.5)
        self.stop()
        raise ProcessError(
            f"the embedded {self.name} did not become ready within {self.ready_timeout:.0f}s; "
            f"last lines of {self.log_path}:\n{_tail(self.log_path)}"
        )

    def stop(self, timeout: float = 30.0) -> ServiceInfo | None:
        """Stop the service started by ``start`` (SIGTERM to its process group, SIGKILL after ``timeout``)."""
        info = self.status()
        if info is None:
            return None
        _signal_group(info.pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while info.alive() and time.monotonic() < deadline:
            _reap(info.pid)
            time.sleep(0.2)
        if info.alive():
            _signal_group(info.pid, signal.SIGKILL)
            while info.alive() and time.monotonic() < deadline + 10:
                _reap(info.pid)
                time.sleep(0.1)
        _reap(info.pid)
        self.info_path.unlink(missing_ok=True)
        return info


def _signal_group(pid: int, sig: int) -> None:
    """Signal the process group ``start`` created for this PID (start_new_session makes pgid == pid)."""
    try:
        os.killpg(pid, sig)
    except ProcessLookupError:
        pass
    except PermissionError:
        os.kill(pid, sig)


def _reap(pid: int) -> None:
    """Collect a zombie child of this process so it stops looking alive."""
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def _tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


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
        if not _port_open(port):
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
            return _port_open(info.port)
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
    uri = option or os.environ.get("HSH_METASTORE_URI")
    if uri:
        return uri
    try:
        return ensure_metastore(progress)
    except ProcessError as e:
        raise MetastoreUnavailableError(f"no metastore given and the embedded one could not start: {e}") from e
