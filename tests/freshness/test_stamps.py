"""Stamps, positions and the follower's lock, without a metastore: what a stamp sees and what it cannot."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from storage_handler.freshness.stamps import (
    MISSING,
    FolderSeen,
    FollowerRunningError,
    Position,
    Stamp,
    exclusive,
    folder_prefix,
    listed_stamps,
    load_position,
    local_stamp,
    must_list,
    newest_by_folder,
    save_position,
    stamp_folders,
)
from storage_handler.stats.files.file_list import DataFile, FileList


def parquet(path: Path, n: int = 3) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"v": list(range(n))}), path)
    return path


def test_a_local_stamp_changes_when_a_file_is_added_removed_or_renamed(tmp_path: Path) -> None:
    folder = tmp_path / "dt=1"
    parquet(folder / "a.parquet")
    seen = [local_stamp(str(folder))]
    parquet(folder / ".tmp-b")
    seen.append(local_stamp(str(folder)))
    os.replace(folder / ".tmp-b", folder / "b.parquet")  # how engines put a finished file in place
    seen.append(local_stamp(str(folder)))
    (folder / "a.parquet").unlink()
    seen.append(local_stamp(str(folder)))
    assert len({s.value for s in seen}) == 4


def test_a_local_stamp_does_not_see_a_rewrite_in_place(tmp_path: Path) -> None:
    """The one thing a folder's stamp cannot show: the racy rule and the sweep are there for it."""
    target = parquet(tmp_path / "dt=1" / "a.parquet")
    before = local_stamp(str(target.parent))
    with open(target, "r+b") as fh:  # cp onto an existing name: opened, truncated, written
        fh.truncate(0)
        fh.write(b"x" * 100)
    assert local_stamp(str(target.parent)) == before


def test_a_folder_made_again_or_missing_has_another_stamp(tmp_path: Path) -> None:
    folder = tmp_path / "dt=1"
    parquet(folder / "a.parquet")
    before = local_stamp(str(folder))
    shutil.rmtree(folder)
    assert local_stamp(str(folder)) == MISSING
    parquet(folder / "a.parquet")
    assert local_stamp(str(folder)) != before
    assert local_stamp(str(tmp_path / "nowhere")) == MISSING
    assert local_stamp(str(folder / "a.parquet")) == MISSING  # a file is no folder


def test_listing_stamps_digest_each_folders_visible_files(tmp_path: Path) -> None:
    """The object-store way, over the local backend: one walk of the table, a digest per folder; hidden files
    and subfolders do not count; a folder outside the table is listed on its own."""
    root, outside = tmp_path / "t", tmp_path / "elsewhere"
    for rel in ("dt=1/a.parquet", "dt=1/b.parquet", "dt=2/a.parquet"):
        parquet(root / rel)
    parquet(outside / "x.parquet")
    folders = {"dt=1": str(root / "dt=1"), "dt=2": str(root / "dt=2"), "dt=3": str(root / "dt=3"),
               "far": str(outside)}
    first = listed_stamps(str(root), folders)
    assert first["dt=1"] != first["dt=2"] and first["dt=3"] == listed_stamps(str(root), {"x": str(root / "nope")})["x"]
    parquet(root / "dt=1" / "_SUCCESS")
    parquet(root / "dt=1" / ".hidden")
    parquet(root / "dt=1" / "sub" / "c.parquet")
    parquet(root / "_hsh_index" / "snapshots" / "v1.parquet")
    assert listed_stamps(str(root), folders) == first
    parquet(root / "dt=2" / "a.parquet", n=10)  # rewritten: another size
    parquet(outside / "y.parquet")
    second = listed_stamps(str(root), folders)
    assert second["dt=1"] == first["dt=1"] and second["dt=2"] != first["dt=2"] and second["far"] != first["far"]
    assert listed_stamps(str(root), {"gone": str(tmp_path / "gone")})["gone"] == MISSING


def test_only_local_folders_are_stamped_between_object_store_listings(tmp_path: Path) -> None:
    folders = {"a": str(tmp_path / "a"), "s3": "s3a://bucket/t/dt=1"}
    stamps = stamp_folders(str(tmp_path), folders, remote=False)
    assert set(stamps) == {"a"} and stamps["a"] == MISSING


def test_the_racy_rule() -> None:
    now = 1_800_000_000_000
    calm = FolderSeen("/t/dt=1", "s", changed_ms=now - 60_000, seen_ms=now, newest_ms=now - 60_000)
    assert not calm.racy()
    assert FolderSeen("/t/dt=1", "s", now - 1_000, now, now - 60_000).racy()  # folder changed 1 s before
    assert FolderSeen("/t/dt=1", "s", now - 60_000, now, now - 500).racy()  # a file still being written?
    assert not FolderSeen("s3a://b/t/dt=1", "digest", None, now, now - 500).racy()  # objects appear whole
    assert not FolderSeen("/t/dt=1", "s", now - 1_000, now, None).racy(slack_ms=0)


def test_a_position_survives_a_round_trip_and_a_bad_file_is_no_position(tmp_path: Path) -> None:
    position = Position("db.t", "/data/t", {"dt=1": FolderSeen("/data/t/dt=1", "1:2:3", 5, 6, None),
                                            "dt=2": FolderSeen("s3a://b/x", "", None, 7, 8)}, 9, 10, -1)
    save_position(tmp_path, position)
    assert load_position(tmp_path, "db.t") == position
    assert [p.name for p in tmp_path.iterdir()] == ["db.t.json"]  # no temporary file left behind
    assert load_position(tmp_path, "db.other") is None
    (tmp_path / "db.t.json").write_text("{not json")
    assert load_position(tmp_path, "db.t") is None
    (tmp_path / "db.t.json").write_text(json.dumps({**position.as_json(), "format": 99}))
    assert load_position(tmp_path, "db.t") is None
    (tmp_path / "db.t.json").write_text(json.dumps({**position.as_json(), "table": "db.u"}))
    assert load_position(tmp_path, "db.t") is None


def test_one_follower_per_state_folder(tmp_path: Path) -> None:
    with exclusive(tmp_path / "follow"):
        assert (tmp_path / "follow" / "follow.lock").read_text().strip() == str(os.getpid())
        with pytest.raises(FollowerRunningError, match=f"pid {os.getpid()}.*already running"), \
                exclusive(tmp_path / "follow"):
            pass
    with exclusive(tmp_path / "follow"):  # released when the first one ended
        pass


def test_prefixes_and_the_newest_file_per_folder(tmp_path: Path) -> None:
    assert folder_prefix("/t", "/t/dt=1") == "dt=1/"
    assert folder_prefix("/t", "/t") == ""
    assert folder_prefix("/t", "/elsewhere/x") == "/elsewhere/x/"
    assert folder_prefix("s3a://b/t", "s3a://b/t/dt=1/h=2") == "dt=1/h=2/"
    assert folder_prefix("s3a://b/t", "s3a://c/x") == "s3a://c/x/"
    files = FileList.of([DataFile("dt=1/a", 1, 10, {}), DataFile("dt=1/b", 1, 30, {}),
                         DataFile("dt=2/a", 1, 20, {}), DataFile("top", 1, 5, {})])
    assert newest_by_folder(files) == {"dt=1/": 30, "dt=2/": 20, "": 5}
    assert newest_by_folder(FileList.empty()) == {}



def test_which_folders_a_poll_lists() -> None:
    now = 1_800_000_000_000
    seen = FolderSeen("/t/dt=1", "1:2:3", now - 60_000, now, now - 60_000)
    assert must_list(None, "/t/dt=1", Stamp("1:2:3"))  # never listed
    assert must_list(seen, "/t/elsewhere", Stamp("1:2:3"))  # moved (ALTER PARTITION ... SET LOCATION)
    assert must_list(seen, "/t/dt=1", Stamp("1:2:4"))  # changed
    assert not must_list(seen, "/t/dt=1", Stamp("1:2:3"))
    assert not must_list(seen, "/t/dt=1", None)  # an object-store folder between listings: not looked at
    racy = FolderSeen("/t/dt=1", "1:2:3", now - 100, now, now - 60_000)
    assert must_list(racy, "/t/dt=1", Stamp("1:2:3")) and not must_list(racy, "/t/dt=1", Stamp("1:2:3"), 0)
