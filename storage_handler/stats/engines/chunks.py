"""One chunk of files into index rows: the unit of work of every footer engine.

Every engine -- the local pool, a Spark task -- hands :func:`read_chunk` a :class:`FooterJob` and a slice of the
file list, so where the work ran never changes the rows. Footers are read natively when every file of the chunk is
on this machine's disk (:mod:`.native_footers`), else through pyarrow file by file (object stores, or no C++
compiler); either way the statistics arrive as :class:`~.raw_footers.RawFooters` columns and
:func:`~.rows.footer_rows` turns them into rows at once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.parquet as pq

from storage_handler.errors import StorageHandlerError
from storage_handler.stats.files.file_list import FileList
from storage_handler.stats.files.walk import DataFile
from storage_handler.stats.footers.native_reader import native_reader, raw_of
from storage_handler.stats.footers.raw import RawFooters
from storage_handler.stats.index.file_stats import (
    FileStats,
    StatsOptions,
    footer_error,
    read_file_stats,
    read_footer,
)
from storage_handler.stats.index.layout import stats_table
from storage_handler.stats.index.rows import footer_rows
from storage_handler.storage import (
    FileEntry,
    Storage,
    is_absolute,
    is_local,
    local_path,
    parse_location,
    storage_for,
)
from storage_handler.types import HiveType


@dataclass(frozen=True, slots=True)
class FooterJob:
    """How to read footers of one table: its location, its indexed columns, the statistics options and the
    table's ``fs.s3a.*`` settings. Small and picklable: it travels to every task, the files go in chunks."""

    table_location: str
    columns: tuple[tuple[str, HiveType], ...]
    options: StatsOptions
    conf: tuple[tuple[str, str], ...] = ()


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
