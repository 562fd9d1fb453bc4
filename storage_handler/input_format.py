"""The input format: ``list_status`` returns the files that may hold matching rows; ``get_splits`` makes splits.

It reads the job properties the handler's ``configure_input_job_properties`` wrote (Hive's keys: input dirs,
``columns``/``columns.types``, ``partition_columns``/``partition_columns.types``, the filter under
``hsh.sarg`` / ``hsh.filter.expr``, or Hive's own ``hive.io.filter.expr.serialized`` / ``sarg.pushdown`` (Kryo) /
``hive.io.filter.text``; see :mod:`storage_handler.decode.serialized`).

The table is what the metastore says (Hive's model), and its files are what storage says, never the index:

1. **Partitions** (partitioned tables): the registered partitions' names come from the metastore the job
   configuration names (``hive.metastore.uris``), or from the caller's :class:`~storage_handler.catalog.PartitionSource`;
   the evaluator prunes them as one batch (data-column leaves unknown), and only the survivors' locations are
   fetched. A folder nobody registered is not part of the table; a partition registered elsewhere is.
2. **List** the real files of the surviving partitions (or of the table folder, unpartitioned), concurrently.
   A file deleted since indexing is never returned.
3. **Statistics pruning**: the index rows are aligned to the listing with one vectorized ``index_in`` on the path;
   a row counts only if size, mtime and the storage's version tag (ctime locally, ETag on S3) still match. A file the index does not know, or that
   changed since, has no statistics and is kept. Without an index the answer is the same, only less pruned.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from storage_handler.arrow_compat import one_array
from storage_handler.catalog import (
    Partition,
    PartitionSource,
    ScanFiles,
    all_partitions,
    index_prefixes,
    list_partition_batch,
    list_table_batch,
    prune_partition_names,
)
from storage_handler.catalog.metastore_source import partition_source
from storage_handler.decode.serialized import decode_job_conf
from storage_handler.job_conf import FILTER_COMPLETE, JobConf
from storage_handler.pruning import PredicateEvaluator
from storage_handler.pruning.bind import BoundLeaf, StatsColumn, bound_leaves
from storage_handler.pruning.membership import membership_columns
from storage_handler.pruning.partitions import PartitionValue
from storage_handler.sarg import ExprOp, SearchArgument
from storage_handler.split import Split
from storage_handler.stats import DataFile
from storage_handler.stats import load as load_index
from storage_handler.stats.columns import (
    BLOOM_FILTERS,
    MAX_VALUES,
    MIN_VALUES,
    MODIFICATION_TIME,
    NULL_COUNT,
    NUM_RECORDS,
    PARTITION_VALUES,
    PATH,
    SIZE,
    VALUE_LISTS,
    VERSION_TAG,
)
from storage_handler.stats.files.diff import index_rows
from storage_handler.stats.index.layout import collated, retyped, without_columns
from storage_handler.stats.index.store import IndexSnapshot
from storage_handler.storage import storage_for
from storage_handler.work import INDEX_GROUPS_READ, INDEX_LOADS, METASTORE_CALLS, counting

log = logging.getLogger(__name__)
STATS_COLUMNS = (NUM_RECORDS, MIN_VALUES, MAX_VALUES, NULL_COUNT, BLOOM_FILTERS, VALUE_LISTS)


@dataclass(frozen=True, slots=True)
class FileStatus:
    """Hadoop's FileStatus, reduced to what a reader needs; ``path`` is relative to the table location."""

    path: str
    length: int
    modification_time: int
    partition_values: tuple[tuple[str, str | None], ...]


@dataclass(frozen=True, slots=True)
class ScanMetrics:
    """What pruning did, per phase. Bytes are file sizes on storage."""

    table: str
    sarg: str
    partitions_total: int  # registered partitions (0 for an unpartitioned table)
    partitions_kept: int  # those the query kept: only their files are listed
    files_total: int  # files listed: those of the kept partitions (the others are never listed)
    bytes_total: int
    files_after_partitions: int
    bytes_after_partitions: int
    files_kept: int
    bytes_kept: int
    files_without_stats: int
    index_version: int | None
    seconds_metastore: float
    seconds_listing: float
    seconds_partitions: float
    seconds_stats: float
    files_matched_fully: int = 0  # kept files each of whose rows certainly matches (statistics prove it)
    rows_matched_fully: int = 0  # their rows: what aggregates may take from the index without reading
    metastore_calls: int = 0  # calls this scan made to the metastore (0 for an unpartitioned table)
    index_loads: int = 0  # loads of the index (current version found, rows read or taken from the cache)
    index_row_groups_read: int = 0  # index row groups read from storage (0 when the warm cache served them)
    # lag: kept files (and bytes) the filter asked statistics about but the index had no trusted row for -- new
    # since the last index update, or changed -- so kept whatever they hold: what a current index might prune
    files_kept_unindexed: int = 0
    bytes_kept_unindexed: int = 0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class ListStatusResult:
    """The kept files (as columns, and as :class:`FileStatus` objects on first use), what pruning did, and for
    ``explain`` the evaluator and the listing joined with its statistics.

    Not slotted: ``files`` is made on first access only, because a caller that hands the kept files on as
    columns (the prune service's answer) would otherwise pay a Python object per kept file for nothing.
    """

    kept: ScanFiles
    metrics: ScanMetrics
    evaluator: PredicateEvaluator | None = field(default=None, compare=False)
    scan: pa.Table | None = field(default=None, compare=False)  # listing joined with stats (for explain)
    # per kept file: every row certainly matches (None: the filter is not known whole, so no file is certain)
    certain: pa.BooleanArray | None = field(default=None, compare=False)
    kept_rows: pa.Table | None = field(default=None, compare=False)  # the kept files' listing + statistics rows

    complete: bool = field(default=False, compare=False)  # the job's filter is known whole (FILTER_COMPLETE)

    def matched(self) -> ListStatusResult:
        """This result with the strict evaluation done: ``certain`` and the fully-matched metrics filled in.

        Why apart: only answering aggregates needs ``certain`` before the kept files are handed on; for every
        other scan it feeds two metrics, which the prune service computes after its answer is on its way
        (``list_status(strict=False)``), off the query's path. A filter not known whole has no certain file.
        """
        if self.certain is not None or not self.complete or self.kept_rows is None:
            return self
        certain = _certain(self.evaluator, self.kept_rows)
        metrics = dataclasses.replace(self.metrics, files_matched_fully=_count(certain),
                                      rows_matched_fully=_rows(self.kept_rows, certain))
        return dataclasses.replace(self, metrics=metrics, certain=certain)

    @functools.cached_property
    def files(self) -> tuple[FileStatus, ...]:
        return file_statuses(self.kept)


def file_statuses(kept: ScanFiles) -> tuple[FileStatus, ...]:
    """The kept files as one :class:`FileStatus` each (what callers that go file by file take)."""
    columns = [kept.batch.column(n).to_pylist() for n in (PATH, SIZE, MODIFICATION_TIME)]
    return tuple(FileStatus(path, size, mtime, kept.partitions[part]) for path, size, mtime, part in zip(
        *columns, kept.partition_of.to_pylist(), strict=True))


def _certain(evaluator: PredicateEvaluator | None, rows: pa.Table) -> pa.BooleanArray:
    """Per kept file, whether every row certainly matches (the filter being known whole)."""
    if evaluator is None:  # no filter: every row of every file matches
        return pa.array(np.ones(rows.num_rows, dtype=bool), pa.bool_())
    return evaluator.certain(rows)


def _rows(rows: pa.Table, certain: pa.BooleanArray) -> int:
    """The rows of the fully matched files, as far as the index knows them."""
    if NUM_RECORDS not in rows.column_names:
        return 0
    return pc.sum(pc.filter(rows.column(NUM_RECORDS), certain)).as_py() or 0


def is_trivial(sarg: SearchArgument) -> bool:
    """A SearchArgument that cannot prune anything (the constant YES_NO_NULL, i.e. no usable filter)."""
    return sarg.expression.operator == ExprOp.CONSTANT and sarg.expression.constant is not None and \
        sarg.expression.constant.is_needed()


def scan_batch(files: Sequence[DataFile]) -> pa.Table:
    """The scan files as one Arrow batch: path, size, mtime, version tag and the partition-values map."""
    return pa.table({
        PATH: pa.array([f.path for f in files], pa.string()),
        SIZE: pa.array([f.size for f in files], pa.int64()),
        MODIFICATION_TIME: pa.array([f.mtime_ms for f in files], pa.int64()),
        VERSION_TAG: pa.array([f.version for f in files], pa.string()),
        PARTITION_VALUES: pa.array([list(f.partition_values.items()) for f in files],
                                     pa.map_(pa.string(), pa.string())),
    })


def attach_stats(scan: pa.Table, index: pa.Table | None) -> tuple[pa.Table, int]:
    """Add the index's stats columns to the scan batch, aligned by path; unknown or changed files get nulls.
    Returns the batch and how many of its files the index has no trusted row for."""
    out, fresh = attach_index(scan, index)
    return out, scan.num_rows - _count(fresh)


def attach_index(scan: pa.Table, index: pa.Table | None) -> tuple[pa.Table, pa.Array]:
    """:func:`attach_stats`, returning which files have a trusted index row (same path, size, modification time
    and version tag) instead of their count: the scan's lag metrics need to know which."""
    if index is None or index.num_rows == 0:
        return scan, pa.array(np.zeros(scan.num_rows, dtype=bool), pa.bool_())
    positions, aligned = index_rows(scan.column(PATH), index.column(PATH))

    def rows(column: str, at: pa.Array | None) -> pa.Array | pa.ChunkedArray:
        """The index's rows at positions ``at`` (None: its rows as they are, already in the scan's order)."""
        return index.column(column) if at is None else pc.take(index.column(column), at)

    fresh = pa.scalar(True)
    for column in (SIZE, MODIFICATION_TIME, VERSION_TAG):  # all must match; a null never does
        fresh = pc.and_kleene(fresh, pc.equal(rows(column, None if aligned else positions), scan.column(column)))
    fresh = pc.fill_null(fresh, False)
    # the usual case -- the index describes exactly the listed files, unchanged -- takes no row: its columns are
    # the scan's as they are (a take of the statistics structs was most of this function's time)
    trusted = None if aligned and pc.all(fresh).as_py() else pc.if_else(fresh, positions,
                                                                       pa.scalar(None, positions.type))
    out = scan
    for name in STATS_COLUMNS:
        if name in index.column_names:
            out = out.append_column(name, rows(name, trusted))
    return out, one_array(fresh)


def _count(mask: pa.Array) -> int:
    return pc.sum(mask).as_py() or 0  # the sum of nothing is null


class ParquetInputFormat:
    """The Python side of ``MapredParquetInputFormat`` with file pruning (``list_status`` + ``get_splits``)."""

    def list_status(self, job_conf: Mapping[str, str], partitions: PartitionSource | None = None, *,
                    with_index: bool = False, strict: bool = True) -> ListStatusResult:
        """The files that may hold matching rows; ``partitions`` replaces the metastore of the job configuration.

        ``with_index``: attach the kept files' index rows (``kept_rows``) even when the filter needs none -- what
        answering aggregates from the index reads. ``strict=False``: leave the strict evaluation (``certain``,
        the fully-matched metrics) to :meth:`ListStatusResult.matched`.
        """
        with counting() as work:
            result = self._list_status(job_conf, partitions, with_index)
        metrics = dataclasses.replace(result.metrics, metastore_calls=work[METASTORE_CALLS],
                                      index_loads=work[INDEX_LOADS], index_row_groups_read=work[INDEX_GROUPS_READ])
        result = dataclasses.replace(result, metrics=metrics)
        return result.matched() if strict else result

    def _list_status(self, job_conf: Mapping[str, str], partitions: PartitionSource | None,
                     with_index: bool) -> ListStatusResult:
        conf, sarg, evaluator = _compiled(tuple(sorted(job_conf.items())))
        t0 = time.perf_counter()
        storage = storage_for(conf.location, job_conf)
        keys = [k for k, _ in conf.partition_keys]
        partitions_total = partitions_kept = 0
        prefixes: list[str] | None = None  # read only these index rows (None: all)
        if keys:
            if partitions is not None:
                partitions_total, kept_parts = _kept_partitions(partitions, evaluator, keys, conf.table)
            else:
                with partition_source(job_conf, conf.table, keys) as source:
                    partitions_total, kept_parts = _kept_partitions(source, evaluator, keys, conf.table)
            partitions_kept = len(kept_parts)
            prefixes = index_prefixes(conf.location, kept_parts)
            t1 = time.perf_counter()
            listed = list_partition_batch(conf.location, keys, kept_parts, table=conf.table, storage=storage,
                                          conf=job_conf)
        else:
            t1 = time.perf_counter()
            listed = list_table_batch(conf.location, table=conf.table, storage=storage)
        scan = listed.batch
        t2 = time.perf_counter()
        sizes = scan.column(SIZE)
        index_version = None
        unknown = scan.num_rows if evaluator is None else 0
        unindexed: pa.Array | None = None  # files statistics were asked about but the index has no trusted row for
        reads_statistics = evaluator is not None and _reads_statistics(evaluator)
        if evaluator is None or (reads_statistics and not keys):
            # no filter, or no partition column to decide anything by before the statistics are attached (the
            # evaluation with them below can only keep fewer files than one without them)
            selection = after_parts = pa.array(np.ones(scan.num_rows, dtype=bool), pa.bool_())
        else:
            after_parts = evaluator.eval(scan)
        t3 = time.perf_counter()
        if with_index or reads_statistics:
            wanted = membership_columns(evaluator.bound) if evaluator is not None else frozenset()
            snapshot = load_index(conf.location, prefixes, wanted, conf=job_conf, cached=True)
            index_version = snapshot.version if snapshot else None
            scan, fresh = attach_index(scan, _current_types(snapshot, conf))
            unknown = scan.num_rows - _count(fresh)
            if evaluator is not None:
                selection = evaluator.eval(scan, after_parts)
                if reads_statistics:
                    unindexed = pc.and_(selection, pc.invert(fresh))
        elif evaluator is not None:  # no leaf on a data column: statistics cannot change the answer
            selection = after_parts
        t4 = time.perf_counter()
        kept = listed.filter(selection)
        kept_rows = scan.filter(selection)
        metrics = ScanMetrics(
            table=conf.table, sarg=sarg.to_old_string(),
            partitions_total=partitions_total, partitions_kept=partitions_kept,
            files_total=scan.num_rows, bytes_total=_sum(sizes),
            files_after_partitions=pc.sum(after_parts).as_py() or 0,
            bytes_after_partitions=_sum(pc.filter(sizes, after_parts)),
            files_kept=kept.num_rows, bytes_kept=_sum(pc.filter(sizes, selection)),
            files_without_stats=unknown, index_version=index_version,
            files_kept_unindexed=0 if unindexed is None else _count(unindexed),
            bytes_kept_unindexed=0 if unindexed is None else _sum(pc.filter(sizes, unindexed)),
            seconds_metastore=t1 - t0, seconds_listing=t2 - t1, seconds_partitions=t3 - t2, seconds_stats=t4 - t3,
        )
        log.info(
            "hsh scan %s: kept %d/%d files, %d/%d bytes (partitions kept %d files) for %s",
            conf.table, metrics.files_kept, metrics.files_total, metrics.bytes_kept, metrics.bytes_total,
            metrics.files_after_partitions, metrics.sarg,
        )
        return ListStatusResult(kept, metrics, evaluator, scan, None, kept_rows,
                                complete=job_conf.get(FILTER_COMPLETE) == "true")

    def get_splits(self, job_conf: Mapping[str, str], result: ListStatusResult | None = None) -> list[Split]:
        """One split per kept file (Parquet files are read whole; row groups are pruned when reading)."""
        result = result or self.list_status(job_conf)
        return [Split(f.path, f.length, f.partition_values) for f in result.files]


def _current_types(snapshot: IndexSnapshot | None, conf: JobConf) -> pa.Table | None:
    """The snapshot's rows, without statistics of columns whose type changed since they were indexed
    (:func:`~storage_handler.stats.index.layout.retyped`; a tuple comparison when nothing changed), nor of string
    columns with a collation (Spark 4's ``COLLATE UTF8_LCASE`` ...): their comparisons are not byte order, so
    byte-ordered bounds, hashes and value lists would rule out files holding ``'A'`` for ``s = 'a'``."""
    if snapshot is None:
        return None
    by_collation = collated(conf.columns)
    changed = retyped(snapshot.columns, [(n, dataclasses.replace(t, collation=None)) for n, t in conf.columns]
                      if by_collation else conf.columns)
    if not changed and not by_collation:
        return snapshot.table
    if changed and (conf.location, snapshot.version) not in _RETYPED_WARNED:
        _RETYPED_WARNED.add((conf.location, snapshot.version))
        log.warning("table %s: column(s) %s changed type since the index was built; their statistics are not "
                    "used until `hsh index refresh %s` indexes them as %s", conf.table, ", ".join(changed),
                    conf.table, ", ".join(str(t) for n, t in conf.columns if n.lower() in {c.lower() for c in changed}))
    return without_columns(snapshot.table, [*changed, *by_collation])


_RETYPED_WARNED: set[tuple[str, int]] = set()


@functools.lru_cache(maxsize=256)
def _compiled(job_conf: tuple[tuple[str, str], ...]) -> tuple[JobConf, SearchArgument, PredicateEvaluator | None]:
    """The job configuration read, its filter decoded and compiled: once per distinct configuration.

    A long-lived planner (the prune service, a Thrift server) sees the same few configurations again and again,
    and decoding plus binding costs ~2 ms a query. Everything here is a pure function of the properties, and an
    evaluator holds no state between evaluations, so sharing one is safe (errors are not remembered).
    """
    props = dict(job_conf)
    conf = JobConf.from_properties(props)
    sarg = decode_job_conf(props, [*conf.columns, *conf.partition_keys]).sarg
    return conf, sarg, None if is_trivial(sarg) else PredicateEvaluator(sarg, conf.columns, conf.partition_keys)


def _kept_partitions(source: PartitionSource, evaluator: PredicateEvaluator | None, keys: Sequence[str],
                     table: str) -> tuple[int, list[Partition]]:
    """How many partitions the table has, and the ones the query keeps (pruned by name before fetching them).

    Without a leaf on a partition column nothing can be pruned by name: every partition is fetched in one call
    (``get_partitions``, as Spark's own planning does) instead of the names and then the same partitions again
    in batches. The same when pruning kept every name. A partition added between the two calls is read like any
    other: its files are evaluated with the rest (``list_status`` evaluates partition leaves per file too).
    """
    if evaluator is None or not _reads(evaluator, PartitionValue):
        everything = all_partitions(source)
        return len(everything), everything
    names = source.names()
    kept = prune_partition_names(evaluator, names, keys, table)
    return len(names), all_partitions(source) if len(kept) == len(names) else source.by_names(kept)


def _reads(evaluator: PredicateEvaluator, source: type) -> bool:
    """Whether some leaf of the bound predicate takes its values from a ``source`` (partition values or stats)."""
    return any(isinstance(leaf, BoundLeaf) and isinstance(leaf.source, source) for leaf in bound_leaves(evaluator.bound))


def _reads_statistics(evaluator: PredicateEvaluator) -> bool:
    return _reads(evaluator, StatsColumn)


def pack_splits(
    splits: Sequence[Split], parallelism: int, *, max_bytes: int = 128 << 20, open_cost: int = 4 << 20
) -> list[tuple[Split, ...]]:
    """Group splits into read tasks the way Spark packs files (``maxPartitionBytes``, ``openCostInBytes``).

    One task per file drowns small files in per-task overhead; one task for everything loses parallelism. Each
    task gets about ``total / parallelism`` bytes, at most ``max_bytes``; largest files are placed first.
    """
    if not splits:
        return []
    total = sum(s.size + open_cost for s in splits)
    target = min(max_bytes, max(open_cost, total // max(1, parallelism)))
    bins: list[list[Split]] = []
    current: list[Split] = []
    size = 0
    for split in sorted(splits, key=lambda s: s.size, reverse=True):
        if current and size + split.size + open_cost > target:
            bins.append(current)
            current, size = [], 0
        current.append(split)
        size += split.size + open_cost
    bins.append(current)
    return [tuple(b) for b in bins]


def _sum(values: pa.Array | pa.ChunkedArray) -> int:
    return int(pc.sum(values).as_py() or 0)
