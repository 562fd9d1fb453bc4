"""The one interface between the handler and the bytes: what every storage backend must do.

In the spirit of PyIceberg's ``FileIO`` and delta-kernel's ``StorageHandler``: a small protocol, one implementation
per kind of storage (:mod:`.local`, :mod:`.s3`, :mod:`.arrow`), chosen by the location's scheme
(:func:`storage_handler.storage.storage_for`). Everything that touches table data or index files goes through it;
the index's commit protocol (:mod:`storage_handler.stats.index.store`) is written against it, not against a backend.

Why these operations and no more:

* ``list_dir`` (one folder, not recursive) is what a query needs: Hive reads the files directly in a partition's
  folder. On an object store it is one paginated LIST with a delimiter, never a HEAD per object.
* ``walk`` (every file under a folder) is what registration and the unregistered-folder hint need; on an object
  store it is one paginated LIST without a delimiter.
* Every listed file carries a **version tag** that changes whenever the content may have changed: the inode's
  change time on a local disk (``cp -p`` and ``rsync -t`` keep size and mtime, never ctime) and the ETag on S3
  (LastModified has whole seconds only, so a same-size rewrite inside one second is caught by the ETag alone).
  An index row is trusted only while size, modification time and version tag all match the listing; ``None``
  (a store that offers no such tag) means never trusted.
* ``create`` is an atomic, durable create-if-absent: the index commit point (a hard link on a local disk, a PUT
  with ``If-None-Match: *`` on S3). No rename, no lock.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import NamedTuple, Protocol

import pyarrow as pa
import pyarrow.fs as pafs


def decode_threads(source: pa.NativeFile) -> bool:
    """Whether Parquet read from ``source`` may be decoded on pyarrow's threads: always, except a Python-backed
    source (:class:`pyarrow.PythonFile`, as the S3 backend's ranged reads are), which is decoded on the calling
    thread so that every buffer is released there. Why: pyarrow may drop its last reference to such a buffer on one
    of its own worker threads just after a threaded read returned; if the interpreter is exiting at that moment,
    that thread aborts the whole process ("terminate called without an active exception", apache/arrow#49942).
    Seen here with pyarrow 14 and 26 on S3, in about 1 of 10 short ``hsh`` runs."""
    return not isinstance(source, pa.PythonFile)


class FileEntry(NamedTuple):
    """One file as a listing shows it: its name (relative to the listed folder, POSIX), size in bytes,
    modification time in ms and version tag (see the module docstring). A NamedTuple, not a dataclass: one is
    made per listed file, on the query path, and a tuple is built three times faster."""

    name: str
    size: int
    mtime_ms: int
    version: str | None


@dataclass(frozen=True, slots=True)
class DirListing:
    """The files and the subfolder names directly inside one folder."""

    files: tuple[FileEntry, ...]
    folders: tuple[str, ...]


class Storage(Protocol):
    """A storage backend. Every ``uri`` is a full location string of this backend (a local path, or
    ``s3a://bucket/key``): callers build them with :class:`~storage_handler.storage.location.Location`."""

    kind: str

    def list_dir(self, uri: str) -> DirListing | None:
        """The folder's direct files and subfolders; None when the folder does not exist (or is a file)."""
        ...

    def walk(self, uri: str, skip: Callable[[str], bool] | None = None) -> Iterator[FileEntry]:
        """Every file under ``uri`` at any depth, ``name`` relative to it; folders and files whose own name
        ``skip`` accepts are left out with everything under them. Nothing when the folder does not exist."""
        ...

    def folders_with_files(self, uri: str, depth: int, skip: Callable[[str], bool] | None = None) -> Iterator[str]:
        """The folders exactly ``depth`` levels below ``uri`` (relative POSIX paths) that directly hold a file
        ``skip`` does not reject; folders ``skip`` rejects are not entered. Cheaper than :meth:`walk` where the
        backend can tell files from folders without a stat (the unregistered-partition hint)."""
        ...

    def stat(self, uri: str) -> FileEntry | None:
        """One file's entry (``name`` is the full uri); None when there is no such file."""
        ...

    def is_dir(self, uri: str) -> bool:
        """Whether a folder exists at ``uri`` (on an object store: whether any object has it as a prefix)."""
        ...

    def open_input(self, uri: str, entry: FileEntry | None = None) -> pa.NativeFile:
        """A random-access reader (for pyarrow). With the ``entry`` from a listing, an object store needs no
        extra request for the size and refuses to read a different version of the object."""
        ...

    def read_bytes(self, uri: str) -> bytes | None:
        """The whole content of a small file; None when it does not exist."""
        ...

    def create(self, uri: str, data: bytes) -> bool:
        """Atomically create ``uri`` with ``data`` unless it exists; True if this call created it. Durable
        once it returns True; readers never see a partial file."""
        ...

    def put(self, uri: str, data: bytes) -> None:
        """Atomically replace (or create) ``uri`` with ``data``: readers see the old or the new content, and a
        reader that opened the old content keeps reading it or gets :class:`ObjectChangedError`."""
        ...

    def delete(self, uris: Sequence[str]) -> None:
        """Delete files; missing ones are ignored."""
        ...

    def delete_tree(self, uri: str) -> None:
        """Delete a folder and everything under it; a missing folder is ignored."""
        ...

    def arrow_filesystem(self, uri: str) -> tuple[pafs.FileSystem, str]:
        """A ``pyarrow.fs`` file system and the path of ``uri`` on it, for whole-file reads by pyarrow."""
        ...

    def describe(self) -> dict[str, str]:
        """What this backend is configured with, for ``describe`` and errors: never a secret."""
        ...
