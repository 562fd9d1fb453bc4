"""Index rows of many files at once, from their raw footer statistics: no Python object per file.

The unit of work of every footer engine (:func:`storage_handler.stats.engines.chunks.read_chunk`) and of registration's
scan: a chunk of files (a :class:`~storage_handler.stats.files.file_list.FileList`) and their
:class:`~storage_handler.stats.footers.raw.RawFooters` become rows of the index schema, column by column.
Files are grouped by Parquet schema (nearly always one group); each table column is found in each schema once
and its statistics read for all files of the group together
(:func:`storage_handler.stats.index.file_stats.schema_column_stats`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from storage_handler.stats.columns import MAX_VALUES, MIN_VALUES, NULL_COUNT, PATH
from storage_handler.stats.files.file_list import FileList
from storage_handler.stats.footers.native_reader import raw_of
from storage_handler.stats.footers.raw import RawFooters
from storage_handler.stats.index.file_stats import StatsOptions, planned_leaves, schema_column_stats
from storage_handler.stats.index.layout import PARTITION_TYPE, columns_of, in_path_order, index_schema
from storage_handler.stats.index.racy import trusted_versions
from storage_handler.types import HiveType, hive_to_arrow


def footer_rows(columns: Sequence[tuple[str, HiveType]], files: FileList, raw: RawFooters,
                options: StatsOptions | None = None) -> pa.Table:
    """Rows of ``index_schema(columns, options)`` for ``files``, whose footers ``raw`` holds in the same order.

    Only footer statistics: options that read data (float columns, bloom filters, value lists) go through
    :func:`storage_handler.stats.index.file_stats.read_file_stats`.
    """
    schema = index_schema(columns, options)
    cols = columns_of(schema)
    raw = raw.with_undecodable_as_unreadable(lambda s: planned_leaves(raw.schemas[s], cols))
    n = len(files)
    groups = [np.flatnonzero(raw.schema == s) for s in range(len(raw.schemas))]
    unreadable = np.flatnonzero(raw.schema < 0)
    order = np.concatenate([*groups, unreadable]) if n else np.zeros(0, np.int64)
    parts: list[list[tuple[pa.Array, pa.Array, pa.Array]]] = []  # per group of files, per column
    for s, members in enumerate(groups):
        parts.append(schema_column_stats(raw, raw.schemas[s], cols, len(members),
                                         pa.array(raw.num_rows[members], pa.int64()),
                                         partial(raw.chunks_of, members)))
    parts.append([(pa.nulls(len(unreadable), hive_to_arrow(t)),) * 2 + (pa.nulls(len(unreadable), pa.int64()),)
                  for _, t in cols])
    back = None if np.array_equal(order, np.arange(n)) else pa.array(np.argsort(order, kind="stable"))

    def column(i: int, which: int) -> pa.Array:  # the files' values back in their own order
        values = pa.concat_arrays([group[i][which] for group in parts])
        return values if back is None else values.take(back)

    num_rows = raw.num_rows
    table = pa.Table.from_arrays([
        files.paths,
        pa.array(files.sizes, pa.int64()),
        pa.array(files.mtimes, pa.int64()),
        trusted_versions(files.mtimes, files.versions),
        pa.array(num_rows, pa.int64(), mask=num_rows < 0),
        partition_maps(files),
        *(_struct([column(i, which) for i in range(len(cols))], schema.field(name).type, n)
          for which, name in enumerate((MIN_VALUES, MAX_VALUES, NULL_COUNT))),
        pa.array(raw.errors, pa.string()),
    ], schema=schema)
    return table if in_path_order(table) else table.sort_by(PATH)


def partition_maps(files: FileList) -> pa.Array:
    """Each file's partition values as the index's map column: one map per partition mapping, spread by Arrow."""
    maps = pa.array([list(dict(p).items()) for p in files.partitions], PARTITION_TYPE)
    return pc.take(maps, pa.array(files.slots, pa.int32())) if len(files) else pa.array([], PARTITION_TYPE)


def row_group_rows(columns: Sequence[tuple[str, HiveType]], metadata: pq.FileMetaData,
                   partition_values: Mapping[str, str | None]) -> pa.Table:
    """One index-shaped row per row group of one file (the reader prunes row groups with the same compiled
    predicate as files): each row group's statistics by the same rules as a file's, ``num_records`` its rows."""
    schema = index_schema(columns)
    cols = columns_of(schema)
    raw = raw_of([metadata])
    n = metadata.num_row_groups
    groups = np.arange(n, dtype=np.int64)
    rows = pa.array([metadata.row_group(g).num_rows for g in range(n)], pa.int64())
    stats = schema_column_stats(raw, metadata.schema, cols, n, rows,
                                lambda leaf: (raw.chunks_of(np.zeros(1, np.int64), leaf, groups)[0], groups))
    return pa.Table.from_arrays([
        pa.array([f"{g:09d}" for g in range(n)], pa.string()),
        pa.array(np.zeros(n, np.int64)),
        pa.array(np.zeros(n, np.int64)),
        pa.nulls(n, pa.string()),
        rows,
        pa.array([list(dict(partition_values).items())] * n, PARTITION_TYPE),
        *(_struct([column[which] for column in stats], schema.field(name).type, n)
          for which, name in enumerate((MIN_VALUES, MAX_VALUES, NULL_COUNT))),
        pa.nulls(n, pa.string()),
    ], schema=schema)


def _struct(children: list[pa.Array], struct_type: pa.StructType, n: int) -> pa.Array:
    if struct_type.num_fields == 0:
        return pa.array([{}] * n, struct_type)
    return pa.StructArray.from_arrays(children, fields=list(struct_type))
