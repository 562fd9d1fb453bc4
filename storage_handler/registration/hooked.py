"""Metastore calls wrapped in a meta hook exactly as Hive's ``HiveMetaStoreClient`` wraps them.

``pre`` runs first and may refuse; the metastore call follows; ``commit`` runs if it succeeded, ``rollback`` if
it (or ``commit``) failed. So a failure at any step leaves neither a half-registered table nor an orphaned index.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from metastore.client import MetastoreClient
from storage_handler.catalog.metastore_source import MetastorePartitions


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


def alter_table(client: MetastoreClient, table: Any, hook: Any) -> None:
    hook.pre_alter_table(table)
    ok = False
    try:
        client.alter_table(table)
        hook.commit_alter_table(table)
        ok = True
    finally:
        if not ok:
            hook.rollback_alter_table(table)


def refresh_table(
    client: MetastoreClient, db: str, name: str, hook: Any, change: Callable[[Any], object] | None = None
) -> tuple[Any, bool]:
    """Under the table's HMS lock: re-read the table, apply ``change`` to it, and alter it through the hook.

    Re-reading under the lock is what keeps a concurrent writer's change (a column ``sync`` just added) from
    being written back out by a stale table object. Returns the table as altered, and whether the lock was held.
    """
    with client.table_lock(db, name) as locked:
        table = client.get_table(db, name)
        if change is not None:
            change(table)
        if hasattr(hook, "partitions") and table.partitionKeys:  # index partitions registered elsewhere too
            hook.partitions = MetastorePartitions.using(client, db, name, [k.name for k in table.partitionKeys])
        alter_table(client, table, hook)
    return table, locked
