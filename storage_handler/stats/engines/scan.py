"""One pass over a dataset's footers: its schemas and its index rows together (what registration needs).

Registering a table needs the union of its files' schemas (to declare the table) and then every file's statistics
against that union (to build the index). Done naively that reads every footer twice; on an object store each read
is a request, and on a big local table it is most of the work. Here each footer is read once:

* files are grouped by their schema (nearly always one group), and each file's statistics are taken against its
  own group's columns -- the same values the union would give, since a column must have one Hive type across the
  table (``storage_handler.registration.dataset`` refuses it otherwise) and a column a file lacks is all null there;
* at the end, :meth:`FooterScan.index_for` lifts every group's rows to the table's columns: a column a group lacks
  is all null in those files (null count = record count, no bounds).

Chunks of files are read by the engine's pool (:func:`storage_handler.stats.engines.pool.pool_plan`: threads for the
native reader and for object stores, processes for big local tables read through pyarrow). Memory: per chunk an
Arrow table per group, never a Python object per file of the whole dataset.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from storage_handler.errors import SchemaError, StatsIndexError, StorageHandlerError
from storage_handler.stats.columns import NULL_COUNT, NUM_RECORDS, PATH
from storage_handler.stats.engines.chunks import FooterJob, read_chunk, read_raw
from storage_handler.stats.engines.pool import (
    PoolPlan,
    ProgressCallback,
    pool_plan,
    run_chunks,
    with_thread_fallback,
)
from storage_handler.stats.files.file_list import FileList
from storage_handler.stats.files.walk import DataFile
from storage_handler.stats.index.file_stats import FileStats, StatsOptions
from storage_handler.stats.index.layout import in_path_order, index_schema, indexed_columns, stats_table
from storage_handler.stats.index.rows import footer_rows
from storage_handler.storage import LOCAL, parse_location, storage_for
from storage_handler.types import HiveType, arrow_to_hive, parquet_arrow_schema


@dataclass
class _Group:
    """Files sharing one schema: its Arrow form, the first file (in path order) with it, its indexed columns
    (None: not plannable alone, e.g. two columns equal but for case: read again with the union)."""

    arrow: pa.Schema
    first: int
    first_file: str
    columns: tuple[tuple[str, HiveType], ...] | None
    # top-level columns stored as INT64 TIMESTAMP(NANOS), and a file that has them: Arrow reads them as the same
    # timestamp[ns] as INT96, but Spark refuses them (registration does, saying so)
    nanos: tuple[str, ...] = ()
    nanos_file: str = ""


@dataclass
class _ChunkResult:
    """What one chunk found: its groups, with each group's rows (or deferred files), and unreadable files."""

    groups: list[tuple[_Group, pa.Table | None, list[DataFile]]]
    unreadable: list[tuple[DataFile, str]]
    files: int
    start: int  # the position of the chunk's first file in the dataset


@dataclass
class FooterScan:
    """The result of one pass: distinct schemas (first file first) and index rows per schema group."""

    groups: list[_Group] = field(default_factory=list)
    rows: list[tuple[int, pa.Table]] = field(default_factory=list)  # (first file's position, its group's rows)
    unreadable: list[tuple[DataFile, str]] = field(default_factory=list)  # (file, why)
    deferred: list[DataFile] = field(default_factory=list)  # files of groups read again with the union

    @property
    def schemas(self) -> list[tuple[pa.Schema, str]]:
        """Each distinct Arrow schema with the first file (in path order) that has it, ordered by that file: the
        same union and the same error messages whatever order the chunks finished in."""
        return [(g.arrow, g.first_file) for g in sorted(self.groups, key=lambda g: g.first)]

    def index_for(self, columns: Sequence[tuple[str, HiveType]], options: StatsOptions) -> pa.Table:
        """Index rows of every readable file against the table's ``columns`` (files the scan deferred excluded:
        the caller reads those, see :attr:`deferred`)."""
        cols = indexed_columns(columns)
        target = index_schema(cols, options)
        # chunks hold consecutive files of the (sorted) listing: put back in listing order they are usually the
        # index already, and no sorted copy of it is made (at a million files that copy was ~180 MB)
        parts = [_lift(table, target) for _, table in sorted(self.rows, key=lambda item: item[0])]
        if self.unreadable:
            parts.append(stats_table(cols, [(f, FileStats.failed(why)) for f, why in self.unreadable], options))
        if not parts:
            return target.empty_table()
        table = pa.concat_tables(parts)
        return table if in_path_order(table) else table.sort_by(PATH)

    def absorb(self, other: FooterScan) -> None:
        """Add another part's findings (a Spark task's slice); like chunks, parts may come in any order."""
        for group in other.groups:
            self._add_group(group)
        self.rows.extend(other.rows)
        self.deferred.extend(other.deferred)
        self.unreadable.extend(other.unreadable)

    def _merge(self, result: _ChunkResult) -> None:
        for group, rows, deferred in result.groups:
            self._add_group(group)
            if rows is not None:
                self.rows.append((result.start, rows))
            self.deferred.extend(deferred)
        self.unreadable.extend(result.unreadable)

    def _add_group(self, group: _Group) -> None:
        known = next((g for g in self.groups if g.arrow.equals(group.arrow)), None)
        if known is None:
            self.groups.append(group)
            return
        if group.first < known.first:
            known.first, known.first_file = group.first, group.first_file
        if group.nanos and not known.nanos:
            known.nanos, known.nanos_file = group.nanos, group.nanos_file


def scan_footers(root: str, files: Sequence[DataFile], options: StatsOptions, *,
                 conf: Mapping[str, str] | None = None, max_workers: int | None = None,
                 progress: ProgressCallback | None = None, processes: bool | None = None,
                 offset: int = 0, chunk_files: int | None = None) -> FooterScan:
    """Read every file's footer once: schemas and statistics (see the module docstring). The pool is sized by
    :func:`~storage_handler.stats.engines.pool.pool_plan` (``processes``: None lets it choose). ``offset``: the position
    of ``files[0]`` in the whole dataset, when this is one slice of it (a Spark task's), so the first file of each
    schema is the same whichever slices ran where."""
    location = parse_location(root)
    storage_for(location.uri, conf)  # an unreachable scheme fails here, once
    listed = FileList.of(files)
    plan = pool_plan(location.kind == LOCAL, len(listed), options, max_workers=max_workers, processes=processes,
                     chunk_files=chunk_files)
    return with_thread_fallback(plan, lambda p: _scan(location.uri, listed, options, conf, p, progress, offset))


def _scan(root: str, files: FileList, options: StatsOptions, conf: Mapping[str, str] | None, plan: PoolPlan,
          progress: ProgressCallback | None, offset: int) -> FooterScan:
    scan = FooterScan()
    conf_items = tuple(sorted((conf or {}).items()))
    for _, result in run_chunks(plan, len(files), _scan_chunk,
                                lambda a, b: (root, conf_items, options, offset + a, files[a:b]), progress):
        scan._merge(result)
    return scan


def nanosecond_columns(schema: pq.ParquetSchema) -> tuple[str, ...]:
    """The top-level columns with a leaf stored as INT64 ``TIMESTAMP(NANOS)`` (pandas' and pyarrow's default):
    Arrow reads them as ``timestamp[ns]`` like INT96, but Spark fails on every query of a table that has them."""
    found: list[str] = []
    for i in range(len(schema)):
        column = schema.column(i)
        if column.physical_type == "INT64" and column.logical_type.type == "TIMESTAMP" \
                and json.loads(column.logical_type.to_json()).get("timeUnit") == "nanoseconds":
            top = column.path.split(".")[0]
            if top not in found:
                found.append(top)
    return tuple(found)


def _scan_chunk(root: str, conf: tuple[tuple[str, str], ...], options: StatsOptions, start: int,
                files: FileList) -> _ChunkResult:
    """Footers of one chunk, grouped by schema (module level: it runs in worker processes too)."""
    raw = read_raw(root.rstrip("/"), files, dict(conf), strict=True)  # storage failing is not one bad file
    bad = [(files[int(i)], raw.errors[int(i)] or "") for i in np.flatnonzero(raw.schema < 0)]
    groups: list[tuple[_Group, pa.Table | None, list[DataFile]]] = []
    for s, schema in enumerate(raw.schemas):
        members = np.flatnonzero(raw.schema == s)
        first = int(members[0])
        arrow = parquet_arrow_schema(schema.to_arrow_schema())
        try:
            columns: tuple[tuple[str, HiveType], ...] | None = indexed_columns(
                (fld.name, arrow_to_hive(fld.type, fld.name)) for fld in arrow)
        except (SchemaError, StorageHandlerError):
            columns = None
        group = _Group(arrow, start + first, files.paths[first].as_py(), columns, nanosecond_columns(schema),
                       files.paths[first].as_py())
        mine = files if len(members) == len(files) else files.take(members)
        if columns is None:  # not plannable alone: read again with the table's columns
            groups.append((group, None, list(mine)))
        elif options.footer_only:
            groups.append((group, footer_rows(columns, mine, raw.select(members), options), []))
        else:  # needs the data (float columns, bloom filters, value lists): the engine's per-file path
            groups.append((group, read_chunk(FooterJob(root, columns, options, conf), mine), []))
    return _ChunkResult(groups, bad, len(files), start)


def _lift(table: pa.Table, target: pa.Schema) -> pa.Table:
    """``table`` (index rows against a group's columns) as rows of the ``target`` index schema: columns the group
    lacks are all null in its files -- no bounds, null count = record count."""
    if table.schema.equals(target, check_metadata=False):
        return table.replace_schema_metadata(target.metadata)
    records = table.column(NUM_RECORDS).combine_chunks()
    arrays = []
    for f in target:
        if not pa.types.is_struct(f.type):
            arrays.append(table.column(f.name) if f.name in table.column_names else pa.nulls(len(table), f.type))
            continue
        have = table.column(f.name).combine_chunks() if f.name in table.column_names else None
        children = []
        for child in f.type:
            if have is not None and have.type.get_field_index(child.name) >= 0:
                children.append(pc.struct_field(have, child.name).cast(child.type))
            elif f.name == NULL_COUNT:
                children.append(records.cast(child.type))
            else:
                children.append(pa.nulls(len(table), child.type))
        if not children:
            arrays.append(pa.array([{}] * len(table), f.type))
        else:
            arrays.append(pa.StructArray.from_arrays(children, fields=list(f.type)))
    try:
        return pa.Table.from_arrays(arrays, schema=target)
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise StatsIndexError(f"cannot align index rows to the table's columns ({exc}); rebuild the index") from exc

