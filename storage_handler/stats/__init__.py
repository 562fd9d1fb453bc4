"""The column-statistics index: per-file row count, min / max / null count (and optionally bloom filters and value
lists) from Parquet footers, kept next to the data as versioned snapshots -- the shape Delta keeps in its log.

Five sub-packages, each one concept, listed bottom to top; a package imports only from the ones above it in this
list (``tests/test_layout.py`` fails when one reaches the other way):

* ``files/``      -- a table's files: the walk of its folders (``walk``), the listing as columns (``file_list``),
  and the comparison of a listing with an index (``diff``);
* ``footers/``    -- reading Parquet footers: the Thrift walk and its guard, the raw statistics as columns (in C++
  where built, ``native_reader``), one footer bound to a table-typed value (``convert``) and the per-file bounds
  (``bounds``);
* ``membership/`` -- bloom filters and value lists: their spec, the split-block filter, reading them from footers
  or column values, refreshing them;
* ``index/``      -- the index itself: one file's statistics (``file_stats``), the index's columns and schema
  (``layout``), many files' rows at once (``rows``), and its store: snapshots, versions (the commit protocol) and
  the query-side cache;
* ``engines/``    -- who reads many footers: a local pool (threads or processes, sized by ``pool``, chunk by chunk),
  registration's one-pass scan, or a Spark job; and memory accounting.

``refresh.py`` orchestrates them: list, compare with the current index, read what changed, commit with
optimistic retries. The names below are the package's public API for the layers above (the handler,
registration, the CLI); modules inside ``stats`` never import this facade, only each other.
"""

from __future__ import annotations

from storage_handler.stats.engines.local import FooterEngine, FooterJob, LocalEngine, build_index
from storage_handler.stats.files.diff import FileDiff, diff_files
from storage_handler.stats.files.file_list import DataFile, FileList
from storage_handler.stats.files.walk import list_data_files
from storage_handler.stats.index.file_stats import (
    ColumnStats,
    FileStats,
    StatsOptions,
    read_file_stats,
    stats_from_metadata,
)
from storage_handler.stats.index.layout import (
    columns_of,
    index_schema,
    indexed_columns,
    stats_errors,
    stats_table,
    unsafe_paths,
)
from storage_handler.stats.index.store import (
    IndexConflictError,
    IndexSnapshot,
    commit,
    current_version,
    gc_snapshots,
    index_dir,
    load,
    validate_table,
)
from storage_handler.stats.refresh import commit_with_retry, refresh_index, update_index

__all__ = [
    "ColumnStats",
    "DataFile",
    "FileDiff",
    "FileList",
    "FileStats",
    "FooterEngine",
    "FooterJob",
    "IndexConflictError",
    "IndexSnapshot",
    "LocalEngine",
    "StatsOptions",
    "build_index",
    "columns_of",
    "commit",
    "commit_with_retry",
    "current_version",
    "diff_files",
    "gc_snapshots",
    "index_dir",
    "index_schema",
    "indexed_columns",
    "list_data_files",
    "load",
    "read_file_stats",
    "refresh_index",
    "stats_errors",
    "stats_from_metadata",
    "stats_table",
    "unsafe_paths",
    "update_index",
    "validate_table",
]
