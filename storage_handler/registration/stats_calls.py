"""The metastore calls that publish a :class:`~storage_handler.registration.statistics.StatisticsPlan`.

Per batch of partitions: read them (``get_partitions_by_names``); skip those whose parameters already say what the
index says (:func:`~.stats_ownership.unchanged`: no column statistics read, nothing sent); read the rest's column
statistics (``get_partitions_statistics_req``), decide whose they are (:func:`~.stats_ownership.decide`), delete our
own stale columns, write the columns (``set_aggr_stats_for``) and then the parameters
(``alter_partitions_with_environment_context``, ``DO_NOT_UPDATE_STATS``), so the alter sets the final
``COLUMN_STATS_ACCURATE`` and marker in one write. Then the table, under its lock, freshly read.

What a refusal does (measured on Hive Metastore 2.3.10): the metastore applies a batch partition by partition and
stops at the first failure, so a refused batch is retried one partition at a time and one bad partition costs only
itself; a refusal is recorded in the report (its warning line) and publishing goes on; after a Thrift-level error
(``TApplicationException``) the connection is closed, because the metastore may have left the request half read on
it; a metastore that is gone ends publishing (each further call would wait out the client's whole retry budget).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from hmsclient.genthrift.hive_metastore import ttypes as hms
from thrift.Thrift import TApplicationException

from metastore.client import MetastoreClient
from storage_handler.errors import MetastoreUnavailableError, StorageHandlerError
from storage_handler.registration.hive_stats import Summary, merge
from storage_handler.registration.stats_ownership import (
    ACCURATE,
    KEEP_OUR_NUMBERS,
    MARKER,
    SPARK_STATS_PREFIX,
    Decision,
    Marker,
    basic_parameters,
    decide,
    new_parameters,
    unchanged,
)
from storage_handler.registration.stats_summary import folder_key
from storage_handler.registration.table_spec import partition_name_of

if TYPE_CHECKING:
    from storage_handler.registration.statistics import StatisticsChoice, StatisticsPlan, StatisticsReport

_FAILED: Any = object()


class Unavailable(Exception):
    """The metastore is gone: publishing stops (the report says what was not published)."""


class Calls:
    """One publish of one plan: the calls, and what they did in ``report``."""

    def __init__(self, client: MetastoreClient, plan: StatisticsPlan, choice: StatisticsChoice,
                 report: StatisticsReport) -> None:
        self.client, self.plan, self.choice, self.report = client, plan, choice, report
        self.db, self.tbl = plan.name.database, plan.name.table
        self.column_names = [n for n, _ in plan.columns]
        self.columns: set[str] = set()  # columns whose statistics are ours somewhere after this run

    # ------------------------------------------------------------------ calls
    def _call(self, what: str, fn: Callable[[Any], Any], *, record: bool = True) -> Any:
        """One call; a refusal is recorded (unless ``record`` is off) and returns ``_FAILED``."""
        try:
            return self.client.raw(what, fn, idempotent=True)
        except MetastoreUnavailableError as e:
            raise Unavailable(str(e)) from e
        except StorageHandlerError as e:
            if isinstance(e.__cause__, TApplicationException):
                self.client.close()  # the request may sit half read on the connection: start a fresh one
            if record:
                self.report.failed(what, str(e))
            return _FAILED

    def _part(self, name: str) -> str:
        return f"partition {name}"

    def _newer(self, params: Mapping[str, str]) -> bool:
        """Statistics a publish of a newer index version wrote: never replaced by older numbers."""
        marker = Marker.parse(params.get(MARKER))
        return marker is not None and marker.index_version > self.plan.index_version and not self.choice.overwrite

    def _set_columns(self, stats: list[hms.ColumnStatistics]) -> dict[str, list[hms.ColumnStatisticsObj]]:
        """Column statistics of many partitions in one ``set_aggr_stats_for``; refused, one call each."""
        if not stats:
            return {}
        request = hms.SetPartitionsStatsRequest(colStats=stats)
        done: dict[str, list[hms.ColumnStatisticsObj]] = {}
        if self._call(f"partitions of {self.db}.{self.tbl}", lambda c: c.set_aggr_stats_for(request),
                      record=False) is not _FAILED:
            done = {s.statsDesc.partName: list(s.statsObj) for s in stats}
        else:
            for s in stats:
                one = hms.SetPartitionsStatsRequest(colStats=[s])
                if self._call(self._part(s.statsDesc.partName), _bind(_set_aggr, one)) is not _FAILED:
                    done[s.statsDesc.partName] = list(s.statsObj)
        self.report.column_objects_written += sum(len(v) for v in done.values())
        return done

    def _stats(self, name: str, objs: Sequence[hms.ColumnStatisticsObj]) -> hms.ColumnStatistics:
        desc = hms.ColumnStatisticsDesc(isTblLevel=False, dbName=self.db, tableName=self.tbl, partName=name)
        return hms.ColumnStatistics(statsDesc=desc, statsObj=list(objs))

    # ------------------------------------------------------------------ partitions
    def fresh_partitions(self, names: Sequence[str], folders: Mapping[str, str]) -> dict[str, Summary]:
        """Partitions just added with their basic statistics: only their column statistics are written."""
        summaries = {n: self.plan.summary(folders[n]) for n in names}
        objects = {n: self.plan.objects(s) for n, s in summaries.items()}
        written = self._set_columns([self._stats(n, o) for n, o in objects.items() if o])
        for name, objs in objects.items():
            if len(written.get(name, [])) == len(objs):
                self.columns.update(o.colName for o in objs)
        self.report.partitions_written += len(names)
        return summaries

    def partitions(self, names: Sequence[str]) -> dict[str, Summary]:
        """Registered partitions: decide per partition, write only what differs. Their summaries by name."""
        found = self._call(f"partitions of {self.db}.{self.tbl}",
                           lambda c: c.get_partitions_by_names(self.db, self.tbl, list(names)))
        if found is _FAILED:
            return {}
        publish, plan = self.choice.publish, self.plan
        summaries: dict[str, Summary] = {}
        todo: list[tuple[str, hms.Partition, Summary, list[hms.ColumnStatisticsObj]]] = []
        for part in found:
            name = partition_name_of(plan.partition_keys, part.values)
            summary = summaries[name] = plan.summary(folder_key(plan.location, part.sd.location))
            params = part.parameters or {}
            objs = plan.objects(summary) if publish else []
            if self._newer(params):
                self.report.partitions_kept += 1
            elif publish and not self.choice.overwrite and unchanged(params, summary, objs):
                self.report.partitions_unchanged += 1
                self.columns.update(o.colName for o in objs)
            elif publish or MARKER in params or ACCURATE in params:
                todo.append((name, part, summary, objs))
        current: dict[str, list[hms.ColumnStatisticsObj]] = {}
        if todo and publish:
            request = hms.PartitionsStatsRequest(dbName=self.db, tblName=self.tbl, colNames=self.column_names,
                                                 partNames=[n for n, *_ in todo])
            got = self._call(f"partitions of {self.db}.{self.tbl}",
                             lambda c: c.get_partitions_statistics_req(request), record=False)
            if got is _FAILED:
                for name, *_ in todo:
                    self.report.failed(self._part(name), "their current statistics could not be read")
                return summaries
            current = {k: list(v) for k, v in (got.partStats or {}).items()}
        decisions = {name: decide(part.parameters or {}, current.get(name, []), basic_parameters(summary), objs,
                                  overwrite=self.choice.overwrite, publish=publish)
                     for name, part, summary, objs in todo}
        for name, decision in decisions.items():
            for column in decision.delete_columns:  # ours, stale: an update would merge into them
                self._call(self._part(name), _bind(_delete_partition_column, self.db, self.tbl, name, column),
                           record=False)
        written = self._set_columns([self._stats(n, w) for n, _, _, objs in todo
                                     if (w := [o for o in objs if o.colName in decisions[n].write_columns])])
        altered: list[tuple[str, hms.Partition, Decision]] = []
        for name, part, summary, _objs in todo:
            decision, mine = decisions[name], written.get(name, [])
            self.columns.update(o.colName for o in mine)
            if not (decision.write_basic or decision.mark_stale or mine or decision.delete_columns):
                self.report.partitions_kept += 1
                continue
            part.parameters = new_parameters(part.parameters or {}, summary, decision, mine, plan.index_version)
            altered.append((name, part, decision))
        self._alter_partitions(altered)
        return summaries

    def _alter_partitions(self, altered: list[tuple[str, hms.Partition, Decision]]) -> None:
        if not altered:
            return
        parts = [p for _, p, _ in altered]
        ok = self._call(f"partitions of {self.db}.{self.tbl}", _bind(_alter_partitions, self.db, self.tbl, parts),
                        record=False) is not _FAILED
        for name, part, decision in altered:
            if not ok and self._call(self._part(name), _bind(_alter_partition, self.db, self.tbl, part)) is _FAILED:
                continue
            if decision.write_basic:
                self.report.partitions_written += 1
            elif decision.mark_stale:
                self.report.partitions_marked_stale += 1
            else:
                self.report.partitions_kept += 1

    # ------------------------------------------------------------------ the table
    def table(self, partitions: list[Summary], *, lock: bool = True) -> None:
        """The table's own statistics (the sums of ``partitions`` for a partitioned table), under its lock."""
        what = f"table {self.db}.{self.tbl}"
        try:
            guard = self.client.table_lock(self.db, self.tbl) if lock else contextlib.nullcontext(False)
            with guard:
                self.report.table_level = self._table(what, partitions)
        except MetastoreUnavailableError as e:
            raise Unavailable(str(e)) from e
        except StorageHandlerError as e:  # the lock was not granted
            self.report.failed(what, str(e))
            self.report.table_level = "failed"

    def _table(self, what: str, partitions: list[Summary]) -> str:
        plan, publish = self.plan, self.choice.publish
        table = self._call(what, lambda c: c.get_table(self.db, self.tbl))
        if table is _FAILED:
            return "failed"
        params = dict(table.parameters or {})
        self.report.spark_statistics = any(k.startswith(SPARK_STATS_PREFIX) for k in params)
        summary = merge(partitions, plan.columns) if plan.partitioned else plan.summary("")
        objs = plan.objects(summary) if publish else []
        ours = self.report.partitions_written + self.report.partitions_unchanged if plan.partitioned else None
        marker = Marker.parse(params.get(MARKER))
        if self._newer(params):
            return "kept (a newer index version's)"
        if publish and not self.choice.overwrite and marker is not None and marker.parts == ours and \
                unchanged(params, summary, objs, table_of_partitions=plan.partitioned):
            self.columns.update(o.colName for o in objs)
            return "unchanged"
        current: list[hms.ColumnStatisticsObj] = []
        if publish and (MARKER in params or ACCURATE in params or objs):
            request = hms.TableStatsRequest(dbName=self.db, tblName=self.tbl, colNames=self.column_names)
            got = self._call(what, lambda c: c.get_table_statistics_req(request))
            if got is _FAILED:
                return "failed"
            current = list(got.tableStats or [])
        decision = decide(params, current, basic_parameters(summary), objs, overwrite=self.choice.overwrite,
                          publish=publish)
        if not publish and not decision.mark_stale:
            return "off"
        for column in decision.delete_columns:
            self._call(what, _bind(_delete_table_column, self.db, self.tbl, column), record=False)
        chosen = [o for o in objs if o.colName in decision.write_columns]
        written: list[hms.ColumnStatisticsObj] = []
        if chosen:
            desc = hms.ColumnStatisticsDesc(isTblLevel=True, dbName=self.db, tableName=self.tbl)
            stats = hms.ColumnStatistics(statsDesc=desc, statsObj=chosen)
            if self._call(what, lambda c: c.update_table_column_statistics(stats)) is not _FAILED:
                written = chosen
                self.report.column_objects_written += len(chosen)
                self.columns.update(o.colName for o in chosen)
        if not (decision.write_basic or decision.mark_stale or written or decision.delete_columns):
            return "kept"
        table.parameters = new_parameters(params, summary, decision, written, plan.index_version,
                                          table_of_partitions=plan.partitioned, parts=ours)
        if self._call(what, _bind(_alter_table, self.db, self.tbl, table)) is _FAILED:
            return "failed"
        return "written" if decision.write_basic else "marked stale" if decision.mark_stale else "kept"


def _bind(fn: Callable[..., Any], *args: Any) -> Callable[[Any], Any]:
    return lambda c: fn(c, *args)


def _set_aggr(c: Any, request: hms.SetPartitionsStatsRequest) -> bool:
    return bool(c.set_aggr_stats_for(request))


def _delete_table_column(c: Any, db: str, table: str, column: str) -> bool:
    return bool(c.delete_table_column_statistics(db, table, column))


def _delete_partition_column(c: Any, db: str, table: str, partition: str, column: str) -> bool:
    return bool(c.delete_partition_column_statistics(db, table, partition, column))


def _alter_partition(c: Any, db: str, table: str, partition: hms.Partition) -> bool:
    c.alter_partition_with_environment_context(db, table, partition, KEEP_OUR_NUMBERS)
    return True


def _alter_partitions(c: Any, db: str, table: str, partitions: list[hms.Partition]) -> bool:
    c.alter_partitions_with_environment_context(db, table, partitions, KEEP_OUR_NUMBERS)
    return True


def _alter_table(c: Any, db: str, table: str, obj: hms.Table) -> bool:
    c.alter_table_with_environment_context(db, table, obj, KEEP_OUR_NUMBERS)
    return True
