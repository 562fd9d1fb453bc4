"""List the files of the partitions a query kept, and only those.

Each partition's files are the visible files directly in its location (Hive reads no subfolders of a partition):
one ``list_dir`` per partition (on S3 one paginated LIST), serially on a local disk, by a bounded pool of
``threads`` where a listing waits on the network (see :data:`DEFAULT_THREADS`).
Paths in the result are relative to the table location when the partition lies under it (the index's keys), and
the partition's own absolute location otherwise (a local path or a URI), so a partition registered in another
folder or bucket is neither confused with one under the table nor able to pass for it. A registered partition
whose folder is missing reads as empty, with a warning, as in Hive.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Sequence
from concurrent.futures import ThreadPoolExecutor

from storage_handler.catalog.partitions import Partition
from storage_handler.errors import ConfigurationError, StorageError
from storage_handler.stats.listing import (
    DataFile,
    is_hidden,
    partition_path,
    unescape_partition_value,
    unescape_path_name,
)
from storage_handler.storage import LOCAL, Location, Storage, parse_location, storage_for

log = logging.getLogger(__name__)
# Local disk: serial (see storage_handler.storage.local). Remote stores: a bounded pool, each listing a request.
DEFAULT_THREADS = 1
REMOTE_THREADS = 16


def list_partition_files(table_location: str, keys: Sequence[str], partitions: Sequence[Partition], *,
                         threads: int | None = None, table: str = "?",
                         storage: Storage | None = None) -> list[DataFile]:
    """The data files of ``partitions``, sorted by path, their partition values the metastore's."""
    root = parse_location(table_location)
    lowered = [k.lower() for k in keys]

    def one(partition: Partition) -> list[DataFile]:
        folder = _partition_location(partition, table)
        store = storage if storage is not None and _same_store(folder, root) else storage_for(folder.uri)
        values = dict(zip(lowered, partition.values, strict=True))
        listing = store.list_dir(folder.uri)
        if listing is None:
            log.warning("table %s: partition %s is registered at %s, which does not exist or holds nothing: "
                        "read as empty", table, partition.name, partition.location)
            return []
        rel = folder.relative_to(root)
        prefix = (f"{rel}/" if rel else "") if rel is not None else folder.uri.rstrip("/") + "/"
        return [DataFile(prefix + f.name, f.size, f.mtime_ms, values, f.version)
                for f in listing.files if not is_hidden(f.name)]

    if threads is None:
        threads = DEFAULT_THREADS if root.kind == LOCAL else REMOTE_THREADS
    if len(partitions) <= 1 or threads <= 1:
        chunks = [one(p) for p in partitions]
    else:
        with ThreadPoolExecutor(max_workers=min(threads, len(partitions)), thread_name_prefix="hsh-list") as pool:
            chunks = list(pool.map(one, partitions))
    files = [f for chunk in chunks for f in chunk]
    files.sort(key=lambda f: f.path)
    return files


def list_table_files(table_location: str, *, table: str = "?", storage: Storage | None = None) -> list[DataFile]:
    """The data files of an unpartitioned table: the visible files directly in its folder (as Hive reads it)."""
    root = parse_location(table_location)
    store = storage or storage_for(root.uri)
    listing = store.list_dir(root.uri)
    if listing is None:
        if root.kind == LOCAL and store.stat(root.uri) is not None:
            raise StorageError(f"table {table}: location {table_location!r} is a file, not a folder of data files")
        return []
    files = [DataFile(f.name, f.size, f.mtime_ms, {}, f.version) for f in listing.files if not is_hidden(f.name)]
    files.sort(key=lambda f: f.path)
    return files


def unregistered_folders(table_location: str, keys: Sequence[str], registered: Collection[str], *,
                         storage: Storage | None = None) -> list[str]:
    """Partition folders under the table folder (``k1=v1/.../kn=vn`` with the table's keys) that hold files but
    are no registered partition: not part of the table until ``hsh sync`` registers them. A hint for the CLI;
    it walks only the partition levels of a local folder; on S3 it is one paginated LIST of the table."""
    root = parse_location(table_location)
    store = storage or storage_for(root.uri)
    lowered = [k.lower() for k in keys]
    if not lowered:
        return []
    wanted = {normalize_partition_name(n) for n in registered}
    found: set[str] = set()
    for folder in store.folders_with_files(root.uri, len(lowered), skip=is_hidden):
        pairs = [p.partition("=") for p in folder.split("/")]
        if all(sep and unescape_path_name(key).lower() == want
               for (key, sep, _), want in zip(pairs, lowered, strict=True)):
            name = normalize_partition_name(folder)
            if name not in wanted:
                found.add(name)
    return sorted(found)


def normalize_partition_name(name: str) -> str:
    """A partition name with its keys lower-cased and values re-escaped as Hive writes them (so folder names and
    metastore names compare equal whatever escaping the writer used)."""
    pairs = [part.partition("=") for part in name.split("/")]
    return partition_path([(unescape_path_name(key), unescape_partition_value(value)) for key, _, value in pairs])


def index_prefixes(table_location: str, partitions: Sequence[Partition]) -> list[str] | None:
    """The path prefixes (ending in ``/``) under which the index names the files of ``partitions``; None when
    some partition is the table folder itself (its files have no prefix to select them by)."""
    root = parse_location(table_location)
    out = []
    for p in partitions:
        folder = parse_location(p.location)
        rel = folder.relative_to(root)
        if rel == "":
            return None
        out.append((rel if rel is not None else folder.uri.rstrip("/")) + "/")
    return sorted(set(out))


def is_under(table_location: str, location: str) -> bool:
    """Whether ``location`` is the table folder or inside it (its files are then indexed by relative paths)."""
    return parse_location(location).relative_to(parse_location(table_location)) is not None


def _partition_location(partition: Partition, table: str) -> Location:
    try:
        return parse_location(partition.location)
    except ConfigurationError as exc:
        raise ConfigurationError(f"table {table}: partition {partition.name}: {exc}") from exc


def _same_store(a: Location, b: Location) -> bool:
    return (a.kind, a.scheme, a.bucket) == (b.kind, b.scheme, b.bucket)
