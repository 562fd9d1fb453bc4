"""list_status plumbing that needs no metastore: scan batches, stats alignment, split packing."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from storage_handler.handler import list_status_for
from storage_handler.input_format import attach_stats, pack_splits, scan_batch
from storage_handler.split import Split
from storage_handler.stats import DataFile
from storage_handler.table_desc import TableDesc
from storage_handler.types import parse_hive_type


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
    files = [DataFile("a", 10, 1, {}, "5"), DataFile("b", 20, 2, {}, "6"), DataFile("new", 5, 3, {}, "7"),
             DataFile("c", 30, 4, {}, "8"), DataFile("d", 40, 5, {}, "9"), DataFile("e", 50, 6, {}, None)]
    index = pa.table({
        "path": ["b", "a", "gone", "c", "d", "e"], "size": [20, 99, 1, 30, 40, 50],
        "modification_time": [2, 1, 1, 4, 5, 6], "version_tag": pa.array(["6", "5", "1", "1", None, "9"], pa.string()),
        "num_records": pa.array([7, 8, 9, 10, 11, 12], pa.int64()),
    })
    scan, unknown = attach_stats(scan_batch(files), index)
    # a: size changed; new: unknown; c: rewritten keeping size and mtime (version tag moved); d: index has no tag;
    # e: the listing has no tag. Only b is trusted.
    assert scan.column("num_records").to_pylist() == [None, 7, None, None, None, None]
    assert unknown == 5


_FILE = st.tuples(st.integers(0, 3), st.integers(0, 3), st.sampled_from(["t1", "t2", None]))


@given(st.dictionaries(st.sampled_from("abcdefgh"), _FILE, max_size=8),
       st.dictionaries(st.sampled_from("abcdefgh"), _FILE, max_size=8), st.booleans())
def test_attach_stats_trusts_exactly_the_unchanged_files(listed: dict[str, tuple[int, int, str | None]],
                                                         indexed: dict[str, tuple[int, int, str | None]],
                                                         same_files: bool) -> None:
    """Against a row-by-row reading: a file gets its index row's statistics only when the index has a row for
    its path with the same size, modification time and (non-null) version tag -- whether or not the index holds
    exactly the listed files in their order (the case that takes no row, :func:`attach_index`)."""
    if same_files:  # the usual case: the index names exactly the listed files, most of them unchanged
        indexed = {p: indexed.get(p, f) for p, f in listed.items()}
    files = [DataFile(p, size, mtime, {}, tag) for p, (size, mtime, tag) in sorted(listed.items())]
    paths = sorted(indexed)
    index = pa.table({
        "path": pa.array(paths, pa.string()), "size": pa.array([indexed[p][0] for p in paths], pa.int64()),
        "modification_time": pa.array([indexed[p][1] for p in paths], pa.int64()),
        "version_tag": pa.array([indexed[p][2] for p in paths], pa.string()),
        "num_records": pa.array(range(100, 100 + len(paths)), pa.int64()),
    })
    scan, unknown = attach_stats(scan_batch(files), index)
    expected = [100 + paths.index(f.path) if f.path in indexed and f.version is not None
                and indexed[f.path] == (f.size, f.mtime_ms, f.version) else None for f in files]
    if not index.num_rows:
        assert "num_records" not in scan.column_names and unknown == len(files)
        return
    assert scan.column("num_records").to_pylist() == expected
    assert unknown == expected.count(None)


def test_a_rewrite_keeping_size_and_mtime_is_not_trusted(tmp_path: Path) -> None:
    """`cp -p` / `rsync -t` of other content over an indexed file: same size, same mtime, new rows.

    The index still holds the old file's bounds; trusting them would skip a file that now matches.
    """
    import pyarrow.parquet as pq

    from storage_handler.stats import list_data_files, update_index

    table = tmp_path / "t"
    table.mkdir()
    target = table / "part-0.parquet"
    pq.write_table(pa.table({"x": pa.array([1, 2, 3], pa.int64())}), target)
    columns = [("x", parse_hive_type("bigint"))]
    update_index(str(table), columns)
    before = os.stat(target)
    replacement = tmp_path / "other.parquet"
    pq.write_table(pa.table({"x": pa.array([7, 8, 9], pa.int64())}), replacement)
    assert os.stat(replacement).st_size == before.st_size  # same shape of data: same size
    os.replace(replacement, target)
    os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))  # what cp -p / rsync -t do
    [listed] = list_data_files(str(table))
    assert (listed.size, listed.mtime_ms) == (before.st_size, before.st_mtime_ns // 1_000_000)

    result, _ = list_status_for(TableDesc("db.t", str(table), tuple(columns)), "x = 8")
    assert [f.path for f in result.files] == ["part-0.parquet"], result.metrics
    assert result.metrics.files_without_stats == 1
    _version, diff = update_index(str(table), columns)
    assert diff.changed == ("part-0.parquet",)
    result, _ = list_status_for(TableDesc("db.t", str(table), tuple(columns)), "x = 8")
    assert [f.path for f in result.files] == ["part-0.parquet"] and result.metrics.files_without_stats == 0


def test_an_index_without_change_times_is_used_only_after_a_refresh(tmp_path: Path, caplog) -> None:
    """An index written before change times were recorded: readable, its rows unverifiable until refreshed."""
    import pyarrow.parquet as pq

    from storage_handler.stats import load, update_index

    table = tmp_path / "t"
    table.mkdir()
    pq.write_table(pa.table({"x": pa.array([1, 2, 3], pa.int64())}), table / "part-0.parquet")
    columns = [("x", parse_hive_type("bigint"))]
    update_index(str(table), columns)
    snapshot = load(str(table))
    assert snapshot is not None
    old = snapshot.table.drop_columns(["version_tag"])
    pq.write_table(old, snapshot.path)  # the same snapshot as an older release wrote it (no change times)
    reloaded = load(str(table))
    assert reloaded is not None and reloaded.table.column("version_tag").null_count == 1
    assert "prunes nothing until `hsh index refresh`" in caplog.text  # the user is told what to run
    desc = TableDesc("db.t", str(table), tuple(columns))
    result, _ = list_status_for(desc, "x = 8")
    assert len(result.files) == 1 and result.metrics.files_without_stats == 1  # kept: nothing proves it unchanged
    _version, diff = update_index(str(table), columns)
    assert diff.changed == ("part-0.parquet",)
    result, _ = list_status_for(desc, "x = 8")
    assert result.files == () and result.metrics.files_without_stats == 0
