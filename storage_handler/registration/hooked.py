"""Metastore calls wrapped in a meta hook exactly as Hive's ``HiveMetaStoreClient`` wraps them.

``pre`` runs first and may refuse; the metastore call follows; ``commit`` runs if it succeeded, ``rollback`` if
it (or ``commit``) failed. So a failure at any step leaves neither a half-registered table nor an orphaned index.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from metastore.client import MetastoreClient
from metastore.names import TableName
from storage_handler.catalog.metastore_source import MetastorePartitions
from storage_handler.registration.statistics import PUBLISH, StatisticsChoice, publish_statistics
from storage_handler.registration.stats_ownership import KEEP_OUR_NUMBERS

log = logging.getLogger(__name__)


def create_table(client: MetastoreClient, table: Any, hook: Any) -> None:
    hook.pre_create_table(table)
    ok = False
    try:
        client.create_table(table)
        hook.commit_create_table(table)
        ok = True
    finally:
        if not ok:
            hook.rollback_create_table(table)


def drop_table(client: MetastoreClient, db: str, name: str, hook: Any, *, delete_data: bool) -> Any:
    table = client.get_table(db, name)
    hook.pre_drop_table(table)
    ok = False
    try:
        client.drop_table(db, name, delete_data=False)  # external table: the hook owns data deletion
        ok = True
    finally:
        if not ok:
            hook.rollback_drop_table(table)
    hook.commit_drop_table(table, delete_data)
    return table


def alter_table(client: MetastoreClient, table: Any, hook: Any, *, keep_statistics: bool = False) -> None:
    """Alter through the hook. ``keep_statistics``: with ``DO_NOT_UPDATE_STATS=true``, so the metastore keeps the
    table's statistics as sent (a plain alter of an unpartitioned table makes it list the whole folder again,
    overwrite ``numFiles``/``totalSize`` and drop ``COLUMN_STATS_ACCURATE``)."""
    hook.pre_alter_table(table)
    ok = False
    try:
        if keep_statistics:
            client.raw(f"table {table.dbName}.{table.tableName}",
                       lambda c: c.alter_table_with_environment_context(table.dbName, table.tableName, table,
                                                                        KEEP_OUR_NUMBERS), idempotent=True)
        else:
            client.alter_table(table)
        hook.commit_alter_table(table)
        ok = True
    finally:
        if not ok:
            hook.rollback_alter_table(table)


def refresh_table(
    client: MetastoreClient, db: str, name: str, hook: Any, change: Callable[[Any], object] | None = None, *,
    statistics: StatisticsChoice = PUBLISH, publish: bool = True,
) -> tuple[Any, bool]:
    """Under the table's HMS lock: re-read the table, apply ``change`` to it, and alter it through the hook (which
    refreshes the index); then, with the lock released, publish the refreshed index as the table's statistics.

    Re-reading under the lock is what keeps a concurrent writer's change (a column ``sync`` just added) from
    being written back out by a stale table object. Returns the table as altered, and whether the lock was held.

    ``statistics``: what to do about the metastore's statistics (default: publish them). The alter keeps the
    table's statistics as they are when they are published (they are rewritten right after), and lets the metastore
    recompute its own file counts when they are not. The publish's report is ``hook.last_statistics``; its warning
    line, if any, is logged. ``publish=False``: the caller publishes later itself (``register`` and ``sync`` do,
    after adding partitions).
    """
    with client.table_lock(db, name) as locked:
        table = client.get_table(db, name)
        if change is not None:
            change(table)
        if hasattr(hook, "partitions") and table.partitionKeys:  # index partitions registered elsewhere too
            hook.partitions = MetastorePartitions.using(client, db, name, [k.name for k in table.partitionKeys])
        alter_table(client, table, hook, keep_statistics=statistics.publish)
    if publish:
        report = publish_statistics(client, TableName(db, name), choice=statistics)
        hook.last_statistics = report
        if report.warning():
            log.warning("%s", report.warning())
    return table, locked
