"""How a follower tells that a partition's folder changed without listing it, and where it keeps what it saw.

Listing every registered folder of every table every two seconds would cost a table of 2,000 partitions 2,000
directory reads (or 2,000 S3 requests) per poll. A **stamp** is a cheaper stand-in for a folder's listing: equal
stamps mean "nothing was added, removed or renamed here since the folder was last listed".

**Local disk** (and anything mounted into it): a folder's stamp is its ``st_ino:st_mtime_ns:st_ctime_ns``, one
``stat`` per partition per poll (about 2 µs each: 4 ms per poll at 2,000 partitions). The kernel moves the
folder's mtime when an entry is added, removed or renamed in it: a new file, a deleted one, and the rename that
Spark, Hive and most loaders use to put a finished file in place. The inode number catches a folder deleted and
made again. What a stamp does **not** see is a file rewritten in place (opened and truncated: ``cp`` onto an
existing name, a writer still appending): the folder's entries are the same. Two rules cover that:

* **racy** (git's "racy clean" problem): a folder whose own mtime, or whose newest listed file's mtime, is within
  ``RACY_MS`` (2 s) of the moment it was stamped is listed again at the next poll even when its stamp is unchanged.
  That catches a change made in the same clock tick as the listing (file systems with coarse timestamps) and a
  file that was still being written when it was listed (its mtime keeps moving while it grows).
* **sweep**: every ``--sweep-seconds`` the follower lists every registered folder of the table, stamps or not
  (a rewrite in place that stopped more than 2 s before a poll waits for it; until then the file's size, mtime or
  change time no longer match its index row, so every query keeps it: stale, never wrong).

**Object stores** have no folder times. There the stamp of a folder is a digest of its visible files' (name, size,
mtime, ETag), taken from **one paginated LIST of the whole table prefix** (1,000 keys a request, so
``ceil(objects / 1000)`` requests, e.g. 40 for 2,000 partitions of 20 files) rather than one LIST per partition
(2,000 requests). Since the ETag changes with the content, a digest sees rewrites too. Partitions registered
outside the table prefix cost one LIST each. The follower does this listing every ``--listing-seconds`` (default
10 s), not every poll: see :mod:`.follower` for what that costs.

**The position** (:class:`Position`) is what the follower last made the index cover for one table: per registered
partition its location and the stamp taken just *before* the listing that the committed index reflects. It is
written atomically (a temporary file, fsync, ``os.replace``) to ``$HSH_HOME/follow/<db>.<table>.json`` only
after that commit succeeded, so a follower killed at any point restarts from a position the index already covers
and, at worst, lists (and finds nothing new in) a few folders again. One follower per state folder: the lock
``follow.lock`` (``flock``, released by the kernel however the process ends) keeps a second one out.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import json
import logging
import os
import stat
import uuid
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from storage_handler.errors import ConfigurationError
from storage_handler.hive_paths import is_hidden
from storage_handler.stats.files.file_list import FileList
from storage_handler.stats.index.racy import RACY_MS  # one clock-tick window for folders and index rows
from storage_handler.storage import LOCAL, FileEntry, parse_location, storage_for

log = logging.getLogger(__name__)

FORMAT = 1  # of the position file; another number is read as no position (one full listing)
UNKNOWN = ""  # a stamp not taken (an object store folder between its listings): differs from every real one
UNPUBLISHED = -1  # Position.published while an update may have committed a version whose statistics are owed


class FollowerRunningError(ConfigurationError):
    """Another follower holds the state folder's lock."""


@dataclass(frozen=True, slots=True)
class Stamp:
    """A folder's stamp: ``value`` is only compared for equality; ``changed_ms`` is the folder's own mtime on a
    local disk (what the racy rule looks at), None elsewhere."""

    value: str
    changed_ms: int | None = None


MISSING = Stamp("missing")  # a registered partition whose folder does not exist (yet): it reads as empty


@dataclass(frozen=True, slots=True)
class FolderSeen:
    """What the follower saw of one scope (a partition's folder, or an unpartitioned table's folder) when it last
    listed it: the location, the stamp taken just before that listing, when (``seen_ms``, wall clock), and the
    newest file's mtime in the listing."""

    location: str
    stamp: str
    changed_ms: int | None
    seen_ms: int
    newest_ms: int | None

    def racy(self, slack_ms: int = RACY_MS) -> bool:
        """Whether the listing may have missed a change its stamp cannot show (see the module docstring). Only a
        local folder's can: an object store's stamp is a digest of the listing itself (sizes, ETags), and an
        object appears whole or not at all."""
        if self.changed_ms is None:
            return False
        limit = self.seen_ms - slack_ms
        return self.changed_ms >= limit or (self.newest_ms is not None and self.newest_ms >= limit)

    def as_json(self) -> dict[str, Any]:
        return {"location": self.location, "stamp": self.stamp, "changed_ms": self.changed_ms,
                "seen_ms": self.seen_ms, "newest_ms": self.newest_ms}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> FolderSeen:
        return cls(str(data["location"]), str(data["stamp"]), _int_or_none(data.get("changed_ms")),
                   int(data["seen_ms"]), _int_or_none(data.get("newest_ms")))


@dataclass(frozen=True, slots=True)
class Position:
    """What the follower has made one table's index cover (see the module docstring). ``folders`` is keyed by
    partition name (``""`` for an unpartitioned table); ``swept_ms`` is when every folder was last listed;
    ``index_version`` the index version that position was reached at; ``published`` the version whose statistics
    are known to be published, or :data:`UNPUBLISHED` from just before an update that may commit until its
    statistics are published (so a follower killed in between publishes them when it restarts)."""

    table: str
    location: str
    folders: Mapping[str, FolderSeen] = field(default_factory=dict)
    swept_ms: int = 0
    index_version: int | None = None
    published: int | None = None

    def as_json(self) -> dict[str, Any]:
        return {"format": FORMAT, "table": self.table, "location": self.location, "swept_ms": self.swept_ms,
                "index_version": self.index_version, "published": self.published,
                "folders": {name: seen.as_json() for name, seen in sorted(self.folders.items())}}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Position:
        if data.get("format") != FORMAT:
            raise ValueError(f"position format {data.get('format')!r}, expected {FORMAT}")
        return cls(str(data["table"]), str(data["location"]),
                   {str(k): FolderSeen.from_json(v) for k, v in dict(data["folders"]).items()},
                   int(data.get("swept_ms") or 0), _int_or_none(data.get("index_version")),
                   _int_or_none(data.get("published")))


def must_list(seen: FolderSeen | None, location: str, stamp: Stamp | None, racy_ms: int = RACY_MS) -> bool:
    """Whether a folder must be listed this poll: never listed, moved, its stamp changed, or racy. A folder
    without a stamp this poll (an object store between its listings) is not looked at."""
    if seen is None or seen.location != location:
        return True
    if stamp is None:
        return False
    return stamp.value != seen.stamp or seen.racy(racy_ms)


def position_file(folder: Path, table: str) -> Path:
    return folder / f"{table}.json"


def load_position(folder: Path, table: str) -> Position | None:
    """The saved position of ``table`` (``db.table``); None when there is none or it cannot be read (then the
    follower lists the whole table once: a position only saves work, it never decides what is correct)."""
    path = position_file(folder, table)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        position = Position.from_json(data)
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as e:
        log.warning("follow %s: ignoring the position in %s (%s): the table is listed once in full", table, path, e)
        return None
    return position if position.table == table else None


def save_position(folder: Path, position: Position) -> None:
    """Write ``position`` atomically: a reader (or a restarted follower) sees the old file or the new one."""
    folder.mkdir(parents=True, exist_ok=True)
    target = position_file(folder, position.table)
    temp = folder / f".{position.table}.{uuid.uuid4().hex}.tmp"
    try:
        with open(temp, "w", encoding="utf-8") as fh:
            json.dump(position.as_json(), fh, separators=(",", ":"))
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(temp, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)


def forget_position(folder: Path, table: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(position_file(folder, table))


def stamp_folders(table_location: str, locations: Mapping[str, str], conf: Mapping[str, str] | None = None, *,
                  remote: bool = True) -> dict[str, Stamp]:
    """The stamps of ``locations`` (name -> folder): every local folder by one ``stat``; with ``remote``, the
    object-store folders by one listing of the table prefix (plus one per folder outside it). Without ``remote``,
    object-store folders get no stamp (absent from the result): they were not looked at."""
    stamps: dict[str, Stamp] = {}
    remote_folders: dict[str, str] = {}
    for name, location in locations.items():
        path = _local_folder(location)
        if path is not None:
            stamps[name] = _stat_stamp(path)
        else:
            remote_folders[name] = location
    if remote and remote_folders:
        stamps.update(listed_stamps(table_location, remote_folders, conf))
    return stamps


def local_stamp(location: str) -> Stamp:
    """``ino:mtime_ns:ctime_ns`` of a local folder; :data:`MISSING` when there is none."""
    return _stat_stamp(parse_location(location).key)


@functools.lru_cache(maxsize=1 << 16)
def _local_folder(location: str) -> str | None:
    """The local path of a location, None for other stores; remembered: a poll looks at every registered folder,
    and parsing a ``file:`` URI costs ~15 µs, more than the ``stat`` itself."""
    parsed = parse_location(location)
    return parsed.key if parsed.kind == LOCAL else None


def _stat_stamp(path: str) -> Stamp:
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return MISSING
    if not stat.S_ISDIR(st.st_mode):
        return MISSING
    return Stamp(f"{st.st_ino}:{st.st_mtime_ns}:{st.st_ctime_ns}", st.st_mtime_ns // 1_000_000)


def listed_stamps(table_location: str, locations: Mapping[str, str],
                  conf: Mapping[str, str] | None = None) -> dict[str, Stamp]:
    """Digests of the visible files directly in each folder of ``locations`` (name -> folder) on an object store:
    one paginated listing of the table prefix for the folders inside it, one LIST for each folder outside it."""
    root = parse_location(table_location)
    inside: dict[str, str] = {}
    outside: dict[str, str] = {}
    for name, location in locations.items():
        rel = parse_location(location).relative_to(root)
        if rel is None:
            outside[name] = location
        else:
            inside[name] = rel
    stamps: dict[str, Stamp] = {}
    if inside:
        by_folder: dict[str, list[FileEntry]] = {}
        for entry in storage_for(root.uri, conf).walk(root.uri, skip=is_hidden):
            folder, _, _ = entry.name.rpartition("/")
            by_folder.setdefault(folder, []).append(entry)
        for name, rel in inside.items():
            stamps[name] = _digest(by_folder.get(rel, ()), rel)
    for name, location in outside.items():
        listing = storage_for(location, conf).list_dir(location)
        stamps[name] = MISSING if listing is None else _digest([f for f in listing.files if not is_hidden(f.name)], "")
    return stamps


def folder_prefix(table_location: str, location: str) -> str:
    """The path prefix of a folder's files in the index and in listings: ``dt=1/`` under the table, the folder's
    own URI plus ``/`` elsewhere, ``""`` for the table folder itself."""
    folder = parse_location(location)
    rel = folder.relative_to(parse_location(table_location))
    if rel == "":
        return ""
    return f"{rel}/" if rel is not None else folder.uri.rstrip("/") + "/"


def newest_by_folder(files: FileList) -> dict[str, int]:
    """The newest mtime per folder prefix of the listed files (what the racy rule looks at)."""
    if not len(files):
        return {}
    folders = pc.replace_substring_regex(files.paths, pattern="[^/]*$", replacement="", max_replacements=1)
    grouped = pa.table({"folder": folders, "mtime": pa.array(files.mtimes, pa.int64())}).group_by("folder")
    newest = grouped.aggregate([("mtime", "max")])
    return dict(zip(newest.column("folder").to_pylist(), newest.column("mtime_max").to_pylist(), strict=True))


@contextmanager
def exclusive(state_dir: Path) -> Iterator[None]:
    """Hold ``state_dir``'s lock (``follow.lock``, ``flock``) while following: two followers of one state folder
    would both save positions. Released by the kernel when the process dies, however it dies."""
    state_dir.mkdir(parents=True, exist_ok=True)
    with open(state_dir / "follow.lock", "a+", encoding="utf-8") as fh:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            pid = fh.read().strip() or "?"
            raise FollowerRunningError(
                f"another hsh follow (pid {pid}) is already running with the state folder {state_dir}; stop it "
                "first, or give this one its own HSH_HOME") from None
        fh.seek(0)
        fh.truncate()
        fh.write(f"{os.getpid()}\n")
        fh.flush()
        yield


def _digest(entries: Iterable[FileEntry], folder: str) -> Stamp:
    """A digest of (name, size, mtime, version tag) of the files, whatever order they were listed in."""
    skip = len(folder) + 1 if folder else 0
    h = hashlib.blake2b(digest_size=16)
    for name, size, mtime_ms, version in sorted((e.name[skip:], e.size, e.mtime_ms, e.version or "")
                                                for e in entries):
        h.update(f"{name}\0{size}\0{mtime_ms}\0{version}\n".encode("utf-8", "surrogateescape"))
    return Stamp(h.hexdigest())


def _int_or_none(value: Any) -> int | None:
    return None if value is None else int(value)
