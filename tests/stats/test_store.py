"""Snapshots, atomic commits, conflicts, crashes and concurrent writers - with real processes."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import time
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
from storage_handler.stats.footer import ColumnStats
from storage_handler.types import parse_schema_text
from tests.crash_points import POINTS

REPO = str(Path(__file__).resolve().parents[2])
COLUMNS = parse_schema_text("x bigint, s string")


def table_of(*paths: str, base: pa.Table | None = None) -> pa.Table:
    entries = [
        (DataFile(p, 10, 20, {"dt": "1"}), FileStats(5, {"x": ColumnStats(1, 9, 0), "s": ColumnStats("a", "b", 1)}))
        for p in paths
    ]
    new = stats_table(COLUMNS, entries)
    return new if base is None else pa.concat_tables([base, new]).sort_by("path")


def snapshot_files(loc) -> list[str]:
    return sorted(os.listdir(os.path.join(index_dir(str(loc)), "snapshots")))


def test_commit_and_load(tmp_path):
    loc = str(tmp_path)
    assert load(loc) is None and current_version(loc) is None
    assert commit(loc, table_of("a.parquet"), None) == 1
    snap = load(f"file://{loc}")
    assert snap.version == 1 and snap.table.equals(table_of("a.parquet"))
    assert snap.table.schema.metadata == table_of("a.parquet").schema.metadata
    assert snap.path.startswith(os.path.join(loc, "_hsh_index", "snapshots", "v00000001-"))
    assert [str(t) for _, t in snap.columns] == ["bigint", "string"]
    assert commit(loc, table_of("a.parquet", "b.parquet"), 1) == 2
    assert load(loc).table.column("path").to_pylist() == ["a.parquet", "b.parquet"]
    pointer = json.loads((tmp_path / "_hsh_index" / "CURRENT").read_text())
    assert pointer["version"] == 2 and pointer["format"] == 1


def test_conflicts_are_detected(tmp_path):
    loc = str(tmp_path)
    commit(loc, table_of("a"), None)
    with pytest.raises(IndexConflictError) as err:
        commit(loc, table_of("b"), None)
    assert isinstance(err.value, StatsIndexError) and err.value.actual == 1
    commit(loc, table_of("b"), 1)
    with pytest.raises(IndexConflictError):
        commit(loc, table_of("c"), 1)
    assert load(loc).version == 2 and load(loc).table.column("path").to_pylist() == ["b"]
    assert [n for n in snapshot_files(loc) if n.startswith(".tmp")] == []  # loser's temp file cleaned up


def test_old_snapshots_are_collected(tmp_path):
    loc = str(tmp_path)
    for v in range(8):
        commit(loc, table_of(f"f{v}"), v or None, keep=5)
    names = snapshot_files(loc)
    assert [n[:9] for n in names] == [f"v{v:08d}" for v in (4, 5, 6, 7, 8)]
    assert commit(loc, table_of("g"), 8, keep=1) == 9
    assert [n[:9] for n in snapshot_files(loc)] == ["v00000009"]
    # Orphans of crashed commits and stale temp files go; a fresh temp file (a writer at work) stays.
    snaps = Path(index_dir(loc)) / "snapshots"
    (snaps / ("v00000010-" + "0" * 32 + ".parquet")).write_bytes(b"orphan")
    stale = snaps / ".tmp-old.parquet"
    stale.write_bytes(b"x")
    os.utime(stale, (time.time() - 7200, time.time() - 7200))
    (snaps / ".tmp-fresh.parquet").write_bytes(b"x")
    deleted = gc_snapshots(loc, keep=1)
    assert deleted == [".tmp-old.parquet", "v00000010-" + "0" * 32 + ".parquet"]
    assert load(loc).version == 9


def test_lock_is_exclusive(tmp_path):
    loc = str(tmp_path)
    commit(loc, table_of("a"), None)
    fd = os.open(os.path.join(index_dir(loc), "LOCK"), os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        with pytest.raises(StatsIndexError, match="could not lock"):
            commit(loc, table_of("b"), 1, lock_timeout=0.2)
    finally:
        os.close(fd)
    assert commit(loc, table_of("b"), 1) == 2


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


def test_corrupt_snapshot_and_pointer_are_refused(tmp_path):
    loc = str(tmp_path)
    commit(loc, table_of("a"), None)
    snap = load(loc)
    Path(snap.path).write_bytes(b"PAR1 garbage PAR1")
    with pytest.raises(StatsIndexError, match="corrupt"):
        load(loc)
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
from storage_handler.stats import store
from tests.crash_points import install
from tests.stats.test_store import table_of

loc, marker, point = sys.argv[1:4]
install(point, marker)
store.commit(loc, table_of("a.parquet", "new.parquet"), 1)
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


@pytest.mark.parametrize("point", POINTS)
def test_crash_mid_commit_keeps_the_previous_version(tmp_path, point):
    loc = str(tmp_path / "table")
    os.makedirs(loc)
    before = table_of("a.parquet")
    commit(loc, before, None)
    marker = tmp_path / "marker"
    proc = run_child(CRASHING_WRITER, loc, str(marker), point)
    try:
        wait_for(marker, proc)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    snap = load(loc)
    assert snap.version == 1 and snap.table.equals(before)
    assert commit(loc, table_of("a.parquet", "b.parquet"), 1) == 2  # the lock died with the process
    assert load(loc).table.column("path").to_pylist() == ["a.parquet", "b.parquet"]
    finals = [n for n in snapshot_files(loc) if not n.startswith(".")]
    assert len(finals) == 2  # v1 and the new v2; a crashed commit's orphan v2 was collected


CONCURRENT_WRITER = r"""
import os, sys, time
import pyarrow as pa
from storage_handler.stats import IndexConflictError, commit_with_retry, store
from tests.stats.test_store import table_of

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


def test_two_processes_committing_concurrently_never_lose_an_entry(tmp_path):
    loc = str(tmp_path / "table")
    os.makedirs(loc)
    go = tmp_path / "go"
    count = 25
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


def test_a_load_by_partition_prefixes_reads_only_their_row_groups(tmp_path):
    """Snapshots are sorted by path in row groups, so a query keeping few partitions reads few index rows."""
    import pyarrow.parquet as pq

    from storage_handler.stats.store import ROW_GROUP_ROWS

    loc = str(tmp_path)
    paths = [f"dt={d:03d}/f{i}.parquet" for d in range(100) for i in range(100)]
    outside = ["/backfill/dt=x/f.parquet"]
    commit(loc, table_of(*reversed(paths + outside)), None)  # handed over unsorted: sorted on write
    snap = load(loc)
    assert snap.table.column("path").to_pylist() == sorted(paths + outside)
    assert pq.ParquetFile(snap.path).metadata.num_row_groups == -(-(len(paths) + 1) // ROW_GROUP_ROWS)
    part = load(loc, ["dt=007/", "/backfill/dt=x/"]).table.column("path").to_pylist()
    assert {"/backfill/dt=x/f.parquet", *(f"dt=007/f{i}.parquet" for i in range(100))} <= set(part)
    assert len(part) == ROW_GROUP_ROWS  # one row group holds the backfill and dt=000..dt=040
    tail = load(loc, ["dt=099/"]).table.column("path").to_pylist()
    assert len(tail) < ROW_GROUP_ROWS and {f"dt=099/f{i}.parquet" for i in range(100)} <= set(tail)
    assert load(loc, ["dt=1000/"]).table.num_rows == 0  # past every row group: nothing read
    assert load(loc, []).table.num_rows == 0
