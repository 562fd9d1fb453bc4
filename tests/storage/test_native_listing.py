"""The C walk (:meth:`NativeLister.walk`) on its own: byte order of full paths, folder numbering, the cases it
leaves to Python, and errors that name the path. Its answer against the Python walk's is checked through
``list_data_files`` in ``tests/stats/files/test_walk.py``."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from storage_handler.hive_paths import is_hidden
from storage_handler.storage import LocalStorage
from storage_handler.storage.native_listing import NativeLister, native_lister


@pytest.fixture
def lister() -> NativeLister:
    found = native_lister()
    assert found is not None  # a C compiler is part of this machine: the native path is what runs
    return found


def touch(root: Path, name: str, data: bytes = b"x") -> None:
    (root / name).parent.mkdir(parents=True, exist_ok=True)
    (root / name).write_bytes(data)


def test_paths_are_in_byte_order_of_the_whole_path(lister: NativeLister, tmp_path: Path) -> None:
    # a depth-first walk sorted by name alone would put "a/x" before "a-b/y" ('-' < '/' < '0')
    names = ["a/x", "a/y/z", "a-b/y", "a0", "a", "a b/c", "ab", "é/1", "z", "😀", "\uffff/q", "a/y0", "a/y-"]
    names.remove("a")  # "a" is a folder here
    for name in names:
        touch(tmp_path, name)
    tree = lister.walk(str(tmp_path))
    assert tree is not None
    paths = tree.paths.to_pylist()
    assert paths == sorted(names, key=lambda p: p.encode()) == sorted(names)  # UTF-8 order is code point order
    folders = tree.folders.to_pylist()
    assert [folders[i] for i in tree.folder_of.tolist()] == [p.rpartition("/")[0] for p in paths]
    assert sorted(set(tree.folder_of.tolist())) == list(range(len(folders)))  # each folder once, numbered densely
    first = [tree.folder_of.tolist().index(i) for i in range(len(folders))]
    assert first == sorted(first)  # numbered in the order of their first file
    # a folder's files need not be next to each other: "a/y/z" sorts between "a/y-" and "a/y0"
    assert paths[2:6] == ["a/x", "a/y-", "a/y/z", "a/y0"] and folders[tree.folder_of[4]] == "a/y"


def test_columns_match_the_python_walk(lister: NativeLister, tmp_path: Path) -> None:
    for i, name in enumerate(["dt=1/a.parquet", "dt=1/b", "top", "dt=2/x/y/z.parquet", "_SUCCESS", "dt=1/.crc",
                              "_hidden/f", "dt=2/.hidden/f", "dt=1/c.parquet._COPYING_", "dt=3._COPYING_/f"]):
        touch(tmp_path, name, b"x" * i)
    os.symlink(tmp_path / "top", tmp_path / "dt=1" / "link.parquet")
    os.symlink(tmp_path / "dt=2", tmp_path / "dt=1" / "folder-link")
    os.symlink(tmp_path / "nowhere", tmp_path / "dt=1" / "dangling")
    tree = lister.walk(str(tmp_path))
    assert tree is not None
    python = sorted(LocalStorage().walk(str(tmp_path), skip=is_hidden))
    assert list(zip(tree.paths.to_pylist(), tree.sizes.tolist(), tree.mtimes_ms.tolist(), tree.tags.to_pylist(),
                    strict=True)) == [tuple(e) for e in python]
    assert [e.name for e in python] == ["dt=1/a.parquet", "dt=1/b", "dt=1/link.parquet", "dt=2/x/y/z.parquet", "top"]


def test_a_missing_root_walks_as_empty(lister: NativeLister, tmp_path: Path) -> None:
    tree = lister.walk(str(tmp_path / "missing"))
    assert tree is not None and len(tree.paths) == 0 and len(tree.folders) == 0


def test_names_that_are_not_utf8_are_left_to_python(lister: NativeLister, tmp_path: Path) -> None:
    touch(tmp_path, "dt=1/ok.parquet")
    base = os.fsencode(tmp_path)
    with open(base + b"/dt=1/_\xff.parquet", "wb") as fh:  # hidden: never listed, so no obstacle
        fh.write(b"1")
    os.mkdir(base + b"/empty\xff")  # a folder without files: no path of it is listed either
    tree = lister.walk(str(tmp_path))
    assert tree is not None and tree.paths.to_pylist() == ["dt=1/ok.parquet"]
    os.mkdir(base + b"/dt=\xff")
    with open(base + b"/dt=\xff/f.parquet", "wb") as fh:
        fh.write(b"2")
    assert lister.walk(str(tmp_path)) is None


def test_a_path_too_long_for_python_is_left_to_python(lister: NativeLister, tmp_path: Path) -> None:
    # Python stats a file by its full path (ENAMETOOLONG past PATH_MAX); the C walk would not fail, so it declines
    fd = os.open(tmp_path, os.O_RDONLY)
    try:
        for _ in range(20):
            os.mkdir("d" * 250, dir_fd=fd)
            inner = os.open("d" * 250, os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = inner
        os.close(os.open("f.parquet", os.O_CREAT | os.O_WRONLY, dir_fd=fd))
    finally:
        os.close(fd)
    assert lister.walk(str(tmp_path)) is None
    with pytest.raises(OSError) as python:
        list(LocalStorage().walk(str(tmp_path)))
    assert python.value.errno == errno.ENAMETOOLONG


def test_a_symlink_loop_raises_naming_it(lister: NativeLister, tmp_path: Path) -> None:
    touch(tmp_path, "dt=1/a.parquet")
    os.symlink("loop", tmp_path / "dt=1" / "loop")
    with pytest.raises(OSError) as native:
        lister.walk(str(tmp_path))
    with pytest.raises(OSError) as python:
        list(LocalStorage().walk(str(tmp_path), skip=lambda n: n.startswith(("_", "."))))
    assert native.value.errno == python.value.errno == errno.ELOOP
    assert native.value.filename == python.value.filename == str(tmp_path / "dt=1" / "loop")
    assert type(native.value) is type(python.value)
    os.rename(tmp_path / "dt=1" / "loop", tmp_path / "dt=1" / "_loop")  # hidden: never looked at
    tree = lister.walk(str(tmp_path))
    assert tree is not None and tree.paths.to_pylist() == ["dt=1/a.parquet"]
