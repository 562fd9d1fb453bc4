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
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import (
    FIRST_COMPLETED,
    Executor,
    Future,
    ProcessPoolExecutor,
    ThreadPoolExecutor,
    wait,
)
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import pyarrow as pa
import pyarrow.parquet as pq

from storage_handler.errors import StorageHandlerError
from storage_handler.stats.file_list import FileList
from storage_handler.stats.footer import (
    FileStats,
    StatsOptions,
    footer_error,
    read_file_stats,
    read_footer,
)
from storage_handler.stats.index import check_files, indexed_columns, stats_table
from storage_handler.stats.listing import DataFile
from storage_handler.stats.native_footers import native_reader, raw_of
from storage_handler.stats.raw_footers import RawFooters
from storage_handler.stats.rows import footer_rows
from storage_handler.storage import (
    LOCAL,
    FileEntry,
    Storage,
    is_absolute,
    is_local,
    local_path,
    parse_location,
    storage_for,
)
from storage_handler.types import HiveType

if TYPE_CHECKING:
    from storage_handler.stats.scan import FooterScan

log = logging.getLogger(__name__)
ProgressCallback = Callable[[int, int], None]  # (files done, files total)
T = TypeVar("T")
CHUNK_FILES = 256  # files per task when footers are read through pyarrow (one Python object per file)
NATIVE_CHUNK_FILES = 4096  # files per task for the native reader (a fixed cost per chunk, none per file)
PROCESS_MIN_FILES = 20_000  # below this, starting worker processes costs more than it saves
LOCAL_THREADS_PER_CPU = 2  # pyarrow's Python path from the page cache: the CPU bounds it, the GIL is released often
REMOTE_WORKERS = 32  # footers from an object store: latency bounds it


def usable_cpus() -> int:
    """The cores this process may keep busy: inside a Spark task its share (``spark.task.cpus``), elsewhere all.

    Why: an executor runs one task per core at once; a task sizing its pool by the machine's cores would run
    cores x cores CPU-bound threads there. ``pyspark`` is only consulted when it is already imported (a Spark
    Python worker has), so the CLI never pays for importing it.
    """
    if "pyspark" in sys.modules:
        from pyspark import TaskContext  # optional dependency, already loaded: no import cost

        context = TaskContext.get()
        if context is not None:
            return max(1, context.cpus())
    return os.cpu_count() or 1


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
    if job.options.footer_only:  # the common case: footers only, columnar (no Python object per file)
        listed = FileList.of(files)
        return footer_rows(job.columns, listed, read_raw(root, listed, conf), job.options)
    table_storage = storage_for(root, conf)
    stats = []
    for f in files:
        if is_absolute(f.path):  # a partition registered outside the table folder
            stats.append(_read_one(f.path, f, job.columns, job.options, None, conf))
        else:
            stats.append(_read_one(f"{root}/{f.path}", f, job.columns, job.options, table_storage, conf))
    return stats_table(job.columns, zip(files, stats, strict=True), job.options)


def read_raw(root: str, files: FileList, conf: Mapping[str, str], *, strict: bool = False) -> RawFooters:
    """The raw footer statistics of ``files`` (relative to ``root``, or absolute): natively when every file is on
    this machine's disk and the native reader is built, else through pyarrow, file by file. An unreadable footer
    is recorded as the file's error; with ``strict`` a failing storage (bucket, credentials, endpoint) raises
    instead, since that is not one bad file."""
    paths = files.paths.to_pylist()
    reader = native_reader()
    local = _local_paths(root, paths) if reader is not None else None
    if reader is not None and local is not None:
        raw = reader.read(local, _local_error)
        if raw is not None:
            return raw
    uris = [p if is_absolute(p) else f"{root}/{p}" for p in paths]
    footers: list[pq.FileMetaData | str] = []
    for i, uri in enumerate(uris):
        entry = FileEntry(uri, int(files.sizes[i]), int(files.mtimes[i]), files.versions[i].as_py())
        try:
            with storage_for(uri, conf).open_input(uri, entry) as source:
                footers.append(read_footer(source))
        except StorageHandlerError as exc:
            if strict:
                raise
            footers.append(footer_error(exc))
        except Exception as exc:  # noqa: BLE001 - an unreadable footer: recorded, never fatal for the table
            footers.append(footer_error(exc))
    return raw_of(footers)


def _local_paths(root: str, paths: Sequence[str]) -> list[str] | None:
    """Each file's path on this machine's disk (relative ones joined to the table folder's path, parsed once), or
    None when the table or any file is elsewhere."""
    if not is_local(root):
        return None
    base = local_path(root)
    out = []
    for p in paths:
        if not is_absolute(p):
            out.append(f"{base}/{p}")
        elif p.startswith("/"):
            out.append(p)
        elif is_local(p):  # a file: URI
            out.append(local_path(p))
        else:
            return None
    return out


def _local_error(path: str) -> str | None:
    """pyarrow's account of a local footer the native reader could not read (None: pyarrow reads it)."""
    try:
        with pa.OSFile(path, "rb") as source:
            read_footer(source)
    except Exception as exc:  # noqa: BLE001 - the error text is the answer
        return footer_error(exc)
    return None


def _read_one(uri: str, file: DataFile, columns: Sequence[tuple[str, HiveType]], options: StatsOptions,
              storage: Storage | None, conf: Mapping[str, str]) -> FileStats:
    if storage is None:
        try:
            storage = storage_for(uri, conf)
        except StorageHandlerError as exc:
            return FileStats.failed(f"{type(exc).__name__}: {exc}"[:1000])
    entry = FileEntry(uri, file.size, file.mtime_ms, file.version)
    return read_file_stats(uri, columns, options, storage=storage, entry=entry)


@dataclass(frozen=True, slots=True)
class PoolPlan:
    """How a local pool reads footers: ``workers`` at once, ``chunk`` files per task, in threads or processes."""

    workers: int
    chunk: int
    processes: bool


def pool_plan(local: bool, total: int, options: StatsOptions, *, max_workers: int | None = None,
              processes: bool | None = None, chunk_files: int | None = None) -> PoolPlan:
    """The one rule for sizing a footer pool (the index build and registration's scan both use it).

    * Local files with the native reader (:mod:`.native_footers`): threads, one per core, chunks of
      :data:`NATIVE_CHUNK_FILES` -- the C++ call and the Arrow work release the GIL, and a chunk costs a fixed few
      hundred microseconds of Python however many files it holds.
    * Local files read through pyarrow: worker processes (one per core) for tables of at least
      :data:`PROCESS_MIN_FILES` files, since that path is Python per file, serialized on the GIL; threads below.
    * Object stores: :data:`REMOTE_WORKERS` threads, since each footer waits on the network.

    Cores are :func:`usable_cpus`: inside a Spark task, the task's share, not the executor machine's, and
    ``processes=False`` is forced there. Chunks shrink while there are few files, so every worker gets some.
    """
    cpus = usable_cpus()
    native = local and options.footer_only and native_reader() is not None
    if processes is None:
        processes = local and not native and total >= PROCESS_MIN_FILES and cpus > 1
    default = cpus if processes or native else (LOCAL_THREADS_PER_CPU * cpus if local else REMOTE_WORKERS)
    workers = max(1, min(max_workers or default, total))
    chunk = chunk_files or (NATIVE_CHUNK_FILES if native else CHUNK_FILES)
    return PoolPlan(workers, max(1, min(chunk, -(-total // workers))), processes)


def run_chunks(plan: PoolPlan, total: int, task: Callable[..., T], args: Callable[[int, int], tuple[Any, ...]],
               progress: ProgressCallback | None = None) -> Iterator[tuple[int, T]]:
    """``task(*args(start, stop))`` over consecutive chunks of ``total`` files on a pool sized by ``plan``;
    yields ``(start, result)`` as chunks finish, in any order, and reports ``progress(done, total)``.

    At most two chunks per worker are in flight, so memory holds a bounded number of results however big the
    table. The first failure propagates; chunks not started yet are cancelled.
    """
    pool: Executor = (ProcessPoolExecutor(plan.workers, mp_context=multiprocessing.get_context("spawn"))
                      if plan.processes else ThreadPoolExecutor(plan.workers, thread_name_prefix="hsh-footer"))
    starts = iter(range(0, total, plan.chunk))
    pending: dict[Future[T], tuple[int, int]] = {}
    done = 0

    def submit() -> None:
        start = next(starts, None)
        if start is not None:
            stop = min(start + plan.chunk, total)
            pending[pool.submit(task, *args(start, stop))] = (start, stop)

    try:
        for _ in range(2 * plan.workers):
            submit()
        while pending:
            finished, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in finished:
                start, stop = pending.pop(future)
                result = future.result()
                done += stop - start
                if progress is not None:
                    progress(done, total)
                yield start, result
                submit()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


class LocalEngine:
    """Footers read on this machine by a bounded pool, a chunk of files per task (:func:`pool_plan` sizes it)."""

    name = "local"

    def __init__(self, max_workers: int | None = None, chunk_files: int | None = None,
                 processes: bool | None = None) -> None:
        if max_workers is not None and max_workers < 1:
            raise ValueError(f"max_workers must be at least 1, not {max_workers}")
        self.max_workers = max_workers
        self.chunk_files = None if chunk_files is None else max(1, chunk_files)
        self.processes = processes

    def read(self, job: FooterJob, files: Sequence[DataFile], progress: ProgressCallback | None = None) -> pa.Table:
        storage_for(job.table_location, dict(job.conf))  # refuse an unreachable scheme before any thread starts
        if len(files) == 0:
            return stats_table(job.columns, [], job.options)
        listed = FileList.of(files)
        plan = pool_plan(parse_location(job.table_location).kind == LOCAL, len(listed), job.options,
                         max_workers=self.max_workers, processes=self.processes, chunk_files=self.chunk_files)
        try:
            return self._read(job, listed, progress, plan)
        except BrokenProcessPool as exc:
            if not plan.processes:
                raise
            warn_processes_failed(exc)
            return self._read(job, listed, progress, replace(plan, processes=False))

    def _read(self, job: FooterJob, files: FileList, progress: ProgressCallback | None,
              plan: PoolPlan) -> pa.Table:
        parts = dict(run_chunks(plan, len(files), read_chunk, lambda a, b: (job, files[a:b]), progress))
        return pa.concat_tables([parts[start] for start in sorted(parts)])

    def scan(self, root: str, files: Sequence[DataFile], options: StatsOptions, *,
             conf: Mapping[str, str] | None = None, progress: ProgressCallback | None = None) -> FooterScan:
        from storage_handler.stats.scan import scan_footers

        return scan_footers(root, files, options, conf=conf, max_workers=self.max_workers, progress=progress,
                            processes=self.processes, chunk_files=self.chunk_files)


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
