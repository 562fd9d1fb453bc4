"""The local file system (and anything mounted into it): ``os`` calls, serial.

Why serial: a ``stat`` is a few microseconds from the page cache and the per-file Python work holds the GIL, so
threads only contend (measured on 20,000 files in 400 folders: 77 ms serial, 157 ms with 2 threads).

Version tag: the inode change time in ns (see :mod:`.base`). Folder symlinks are not followed while walking
(loops); file symlinks are (a reader would open them too). ``create`` writes a temporary file, fsyncs it and
hard-links it to its final name, which fails if that name exists: atomic and no-clobber without a lock or a
rename. A file system without hard links is refused with a clear error at the first index commit.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
import uuid
from collections.abc import Callable, Iterator, Sequence

import pyarrow as pa
import pyarrow.fs as pafs

from storage_handler.errors import StatsIndexError
from storage_handler.storage.base import DirListing, FileEntry
from storage_handler.storage.location import LOCAL, local_path


class LocalStorage:
    kind = LOCAL

    def list_dir(self, uri: str) -> DirListing | None:
        folder = local_path(uri)
        if _LIST_BY_FD:
            return _list_by_fd(folder)
        try:
            entries = list(os.scandir(folder))
        except (FileNotFoundError, NotADirectoryError):
            return None
        files: list[FileEntry] = []
        folders: list[str] = []
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                folders.append(entry.name)
                continue
            found = _entry(entry, entry.name)
            if found is not None:
                files.append(found)
        return DirListing(tuple(files), tuple(folders))

    def walk(self, uri: str, skip: Callable[[str], bool] | None = None) -> Iterator[FileEntry]:
        # native/walk.c answers walk(uri, skip=is_hidden) for list_data_files in C: change both together
        root = local_path(uri)
        stack: list[tuple[str, str]] = [(root, "")]
        while stack:
            folder, rel = stack.pop()
            try:
                entries = list(os.scandir(folder))
            except (FileNotFoundError, NotADirectoryError):
                continue  # removed while we walked: a file gone from storage is never returned
            for entry in entries:
                if skip is not None and skip(entry.name):
                    continue
                name = f"{rel}/{entry.name}" if rel else entry.name
                if entry.is_dir(follow_symlinks=False):
                    stack.append((entry.path, name))
                    continue
                found = _entry(entry, name)
                if found is not None:
                    yield found

    def folders_with_files(self, uri: str, depth: int, skip: Callable[[str], bool] | None = None) -> Iterator[str]:
        def visit(folder: str, level: int, rel: str) -> Iterator[str]:
            try:
                entries = list(os.scandir(folder))
            except (FileNotFoundError, NotADirectoryError):
                return
            visible = [e for e in entries if skip is None or not skip(e.name)]
            if level == depth:
                if any(e.is_file() for e in visible):
                    yield rel
                return
            for e in visible:
                if e.is_dir(follow_symlinks=False):
                    yield from visit(e.path, level + 1, f"{rel}/{e.name}" if rel else e.name)

        yield from visit(local_path(uri), 0, "")

    def stat(self, uri: str) -> FileEntry | None:
        path = local_path(uri)
        try:
            st = os.stat(path)
        except (FileNotFoundError, NotADirectoryError):
            return None
        if not stat.S_ISREG(st.st_mode):
            return None
        return FileEntry(path, st.st_size, st.st_mtime_ns // 1_000_000, str(st.st_ctime_ns))

    def is_dir(self, uri: str) -> bool:
        return os.path.isdir(local_path(uri))

    def open_input(self, uri: str, entry: FileEntry | None = None) -> pa.NativeFile:
        # a plain absolute path needs no parsing (the index's hot path: one call per footer)
        return pa.OSFile(uri if uri.startswith("/") else local_path(uri), "rb")

    def read_bytes(self, uri: str) -> bytes | None:
        try:
            with open(local_path(uri), "rb") as fh:
                return fh.read()
        except (FileNotFoundError, NotADirectoryError):
            return None

    def create(self, uri: str, data: bytes) -> bool:
        path = local_path(uri)
        folder = os.path.dirname(path)
        os.makedirs(folder, exist_ok=True)
        temp = os.path.join(folder, f".tmp-{uuid.uuid4().hex}")
        try:
            with open(temp, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            try:
                os.link(temp, path)
            except FileExistsError:
                return False
            except OSError as exc:
                if exc.errno in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV):
                    raise StatsIndexError(
                        f"cannot create {path} atomically: the file system under {folder} has no hard links "
                        f"({exc.strerror}); keep the table (or its index) on a local disk or on S3"
                    ) from exc
                raise
            _fsync_dir(folder)
            return True
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temp)

    def put(self, uri: str, data: bytes) -> None:
        path = local_path(uri)
        folder = os.path.dirname(path)
        os.makedirs(folder, exist_ok=True)
        temp = os.path.join(folder, f".tmp-{uuid.uuid4().hex}")
        try:
            with open(temp, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(temp, path)  # open readers keep the old inode
            _fsync_dir(folder)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temp)

    def delete(self, uris: Sequence[str]) -> None:
        for uri in uris:
            with contextlib.suppress(FileNotFoundError, NotADirectoryError):
                os.unlink(local_path(uri))

    def delete_tree(self, uri: str) -> None:
        shutil.rmtree(local_path(uri), ignore_errors=True)

    def arrow_filesystem(self, uri: str) -> tuple[pafs.FileSystem, str]:
        return pafs.LocalFileSystem(), local_path(uri)

    def describe(self) -> dict[str, str]:
        return {"storage": "local"}


def _entry(entry: os.DirEntry[str], name: str) -> FileEntry | None:
    try:
        st = entry.stat(follow_symlinks=True)
    except (FileNotFoundError, NotADirectoryError):
        return None  # deleted while listing: a file gone from storage is never returned
    if not stat.S_ISREG(st.st_mode):
        return None
    return FileEntry(name, st.st_size, st.st_mtime_ns // 1_000_000, str(st.st_ctime_ns))


# ``listdir`` + ``stat(name, dir_fd=...)`` where the platform has them (Linux, macOS): no DirEntry object and no
# path join per file. Measured on 20,000 files in 400 folders: 86 ms against 113 ms for scandir + DirEntry.stat.
_LIST_BY_FD = os.listdir in os.supports_fd and os.stat in os.supports_dir_fd and os.stat in os.supports_follow_symlinks


def _list_by_fd(folder: str) -> DirListing | None:
    """``list_dir`` of one folder on the query path: one ``stat`` per entry, nothing else per file.

    The same answer as the scandir form: a symlink to a file is a file (a reader would open it), a folder is a
    real folder (a symlink to one is neither), and an entry removed between the read of the folder and its
    ``stat`` is left out (a file gone from storage is never returned).
    """
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except (FileNotFoundError, NotADirectoryError):
        return None
    files: list[FileEntry] = []
    folders: list[str] = []
    # the loop runs once per file of every listed partition on every query: names bound locally, the file type
    # tested on the mode bits, and FileEntry built by tuple.__new__ (the same tuple, without its Python __new__)
    make, entry_type, add, stat_at = tuple.__new__, FileEntry, files.append, os.stat
    file_bits, type_mask = stat.S_IFREG, stat.S_IFMT(0o177777)
    try:
        for name in os.listdir(fd):
            try:
                st = stat_at(name, dir_fd=fd)
            except (FileNotFoundError, NotADirectoryError):
                continue
            if st.st_mode & type_mask == file_bits:
                add(make(entry_type, (name, st.st_size, st.st_mtime_ns // 1_000_000, str(st.st_ctime_ns))))
            elif stat.S_ISDIR(st.st_mode) and not _is_link(name, fd):
                folders.append(name)
    finally:
        os.close(fd)
    return DirListing(tuple(files), tuple(folders))


def _is_link(name: str, fd: int) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode)
    except (FileNotFoundError, NotADirectoryError):
        return True  # gone meanwhile: not a folder of this listing


def _fsync_dir(folder: str) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
