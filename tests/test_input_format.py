"""list_status plumbing that needs no metastore: scan batches, stats alignment, split packing."""

from __future__ import annotations

import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from storage_handler.input_format import attach_stats, pack_splits, scan_batch
from storage_handler.spark.reader import Split
from storage_handler.stats import DataFile


@given(st.lists(st.integers(0, 300 << 20), max_size=60), st.integers(1, 16))
def test_pack_splits_keeps_every_split_once(sizes: list[int], parallelism: int) -> None:
    splits = [Split(f"f{i}", size, ()) for i, size in enumerate(sizes)]
    groups = pack_splits(splits, parallelism)
    assert sorted(s.path for g in groups for s in g) == sorted(s.path for s in splits)
    assert all(groups)
    for group in groups:
        if len(group) > 1:  # only a single oversized file may exceed the target
            assert sum(s.size + (4 << 20) for s in group) <= 128 << 20


def test_small_files_are_packed_and_parallelism_kept() -> None:
    splits = [Split(f"f{i}", 1000, ()) for i in range(240)]
    groups = pack_splits(splits, parallelism=4)
    assert len(groups) == 8  # 240 x (1000 B + 4 MiB open cost) in bins of at most 128 MiB, as Spark packs


def test_attach_stats_keeps_unknown_and_changed_files_without_stats() -> None:
    files = [DataFile("a", 10, 1, {}), DataFile("b", 20, 2, {}), DataFile("new", 5, 3, {})]
    index = pa.table({
        "path": ["b", "a", "gone"], "size": [20, 99, 1], "modification_time": [2, 1, 1],
        "num_records": pa.array([7, 8, 9], pa.int64()),
    })
    scan, unknown = attach_stats(scan_batch(files), index)
    assert scan.column("num_records").to_pylist() == [None, 7, None]  # a changed size, new unknown
    assert unknown == 2
