"""What ``hsh describe`` shows about a registered table."""

from __future__ import annotations

from typing import Any

from metastore.client import MetastoreClient
from metastore.names import TableName
from storage_handler.catalog import unregistered_folders
from storage_handler.registration.table_spec import (
    PARAM_PREFIX,
    legacy_parameters,
    table_columns,
    table_partition_keys,
)
from storage_handler.stats.columns import STATS_ERROR
from storage_handler.storage import s3a_settings, storage_for


def describe_table(client: MetastoreClient, name: TableName) -> dict[str, Any]:
    table = client.get_table(name.database, name.table)
    keys = table_partition_keys(table)
    names = client.get_partition_names(name.database, name.table) if keys else []
    partitions = len(names)
    params = table.parameters or {}
    conf = s3a_settings(params)
    storage = storage_for(table.sd.location, conf)
    return {
        "table": str(name),
        "type": table.tableType,
        "owner": table.owner,
        "location": table.sd.location,
        "storage": storage.describe(),  # endpoint, region, addressing: never a credential
        "input_format": table.sd.inputFormat,
        "serde": table.sd.serdeInfo.serializationLib if table.sd.serdeInfo else None,
        "columns": [{"name": n, "type": t} for n, t in table_columns(table)],
        "partition_keys": [{"name": n, "type": t} for n, t in keys],
        "partitions": partitions,
        # folders under the table that hold files but are no registered partition: not read until `hsh sync`
        "unregistered_partition_folders": len(unregistered_folders(table.sd.location, [k for k, _ in keys], names,
                                                                   storage=storage)),
        "handler": params.get(f"{PARAM_PREFIX}storage_handler"),
        **_index_info(table.sd.location, [k for k, _ in keys], conf),
        "handler_parameters": {k: v for k, v in sorted(params.items()) if k.startswith(PARAM_PREFIX)},
        # written by versions before 0.2; they break Spark sessions without this package: `hsh sync` removes them
        "legacy_parameters_to_remove": legacy_parameters(params),
    }


def _index_info(location: str, partition_keys: list[str], conf: dict[str, str]) -> dict[str, Any]:
    """Index version and coverage, read from storage (the truth), not from the metastore's copy of the pointer."""
    from storage_handler.errors import StorageHandlerError
    from storage_handler.stats import list_data_files, load
    from storage_handler.stats.membership.columns import membership_sizes

    try:
        files = list_data_files(location, partition_keys, storage_for(location, conf))
        snapshot = load(location, conf=conf)
    except StorageHandlerError as e:
        return {"index_error": str(e)}
    if snapshot is None:
        return {"files": len(files), "index_version": None, "index_files": 0}
    errors = snapshot.table.column(STATS_ERROR).null_count
    entry = storage_for(location, conf).stat(snapshot.path)
    index_bytes = entry.size if entry is not None else 0
    return {
        "files": len(files),
        "bytes": sum(f.size for f in files),
        "index_version": snapshot.version,
        "index_files": snapshot.table.num_rows,
        "index_files_without_stats": snapshot.table.num_rows - errors,
        # what a query reads of the index: the snapshot, of which filters only for the columns its leaves name
        "index_bytes": index_bytes,
        "index_bytes_per_file": round(index_bytes / snapshot.table.num_rows, 1) if snapshot.table.num_rows else 0,
        "membership": membership_sizes(snapshot.table),
    }
