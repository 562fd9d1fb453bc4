"""Snapshots, atomic commits, conflicts, crashes and concurrent writers - with real processes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from storage_handler.errors import StatsIndexError
from storage_handler.stats import (
    DataFile,
    FileStats,
    IndexConflictError,
    commit,
    current_version,
    gc_snapshots,
    index_dir,
    load,
    stats_table,
)
from storage_handler.stats.index.file_stats import ColumnStats
from storage_handler.storage import storage_for
from storage_handler.types import parse_schema_text
from tests.crash_points import AFTER_COMMIT, POINTS

REPO = str(Path(__file__).resolve().parents[2])
COLUMNS = parse_schema_text("x bigint, s string")


def table_of(*paths: str, base: pa.Table | None = None) -> pa.Table:
    entries = [
        (DataFile(p, 10, 20, {"dt": "1"}), FileStats(5, {"x": ColumnStats(1, 9, 0), "s": ColumnStats("a", "b", 1)}))
        for p in paths
    ]
    new = stats_table(COLUMNS, entries)
    return new if base is None else pa.concat_tables([base, new]).sort_by("path")


def snapshot_files(loc: str) -> list[str]:
    listing = storage_for(loc).list_dir(f"{index_dir(loc)}/snapshots")
    return sorted(f.name for f in listing.files) if listing else []


def live_snapshots(loc: str) -> list[str]:
    """Snapshot names that are not tombstones."""
    listing = storage_for(loc).list_dir(f"{index_dir(loc)}/snapshots")
    return sorted(f.name for f in listing.files if f.size > 0 and not f.name.startswith(".")) if listing else []


def test_commit_and_load(storage_root):
    loc = storage_root
    assert load(loc) is None and current_version(loc) is None
    assert commit(loc, table_of("a.parquet"), None) == 1
    snap = load(loc if "://" in loc else f"file://{loc}")
    assert snap.version == 1 and snap.table.equals(table_of("a.parquet"))
    assert snap.table.schema.metadata == table_of("a.parquet").schema.metadata
    assert snap.path == f"{index_dir(loc)}/snapshots/v00000001.parquet"
    assert [str(t) for _, t in snap.columns] == ["bigint", "string"]
    assert commit(loc, table_of("a.parquet", "b.parquet"), 1) == 2
    assert load(loc).table.column("path").to_pylist() == ["a.parquet", "b.parquet"]
    assert current_version(loc) == 2


def test_conflicts_are_detected(storage_root):
    loc = storage_root
    commit(loc, table_of("a"), None)
    with pytest.raises(IndexConflictError) as err:
        commit(loc, table_of("b"), None)
    assert isinstance(err.value, StatsIndexError) and err.value.actual == 1
    commit(loc, table_of("b"), 1)
    with pytest.raises(IndexConflictError):
        commit(loc, table_of("c"), 1)
    assert load(loc).version == 2 and load(loc).table.column("path").to_pylist() == ["b"]
    assert [n for n in snapshot_files(loc) if n.startswith(".tmp")] == []  # no temporary file left behind


def test_the_create_is_the_commit_point_two_writers_of_one_version(storage_root):
    """Two writers that both saw version 1 race for version 2: exactly one creates it (create-if-absent)."""
    from storage_handler.stats.index import versions
    from storage_handler.storage import parse_location

    loc = storage_root
    commit(loc, table_of("a"), None)
    storage, where = storage_for(loc), parse_location(loc)
    data = b"PAR1-not-read-here"
    with ThreadPoolExecutor(8) as pool:
        won = list(pool.map(lambda _: versions.create(storage, where, 2, data), range(8)))
    assert won.count(True) == 1


def test_old_snapshots_are_collected_as_tombstones(storage_root):
    loc = storage_root
    for v in range(8):
        commit(loc, table_of(f"f{v}"), v or None, keep=5)
    assert live_snapshots(loc) == [f"v{v:08d}.parquet" for v in (4, 5, 6, 7, 8)]
    assert snapshot_files(loc) == [f"v{v:08d}.parquet" for v in range(1, 9)]  # 1-3 are empty tombstones
    assert commit(loc, table_of("g"), 8, keep=1) == 9
    assert live_snapshots(loc) == ["v00000009.parquet"]
    # A stale writer that still believes version 2 is current cannot re-create version 3: it is a tombstone.
    with pytest.raises(IndexConflictError):
        commit(loc, table_of("stale"), 2)
    from storage_handler.stats.index import versions
    from storage_handler.storage import parse_location

    assert not versions.create(storage_for(loc), parse_location(loc), 3, b"x")
    assert load(loc).version == 9 and load(loc).table.column("path").to_pylist() == ["g"]


def test_stale_temporary_files_and_old_tombstones_are_deleted(tmp_path):
    loc = str(tmp_path)
    for v in range(3):
        commit(loc, table_of(f"f{v}"), v or None, keep=1)
    snaps = Path(index_dir(loc)) / "snapshots"
    old = time.time() - 2 * 24 * 3600
    os.utime(snaps / "v00000001.parquet", (old, old))  # a tombstone older than a day
    stale = snaps / ".tmp-old"
    stale.write_bytes(b"x")
    os.utime(stale, (time.time() - 7200, time.time() - 7200))
    (snaps / ".tmp-fresh").write_bytes(b"x")  # a writer at work right now
    changed = gc_snapshots(loc, keep=1)
    assert changed == [".tmp-old", "v00000001.parquet"]
    assert snapshot_files(loc) == [".tmp-fresh", "v00000002.parquet", "v00000003.parquet"]
    assert load(loc).version == 3


def test_a_legacy_index_is_read_and_continued(tmp_path):
    """An index written before 0.3 (CURRENT pointer, v<n>-<hex> snapshots, LOCK) keeps working."""
    loc = str(tmp_path)
    write_raw_snapshot(loc, table_of("a"), version=4)
    (Path(index_dir(loc)) / "LOCK").write_text("")
    snap = load(loc)
    assert snap.version == 4 and snap.table.column("path").to_pylist() == ["a"]
    assert commit(loc, table_of("a", "b"), 4) == 5
    assert snapshot_files(loc) == ["v00000005.parquet"]  # legacy files collected
    assert sorted(os.listdir(index_dir(loc))) == ["snapshots"]
    assert load(loc).table.column("path").to_pylist() == ["a", "b"]


def test_unwritable_index_folder_is_a_stats_index_error(tmp_path):
    (tmp_path / "_hsh_index").write_text("a file where the index folder should be")
    with pytest.raises(StatsIndexError, match="cannot write"):
        commit(str(tmp_path), table_of("a"), None)


# ---------------------------------------------------------------- validation on load
def write_raw_snapshot(loc: str, table: pa.Table, version: int = 1) -> Path:
    snaps = Path(index_dir(loc)) / "snapshots"
    snaps.mkdir(parents=True, exist_ok=True)
    name = f"v{version:08d}-{'a' * 32}.parquet"
    pq.write_table(table, snaps / name)
    (Path(index_dir(loc)) / "CURRENT").write_text(
        json.dumps({"format": 1, "version": version, "snapshot": f"snapshots/{name}"})
    )
    return snaps / name


@pytest.mark.parametrize("bad", ["/etc/../passwd", "../../etc/passwd", "dt=1/../../../x", "a\\..\\..\\b", ""])
def test_escaping_paths_are_refused(tmp_path, bad):
    loc = str(tmp_path)
    evil = table_of("ok.parquet", bad)
    with pytest.raises(StatsIndexError, match="outside the table"):
        commit(loc, evil, None)
    write_raw_snapshot(loc, evil)
    with pytest.raises(StatsIndexError, match="outside the table"):
        load(loc)


def test_corrupt_snapshot_is_refused(storage_root):
    from tests.s3 import put_bytes

    loc = storage_root
    commit(loc, table_of("a"), None)
    put_bytes(loc, "_hsh_index/snapshots/v00000001.parquet", b"PAR1 garbage PAR1")
    with pytest.raises(StatsIndexError, match="corrupt"):
        load(loc)


def test_corrupt_legacy_pointer_is_refused(tmp_path):
    loc = str(tmp_path)
    snap_path = write_raw_snapshot(loc, table_of("a"))
    snap = load(loc)
    assert snap.path == str(snap_path)
    pointer = Path(index_dir(loc)) / "CURRENT"
    for body in ["{not json", json.dumps({"format": 1, "version": 1, "snapshot": "../../../etc/passwd"}),
                 json.dumps({"format": 2, "version": 1, "snapshot": "snapshots/x"}),
                 json.dumps({"format": 1, "version": 3, "snapshot": Path(snap.path).relative_to(
                     index_dir(loc)).as_posix()})]:
        pointer.write_text(body)
        with pytest.raises(StatsIndexError, match="corrupt"):
            load(loc)
    pointer.write_text(json.dumps({"format": 1, "version": 1, "snapshot": f"snapshots/v00000001-{'b' * 32}.parquet"}))
    with pytest.raises(StatsIndexError, match="does not exist"):
        load(loc)


def test_wrong_schema_and_duplicates_are_refused(tmp_path):
    loc = str(tmp_path)
    write_raw_snapshot(loc, pa.table({"path": ["a"], "size": [1]}))
    with pytest.raises(StatsIndexError):
        load(loc)
    write_raw_snapshot(loc, table_of("a", "a"))
    with pytest.raises(StatsIndexError, match="twice"):
        load(loc)


# ---------------------------------------------------------------- real processes
CRASHING_WRITER = r"""
import sys
from storage_handler.stats.index import store
from tests.crash_points import install
from tests.stats.index.test_store import table_of

loc, marker, point = sys.argv[1:4]
install(point, marker)
store.commit(loc, table_of("a.parquet", "new.parquet"), store.current_version(loc))
"""


def run_child(code: str, *args: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": REPO}
    return subprocess.Popen([sys.executable, "-c", code, *args], env=env, cwd=REPO)


def wait_for(path: Path, proc: subprocess.Popen, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert proc.poll() is None, f"child exited early with {proc.returncode}"
        assert time.monotonic() < deadline, "child never reached the crash point"
        time.sleep(0.01)


def crash_child_at(tmp_path: Path, loc: str, point: str) -> None:
    marker = tmp_path / f"marker-{point}"
    proc = run_child(CRASHING_WRITER, loc, str(marker), point)
    try:
        wait_for(marker, proc)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL


@pytest.mark.parametrize("point", POINTS)
def test_crash_mid_commit_keeps_the_previous_version(tmp_path, storage_root, point):
    loc = storage_root
    before = table_of("a.parquet")
    commit(loc, before, None)
    crash_child_at(tmp_path, loc, point)
    snap = load(loc)
    assert snap.version == 1 and snap.table.equals(before)
    assert commit(loc, table_of("a.parquet", "b.parquet"), 1) == 2  # nothing of the dead writer is in the way
    assert load(loc).table.column("path").to_pylist() == ["a.parquet", "b.parquet"]
    assert live_snapshots(loc) == ["v00000001.parquet", "v00000002.parquet"]


def test_crash_after_the_commit_point_leaves_the_new_version_current(tmp_path, storage_root):
    loc = storage_root
    for v in range(6):
        commit(loc, table_of(f"f{v}"), v or None)
    crash_child_at(tmp_path, loc, AFTER_COMMIT)  # committed version 7 from base 6... see CRASHING_WRITER
    snap = load(loc)
    assert snap.version == 7 and snap.table.column("path").to_pylist() == ["a.parquet", "new.parquet"]
    assert len(live_snapshots(loc)) == 6  # nothing collected by the dead writer
    assert commit(loc, table_of("c"), 7) == 8
    assert live_snapshots(loc) == [f"v{v:08d}.parquet" for v in range(4, 9)]  # the next commit collects


CONCURRENT_WRITER = r"""
import os, sys, time
import pyarrow as pa
from storage_handler.stats.index import store
from storage_handler.stats import IndexConflictError, commit_with_retry
from tests.stats.index.test_store import table_of

loc, name, count, go = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
while not os.path.exists(go):
    time.sleep(0.001)
conflicts = 0
real_commit = store.commit
def counting_commit(*args, **kw):
    global conflicts
    try:
        return real_commit(*args, **kw)
    except IndexConflictError:
        conflicts += 1
        raise
import storage_handler.stats.refresh as refresh
refresh.commit = counting_commit
for i in range(count):
    def update(snapshot, i=i):
        return table_of(f"{name}-{i:03d}.parquet", base=None if snapshot is None else snapshot.table)
    commit_with_retry(loc, update, attempts=500, base_delay=0.001)
print(conflicts)
"""


def test_two_processes_committing_concurrently_never_lose_an_entry(tmp_path, storage_root):
    loc = storage_root
    go = tmp_path / "go"
    count = 25 if "://" not in loc else 12
    env = {**os.environ, "PYTHONPATH": REPO}
    procs = [
        subprocess.Popen([sys.executable, "-c", CONCURRENT_WRITER, loc, name, str(count), str(go)], env=env,
                         cwd=REPO, stdout=subprocess.PIPE, text=True)
        for name in ("w1", "w2")
    ]
    time.sleep(0.5)  # both import pyarrow first, then start together
    go.touch()
    outputs = [p.communicate(timeout=120)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outputs
    snap = load(loc)
    expected = sorted(f"{n}-{i:03d}.parquet" for n in ("w1", "w2") for i in range(count))
    assert snap.table.column("path").to_pylist() == expected
    assert snap.version == 2 * count  # every commit is exactly one version: no lost or torn update
    print("conflicts retried:", [int(o) for o in outputs])


def test_a_load_by_partition_prefixes_reads_only_their_row_groups(storage_root):
    """Snapshots are sorted by path in row groups, so a query keeping few partitions reads few index rows."""
    from storage_handler.stats.index.store import ROW_GROUP_ROWS

    loc = storage_root
    paths = [f"dt={d:03d}/f{i}.parquet" for d in range(100) for i in range(100)]
    backfill = "/backfill/dt=x/" if "://" not in loc else "s3a://other/backfill/dt=x/"
    outside = [f"{backfill}f.parquet"]
    commit(loc, table_of(*reversed(paths + outside)), None)  # handed over unsorted: sorted on write
    snap = load(loc)
    assert snap.table.column("path").to_pylist() == sorted(paths + outside)
    with storage_for(loc).open_input(snap.path) as source:
        assert pq.ParquetFile(source).metadata.num_row_groups == -(-(len(paths) + 1) // ROW_GROUP_ROWS)
    part = load(loc, ["dt=007/", backfill]).table.column("path").to_pylist()
    assert {f"{backfill}f.parquet", *(f"dt=007/f{i}.parquet" for i in range(100))} <= set(part)
    # local: "/backfill" sorts first, so one row group holds it and dt=000..dt=040; "s3a://" sorts last, so the
    # first and the last row group are read
    last_group = len(paths) + 1 - 2 * ROW_GROUP_ROWS
    assert len(part) == (ROW_GROUP_ROWS if backfill.startswith("/") else ROW_GROUP_ROWS + last_group)
    tail = load(loc, ["dt=099/"]).table.column("path").to_pylist()
    assert len(tail) < ROW_GROUP_ROWS and {f"dt=099/f{i}.parquet" for i in range(100)} <= set(tail)
    assert load(loc, ["zz=1/"]).table.num_rows == 0  # past every row group: nothing read
    assert load(loc, []).table.num_rows == 0
