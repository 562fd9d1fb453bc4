"""One pass over a dataset's footers: its schemas and its index rows together (what registration needs).

Registering a table needs the union of its files' schemas (to declare the table) and then every file's statistics
against that union (to build the index). Done naively that reads every footer twice; on an object store each read
is a request, and on a big local table it is most of the work. Here each footer is read once:

* files are grouped by their Parquet schema (nearly always one group), and each file's statistics are taken
  against its own group's columns -- the same values the union would give, since a column must have one Hive type
  across the table (``metastore.dataset`` refuses it otherwise) and a column a file lacks is all null there;
* at the end, :meth:`FooterScan.index_for` lifts every group's rows to the table's columns: a column a group lacks
  is all null in those files (null count = record count, no bounds).

Memory: per chunk of files an Arrow table per group, never a Python object per file of the whole dataset.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from storage_handler.errors import SchemaError, StatsIndexError, StorageHandlerError
from storage_handler.stats.engine import CHUNK_FILES, LOCAL_WORKERS, REMOTE_WORKERS, ProgressCallback
from storage_handler.stats.footer import (
    FileStats,
    StatsOptions,
    read_file_stats,
    read_footer,
    stats_from_metadata,
)
from storage_handler.stats.index import index_schema, indexed_columns, stats_table
from storage_handler.stats.listing import DataFile
from storage_handler.storage import LOCAL, FileEntry, parse_location, storage_for
from storage_handler.types import HiveType, arrow_to_hive


@dataclass
class _Group:
    """Files sharing one Parquet schema: its Arrow form, the first file seen with it, its indexed columns."""

    parquet: pq.ParquetSchema
    arrow: pa.Schema
    first: int  # the position (in path order) of the first file with this schema: chunks finish in any order
    first_file: str
    columns: tuple[tuple[str, HiveType], ...] | None  # None: not plannable alone (read again with the union)


@dataclass
class FooterScan:
    """The result of one pass: distinct schemas (first file first) and index rows per schema group."""

    groups: list[_Group] = field(default_factory=list)
    rows: list[tuple[int, pa.Table]] = field(default_factory=list)  # (group, rows of files of that group)
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
        parts = [_lift(table, target) for _, table in self.rows]
        if self.unreadable:
            parts.append(stats_table(cols, [(f, FileStats.failed(why)) for f, why in self.unreadable], options))
        if not parts:
            return target.empty_table()
        return pa.concat_tables(parts).sort_by("path")


def scan_footers(root: str, files: Sequence[DataFile], options: StatsOptions, *,
                 conf: Mapping[str, str] | None = None, max_workers: int | None = None,
                 progress: ProgressCallback | None = None) -> FooterScan:
    """Read every file's footer once: schemas and statistics (see the module docstring)."""
    location = parse_location(root)
    storage = storage_for(location.uri, conf)
    base = location.uri.rstrip("/")
    scan = FooterScan()
    lock = threading.Lock()
    total = len(files)
    workers = min(max_workers or (LOCAL_WORKERS if location.kind == LOCAL else REMOTE_WORKERS), max(1, total))
    size = min(CHUNK_FILES, max(1, -(-total // workers)))

    def group_of(schema: pq.ParquetSchema, position: int, path: str) -> int:
        for i, g in enumerate(scan.groups):  # nearly always one: one C++ comparison per file
            if g.parquet.equals(schema):
                if position < g.first:
                    with lock:
                        if position < g.first:
                            g.first, g.first_file = position, path
                return i
        with lock:
            for i, g in enumerate(scan.groups):
                if g.parquet.equals(schema):
                    if position < g.first:
                        g.first, g.first_file = position, path
                    return i
            arrow = schema.to_arrow_schema()
            try:
                columns: tuple[tuple[str, HiveType], ...] | None = indexed_columns(
                    (f.name, arrow_to_hive(f.type, f.name)) for f in arrow)
            except (SchemaError, StorageHandlerError):
                columns = None  # e.g. two columns equal but for case: planned with the union instead
            scan.groups.append(_Group(schema, arrow, position, path, columns))
            return len(scan.groups) - 1

    def chunk(start: int) -> tuple[dict[int, list[tuple[DataFile, FileStats]]], list, list]:
        by_group: dict[int, list[tuple[DataFile, FileStats]]] = {}
        bad: list[tuple[DataFile, str]] = []
        deferred: list[DataFile] = []
        for position in range(start, min(start + size, total)):
            f = files[position]
            uri = f"{base}/{f.path}"
            entry = FileEntry(uri, f.size, f.mtime_ms, f.version)
            try:
                with storage.open_input(uri, entry) as source:
                    metadata = read_footer(source)
            except StorageHandlerError:
                raise  # storage itself failed (bucket, credentials, endpoint): not one bad file
            except Exception as exc:  # noqa: BLE001 - an unreadable footer: the caller decides (refuse or record)
                text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
                bad.append((f, f"{type(exc).__name__}: {text}"[:1000]))
                continue
            g = group_of(metadata.schema, position, f.path)
            columns = scan.groups[g].columns
            if columns is None:
                deferred.append(f)
            elif options.scan_float_columns or not options.membership.is_empty:
                by_group.setdefault(g, []).append(  # needs the data too: the regular path, same numbers
                    (f, read_file_stats(uri, columns, options, storage=storage, entry=entry)))
            else:
                by_group.setdefault(g, []).append((f, stats_from_metadata(metadata, columns)))
        return by_group, bad, deferred

    done = 0
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="hsh-scan") as pool:
        pending: dict[Future[tuple[dict[int, list[tuple[DataFile, FileStats]]], list, list]], int] = {}
        queue = iter(range(0, total, size))
        for start in queue:
            pending[pool.submit(chunk, start)] = min(size, total - start)
            if len(pending) >= 2 * workers:
                break
        while pending:
            finished, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in finished:
                done += pending.pop(future)
                by_group, bad, deferred = future.result()
                for g, entries in by_group.items():
                    columns = scan.groups[g].columns
                    assert columns is not None
                    scan.rows.append((g, stats_table(columns, entries, options)))
                scan.unreadable.extend(bad)
                scan.deferred.extend(deferred)
                if progress is not None:
                    progress(done, total)
                nxt = next(queue, None)
                if nxt is not None:
                    pending[pool.submit(chunk, nxt)] = min(size, total - nxt)
    return scan


def _lift(table: pa.Table, target: pa.Schema) -> pa.Table:
    """``table`` (index rows against a group's columns) as rows of the ``target`` index schema: columns the group
    lacks are all null in its files -- no bounds, null count = record count."""
    if table.schema.equals(target, check_metadata=False):
        return table.replace_schema_metadata(target.metadata)
    records = table.column("num_records")
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
            elif f.name == "null_count":
                children.append(records.combine_chunks().cast(child.type))
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
