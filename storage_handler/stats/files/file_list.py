"""A table's data files as columns: :class:`DataFile` is one file, :class:`FileList` many of them.

Why columns: registering, syncing or refreshing a table holds its whole listing while the footers are read and
the index is diffed. As a list of :class:`DataFile` tuples that cost ~360 bytes a file (a tuple, two ``int``
objects, two strings): 360 MB at a million files, a third of registration's peak. A :class:`FileList` keeps the
paths and version tags as Arrow strings and the sizes, times and partition slots as numpy integers, ~110 bytes a
file, and is still a ``Sequence[DataFile]``: code that wants rows iterates (a :class:`DataFile` is made per step
and dropped), code that wants columns (the diff, the sort, the path checks) takes them without a Python object
per file.

Partition values are shared: each file holds the number of its partition mapping in :attr:`FileList.partitions`
(files of one folder share one mapping, as :func:`~storage_handler.stats.files.walk.list_data_files` lists them).
"""

from __future__ import annotations

import os
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple, overload

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from storage_handler.errors import DatasetError

_BATCH = 8_192  # rows turned into Python objects (or Arrow strings) at a time: a small, reused transient


class DataFile(NamedTuple):
    """One data file: path relative to the table location (POSIX) or, for a partition registered outside it, the
    file's absolute location; size in bytes, mtime in ms, partition values, and the storage's version tag
    (``None``: unknown, never trusted).

    A NamedTuple (immutable, typed) so that plain ``(path, size, mtime_ms, partition_values)`` tuples from callers
    are accepted wherever a ``DataFile`` is.

    Why a version tag: size and mtime do not prove a file unchanged. On a local disk ``cp -p``, ``rsync -t`` or
    ``touch -d`` put the old mtime on new content, and two writes within one clock tick keep it; the inode change
    time cannot be set by tools and moves on every write or replacement, so it is the local tag. On S3 the
    modification time has whole seconds only; the ETag changes with the content. An index row is trusted only
    while size, mtime and tag all match (:mod:`storage_handler.storage.base`).
    """

    path: str
    size: int
    mtime_ms: int
    partition_values: Mapping[str, str | None]
    version: str | None = None


class FileList(Sequence[DataFile]):
    """An immutable sequence of files stored as columns (see the module docstring).

    Equal to any sequence of the same files in the same order, so it stands in for a ``list[DataFile]``.
    Pickles as its rows: a slice sent to a worker process carries that slice only (a sliced Arrow array would
    pickle its whole buffer).
    """

    __slots__ = ("paths", "sizes", "mtimes", "versions", "slots", "partitions")

    def __init__(self, paths: pa.Array, sizes: np.ndarray, mtimes: np.ndarray, versions: pa.Array,
                 slots: np.ndarray, partitions: tuple[Mapping[str, str | None], ...]) -> None:
        self.paths = paths
        self.sizes = sizes
        self.mtimes = mtimes
        self.versions = versions
        self.slots = slots
        self.partitions = partitions

    # -- building
    @classmethod
    def of(cls, files: Iterable[DataFile | tuple[Any, ...]]) -> FileList:
        """``files`` as a FileList (itself when it is one); tuples are read as :class:`DataFile` fields."""
        if isinstance(files, FileList):
            return files
        builder = FileListBuilder()
        for f in files:
            d = f if isinstance(f, DataFile) else DataFile(*f)
            builder.add(d.path, d.size, d.mtime_ms, d.version, builder.slot_for(d.partition_values))
        return builder.build()

    @classmethod
    def empty(cls) -> FileList:
        return FileListBuilder().build()

    # -- the Sequence protocol
    def __len__(self) -> int:
        return len(self.paths)

    @overload
    def __getitem__(self, index: int) -> DataFile: ...

    @overload
    def __getitem__(self, index: slice) -> FileList: ...

    def __getitem__(self, index: int | slice) -> DataFile | FileList:
        if isinstance(index, slice):
            start, stop, step = index.indices(len(self))
            if step != 1:
                return self.take(np.arange(start, stop, step))
            n = max(0, stop - start)
            return FileList(self.paths.slice(start, n), self.sizes[start:stop], self.mtimes[start:stop],
                            self.versions.slice(start, n), self.slots[start:stop], self.partitions)
        i = index + len(self) if index < 0 else index
        if not 0 <= i < len(self):
            raise IndexError(f"file {index} of {len(self)}")
        return DataFile(self.paths[i].as_py(), int(self.sizes[i]), int(self.mtimes[i]),
                        self.partitions[self.slots[i]], self.versions[i].as_py())

    def __iter__(self) -> Iterator[DataFile]:
        for start in range(0, len(self), _BATCH):
            stop = start + _BATCH
            parts = self.partitions
            yield from (DataFile(p, s, m, parts[k], v) for p, s, m, v, k in zip(
                self.paths.slice(start, _BATCH).to_pylist(), self.sizes[start:stop].tolist(),
                self.mtimes[start:stop].tolist(), self.versions.slice(start, _BATCH).to_pylist(),
                self.slots[start:stop].tolist(), strict=True))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str | bytes):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]

    def __add__(self, other: Sequence[DataFile]) -> FileList:
        return concat([self, FileList.of(other)])

    def __reduce__(self) -> tuple[Any, ...]:
        return (FileList.of, (list(self),))

    def __repr__(self) -> str:
        return f"FileList({len(self)} files, {len(self.partitions)} partition mappings)"

    # -- columns
    @property
    def total_size(self) -> int:
        return sum(self.sizes.tolist())  # exact: Python integers cannot overflow

    def take(self, indices: np.ndarray | pa.Array) -> FileList:
        """The files at ``indices`` (positions), in that order."""
        at = np.asarray(indices.to_numpy(zero_copy_only=False) if isinstance(indices, pa.Array) else indices,
                        dtype=np.int64)
        where = pa.array(at, pa.int64())
        return FileList(pc.take(self.paths, where), self.sizes[at], self.mtimes[at], pc.take(self.versions, where),
                        self.slots[at], self.partitions)

    def filter(self, mask: np.ndarray) -> FileList:
        """The files where the boolean ``mask`` is true (itself, not a copy, when it is true everywhere)."""
        return self if bool(np.all(mask)) else self.take(np.flatnonzero(mask))

    def sorted_by_path(self) -> FileList:
        """The same files sorted by path (itself when already sorted, the usual case)."""
        if len(self) < 2 or _is_sorted(self.paths):
            return self
        return self.take(pc.sort_indices(self.paths))

    def has_duplicate_paths(self) -> bool:
        """Whether a path occurs twice: one comparison of neighbours when sorted (the usual case, no hash table
        of a million paths), a distinct count otherwise."""
        if len(self) < 2:
            return False
        earlier, later = self.paths.slice(0, len(self) - 1), self.paths.slice(1)
        if _is_sorted(self.paths):
            return bool(pc.any(pc.fill_null(pc.equal(earlier, later), False)).as_py())
        return bool(pc.count_distinct(self.paths, mode="all").as_py() != len(self))

    def slot_members(self) -> list[tuple[Mapping[str, str | None], int]]:
        """Each partition mapping in use with the position of its first file, in the order of those positions
        (files listed in one folder share a mapping, so this is one representative file per folder)."""
        used, first = np.unique(self.slots, return_index=True)
        order = np.argsort(first, kind="stable")
        return [(self.partitions[int(used[i])], int(first[i])) for i in order]

    def partition_texts(self, render: Callable[[Mapping[str, str | None]], str]) -> pa.Array:
        """``render(mapping)`` per file, computed once per mapping and spread by Arrow."""
        texts = pa.array([render(p) for p in self.partitions], pa.string())
        return pc.take(texts, pa.array(self.slots, pa.int32()))


class FileListBuilder:
    """Accumulates files in compact form: integers in ``array`` buffers, strings in Arrow batches."""

    def __init__(self) -> None:
        self._paths: list[str] = []
        self._versions: list[str | None] = []
        self._path_chunks: list[pa.Array] = []
        self._version_chunks: list[pa.Array] = []
        self._sizes = array("q")
        self._mtimes = array("q")
        self._slots = array("i")
        self._partitions: list[Mapping[str, str | None]] = []
        self._slot_of: dict[int, int] = {}

    def slot_for(self, values: Mapping[str, str | None]) -> int:
        """The slot of a partition mapping (one per mapping object: pass each folder's mapping once)."""
        slot = self._slot_of.get(id(values))
        if slot is None:
            slot = self._slot_of[id(values)] = len(self._partitions)
            self._partitions.append(values)  # kept alive here, so its id() stays unique
        return slot

    def add(self, path: str, size: int, mtime_ms: int, version: str | None, slot: int) -> None:
        self._paths.append(path)
        self._versions.append(version)
        self._sizes.append(size)
        self._mtimes.append(mtime_ms)
        self._slots.append(slot)
        if len(self._paths) >= _BATCH:
            self._flush()

    def _flush(self) -> None:
        if self._paths:
            try:
                self._path_chunks.append(pa.array(self._paths, pa.string()))
            except UnicodeEncodeError as exc:  # a name the OS gave as bytes that are not UTF-8
                bad = next(p for p in self._paths if not is_utf8(p))
                raise DatasetError(
                    f"a data file is named {os.fsencode(bad)!r}, which is not UTF-8; Hive and Spark cannot address "
                    "it reliably: rename the file (or prefix its name with '_' to hide it)") from exc
            self._version_chunks.append(pa.array(self._versions, pa.string()))
            self._paths, self._versions = [], []

    def build(self) -> FileList:
        self._flush()
        paths = pa.concat_arrays(self._path_chunks) if self._path_chunks else pa.array([], pa.string())
        versions = pa.concat_arrays(self._version_chunks) if self._version_chunks else pa.array([], pa.string())
        return FileList(paths, np.frombuffer(self._sizes, dtype=np.int64).copy(),
                        np.frombuffer(self._mtimes, dtype=np.int64).copy(), versions,
                        np.frombuffer(self._slots, dtype=np.int32).copy(), tuple(self._partitions))


def concat(lists: Sequence[FileList]) -> FileList:
    """The files of ``lists`` one after another."""
    lists = [f for f in lists if len(f)] or [FileList.empty()]
    if len(lists) == 1:
        return lists[0]
    offsets = np.cumsum([0] + [len(f.partitions) for f in lists[:-1]])
    return FileList(
        pa.concat_arrays([f.paths for f in lists]), np.concatenate([f.sizes for f in lists]),
        np.concatenate([f.mtimes for f in lists]), pa.concat_arrays([f.versions for f in lists]),
        np.concatenate([f.slots + np.int32(o) for f, o in zip(lists, offsets, strict=True)]).astype(np.int32),
        tuple(p for f in lists for p in f.partitions))


def is_utf8(text: str) -> bool:
    """Whether ``text`` can be written as UTF-8: a name the OS gave as other bytes holds surrogate escapes."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _is_sorted(paths: pa.Array) -> bool:
    """Whether ``paths`` is in ascending (binary) order, by Arrow."""
    if len(paths) < 2:
        return True
    later = paths.slice(1)
    return bool(pc.all(pc.fill_null(pc.less_equal(paths.slice(0, len(paths) - 1), later), True)).as_py())
