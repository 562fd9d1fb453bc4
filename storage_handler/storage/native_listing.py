"""Listing local folders in C, with no Python object per file: the query path's flat listing of many partition
folders, and registration's recursive walk of a table folder.

Why: a query whose predicate names only data columns lists every partition of the table on every query (the
handler keeps no listing cache, so a file written a second ago counts). In Python that is ~10 µs a file --
``listdir``, one ``stat``, a tuple -- 2 s at 200,000 files, more than Spark's whole planning of the same table.
Registering (or refreshing) a big table walks its whole folder: in Python ~4 µs a file (a ``DirEntry.stat``, a
``FileEntry``, an append to the file list). ``native/listing.c`` (:meth:`NativeLister.list_folders`) and
``native/walk.c`` (:meth:`NativeLister.walk`) do the same system calls (``open`` + ``readdir`` + ``fstatat``)
and return flat buffers that become Arrow and numpy arrays directly.

Both are compiled here into one library with the system C compiler (``cc``, or ``$CC``) once per source version
into ``$HSH_HOME/native/<hash>/``, like the JVM extension (:mod:`storage_handler.spark.jvm`). Decision: without a
C compiler, on a platform other than Linux, or with ``HSH_NATIVE_LISTING=0``, :func:`native_lister` returns None
and the Python listing is used: the same answer, only slower (tests compare both on the same folders).

The rules are the Python listing's: for the flat listing :func:`storage_handler.storage.local._list_by_fd`, for
the walk :meth:`storage_handler.storage.local.LocalStorage.walk` with ``skip=is_hidden``
(:func:`storage_handler.hive_paths.is_hidden`): names starting with ``_`` or ``.`` are hidden; a symlink to a
file is a file; an entry removed meanwhile is left out; a missing folder is reported (flat) or walks as empty,
not raised; the walk does not descend symlinks to folders. Names that are not UTF-8 (which Python would carry as
surrogate escapes, and refuse or drop by its own rules) make either call answer None: list those in Python.
"""

from __future__ import annotations

import ctypes
import functools
import logging
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from storage_handler.compiled import copy_array, copy_strings, load_helper
from storage_handler.toolchain import native_library

log = logging.getLogger(__name__)
SOURCES = (Path(__file__).with_name("native") / "listing.c", Path(__file__).with_name("native") / "walk.c")
_CANNOT_ANSWER = -1  # walk.c's HSH_CANNOT_ANSWER: a path too long to stat as Python does; walk in Python


class _Listing(ctypes.Structure):
    _fields_ = [
        ("count", ctypes.c_int64), ("names_len", ctypes.c_int64), ("names", ctypes.c_void_p),
        ("offsets", ctypes.c_void_p), ("sizes", ctypes.c_void_p), ("mtimes_ns", ctypes.c_void_p),
        ("ctimes_ns", ctypes.c_void_p), ("per_folder", ctypes.c_void_p), ("missing", ctypes.c_void_p),
        ("error_folder", ctypes.c_int32), ("cap", ctypes.c_int64), ("names_cap", ctypes.c_int64),
    ]


class _Buffer(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("len", ctypes.c_int64), ("cap", ctypes.c_int64)]


class _Walk(ctypes.Structure):
    _fields_ = [
        ("paths", _Buffer), ("offsets", _Buffer), ("sizes", _Buffer), ("mtimes_ns", _Buffer),
        ("ctimes_ns", _Buffer), ("folder_of", _Buffer), ("folders", _Buffer), ("folder_offsets", _Buffer),
        ("error_path", ctypes.c_void_p),
    ]


@dataclass(frozen=True, slots=True)
class FolderFiles:
    """The visible files of several folders, as columns: per folder (in the order asked) its files sorted by
    name; ``counts[i]`` files of folder ``i``; ``missing[i]``: folder ``i`` does not exist."""

    names: pa.StringArray
    sizes: np.ndarray
    mtimes_ms: np.ndarray
    tags: pa.StringArray  # the version tag: the inode change time in ns, as text (storage_handler.storage.local)
    counts: np.ndarray
    missing: np.ndarray


@dataclass(frozen=True, slots=True)
class TreeFiles:
    """The visible files at any depth under one folder, as columns, sorted by ``paths`` (relative to the folder,
    '/'-separated) in byte order. ``folder_of[i]`` is the position in ``folders`` of file ``i``'s folder; each
    folder that holds a file is there once (its relative path, ``""`` for the folder itself), numbered in the
    order of its first file, so per-folder work (partition values) is done once per folder."""

    paths: pa.StringArray
    sizes: np.ndarray
    mtimes_ms: np.ndarray
    tags: pa.StringArray  # the version tag, as in FolderFiles
    folder_of: np.ndarray
    folders: pa.StringArray


class NativeLister:
    """The compiled ``hsh_list_folders`` and ``hsh_walk_tree``, callable from any thread (they hold no state)."""

    def __init__(self, library: ctypes.CDLL) -> None:
        self._list = library.hsh_list_folders
        self._list.argtypes = [ctypes.c_char_p, ctypes.c_int32, ctypes.POINTER(_Listing)]
        self._list.restype = ctypes.c_int
        self._free = library.hsh_listing_free
        self._free.argtypes = [ctypes.POINTER(_Listing)]
        self._free.restype = None
        self._walk = library.hsh_walk_tree
        self._walk.argtypes = [ctypes.c_char_p, ctypes.POINTER(_Walk)]
        self._walk.restype = ctypes.c_int
        self._walk_free = library.hsh_walk_free
        self._walk_free.argtypes = [ctypes.POINTER(_Walk)]
        self._walk_free.restype = None

    def list_folders(self, folders: Sequence[str]) -> FolderFiles | None:
        """The files of ``folders`` (local paths); None when a name is not UTF-8 (list those in Python).
        Raises ``OSError`` naming the folder when one cannot be read (e.g. permission denied)."""
        encoded = b"".join(os.fsencode(f) + b"\0" for f in folders)
        out = _Listing()
        try:
            err = self._list(encoded, len(folders), ctypes.byref(out))
            if err:
                raise OSError(err, os.strerror(err), folders[out.error_folder])
            n = out.count
            data = ctypes.string_at(out.names, out.names_len) if out.names_len else b""
            offsets = copy_array(out.offsets, n + 1, np.int32)
            names = pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(data)])
            sizes = copy_array(out.sizes, n, np.int64)
            mtimes = copy_array(out.mtimes_ns, n, np.int64) // 1_000_000  # floor, as Python's // (before 1970 too)
            ctimes = copy_array(out.ctimes_ns, n, np.int64)
            counts = copy_array(out.per_folder, len(folders), np.int32)
            missing = copy_array(out.missing, len(folders), np.uint8).astype(bool)
        finally:
            self._free(ctypes.byref(out))
        try:
            names.validate(full=True)  # UTF-8 names only; Python represents other bytes its own way
        except pa.ArrowInvalid:
            return None
        return FolderFiles(names, sizes, mtimes, pc.cast(pa.array(ctimes, pa.int64()), pa.string()), counts, missing)

    def walk(self, root: str) -> TreeFiles | None:
        """Every visible file under the local folder ``root``, as ``LocalStorage.walk(root, skip=is_hidden)``
        finds them (nothing when ``root`` does not exist); None when a listed name is not UTF-8 or a path is too
        long to be treated as Python does (walk in Python then). Raises ``OSError`` naming the path where the
        Python walk raises (e.g. a folder it may not read, a symlink loop)."""
        out = _Walk()
        try:
            err = self._walk(os.fsencode(root), ctypes.byref(out))
            if err == _CANNOT_ANSWER:
                return None
            if err:
                where = os.fsdecode(ctypes.string_at(out.error_path)) if out.error_path else ""
                raise OSError(err, os.strerror(err), os.path.join(root, where) if where else root)
            paths = _strings(out.paths, out.offsets)
            folders = _strings(out.folders, out.folder_offsets)
            n = len(paths)
            sizes = copy_array(out.sizes.data, n, np.int64)
            mtimes = copy_array(out.mtimes_ns.data, n, np.int64) // 1_000_000  # floor, as the Python walk's //
            ctimes = copy_array(out.ctimes_ns.data, n, np.int64)
            folder_of = copy_array(out.folder_of.data, n, np.int32)
        finally:
            self._walk_free(ctypes.byref(out))
        try:
            paths.validate(full=True)  # UTF-8 names only; Python represents other bytes its own way
            folders.validate(full=True)
        except pa.ArrowInvalid:
            return None
        return TreeFiles(paths, sizes, mtimes, pc.cast(pa.array(ctimes, pa.int64()), pa.string()), folder_of,
                         folders)


def _strings(data: _Buffer, offsets: _Buffer) -> pa.StringArray:
    """An Arrow string array of the concatenated ``data`` cut at the int32 ``offsets`` (copied out of C)."""
    return copy_strings(offsets.data, data.data, offsets.len // 4 - 1, pa.string())


@functools.lru_cache(maxsize=1)
def native_lister() -> NativeLister | None:
    """The compiled lister, or None (see the module docstring: the Python listing is used then)."""
    return load_helper("HSH_NATIVE_LISTING", "C lister (cc)", _compile, NativeLister,
                       "listing in Python (slower on big tables)")


def _compile() -> Path | None:
    """``listing.c`` and ``walk.c`` compiled into ``$HSH_HOME/native/<hash>/liblisting.so`` (reused when present,
    see :func:`storage_handler.toolchain.native_library`); None without a compiler."""
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not compiler:
        return None
    return native_library("listing", SOURCES, compiler, ["-O2", "-shared", "-fPIC"])
