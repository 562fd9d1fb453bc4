"""Bring an index up to date with the real files, reading footers only where something changed.

Why: other writers add and delete files behind the index's back. A refresh compares the real listing with the
index by path, size, modification time and version tag, re-reads the footers of new or changed files (and of files whose footer
could not be read last time), drops rows of files gone from storage, and commits the result optimistically; a
conflicting commit is retried on top of the winner's version, so concurrent refreshes never lose an entry.

Racing indexers (a refresh, a write's commit hook, the follower) each list storage once and may commit after
another committed rows for files their own listing is too old to show. :func:`carry_newer` keeps those rows: a
row that is neither in the listing nor in the index as it was *before* the listing was taken was committed by
someone who saw a newer storage, so an older listing cannot judge it (no clock is compared: a file renamed into
place keeps the mtime of its writing).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterable, Mapping, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from storage_handler.stats.columns import MODIFICATION_TIME, PATH
from storage_handler.stats.engines.local import FooterEngine, FooterJob, LocalEngine, ProgressCallback
from storage_handler.stats.files.diff import FileDiff, compare, index_rows
from storage_handler.stats.files.file_list import FileList
from storage_handler.stats.files.walk import DataFile, list_data_files
from storage_handler.stats.index.file_stats import StatsOptions
from storage_handler.stats.index.layout import (
    check_files,
    columns_of,
    indexed_columns,
    options_of,
)
from storage_handler.stats.index.store import DEFAULT_KEEP, IndexConflictError, IndexSnapshot, commit, load
from storage_handler.stats.membership.refresh import carry
from storage_handler.storage import storage_for
from storage_handler.types import HiveType


def refresh_index(
    table_location: str,
    columns: Sequence[tuple[str, HiveType]],
    files: Iterable[DataFile | tuple[str, int, int, dict[str, str | None]]],
    previous: pa.Table | IndexSnapshot | None,
    *,
    options: StatsOptions | None = None,
    max_workers: int | None = None,
    progress: ProgressCallback | None = None,
    conf: Mapping[str, str] | None = None,
    engine: FooterEngine | None = None,
    seed: pa.Table | None = None,
) -> tuple[pa.Table, FileDiff]:
    """The index for the current listing ``files``, reusing ``previous`` rows whose file did not change.

    ``seed``: index rows read moments ago by someone else (registration reads every footer once for the schema
    and keeps the rows, :mod:`storage_handler.stats.engines.scan`); a file to read whose seed row is still fresh by the
    same test as ``previous`` (path, size, mtime, version tag) takes that row instead of a footer read.
    """
    cols = indexed_columns(columns)
    file_list = FileList.of(files)
    check_files(file_list)
    prev_table = previous.table if isinstance(previous, IndexSnapshot) else previous
    found = compare(prev_table, file_list)
    diff, kept = found.diff(), found.kept_rows()
    wanted = options or StatsOptions()
    before = options_of(prev_table.schema) if prev_table is not None else wanted
    full = prev_table is not None and (columns_of(prev_table.schema) != cols
                                       or before.footer_options != wanted.footer_options)
    if full:
        diff = FileDiff(diff.added, diff.changed, diff.removed, diff.retried, full_rebuild=True)
        kept = kept.slice(0, 0)
        to_read = file_list.sorted_by_path()
    else:
        if prev_table is not None and before.membership != wanted.membership:
            diff = FileDiff(diff.added, diff.changed, diff.removed, diff.retried, membership_changed=True)
        to_read = file_list.filter(~found.kept).sorted_by_path()
    job = FooterJob(table_location, cols, wanted, tuple(sorted((conf or {}).items())))
    seeded, to_read = _from_seed(seed, to_read, cols, wanted)
    fresh = (engine or LocalEngine(max_workers)).read(job, to_read, progress)
    if seeded is not None and fresh.num_rows == 0:  # registration: every row came from the scan, in path order
        fresh = seeded if seeded.schema.equals(fresh.schema) else seeded.cast(fresh.schema)
    elif seeded is not None:
        fresh = pa.concat_tables([seeded.cast(fresh.schema), fresh]).sort_by(PATH)
    if prev_table is None or not len(kept):
        return fresh, diff
    reused = prev_table.take(kept)
    if before.membership != wanted.membership:  # a changed filter choice: read only the columns it adds
        by_path = {f.path: f for f in file_list}
        reused, read = carry(reused, before.membership, wanted.membership, table_location, cols,
                             [by_path[p] for p in reused.column(PATH).to_pylist()], max_workers, conf)
        diff = FileDiff(diff.added, diff.changed, diff.removed, diff.retried, membership_changed=True,
                        membership_read=tuple(sorted(read)))
    reused = reused.cast(fresh.schema)
    merged = pa.concat_tables([reused, fresh]).sort_by(PATH)
    return merged.replace_schema_metadata(fresh.schema.metadata), diff


def _from_seed(seed: pa.Table | None, to_read: FileList, cols: tuple[tuple[str, HiveType], ...],
               wanted: StatsOptions) -> tuple[pa.Table | None, FileList]:
    """Rows of ``seed`` standing for files of ``to_read`` (same index shape, still fresh), and the files left."""
    if seed is None or not to_read or columns_of(seed.schema) != cols or options_of(seed.schema) != wanted:
        return None, to_read
    found = compare(seed, to_read)
    kept = found.kept
    if not kept.any():
        return None, to_read
    if found.aligned and kept.all():
        return seed, to_read[:0]  # the whole seed, in order (registration): no copy of the index
    return seed.take(found.kept_rows()), to_read.filter(~kept)


def commit_with_retry(
    table_location: str,
    update: Callable[[IndexSnapshot | None], pa.Table | None],
    *,
    attempts: int = 10,
    keep: int = DEFAULT_KEEP,
    base_delay: float = 0.02,
    conf: Mapping[str, str] | None = None,
) -> int | None:
    """Load, apply ``update`` (None = nothing to commit), commit; on a conflict start over on the new version.

    ``update`` must be a pure function of the snapshot it is given (it may run several times). Returns the
    version now current (None if there is still no index). Raises IndexConflictError after ``attempts`` losses.
    """
    for attempt in range(attempts):
        snapshot = load(table_location, conf=conf)
        table = update(snapshot)
        base = snapshot.version if snapshot is not None else None
        if table is None:
            return base
        try:
            return commit(table_location, table, base, keep=keep, conf=conf)
        except IndexConflictError:
            if attempt == attempts - 1:
                raise
            time.sleep(base_delay * (2 ** min(attempt, 6)) * random.uniform(0.5, 1.5))
    raise AssertionError("unreachable")  # pragma: no cover


def update_index(
    table_location: str,
    columns: Sequence[tuple[str, HiveType]],
    files: Iterable[DataFile | tuple[str, int, int, dict[str, str | None]]] | None = None,
    *,
    partition_columns: Sequence[str] | None = None,
    attempts: int = 10,
    keep: int = DEFAULT_KEEP,
    options: StatsOptions | None = None,
    max_workers: int | None = None,
    progress: ProgressCallback | None = None,
    conf: Mapping[str, str] | None = None,
    engine: FooterEngine | None = None,
    seed: pa.Table | None = None,
    before: IndexSnapshot | None | str = "load",
) -> tuple[int | None, FileDiff]:
    """Refresh the committed index against ``files`` (default: ``list_data_files``) and commit if anything changed.

    Creates the index when there is none. Returns (current version, the diff of the attempt that won). ``conf``
    carries the table's ``fs.s3a.*`` settings for object stores. ``before``: the index as it was before ``files``
    were listed (see :func:`carry_newer`); ``"load"`` loads it here, which is before the listing when ``files``
    is None (a caller that lists itself should load it first and pass it).
    """
    if isinstance(before, str):
        before = load(table_location, conf=conf)
    base_paths = before.table.column(PATH) if before is not None else None
    file_list = (
        list_data_files(table_location, partition_columns, storage_for(table_location, conf)) if files is None
        else FileList.of(files)
    )
    diffs: list[FileDiff] = []

    def update(snapshot: IndexSnapshot | None) -> pa.Table | None:
        table, diff = refresh_index(
            table_location, columns, file_list, snapshot, options=options, max_workers=max_workers,
            progress=progress, conf=conf, engine=engine, seed=seed,
        )
        diffs.append(diff)
        if snapshot is not None and (before is None or snapshot.version != before.version):
            table = carry_newer(table, snapshot.table, base_paths, file_list.paths)
        if snapshot is not None and (diff.is_empty or table.equals(snapshot.table, check_metadata=True)):
            return None  # nothing new (e.g. only still-unreadable files were retried): no new version
        return table

    version = commit_with_retry(table_location, update, attempts=attempts, keep=keep, conf=conf)
    return version, diffs[-1]


def carry_newer(table: pa.Table, current: pa.Table, base_paths: pa.ChunkedArray | pa.Array | None,
                listed: pa.ChunkedArray | pa.Array) -> pa.Table:
    """``table`` (computed from a listing of ``listed`` paths) with what another indexer committed after that
    listing, from ``current`` (the index now):

    * rows whose path is neither listed nor in ``base_paths`` (the index before the listing; None: there was
      none): files that appeared after the listing;
    * rows newer than ``table``'s row for the same path (a later modification time): the file was rewritten, or
      still being written, when it was listed, and the other indexer saw it later.

    See the module docstring. Rows of another shape (the columns changed meanwhile) are not carried: their files
    are then simply unindexed until the next refresh.
    """
    if not current.num_rows or not current.schema.equals(table.schema):
        return table
    arrays = [*_chunks(listed), *([] if base_paths is None else _chunks(base_paths))]
    known = pa.concat_arrays([a.cast(pa.string()) for a in arrays]) if arrays else pa.array([], pa.string())
    appeared = pc.invert(pc.is_in(current.column(PATH), value_set=known))
    positions, _ = index_rows(table.column(PATH), current.column(PATH))
    later = pc.fill_null(pc.greater(pc.take(current.column(MODIFICATION_TIME), positions),
                                    table.column(MODIFICATION_TIME)), False)
    if not pc.any(appeared).as_py() and not pc.any(later).as_py():
        return table
    parts = [table.filter(pc.invert(later)), current.take(pc.filter(positions, later)), current.filter(appeared)]
    merged = pa.concat_tables(parts).sort_by(PATH)
    return merged.replace_schema_metadata(table.schema.metadata)


def _chunks(values: pa.ChunkedArray | pa.Array) -> list[pa.Array]:
    return list(values.chunks) if isinstance(values, pa.ChunkedArray) else [values]
