"""Local folder listings the kernel keeps exact (inotify), so a folder nothing changed is not listed again.

Why: every query lists its table's folders (one ``stat`` per file: for 1,000 files about 1.5 ms of the kernel's
time, most of the prune service's answer to a point lookup), and on a driver's few cores that work competes with
the query it answers (issue 30, ``benchmarks/results/overhead.md``). A listing is only worth making again when
something in the folder changed, and the kernel says when: an inotify watch on a folder queues an event before
any call that creates, deletes, renames, writes, truncates or re-times a file in it returns. So a listing taken
after its folder's watch was added, and no event queued for that watch since, is exactly what a listing made now
would find -- not a cache with a staleness bound, but the same answer without the ``stat`` calls.

Where that does not hold, nothing is cached and every call lists:

* a folder on a network or cluster file system (NFS, SMB, FUSE, Ceph, ...): another machine's changes raise no
  event here. Only the local file systems named in :data:`LOCAL_FILE_SYSTEMS` are watched;
* a folder whose path resolves to another folder than the one watched (a parent renamed or re-linked): each use
  compares the folder's device and inode with those it was watched as;
* a listing during which any event arrived for one of its folders; a missing folder; a full inotify queue or no
  watches left (``fs.inotify.max_user_watches``): the entries concerned are dropped, the call lists;
* a process forked from the one that watched: it starts with no listings and watches of its own.

Listings in one process are made one at a time while watched (the prune service answers one request at a time
anyway): a watch is never dropped while a listing that relies on it is being made.

Two changes no watch on the folder sees, both foreign to how Hive, Spark and Parquet writers write files: a file
written through a memory mapping, and a file that is also linked from another folder and changed through that
other name. (A new link from another folder moves the file's change time, its version tag, without an event
here either; its contents are unchanged, so the index trusting its row stays right.) ``HSH_WATCH_LISTINGS=0``
turns the whole mechanism off (every call lists, as before).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import functools
import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from storage_handler.storage.native_listing import FolderFiles

log = logging.getLogger(__name__)

#: statfs ``f_type`` of the file systems whose every change goes through this kernel (linux/magic.h)
LOCAL_FILE_SYSTEMS = frozenset({
    0xEF53,  # ext2, ext3, ext4
    0x58465342,  # xfs
    0x9123683E,  # btrfs
    0x01021994,  # tmpfs
    0x794C7630,  # overlayfs (containers)
    0xF2F52010,  # f2fs
    0x2FC12FC1,  # zfs
})
#: at most this many files held over all listings (a listing of more is not kept)
MAX_FILES = 2_000_000
#: at most this many listings held (one per table, or per set of partitions a query kept)
MAX_LISTINGS = 64
#: changes to a folder's entries or to its files' contents and times; the folder itself moved or deleted
_CHANGES = (0x2 | 0x4 | 0x8 | 0x40 | 0x80 | 0x100 | 0x200 | 0x400 | 0x800)
_ONLY_DIRECTORIES = 0x01000000
_QUEUE_OVERFLOW = 0x4000

Identity = tuple[int, int]  # (st_dev, st_ino)


@dataclass(frozen=True, slots=True)
class _Listing:
    files: FolderFiles
    identities: tuple[Identity, ...]
    watches: tuple[int, ...]


class WatchedListings:
    """Listings of local folders (as ``list_folders`` makes them), each kept while its folders raise no event."""

    def __init__(self, max_files: int = MAX_FILES) -> None:
        from inotify_simple import INotify

        self._max_files = max_files
        self._notify = INotify(nonblocking=True)
        self._lock = threading.Lock()
        self._listings: OrderedDict[tuple[str, ...], _Listing] = OrderedDict()  # least recently used first
        self._events: dict[int, int] = {}  # watch -> events seen (a listing is kept only if none came meanwhile)
        self._local_devices: dict[int, bool] = {}

    def list_folders(self, folders: Sequence[str],
                     list_now: Callable[[Sequence[str]], FolderFiles | None]) -> FolderFiles | None:
        """``list_now(folders)``'s answer: the one held when no folder changed since it was made, else a new one."""
        key = tuple(folders)
        with self._lock:
            self._drain()
            held = self._listings.pop(key, None)
            if held is not None and _identities(folders) == held.identities:
                self._listings[key] = held  # now the most recently used
                return held.files
            watched = self._watch(folders)
            files = list_now(folders)
            self._drain()
            if (files is not None and watched is not None and not files.missing.any()
                    and all(self._events.get(w, 0) == n for w, n in watched[1].items())):
                self._listings[key] = _Listing(files, watched[0], tuple(watched[1]))
            self._evict()
            return files

    def close(self) -> None:
        """Closes the event queue (the kernel removes its watches); nothing is held any more."""
        self._listings.clear()
        self._notify.close()

    def _watch(self, folders: Sequence[str]) -> tuple[tuple[Identity, ...], dict[int, int]] | None:
        """Watches on ``folders`` (added before they are listed) with their identities and event counts so far;
        None when one cannot be watched."""
        identities, counts = [], {}
        for folder in folders:
            try:
                before = _identity(folder)
                if not self._is_local(folder, before[0]):
                    return None
                watch = self._notify.add_watch(folder, _CHANGES | _ONLY_DIRECTORIES)
                if _identity(folder) != before:
                    return None  # re-linked while being watched: which folder the watch is on is unknown
            except OSError as e:  # missing, not a folder, no watches left
                log.debug("hsh: not keeping the listing of %s: %s", folder, e)
                return None
            identities.append(before)
            counts[watch] = self._events.setdefault(watch, 0)
        return tuple(identities), counts

    def _drain(self) -> None:
        """Reads the queued events: every listing of a folder that changed is dropped."""
        events = self._notify.read(timeout=0)
        if not events:
            return
        changed = set()
        for event in events:
            if event.mask & _QUEUE_OVERFLOW:
                self._listings.clear()
                self._events = {w: n + 1 for w, n in self._events.items()}
                continue
            self._events[event.wd] = self._events.get(event.wd, 0) + 1
            changed.add(event.wd)
        for key in [k for k, v in self._listings.items() if changed.intersection(v.watches)]:
            del self._listings[key]

    def _evict(self) -> None:
        """The least recently used listings go until at most ``max_files`` files are held; their watches too."""
        while (len(self._listings) > MAX_LISTINGS
               or sum(len(v.files.names) for v in self._listings.values()) > self._max_files):
            self._listings.popitem(last=False)
        kept = {w for v in self._listings.values() for w in v.watches}
        for watch in [w for w in self._events if w not in kept]:
            del self._events[watch]
            with contextlib.suppress(OSError):  # already gone with its folder
                self._notify.rm_watch(watch)

    def _is_local(self, folder: str, device: int) -> bool:
        known = self._local_devices.get(device)
        if known is None:
            known = self._local_devices[device] = _file_system_type(folder) in LOCAL_FILE_SYSTEMS
        return known


def _identity(folder: str) -> Identity:
    st = os.stat(folder)
    return st.st_dev, st.st_ino


def _identities(folders: Sequence[str]) -> tuple[Identity, ...] | None:
    """Each folder's (device, inode) as its path resolves now; None when one is gone."""
    try:
        return tuple(_identity(f) for f in folders)
    except OSError:
        return None


class _StatFs(ctypes.Structure):
    _fields_ = [("f_type", ctypes.c_long), ("rest", ctypes.c_byte * 120)]


@functools.cache
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)


def _file_system_type(folder: str) -> int | None:
    out = _StatFs()
    if _libc().statfs(os.fsencode(folder), ctypes.byref(out)) != 0:
        return None
    return out.f_type & 0xFFFFFFFF


_WATCHED: WatchedListings | None = None
_UNAVAILABLE = False
_CREATING = threading.Lock()


def watched_listings() -> WatchedListings | None:
    """The process's watched listings; None when turned off (``HSH_WATCH_LISTINGS=0``) or without inotify."""
    global _WATCHED, _UNAVAILABLE
    if os.environ.get("HSH_WATCH_LISTINGS", "1") == "0":
        return None
    if _WATCHED is None and not _UNAVAILABLE:
        with _CREATING:
            if _WATCHED is None and not _UNAVAILABLE:
                try:
                    _WATCHED = WatchedListings()
                except (ImportError, OSError, AttributeError) as e:  # not Linux: every call lists
                    log.debug("hsh: listings are not watched: %s", e)
                    _UNAVAILABLE = True
    return _WATCHED


def _forget_in_child() -> None:
    """A forked child must not read its parent's event queue (each event is read once, by one reader): it gets
    its own watches and listings when it first lists."""
    global _WATCHED, _CREATING
    if _WATCHED is not None:
        _WATCHED.close()
    _WATCHED, _CREATING = None, threading.Lock()


os.register_at_fork(after_in_child=_forget_in_child)
