"""Load, validate and commit index snapshots, through the table's storage.

The commit protocol itself (version-numbered immutable snapshots, create-if-absent as the commit point,
tombstones) is :mod:`storage_handler.stats.index.versions`; this module is what callers use:

* :func:`load` reads the current snapshot -- only the row groups of the kept partitions when given ``prefixes``
  (snapshots are sorted by path in row groups of :data:`ROW_GROUP_ROWS`) -- and validates it.
* :func:`commit` publishes a new version if the current one is still the caller's base (optimistic concurrency:
  :class:`IndexConflictError` otherwise; ``refresh.commit_with_retry`` re-applies the change).
* Safety of readers: ``load`` validates the snapshot's schema and every path (relative without ``..``, or a plain
  absolute path or URI for a partition registered outside the table folder). An index row is only matched
  against files ``list_status`` listed under registered partitions' locations, so it can never make a reader
  open a file of its own choosing.
"""

from __future__ import annotations

import bisect
import itertools
import logging
import time
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from storage_handler.errors import ObjectChangedError, StatsIndexError, StorageError
from storage_handler.stats.columns import MODIFICATION_TIME, PATH, VERSION_TAG
from storage_handler.stats.index import versions
from storage_handler.stats.index.cache import CACHE
from storage_handler.stats.index.file_stats import BOUND_RULES
from storage_handler.stats.index.layout import (
    columns_of,
    in_path_order,
    index_schema,
    options_of,
    outdated,
    unsafe_paths,
)
from storage_handler.stats.index.versions import DEFAULT_KEEP, INDEX_DIR
from storage_handler.stats.membership.columns import project, projection
from storage_handler.storage import LOCAL, Storage, parse_location, storage_for
from storage_handler.storage.base import decode_threads
from storage_handler.types import HiveType
from storage_handler.work import INDEX_GROUPS_READ, INDEX_LOADS, count

log = logging.getLogger(__name__)
ROW_GROUP_ROWS = 4096  # index rows per row group: the unit a partition-pruned query reads (see load)
__all__ = ["DEFAULT_KEEP", "INDEX_DIR", "IndexConflictError", "IndexSnapshot", "commit", "current_version",
           "gc_snapshots", "index_dir", "load", "validate_table"]


class IndexConflictError(StatsIndexError):
    """Another writer committed first: reload, re-apply the change, and commit again."""

    def __init__(self, table_location: str, expected: int | None, actual: int | None) -> None:
        super().__init__(
            f"stats index of {table_location!r} moved from version {expected} to {actual} while this change was "
            "prepared; reload the index and apply the change again (refresh.commit_with_retry does this)"
        )
        self.expected = expected
        self.actual = actual


@dataclass(frozen=True, slots=True)
class IndexSnapshot:
    """One committed index version: the table, the snapshot it was read from, and the indexed columns."""

    version: int
    table: pa.Table
    path: str
    columns: tuple[tuple[str, HiveType], ...]


def index_dir(table_location: str) -> str:
    """``<table location>/_hsh_index`` (a local path or a URI, like the location)."""
    return versions.index_location(parse_location(table_location)).uri


def current_version(table_location: str, conf: Mapping[str, str] | None = None) -> int | None:
    """The committed version, or None when the table has no index (one listing)."""
    found = versions.current(storage_for(table_location, conf), parse_location(table_location))
    return None if found is None else found.number


def load(table_location: str, prefixes: Sequence[str] | None = None, membership: Collection[str] | None = None, *,
         conf: Mapping[str, str] | None = None, cached: bool = False) -> IndexSnapshot | None:
    """The current index snapshot, validated; None when the table has no index yet.

    With ``prefixes`` (folder paths ending in ``/``, as the index names files: relative to the table, or absolute),
    only the row groups that can hold files under them are read: a query keeping one partition of a big table
    reads about one row group of its index, not the whole index. ``conf`` carries ``fs.s3a.*`` settings.

    With ``membership`` (column names), only those columns' bloom filters and value lists are read (the filters
    of a query's own columns; ``()`` reads none); the snapshot then records only those (never commit it).

    With ``cached`` (the query path), row groups decoded by an earlier query of the same snapshot are reused
    (:mod:`storage_handler.stats.index.cache`: snapshots are immutable, and the current version is still
    listed on every call), and with ``prefixes`` only the rows under them are returned, in path order.

    Raises StatsIndexError when the snapshot is corrupt or the index names unsafe paths.
    """
    count(INDEX_LOADS)
    storage = storage_for(table_location, conf)
    table_loc = parse_location(table_location)
    folder = versions.index_location(table_loc).uri
    found = None
    for _attempt in range(5):
        found = versions.current(storage, table_loc)
        if found is None:
            if table_loc.kind == LOCAL and storage.stat(table_loc.uri) is not None:
                raise StatsIndexError(f"table location {table_location!r} is a file, not a folder of data files; "
                                      "point the table at its folder")
            return None
        try:
            if cached and found.entry is not None and CACHE.max_bytes > 0:
                table = CACHE.rows(storage, found, prefixes, membership,
                                   lambda raw: validate_table(raw, table_location))
                return IndexSnapshot(found.number, table, found.uri, columns_of(table.schema))
            table = project(_read(storage, found, prefixes, membership), membership)
        except (FileNotFoundError, ObjectChangedError):
            time.sleep(0.01)  # a concurrent commit collected it: list again
            continue
        except (StorageError, StatsIndexError):
            raise
        except Exception as exc:  # noqa: BLE001 - any unreadable snapshot is corruption
            raise StatsIndexError(
                f"stats index snapshot {found.uri} of {table_location!r} is corrupt ({type(exc).__name__}: {exc}); "
                f"delete {folder} and rebuild the index"
            ) from exc
        table = validate_table(table, table_location)
        return IndexSnapshot(found.number, table, found.uri, columns_of(table.schema))
    raise StatsIndexError(
        f"stats index of {table_location!r}: its current snapshot {found.uri if found else ''} does not exist "
        f"(or keeps disappearing while read); retry, or delete {folder} and rebuild the index"
    )


def _read(storage: Storage, found: versions.Version, prefixes: Sequence[str] | None,
          membership: Collection[str] | None = None) -> pa.Table:
    """The snapshot's rows, or (with ``prefixes``) those of the row groups that can hold paths under them.

    A file under prefix ``p/`` has a path in [``p/``, ``p0``) (``0`` follows ``/``): a row group is read when its
    min/max of ``path`` overlaps one of those ranges. The rows of a read row group that lie under no prefix are
    harmless (index rows are only matched against listed files), so no row filter is applied.
    """
    with storage.open_input(found.uri, found.entry) as source:
        parquet = pq.ParquetFile(source)
        columns = projection(parquet.schema_arrow, membership)  # None: every column
        threads = decode_threads(source)
        if prefixes is None:
            count(INDEX_GROUPS_READ, parquet.metadata.num_row_groups)
            return parquet.read(columns=columns, use_threads=threads)
        return _read_groups(parquet, prefixes, columns, threads)


def _read_groups(parquet: pq.ParquetFile, prefixes: Sequence[str], columns: list[str] | None,
                 threads: bool) -> pa.Table:
    column = parquet.schema_arrow.get_field_index(PATH)
    ranges = sorted((p, p[:-1] + "0") for p in prefixes)
    starts = [lo for lo, _ in ranges]
    reach = list(itertools.accumulate((hi for _, hi in ranges), max))  # the furthest end among ranges[:i+1]
    groups = []
    for g in range(parquet.metadata.num_row_groups):
        stats = parquet.metadata.row_group(g).column(column).statistics
        if stats is None or not stats.has_min_max:
            groups.append(g)  # a snapshot without statistics: read it
            continue
        first, last = stats.min, stats.max
        # some range starts at or before the group's last path and ends after its first one
        i = bisect.bisect_right(starts, last) - 1
        if i >= 0 and reach[i] > first:
            groups.append(g)
    count(INDEX_GROUPS_READ, len(groups))
    if len(groups) == parquet.metadata.num_row_groups:
        return parquet.read(columns=columns, use_threads=threads)
    if not groups:
        return parquet.schema_arrow.empty_table()
    return parquet.read_row_groups(groups, columns=columns, use_threads=threads)


def validate_table(
    table: pa.Table, table_location: str, columns: tuple[tuple[str, HiveType], ...] | None = None
) -> pa.Table:
    """Check an index table's schema and paths; return it cast to the canonical schema (metadata included)."""
    try:
        cols = columns if columns is not None else columns_of(table.schema)
        expected = index_schema(cols, options_of(table.schema))
    except (KeyError, ValueError) as exc:
        raise StatsIndexError(
            f"stats index of {table_location!r} does not have the index schema ({exc}); rebuild the index"
        ) from exc
    for f in expected:
        if f.type == pa.struct([]) and f.name not in table.column_names:
            table = table.append_column(f, pa.array([{}] * table.num_rows, f.type))  # see _drop_empty_structs
    table = _upgrade_version_column(table, table_location, expected)
    table = _distrust_outdated(table, table_location)
    if table.column_names != expected.names:
        raise StatsIndexError(
            f"stats index of {table_location!r} has columns {table.column_names}, expected {expected.names}; "
            "delete the index folder and rebuild it"
        )
    try:
        table = table.cast(expected)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, ValueError) as exc:
        raise StatsIndexError(
            f"stats index of {table_location!r} does not have the index schema ({exc}); rebuild the index"
        ) from exc
    bad = unsafe_paths(table.column(PATH))
    if bad:
        raise StatsIndexError(
            f"stats index of {table_location!r} refers to paths outside the table location: {bad!r}; "
            "refusing to use it (an index names files relative to the table, or by plain absolute paths for "
            "partitions registered elsewhere); rebuild the index"
        )
    if pc.count_distinct(table.column(PATH)).as_py() != table.num_rows:
        raise StatsIndexError(f"stats index of {table_location!r} lists a path twice; rebuild the index")
    return table


def commit(
    table_location: str, table: pa.Table, expected_version: int | None, *, keep: int = DEFAULT_KEEP,
    conf: Mapping[str, str] | None = None,
) -> int:
    """Publish ``table`` as the next version if the current one is still ``expected_version`` (None: no index).

    Returns the new version. Raises IndexConflictError if another writer committed in between.
    """
    table = validate_table(table, table_location)
    storage = storage_for(table_location, conf)
    table_loc = parse_location(table_location)
    sink = pa.BufferOutputStream()
    if not in_path_order(table):
        table = table.sort_by(PATH)
    pq.write_table(_drop_empty_structs(table), sink, row_group_size=ROW_GROUP_ROWS)
    data = sink.getvalue().to_pybytes()
    try:
        found = versions.current(storage, table_loc)
        actual = None if found is None else found.number
        if (actual or 0) != (expected_version or 0):
            raise IndexConflictError(table_location, expected_version, actual)
        number = (actual or 0) + 1
        if not versions.create(storage, table_loc, number, data):
            raise IndexConflictError(table_location, expected_version, versions.highest_number(storage, table_loc))
    except (StorageError, OSError) as exc:
        raise StatsIndexError(
            f"cannot write the stats index of {table_location!r} under {versions.index_location(table_loc).uri} "
            f"({exc}); check that the table folder is writable"
        ) from exc
    try:  # committed already: a failed clean-up must not say otherwise
        versions.collect(storage, table_loc, number, keep)
    except (StorageError, OSError) as exc:
        log.warning("stats index of %s: version %d committed, but collecting old versions failed: %s",
                    table_location, number, exc)
    return number


def gc_snapshots(table_location: str, keep: int = DEFAULT_KEEP, conf: Mapping[str, str] | None = None) -> list[str]:
    """Collect old and orphaned snapshots now (commit does this too); returns the names changed."""
    storage = storage_for(table_location, conf)
    table_loc = parse_location(table_location)
    found = versions.current(storage, table_loc)
    return [] if found is None else versions.collect(storage, table_loc, found.number, keep)


def _distrust_outdated(table: pa.Table, table_location: str) -> pa.Table:
    """An index made under older footer rules (:func:`~storage_handler.stats.index.layout.outdated`) is read with
    no version tags: every row is then untrusted, wherever rows are matched with files (queries keep every file,
    aggregates read them, ``describe`` counts them as lag), and every update re-reads the files it covers. The
    metadata keeps the old rules, so a refresh rebuilds it whole and published statistics leave its bounds out."""
    tags = table.column(VERSION_TAG) if VERSION_TAG in table.column_names else None
    if tags is None or tags.null_count == table.num_rows or not outdated(table.schema):
        return table
    log.warning("stats index of %s was built under older statistics rules (version %d, now %d), which trusted "
                "bounds these do not: it prunes nothing until `hsh index refresh` (or `hsh sync`) re-reads it",
                table_location, options_of(table.schema).rules, BOUND_RULES)
    at = table.column_names.index(VERSION_TAG)
    return table.set_column(at, table.schema.field(at), pa.nulls(table.num_rows, pa.string()))


def _upgrade_version_column(table: pa.Table, table_location: str, expected: pa.Schema) -> pa.Table:
    """Indexes before 0.3 recorded the inode change time as ``change_time`` (int64 ns): the same tag, as text.
    Older ones recorded none: their rows are unverifiable (kept, re-read on refresh)."""
    if VERSION_TAG in table.column_names or MODIFICATION_TIME not in table.column_names:
        return table
    if "change_time" in table.column_names:
        at = table.column_names.index("change_time")
        tags = pc.cast(table.column("change_time"), pa.string())
        return table.remove_column(at).add_column(at, expected.field(VERSION_TAG), tags)
    log.warning("stats index of %s was written before change times were recorded: it prunes nothing until "
                "`hsh index refresh` (or `hsh sync`) re-reads it", table_location)
    at = table.column_names.index(MODIFICATION_TIME) + 1
    return table.add_column(at, expected.field(VERSION_TAG), pa.nulls(table.num_rows, pa.string()))


def _drop_empty_structs(table: pa.Table) -> pa.Table:
    """Parquet cannot store a struct with no fields (a table with no stats-capable column); load re-adds them."""
    empty = [i for i, f in enumerate(table.schema) if f.type == pa.struct([])]
    for i in reversed(empty):
        table = table.remove_column(i)
    return table
