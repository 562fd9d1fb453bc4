"""Footer reading as a Spark job, for tables too big for one machine; and the choice between the engines.

:class:`SparkEngine` splits the files to read (sorted by path) into slices, one Spark task per slice. A task reads
its slice with :class:`~storage_handler.stats.engine.LocalEngine` -- i.e. :func:`~storage_handler.stats.engine.
read_chunk` over chunks of the slice, by a pool of threads, because on an object store a task that read one footer
after the other would wait on one GET at a time -- and returns the rows as one Arrow IPC stream. The driver puts the
slices back in order and concatenates them: exactly the table :class:`LocalEngine` returns for the same files, so
the snapshot the caller commits (one, from the driver, by the usual protocol) is the same byte for byte.

Why the driver commits and not the tasks: the commit protocol (:mod:`storage_handler.stats.versions`) is one
create-if-absent of one version; tasks that wrote parts would need a second protocol to stitch them. A task that
fails is simply run again by Spark (a corrupt footer does not fail it: its ``stats_error`` is a row like any other);
a driver that dies before the commit leaves the previous version current, as with the local engine.

Executors must import this package: on a standalone cluster on this machine they run this very interpreter
(``PYSPARK_PYTHON``, default ``sys.executable``) whose editable install has the repository on ``sys.path``; on a
real cluster install the package on the nodes (or ship it with ``spark.submit.pyFiles``) and point
``PYSPARK_PYTHON`` at that Python. Object-store credentials reach tasks through the nodes' own AWS chain
(environment, instance role); the table's ``fs.s3a.*`` settings travel in the :class:`FooterJob`.

:class:`AutoEngine` reads small jobs locally and big ones on Spark: starting a Spark application costs seconds to
tens of seconds, so below :data:`AUTO_THRESHOLD` files to read the local pool always wins (see the README's "Big
tables").
"""

from __future__ import annotations

import functools
import logging
import os
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import pyarrow as pa

from storage_handler.errors import ConfigurationError, StorageHandlerError
from storage_handler.stats.engine import CHUNK_FILES, FooterEngine, FooterJob, LocalEngine, ProgressCallback
from storage_handler.stats.index import stats_table
from storage_handler.stats.listing import DataFile
from storage_handler.storage import LOCAL, local_path, parse_location

if TYPE_CHECKING:
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

ENV_MASTER = "HSH_SPARK_MASTER"
ENV_THRESHOLD = "HSH_SPARK_THRESHOLD"
DEFAULT_MASTER = "local[*]"
AUTO_THRESHOLD = 200_000  # files to read; see the README's "Big tables" for why
SLICE_FILES = 2048  # files per task at most: ~0.4 s of tiny local footers, a cheap retry when an executor is lost
ACCEPT_TIMEOUT = 300.0  # seconds a job may wait for its first running task before it is called stuck
_LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})


class SparkEngineError(StorageHandlerError, RuntimeError):
    """The Spark job that reads footers could not start or failed; nothing was committed."""


class SparkMasterUnreachableError(SparkEngineError, ConnectionError):
    """Nothing answers at the Spark master's address."""


class SparkEngine:
    """Footers read by a Spark job: one task per slice of files, Arrow IPC back to the driver.

    ``spark``: an existing session to run on (never stopped here). Without one, each :meth:`read` starts its own
    application on ``master`` and stops it (with its JVM) before returning; inside ``with SparkEngine(...)`` one
    application serves every read until the block ends. ``slices``: tasks per job (default: one per
    :data:`SLICE_FILES` files, at least two per core). ``max_workers``: threads per task. ``conf``: extra Spark
    settings for an application started here (``spark-defaults.conf`` in ``$SPARK_CONF_DIR`` applies too).
    """

    name = "spark"

    def __init__(self, spark: SparkSession | None = None, master: str | None = None, slices: int | None = None, *,
                 max_workers: int | None = None, conf: Mapping[str, str] | None = None,
                 accept_timeout: float = ACCEPT_TIMEOUT, poll_interval: float = 0.5) -> None:
        if slices is not None and slices < 1:
            raise ConfigurationError(f"slices must be at least 1, not {slices}")
        if max_workers is not None and max_workers < 1:
            raise ConfigurationError(f"max_workers must be at least 1, not {max_workers}")
        self.spark = spark
        self.master = master or os.environ.get(ENV_MASTER) or DEFAULT_MASTER
        self.slices = slices
        self.max_workers = max_workers
        self.conf = dict(conf or {})
        self.accept_timeout = accept_timeout
        self.poll_interval = poll_interval
        self.log_path: Path | None = None  # the driver log of the application started here (kept if a job failed)
        self._keep = False
        self._failed = False
        self._owned: _OwnedContext | None = None

    def __enter__(self) -> SparkEngine:
        self._keep = True
        return self

    def __exit__(self, *exc: object) -> None:
        self._keep = False
        self.close()

    def close(self) -> None:
        """Stop the application (and its JVM) this engine started, if any; its driver log is removed unless a
        job failed (the error names the log)."""
        owned, self._owned = self._owned, None
        if owned is not None:
            owned.stop(keep_log=self._failed)
            if not self._failed:
                self.log_path = None
        self._failed = False

    def read(self, job: FooterJob, files: Sequence[DataFile], progress: ProgressCallback | None = None) -> pa.Table:
        total = len(files)
        if total == 0:  # nothing to read (a refresh that found no change): no application at all
            return stats_table(job.columns, [], job.options)
        sc = self._context()
        try:
            count = self.slices or max(2 * sc.defaultParallelism, -(-total // SLICE_FILES))
            count = min(count, total)
            size = -(-total // count)
            slices = [list(files[s:s + size]) for s in range(0, total, size)]
            log.info("reading %d footers on Spark (%s) in %d tasks", total, sc.master, len(slices))
            blobs = self._run(sc, job, slices, progress, total)
        except BaseException:
            self._failed = True
            raise
        finally:
            if not self._keep:
                self.close()
        parts = [pa.ipc.open_stream(blob).read_all() for _, blob in sorted(blobs, key=lambda b: b[0])]
        if progress is not None:
            progress(total, total)
        return pa.concat_tables(parts)

    # -- the job
    def _run(self, sc: SparkContext, job: FooterJob, slices: list[list[DataFile]],
             progress: ProgressCallback | None, total: int) -> list[tuple[int, bytes]]:
        """Run the job in a thread (``collect`` blocks) while this one reports progress from Spark's status
        tracker: slices completed times slice size, polled every ``poll_interval`` (no listener to install)."""
        group = f"hsh-footers-{uuid.uuid4().hex[:12]}"
        outcome: dict[str, Any] = {}

        def run() -> None:
            try:
                sc.setJobGroup(group, f"hsh: read {total} Parquet footers of {job.table_location}", True)
                rdd = sc.parallelize(list(enumerate(slices)), len(slices))
                outcome["blobs"] = rdd.map(functools.partial(_read_slice, job, self.max_workers)).collect()
            except BaseException as exc:  # noqa: BLE001 - re-raised by the calling thread
                outcome["error"] = exc

        thread = threading.Thread(target=run, name="hsh-spark-footers", daemon=True)
        thread.start()
        started = time.monotonic()
        size, done, running = len(slices[0]), 0, False
        tracker = sc.statusTracker()
        while thread.is_alive():
            thread.join(self.poll_interval)
            if not thread.is_alive():
                break
            completed, active = _task_counts(tracker, group)
            running = running or completed > 0 or active > 0
            if progress is not None and completed * size > done:
                done = min(total - 1, completed * size)
                progress(done, total)
            if not running and time.monotonic() - started > self.accept_timeout:
                sc.cancelJobGroup(group)
                thread.join(60)
                raise SparkEngineError(
                    f"no executor of Spark master {sc.master} ran a task within {self.accept_timeout:.0f} s; "
                    "check that workers are registered with free cores and enough memory for "
                    f"spark.executor.memory{self._log_hint()}"
                )
        if "error" in outcome:
            raise SparkEngineError(
                f"the Spark job reading the footers of {job.table_location} on {sc.master} failed: "
                f"{_cause(outcome['error'])}{self._log_hint()}"
            ) from outcome["error"]
        return list(outcome["blobs"])

    # -- the application
    def _context(self) -> SparkContext:
        if self.spark is not None:
            try:
                return self.spark.sparkContext
            except Exception as e:  # noqa: BLE001 - Spark Connect raises its own "not implemented" error
                raise ConfigurationError("the Spark engine needs a classic SparkSession (a Spark Connect session "
                                         "has no SparkContext to run tasks with)") from e
        if self._owned is None:
            self._owned = _OwnedContext.start(self.master, self.conf)
            self.log_path = self._owned.log_path
        return self._owned.sc

    def _log_hint(self) -> str:
        return f"; driver log: {self.log_path}" if self.log_path is not None and self._owned is not None else ""


def _read_slice(job: FooterJob, max_workers: int | None, item: tuple[int, list[DataFile]]) -> tuple[int, bytes]:
    """One task: a slice's index rows as an Arrow IPC stream (runs on an executor)."""
    index, files = item
    location = parse_location(job.table_location)
    if location.kind == LOCAL and not os.path.isdir(local_path(location.uri)):
        raise SparkEngineError(
            f"table folder {job.table_location} is not visible on executor host {socket.gethostname()}: a table on "
            "a local disk can be indexed on Spark only where every node sees it at the same path (a shared file "
            "system); use --engine local"
        )
    table = LocalEngine(max_workers, CHUNK_FILES).read(job, files)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return index, sink.getvalue().to_pybytes()


def _task_counts(tracker: Any, group: str) -> tuple[int, int]:
    """(completed, active) tasks of the jobs of ``group``, from Spark's status tracker."""
    completed = active = 0
    for job_id in tracker.getJobIdsForGroup(group):
        info = tracker.getJobInfo(job_id)
        for stage_id in (info.stageIds if info is not None else ()):
            stage = tracker.getStageInfo(stage_id)
            if stage is not None:
                completed += stage.numCompletedTasks
                active += stage.numActiveTasks
    return completed, active


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


class _OwnedContext:
    """A SparkContext this engine started: its own JVM (log to a file), stopped by its PID."""

    def __init__(self, sc: SparkContext, gateway: Any, log_file: IO[bytes], log_path: Path) -> None:
        self.sc = sc
        self.gateway = gateway
        self.log_file = log_file
        self.log_path = log_path

    @classmethod
    def start(cls, master: str, extra: Mapping[str, str]) -> _OwnedContext:
        from pyspark import SparkConf, SparkContext
        from pyspark.java_gateway import launch_gateway

        from metastore.local import find_java, state_home

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


class AutoEngine:
    """The local pool for small jobs, Spark for jobs of at least ``threshold`` files: decided at :meth:`read`,
    when the number of files to read is known (a refresh of a big table usually reads few)."""

    name = "auto"

    def __init__(self, local: FooterEngine, spark: FooterEngine | None, threshold: int = AUTO_THRESHOLD) -> None:
        if threshold < 1:
            raise ConfigurationError(f"the Spark threshold must be at least 1 file, not {threshold}")
        self.local = local
        self.spark = spark
        self.threshold = threshold
        self.last_used: str | None = None

    def read(self, job: FooterJob, files: Sequence[DataFile], progress: ProgressCallback | None = None) -> pa.Table:
        engine = self.spark if self.spark is not None and len(files) >= self.threshold else self.local
        self.last_used = engine.name
        return engine.read(job, files, progress)


def choose_engine(kind: str, *, master: str | None = None, threshold: int | None = None,
                  max_workers: int | None = None) -> FooterEngine:
    """The engine ``--engine kind`` means: ``local``; ``spark`` on ``master`` (else ``$HSH_SPARK_MASTER``, else
    ``local[*]``); ``auto``: Spark only when a master is given (option or ``$HSH_SPARK_MASTER``) and at least
    ``threshold`` (else ``$HSH_SPARK_THRESHOLD``, else :data:`AUTO_THRESHOLD`) files need reading."""
    local = LocalEngine(max_workers=max_workers)
    master = master or os.environ.get(ENV_MASTER) or None
    if kind == "local":
        return local
    if kind == "spark":
        return SparkEngine(master=master or DEFAULT_MASTER, max_workers=max_workers)
    if kind != "auto":
        raise ConfigurationError(f"--engine {kind}: choose local, spark or auto")
    if threshold is None:
        text = os.environ.get(ENV_THRESHOLD, "").strip()
        try:
            threshold = int(text) if text else AUTO_THRESHOLD
        except ValueError as e:
            raise ConfigurationError(f"${ENV_THRESHOLD}={text!r}: give a number of files, e.g. 200000") from e
    if threshold < 1:
        raise ConfigurationError(f"--engine-threshold {threshold}: give at least 1 file")
    if master is None:
        return local  # no cluster configured: Spark in this machine's cores cannot beat the local pool
    return AutoEngine(local, SparkEngine(master=master, max_workers=max_workers), threshold)
