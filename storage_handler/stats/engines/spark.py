"""Footer reading as a Spark job, for tables too big for one machine; and the choice between the engines.

:class:`SparkEngine` splits the files to read (sorted by path) into slices, one Spark task per slice. A task reads
its slice with :class:`~storage_handler.stats.engines.local.LocalEngine` -- i.e. :func:`~storage_handler.stats.engines.chunks.
read_chunk` over chunks of the slice, by a pool of threads, because on an object store a task that read one footer
after the other would wait on one GET at a time -- and returns the rows as one Arrow IPC stream. The driver puts the
slices back in order and concatenates them: exactly the table :class:`LocalEngine` returns for the same files, so
the snapshot the caller commits (one, from the driver, by the usual protocol) is the same byte for byte.

Why the driver commits and not the tasks: the commit protocol (:mod:`storage_handler.stats.index.versions`) is one
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
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from storage_handler.errors import ConfigurationError
from storage_handler.stats.engines.local import FooterEngine, FooterJob, LocalEngine, ProgressCallback
from storage_handler.stats.engines.scan import FooterScan, scan_footers
from storage_handler.stats.engines.spark_app import (  # noqa: F401 - re-exported: the engine's errors and checks
    ENV_MASTER,
    OwnedContext,
    SparkEngineError,
    SparkMasterUnreachableError,
    _cause,
    check_master,
    is_loopback_master,
)
from storage_handler.stats.files.file_list import DataFile, FileList
from storage_handler.stats.index.file_stats import StatsOptions
from storage_handler.stats.index.layout import stats_table
from storage_handler.storage import LOCAL, local_path, parse_location

if TYPE_CHECKING:
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

ENV_THRESHOLD = "HSH_SPARK_THRESHOLD"
DEFAULT_MASTER = "local[*]"
AUTO_THRESHOLD = 200_000  # files to read; see the README's "Big tables" for why
SLICE_FILES = 2048  # files per task at most: ~0.4 s of tiny local footers, a cheap retry when an executor is lost
ACCEPT_TIMEOUT = 300.0  # seconds a job may wait for its first running task before it is called stuck


SliceTask = Callable[[tuple[int, Sequence[DataFile]]], tuple[int, Any]]  # (slice number, files) -> (number, result)


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
        self._owned: OwnedContext | None = None

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
        blobs = self._job(files, lambda _size: functools.partial(_read_slice, job, self.max_workers), progress,
                          f"read {total} Parquet footers of {job.table_location}")
        return pa.concat_tables([pa.ipc.open_stream(blob).read_all() for blob in blobs])

    def scan(self, root: str, files: Sequence[DataFile], options: StatsOptions, *,
             conf: Mapping[str, str] | None = None, progress: ProgressCallback | None = None) -> FooterScan:
        """Registration's one pass (schemas and index rows) as a Spark job: each task scans its slice with
        :func:`~storage_handler.stats.engines.scan.scan_footers` (threads) and returns what it found; the driver merges
        the parts, which, like chunks, give the same result in any order."""
        total = len(files)
        scan = FooterScan()
        if total == 0:
            return scan
        conf_items = tuple(sorted((conf or {}).items()))
        for part in self._job(files, lambda size: functools.partial(_scan_slice, root, conf_items, options,
                                                                    self.max_workers, size),
                              progress, f"scan {total} Parquet footers of {root}"):
            scan.absorb(part)
        return scan

    def _job(self, files: Sequence[DataFile], task_for: Callable[[int], SliceTask],
             progress: ProgressCallback | None, what: str) -> list[Any]:
        """Run one task per slice of ``files`` (``task_for(slice size)`` makes the task) and return the tasks'
        results in slice order; the application started for it is stopped unless inside ``with``."""
        total = len(files)
        sc = self._context()
        try:
            slices = self._slices(sc, files)
            log.info("%s on Spark (%s) in %d tasks", what, sc.master, len(slices))
            parts = self._run(sc, task_for(len(slices[0])), slices, progress, total, what)
        except BaseException:
            self._failed = True
            raise
        finally:
            if not self._keep:
                self.close()
        if progress is not None:
            progress(total, total)
        return [part for _, part in sorted(parts, key=lambda p: p[0])]

    def _slices(self, sc: SparkContext, files: Sequence[DataFile]) -> list[FileList]:
        """Views of one columnar list (a slice becomes rows only as it is pickled for its task)."""
        total = len(files)
        count = min(self.slices or max(2 * sc.defaultParallelism, -(-total // SLICE_FILES)), total)
        size = -(-total // count)
        listed = FileList.of(files)
        return [listed[s:s + size] for s in range(0, total, size)]

    # -- the job
    def _run(self, sc: SparkContext, task: SliceTask,
             slices: list[FileList], progress: ProgressCallback | None, total: int,
             what: str) -> list[tuple[int, Any]]:
        """Run the job in a thread (``collect`` blocks) while this one reports progress from Spark's status
        tracker: slices completed times slice size, polled every ``poll_interval`` (no listener to install)."""
        group = f"hsh-footers-{uuid.uuid4().hex[:12]}"
        outcome: dict[str, Any] = {}

        def run() -> None:
            try:
                sc.setJobGroup(group, f"hsh: {what}", True)
                rdd = sc.parallelize(list(enumerate(slices)), len(slices))
                outcome["blobs"] = rdd.map(task).collect()
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
                f"the Spark job to {what} on {sc.master} failed: "
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
            self._owned = OwnedContext.start(self.master, self.conf)
            self.log_path = self._owned.log_path
        return self._owned.sc

    def _log_hint(self) -> str:
        return f"; driver log: {self.log_path}" if self.log_path is not None and self._owned is not None else ""


def _read_slice(job: FooterJob, max_workers: int | None, item: tuple[int, Sequence[DataFile]]) -> tuple[int, bytes]:
    """One task: a slice's index rows as an Arrow IPC stream (runs on an executor)."""
    index, files = item
    _check_visible(job.table_location)
    table = LocalEngine(max_workers, processes=False).read(job, files)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return index, sink.getvalue().to_pybytes()


def _scan_slice(root: str, conf: tuple[tuple[str, str], ...], options: StatsOptions, max_workers: int | None,
                slice_size: int, item: tuple[int, Sequence[DataFile]]) -> tuple[int, FooterScan]:
    """One task of a registration scan: what the slice's footers hold (runs on an executor; threads, never
    processes, inside a task: the cluster already gives each task its core)."""
    index, files = item
    _check_visible(root)
    return index, scan_footers(root, files, options, conf=dict(conf), max_workers=max_workers, processes=False,
                               offset=index * slice_size)


def _check_visible(table_location: str) -> None:
    location = parse_location(table_location)
    if location.kind == LOCAL and not os.path.isdir(local_path(location.uri)):
        raise SparkEngineError(
            f"table folder {table_location} is not visible on executor host {socket.gethostname()}: a table on "
            "a local disk can be indexed on Spark only where every node sees it at the same path (a shared file "
            "system); use --engine local"
        )


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
        return self._pick(len(files)).read(job, files, progress)

    def scan(self, root: str, files: Sequence[DataFile], options: StatsOptions, *,
             conf: Mapping[str, str] | None = None, progress: ProgressCallback | None = None) -> FooterScan:
        return self._pick(len(files)).scan(root, files, options, conf=conf, progress=progress)

    def _pick(self, files: int) -> FooterEngine:
        engine = self.spark if self.spark is not None and files >= self.threshold else self.local
        self.last_used = engine.name
        return engine


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
