"""Footer engines: who reads the footers of many files into index rows.

Building or refreshing the index is one job -- "these files, these columns, these options: give me their index
rows" -- that can run in this process (:class:`LocalEngine`, a pool sized by :mod:`.pool`) or on a Spark cluster
(:mod:`storage_handler.stats.engines.spark`). Both turn each chunk of files into rows with the same function
(:func:`.chunks.read_chunk`) and return the same Arrow table for the same files, so where the work ran never
changes the index.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol

import pyarrow as pa

from storage_handler.stats.engines.chunks import FooterJob, read_chunk
from storage_handler.stats.engines.pool import (
    PoolPlan,
    ProgressCallback,
    pool_plan,
    run_chunks,
    with_thread_fallback,
)
from storage_handler.stats.engines.scan import FooterScan, scan_footers
from storage_handler.stats.files.file_list import FileList
from storage_handler.stats.files.walk import DataFile
from storage_handler.stats.index.file_stats import StatsOptions
from storage_handler.stats.index.layout import check_files, indexed_columns, stats_table
from storage_handler.storage import LOCAL, parse_location, storage_for
from storage_handler.types import HiveType

__all__ = ["FooterEngine", "FooterJob", "LocalEngine", "ProgressCallback", "build_index"]


class FooterEngine(Protocol):
    """Reads footers: :meth:`read` turns ``files`` (sorted by path) into index rows in the same order, of the index
    schema, for a table whose columns are known; :meth:`scan` reads a dataset being registered, whose columns are
    not known yet, for its schemas and its index rows in one pass (:mod:`storage_handler.stats.engines.scan`)."""

    name: str

    def read(self, job: FooterJob, files: Sequence[DataFile], progress: ProgressCallback | None = None) -> pa.Table:
        ...

    def scan(self, root: str, files: Sequence[DataFile], options: StatsOptions, *,
             conf: Mapping[str, str] | None = None, progress: ProgressCallback | None = None) -> FooterScan:
        ...


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
        return with_thread_fallback(plan, lambda p: self._read(job, listed, progress, p))

    def _read(self, job: FooterJob, files: FileList, progress: ProgressCallback | None,
              plan: PoolPlan) -> pa.Table:
        parts = dict(run_chunks(plan, len(files), read_chunk, lambda a, b: (job, files[a:b]), progress))
        return pa.concat_tables([parts[start] for start in sorted(parts)])

    def scan(self, root: str, files: Sequence[DataFile], options: StatsOptions, *,
             conf: Mapping[str, str] | None = None, progress: ProgressCallback | None = None) -> FooterScan:
        return scan_footers(root, files, options, conf=conf, max_workers=self.max_workers, progress=progress,
                            processes=self.processes, chunk_files=self.chunk_files)


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

    ``engine`` (a :class:`~storage_handler.stats.engines.local.FooterEngine`) reads them, by default a local pool of
    ``max_workers`` threads; ``progress(done, total)`` is called as chunks of files finish.
    """
    cols = indexed_columns(columns)
    file_list = FileList.of(files).sorted_by_path()
    check_files(file_list)
    job = FooterJob(table_location, cols, options or StatsOptions(), tuple(sorted((conf or {}).items())))
    return (engine or LocalEngine(max_workers)).read(job, file_list, progress)
