"""Index rows of many files at once, from their raw footer statistics: no Python object per file.

The unit of work of every footer engine (:func:`storage_handler.stats.engine.read_chunk`) and of registration's
scan: a chunk of files (a :class:`~storage_handler.stats.file_list.FileList`) and their
:class:`~storage_handler.stats.raw_footers.RawFooters` become rows of the index schema, column by column.
Files are grouped by Parquet schema (nearly always one group); each table column is found in each schema once
(:func:`storage_handler.stats.footer.column_plan`), and :func:`storage_handler.stats.bounds.column_stats` reads
its statistics for all files of the group together.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from storage_handler.stats.bounds import column_stats
from storage_handler.stats.file_list import FileList
from storage_handler.stats.footer import StatsOptions, column_plan
from storage_handler.stats.index import PARTITION_TYPE, columns_of, in_path_order, index_schema
from storage_handler.stats.native_footers import raw_of
from storage_handler.stats.raw_footers import RawFooters
from storage_handler.types import HiveType


def footer_rows(columns: Sequence[tuple[str, HiveType]], files: FileList, raw: RawFooters,
                options: StatsOptions | None = None) -> pa.Table:
    """Rows of ``index_schema(columns, options)`` for ``files``, whose footers ``raw`` holds in the same order.

    Only footer statistics: options that read data (float columns, bloom filters, value lists) go through
    :func:`storage_handler.stats.footer.read_file_stats`.
    """
    schema = index_schema(columns, options)
    cols = columns_of(schema)
    n = len(files)
    bounds_type = schema.field("min_values").type
    counts_type = schema.field("null_count").type
    groups = [np.flatnonzero(raw.schema == s) for s in range(len(raw.schemas))]
    unreadable = np.flatnonzero(raw.schema < 0)
    order = np.concatenate([*groups, unreadable]) if n else np.zeros(0, np.int64)
    mins: list[list[pa.Array]] = [[] for _ in cols]
    maxs: list[list[pa.Array]] = [[] for _ in cols]
    nulls: list[list[pa.Array]] = [[] for _ in cols]
    for s, members in enumerate(groups):
        records = pa.array(raw.num_rows[members], pa.int64())
        for i, plan in enumerate(column_plan(raw.schemas[s], cols)):
            target = bounds_type.field(i).type
            if plan.leaf is None or plan.source is None:  # absent from these files (all null there) or not readable (unknown)
                lo = hi = pa.nulls(len(members), target)
                count = records if plan.absent else pa.nulls(len(members), pa.int64())
            else:
                chunks, owner = raw.chunks_of(members, plan.leaf)
                lo, hi, count = column_stats(raw, chunks, owner, len(members), plan.source, plan.hive_type)
            mins[i].append(lo.cast(target))
            maxs[i].append(hi.cast(target))
            nulls[i].append(count)
    for i, (_, _t) in enumerate(cols):
        mins[i].append(pa.nulls(len(unreadable), bounds_type.field(i).type))
        maxs[i].append(pa.nulls(len(unreadable), bounds_type.field(i).type))
        nulls[i].append(pa.nulls(len(unreadable), pa.int64()))
    back = None if np.array_equal(order, np.arange(n)) else pa.array(np.argsort(order, kind="stable"))

    def struct(parts: list[list[pa.Array]], struct_type: pa.StructType) -> pa.Array:
        if struct_type.num_fields == 0:
            return pa.array([{}] * n, struct_type)
        children = [pa.concat_arrays(p) for p in parts]
        if back is not None:
            children = [c.take(back) for c in children]
        return pa.StructArray.from_arrays(children, fields=list(struct_type))

    num_rows = raw.num_rows
    arrays = [
        files.paths,
        pa.array(files.sizes, pa.int64()),
        pa.array(files.mtimes, pa.int64()),
        files.versions,
        pa.array(num_rows, pa.int64(), mask=num_rows < 0),
        partition_maps(files),
        struct(mins, bounds_type),
        struct(maxs, bounds_type),
        struct(nulls, counts_type),
        pa.array(raw.errors, pa.string()),
    ]
    table = pa.Table.from_arrays(arrays, schema=schema)
    return table if in_path_order(table) else table.sort_by("path")


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
    bounds_type = schema.field("min_values").type
    mins, maxs, nulls = [], [], []
    rows = pa.array([metadata.row_group(g).num_rows for g in range(n)], pa.int64())
    for i, plan in enumerate(column_plan(metadata.schema, cols)):
        target = bounds_type.field(i).type
        if plan.leaf is None or plan.source is None:
            mins.append(pa.nulls(n, target))
            maxs.append(pa.nulls(n, target))
            nulls.append(rows if plan.absent else pa.nulls(n, pa.int64()))
            continue
        chunks, _ = raw.chunks_of(np.zeros(1, np.int64), plan.leaf, groups)
        lo, hi, count = column_stats(raw, chunks, groups, n, plan.source, plan.hive_type)
        mins.append(lo.cast(target))
        maxs.append(hi.cast(target))
        nulls.append(count)

    def struct(children: list[pa.Array], struct_type: pa.StructType) -> pa.Array:
        if struct_type.num_fields == 0:
            return pa.array([{}] * n, struct_type)
        return pa.StructArray.from_arrays(children, fields=list(struct_type))

    parts = pa.array([list(dict(partition_values).items())] * n, PARTITION_TYPE)
    arrays = [pa.array([f"{g:09d}" for g in range(n)], pa.string()), pa.array(np.zeros(n, np.int64)),
              pa.array(np.zeros(n, np.int64)), pa.nulls(n, pa.string()), rows, parts,
              struct(mins, bounds_type), struct(maxs, bounds_type), struct(nulls, schema.field("null_count").type),
              pa.nulls(n, pa.string())]
    return pa.Table.from_arrays(arrays, schema=schema)
