"""The index published as the metastore's statistics, for every engine's optimizer (issue 27).

What is written where:

* **Basic statistics** -- ``numFiles``, ``numRows``, ``totalSize`` -- on every partition and on the table, as Hive
  writes them, with ``COLUMN_STATS_ACCURATE`` vouching for them. A partitioned table gets the sums at table level:
  that is all a plain Spark session reads (without them it plans the table at ``spark.sql.defaultSizeInBytes`` and
  never broadcasts it). No ``rawDataSize``: Hive means the deserialized size, which footers do not give.
* **Column statistics** (``ColumnStatisticsObj``, :mod:`.hive_stats` says which types and how) per partition, through
  ``set_aggr_stats_for`` in batches, and at table level (the table's own for an unpartitioned table; the merged ones
  for a partitioned table, which Impala reads). Hive, Trino and Impala read them; Spark does not.
* Every alter carries ``DO_NOT_UPDATE_STATS=true`` (without it the metastore lists the folder again, overwrites
  ``numFiles``/``totalSize`` and drops ``COLUMN_STATS_ACCURATE``), and our marker ``hsh.stats``
  (:mod:`.stats_ownership`: whose statistics these are, from which index version, when).

:func:`publish_statistics` is the one entry point for every writer of a table; the contract is in its docstring.
``register`` and ``sync`` use its two halves (:func:`plan_statistics`, :func:`publish`) so that a partition they add
carries its basic statistics from the start (no second write) and only its column statistics follow.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from hmsclient.genthrift.hive_metastore import ttypes as hms

from metastore.client import MetastoreClient
from metastore.names import TableName
from storage_handler.errors import StorageHandlerError
from storage_handler.registration.hive_stats import (
    Summary,
    check_required,
    column_objects,
    empty_summary,
    merge,
    plain_values,
    why_not,
)
from storage_handler.registration.lanes import in_lanes
from storage_handler.registration.stats_ownership import (
    ACCURATE,
    MARKER,
    Marker,
    basic_digest,
    basic_parameters,
    columns_digest,
    now_utc,
    render_accurate,
)
from storage_handler.registration.stats_summary import summarize
from storage_handler.stats.columns import MAX_VALUES, MIN_VALUES

log = logging.getLogger(__name__)
BATCH = 100  # partitions per metastore call: 2-5x faster than one call each, and a refusal costs only its batch
LANES = 4  # batches of partitions published at once, each on a connection of its own (see _in_lanes)
LISTED = 1000  # partitions ``--dry-run --json`` lists one by one (the count is always exact)


@dataclass(frozen=True, slots=True)
class StatisticsChoice:
    """What a command does about statistics: ``publish`` (default; ``--no-stats`` turns it off: then only statistics
    whose files changed are marked stale) and ``overwrite`` (``--overwrite-stats``: also replace statistics that a
    user or another engine's ``ANALYZE`` wrote)."""

    publish: bool = True
    overwrite: bool = False
    #: partition-level statistics are left to a later publish: ``register`` adds the partitions bare (the metastore
    #: counts their files itself, as with ``--no-stats``), writes the table level at once, and hands the partitions
    #: to a background ``hsh stats publish`` (:mod:`storage_handler.registration.background`)
    defer_partitions: bool = False


#: the default: publish, keep what others wrote
PUBLISH = StatisticsChoice()


@dataclass
class StatisticsReport:
    """What one publish did. ``failures`` are (what, why): statistics that were not published."""

    table: str
    publish: bool = True
    index_version: int | None = None
    partitions: int = 0
    partitions_written: int = 0
    partitions_unchanged: int = 0  # ours, and the index says the same: nothing sent
    partitions_kept: int = 0  # someone else's statistics (some or all), kept
    partitions_marked_stale: int = 0
    partitions_deferred: int = 0  # left to a later publish (``StatisticsChoice.defer_partitions``)
    background: dict[str, Any] | None = None  # the background publish that took them over: pid, log, state file
    table_level: str = "not published"  # written | unchanged | kept | marked stale | off | failed | deferred
    column_objects_written: int = 0
    columns: list[str] = field(default_factory=list)
    columns_not_published: dict[str, str] = field(default_factory=dict)
    spark_statistics: bool = False  # Spark's ANALYZE left spark.sql.statistics.*, which Spark prefers to ours
    failures: list[tuple[str, str]] = field(default_factory=list)

    def failed(self, what: str, why: str) -> None:
        self.failures.append((what, " ".join(why.split())[:400]))

    def warning(self) -> str | None:
        """One line naming the statistics that were not published and why (None: everything was)."""
        if not self.failures:
            return None
        parts = [w for w, _ in self.failures if w.startswith("partition ")]
        other = [w for w, _ in self.failures if not w.startswith("partition ")]
        what = ", ".join(other[:2])
        if parts:
            sample = ", ".join(p.removeprefix("partition ") for p in parts[:3])
            what += (" and " if what else "") + (f"{len(parts)} of {self.partitions} partitions ({sample}"
                                                 f"{', …' if len(parts) > 3 else ''})")
        return (f"statistics of {self.table} not published for {what}: {self.failures[0][1]} (everything else was "
                f"done; `hsh index refresh {self.table}` publishes them again)")

    def absorb(self, other: StatisticsReport) -> None:
        """Add the partition counts and failures of ``other`` (a lane's report of the same publish) to this one."""
        for counter in ("partitions_written", "partitions_unchanged", "partitions_kept", "partitions_marked_stale",
                        "column_objects_written"):
            setattr(self, counter, getattr(self, counter) + getattr(other, counter))
        self.failures.extend(other.failures)

    def as_dict(self) -> dict[str, Any]:
        out = {k: v for k, v in vars(self).items() if k != "failures"}
        out["failures"] = [{"what": w, "why": y} for w, y in self.failures[:LISTED]]
        out["warning"] = self.warning()
        return out


@dataclass(frozen=True)
class StatisticsPlan:
    """One table's statistics from one index snapshot, before anything is written (pure)."""

    name: TableName
    location: str
    columns: tuple[tuple[str, str], ...]
    partition_keys: tuple[str, ...]
    index_version: int
    summaries: Mapping[str, Summary]  # by folder: see stats_summary.folder_key

    @property
    def partitioned(self) -> bool:
        return bool(self.partition_keys)

    def summary(self, folder: str) -> Summary:
        return self.summaries.get(folder) or empty_summary(self.columns)

    def objects(self, summary: Summary) -> list[hms.ColumnStatisticsObj]:
        objs = column_objects(summary)
        for obj in objs:
            check_required(obj)  # never send what the metastore rejects while reading (it poisons the connection)
        return objs

    def new_partition_parameters(self, folder: str) -> dict[str, str]:
        """A partition about to be added: its basic statistics, vouched for, and our marker naming the column
        statistics that :func:`publish` writes next (``set_aggr_stats_for`` adds their claims itself)."""
        summary = self.summary(folder)
        objs = self.objects(summary)
        params = basic_parameters(summary)
        accurate = render_accurate(summary.rows is not None, ())
        if accurate is not None:
            params[ACCURATE] = accurate
        params[MARKER] = Marker(self.index_version, basic_digest(params), columns_digest(objs),
                                tuple(o.colName for o in objs), now_utc()).render()
        return params

    def not_published(self) -> dict[str, str]:
        """Columns that get no statistics anywhere, and why."""
        out = {n: why for n, t in self.columns if (why := why_not(t)) is not None}
        published = {o.colName for s in self.summaries.values() for o in column_objects(s)}
        for name, hive_type in self.columns:
            if name in out or name in published or not self.summaries:
                continue
            out[name] = ("true/false counts unknown: footers give them only when all values are alike"
                         if hive_type == "boolean" else
                         "null counts unknown in the index (footers without statistics, or unreadable files)")
        return out


def plan_statistics(name: TableName, location: str, columns: Sequence[tuple[str, str]], partition_keys: Sequence[str],
                    index: pa.Table, index_version: int) -> StatisticsPlan:
    """The statistics ``index`` (an index snapshot's rows, of the table at ``location``) makes of the table."""
    from storage_handler.stats.index.layout import options_of, outdated

    cols = tuple((n.lower(), t.lower().replace(" ", "")) for n, t in columns)
    if outdated(index.schema):  # bounds read under older footer rules are unknown: no column statistics published
        for bound in (MIN_VALUES, MAX_VALUES):
            at = index.schema.get_field_index(bound)
            index = index.set_column(at, index.schema.field(at), pa.nulls(index.num_rows, index.schema.field(at).type))
    float_bounds = options_of(index.schema).scan_float_columns
    return StatisticsPlan(name, location, cols, tuple(k.lower() for k in partition_keys), index_version,
                          summarize(index, cols, float_bounds=float_bounds))


def publish_statistics(client: MetastoreClient, name: TableName, *, choice: StatisticsChoice = PUBLISH,
                       index: pa.Table | None = None, index_version: int | None = None,
                       lock: bool = True) -> StatisticsReport:
    """Publish the table's index as its metastore statistics: the one function every writer calls.

    **Contract** (``register``, ``sync``, ``index refresh``, and any commit hook or follower that keeps the index
    current after writes):

    * Call it *after* committing the index version and after the table's partitions are in the metastore, *without*
      holding the table's HMS lock (it takes it, with ``lock``, for the table-level write, which re-reads the table
      first so a concurrent schema change is never undone).
    * It reads the table, its registered partitions and the index -- ``index`` (a committed snapshot's rows, and
      its ``index_version``) or else the current snapshot at the table's location -- and writes only what differs:
      with nothing changed it sends no write at all. An older index version never replaces a newer one's numbers.
    * Statistics a user or another engine wrote are kept while their files are unchanged (``choice.overwrite``
      replaces them); with ``choice.publish`` off only statistics whose files changed are marked stale.
    * It never raises for the statistics: a refused call, a partition dropped meanwhile, a metastore gone away or an
      unreadable index become the report's ``failures`` and its one :meth:`~StatisticsReport.warning` line; what
      the caller did before stays done. Running it again is safe and finishes what a failed run left.
    """
    report = StatisticsReport(str(name), publish=choice.publish, index_version=index_version)
    try:
        table = client.get_table(name.database, name.table)
        if not choice.publish and MARKER not in (table.parameters or {}):
            report.table_level = "off"  # nothing of ours to keep true
            return report
        if index is None:
            from storage_handler.stats import load
            from storage_handler.storage import s3a_settings

            snapshot = load(table.sd.location, membership=(), conf=s3a_settings(table.parameters or {}))
            if snapshot is None:
                report.failed(f"table {name}", f"the table has no index at {table.sd.location}; run `hsh sync {name}`")
                return report
            index, index_version = snapshot.table, snapshot.version
    except StorageHandlerError as e:
        report.failed(f"table {name}", str(e))
        return report
    plan = plan_statistics(name, table.sd.location, [(c.name, c.type) for c in table.sd.cols],
                           [k.name for k in table.partitionKeys or []], index, int(index_version or 0))
    return publish(client, plan, choice, lock=lock, report=report)


def keep_published(client: MetastoreClient, name: TableName) -> StatisticsReport:
    """What indexers that run after writes (the commit hook, ``hsh follow``) do: keep the published statistics
    true where ``register`` / ``sync`` published them (the table carries our marker), and otherwise publish
    nothing -- a table registered with ``--no-stats`` does not get every partition's statistics written (at
    ~12 ms of metastore time each) behind its owner's back; only statistics whose files changed are marked stale.
    """
    try:
        ours = MARKER in (client.get_table(name.database, name.table).parameters or {})
    except StorageHandlerError as e:
        report = StatisticsReport(str(name))
        report.failed(f"table {name}", str(e))
        return report
    return publish_statistics(client, name, choice=PUBLISH if ours else StatisticsChoice(publish=False))


def publish(client: MetastoreClient, plan: StatisticsPlan, choice: StatisticsChoice = PUBLISH, *,
            fresh: Mapping[str, str] | None = None, lock: bool = True,
            report: StatisticsReport | None = None) -> StatisticsReport:
    """Write ``plan``: partitions in batches, then the table. ``fresh`` (partition name -> folder) are partitions
    just added with :meth:`StatisticsPlan.new_partition_parameters`: only their column statistics are written."""
    from storage_handler.registration import stats_calls

    report = report or StatisticsReport(str(plan.name), publish=choice.publish)
    report.index_version = plan.index_version
    report.columns_not_published = plan.not_published() if choice.publish else {}
    calls = stats_calls.Calls(client, plan, choice, report)
    try:
        summaries: dict[str, Summary] = {}
        if plan.partitioned:
            names = client.get_partition_names(plan.name.database, plan.name.table)
            report.partitions = len(names)
            new = {n: f for n, f in (fresh or {}).items() if n in set(names)}
            if choice.publish and choice.defer_partitions:
                return _table_level_only(calls, plan, names, new, report)
            rest = [n for n in names if n not in new]
            jobs = [(batch, True) for batch in _chunks(sorted(new), BATCH) if choice.publish]
            jobs += [(batch, False) for batch in _chunks(rest, BATCH)]
            summaries = _in_lanes(calls, jobs, new)
            if len(summaries) < len(names):
                report.failed(f"table {plan.name}", "its partitions could not all be read, so no table-level sums")
                report.table_level = "failed"
                return report
        calls.table(list(summaries.values()), lock=lock)
    except stats_calls.Unavailable as e:
        report.failed(f"table {plan.name}", str(e))
        report.table_level = "failed" if report.table_level == "not published" else report.table_level
    report.columns = sorted(calls.columns)
    if report.warning():
        log.info("%s", report.warning())
    return report


def _in_lanes(calls: Any, jobs: list[tuple[list[str], bool]], fresh: Mapping[str, str]) -> dict[str, Summary]:
    """Publish batches of partitions (``(names, just added)``), :data:`LANES` at a time on connections of their own.

    The metastore writes each partition's column statistics in a transaction of its own (why lanes, and why the
    first failure stops the rest: :mod:`.lanes`; measured at 2,000 partitions in ``benchmarks/results/stats.md``).
    Each lane counts into a report of its own, merged at the end (no counter is shared between threads)."""
    from storage_handler.registration import stats_calls

    def run(lane: Any, batch: list[str], new: bool) -> dict[str, Summary]:
        return lane.fresh_partitions(batch, fresh) if new else lane.partitions(batch)

    if len(jobs) <= 1 or LANES <= 1:
        out: dict[str, Summary] = {}
        for batch, new in jobs:
            out.update(run(calls, batch, new))
        return out
    lanes = [stats_calls.Calls(calls.client.sibling(), calls.plan, calls.choice,
                               StatisticsReport(calls.report.table, publish=calls.report.publish))
             for _ in range(min(LANES, len(jobs)))]
    try:
        results = in_lanes(jobs, lanes, lambda lane, job: run(lane, *job), name="hsh-statistics")
    finally:
        for lane in lanes:
            lane.client.close()
            calls.report.absorb(lane.report)
            calls.columns |= lane.columns
    return {name: summary for result in results for name, summary in result.items()}


def _table_level_only(calls: Any, plan: StatisticsPlan, names: Sequence[str], fresh: Mapping[str, str],
                      report: StatisticsReport) -> StatisticsReport:
    """The table's statistics now, its partitions' later. The table's sums come from the index's summaries of the
    partitions' folders, which are known for partitions just added; with other partitions registered too the table
    level also waits (their folders would take the metastore reads the deferral saves)."""
    report.partitions_deferred = len(names)
    if set(names) <= set(fresh):
        calls.table([plan.summary(fresh[n]) for n in names])
        report.columns = sorted(calls.columns)
    else:
        report.table_level = "deferred"
    return report


def dry_run(plan: StatisticsPlan, partitions: Mapping[str, str], choice: StatisticsChoice) -> dict[str, Any]:
    """What publishing ``plan`` would write (``partitions``: name -> folder), without reading or writing the
    metastore: the table's numbers and column statistics, and each partition's (the first :data:`LISTED`)."""
    if not choice.publish:
        return {"publish": False, "note": "nothing is published; statistics whose files changed are marked stale"}

    def listing(summary: Summary) -> dict[str, Any]:
        return {**basic_parameters(summary), "columns": {o.colName: plain_values(o) for o in plan.objects(summary)}}

    parts = {n: plan.summary(f) for n, f in sorted(partitions.items())}
    whole = merge(list(parts.values()), plan.columns) if plan.partitioned else plan.summary("")
    return {
        "publish": True, "overwrite_others": choice.overwrite, "index_version": plan.index_version,
        "table": listing(whole), "partitions": len(parts),
        "partitions_listed": [{"partition": n, **listing(s)} for n, s in list(parts.items())[:LISTED]],
        "columns_not_published": plan.not_published(),
    }


def _chunks(items: Sequence[str], size: int) -> Iterator[list[str]]:
    for start in range(0, len(items), size):
        yield list(items[start:start + size])

