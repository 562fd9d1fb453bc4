"""Watched listings (:mod:`storage_handler.storage.watched`) against listing afresh.

The rule they must keep: a listing handed out again is exactly what listing the folders now finds. Checked after
every kind of change a writer, a mover or a cleaner makes (hypothesis draws sequences of them), for one folder and
for several listed together, when a folder's path comes to name another folder, when the kernel's event queue
overflows, and in a forked child; and that nothing is kept where the kernel would not report a change.
"""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from storage_handler.storage import watched as watched_module
from storage_handler.storage.native_listing import FolderFiles, NativeLister, native_lister
from storage_handler.storage.watched import WatchedListings, watched_listings
from tests.helpers import examples


@pytest.fixture(scope="module")
def lister() -> NativeLister:
    found = native_lister()
    assert found is not None  # a C compiler is part of this machine
    return found


@pytest.fixture
def listings() -> Iterator[WatchedListings]:
    held = WatchedListings()
    yield held
    held.close()


class Counting:
    """``list_folders`` that counts its calls: a listing handed out again costs none."""

    def __init__(self, lister: NativeLister) -> None:
        self.lister, self.calls = lister, 0

    def __call__(self, folders: list[str]) -> FolderFiles | None:
        self.calls += 1
        return self.lister.list_folders(folders)


def same(a: FolderFiles | None, b: FolderFiles | None) -> bool:
    assert a is not None and b is not None
    return (a.names.equals(b.names) and a.tags.equals(b.tags) and (a.sizes == b.sizes).all()
            and (a.mtimes_ms == b.mtimes_ms).all() and (a.counts == b.counts).all()
            and (a.missing == b.missing).all())


NAMES = st.sampled_from(["a.parquet", "b.parquet", "c", "part-0", "_tmp", ".hidden"])
OPS = st.one_of(
    st.tuples(st.just("create"), NAMES, st.integers(0, 64)),
    st.tuples(st.just("append"), NAMES, st.integers(1, 8)),
    st.tuples(st.just("truncate"), NAMES, st.integers(0, 4)),
    st.tuples(st.just("retime"), NAMES, st.integers(0, 0)),
    st.tuples(st.just("chmod"), NAMES, st.integers(0, 0)),
    st.tuples(st.just("delete"), NAMES, st.integers(0, 0)),
    st.tuples(st.just("rename"), NAMES, st.integers(0, 5)),
    st.tuples(st.just("move_out"), NAMES, st.integers(0, 0)),
    st.tuples(st.just("move_in"), NAMES, st.integers(0, 8)),
    st.tuples(st.just("subfolder"), NAMES, st.integers(0, 0)),
    st.tuples(st.just("other_folder"), NAMES, st.integers(0, 8)),
)
_TIMES = itertools.count(1_000_000_000)


def apply(op: tuple[str, str, int], folder: Path, other: Path, aside: Path) -> None:
    """One change, as writers, movers and cleaners make them; a change that does not apply does nothing."""
    kind, name, n = op
    path = folder / name
    if kind == "create":  # or written anew
        path.write_bytes(b"x" * n)
    elif kind == "append" and path.is_file():
        with path.open("ab") as f:
            f.write(b"y" * n)
    elif kind == "truncate" and path.is_file():
        os.truncate(path, n)
    elif kind == "retime" and path.is_file():
        t = next(_TIMES)  # a time no file had: a listing made before cannot show it by chance
        os.utime(path, (t, t))
    elif kind == "chmod" and path.is_file():
        path.chmod(0o600 if path.stat().st_mode & 0o044 else 0o644)
    elif kind == "delete" and path.is_file():
        path.unlink()
    elif kind == "rename" and path.is_file():
        path.rename(folder / f"renamed-{n}")
    elif kind == "move_out" and path.is_file():
        path.rename(aside / name)
    elif kind == "move_in" and not path.exists():  # written elsewhere, then moved in (a committer's way)
        if not (aside / name).is_file():
            (aside / name).write_bytes(b"m" * (n + 1))
        (aside / name).rename(path)
    elif kind == "subfolder":
        (folder / "sub").mkdir(exist_ok=True)
        (folder / "sub" / name).write_bytes(b"z")
    elif kind == "other_folder":
        (other / name).write_bytes(b"o" * n)


@settings(max_examples=examples(150), deadline=None)
@given(st.lists(OPS, max_size=30), st.booleans())
def test_a_listing_handed_out_again_is_what_listing_now_finds(lister: NativeLister,
                                                             ops: list[tuple[str, str, int]], both: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        folder, other, aside = root / "t", root / "u", root / "aside"
        for f in (folder, other, aside):
            f.mkdir()
        (folder / "a.parquet").write_bytes(b"start")
        folders = [str(folder), str(other)] if both else [str(folder)]
        listings, counting = WatchedListings(), Counting(lister)
        try:
            for op in ops:
                apply(op, folder, other, aside)
                assert same(listings.list_folders(folders, counting), lister.list_folders(folders)), op
                assert same(listings.list_folders(folders, counting), lister.list_folders(folders)), op
            assert counting.calls <= len(ops) + 1  # the second listing after a change was handed out again
        finally:
            listings.close()


def test_an_unchanged_folder_is_not_listed_again(lister: NativeLister, listings: WatchedListings,
                                                 tmp_path: Path) -> None:
    (tmp_path / "a").write_bytes(b"1")
    counting = Counting(lister)
    for _ in range(3):
        listings.list_folders([str(tmp_path)], counting)
    assert counting.calls == 1
    with (tmp_path / "a").open("ab") as f:  # written in place: no entry of the folder changes, the file does
        f.write(b"2")
    assert same(listings.list_folders([str(tmp_path)], counting), lister.list_folders([str(tmp_path)]))
    assert counting.calls == 2


def test_a_path_that_comes_to_name_another_folder_is_listed_again(lister: NativeLister,
                                                                  listings: WatchedListings,
                                                                  tmp_path: Path) -> None:
    # the table's parent folder swapped under it: the watched folder itself raises no event
    (tmp_path / "v1" / "t").mkdir(parents=True)
    (tmp_path / "v1" / "t" / "a").write_bytes(b"old")
    (tmp_path / "v2" / "t").mkdir(parents=True)
    (tmp_path / "v2" / "t" / "a").write_bytes(b"new, longer")
    link = tmp_path / "current"
    link.symlink_to(tmp_path / "v1")
    table = str(link / "t")
    listings.list_folders([table], lister.list_folders)
    os.replace(tmp_path / "v1", tmp_path / "old")
    os.replace(tmp_path / "v2", tmp_path / "v1")
    found = listings.list_folders([table], lister.list_folders)
    assert found is not None and found.sizes.tolist() == [len(b"new, longer")]


def test_a_full_event_queue_drops_every_listing(lister: NativeLister, listings: WatchedListings,
                                                tmp_path: Path) -> None:
    quiet, busy = tmp_path / "quiet", tmp_path / "busy"
    for f in (quiet, busy):
        f.mkdir()
        (f / "a").write_bytes(b"1")
        (f / "b").write_bytes(b"1")
        listings.list_folders([str(f)], lister.list_folders)
    limit = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
    for i in range(limit + 10):  # alternating names: the kernel merges only identical events in a row
        t = next(_TIMES)
        os.utime(busy / ("a" if i % 2 else "b"), (t, t))
    (quiet / "c").write_bytes(b"after the queue filled: its event is lost")
    assert same(listings.list_folders([str(quiet)], lister.list_folders), lister.list_folders([str(quiet)]))


def test_a_forked_child_does_not_take_its_parents_events(lister: NativeLister, tmp_path: Path) -> None:
    shared = watched_listings()
    assert shared is not None
    (tmp_path / "a").write_bytes(b"1")
    shared.list_folders([str(tmp_path)], lister.list_folders)
    (tmp_path / "b").write_bytes(b"2")  # queued for the parent
    pid = os.fork()
    if pid == 0:  # the child lists through the module's listings too; it must not read the parent's queue
        try:
            child = watched_listings()
            ok = child is not shared and child is not None and child.list_folders(
                [str(tmp_path)], lister.list_folders) is not None
        finally:
            os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert same(shared.list_folders([str(tmp_path)], lister.list_folders), lister.list_folders([str(tmp_path)]))


def test_nothing_is_kept_on_a_file_system_other_machines_change(lister: NativeLister, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(watched_module, "LOCAL_FILE_SYSTEMS", frozenset())  # as if on NFS
    listings, counting = WatchedListings(), Counting(lister)
    try:
        for _ in range(3):
            listings.list_folders([str(tmp_path)], counting)
    finally:
        listings.close()
    assert counting.calls == 3


def test_a_missing_folder_is_listed_every_time(lister: NativeLister, listings: WatchedListings,
                                               tmp_path: Path) -> None:
    counting = Counting(lister)
    for _ in range(2):
        found = listings.list_folders([str(tmp_path / "gone")], counting)
        assert found is not None and found.missing.tolist() == [True]
    assert counting.calls == 2
    (tmp_path / "gone").mkdir()
    (tmp_path / "gone" / "a").write_bytes(b"1")
    assert same(listings.list_folders([str(tmp_path / "gone")], counting),
                lister.list_folders([str(tmp_path / "gone")]))


def test_turned_off_by_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HSH_WATCH_LISTINGS", "0")
    assert watched_listings() is None


def test_listings_beyond_the_bound_are_dropped_with_their_watches(lister: NativeLister, tmp_path: Path) -> None:
    listings, counting = WatchedListings(max_files=2), Counting(lister)
    try:
        for name in ("x", "y"):
            (tmp_path / name).mkdir()
            (tmp_path / name / "1").write_bytes(b"1")
            (tmp_path / name / "2").write_bytes(b"2")
            listings.list_folders([str(tmp_path / name)], counting)
        listings.list_folders([str(tmp_path / "x")], counting)  # dropped when y came: listed again
        assert counting.calls == 3
        shutil.rmtree(tmp_path / "y")  # its watch went with it: no error, nothing held
        listings.list_folders([str(tmp_path / "x")], counting)
        assert counting.calls == 3
    finally:
        listings.close()
