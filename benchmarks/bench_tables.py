"""Registering a benchmark's tables: each folder through the handler, and again as the plain Hive Parquet table
every other reader sees (Spark's own read, the comparison's baseline).

What ``hsh register`` does (``plan_registration`` + ``apply_registration``), then, for the plain copy, the handler's
``hsh.*`` table parameters removed: the session extension recognizes a table by them, so without them it leaves
the table to Spark's own Hive read.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any


def register(client: Any, name: str, folder: Path | str, *, plain: bool = False,
             table_properties: dict[str, str] | None = None) -> float:
    """Register ``folder`` as ``name`` (a previous run's table of that name dropped first: metadata only, perhaps of
    another scale) with ``table_properties`` (``hsh register --property``); with ``plain``, as a plain Hive table
    the handler's extension leaves to Spark. Seconds the registration took."""
    from metastore.names import parse_table_name
    from storage_handler.registration.register import apply_registration, plan_registration

    db, table = name.split(".")
    if client.database_exists(db) and client.table_exists(db, table):
        client.drop_table(db, table)
    start = time.perf_counter()
    apply_registration(client, plan_registration(client, parse_table_name(name), str(folder),
                                                     table_properties=dict(table_properties or {})))
    seconds = time.perf_counter() - start
    if plain:
        t = client.get_table(db, table)
        for key in [k for k in t.parameters if k.startswith("hsh.")]:
            del t.parameters[key]
        client.alter_table(t)
    return seconds


def register_pair(uri: str, handled: str, plain: str, folder: Path | str) -> None:
    """``folder`` registered as ``handled`` (through the handler) and as ``plain`` (a plain Hive table)."""
    from metastore.client import MetastoreClient

    with MetastoreClient(uri) as client:
        register(client, handled, folder)
        register(client, plain, folder, plain=True)
