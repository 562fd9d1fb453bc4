"""A Spark application the footer engine starts for itself: where it may bind, its own JVM, and how it stops.

Split from :mod:`storage_handler.stats.engines.spark` (the job) because this part is about processes, not footers:
a ``spark://`` master is checked with one TCP connect before Spark's minute of retries; a master on this machine
keeps every socket on 127.0.0.1; the application's JVM logs to a file under the state home (removed unless a job
failed) and is stopped by its PID when the engine is done with it.
"""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import sys
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from storage_handler.errors import ConfigurationError, StorageHandlerError

if TYPE_CHECKING:
    from pyspark import SparkContext

log = logging.getLogger(__name__)

ENV_MASTER = "HSH_SPARK_MASTER"
_LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})


class SparkEngineError(StorageHandlerError, RuntimeError):
    """The Spark job that reads footers could not start or failed; nothing was committed."""


class SparkMasterUnreachableError(SparkEngineError, ConnectionError):
    """Nothing answers at the Spark master's address."""


def _cause(exc: BaseException) -> str:
    """The line of a failed job's error that says why: this project's error a task raised (its message), else
    the first line naming an exception, else the first line."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    for line in lines:
        name, sep, message = line.partition(": ")
        if sep and name.startswith("storage_handler.") and name.endswith("Error"):
            return message[:500]
    for line in lines:
        if "Job aborted" in line or "Exception" in line:
            return line[:500]
    return (lines or [type(exc).__name__])[0][:500]


def is_loopback_master(master: str) -> bool:
    """``local[...]`` or a ``spark://`` master on this machine: the driver can then bind to loopback only."""
    if master.startswith("local"):
        return True
    return master.startswith("spark://") and all(h in _LOOPBACK_HOSTS for h, _ in _master_addresses(master))


def _master_addresses(master: str) -> list[tuple[str, int]]:
    """``spark://h1:p1,h2:p2`` (standby masters) as (host, port) pairs."""
    result = []
    for part in master[len("spark://"):].split(","):
        host, _, port = part.strip().rpartition(":")
        try:
            result.append((host.strip("[]") or part, int(port or 7077)))
        except ValueError as e:
            raise ConfigurationError(f"Spark master {master!r}: {part!r} is not host:port") from e
    return result


def check_master(master: str, timeout: float = 5.0) -> None:
    """Fail in one line when no address of a ``spark://`` master answers (Spark itself would retry for a minute
    and then hang or stop with a stack trace); other masters (local, yarn, k8s) are left to Spark."""
    if not master.startswith("spark://"):
        return
    errors = []
    for host, port in _master_addresses(master):
        try:
            with socket.create_connection((host, port), timeout=timeout):
                return
        except OSError as e:
            errors.append(f"{host}:{port}: {e.strerror or e}")
    raise SparkMasterUnreachableError(
        f"Spark master {master} cannot be reached ({'; '.join(errors)}); start it, or give the right URL with "
        f"--spark-master / ${ENV_MASTER}"
    )


class OwnedContext:
    """A SparkContext this engine started: its own JVM (log to a file), stopped by its PID."""

    def __init__(self, sc: SparkContext, gateway: Any, log_file: IO[bytes], log_path: Path) -> None:
        self.sc = sc
        self.gateway = gateway
        self.log_file = log_file
        self.log_path = log_path

    @classmethod
    def start(cls, master: str, extra: Mapping[str, str]) -> OwnedContext:
        from pyspark import SparkConf, SparkContext
        from pyspark.java_gateway import launch_gateway

        from storage_handler.home import state_home
        from storage_handler.toolchain import find_java

        check_master(master)
        if SparkContext._active_spark_context is not None:
            active = SparkContext._active_spark_context
            raise ConfigurationError(
                f"a SparkContext (master {active.master}) is already running in this process; pass its session "
                "to SparkEngine(spark=...) or stop it first"
            )
        find_java()
        loopback = is_loopback_master(master)
        # executors run this interpreter unless told otherwise; a loopback master keeps every socket on 127.0.0.1
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        if loopback:
            os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        settings = {"spark.master": master, "spark.app.name": "hsh-index", "spark.ui.enabled": "false",
                    "spark.ui.showConsoleProgress": "false"}
        if loopback:
            settings.update({"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1"})
        settings.update(extra)
        conf = SparkConf(loadDefaults=False).setAll(list(settings.items()))
        folder = state_home() / "spark-engine"
        folder.mkdir(parents=True, exist_ok=True)
        log_path = folder / f"driver-{os.getpid()}-{uuid.uuid4().hex[:6]}.log"
        log_file = open(log_path, "wb")  # noqa: SIM115 - closed by stop()
        gateway = None
        try:
            if SparkContext._gateway is None:  # else a JVM of an earlier session of this process: reuse it
                gateway = launch_gateway(conf, popen_kwargs={"stdout": log_file, "stderr": subprocess.STDOUT})
            sc = SparkContext(conf=conf, gateway=gateway)
        except Exception as e:
            if gateway is not None:
                _stop_gateway(gateway)
            log_file.close()
            raise SparkEngineError(f"cannot start a Spark application on {master} ({_cause(e)}); "
                                   f"driver log: {log_path}") from e
        sc.setLogLevel("WARN")
        return cls(sc, gateway, log_file, log_path)

    def stop(self, keep_log: bool = False) -> None:
        try:
            self.sc.stop()
        except Exception as e:  # noqa: BLE001 - the JVM is stopped below anyway
            log.warning("stopping the Spark application: %s", e)
        finally:
            if self.gateway is not None:
                _stop_gateway(self.gateway)
            self.log_file.close()
            if not keep_log:
                self.log_path.unlink(missing_ok=True)


def _stop_gateway(gateway: Any) -> None:
    """Shut the py4j gateway down and stop the JVM it launched (its Popen, by PID); a later engine starts anew."""
    from pyspark import SparkContext

    proc = getattr(gateway, "proc", None)
    try:
        gateway.shutdown()
    finally:
        if SparkContext._gateway is gateway:
            SparkContext._gateway = None
            SparkContext._jvm = None
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
