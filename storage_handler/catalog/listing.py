"""List the files of the partitions a query kept, concurrently, and only those.

Each partition's files are the visible files directly in its location (Hive reads no subfolders of a partition);
the folders are listed one after another on a local disk, or by a bounded pool of ``threads`` where a listing
waits on the network (see :data:`DEFAULT_THREADS`).
Paths in the result are relative to the table location when the partition lies under it (the index's keys, as
before), and the partition's own absolute location otherwise, so a partition registered in another folder is
neither confused with one under the table nor able to pass for it. A registered partition whose folder is
missing reads as empty, with a warning, as in Hive.
"""

from __future__ import annotations

import logging
import os
import posixpath
import stat
from collections.abc import Collection, Sequence
from concurrent.futures import ThreadPoolExecutor

from storage_handler.catalog.partitions import Partition
from storage_handler.stats.listing import (
    DataFile,
    is_hidden,
    local_path,
    partition_path,
    unescape_partition_value,
    unescape_path_name,
)

log = logging.getLogger(__name__)
# Local disk: serial. A stat is a few microseconds from the page cache and the per-file Python work holds the
# GIL, so threads only contend (measured, 20,000 files in 400 folders: 77 ms serial, 157 ms with 2 threads,
# 164 ms with 8). The bounded pool is for storage where a listing is a remote request.
DEFAULT_THREADS = 1


def list_partition_files(table_location: str, keys: Sequence[str], partitions: Sequence[Partition], *,
                         threads: int = DEFAULT_THREADS, table: str = "?") -> list[DataFile]:
    """The data files of ``partitions``, sorted by path, their partition values the metastore's."""
    root = _root(table_location)
    lowered = [k.lower() for k in keys]

    def one(partition: Partition) -> list[DataFile]:
        folder = local_path(partition.location)
        values = dict(zip(lowered, partition.values, strict=True))
        rel_root = _relative(folder, root)
        try:
            entries = list(os.scandir(folder))
        except FileNotFoundError:
            log.warning("table %s: partition %s is registered at %s, which does not exist: read as empty",
                        table, partition.name, partition.location)
            return []
        except NotADirectoryError:
            log.warning("table %s: partition %s is registered at %s, which is a file: read as empty",
                        table, partition.name, partition.location)
            return []
        out = []
        prefix = f"{rel_root}/" if rel_root else ""
        for entry in entries:
            if is_hidden(entry.name) or entry.is_dir(follow_symlinks=False):
                continue
            try:
                st = entry.stat(follow_symlinks=True)
            except FileNotFoundError:
                continue  # deleted while listing: a file gone from storage is never returned
            if stat.S_ISREG(st.st_mode):
                out.append(DataFile(prefix + entry.name, st.st_size, st.st_mtime_ns // 1_000_000, values,
                                    st.st_ctime_ns))
        return out

    if len(partitions) <= 1 or threads <= 1:
        chunks = [one(p) for p in partitions]
    else:
        with ThreadPoolExecutor(max_workers=min(threads, len(partitions)), thread_name_prefix="hsh-list") as pool:
            chunks = list(pool.map(one, partitions))
    files = [f for chunk in chunks for f in chunk]
    files.sort(key=lambda f: f.path)
    return files


def unregistered_folders(table_location: str, keys: Sequence[str], registered: Collection[str]) -> list[str]:
    """Partition folders under the table folder (``k1=v1/.../kn=vn`` with the table's keys) that hold files but
    are no registered partition: not part of the table until ``hsh sync`` registers them. A hint for the CLI;
    it walks only the partition levels of the table folder."""
    root = local_path(table_location)
    lowered = [k.lower() for k in keys]
    wanted = {normalize_partition_name(n) for n in registered}
    found: list[str] = []

    def walk(folder: str, depth: int, parts: tuple[str, ...]) -> None:
        try:
            entries = list(os.scandir(folder))
        except (FileNotFoundError, NotADirectoryError):
            return
        if depth == len(lowered):
            name = "/".join(parts)
            if name not in wanted and any(not is_hidden(e.name) and e.is_file() for e in entries):
                found.append(name)
            return
        for e in entries:
            key, sep, _ = e.name.partition("=")
            if sep and not is_hidden(e.name) and e.is_dir(follow_symlinks=False) and key.lower() == lowered[depth]:
                walk(e.path, depth + 1, (*parts, normalize_partition_name(e.name)))

    if lowered:
        walk(root, 0, ())
    return sorted(found)


def normalize_partition_name(name: str) -> str:
    """A partition name with its keys lower-cased and values re-escaped as Hive writes them (so folder names and
    metastore names compare equal whatever escaping the writer used)."""
    pairs = [part.partition("=") for part in name.split("/")]
    return partition_path([(unescape_path_name(key), unescape_partition_value(value)) for key, _, value in pairs])


def index_prefixes(table_location: str, partitions: Sequence[Partition]) -> list[str] | None:
    """The path prefixes (ending in ``/``) under which the index names the files of ``partitions``; None when
    some partition is the table folder itself (its files have no prefix to select them by)."""
    root = _root(table_location)
    out = []
    for p in partitions:
        rel = _relative(local_path(p.location), root)
        if not rel:
            return None
        out.append(rel + "/")
    return sorted(set(out))


def is_under(table_location: str, location: str) -> bool:
    """Whether ``location`` is the table folder or inside it (its files are then indexed by relative paths)."""
    return not _relative(local_path(location), _root(table_location)).startswith("/")


def _root(table_location: str) -> str:
    return local_path(table_location).rstrip("/") or "/"


def _relative(folder: str, root: str) -> str:
    """``folder`` relative to the table ``root`` when it lies under it ('' for the root itself), else absolute."""
    folder = os.path.normpath(folder)
    if folder == root:
        return ""
    if folder.startswith(root.rstrip("/") + "/"):
        return posixpath.relpath(folder, root)
    return folder
