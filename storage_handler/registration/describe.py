"""What ``hsh describe`` shows about a registered table, and the summary of its unreadable files that every
command which indexes prints (the rule: :mod:`storage_handler.registration.dataset`)."""

from __future__ import annotations

import time
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from metastore.client import MetastoreClient
from metastore.names import TableName
from storage_handler.catalog import unregistered_folders
from storage_handler.registration import background
from storage_handler.registration.table_spec import (
    PARAM_PREFIX,
    legacy_parameters,
    table_columns,
    table_partition_keys,
)
from storage_handler.stats.columns import MODIFICATION_TIME, PATH, STATS_ERROR
from storage_handler.storage import s3a_settings, storage_for


def describe_table(client: MetastoreClient, name: TableName) -> dict[str, Any]:
    table = client.get_table(name.database, name.table)
    keys = table_partition_keys(table)
    names = client.get_partition_names(name.database, name.table) if keys else []
    partitions = len(names)
    params = table.parameters or {}
    conf = s3a_settings(params)
    storage = storage_for(table.sd.location, conf)
    index = _index_info(table.sd.location, [k for k, _ in keys], conf)
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
        **index,
        "statistics": published_statistics(params, index.get("index_version")),
        # the partitions' statistics `register` handed to a background publish on this machine, if it did
        "statistics_background": background.status(name),
        "handler_parameters": {k: v for k, v in sorted(params.items()) if k.startswith(PARAM_PREFIX)},
        # written by versions before 0.2; they break Spark sessions without this package: `hsh sync` removes them
        "legacy_parameters_to_remove": legacy_parameters(params),
    }


def published_statistics(params: dict[str, str], index_version: int | None) -> dict[str, Any]:
    """The table's statistics as the metastore holds them, and what ``hsh`` published (when, from which index
    version, which columns; whether they are still current). ``spark_statistics``: what Spark's own ``ANALYZE``
    wrote, which Spark prefers to the metastore's numbers."""
    from storage_handler.registration.stats_ownership import (
        ACCURATE,
        BASIC_KEYS,
        MARKER,
        SPARK_STATS_PREFIX,
        Marker,
        basic_digest,
        parse_accurate,
    )

    out: dict[str, Any] = {k: params[k] for k in BASIC_KEYS if k in params}
    basic, columns = parse_accurate(params.get(ACCURATE))
    out["accurate"] = {"basic": basic, "columns": sorted(columns)}
    spark = {k: v for k, v in sorted(params.items()) if k.startswith(SPARK_STATS_PREFIX) and ".colStats." not in k}
    if spark:
        out["spark_statistics"] = spark
    marker = Marker.parse(params.get(MARKER))
    if marker is None:
        return out
    why = None
    if marker.basic and basic_digest(params) != marker.basic:
        why = "the numbers were changed after hsh wrote them"
    elif index_version is not None and marker.index_version != index_version:
        why = f"the index is at version {index_version}; `hsh index refresh` publishes it"
    out.update(published_at=marker.at, index_version=marker.index_version, columns=list(marker.names or []),
               partitions=marker.parts, current=why is None, why_stale=why)
    return out


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
        "unindexed_files": unindexed_files(files, snapshot.table),
        "unreadable_files": unreadable_files(snapshot.table),
        # what a query reads of the index: the snapshot, of which filters only for the columns its leaves name
        "index_bytes": index_bytes,
        "index_bytes_per_file": round(index_bytes / snapshot.table.num_rows, 1) if snapshot.table.num_rows else 0,
        "membership": membership_sizes(snapshot.table),
    }


def unindexed_files(files: Any, index: pa.Table, *, limit: int = 20) -> dict[str, Any]:
    """The table's visible files the index has no trusted row for (new, or changed since indexed): their count,
    bytes, a sample and the age of the oldest -- how far behind the index is. They are read by every query."""
    import numpy as np

    from storage_handler.input_format import attach_index
    from storage_handler.stats.columns import SIZE, VERSION_TAG

    listing = pa.table({PATH: files.paths, SIZE: pa.array(files.sizes, pa.int64()),
                        MODIFICATION_TIME: pa.array(files.mtimes, pa.int64()), VERSION_TAG: files.versions})
    _, fresh = attach_index(listing, index)
    lagging = np.flatnonzero(~fresh.to_numpy(zero_copy_only=False))
    if not len(lagging):
        return {"count": 0, "bytes": 0, "oldest_age_seconds": None, "files": []}
    mtimes = np.asarray(files.mtimes)[lagging]
    oldest = int(mtimes.min())
    order = lagging[np.argsort(mtimes, kind="stable")][:limit]
    return {"count": int(len(lagging)), "bytes": int(np.asarray(files.sizes)[lagging].sum()),
            "oldest_age_seconds": round(max(0.0, time.time() - oldest / 1000), 1),
            "files": [files.paths[int(i)].as_py() for i in order]}


#: how many unreadable files ``hsh describe --json`` lists one by one (the count is always exact)
UNREADABLE_LISTED = 1000


def unreadable_files(index: pa.Table | None, *, limit: int = UNREADABLE_LISTED,
                     now: float | None = None) -> dict[str, Any]:
    """The files ``index`` records as unreadable (a ``stats_error``): how many, the oldest (by modification time)
    and how old it is, and the first ``limit`` in path order with why. Vectorized: a Python object per unreadable
    file listed, none per indexed file."""
    if index is None or STATS_ERROR not in index.column_names:
        return {"count": 0, "files": []}
    failed = index.filter(pc.is_valid(index.column(STATS_ERROR)))
    if failed.num_rows == 0:
        return {"count": 0, "files": []}
    mtimes = failed.column(MODIFICATION_TIME)
    oldest = pc.index(mtimes, pc.min(mtimes)).as_py()
    oldest_ms = mtimes[oldest].as_py()
    age = max(0.0, (time.time() if now is None else now) - oldest_ms / 1000)
    shown = failed.slice(0, limit)
    return {
        "count": failed.num_rows,
        "oldest": failed.column(PATH)[oldest].as_py(),
        "oldest_modified": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(oldest_ms / 1000)),
        "oldest_age": _age(age),
        "oldest_age_seconds": round(age),
        "files": [{"path": p, "error": e} for p, e in zip(shown.column(PATH).to_pylist(),
                                                             shown.column(STATS_ERROR).to_pylist(), strict=True)],
        "files_listed": min(failed.num_rows, limit),
    }


def _age(seconds: float) -> str:
    for unit, size in (("days", 86400), ("hours", 3600), ("minutes", 60)):
        if seconds >= size:
            return f"{seconds / size:.1f} {unit}"
    return f"{seconds:.0f} seconds"
