"""Other stores pyarrow can reach (``gs://``, ``abfs[s]://``, ``hdfs://``): listing and reading, no index commits.

What works and what is tested: this backend is exercised in the test suite over pyarrow's local file system
(the same code path, another ``pyarrow.fs`` implementation); GCS, Azure and HDFS themselves are not tested on this
machine (no endpoints; HDFS needs libhdfs). ``pyarrow.fs`` offers neither a version tag (ETag, generation) in its
listings nor a conditional create, so on these stores an index row is never trusted (every file is kept, partition
pruning still applies) and an index cannot be committed: ``create`` refuses with a one-line error that says so.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence

import pyarrow as pa
import pyarrow.fs as pafs

from storage_handler.errors import StorageError
from storage_handler.storage.base import DirListing, FileEntry
from storage_handler.storage.location import ARROW, parse_location


class ArrowStorage:
    kind = ARROW

    def __init__(self, filesystem: pafs.FileSystem | None = None) -> None:
        self._fixed = filesystem
        self._by_root: dict[str, pafs.FileSystem] = {}
        self._lock = threading.Lock()

    def list_dir(self, uri: str) -> DirListing | None:
        fs, path = self.arrow_filesystem(uri)
        try:
            infos = fs.get_file_info(pafs.FileSelector(path, allow_not_found=False))
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as exc:
            raise StorageError(f"cannot list {uri}: {exc}") from exc
        files = tuple(_entry(i, i.base_name) for i in infos if i.type == pafs.FileType.File)
        folders = tuple(i.base_name for i in infos if i.type == pafs.FileType.Directory)
        return DirListing(files, folders)

    def walk(self, uri: str, skip: Callable[[str], bool] | None = None) -> Iterator[FileEntry]:
        fs, path = self.arrow_filesystem(uri)
        try:
            infos = fs.get_file_info(pafs.FileSelector(path, recursive=True, allow_not_found=True))
        except OSError as exc:
            raise StorageError(f"cannot list {uri}: {exc}") from exc
        root = path.rstrip("/") + "/"
        for info in infos:
            if info.type != pafs.FileType.File or not info.path.startswith(root):
                continue
            name = info.path[len(root):]
            if skip is not None and any(skip(part) for part in name.split("/")):
                continue
            yield _entry(info, name)

    def folders_with_files(self, uri: str, depth: int, skip: Callable[[str], bool] | None = None) -> Iterator[str]:
        seen: set[str] = set()
        for entry in self.walk(uri, skip):
            parts = entry.name.split("/")
            if len(parts) == depth + 1:
                folder = "/".join(parts[:-1])
                if folder not in seen:
                    seen.add(folder)
                    yield folder

    def stat(self, uri: str) -> FileEntry | None:
        fs, path = self.arrow_filesystem(uri)
        info = fs.get_file_info(path)
        return _entry(info, uri) if info.type == pafs.FileType.File else None

    def is_dir(self, uri: str) -> bool:
        fs, path = self.arrow_filesystem(uri)
        return bool(fs.get_file_info(path).type == pafs.FileType.Directory)

    def open_input(self, uri: str, entry: FileEntry | None = None) -> pa.NativeFile:
        fs, path = self.arrow_filesystem(uri)
        return fs.open_input_file(path)

    def read_bytes(self, uri: str) -> bytes | None:
        fs, path = self.arrow_filesystem(uri)
        try:
            with fs.open_input_stream(path) as fh:
                return bytes(fh.read())
        except FileNotFoundError:
            return None

    def create(self, uri: str, data: bytes) -> bool:
        raise StorageError(
            f"cannot commit an index at {uri}: pyarrow offers no atomic create-if-absent on "
            f"{parse_location(uri).scheme}://; keep the index on a local disk or S3 (tables there are read, "
            "pruned by partitions only)"
        )

    def put(self, uri: str, data: bytes) -> None:
        self.create(uri, data)  # refuses: no index writes on these stores

    def delete(self, uris: Sequence[str]) -> None:
        for uri in uris:
            fs, path = self.arrow_filesystem(uri)
            try:
                fs.delete_file(path)
            except FileNotFoundError:
                continue

    def delete_tree(self, uri: str) -> None:
        fs, path = self.arrow_filesystem(uri)
        try:
            fs.delete_dir(path)
        except FileNotFoundError:
            return

    def arrow_filesystem(self, uri: str) -> tuple[pafs.FileSystem, str]:
        location = parse_location(uri)
        path = f"{location.bucket}/{location.key}".rstrip("/")
        if self._fixed is not None:  # tests: a pyarrow file system standing in for the store
            return self._fixed, path
        root = f"{location.scheme}://{location.bucket}"
        with self._lock:
            fs = self._by_root.get(root)
            if fs is None:
                try:
                    fs = pafs.FileSystem.from_uri(root)[0]
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError, OSError) as exc:
                    raise StorageError(
                        f"cannot open {root}: this machine's pyarrow cannot reach {location.scheme}:// ({exc})"
                    ) from exc
                self._by_root[root] = fs
        return fs, path

    def describe(self) -> dict[str, str]:
        return {"storage": "pyarrow.fs"}


def _entry(info: pafs.FileInfo, name: str) -> FileEntry:
    mtime = info.mtime_ns // 1_000_000 if info.mtime_ns is not None else 0
    return FileEntry(name, int(info.size or 0), mtime, None)
