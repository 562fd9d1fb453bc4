"""Footer engines: who reads the footers of many files into index rows, and how many at a time.

Building or refreshing the index is one job -- "these files, these columns, these options: give me their index
rows" -- that can run in this process (:class:`LocalEngine`) or on a Spark cluster
(:mod:`storage_handler.stats.spark_engine`). Both return the same Arrow table for the same files (the same code
turns one chunk of files into rows), so where the work ran never changes the index.

Why chunks: a task per file costs a future, a lock and a wake-up per file (it was most of the time of indexing
tiny files); a task per chunk of :data:`CHUNK_FILES` files costs that once per chunk, and each chunk becomes an
Arrow table at once, so memory holds index rows, never a Python object per file of the whole table.

Why threads: a footer read waits on storage (a ranged GET on S3, a page-cache read locally) and pyarrow parses it
without the GIL; on an object store many reads must be in flight at once. ``max_workers`` bounds them.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import (
    FIRST_COMPLETED,
    Executor,
    Future,
    ProcessPoolExecutor,
    ThreadPoolExecutor,
    wait,
)
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import pyarrow as pa

from storage_handler.errors import StorageHandlerError
from storage_handler.stats.file_list import FileList
from storage_handler.stats.footer import FileStats, StatsOptions, read_file_stats
from storage_handler.stats.index import check_files, indexed_columns, stats_table
from storage_handler.stats.listing import DataFile
from storage_handler.storage import LOCAL, FileEntry, Storage, parse_location, storage_for
from storage_handler.types import HiveType

if TYPE_CHECKING:
    from storage_handler.stats.scan import FooterScan

log = logging.getLogger(__name__)
ProgressCallback = Callable[[int, int], None]  # (files done, files total)
CHUNK_FILES = 256
PROCESS_MIN_FILES = 20_000  # below this, starting worker processes costs more than it saves
LOCAL_WORKERS = 2 * (os.cpu_count() or 2)  # footers from the page cache: the CPU bounds it
REMOTE_WORKERS = 32  # footers from an object store: latency bounds it


@dataclass(frozen=True, slots=True)
class FooterJob:
    """How to read footers of one table: its location, its indexed columns, the statistics options and the
    table's ``fs.s3a.*`` settings. Small and picklable: it travels to every task, the files go in chunks."""

    table_location: str
    columns: tuple[tuple[str, HiveType], ...]
    options: StatsOptions
    conf: tuple[tuple[str, str], ...] = ()


class FooterEngine(Protocol):
    """Reads footers: :meth:`read` turns ``files`` (sorted by path) into index rows in the same order, of the index
    schema, for a table whose columns are known; :meth:`scan` reads a dataset being registered, whose columns are
    not known yet, for its schemas and its index rows in one pass (:mod:`storage_handler.stats.scan`)."""

    name: str

    def read(self, job: FooterJob, files: Sequence[DataFile], progress: ProgressCallback | None = None) -> pa.Table:
        ...

    def scan(self, root: str, files: Sequence[DataFile], options: StatsOptions, *,
             conf: Mapping[str, str] | None = None, progress: ProgressCallback | None = None) -> FooterScan:
        ...


def read_chunk(job: FooterJob, files: Sequence[DataFile]) -> pa.Table:
    """Index rows of ``files`` (paths relative to the table, or absolute): the unit of work of every engine, so
    that every engine builds the same rows from the same files."""
    conf = dict(job.conf)
    root = parse_location(job.table_location).uri.rstrip("/")
    table_storage = storage_for(root, conf)
    stats = []
    for f in files:
        if f.path.startswith("/") or "://" in f.path:  # a partition registered outside the table folder
            stats.append(_read_one(f.path, f, job.columns, job.options, None, conf))
        else:
            stats.append(_read_one(f"{root}/{f.path}", f, job.columns, job.options, table_storage, conf))
    return stats_table(job.columns, zip(files, stats, strict=True), job.options)


def _read_one(uri: str, file: DataFile, columns: Sequence[tuple[str, HiveType]], options: StatsOptions,
              storage: Storage | None, conf: Mapping[str, str]) -> FileStats:
    if storage is None:
        try:
            storage = storage_for(uri, conf)
        except StorageHandlerError as exc:
            return FileStats.failed(f"{type(exc).__name__}: {exc}"[:1000])
    entry = FileEntry(uri, file.size, file.mtime_ms, file.version)
    return read_file_stats(uri, columns, options, storage=storage, entry=entry)


class LocalEngine:
    """Footers read on this machine by a bounded pool, a chunk of files per task: threads where footers wait on
    the network; worker processes for local tables of at least :data:`PROCESS_MIN_FILES` files on a machine of
    several cores, where turning footers into statistics is Python work that threads serialize on the GIL
    (``processes``: None chooses so; False inside a Spark task, whose core the cluster already gave it)."""

    name = "local"

    def __init__(self, max_workers: int | None = None, chunk_files: int = CHUNK_FILES,
                 processes: bool | None = None) -> None:
        if max_workers is not None and max_workers < 1:
            raise ValueError(f"max_workers must be at least 1, not {max_workers}")
        self.max_workers = max_workers
        self.chunk_files = max(1, chunk_files)
        self.processes = processes

    def read(self, job: FooterJob, files: Sequence[DataFile], progress: ProgressCallback | None = None) -> pa.Table:
        storage_for(job.table_location, dict(job.conf))  # refuse an unreachable scheme before any thread starts
        total = len(files)
        if total == 0:
            return stats_table(job.columns, [], job.options)
        local = parse_location(job.table_location).kind == LOCAL
        cpus = os.cpu_count() or 1
        processes = self.processes if self.processes is not None else (
            local and total >= PROCESS_MIN_FILES and cpus > 1)
        try:
            return self._read(job, files, progress, local, processes)
        except BrokenProcessPool as exc:
            if not processes:
                raise
            warn_processes_failed(exc)
            return self._read(job, files, progress, local, False)

    def _read(self, job: FooterJob, files: Sequence[DataFile], progress: ProgressCallback | None, local: bool,
              processes: bool) -> pa.Table:
        total = len(files)
        cpus = os.cpu_count() or 1
        default = (cpus if processes else LOCAL_WORKERS) if local else REMOTE_WORKERS
        workers = min(self.max_workers or default, total)
        # small chunks while there are few files, so every worker gets some
        size = min(self.chunk_files, max(1, -(-total // workers)))
        bounds = [(s, min(s + size, total)) for s in range(0, total, size)]
        parts: list[pa.Table | None] = [None] * len(bounds)
        done = 0
        lock = threading.Lock()
        pool: Executor = (ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"))
                          if processes else ThreadPoolExecutor(max_workers=workers, thread_name_prefix="hsh-footer"))
        with pool:
            pending: dict[Future[pa.Table], int] = {}
            queue = iter(enumerate(bounds))
            for i, (start, stop) in queue:  # keep at most 2 chunks per worker in flight: bounded memory
                pending[pool.submit(read_chunk, job, files[start:stop])] = i
                if len(pending) >= 2 * workers:
                    break
            while pending:
                finished, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in finished:
                    i = pending.pop(future)
                    parts[i] = future.result()
                    with lock:
                        done += bounds[i][1] - bounds[i][0]
                    if progress is not None:
                        progress(done, total)
                    nxt = next(queue, None)
                    if nxt is not None:
                        pending[pool.submit(read_chunk, job, files[nxt[1][0]:nxt[1][1]])] = nxt[0]
        return pa.concat_tables([p for p in parts if p is not None])

    def scan(self, root: str, files: Sequence[DataFile], options: StatsOptions, *,
             conf: Mapping[str, str] | None = None, progress: ProgressCallback | None = None) -> FooterScan:
        from storage_handler.stats.scan import scan_footers

        return scan_footers(root, files, options, conf=conf, max_workers=self.max_workers, progress=progress)


def warn_processes_failed(exc: BaseException) -> None:
    """Worker processes could not start or died: the caller reads with threads instead (slower, same rows).
    The usual cause is a script without a main guard: ``spawn`` re-imports it in every worker."""
    log.warning("footer worker processes failed (%s); reading footers with threads instead. A script that builds "
                "indexes must guard its entry point with `if __name__ == \"__main__\":`", exc)


def build_index(
    table_location: str,
    columns: Sequence[tuple[str, HiveType]],
    files: Iterable[DataFile | tuple[str, int, int, dict[str, str | None]]],
    *,
    options: StatsOptions | None = None,
    max_workers: int | None = None,
    progress: ProgressCallback | None = None,
    conf: Mapping[str, str] | None = None,
    engine: FooterEngine | None = None,
) -> pa.Table:
    """Build the index table for ``files`` (paths relative to ``table_location``) by reading every footer.

    ``engine`` (a :class:`~storage_handler.stats.engine.FooterEngine`) reads them, by default a local pool of
    ``max_workers`` threads; ``progress(done, total)`` is called as chunks of files finish.
    """
    cols = indexed_columns(columns)
    file_list = FileList.of(files).sorted_by_path()
    check_files(file_list)
    job = FooterJob(table_location, cols, options or StatsOptions(), tuple(sorted((conf or {}).items())))
    return (engine or LocalEngine(max_workers)).read(job, file_list, progress)
