"""Listing the real data files, and Hive's partition-path escaping (checked against Hive's own jar)."""

from __future__ import annotations

import errno
import os
import pickle
import shutil
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from storage_handler.errors import ConfigurationError, DatasetError
from storage_handler.hive_paths import HIVE_DEFAULT_PARTITION
from storage_handler.stats import DataFile, FileList, list_data_files
from storage_handler.storage import local_path
from tests.helpers import examples
from tests.stats.util import write


# ---------------------------------------------------------------- listing
def make_tree(root) -> None:
    table = pa.table({"x": [1]})
    write(root, "dt=2024-01-01/part-0.parquet", table)
    write(root, "dt=2024-01-01/000000_0", table)  # Hive's extension-less file names
    write(root, f"dt={HIVE_DEFAULT_PARTITION}/part-0.parquet", table)
    write(root, "dt=a%2Fb%3Dc/part-0.parquet", table)
    write(root, "dt=été/part-0.parquet", table)
    write(root, "dt=/part-0.parquet", table)
    for hidden in ["_SUCCESS", ".part-0.parquet.crc", "dt=2024-01-01/_tmp.parquet", "_hsh_index/x.parquet",
                   ".hidden/part-9.parquet", "dt=2024-01-01/_temporary/part-1.parquet"]:
        write(root, hidden, table)


def test_list_data_files(tmp_path):
    make_tree(tmp_path)
    files = list_data_files(str(tmp_path))
    assert [f.path for f in files] == [
        "dt=/part-0.parquet",
        "dt=2024-01-01/000000_0",
        "dt=2024-01-01/part-0.parquet",
        f"dt={HIVE_DEFAULT_PARTITION}/part-0.parquet",
        "dt=a%2Fb%3Dc/part-0.parquet",
        "dt=été/part-0.parquet",
    ]
    values = {f.path: f.partition_values["dt"] for f in files}
    assert values[f"dt={HIVE_DEFAULT_PARTITION}/part-0.parquet"] is None
    assert values["dt=a%2Fb%3Dc/part-0.parquet"] == "a/b=c"
    assert values["dt=été/part-0.parquet"] == "été"
    assert values["dt=/part-0.parquet"] is None  # an empty value is Hive's default partition
    first = files[2]
    st_ = os.stat(tmp_path / first.path)
    assert first == DataFile(first.path, st_.st_size, st_.st_mtime_ns // 1_000_000, {"dt": "2024-01-01"},
                             str(st_.st_ctime_ns))


def test_partition_columns_select_the_hive_layout(tmp_path):
    table = pa.table({"x": [1]})
    write(tmp_path, "stray.parquet", table)
    write(tmp_path, "Y=2024/m=1/a.parquet", table)
    write(tmp_path, "m=1/y=2024/b.parquet", table)  # wrong order
    write(tmp_path, "y=2024/c.parquet", table)  # too shallow
    write(tmp_path, "y=2024/m=1/sub/d.parquet", table)  # too deep
    files = list_data_files(str(tmp_path), partition_columns=["y", "M"])
    assert [(f.path, dict(f.partition_values)) for f in files] == [("Y=2024/m=1/a.parquet", {"y": "2024", "m": "1"})]
    assert len(list_data_files(str(tmp_path))) == 5


def test_locations(tmp_path):
    write(tmp_path, "a b/f.parquet", pa.table({"x": [1]}))
    root = str(tmp_path / "a b")
    assert local_path(f"file://{root}") == root
    assert local_path(f"file:{root}") == root
    assert local_path(f"file://localhost{root}") == root
    # Hive/Hadoop locations are not URI-encoded: '%20' names a folder called '%20', as Hadoop's Path reads it
    assert local_path(f"file:{root}%20") == root + "%20"
    assert [f.path for f in list_data_files(f"file://{root}")] == ["f.parquet"]
    assert list_data_files(str(tmp_path / "missing")) == []
    with pytest.raises(DatasetError):
        list_data_files(str(tmp_path / "a b" / "f.parquet"))
    for bad in ["s3://bucket/x", "hdfs://nn:8020/x", "file://otherhost/x"]:
        with pytest.raises(ConfigurationError):
            local_path(bad)


# ---------------------------------------------------------------- the C walk against the Python walk
FOLDER = st.sampled_from(["dt=1", "dt=2", "DT=3", "k=a%2Fb", "k=", f"k={HIVE_DEFAULT_PARTITION}", "k=é ü", "x",
                          "a", "a-b", "a b", "=v", "k=a=b", "_tmp", ".hidden", "😀=1"])
FILE = st.sampled_from(["f.parquet", "000000_0", "a", "a-b", "Z", "é.parquet", "_SUCCESS", ".f.crc", "f0"])
KIND = st.sampled_from(["file"] * 6 + ["link to file", "link to folder", "dangling", "empty folder", "loop"])
LAYOUTS = st.sampled_from([None, ["dt"], ["k"], ["DT", "k"], ["x"]])


def build_tree(root: str, entries: list[tuple[list[str], str, str]]) -> None:
    """Materialize ``(folders, name, kind)`` entries under ``root``; one that collides with an earlier one (a
    file or a link where a folder should be) is left out."""
    os.makedirs(os.path.join(root, "_outside"), exist_ok=True)
    target = os.path.join(root, "_outside", "target.parquet")
    with open(target, "wb") as fh:
        fh.write(b"target")
    for n, (folders, name, kind) in enumerate(entries):
        path = os.path.join(root, *folders, name)
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            if kind == "file":
                with open(path, "xb") as fh:
                    fh.write(b"x" * n)
                os.utime(path, ns=(0, (n - 3) * 1_234_567_891))  # mtime apart from ctime, some before 1970
            elif kind == "link to file":
                os.symlink(target, path)
            elif kind == "link to folder":
                os.symlink(os.path.join(root, *folders[:1]) if folders else root, path)
            elif kind == "dangling":
                os.symlink(os.path.join(root, "nowhere"), path)
            elif kind == "empty folder":
                os.mkdir(path)
            else:
                os.symlink(name, path)  # a link to itself: ELOOP once followed
        except OSError:  # exists already, or a file, dangling link or loop stands where a folder should
            continue


def listed(root: str, keys: list[str] | None, native: bool) -> object:
    """``list_data_files`` by the C walk or the Python one: the files, or the error as (type, errno)."""
    from storage_handler.stats.files import walk as listing

    with pytest.MonkeyPatch.context() as patch:
        if not native:
            patch.setattr(listing, "native_lister", lambda: None)
        try:
            return list_data_files(root, keys)
        except OSError as exc:
            return type(exc), exc.errno


@settings(max_examples=examples(150), deadline=None)
@given(st.lists(st.tuples(st.lists(FOLDER, max_size=3), FILE, KIND), max_size=14), LAYOUTS)
def test_the_c_walk_answers_like_python(entries: list[tuple[list[str], str, str]], keys: list[str] | None) -> None:
    """The same files, sizes, times, tags and partition values (one mapping per folder), whichever walk ran:
    nested k=v folders, hidden names at every level, symlinks to files and folders, dangling links, symlink loops,
    unicode, empty folders, files in the root, folders outside the layout; with and without partition columns."""
    import tempfile

    from storage_handler.storage.native_listing import native_lister

    lister = native_lister()
    assert lister is not None  # a C compiler is part of this machine: the native path is what runs
    with tempfile.TemporaryDirectory() as tmp:
        build_tree(tmp, entries)
        native, python = listed(tmp, keys, native=True), listed(tmp, keys, native=False)
        if isinstance(python, tuple):  # both raise alike (a symlink loop reached by the walk)
            assert native == python and python[1] == errno.ELOOP
            return
        assert lister.walk(tmp) is not None  # the C walk answered itself: no silent fallback
        assert isinstance(native, FileList) and isinstance(python, FileList)
        assert native == python
        assert len(native.partitions) == len(python.partitions)  # one mapping per folder that holds a kept file
        assert native.paths.to_pylist() == sorted(native.paths.to_pylist())


def test_a_name_that_is_not_utf8_falls_back_to_the_python_walk(tmp_path: Path) -> None:
    from storage_handler.storage.native_listing import native_lister

    lister = native_lister()
    assert lister is not None
    write(tmp_path, "dt=1/a.parquet", pa.table({"x": [1]}))
    os.mkdir(os.fsencode(tmp_path) + b"/stray\xff")
    with open(os.fsencode(tmp_path) + b"/stray\xff/f.parquet", "wb") as fh:
        fh.write(b"PAR1")
    assert lister.walk(str(tmp_path)) is None
    # the Python walk drops it when the layout excludes its folder, as before ...
    assert [f.path for f in list_data_files(str(tmp_path), ["dt"])] == ["dt=1/a.parquet"]
    assert list_data_files(str(tmp_path), ["dt"]) == listed(str(tmp_path), ["dt"], native=False)
    # ... and refuses it in one line naming it otherwise
    with pytest.raises(DatasetError, match=r"named b'stray\\xff/f.parquet', which is not UTF-8"):
        list_data_files(str(tmp_path))


def test_hsh_native_listing_0_walks_in_python(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from storage_handler.storage import LocalStorage, native_listing

    write(tmp_path, "dt=1/a.parquet", pa.table({"x": [1]}))
    walks: list[str] = []
    python_walk = LocalStorage.walk

    def counting(self: LocalStorage, uri: str, skip: object = None) -> object:
        walks.append(uri)
        return python_walk(self, uri, skip)  # type: ignore[arg-type]

    monkeypatch.setattr(LocalStorage, "walk", counting)
    try:
        native_listing.native_lister.cache_clear()
        native = list_data_files(str(tmp_path), ["dt"])
        assert walks == []  # the C walk ran
        monkeypatch.setenv("HSH_NATIVE_LISTING", "0")
        native_listing.native_lister.cache_clear()
        python = list_data_files(str(tmp_path), ["dt"])
        assert walks == [str(tmp_path)]
    finally:
        native_listing.native_lister.cache_clear()  # the next caller builds (or finds) the real one again
    assert native == python and [f.path for f in python] == ["dt=1/a.parquet"]


def unprivileged(fn: Callable[[], object]) -> object:
    """``fn()`` where folder permissions hold: as is, or as ``nobody`` in a forked child when running as root (who
    reads every folder); its result, or the exception it raised, is returned."""
    if os.geteuid() != 0:
        try:
            return fn()
        except Exception as exc:  # noqa: BLE001 -- the outcome is what the test compares
            return exc
    read, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover -- the child
        try:
            os.close(read)
            os.setgid(65534)
            os.setuid(65534)
            try:
                outcome: object = fn()
            except Exception as exc:  # noqa: BLE001
                outcome = exc
            with os.fdopen(write_end, "wb") as fh:
                fh.write(pickle.dumps(outcome))
        finally:
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read, "rb") as fh:
        data = fh.read()
    os.waitpid(pid, 0)
    return pickle.loads(data)


def test_a_folder_that_cannot_be_read_raises_naming_it_as_python_does() -> None:
    import tempfile

    from storage_handler.storage.native_listing import native_lister

    assert native_lister() is not None  # loaded before the fork: the child reads nothing under /root
    root = tempfile.mkdtemp()
    try:
        os.chmod(root, 0o755)
        write(root, "dt=1/a.parquet", pa.table({"x": [1]}))
        write(root, "dt=2/b.parquet", pa.table({"x": [1]}))
        write(root, "_locked/c.parquet", pa.table({"x": [1]}))
        for folder in ("dt=1", "dt=2", "_locked"):
            os.chmod(os.path.join(root, folder), 0o755)
        os.chmod(os.path.join(root, "dt=2"), 0)
        os.chmod(os.path.join(root, "_locked"), 0)

        native = unprivileged(lambda: listed(root, None, native=True))
        python = unprivileged(lambda: listed(root, None, native=False))
        assert native == python == (PermissionError, errno.EACCES)
        error = unprivileged(lambda: native_lister().walk(root))  # type: ignore[union-attr]
        assert isinstance(error, PermissionError) and error.filename == os.path.join(root, "dt=2")
        os.chmod(os.path.join(root, "dt=2"), 0o755)  # a hidden folder nobody may read is never looked at
        native = unprivileged(lambda: listed(root, None, native=True))
        assert isinstance(native, FileList) and [f.path for f in native] == ["dt=1/a.parquet", "dt=2/b.parquet"]
    finally:
        for folder in ("dt=2", "_locked"):
            os.chmod(os.path.join(root, folder), 0o755)
        shutil.rmtree(root)
