"""``hsh follow``: keep the indexes of registered tables current for writes made by anybody -- plain Spark, Hive,
Trino, ``ALTER TABLE ... ADD PARTITION``, a loader copying files -- within seconds, many tables from one process.

**Why polling, not the metastore's notification log** (``get_next_notification``, Impala's way): the embedded
metastore of the pyspark wheel has no ``DbNotificationListener`` and publishes no events at all, and a file copied
into an existing partition's folder changes nothing in the metastore, so no event would ever name it. Storage has
to be looked at either way; events would only spare the partition-name call below, so they are not used.

**One poll, per table**:

1. ``get_table`` (still registered? where? which columns?) and, when partitioned, ``get_partition_names``.
2. New names -> ``get_partitions_by_names`` for their locations; names gone -> dropped partitions.
3. Stamps of the registered folders (:mod:`.stamps`): one ``stat`` each on a local disk; on an object store one
   listing of the table prefix every ``listing_seconds``.
4. One scoped update (:func:`~storage_handler.freshness.scoped.update_partitions`) over the new partitions, the
   changed folders and the racy ones, with the dropped partitions' folders in its scope but nothing listed for them
   (an empty scope): their rows leave the index in the same commit. Their folders are not listed: dropping a
   partition of an external table keeps its files, which no query reads any more.
5. The position (:class:`~.stamps.Position`) is saved and the update logged; then, if it committed, the index is
   published as the metastore's statistics where register/sync published them (``keep_published``: ~1 s at 2,000
   partitions, against 30 ms for the commit, after which queries already prune). A publish a crash interrupted is finished after the restart.

Every ``sweep_seconds`` (and for a table seen for the first time) a table is **swept**: its partitions' locations
are read again and every folder is listed, which catches what stamps cannot see (a file rewritten in place, a
partition moved with ``ALTER PARTITION ... SET LOCATION``).

**Cost per poll** with nothing written, at 2,000 partitions (measured here on the embedded metastore): 2 metastore
calls and 2,000 ``stat`` calls on a local disk, 21 ms and 9 ms of CPU (0.5 % of a core at 2 s). On S3 the same 2
calls, plus every ``listing_seconds`` ``ceil(objects / 1000)`` LIST requests (2 for 2,000 objects: 0.45 s, 0.17 s
of CPU against moto's server), never more than a tenth of the time (:data:`LISTING_DUTY`). A committed update
adds the publish (the partitions' statistics are read back: ~1 s at 2,000 partitions).

**Faults**: one table's failure (storage down, an unreadable index) is that table's incident: one line, then it is
retried with exponential backoff (twice the interval per failure, at most ``max_backoff``) and one ``recovered``
line, while the other tables go on. The metastore going away is every table's incident, retried the same way. A
metastore that cannot be reached when the follower starts fails the command instead: that is a setting, not an
outage.

**Not done**: rows are removed only for partitions the follower saw registered and then saw dropped (the position
remembers them across restarts). Rows of folders it never knew -- left, say, by ``hsh index refresh``, which walks
the whole table folder -- stay; no query lists a folder that is no registered partition, so they are never read.
Correctness never depends on the follower: a file the index lacks, or whose row no longer matches, is kept.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from metastore.client import MetastoreClient
from metastore.names import TableName
from storage_handler.catalog.listing import require_table_folder
from storage_handler.catalog.metastore_source import MetastorePartitions, registered_tables
from storage_handler.catalog.partitions import Partition, parse_partition_name
from storage_handler.contract import PARAM_HANDLER
from storage_handler.errors import (
    MetastoreUnavailableError,
    NoSuchObjectError,
    StorageHandlerError,
)
from storage_handler.freshness.follow_events import Event, FollowOptions, NotRegisteredError, TableUpdate
from storage_handler.freshness.lag import behind
from storage_handler.freshness.scoped import IndexedTable, ScopedUpdate, list_scope, update_partitions
from storage_handler.freshness.stamps import (
    UNKNOWN,
    UNPUBLISHED,
    FolderSeen,
    Position,
    Stamp,
    folder_prefix,
    forget_position,
    load_position,
    must_list,
    newest_by_folder,
    save_position,
    stamp_folders,
)
from storage_handler.registration.statistics import keep_published
from storage_handler.stats import load
from storage_handler.stats.files.file_list import FileList
from storage_handler.stats.index.file_stats import StatsOptions
from storage_handler.storage import is_local, s3a_settings
from storage_handler.table_desc import TableDesc

log = logging.getLogger(__name__)
#: an object-store table is listed at most once per this many times the last listing took (boto3 parses ~90 µs of
#: CPU per object listed: 40,000 objects take ~3.5 s, so such a table is listed every 35 s, not every 10)
LISTING_DUTY = 10


@dataclass(frozen=True, slots=True)
class _Health:
    failures: int = 0
    retry_at: float = 0.0  # monotonic
    since: float = 0.0  # wall clock of the first failure


class Follower:
    """Follows ``tables`` and, with ``discover``, every table carrying the handler's parameter in ``databases``
    (empty: in every database), found again every ``rescan_polls`` polls; keeps their indexes current. Positions
    live in ``state_dir``; every log line goes to ``emit``."""

    def __init__(self, client: MetastoreClient, options: FollowOptions, state_dir: Path,
                 emit: Callable[[Event], None], *, tables: Sequence[TableName] = (), discover: bool = False,
                 databases: Sequence[str] = ()) -> None:
        self.client = client
        self.explicit = tuple(tables)
        self.discover = discover
        self.databases = tuple(databases)
        self.tables: list[TableName] = list(self.explicit)
        self.options = options
        self.state_dir = state_dir
        self.emit = emit
        self.failing: set[str] = set()  # tables (or "metastore") whose last attempt failed
        self._positions: dict[str, Position] = {}
        self._health: dict[str, _Health] = {}
        self._listed_ms: dict[str, tuple[int, int]] = {}  # object stores: when last listed, how long it took
        self._polls = 0

    # ------------------------------------------------------------------ the loop
    def run(self, stop: threading.Event) -> None:
        """Poll every ``interval`` until ``stop`` is set; a poll that was started is finished first."""
        what = ", ".join([*map(str, self.explicit), *(f"{db}.*" for db in self.databases)])
        if self.discover and not self.databases:
            what = ", ".join(filter(None, [what, "every registered table"]))
        self.emit(Event("started", None, f"following {what} every {self.options.interval:g} s (sweep every "
                                         f"{self.options.sweep_seconds:g} s); positions in {self.state_dir}"))
        while not stop.is_set():
            started = time.monotonic()
            self.poll(stop)
            stop.wait(max(0.0, self.options.interval - (time.monotonic() - started)))
        self.emit(Event("stopped", None, "stopped"))

    def poll(self, stop: threading.Event | None = None) -> list[TableUpdate]:
        """One poll over every table that is due; never raises for a table's or the metastore's failure."""
        metastore = self._health.get("metastore", _Health())
        if time.monotonic() < metastore.retry_at:
            return []
        updates: list[TableUpdate] = []
        try:
            if self.discover and self._polls % max(1, self.options.rescan_polls) == 0:
                self._discover()
            self._polls += 1
            for name in list(self.tables):
                if stop is not None and stop.is_set():
                    break
                update = self._guarded(name)
                if update is not None:
                    updates.append(update)
        except MetastoreUnavailableError as e:
            self._failed("metastore", e)
            return updates
        self._succeeded("metastore")
        return updates

    def _guarded(self, name: TableName) -> TableUpdate | None:
        key = str(name)
        if time.monotonic() < self._health.get(key, _Health()).retry_at:
            return None
        try:
            update = self._poll_table(name)
        except MetastoreUnavailableError:
            raise
        except (NoSuchObjectError, NotRegisteredError) as e:
            if name not in self.explicit:
                self._forget(name, "dropped" if isinstance(e, NoSuchObjectError) else "no longer registered")
                return None
            self._failed(key, e)
            return None
        except Exception as e:  # noqa: BLE001 - one table's failure must not stop the others
            log.debug("follow %s failed", key, exc_info=True)
            self._failed(key, e)
            return None
        self._succeeded(key)
        return update

    def _failed(self, key: str, error: BaseException) -> None:
        health = self._health.get(key, _Health())
        failures = health.failures + 1
        delay = min(self.options.max_backoff, self.options.interval * 2 ** min(failures, 20))
        self._health[key] = _Health(failures, time.monotonic() + delay, health.since or time.time())
        self.failing.add(key)
        if failures == 1:
            self.emit(Event("incident", None if key == "metastore" else key,
                            f"{key}: {_one_line(error)}; retrying with backoff (next in {delay:g} s)",
                            {"error": _one_line(error), "retry_seconds": delay}))
        else:
            log.info("follow %s: still failing (%d attempts): %s", key, failures, _one_line(error))

    def _succeeded(self, key: str) -> None:
        health = self._health.pop(key, None)
        self.failing.discard(key)
        if health is not None and health.failures:
            down = time.time() - health.since
            self.emit(Event("recovered", None if key == "metastore" else key,
                            f"{key}: recovered after {health.failures} failed attempt(s), {down:.1f} s",
                            {"failures": health.failures, "seconds": round(down, 3)}))

    # ------------------------------------------------------------------ which tables
    def _discover(self) -> None:
        """Every table in the metastore carrying the handler's parameter (one call per database, one per 100
        tables); tables that appeared are followed, tables that vanished forgotten, one line each. A failure
        other than the metastore's is an incident; the tables followed so far go on, and it is tried again at
        the next rescan."""
        try:
            found = {name for name, _ in registered_tables(self.client, self.databases)}
        except MetastoreUnavailableError:
            raise
        except Exception as e:  # noqa: BLE001
            self._failed("discovery", e)
            return
        self._succeeded("discovery")
        before, after = set(self.tables), found | set(self.explicit)
        for name in sorted(after - before, key=str):
            self.emit(Event("watch", str(name), f"{name}: following"))
        for name in sorted(before - after, key=str):
            self._forget(name, "no longer registered")
        self.tables = sorted(after, key=str)

    def _forget(self, name: TableName, why: str) -> None:
        key = str(name)
        self.emit(Event("forget", key, f"{key}: {why}; forgotten"))
        self.tables = [t for t in self.tables if t != name]
        self._positions.pop(key, None)
        self._health.pop(key, None)
        self._listed_ms.pop(key, None)
        self.failing.discard(key)
        forget_position(self.state_dir, key)

    # ------------------------------------------------------------------ one table
    def _poll_table(self, name: TableName) -> TableUpdate | None:
        key = str(name)
        found = self.client.get_table(name.database, name.table)
        if PARAM_HANDLER not in (found.parameters or {}):
            raise NotRegisteredError(f"table {key} is not registered with the handler (no {PARAM_HANDLER} "
                                     "parameter): `hsh register` it first")
        desc = TableDesc.from_hms(found)
        conf = s3a_settings(desc.parameters)
        if is_local(desc.location):  # one stat; on an object store a vanished prefix would cost a LIST per poll
            require_table_folder(key, desc.location, indexed=True)
        keys = tuple(k for k, _ in desc.partition_keys)
        table = IndexedTable(key, desc.location, desc.columns, keys, StatsOptions.for_table(desc.parameters), conf)
        position = self._positions.get(key) or load_position(self.state_dir, key)
        if position is not None and position.location != desc.location:
            position = None  # the table moved: another index, nothing known of it
        now_ms = _now_ms()
        sweep = position is None or now_ms - position.swept_ms >= self.options.sweep_seconds * 1000
        known = position.folders if position is not None else {}
        locations, fetched = self._live(name, keys, desc.location, known, sweep)
        last, took = self._listed_ms.get(key, (0, 0))
        listing = sweep or now_ms - last >= max(self.options.listing_seconds * 1000, LISTING_DUTY * took)
        seen_ms = _now_ms()  # before the stamps, which are before the listing
        stamps = stamp_folders(desc.location, locations, conf, remote=listing)
        if listing:
            self._listed_ms[key] = (seen_ms, _now_ms() - seen_ms)
        changed = [n for n in sorted(locations)
                   if sweep or must_list(known.get(n), locations[n], stamps.get(n), self.options.racy_ms)]
        in_use = set(locations.values())
        dropped = {n: s for n, s in known.items()
                   if (n not in locations or s.location != locations[n]) and s.location not in in_use}
        if not changed and not dropped:
            if position is not None:
                self._publish(name, position)  # one a crash interrupted
            return None
        started = time.perf_counter()
        before = position if position is not None else Position(key, desc.location)
        if before.published != UNPUBLISHED:  # an update may commit: its statistics are owed, even after a crash
            self._positions[key] = replace(before, published=UNPUBLISHED)
            save_position(self.state_dir, self._positions[key])
        parts = [fetched.get(n) or Partition(n, parse_partition_name(n, keys, key), locations[n])
                 for n in changed if keys]
        updates, files = _apply(table, parts, list(dropped.values()))
        committed = [u for u in updates if not u.diff.is_empty]
        version = updates[-1].version if updates else (position.index_version if position else None)
        newest = newest_by_folder(files)
        folders = {n: s for n, s in known.items() if n in locations and n not in changed}
        for n in changed:
            stamp = stamps.get(n, Stamp(UNKNOWN))
            folders[n] = FolderSeen(locations[n], stamp.value, stamp.changed_ms, seen_ms,
                                    newest.get(folder_prefix(desc.location, locations[n])))
        swept = now_ms if sweep else (position.swept_ms if position is not None else now_ms)
        # owed if this update (or one a crash interrupted) committed; else the committer's (a refresh, a write)
        owed = committed or (position is not None and position.published == UNPUBLISHED)
        fresh = Position(key, desc.location, folders, swept, version, UNPUBLISHED if owed else version)
        if fresh != position:
            save_position(self.state_dir, fresh)  # only now: the commit it describes has succeeded
        self._positions[key] = fresh
        update = None
        if committed:
            update = self._report(key, changed, sorted(dropped), committed, files, version,
                                  time.perf_counter() - started, sweep)
        self._publish(name, fresh)
        return update

    def _publish(self, name: TableName, position: Position) -> None:
        """Publish the index as the metastore's statistics when the follower committed a version whose statistics
        are not published yet. After the update's line: at 2,000 partitions the publish takes ~1 s here, the
        commit 30 ms, and queries prune by the index as soon as it is committed."""
        if position.published != UNPUBLISHED:
            return
        report = keep_published(self.client, name)
        if report.warning():
            self.emit(Event("warning", str(name), report.warning() or ""))
        done = replace(position, published=position.index_version)
        save_position(self.state_dir, done)
        self._positions[str(name)] = done

    def _live(self, name: TableName, keys: Sequence[str], location: str, known: Mapping[str, FolderSeen],
              sweep: bool) -> tuple[dict[str, str], dict[str, Partition]]:
        """The registered partitions' folders by name (``{"": location}`` for an unpartitioned table), and the
        partitions whose locations were fetched: new names (all names when sweeping); the position knows the
        others' folders (no Python object per partition and poll beyond its name)."""
        if not keys:
            return {"": location}, {}
        names = self.client.get_partition_names(name.database, name.table)
        fetch = names if sweep else [n for n in names if n not in known]
        source = MetastorePartitions.using(self.client, name.database, name.table, keys)
        fetched = {p.name: p for p in source.by_names(fetch)} if fetch else {}
        locations = {n: fetched[n].location if n in fetched else known[n].location for n in names
                     if n in fetched or (n in known and not sweep)}
        return locations, fetched

    def _report(self, key: str, changed: Sequence[str], dropped: Sequence[str], updates: Sequence[ScopedUpdate],
                files: FileList, version: int | None, seconds: float, sweep: bool) -> TableUpdate:
        added = [p for u in updates for p in u.diff.added]
        rewritten = [p for u in updates for p in u.diff.changed]
        removed = sum(len(u.diff.removed) for u in updates)
        lag = behind(files, set(added) | set(rewritten))
        update = TableUpdate(key, tuple(n for n in changed if n), tuple(dropped), len(added), len(rewritten),
                             removed, version, lag, seconds, sweep)
        now_ms = _now_ms()
        where = _names(update.partitions) if update.partitions else ""
        if update.dropped:
            where += ("; " if where else "") + f"dropped {_names(update.dropped)}"
        retried = sum(len(u.diff.retried) for u in updates)  # unreadable files read again, still unreadable
        again = f", {retried} unreadable tried again" if retried else ""
        self.emit(Event("update", key, (
            f"{key}: {'sweep, ' if sweep else ''}{where + ': ' if where else ''}+{update.added} ~{update.changed} "
            f"-{update.removed} files{again}, index v{version}; was behind by {lag.describe(now_ms)}"), {
            "partitions": list(update.partitions[:100]), "partitions_listed": len(update.partitions),
            "dropped": list(update.dropped[:100]), "added": update.added, "changed": update.changed,
            "removed": update.removed, "retried": retried, "version": version, "sweep": sweep,
            "seconds": round(seconds, 3), **lag.as_dict(now_ms)}))
        return update


def _apply(table: IndexedTable, changed: Sequence[Partition],
           dropped: Sequence[FolderSeen]) -> tuple[list[ScopedUpdate], FileList]:
    """The scoped update(s) of one poll and the files they listed: one commit for the changed partitions and the
    dropped ones' (empty) scopes; a partition registered at the table folder itself, whose rows no prefix selects,
    gets an update of its own (in practice never). The index is loaded before anything is listed, so rows another
    indexer (a write's commit hook) commits meanwhile are kept, not dropped as files the listing did not show."""
    before = load(table.location, conf=table.conf)
    if not table.partition_keys:
        listed = list_scope(table, None)
        return [update_partitions(table, None, listed=listed, before=before)], listed[0]
    under = [p for p in changed if folder_prefix(table.location, p.location)]
    at_root = [p for p in changed if not folder_prefix(table.location, p.location)]
    gone = {folder_prefix(table.location, s.location) for s in dropped}
    updates: list[ScopedUpdate] = []
    listings: list[FileList] = []
    if under or gone - {""}:
        files, prefixes = list_scope(table, under) if under else (FileList.empty(), [])
        scope = sorted(set(prefixes or ()) | (gone - {""}))
        updates.append(update_partitions(table, under, listed=(files, scope), before=before))
        listings.append(files)
    if at_root or "" in gone:
        files = list_scope(table, at_root)[0] if at_root else FileList.empty()
        updates.append(update_partitions(table, at_root, listed=(files, None), before=before))
        listings.append(files)
    merged = listings[0] if len(listings) == 1 else sum(listings[1:], listings[0])
    return updates, merged



def _names(names: Sequence[str]) -> str:
    shown = ", ".join(names[:3])
    return shown + (f" (+{len(names) - 3} more)" if len(names) > 3 else "")


def _one_line(error: BaseException) -> str:
    """Our own errors say what happened; anything else is named by its type too."""
    text = " ".join(str(error).split()) or type(error).__name__
    return text if isinstance(error, StorageHandlerError) else f"{type(error).__name__}: {text}"


def _now_ms() -> int:
    return time.time_ns() // 1_000_000
