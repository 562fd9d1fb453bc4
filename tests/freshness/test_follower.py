"""``hsh follow`` against a real metastore: writes by other engines and by plain file copies reach the index.

Most tests run one poll (``--once``, or :meth:`Follower.poll` in this process, where a test also counts the
footers read); one runs the follower in the background and stops it by its PID; one SIGKILLs it inside an index
commit and checks that a restart converges to what ``hsh index refresh`` makes. Data files are aged by a minute
after they are written (``_age``), so a folder is "racy" (listed again because it changed within 2 s of a poll) only
where a test means it to be.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from metastore.names import parse_table_name
from storage_handler.errors import MetastoreUnavailableError
from storage_handler.freshness.follow_events import Event, FollowOptions
from storage_handler.freshness.follower import Follower
from storage_handler.registration.register import apply_registration, plan_registration
from storage_handler.registration.table_spec import build_partition
from storage_handler.stats import load
from tests import s3
from tests.helpers import run_hsh
from tests.reliability.util import wait_until

REPO = Path(__file__).resolve().parents[2]
CRASHING_HSH = r"""
import sys
from tests.crash_points import install

marker, point, *argv = sys.argv[1:]
install(point, marker)
from storage_handler.cli.main import main
sys.exit(main(argv))
"""


# ---------------------------------------------------------------- data and tables
def ints(values: range | list[int]) -> pa.Table:
    return pa.table({"v": pa.array(list(values), pa.int64())})


def write(path: Path, table: pa.Table) -> Path:
    """As engines write: a hidden temporary file in the folder, then a rename into place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.parent / f".tmp-{uuid.uuid4().hex}"
    pq.write_table(table, temp)
    os.replace(temp, path)
    return path


def age(root: Path, seconds: float = 60.0) -> None:
    """Put every file's and folder's mtime ``seconds`` in the past: nothing under ``root`` is racy any more."""
    when = time.time() - seconds
    for path in [*root.rglob("*"), root]:
        os.utime(path, (when, when), follow_symlinks=False)


def make_table(hms: Any, name: str, root: Path, days: int = 3) -> None:
    """dt=1..days, two files each; file j of day d holds v in [100 d + 10 j, 100 d + 10 j + 5]."""
    for d in range(1, days + 1):
        for j in (0, 1):
            write(root / f"dt={d}" / f"part-{j}.parquet", ints(range(100 * d + 10 * j, 100 * d + 10 * j + 6)))
    age(root)  # before registering: the index records the files as they then are
    apply_registration(hms, plan_registration(hms, parse_table_name(name), str(root)))


def add_partition(hms: Any, name: str, value: str, location: str) -> None:
    tn = parse_table_name(name)
    hms.add_partitions(tn.database, tn.table, [build_partition(hms.get_table(tn.database, tn.table), [value],
                                                               location)])


def rows(location: str) -> set[tuple[str, int]]:
    snapshot = load(location)
    if snapshot is None:
        return set()
    return set(zip(snapshot.table.column("path").to_pylist(), snapshot.table.column("size").to_pylist(),
                   strict=True))


def on_disk(root: Path) -> set[tuple[str, int]]:
    """The visible data files of the table folder's partitions, as index rows name them."""
    return {(p.relative_to(root).as_posix(), p.stat().st_size) for p in root.glob("*/*")
            if p.is_file() and not p.name.startswith((".", "_")) and not p.parent.name.startswith((".", "_"))}


def unique(prefix: str) -> str:
    return f"follow.{prefix}_{uuid.uuid4().hex[:8]}"


@pytest.fixture()
def table(hms: Any, tmp_path: Path) -> tuple[str, Path]:
    name, root = unique("t"), tmp_path / "t"
    make_table(hms, name, root)
    return name, root


# ---------------------------------------------------------------- running the follower
def follow_once(uri: str, home: Path, *args: str) -> list[dict[str, Any]]:
    """``hsh follow ... --once --json`` in a subprocess: its events (it must succeed without a word on stderr)."""
    proc = run_hsh("follow", *args, "--once", "--json", "--metastore", uri, env={"HSH_HOME": str(home)})
    assert proc.returncode == 0 and not proc.stderr.strip(), (proc.returncode, proc.stdout, proc.stderr)
    return [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]


def updates(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in events if e["event"] == "update"]


def in_process(hms: Any, home: Path, *names: str, **options: Any) -> tuple[Follower, list[Event]]:
    """A follower in this process (so a test can look inside it), its events collected."""
    events: list[Event] = []
    follower = Follower(hms, FollowOptions(**options), home / "follow", events.append,
                        tables=[parse_table_name(n) for n in names])
    return follower, events


@pytest.fixture()
def footers_read(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The path of every footer read in this process from now on."""
    from storage_handler.stats.engines.local import LocalEngine

    read: list[str] = []
    real = LocalEngine.read

    def counting(self: Any, job: Any, files: Any, progress: Any = None) -> Any:
        read.extend(f.path for f in files)
        return real(self, job, files, progress)

    monkeypatch.setattr(LocalEngine, "read", counting)
    return read


def popen_follow(uri: str, home: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "storage_handler.cli.main", "follow", *args, "--json",
                             "--metastore", uri], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "HSH_HOME": str(home)}, cwd=REPO)


def stop_by_pid(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)


def wait_for(check: Callable[[], Any], what: str, proc: subprocess.Popen[str] | None = None,
             timeout: float = 90.0) -> Any:
    """Poll ``check`` until truthy (a generous deadline: this waits for a process, it times nothing)."""
    return wait_until(check, what, timeout=timeout, interval=0.05, proc=proc)


# ---------------------------------------------------------------- (a) (b) (c): one poll
def test_a_file_copied_into_a_registered_partition_is_indexed_after_one_poll(
        hms: Any, table: tuple[str, Path], tmp_path: Path, footers_read: list[str]) -> None:
    name, root = table
    follower, events = in_process(hms, tmp_path / "home", name)
    assert follower.poll() == []  # the first poll sweeps the table: the registration indexed everything
    assert footers_read == []
    outside = write(tmp_path / "drop" / "loader.parquet", ints(range(150, 156)))
    shutil.copy(outside, root / "dt=2" / "loader.parquet")  # a loader copying a file: no metastore call at all

    [update] = follower.poll()
    assert footers_read == ["dt=2/loader.parquet"]  # one footer, of the one new file
    assert update.partitions == ("dt=2",) and (update.added, update.changed, update.removed) == (1, 0, 0)
    assert rows(str(root)) == on_disk(root)
    assert update.lag.files == 1 and update.lag.seconds(time.time_ns() // 1_000_000) is not None
    line = next(e for e in events if e.kind == "update").message
    assert name in line and "dt=2" in line and "+1 ~0 -0" in line and "behind by 1 file" in line

    footers_read.clear()  # dt=2 is racy for 2 s (its file is new): listed again, nothing read, nothing committed
    assert follower.poll() == [] and footers_read == []


def test_a_partition_another_client_added_is_indexed(metastore_uri: str, hms: Any, table: tuple[str, Path],
                                                     tmp_path: Path) -> None:
    name, root = table
    home = tmp_path / "home"
    assert updates(follow_once(metastore_uri, home, name)) == []
    write(root / "dt=4" / "part-0.parquet", ints(range(400, 406)))
    write(root / "dt=4" / "part-1.parquet", ints(range(410, 416)))
    add_partition(hms, name, "4", str(root / "dt=4"))  # ALTER TABLE ADD PARTITION from another engine

    [update] = updates(follow_once(metastore_uri, home, name))
    assert update["partitions"] == ["dt=4"] and (update["added"], update["removed"]) == (2, 0)
    assert rows(str(root)) == on_disk(root)
    tn = parse_table_name(name)  # the statistics followed the index
    [part] = hms.get_partitions_by_names(tn.database, tn.table, ["dt=4"])
    assert part.parameters.get("numFiles") == "2" and part.parameters.get("numRows") == "12"


def test_a_dropped_partitions_rows_leave_the_index(metastore_uri: str, hms: Any, table: tuple[str, Path],
                                                   tmp_path: Path) -> None:
    name, root = table
    home = tmp_path / "home"
    follow_once(metastore_uri, home, name)
    tn = parse_table_name(name)
    hms.drop_partitions(tn.database, tn.table, ["dt=1"])  # an external table's partition: its files stay

    [update] = updates(follow_once(metastore_uri, home, name))
    assert update["dropped"] == ["dt=1"] and update["removed"] == 2 and update["partitions"] == []
    assert rows(str(root)) == {r for r in on_disk(root) if not r[0].startswith("dt=1/")}
    assert (root / "dt=1" / "part-0.parquet").exists()
    assert updates(follow_once(metastore_uri, home, name)) == []  # converged: nothing more to do


def test_a_rewrite_in_place_is_caught_by_the_racy_rule_or_by_the_sweep(
        hms: Any, table: tuple[str, Path], tmp_path: Path) -> None:
    """A file rewritten in place (same name, opened and truncated) leaves its folder's stamp as it was. When the
    folder was listed within 2 s of its newest file's mtime (the file may still have been being written), the next
    poll lists it anyway (racy); otherwise the sweep, which lists every folder, finds it."""
    name, root = table
    home = tmp_path / "home"
    blind, _ = in_process(hms, home, name, racy_ms=0)  # no racy rule: only stamps and the sweep
    blind.poll()
    target = write(root / "dt=3" / "new.parquet", ints(range(150, 156)))
    [update] = blind.poll()
    assert update.partitions == ("dt=3",) and update.added == 1

    stamp = os.stat(target.parent).st_mtime_ns
    pq.write_table(ints(range(150, 170)), target)  # in place: the same inode, a new size
    assert os.stat(target.parent).st_mtime_ns == stamp
    assert blind.poll() == []  # the stamp cannot show it...
    racy, _ = in_process(hms, home, name)  # ... the racy rule (2 s, the default) lists dt=3 again
    [update] = racy.poll()
    assert update.partitions == ("dt=3",) and (update.added, update.changed) == (0, 1)
    assert rows(str(root)) == on_disk(root)

    pq.write_table(ints(range(150, 180)), target)
    assert blind.poll() == []
    sweeping, _ = in_process(hms, home, name, racy_ms=0, sweep_seconds=0)
    [update] = sweeping.poll()
    assert update.sweep and update.changed == 1 and update.partitions == ("dt=1", "dt=2", "dt=3")
    assert rows(str(root)) == on_disk(root)


def test_tables_of_a_database_are_found_and_forgotten(hms: Any, tmp_path: Path) -> None:
    database = f"fdisc_{uuid.uuid4().hex[:8]}"
    first, second = f"{database}.one", f"{database}.two"
    make_table(hms, first, tmp_path / "one", days=1)
    events: list[Event] = []
    follower = Follower(hms, FollowOptions(rescan_polls=1), tmp_path / "home" / "follow", events.append,
                        discover=True, databases=[database])
    follower.poll()
    make_table(hms, second, tmp_path / "two", days=1)
    write(tmp_path / "two" / "dt=1" / "late.parquet", ints([7]))
    [update] = follower.poll()
    assert update.table == second and update.added == 1
    hms.drop_table(database, "one")
    follower.poll()
    kinds = [(e.kind, e.table) for e in events if e.kind in ("watch", "forget")]
    assert kinds == [("watch", first), ("watch", second), ("forget", first)]
    assert not (tmp_path / "home" / "follow" / f"{first}.json").exists()
    assert (tmp_path / "home" / "follow" / f"{second}.json").exists()


def test_one_failing_table_does_not_stop_the_others(hms: Any, tmp_path: Path) -> None:
    """An index that cannot be read is that table's incident (one line, backoff), then one "recovered" line."""
    good, bad = unique("good"), unique("bad")
    make_table(hms, good, tmp_path / "good", days=1)
    make_table(hms, bad, tmp_path / "bad", days=1)
    snapshots = tmp_path / "bad" / "_hsh_index" / "snapshots"
    saved = {p: p.read_bytes() for p in snapshots.glob("v*.parquet")}
    for p in saved:
        p.write_bytes(b"not parquet")
    follower, events = in_process(hms, tmp_path / "home", good, bad, interval=0.01, max_backoff=0.01)
    write(tmp_path / "good" / "dt=1" / "new.parquet", ints([1]))
    write(tmp_path / "bad" / "dt=1" / "new.parquet", ints([1]))
    assert [u.table for u in follower.poll()] == [good]
    time.sleep(0.05)
    follower.poll()  # still failing: no second line
    incidents = [e for e in events if e.kind == "incident"]
    assert len(incidents) == 1 and incidents[0].table == bad and "\n" not in incidents[0].message
    for p, data in saved.items():
        p.write_bytes(data)
    time.sleep(0.05)
    [update] = follower.poll()
    assert update.table == bad and update.added == 1
    assert [e.kind for e in events if e.table == bad] == ["incident", "update", "recovered"]


def test_a_row_another_indexer_commits_while_the_follower_lists_is_kept(
        hms: Any, table: tuple[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A write's commit hook indexes a file just after the follower listed its folder: the follower's commit,
    from the older listing, keeps that row (it loaded the index before listing)."""
    from storage_handler.freshness import follower as module
    from storage_handler.freshness.scoped import update_partitions

    name, root = table
    follower, _ = in_process(hms, tmp_path / "home", name)
    follower.poll()
    write(root / "dt=1" / "copied.parquet", ints([1]))
    real = module.list_scope

    def racing(indexed: Any, partitions: Any) -> Any:
        listed = real(indexed, partitions)
        write(root / "dt=1" / "inserted.parquet", ints([2]))  # a handler session's INSERT, indexed at commit
        update_partitions(indexed, partitions)
        return listed

    monkeypatch.setattr(module, "list_scope", racing)
    follower.poll()
    assert rows(str(root)) == on_disk(root)  # both files, whoever indexed them


class FlakyMetastore:
    """The test's metastore client, unreachable while ``down`` is set (as a metastore that went away)."""

    def __init__(self, client: Any) -> None:
        self.client, self.down = client, False

    def __getattr__(self, name: str) -> Any:
        real = getattr(self.client, name)
        if not self.down or not callable(real):
            return real

        def unavailable(*args: Any, **kwargs: Any) -> Any:
            raise MetastoreUnavailableError("lost the connection to the Hive Metastore at thrift://test (reset)")

        return unavailable


def test_the_metastore_going_away_is_one_incident_retried_with_backoff(hms: Any, table: tuple[str, Path],
                                                                        tmp_path: Path) -> None:
    name, root = table
    flaky = FlakyMetastore(hms)
    events: list[Event] = []
    follower = Follower(flaky, FollowOptions(interval=0.01, max_backoff=0.02),  # type: ignore[arg-type]
                        tmp_path / "home" / "follow", events.append, tables=[parse_table_name(name)])
    follower.poll()
    flaky.down = True
    write(root / "dt=1" / "while-down.parquet", ints([5]))
    for _ in range(3):
        assert follower.poll() == []
        time.sleep(0.03)  # past the backoff: the next poll tries again
    assert [(e.kind, e.table) for e in events] == [("incident", None)] and "metastore" in events[0].message
    flaky.down = False
    time.sleep(0.03)
    [update] = follower.poll()
    assert update.added == 1 and [e.kind for e in events] == ["incident", "update", "recovered"]


def test_once_with_a_failing_table_exits_2_with_one_line(metastore_uri: str, table: tuple[str, Path],
                                                         tmp_path: Path) -> None:
    name, root = table
    for snapshot in (root / "_hsh_index" / "snapshots").glob("v*.parquet"):
        snapshot.write_bytes(b"garbage")
    proc = run_hsh("follow", name, "--once", "--metastore", metastore_uri, env={"HSH_HOME": str(tmp_path / "h")})
    assert proc.returncode == 2
    [line] = proc.stderr.strip().splitlines()
    assert line.startswith(f"error: {name}: ") and "Traceback" not in proc.stderr


def test_once_on_a_table_whose_folder_is_gone_changes_nothing(metastore_uri: str, hms: Any, table: tuple[str, Path],
                                                               tmp_path: Path) -> None:
    """An unmounted volume: the poll would commit an empty index on the mount point and publish zero rows."""
    import shutil

    name, root = table
    database, table_name = name.split(".")
    before = [p.parameters.get("numRows") for p in hms.get_partitions(database, table_name)]
    shutil.move(root, tmp_path / "elsewhere")
    proc = run_hsh("follow", name, "--once", "--metastore", metastore_uri, env={"HSH_HOME": str(tmp_path / "h")})
    assert proc.returncode == 2, proc.stderr
    [line] = proc.stderr.strip().splitlines()
    assert line.startswith(f"error: {name}: ") and "does not exist any more" in line, line
    assert not root.exists()
    assert [p.parameters.get("numRows") for p in hms.get_partitions(database, table_name)] == before


# ---------------------------------------------------------------- (d) (g): a follower running in the background
def test_a_background_follower_catches_a_new_file_and_stops_on_sigterm(
        metastore_uri: str, table: tuple[str, Path], tmp_path: Path) -> None:
    name, root = table
    home = tmp_path / "home"
    proc = popen_follow(metastore_uri, home, name, "--interval", "0.2")
    try:
        wait_for((home / "follow" / f"{name}.json").exists, "the first poll", proc)
        write(root / "dt=1" / "spark-insert.parquet", ints(range(120, 130)))
        wait_for(lambda: any(p == "dt=1/spark-insert.parquet" for p, _ in rows(str(root))), "the new file", proc)
        os.kill(proc.pid, signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    finally:
        stop_by_pid(proc)
    assert proc.returncode == 0, err
    events = [json.loads(line) for line in out.splitlines()]
    assert [e["event"] for e in events][0] == "started" and events[-1]["event"] == "stopped"
    [update] = updates(events)
    # folders written within 2 s of a poll (the fixture's) are listed again with it: "racy", not changed
    assert "dt=1" in update["partitions"] and update["added"] == 1 and update["lag_seconds"] is not None


def test_a_second_follower_on_the_same_state_folder_refuses(metastore_uri: str, table: tuple[str, Path],
                                                             tmp_path: Path) -> None:
    name, _root = table
    home = tmp_path / "home"
    proc = popen_follow(metastore_uri, home, name, "--interval", "0.2")
    try:
        lock = home / "follow" / "follow.lock"
        wait_for(lambda: lock.exists() and lock.read_text().strip() == str(proc.pid), "the lock", proc)
        second = run_hsh("follow", name, "--once", "--metastore", metastore_uri, env={"HSH_HOME": str(home)})
    finally:
        stop_by_pid(proc)
    assert second.returncode == 2
    [line] = second.stderr.strip().splitlines()
    assert line.startswith("error:") and "already running" in line and str(proc.pid) in line


# ---------------------------------------------------------------- (e): SIGKILL inside a commit, then a restart
@pytest.mark.parametrize("point", ["before_create", "before_collect"])
def test_a_follower_killed_in_its_commit_converges_on_restart(metastore_uri: str, hms: Any, tmp_path: Path,
                                                              point: str) -> None:
    """Killed before its commit (nothing committed) or just after it (committed, position not saved): the next
    run ends with exactly the index ``hsh index refresh`` makes, and ``hsh index refresh`` then finds nothing."""
    name, root = unique("crash"), tmp_path / "t"
    make_table(hms, name, root)
    home = tmp_path / "home"
    follow_once(metastore_uri, home, name)
    write(root / "dt=1" / "part-5.parquet", ints(range(150, 156)))  # a new file
    write(root / "dt=2" / "part-0.parquet", ints(range(150, 160)))  # rewritten
    (root / "dt=3" / "part-1.parquet").unlink()  # deleted
    write(root / "dt=4" / "part-0.parquet", ints(range(400, 406)))
    add_partition(hms, name, "4", str(root / "dt=4"))
    tn = parse_table_name(name)
    hms.drop_partitions(tn.database, tn.table, ["dt=1"])
    shutil.rmtree(root / "dt=1")
    before = load(str(root))
    assert before is not None

    marker = tmp_path / "marker"
    proc = subprocess.Popen([sys.executable, "-c", CRASHING_HSH, str(marker), point, "follow", name, "--once",
                             "--json", "--metastore", metastore_uri], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=REPO,
                            env={**os.environ, "HSH_HOME": str(home), "PYTHONPATH": str(REPO)})
    try:
        wait_for(marker.exists, f"the follower reaching {point}", proc)
    finally:
        stop_by_pid(proc)
    assert proc.returncode == -signal.SIGKILL
    committed = load(str(root))
    assert committed is not None and (committed.version > before.version) == (point == "before_collect")

    follow_once(metastore_uri, home, name)
    followed = rows(str(root))
    assert followed == on_disk(root)
    [part] = hms.get_partitions_by_names(tn.database, tn.table, ["dt=4"])  # its statistics were published
    assert json.loads(part.parameters["hsh.stats"])["index"] == load(str(root)).version
    refresh = run_hsh("index", "refresh", name, "--json", "--metastore", metastore_uri)
    assert refresh.returncode == 0, refresh.stderr
    done = json.loads(refresh.stdout)
    assert (done["added"], done["changed"], done["removed"]) == ([], [], [])
    assert rows(str(root)) == followed


# ---------------------------------------------------------------- (f): S3
def test_on_s3_a_new_object_a_new_partition_and_a_dropped_one_reach_the_index(
        metastore_uri: str, hms: Any, s3_server: Any, tmp_path: Path) -> None:
    root = f"s3a://{s3.new_bucket('follow')}/t"
    for d in (1, 2, 3):
        s3.put_parquet(root, f"dt={d}/part-0.parquet", ints(range(100 * d, 100 * d + 6)))
    name = unique("s3")
    apply_registration(hms, plan_registration(hms, parse_table_name(name), root))
    home = tmp_path / "home"
    follow_once(metastore_uri, home, name)

    time.sleep(0.2)
    before = len(s3_server.requests())
    assert updates(follow_once(metastore_uri, home, name, "--listing-seconds", "0")) == []
    time.sleep(0.3)
    listings = [path for method, path in s3_server.requests()[before:] if method == "GET" and "list-type" in path]
    assert len(listings) == 1, listings  # one LIST of the table prefix, not one per partition

    s3.put_parquet(root, "dt=2/copied.parquet", ints(range(250, 256)))
    s3.put_parquet(root, "dt=4/part-0.parquet", ints(range(400, 406)))
    add_partition(hms, name, "4", f"{root}/dt=4")
    tn = parse_table_name(name)
    hms.drop_partitions(tn.database, tn.table, ["dt=1"])
    [update] = updates(follow_once(metastore_uri, home, name, "--listing-seconds", "0"))
    assert update["partitions"] == ["dt=2", "dt=4"] and update["dropped"] == ["dt=1"]
    assert (update["added"], update["removed"]) == (2, 1)
    assert {p for p, _ in rows(root)} == {"dt=2/part-0.parquet", "dt=2/copied.parquet", "dt=3/part-0.parquet",
                                          "dt=4/part-0.parquet"}
    # and a query prunes the new data: of dt=2's two files only the copied one can hold v = 252
    proc = run_hsh("scan", name, "--where", "v = 252", "--json", "--metastore", metastore_uri)
    assert proc.returncode == 0, proc.stderr
    scan = json.loads(proc.stdout)
    assert [p.rsplit("/", 2)[-2:] for p in scan["kept_paths"]] == [["dt=2", "copied.parquet"]], scan


# ---------------------------------------------------------------- the command line's own refusals
def test_bad_options_and_unknown_tables_are_one_error_line(metastore_uri: str, tmp_path: Path) -> None:
    env = {"HSH_HOME": str(tmp_path / "home")}
    for args, needle in ((("follow.nope_t", "--once"), "does not exist"),
                         (("a.b", "--all"), "not both"),
                         (("--interval", "0", "--once"), "--interval"),
                         (("nodb_follow_x.*", "--once"), "does not exist"),
                         (("--metastore", "thrift://127.0.0.1:1"), "cannot reach")):  # not retried at start
        proc = run_hsh("follow", *args, "--metastore", metastore_uri, env=env) if "--metastore" not in args \
            else run_hsh("follow", *args, env=env)
        assert proc.returncode == 2, (args, proc.stderr)
        [line] = proc.stderr.strip().splitlines()
        assert line.startswith("error:") and needle in line, (args, line)

