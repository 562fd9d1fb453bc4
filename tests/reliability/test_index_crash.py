"""2. Process SIGKILLed in the middle of an index commit (`hsh index refresh` / `hsh sync`)

The child is the real command line, with one function of the index's commit wrapped so that the child stops at a
chosen point of the commit (torn snapshot; snapshot ready but the create-if-absent of the new version not sent;
see ``tests/crash_points.py``) and waits to be killed, on the local disk and on S3. The previous index version must
stay the current one, valid and readable, ``list_status`` must keep working, and the next command must finish the
job.
"""

from __future__ import annotations

import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from metastore.names import parse_table_name
from storage_handler.handler import list_status_for
from storage_handler.registration.register import apply_registration, plan_registration
from storage_handler.stats import index_dir, load
from storage_handler.storage import storage_for
from storage_handler.table_desc import TableDesc
from tests import s3
from tests.crash_points import POINTS
from tests.reliability.util import (
    assert_index_matches_storage,
    hsh,
    ints,
    kill_pid,
    ok_json,
    python_popen,
    read_parquet,
    storage_files,
    wait_until,
)

CRASHING_HSH = r"""
import sys
from tests.crash_points import install

marker, point, *argv = sys.argv[1:]
install(point, marker)
from storage_handler.cli.main import main
sys.exit(main(argv))
"""

WHERE = "v >= 150 and v <= 155"


def make_table(root: str) -> None:
    """dt=1..3, two files each; file j of day d holds v in [100*d + 10*j, 100*d + 10*j + 5]."""
    for d in (1, 2, 3):
        for j in (0, 1):
            base = 100 * d + 10 * j
            s3.put_parquet(root, f"dt={d}/part-{j}.parquet", ints(range(base, base + 6)))


def change_files(root: str) -> None:
    """What the interrupted command should have indexed: a new partition, a new file, a rewritten file."""
    s3.put_parquet(root, "dt=4/part-0.parquet", ints(range(400, 406)))
    s3.put_parquet(root, "dt=1/part-5.parquet", ints(range(150, 156)))
    s3.put_parquet(root, "dt=2/part-0.parquet", ints(range(150, 160)))  # rewritten: now matches WHERE


def new_root(tmp: Path, kind: str) -> str:
    return str(tmp / "t") if kind == "local" else f"s3a://{s3.new_bucket('crash')}/t"


def matching_files(root: str) -> set[str]:
    """Oracle: files holding a row that satisfies WHERE, straight from the data."""
    hits = set()
    for rel in storage_files(root):
        v = read_parquet(root, rel).column("v")
        if pc.any(pc.and_(pc.greater_equal(v, 150), pc.less_equal(v, 155))).as_py():
            hits.add(rel)
    return hits


def register(hms: Any, name: str, root: str) -> Any:
    apply_registration(hms, plan_registration(hms, parse_table_name(name), str(root)))
    db, table = name.split(".")
    return hms.get_table(db, table)


def crash(point: str, marker: Path, *argv: str) -> subprocess.Popen[str]:
    """Run ``hsh argv`` in a child that stops at ``point`` of its index commit, and SIGKILL it there."""
    proc = python_popen(CRASHING_HSH, str(marker), point, *argv)
    try:
        wait_until(marker.exists, f"the child reaching {point}", timeout=120, interval=0.01, proc=proc)
    finally:
        kill_pid(proc)
    assert proc.returncode == -9
    return proc


def snapshot_names(location: str) -> list[str]:
    listing = storage_for(location).list_dir(f"{index_dir(location)}/snapshots")
    return sorted(f.name for f in listing.files) if listing else []


def assert_previous_index_intact(location: str, before: Any, root: str) -> None:
    snap = load(location)
    assert snap is not None and snap.version == before.version
    assert snap.table.equals(before.table)
    assert [n for n in snapshot_names(location) if n.startswith("v")] == [f"v{before.version:08d}.parquet"]
    with storage_for(location).open_input(snap.path) as source:  # a complete file, not a torn one
        assert pq.read_metadata(source).num_rows == before.table.num_rows
    assert set(snap.table.column("path").to_pylist()) <= set(storage_files(root))


def assert_list_status_correct(desc: TableDesc, root: str) -> None:
    result, _ = list_status_for(desc, WHERE)
    kept = {f.path for f in result.files}
    assert matching_files(root) <= kept, "a matching file was pruned"
    assert kept <= set(storage_files(root))
    assert "dt=1/part-5.parquet" in kept and "dt=2/part-0.parquet" in kept  # unknown / changed: kept


def refresh_crash(metastore_uri: str, tmp: Path, point: str, kind: str) -> None:
    """One table, one `hsh index refresh` SIGKILLed at ``point``, then every check (raises AssertionError)."""
    from metastore.client import MetastoreClient

    root = new_root(tmp, kind)
    make_table(root)
    name = f"crash.refresh_{point}_{kind}"
    db, tn = name.split(".")
    with MetastoreClient(metastore_uri) as hms:
        table = register(hms, name, root)
        location = table.sd.location
        before = load(location)
        assert before is not None and before.version == 1
        change_files(root)

        crash(point, tmp / "marker", "index", "refresh", name, "--json", "--metastore", metastore_uri)

        assert_previous_index_intact(location, before, root)
        assert hms.get_table(db, tn).parameters["hsh.index.version"] == "1"
        assert_list_status_correct(TableDesc.from_hms(hms.get_table(db, tn), hms.uri), root)
        scan = ok_json(hsh("scan", name, "--where", WHERE, "--json", "--metastore", metastore_uri))
        # dt=4 was written but never registered: not part of the table (the index may still describe it)
        registered = [f for f in storage_files(root) if not f.startswith("dt=4/")]
        assert scan["index_version"] == 1 and scan["files_total"] == len(registered)

        again = ok_json(hsh("index", "refresh", name, "--json", "--metastore", metastore_uri))
        assert again["index_version"] == 2
        assert again["added"] == ["dt=1/part-5.parquet", "dt=4/part-0.parquet"]
        assert again["changed"] == ["dt=2/part-0.parquet"]
        snap = assert_index_matches_storage(location, root)
        assert snap.version == 2 and hms.get_table(db, tn).parameters["hsh.index.version"] == "2"
        finals = [n for n in snapshot_names(location) if not n.startswith(".")]
        assert finals == ["v00000001.parquet", "v00000002.parquet"]  # nothing of the dead writer in the way
        assert_list_status_correct(TableDesc.from_hms(hms.get_table(db, tn), hms.uri), root)


CASES = [(point, kind) for kind in ("local", "s3") for point in POINTS]


@pytest.fixture(scope="module")
def refresh_crashes(tmp_path_factory: pytest.TempPathFactory, metastore_uri: str,
                    s3_server: Any) -> dict[tuple[str, str], BaseException | None]:
    """Every crash point on the local disk and on S3, each on its own table, side by side (the re-run may wait for
    the dead child's table lock to be found stale, which is mostly waiting)."""
    def run(case: tuple[str, str]) -> BaseException | None:
        point, kind = case
        try:
            refresh_crash(metastore_uri, tmp_path_factory.mktemp(f"crash_{point}_{kind}"), point, kind)
        except BaseException as e:  # noqa: BLE001 - re-raised by the test of that point
            return e
        return None

    with ThreadPoolExecutor(len(CASES)) as pool:
        return dict(zip(CASES, pool.map(run, CASES), strict=True))


@pytest.mark.parametrize("point, kind", CASES, ids=[f"{p}-{k}" for p, k in CASES])
def test_index_refresh_killed_mid_commit(refresh_crashes: dict[tuple[str, str], BaseException | None], point: str,
                                         kind: str) -> None:
    """`hsh index refresh` SIGKILLed mid-commit, on the local disk and on S3: the previous version stays current and readable, list_status stays right, the next refresh commits the next version."""
    error = refresh_crashes[(point, kind)]
    if error is not None:
        raise error


# ---------------------------------------------------------------- the same crash inside `hsh sync`
def test_sync_killed_mid_commit_keeps_the_previous_index(hms, metastore_uri: str, tmp_path: Path) -> None:
    """`hsh sync` (holding the table lock) SIGKILLed between preparing its snapshot and creating the new version: previous index version intact and readable, HMS untouched, list_status right. (Re-running sync: see scenario 1's lock test.)"""
    root = str(tmp_path / "t")
    make_table(root)
    table = register(hms, "crash.sync", root)
    before = load(table.sd.location)
    partitions = hms.get_partition_names("crash", "sync")
    change_files(root)
    crash("before_create", tmp_path / "marker", "sync", "crash.sync", "--json", "--metastore", metastore_uri)

    assert_previous_index_intact(table.sd.location, before, root)
    assert hms.get_partition_names("crash", "sync") == partitions
    assert hms.get_table("crash", "sync").parameters["hsh.index.version"] == "1"
    assert_list_status_correct(TableDesc.from_hms(hms.get_table("crash", "sync"), hms.uri), root)
