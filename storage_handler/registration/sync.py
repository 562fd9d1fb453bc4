"""``hsh sync``: bring the metastore and the index in line with what is on storage.

* new partition folders under the table folder are added; registered partitions whose location is gone are
  dropped only with ``--drop-missing`` (a partition registered at its own location is left alone while that
  location exists);
* new columns found in the files are appended to the table schema;
* the Spark provider and schema parameters that earlier versions wrote are removed (the table becomes a plain
  Hive Parquet table for every Spark session; see :func:`storage_handler.registration.table_spec.legacy_parameters`);
* incompatible changes are refused, naming the column, both types and the files involved: a column whose type
  changed, a column no file has any more (dropped or renamed), partition keys that differ;
* the index is refreshed incrementally (only new or changed footers are read);
* unreadable files follow :mod:`storage_handler.registration.dataset`'s rule: recorded and kept in every scan (the
  schema is compared with the readable files only), or refused with ``strict`` before anything changes.

Concurrency: the whole apply runs under an exclusive HMS table lock where the metastore supports locks; the index
commit is optimistic anyway (re-read the version, retry on conflict) and partition adds use ``ifNotExists``, so
two syncs at once can neither lose nor duplicate a partition or an index entry. Every step is idempotent, so a
sync interrupted by a metastore restart is finished by running it again.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hmsclient.genthrift.hive_metastore import ttypes as hms

from metastore.client import MetastoreClient
from metastore.names import TableName
from storage_handler.errors import SchemaError
from storage_handler.handler import StorageHandler
from storage_handler.registration import hooked
from storage_handler.registration.dataset import Dataset, StrictEngine, discover, partition_value_fits
from storage_handler.registration.register import (
    DEFAULT_BATCH,
    add_partitions,
    index_statistics,
    new_partitions,
    publish_planned,
)
from storage_handler.registration.statistics import PUBLISH, StatisticsChoice
from storage_handler.registration.table_spec import (
    drop_legacy_parameters,
    legacy_parameters,
    partition_name_of,
    table_columns,
    table_partition_keys,
)
from storage_handler.stats import FooterEngine, StatsOptions
from storage_handler.stats.engines.local import ProgressCallback
from storage_handler.stats.files.walk import absolute_path
from storage_handler.storage import s3a_settings, storage_for
from storage_handler.types import HiveType, parse_hive_type


@dataclass(frozen=True, slots=True)
class SyncPlan:
    name: TableName
    dataset: Dataset
    new_columns: tuple[tuple[str, HiveType], ...]
    partitions_to_add: tuple[tuple[str | None, ...], ...]
    partitions_to_drop: tuple[str, ...]
    missing_partitions: tuple[str, ...]  # vanished from storage (dropped only with drop_missing)
    parameters_to_remove: tuple[str, ...] = ()  # what earlier versions wrote for Spark (see legacy_parameters)
    columns_in_no_file: tuple[str, ...] = ()  # kept (they read as NULL): allowed with drop_missing only

    def summary(self) -> dict[str, Any]:
        return {
            "table": str(self.name),
            "parameters_to_remove": list(self.parameters_to_remove),
            "files": len(self.dataset.files),
            "new_columns": [{"name": n, "type": str(t)} for n, t in self.new_columns],
            "partitions_to_add": [self.dataset.partition_name(v) for v in self.partitions_to_add],
            "partitions_to_drop": list(self.partitions_to_drop),
            "missing_partitions_kept": [p for p in self.missing_partitions if p not in self.partitions_to_drop],
            "columns_in_no_file": list(self.columns_in_no_file),
        }


def plan_sync(
    client: MetastoreClient, name: TableName, *, drop_missing: bool = False,
    progress: Callable[[str], None] | None = None, footers: ProgressCallback | None = None,
    engine: FooterEngine | None = None, strict: bool = False,
) -> SyncPlan:
    table = client.get_table(name.database, name.table)
    conf = s3a_settings(table.parameters)
    declared = {n.lower(): parse_hive_type(t) for n, t in table_columns(table)}
    dataset = discover(table.sd.location, location=table.sd.location, progress=progress, conf=conf,
                       options=StatsOptions.for_table(table.parameters), footers=footers, engine=engine,
                       strict=strict, need_schema=False,  # the metastore has the schema: no readable file is fine
                       declared=declared)
    new_columns, orphans = _schema_changes(name, table, dataset, orphans_ok=drop_missing)
    registered = client.get_partitions(name.database, name.table) if dataset.partition_keys else []
    to_add = new_partitions(dataset, table, registered)
    _check_values(name, table, dataset, to_add)
    # vanished: a registered partition whose own location is gone (one registered elsewhere is not missing
    # just because the table folder has no k=v folder for it)
    missing = tuple(sorted(_name(table, p) for p in registered
                           if not storage_for(p.sd.location, conf).is_dir(p.sd.location)))
    return SyncPlan(name, dataset, new_columns, to_add, missing if drop_missing else (), missing,
                    tuple(legacy_parameters(table.parameters)), orphans)


def _check_values(name: TableName, table: Any, dataset: Dataset, to_add: Sequence[tuple[str | None, ...]]) -> None:
    """Refuse, before anything changes, new folders whose values the registered keys' types cannot hold
    (``p=abc`` under ``p int``): every plain Spark query on the table would fail on them."""
    keys = [(k, parse_hive_type(t)) for k, t in table_partition_keys(table)]
    bad = [(k, hive_type, dataset.partition_name(v)) for v in to_add
           for i, (k, hive_type) in enumerate(keys) if not partition_value_fits(v[i], hive_type)]
    if bad:
        key, hive_type, _folder = bad[0]
        folders = ", ".join(f for *_, f in bad[:3]) + (" ..." if len(bad) > 3 else "")
        raise SchemaError(
            f"table {name}: partition key {key!r} is {hive_type} but {len(bad)} new folder(s) under {dataset.root} "
            f"hold values it cannot ({folders}); plain Spark and Hive would fail on every query of the table. "
            "Rename or remove those folders (nothing was synced), or register a new table whose key is a string"
        )


def _name(table: Any, partition: Any) -> str:
    """Hive's name of a registered partition (``k1=v1/k2=v2``, escaped; NULL as the default partition)."""
    return partition_name_of([k.name for k in table.partitionKeys], partition.values)


def _schema_changes(name: TableName, table: Any, dataset: Dataset, *, orphans_ok: bool
                    ) -> tuple[tuple[tuple[str, HiveType], ...], tuple[str, ...]]:
    """The columns to append, and the metastore's columns no readable file has (allowed only with
    ``orphans_ok``).

    Why a column no file has is refused by default: it is how a renamed or dropped column looks, and the table
    would read it as NULL from then on. With ``--drop-missing`` the user says files went away on purpose (a
    partition deleted, perhaps the last one holding a column added later), so the column is kept and reads NULL.
    """
    keys_have = [(n.lower(), t) for n, t in table_partition_keys(table)]
    keys_found = [(n, str(t)) for n, t in dataset.partition_keys]
    if [n for n, _ in keys_have] != [n for n, _ in keys_found]:
        raise SchemaError(
            f"table {name}: partition keys are {[n for n, _ in keys_have]} in the metastore but the folders under "
            f"{dataset.root} give {[n for n, _ in keys_found]}; partition keys cannot change, register a new table"
        )
    have = {n.lower(): parse_hive_type(t) for n, t in table_columns(table)}
    found = {n.lower(): t for n, t in dataset.columns}
    if not found and dataset.unreadable:
        return (), ()  # no readable file to compare with (all are recorded as unreadable): the schema stays
    readable = len(dataset.files) - len(dataset.unreadable)
    orphans = []
    for column, old in have.items():
        if column not in found and orphans_ok:
            orphans.append(column)
            continue
        if column not in found:
            raise SchemaError(
                f"table {name}: column {column!r} ({old}) is in the metastore but in none of the "
                f"{readable} readable files under {dataset.root} (dropped or renamed?); dropping or renaming "
                "columns is not supported, restore the column or register a new table. If the files that had "
                f"it were removed on purpose, `hsh sync {name} --drop-missing` keeps the column (it reads as "
                "NULL) and drops the partitions that are gone"
            )
        if str(found[column]) != str(old):  # discovery gave the table's own type wherever Spark reads the files
            files = _files_with(dataset, column, found[column], s3a_settings(table.parameters))
            raise SchemaError(
                f"table {name}: column {column!r} is {old} in the metastore but {found[column]} in "
                f"{', '.join(files[:3])}{' ...' if len(files) > 3 else ''}, which Spark cannot read as {old}; "
                "rewrite those files with the table's type (a widening ALTER TABLE, int to bigint say, is fine)"
            )
    return tuple((n, t) for n, t in dataset.columns if n.lower() not in have), tuple(orphans)


def _files_with(dataset: Dataset, column: str, hive_type: HiveType, conf: Mapping[str, str]) -> list[str]:
    """The files whose ``column`` has ``hive_type``, read with the table's storage settings ``conf`` (without
    them a table whose endpoint is a table property was read from the environment's store: a storage error
    instead of the schema conflict)."""
    import pyarrow.parquet as pq

    from storage_handler.types import arrow_to_hive, parquet_arrow_type

    hits = []
    storage = storage_for(dataset.root, conf)
    unreadable = {path for path, _ in dataset.unreadable}
    for f in dataset.files:
        if f.path in unreadable:
            continue
        uri = absolute_path(dataset.root, f.path)
        with storage.open_input(uri) as source:
            schema = pq.read_schema(source)
        for field in schema:
            if field.name.lower() == column and str(arrow_to_hive(parquet_arrow_type(field.type), column)) \
                    == str(hive_type):
                hits.append(uri)
    return hits


def apply_sync(
    client: MetastoreClient, plan: SyncPlan, *, batch_size: int = DEFAULT_BATCH,
    on_batch: Callable[[int, int], None] | None = None, progress: ProgressCallback | None = None,
    engine: FooterEngine | None = None, strict: bool = False, statistics: StatisticsChoice = PUBLISH,
) -> dict[str, Any]:
    """Apply ``plan``, then publish the refreshed index as the table's statistics (``statistics``; new partitions
    carry their basic statistics from the start). With ``strict`` a file found unreadable now (one of a partition
    registered outside the table folder, or one that broke since the plan) stops the index refresh before it
    commits or alters the table."""
    name, ds = plan.name, plan.dataset
    hook = StorageHandler().get_meta_hook()
    hook.progress, hook.seed, hook.known_files = progress, ds.seed, ds.files
    hook.engine = StrictEngine(engine) if strict else engine
    def change_table(table: Any) -> None:
        if plan.new_columns:
            have = {c.name.lower() for c in table.sd.cols}
            table.sd.cols.extend(
                hms.FieldSchema(name=n, type=str(t), comment=None) for n, t in plan.new_columns if n.lower() not in have
            )
        drop_legacy_parameters(table)  # as the table is now, under the lock

    # The schema change, the upgrade and the index refresh happen under the lock on a freshly read table;
    # partition calls are idempotent (ifNotExists / ifExists), so they need no lock.
    table, locked = hooked.refresh_table(client, name.database, name.table, hook, change_table,
                                         statistics=statistics, publish=False)
    version = int(table.parameters.get("hsh.index.version", 0))
    stats = index_statistics(name, table, table.sd.location, version, statistics)
    added = add_partitions(client, table, ds, plan.partitions_to_add, batch_size=batch_size, on_batch=on_batch,
                           statistics=stats)
    for start in range(0, len(plan.partitions_to_drop), batch_size):
        client.drop_partitions(name.database, name.table, plan.partitions_to_drop[start : start + batch_size])
    fresh = {ds.partition_name(v): ds.partition_folders.get(tuple(v)) or ds.partition_name(v)
             for v in plan.partitions_to_add} if stats else {}
    report = publish_planned(client, name, stats, statistics, fresh)
    diff = hook.last_diff
    return {
        **plan.summary(), "dry_run": False, "locked": locked, "partitions_added": added,
        "partitions_dropped": len(plan.partitions_to_drop),
        "index_version": int(table.parameters.get("hsh.index.version", 0)),
        "index_added": len(diff.added) if diff else 0, "index_changed": len(diff.changed) if diff else 0,
        "index_removed": len(diff.removed) if diff else 0,
        "index_membership_read": list(diff.membership_read) if diff else [],
        "statistics": report.as_dict(),
    }
