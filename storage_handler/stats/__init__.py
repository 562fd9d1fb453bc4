"""Column-statistics index: per-file min / max / null count from Parquet footers, stored next to the data.

Modules, smallest first: ``listing`` (real files, Hive partition-path escaping), ``convert`` (one footer bound to
a table-typed value, conservatively), ``footer`` (one file's stats), ``index`` (the Arrow table), ``engine`` (reading many footers: locally or on Spark), ``store`` (versioned snapshots, atomic commit, validation on load), ``refresh`` (incremental update with
optimistic retries). The schema is the shared contract in the project's design notes.
"""

from __future__ import annotations

from storage_handler.stats.engine import FooterEngine, FooterJob, LocalEngine, build_index
from storage_handler.stats.file_diff import FileDiff, diff_files
from storage_handler.stats.file_list import FileList
from storage_handler.stats.footer import (
    ColumnStats,
    FileStats,
    StatsOptions,
    read_file_stats,
    stats_from_metadata,
)
from storage_handler.stats.index import (
    columns_of,
    index_schema,
    indexed_columns,
    stats_errors,
    stats_table,
    unsafe_paths,
)
from storage_handler.stats.listing import (
    HIVE_DEFAULT_PARTITION,
    DataFile,
    escape_partition_value,
    escape_path_name,
    list_data_files,
    partition_path,
    unescape_partition_value,
    unescape_path_name,
)
from storage_handler.stats.refresh import commit_with_retry, refresh_index, update_index
from storage_handler.stats.store import (
    IndexConflictError,
    IndexSnapshot,
    commit,
    current_version,
    gc_snapshots,
    index_dir,
    load,
    validate_table,
)

__all__ = [
    "HIVE_DEFAULT_PARTITION",
    "ColumnStats",
    "DataFile",
    "FileList",
    "FileDiff",
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
    "escape_partition_value",
    "escape_path_name",
    "gc_snapshots",
    "index_dir",
    "index_schema",
    "indexed_columns",
    "list_data_files",
    "load",
    "partition_path",
    "read_file_stats",
    "refresh_index",
    "stats_errors",
    "stats_from_metadata",
    "stats_table",
    "unescape_partition_value",
    "unescape_path_name",
    "unsafe_paths",
    "update_index",
    "validate_table",
]
