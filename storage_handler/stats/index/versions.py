"""The index's commit protocol: version-numbered immutable snapshots whose creation is the commit point.

Layout (hidden from Hive and Spark readers by the leading ``_``)::

    <table location>/_hsh_index/snapshots/v00000007.parquet    version 7; created once, never rewritten
    <table location>/_hsh_index/snapshots/v00000003.parquet    a collected version: an empty tombstone

Written against :class:`~storage_handler.storage.Storage` only, so it is the same protocol on every backend:

* **Commit** of version ``n`` = ``storage.create(v{n}.parquet)``: an atomic create-if-absent (a hard link of a
  fsynced temporary file on a local disk, ``PUT`` with ``If-None-Match: *`` on S3). Neither rename nor lock. A
  writer first lists the versions and refuses (conflict) unless the newest is still the one it started from;
  then two writers of the same ``n`` cannot both create it, and the loser gets
  :class:`~storage_handler.stats.index.store.IndexConflictError` and re-applies its change on the winner's version.
* **Current** version = the highest-numbered non-empty snapshot of one listing (one LIST on S3).
* **Crash safety**: the snapshot is complete before it exists under its name (a killed local writer leaves a
  ``.tmp-*`` file, a killed S3 PUT leaves nothing), so the previous version stays current and readable.
* **Collection** after each commit: the current version and the ``keep - 1`` before it stay; older snapshots are
  replaced by empty *tombstones*, never deleted at once, so a writer that stalled for a long time between its
  check and its create cannot re-create an old number and believe it committed (its create fails on the
  tombstone). Tombstones older than :data:`TOMBSTONE_SECONDS` and stale temporary files are deleted.
* **Legacy indexes** (before 0.3: a ``CURRENT`` pointer, ``v{n}-{hex}.parquet`` snapshots, a ``LOCK`` file) are
  read as they are; the first commit continues their numbering and its collection removes the old files.
"""

from __future__ import annotations

import json
import logging
import re
import time
from dataclasses import dataclass

from storage_handler.errors import StatsIndexError
from storage_handler.storage import FileEntry, Location, Storage

log = logging.getLogger(__name__)
INDEX_DIR = "_hsh_index"
SNAPSHOTS = "snapshots"
LEGACY_POINTER = "CURRENT"
LEGACY_LOCK = "LOCK"
DEFAULT_KEEP = 5
TOMBSTONE_SECONDS = 24 * 3600.0
STALE_TEMP_SECONDS = 3600.0
_NAME = re.compile(r"v(\d{8,})\.parquet")
_LEGACY_NAME = re.compile(r"v(\d{8,})-([0-9a-f]{32})\.parquet")


@dataclass(frozen=True, slots=True)
class Version:
    """One committed version: its number, the snapshot's location and its listing entry (size, ETag...)."""

    number: int
    uri: str
    entry: FileEntry | None


def index_location(table_location: Location) -> Location:
    return table_location.join(INDEX_DIR)


def snapshot_name(number: int) -> str:
    return f"v{number:08d}.parquet"


def current(storage: Storage, table: Location) -> Version | None:
    """The committed version, or None when the table has no index (one listing; a legacy pointer read)."""
    folder = index_location(table).join(SNAPSHOTS)
    listing = storage.list_dir(folder.uri)
    best: FileEntry | None = None
    best_number = 0
    for entry in listing.files if listing is not None else ():
        match = _NAME.fullmatch(entry.name)
        if match is not None and entry.size > 0 and int(match.group(1)) > best_number:
            best, best_number = entry, int(match.group(1))
    if best is not None:
        return Version(best_number, folder.join(best.name).uri, best)
    return _legacy_current(storage, table)


def highest_number(storage: Storage, table: Location) -> int:
    """The highest version number taken, tombstones included (0: none)."""
    folder = index_location(table).join(SNAPSHOTS)
    listing = storage.list_dir(folder.uri)
    numbers = [int(m.group(1)) for e in (listing.files if listing else ())
               if (m := _NAME.fullmatch(e.name) or _LEGACY_NAME.fullmatch(e.name))]
    return max(numbers, default=0)


def create(storage: Storage, table: Location, number: int, data: bytes) -> bool:
    """The commit point: create version ``number``; False when that number is taken."""
    return storage.create(index_location(table).join(SNAPSHOTS).join(snapshot_name(number)).uri, data)


def collect(storage: Storage, table: Location, number: int, keep: int = DEFAULT_KEEP) -> list[str]:
    """Tombstone versions older than the ``keep`` newest (up to ``number``), delete old tombstones, stale
    temporary files and legacy files. Returns the names changed. Never touches a version above ``number``."""
    index = index_location(table)
    folder = index.join(SNAPSHOTS)
    listing = storage.list_dir(folder.uri)
    if listing is None:
        return []
    now_ms = time.time() * 1000
    tombstone: list[str] = []
    doomed: list[str] = []
    legacy_seen = False
    for entry in listing.files:
        match = _NAME.fullmatch(entry.name)
        if match is not None:
            n = int(match.group(1))
            if n > number - max(keep, 1) or n > number:
                continue
            if entry.size > 0:
                tombstone.append(entry.name)
            elif now_ms - entry.mtime_ms > TOMBSTONE_SECONDS * 1000:
                doomed.append(entry.name)
        elif _LEGACY_NAME.fullmatch(entry.name):
            doomed.append(entry.name)  # a legacy version: superseded by this commit's numbering
            legacy_seen = True
        elif entry.name.startswith(".tmp-") and now_ms - entry.mtime_ms > STALE_TEMP_SECONDS * 1000:
            doomed.append(entry.name)
    for name in tombstone:
        _write_tombstone(storage, folder.join(name).uri)
    if doomed:
        storage.delete([folder.join(n).uri for n in doomed])
    if legacy_seen:  # the pointer and lock of a legacy index (one request saved on every other commit)
        storage.delete([index.join(n).uri for n in (LEGACY_POINTER, LEGACY_LOCK)])
    return sorted(tombstone + doomed)


def _write_tombstone(storage: Storage, uri: str) -> None:
    """Replace a collected snapshot by an empty file in one atomic step (see the module docstring): the number
    stays taken; a reader still on the old snapshot keeps it (local) or is told it changed (S3) and reloads."""
    storage.put(uri, b"")


def _legacy_current(storage: Storage, table: Location) -> Version | None:
    index = index_location(table)
    pointer = index.join(LEGACY_POINTER)
    raw = storage.read_bytes(pointer.uri)
    if raw is None:
        return None
    try:
        data = json.loads(raw[:65536])
        number, rel = data["version"], data["snapshot"]
        if data.get("format") != 1 or not isinstance(number, int) or isinstance(number, bool) or number < 1:
            raise ValueError("unsupported format or version")
        match = re.fullmatch(rf"{SNAPSHOTS}/(v\d{{8,}}-[0-9a-f]{{32}}\.parquet)", str(rel))
        if match is None or int(match.group(1)[1:].split("-")[0]) != number:
            raise ValueError(f"snapshot name {rel!r} does not match version {number}")
    except (ValueError, KeyError, TypeError) as exc:
        raise StatsIndexError(
            f"stats index pointer {pointer.uri} is corrupt ({exc}); delete {index.uri} and rebuild the index"
        ) from exc
    return Version(number, index.join(str(rel)).uri, None)
