"""Versioned, immutable index snapshots next to the data, committed by an atomic pointer switch.

Layout (hidden from Hive and Spark readers by the leading ``_``)::

    <table location>/_hsh_index/
        CURRENT                                  {"format": 1, "version": 7, "snapshot": "snapshots/v00000007-<hex>.parquet"}
        LOCK                                     fcntl.flock target for the compare-and-swap
        snapshots/v00000007-<hex>.parquet        immutable, never rewritten
        snapshots/.tmp-<hex>.parquet             a snapshot being written

Why this shape:

* Crash safety: a snapshot is written under a temporary name and fsynced, then renamed to its final name; only then
  is ``CURRENT`` replaced (write temp, fsync, ``os.replace``, fsync the folder). A crash at any point leaves the
  previous ``CURRENT`` and its snapshot intact; at worst an unreferenced snapshot remains, and the next commit's
  garbage collection deletes it.
* Concurrency: optimistic. ``commit(expected_version)`` compares and swaps under an exclusive ``flock`` on ``LOCK``,
  so the check and the switch are atomic across processes; a writer whose base moved gets ``IndexConflictError``
  and re-applies its change on the new version (``refresh.commit_with_retry``). Readers never lock.
  ``flock`` is reliable on local file systems (the only ones supported now), not on every NFS.
* Safety of readers: ``load`` validates the pointer, the snapshot's schema, and every path (relative without
  ``..``, or a plain absolute path for a partition registered outside the table folder). An index row is only
  matched against files ``list_status`` listed under registered partitions' locations, so it can never make a
  reader open a file of its own choosing.
* Garbage collection after each commit keeps the current snapshot and the ``keep - 1`` newest older ones, so a
  reader that just read ``CURRENT`` still finds its snapshot; ``load`` also re-reads ``CURRENT`` if it lost that race.
"""

from __future__ import annotations

import bisect
import contextlib
import errno
import fcntl
import itertools
import json
import logging
import os
import re
import time
import uuid
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from storage_handler.errors import StatsIndexError
from storage_handler.stats.index import columns_of, index_schema, options_of, unsafe_paths
from storage_handler.stats.listing import local_path
from storage_handler.stats.membership import project, projection
from storage_handler.types import HiveType

log = logging.getLogger(__name__)
INDEX_DIR = "_hsh_index"
POINTER = "CURRENT"
LOCK = "LOCK"
SNAPSHOTS = "snapshots"
DEFAULT_KEEP = 5
ROW_GROUP_ROWS = 4096  # index rows per row group: the unit a partition-pruned query reads (see load)
_SNAPSHOT_NAME = re.compile(r"v(\d{8,})-([0-9a-f]{32})\.parquet")
_STALE_TEMP_SECONDS = 3600.0


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
    """One committed index version: the table, the snapshot file it was read from, and the indexed columns."""

    version: int
    table: pa.Table
    path: str
    columns: tuple[tuple[str, HiveType], ...]


def index_dir(table_location: str) -> str:
    """``<table location>/_hsh_index`` as a local path."""
    return os.path.join(local_path(table_location), INDEX_DIR)


def current_version(table_location: str) -> int | None:
    """The committed version, or None when the table has no index (cheap: reads only the pointer)."""
    pointer = _read_pointer(index_dir(table_location), table_location)
    return None if pointer is None else pointer[0]


def load(
    table_location: str, prefixes: Sequence[str] | None = None, membership: Collection[str] | None = None
) -> IndexSnapshot | None:
    """The current index snapshot, validated; None when the table has no index yet.

    With ``prefixes`` (folder paths ending in ``/``, as the index names files: relative to the table, or absolute),
    only the rows of files directly or indirectly under them are read. Snapshots are written sorted by path in
    row groups of :data:`ROW_GROUP_ROWS`, so Parquet's own row-group statistics skip the rest: a query keeping one
    partition of a big table reads about one row group of its index, not the whole index.

    With ``membership`` (column names), only those columns' bloom filters and value lists are read (the filters
    of a query's own columns; ``()`` reads none); the snapshot then records only those (never commit it).

    Raises StatsIndexError when the pointer or snapshot is corrupt or the index names unsafe paths.
    """
    folder = index_dir(table_location)
    for _attempt in range(5):
        pointer = _read_pointer(folder, table_location)
        if pointer is None:
            return None
        version, rel = pointer
        path = os.path.join(folder, *rel.split("/"))
        try:
            table = project(_read(path, prefixes, membership), membership)
        except FileNotFoundError:
            time.sleep(0.01)  # a concurrent commit may have switched and collected it: read the pointer again
            continue
        except Exception as exc:  # noqa: BLE001 - any unreadable snapshot is corruption
            raise StatsIndexError(
                f"stats index snapshot {path} of {table_location!r} is corrupt ({type(exc).__name__}: {exc}); "
                f"delete {folder} and rebuild the index"
            ) from exc
        table = validate_table(table, table_location)
        return IndexSnapshot(version, table, path, columns_of(table.schema))
    raise StatsIndexError(
        f"stats index of {table_location!r}: {POINTER} names a snapshot that does not exist; "
        f"delete {folder} and rebuild the index"
    )


def _read(path: str, prefixes: Sequence[str] | None, membership: Collection[str] | None = None) -> pa.Table:
    """The snapshot's rows, or (with ``prefixes``) those of the row groups that can hold paths under them.

    A file under prefix ``p/`` has a path in [``p/``, ``p0``) (``0`` follows ``/``): a row group is read when its
    min/max of ``path`` overlaps one of those ranges. The rows of a read row group that lie under no prefix are
    harmless (index rows are only matched against listed files), so no row filter is applied.
    """
    if prefixes is None and membership is None:
        return pq.read_table(path)
    parquet = pq.ParquetFile(path)
    columns = projection(parquet.schema_arrow, membership)  # None: every column
    if prefixes is None:
        return parquet.read(columns=columns)
    column = parquet.schema_arrow.get_field_index("path")
    ranges = sorted((p, p[:-1] + "0") for p in prefixes)
    starts = [lo for lo, _ in ranges]
    reach = list(itertools.accumulate((hi for _, hi in ranges), max))  # the furthest end among ranges[:i+1]
    groups = []
    for g in range(parquet.metadata.num_row_groups):
        stats = parquet.metadata.row_group(g).column(column).statistics
        if stats is None or not stats.has_min_max:
            groups.append(g)  # an older snapshot without statistics: read it
            continue
        first, last = stats.min, stats.max
        # some range starts at or before the group's last path and ends after its first one
        i = bisect.bisect_right(starts, last) - 1
        if i >= 0 and reach[i] > first:
            groups.append(g)
    if len(groups) == parquet.metadata.num_row_groups and columns is None:
        return pq.read_table(path)  # (multi-threaded, faster than reading every group one by one)
    return parquet.read_row_groups(groups, columns=columns) if groups else parquet.schema_arrow.empty_table()


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
    if "change_time" not in table.column_names and "modification_time" in table.column_names:
        # an index written before change times were recorded: its rows are unverifiable (kept, re-read on refresh)
        log.warning("stats index of %s was written before change times were recorded: it prunes nothing until "
                    "`hsh index refresh` (or `hsh sync`) re-reads it", table_location)
        at = table.column_names.index("modification_time") + 1
        table = table.add_column(at, expected.field("change_time"), pa.nulls(table.num_rows, pa.int64()))
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
    bad = unsafe_paths(table.column("path"))
    if bad:
        raise StatsIndexError(
            f"stats index of {table_location!r} refers to paths outside the table location: {bad!r}; "
            "refusing to use it (an index names files relative to the table, or by plain absolute paths for "
            "partitions registered elsewhere); rebuild the index"
        )
    if pc.count_distinct(table.column("path")).as_py() != table.num_rows:
        raise StatsIndexError(f"stats index of {table_location!r} lists a path twice; rebuild the index")
    return table


def commit(
    table_location: str, table: pa.Table, expected_version: int | None, *, keep: int = DEFAULT_KEEP,
    lock_timeout: float = 30.0,
) -> int:
    """Publish ``table`` as the next version if the current one is still ``expected_version`` (None: no index).

    Returns the new version. Raises IndexConflictError if another writer committed in between.
    """
    folder = index_dir(table_location)
    table = validate_table(table, table_location)
    try:
        return _commit(folder, table_location, table, expected_version, keep, lock_timeout)
    except OSError as exc:
        raise StatsIndexError(
            f"cannot write the stats index of {table_location!r} under {folder} ({exc}); check that the table "
            "folder is writable"
        ) from exc


def _commit(
    folder: str, table_location: str, table: pa.Table, expected_version: int | None, keep: int, lock_timeout: float
) -> int:
    snap_dir = os.path.join(folder, SNAPSHOTS)
    os.makedirs(snap_dir, exist_ok=True)
    token = uuid.uuid4().hex
    temp = os.path.join(snap_dir, f".tmp-{token}.parquet")
    try:
        with open(temp, "wb") as fh:
            pq.write_table(_drop_empty_structs(table.sort_by("path")), fh, row_group_size=ROW_GROUP_ROWS)
            fh.flush()
            os.fsync(fh.fileno())
        with _exclusive_lock(folder, lock_timeout, table_location):
            pointer = _read_pointer(folder, table_location)
            actual = None if pointer is None else pointer[0]
            if (actual or 0) != (expected_version or 0):
                raise IndexConflictError(table_location, expected_version, actual)
            version = (actual or 0) + 1
            rel = f"{SNAPSHOTS}/v{version:08d}-{token}.parquet"
            os.rename(temp, os.path.join(folder, *rel.split("/")))
            _fsync_dir(snap_dir)
            _write_pointer(folder, version, rel)
            with contextlib.suppress(OSError):  # committed already: a failed clean-up must not say otherwise
                _collect(folder, version, rel, keep)
            return version
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)


def gc_snapshots(table_location: str, keep: int = DEFAULT_KEEP, lock_timeout: float = 30.0) -> list[str]:
    """Delete old and orphaned snapshots now (commit does this too); returns the deleted file names."""
    folder = index_dir(table_location)
    with _exclusive_lock(folder, lock_timeout, table_location):
        pointer = _read_pointer(folder, table_location)
        if pointer is None:
            return []
        return _collect(folder, pointer[0], pointer[1], keep)


# ------------------------------------------------------------------ internals
def _read_pointer(folder: str, table_location: str) -> tuple[int, str] | None:
    path = os.path.join(folder, POINTER)
    try:
        with open(path, "rb") as fh:
            raw = fh.read(65536)
    except FileNotFoundError:
        return None
    except NotADirectoryError as exc:
        raise StatsIndexError(
            f"table location {table_location!r} is a file, not a folder of data files; point the table at its folder"
        ) from exc
    try:
        data = json.loads(raw)
        version, rel = data["version"], data["snapshot"]
        if data.get("format") != 1 or not isinstance(version, int) or isinstance(version, bool) or version < 1:
            raise ValueError("unsupported format or version")
        match = re.fullmatch(rf"{SNAPSHOTS}/(v\d{{8,}}-[0-9a-f]{{32}}\.parquet)", str(rel))
        if match is None or int(match.group(1)[1:].split("-")[0]) != version:
            raise ValueError(f"snapshot name {rel!r} does not match version {version}")
    except (ValueError, KeyError, TypeError) as exc:
        raise StatsIndexError(
            f"stats index pointer {path} of {table_location!r} is corrupt ({exc}); delete {folder} and rebuild "
            "the index"
        ) from exc
    return version, str(rel)


def _write_pointer(folder: str, version: int, rel: str) -> None:
    """The commit point: atomically replace CURRENT (a crash before ``os.replace`` leaves the old version)."""
    temp = os.path.join(folder, f".{POINTER}.tmp-{uuid.uuid4().hex}")
    body = json.dumps({"format": 1, "version": version, "snapshot": rel}).encode() + b"\n"
    try:
        with open(temp, "wb") as fh:
            fh.write(body)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(temp, os.path.join(folder, POINTER))
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
    _fsync_dir(folder)


def _collect(folder: str, version: int, current_rel: str, keep: int) -> list[str]:
    """Keep the current snapshot and the ``keep - 1`` newest older ones; delete the rest (orphans included).

    Runs under the lock, so a finally-named snapshot other than the current one with a version >= the current one
    can only be left by a crashed commit. Temporary files are deleted only when stale (another writer may be
    writing one right now, before it takes the lock).
    """
    snap_dir = os.path.join(folder, SNAPSHOTS)
    current_name = current_rel.split("/")[1]
    older: list[tuple[int, str]] = []
    doomed: list[str] = []
    now = time.time()
    for entry in os.scandir(snap_dir):
        match = _SNAPSHOT_NAME.fullmatch(entry.name)
        if entry.name == current_name:
            continue
        if match is None:
            if entry.name.startswith(".tmp-") and _older_than(entry, now, _STALE_TEMP_SECONDS):
                doomed.append(entry.name)
            continue
        v = int(match.group(1))
        if v < version:
            older.append((v, entry.name))
        else:
            doomed.append(entry.name)
    older.sort(reverse=True)
    doomed.extend(name for _, name in older[max(keep - 1, 0) :])
    for name in doomed:
        with contextlib.suppress(OSError):
            os.unlink(os.path.join(snap_dir, name))
    return sorted(doomed)


def _older_than(entry: os.DirEntry[str], now: float, seconds: float) -> bool:
    try:
        return now - entry.stat().st_mtime > seconds
    except FileNotFoundError:
        return False


@contextlib.contextmanager
def _exclusive_lock(folder: str, timeout: float, table_location: str) -> Iterator[None]:
    """An exclusive ``flock`` on ``<index>/LOCK``, polled so a hung holder yields an error instead of a hang."""
    os.makedirs(folder, exist_ok=True)
    fd = os.open(os.path.join(folder, LOCK), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as exc:
                if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    raise
                if time.monotonic() > deadline:
                    raise StatsIndexError(
                        f"stats index of {table_location!r}: could not lock {folder}/{LOCK} within {timeout:.0f} s; "
                        "another writer holds it - retry later"
                    ) from exc
                time.sleep(0.005)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def _fsync_dir(folder: str) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _drop_empty_structs(table: pa.Table) -> pa.Table:
    """Parquet cannot store a struct with no fields (a table with no stats-capable column); load re-adds them."""
    empty = [i for i, f in enumerate(table.schema) if f.type == pa.struct([])]
    for i in reversed(empty):
        table = table.remove_column(i)
    return table
