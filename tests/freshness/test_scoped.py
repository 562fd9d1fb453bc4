"""A scoped update equals a full rebuild: after random writes (files added, rewritten, deleted, partitions
created) into a few partitions, updating only those partitions leaves the same index rows as building the index
of the whole table from nothing -- and rows of partitions outside the scope are never read or changed.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from storage_handler.catalog.partitions import Partition
from storage_handler.freshness.scoped import IndexedTable, scope_mask, update_partitions
from storage_handler.stats import list_data_files, load
from storage_handler.stats.columns import MODIFICATION_TIME, NUM_RECORDS, PATH, SIZE, VERSION_TAG
from storage_handler.stats.refresh import refresh_index
from storage_handler.types import parse_hive_type

COLUMNS = (("x", parse_hive_type("bigint")),)
KEYS = ("p",)
ROW = (PATH, SIZE, MODIFICATION_TIME, VERSION_TAG, NUM_RECORDS)

ops = st.lists(st.tuples(st.sampled_from(["add", "rewrite", "delete"]), st.integers(0, 4), st.integers(0, 3)),
               min_size=1, max_size=8)


def _write(path: Path, rows: int) -> None:
    """As engines write: a hidden temporary name, then a rename, so no listing sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp")
    pq.write_table(pa.table({"x": pa.array(range(rows), pa.int64())}), temporary)
    temporary.rename(path)


def _rows(index: pa.Table) -> set[tuple]:
    return set(zip(*(index[c].to_pylist() for c in ROW), strict=True))


def _partition(root: Path, p: int) -> Partition:
    return Partition(f"p={p}", (str(p),), str(root / f"p={p}"))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=ops)
def test_a_scoped_update_equals_a_full_rebuild(tmp_path: Path, ops: list[tuple[str, int, int]]) -> None:
    root = tmp_path / f"t{time.monotonic_ns()}"
    for p in range(3):
        for f in range(2):
            _write(root / f"p={p}" / f"f{f}.parquet", 5 + f)
    table = IndexedTable("db.t", str(root), COLUMNS, KEYS)
    update_partitions(table, [_partition(root, p) for p in range(3)])  # the index as registration leaves it
    before = load(str(root)).table

    touched: set[int] = set()
    for op, p, f in ops:
        path = root / f"p={p}" / f"f{f}.parquet"
        touched.add(p)
        if op == "delete":
            path.unlink(missing_ok=True)
        else:
            _write(path, 3 + f + (7 if op == "rewrite" else 0))
            os.utime(path, ns=(time.time_ns(), time.time_ns() + 1_000_000 * len(touched)))
    update_partitions(table, [_partition(root, p) for p in sorted(touched)])

    after = load(str(root)).table
    rebuilt, _ = refresh_index(str(root), COLUMNS, list_data_files(str(root), list(KEYS)), None)
    assert _rows(after) == _rows(rebuilt)
    untouched = [f"p={p}/" for p in range(5) if p not in touched]
    inside_before = before.filter(scope_mask(before[PATH], untouched))
    inside_after = after.filter(scope_mask(after[PATH], untouched))
    assert inside_before.to_pylist() == inside_after.to_pylist()  # byte for byte the rows it had
    shutil.rmtree(root)


def test_an_unpartitioned_table_is_one_scope_and_an_empty_folder_leaves_no_rows(tmp_path: Path) -> None:
    root = tmp_path / "flat"
    _write(root / "a.parquet", 3)
    table = IndexedTable("db.flat", str(root), COLUMNS)
    first = update_partitions(table, None)
    assert (first.version, first.files, len(first.diff.added)) == (1, 1, 1)
    (root / "a.parquet").unlink()
    _write(root / "b.parquet", 4)
    second = update_partitions(table, None)
    assert load(str(root)).table[PATH].to_pylist() == ["b.parquet"]
    assert (len(second.diff.added), len(second.diff.removed)) == (1, 1)
    assert update_partitions(table, None).version == second.version  # nothing changed: nothing committed


def test_the_index_keeps_its_own_columns_whatever_the_caller_says(tmp_path: Path) -> None:
    root = tmp_path / "shape"
    _write(root / "p=0" / "a.parquet", 3)
    update_partitions(IndexedTable("db.s", str(root), COLUMNS, KEYS), [_partition(root, 0)])
    wider = IndexedTable("db.s", str(root), (*COLUMNS, ("y", parse_hive_type("string"))), KEYS)
    _write(root / "p=1" / "b.parquet", 2)
    update_partitions(wider, [_partition(root, 1)])
    index = load(str(root))
    assert [n for n, _ in index.columns] == ["x"] and index.table.num_rows == 2


def test_an_older_listing_never_drops_rows_another_indexer_committed_after_it(tmp_path: Path) -> None:
    """The race, step by step: a full refresh lists, a write's scoped update commits a new file, then the
    refresh commits from its older listing -- the new row stays (and the other way round)."""
    from storage_handler.stats.refresh import update_index

    root = tmp_path / "race"
    for p in range(2):
        _write(root / f"p={p}" / "a.parquet", 3)
    table = IndexedTable("db.race", str(root), COLUMNS, KEYS)
    update_partitions(table, [_partition(root, 0), _partition(root, 1)])

    before, listing = load(str(root)), list_data_files(str(root), list(KEYS))  # the refresh lists ...
    _write(root / "p=1" / "new.parquet", 4)
    update_partitions(table, [_partition(root, 1)])  # ... a write is indexed at commit ...
    update_index(str(root), COLUMNS, listing, partition_columns=list(KEYS), before=before)  # ... refresh commits
    assert "p=1/new.parquet" in load(str(root)).table[PATH].to_pylist()

    (root / "p=0" / "a.parquet").unlink()  # a deletion is still seen by a listing taken after it
    update_index(str(root), COLUMNS, partition_columns=list(KEYS))
    assert sorted(load(str(root)).table[PATH].to_pylist()) == ["p=1/a.parquet", "p=1/new.parquet"]


def test_writes_indexed_at_commit_survive_concurrent_full_refreshes(storage_root: str) -> None:
    """Threads: writers each add files and index their partition (as the commit hook does), while full refreshes
    run in a loop, on a local disk and on the S3 endpoint (where the commit is a conditional PUT). With nothing
    indexing after the race, every written file has its current row."""
    import threading

    from storage_handler.stats.refresh import update_index
    from tests.s3 import put_parquet

    root = storage_root

    def put(p: int, name: str, rows: int) -> None:
        if root.startswith("s3a://"):  # a PUT is atomic: no listing sees half an object
            put_parquet(root, f"p={p}/{name}", pa.table({"x": pa.array(range(rows), pa.int64())}))
        else:
            _write(Path(root) / f"p={p}" / name, rows)

    def partition(p: int) -> Partition:
        return Partition(f"p={p}", (str(p),), f"{root}/p={p}")

    for p in range(4):
        put(p, "seed.parquet", 2)
    table = IndexedTable("db.stress", root, COLUMNS, KEYS)
    update_partitions(table, [partition(p) for p in range(4)])
    done = threading.Event()
    errors: list[BaseException] = []

    def writer(p: int) -> None:
        try:
            for i in range(6):
                put(p, f"w{i}.parquet", 1 + i)
                update_partitions(table, [partition(p)], attempts=50)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    def refresher() -> None:
        try:
            while not done.is_set():
                update_index(root, COLUMNS, partition_columns=list(KEYS), attempts=50)
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    writers = [threading.Thread(target=writer, args=(p,)) for p in range(4)]
    refreshers = [threading.Thread(target=refresher) for _ in range(2)]
    for t in writers + refreshers:
        t.start()
    for t in writers:
        t.join()
    done.set()
    for t in refreshers:
        t.join()
    assert not errors, errors
    files = list_data_files(root, list(KEYS))
    on_disk = set(zip(files.paths.to_pylist(), map(int, files.sizes), map(int, files.mtimes),
                      files.versions.to_pylist(), strict=True))
    index = load(root).table
    rows = set(zip(*(index[c].to_pylist() for c in ROW[:4]), strict=True))
    assert on_disk <= rows and len(on_disk) == 4 * 7
