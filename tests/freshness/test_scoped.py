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
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"x": pa.array(range(rows), pa.int64())}), path)


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
