"""Bring the index up to date for a few partitions only: what a write touched, or what a follower saw change.

Why a scoped update and not ``hsh index refresh``: a write adds files to one partition (or a few) of a table
that may have thousands; listing all of them and comparing every index row would make each INSERT pay for the
whole table. Here only the given partitions' folders are listed (one LIST each), only their index rows are
compared with that listing (rows reused when path, size, mtime and version tag still match, footers read for
new and changed files only, rows of files gone dropped -- INSERT OVERWRITE), and every other row is copied
as it is. The result is committed with :func:`~storage_handler.stats.refresh.commit_with_retry`: the update is
a pure function of the snapshot, so a concurrent commit (another write, the follower, a manual refresh) is
re-applied on top of, never lost.

The index keeps its own shape: the indexed columns and statistics options are the committed snapshot's, not the
caller's, so a scoped update never mixes rows of two shapes (only the footer rules are always today's: the
scope of an index built under older ones is read again, and moves the index to today's rules). Changing the shape (a column added by ``hsh sync``)
is a full refresh's job. Only where there is no index yet is the table's own choice used.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import pyarrow as pa
import pyarrow.compute as pc

from storage_handler.arrow_compat import one_array
from storage_handler.catalog.listing import index_prefixes, list_partition_files, list_table_files
from storage_handler.catalog.partitions import Partition
from storage_handler.stats.columns import PATH
from storage_handler.stats.files.diff import FileDiff
from storage_handler.stats.files.file_list import FileList
from storage_handler.stats.index.file_stats import BOUND_RULES, StatsOptions
from storage_handler.stats.index.layout import options_of
from storage_handler.stats.index.store import IndexSnapshot, load
from storage_handler.stats.refresh import carry_newer, commit_with_retry, refresh_index
from storage_handler.storage import storage_for
from storage_handler.types import HiveType


@dataclass(frozen=True, slots=True)
class IndexedTable:
    """What a scoped update needs to know of a table (from the metastore, or from a write's contract message)."""

    name: str
    location: str
    columns: tuple[tuple[str, HiveType], ...]
    partition_keys: tuple[str, ...] = ()
    options: StatsOptions = field(default_factory=StatsOptions)  # used only where there is no index yet
    conf: Mapping[str, str] = field(default_factory=dict)  # the table's fs.s3a.* settings


@dataclass(frozen=True, slots=True)
class ScopedUpdate:
    """What one scoped update did: the version now current, the files found in scope and the diff that won."""

    table: str
    version: int | None
    files: int  # visible files listed in the scoped partitions
    diff: FileDiff
    seconds: float
    newest_mtime_ms: int | None  # the newest file listed (how far behind the index was: now minus this)

    def as_dict(self) -> dict[str, object]:
        return {"table": self.table, "version": self.version, "files": self.files,
                "added": len(self.diff.added), "changed": len(self.diff.changed),
                "removed": len(self.diff.removed), "seconds": round(self.seconds, 4)}


def scope_mask(paths: pa.ChunkedArray | pa.Array, prefixes: Sequence[str] | None) -> pa.Array:
    """Index rows of files directly in the scoped folders: the path up to its last ``/`` is one of ``prefixes``
    (Hive reads no subfolder of a partition). ``prefixes`` None: the table folder itself (paths with no ``/``).
    Vectorized: one regex pass and one hash lookup over the paths, whatever the number of prefixes."""
    folders = pc.replace_substring_regex(paths, pattern="[^/]*$", replacement="", max_replacements=1)
    wanted = pa.array([""] if prefixes is None else list(prefixes), pa.string())
    mask = pc.is_in(folders, value_set=wanted)
    return one_array(mask)


def list_scope(table: IndexedTable, partitions: Sequence[Partition] | None) -> tuple[FileList, list[str] | None]:
    """The visible files of ``partitions`` (None: the unpartitioned table's folder) and the folders whose index
    rows they replace: each partition's prefix, or ``""`` for one registered at the table folder itself (None: the
    table folder only)."""
    storage = storage_for(table.location, table.conf)
    if partitions is None:
        return list_table_files(table.location, table=table.name, storage=storage), None
    files = list_partition_files(table.location, table.partition_keys, partitions, table=table.name,
                                 storage=storage, conf=table.conf)
    folders = {(index_prefixes(table.location, [p]) or [""])[0] for p in partitions}
    return files, sorted(folders)


def update_partitions(table: IndexedTable, partitions: Sequence[Partition] | None, *, attempts: int = 10,
                      listed: tuple[FileList, list[str] | None] | None = None,
                      before: IndexSnapshot | None | str = "load") -> ScopedUpdate:
    """Index exactly the files of ``partitions`` (None: an unpartitioned table), leaving every other row as is.

    ``listed``: the scope's listing when the caller already made it (:func:`list_scope`); it must have been taken
    after whatever the caller wants covered, and ``before`` should then be the index as loaded before that
    listing (rows another indexer commits after it are kept: :func:`~storage_handler.stats.refresh.carry_newer`).
    Creates the index when there is none (the rest of the table is then simply unindexed, and kept by every
    query, until a refresh).
    """
    started = time.perf_counter()
    if isinstance(before, str):
        if listed is not None:
            raise ValueError(f"table {table.name}: a scoped update given a listing needs the index as loaded "
                             "before that listing (before=...), or rows committed meanwhile could be dropped")
        before = load(table.location, conf=table.conf)
    base_paths = before.table.column(PATH) if before is not None else None
    files, prefixes = listed if listed is not None else list_scope(table, partitions)
    diffs: list[FileDiff] = []

    def update(snapshot: IndexSnapshot | None) -> pa.Table | None:
        if snapshot is None:
            fresh, diff = refresh_index(table.location, table.columns, files, None, options=table.options,
                                        conf=table.conf)
            diffs.append(diff)
            return fresh if fresh.num_rows else None
        index = snapshot.table
        inside = scope_mask(index.column(PATH), prefixes)
        scoped = index.filter(inside)
        # the index's own shape: its columns and options, never the caller's (see the module docstring); but
        # today's footer rules: rows of an outdated index were loaded untrusted (``store.validate_table``), so the
        # scope's files are read again and the rest wait, untrusted, for their own update or a refresh
        options = options_of(index.schema)
        fresh, diff = refresh_index(table.location, snapshot.columns, files, scoped,
                                    options=replace(options, rules=max(options.rules, BOUND_RULES)), conf=table.conf)
        diffs.append(diff)
        if before is None or snapshot.version != before.version:
            fresh = carry_newer(fresh, scoped, base_paths, files.paths)
        if diff.is_empty and fresh.num_rows == scoped.num_rows:
            return None
        if fresh.schema.equals(scoped.schema) and fresh.equals(scoped):
            return None  # e.g. only still-unreadable files tried again: no new version for the same rows
        outside = index.filter(pc.invert(inside))
        merged = pa.concat_tables([outside.cast(fresh.schema), fresh]) if outside.num_rows else fresh
        return merged.sort_by(PATH).replace_schema_metadata(fresh.schema.metadata)

    version = commit_with_retry(table.location, update, attempts=attempts, conf=table.conf)
    newest = int(files.mtimes.max()) if len(files) else None
    return ScopedUpdate(table.name, version, len(files), diffs[-1] if diffs else FileDiff(),
                        time.perf_counter() - started, newest)
