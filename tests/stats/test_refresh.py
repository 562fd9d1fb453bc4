"""Incremental refresh: only new or changed files have their footer read; conflicts are retried."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest

from storage_handler.stats import (
    DataFile,
    FileDiff,
    IndexConflictError,
    build_index,
    commit,
    commit_with_retry,
    diff_files,
    list_data_files,
    load,
    refresh_index,
    update_index,
)
from storage_handler.types import parse_schema_text
from tests.stats.util import write

COLUMNS = parse_schema_text("x bigint")


def rows(table: pa.Table) -> dict[str, dict]:
    return {r["path"]: r for r in table.to_pylist()}


def test_update_index_reads_only_what_changed(tmp_path):
    loc = str(tmp_path)
    write(loc, "dt=1/a.parquet", pa.table({"x": [1, 2]}))
    write(loc, "dt=1/b.parquet", pa.table({"x": [3]}))
    write(loc, "dt=2/c.parquet", pa.table({"x": [4]}))
    reads: list[int] = []

    def progress(done: int, total: int) -> None:
        reads.append(total)

    version, diff = update_index(loc, COLUMNS, progress=progress)
    assert version == 1 and diff.added == ("dt=1/a.parquet", "dt=1/b.parquet", "dt=2/c.parquet")
    assert set(reads) == {3}

    reads.clear()
    assert update_index(loc, COLUMNS, progress=progress) == (1, FileDiff())  # nothing changed: no new version
    assert reads == []

    write(loc, "dt=2/d.parquet", pa.table({"x": [10, 11]}))  # added
    write(loc, "dt=1/b.parquet", pa.table({"x": [30, 31, 32]}))  # rewritten: size differs
    os.unlink(os.path.join(loc, "dt=2/c.parquet"))  # removed
    a = os.path.join(loc, "dt=1/a.parquet")
    os.utime(a, ns=(os.stat(a).st_atime_ns, os.stat(a).st_mtime_ns + 5_000_000))  # touched: mtime differs
    version, diff = update_index(loc, COLUMNS, progress=progress)
    assert version == 2
    assert diff == FileDiff(added=("dt=2/d.parquet",), changed=("dt=1/a.parquet", "dt=1/b.parquet"),
                            removed=("dt=2/c.parquet",))
    assert set(reads) == {3}
    index = rows(load(loc).table)
    assert list(index) == ["dt=1/a.parquet", "dt=1/b.parquet", "dt=2/d.parquet"]
    assert index["dt=1/b.parquet"]["max_values"]["x"] == 32 and index["dt=1/b.parquet"]["num_records"] == 3
    assert index["dt=2/d.parquet"]["partition_values"] == [("dt", "2")]
    fresh = build_index(loc, COLUMNS, list_data_files(loc))
    assert load(loc).table.equals(fresh)  # incremental result == full rebuild


def test_unreadable_files_are_retried_without_new_versions(tmp_path):
    loc = str(tmp_path)
    write(loc, "a.parquet", pa.table({"x": [1]}))
    (tmp_path / "bad.parquet").write_bytes(b"nope")
    assert update_index(loc, COLUMNS)[0] == 1
    version, diff = update_index(loc, COLUMNS)
    assert version == 1 and diff.retried == ("bad.parquet",)
    write(loc, "bad.parquet", pa.table({"x": [7, 7, 7, 7]}))  # repaired in place
    version, _ = update_index(loc, COLUMNS)
    assert version == 2 and rows(load(loc).table)["bad.parquet"]["min_values"]["x"] == 7


def test_column_change_rebuilds_every_row(tmp_path):
    loc = str(tmp_path)
    write(loc, "a.parquet", pa.table({"x": [1], "y": ["q"]}))
    update_index(loc, COLUMNS)
    version, diff = update_index(loc, parse_schema_text("x bigint, y string"))
    assert version == 2 and diff.full_rebuild and not diff.added
    assert rows(load(loc).table)["a.parquet"]["min_values"] == {"x": 1, "y": "q"}


def test_partition_value_change_counts_as_changed(tmp_path):
    loc = str(tmp_path)
    write(loc, "a.parquet", pa.table({"x": [1]}))
    first = build_index(loc, COLUMNS, list_data_files(loc))
    f = list_data_files(loc)[0]
    table, diff = refresh_index(loc, COLUMNS, [DataFile(f.path, f.size, f.mtime_ms, {"p": None})], first)
    assert diff.changed == ("a.parquet",)
    assert table.column("partition_values").to_pylist() == [[("p", None)]]


def test_diff_files_without_previous():
    diff, kept = diff_files(None, [DataFile("b", 1, 1, {}), DataFile("a", 1, 1, {})])
    assert diff == FileDiff(added=("a", "b")) and kept == []


def test_commit_with_retry_reapplies_on_the_winner(tmp_path):
    loc = str(tmp_path)
    write(loc, "a.parquet", pa.table({"x": [1]}))
    write(loc, "b.parquet", pa.table({"x": [2]}))
    files = list_data_files(loc)
    commit(loc, build_index(loc, COLUMNS, files[:1]), None)
    calls: list[int | None] = []

    def update(snapshot):
        calls.append(snapshot.version)
        if len(calls) == 1:  # another writer commits while we prepare
            commit(loc, refresh_index(loc, COLUMNS, files[:1], snapshot)[0], snapshot.version)
        return refresh_index(loc, COLUMNS, files, snapshot)[0]

    assert commit_with_retry(loc, update) == 3
    assert calls == [1, 2]
    assert load(loc).table.column("path").to_pylist() == ["a.parquet", "b.parquet"]


def test_commit_with_retry_gives_up(tmp_path):
    loc = str(tmp_path)
    commit(loc, build_index(loc, COLUMNS, []), None)

    def always_beaten(snapshot):
        commit(loc, snapshot.table, snapshot.version)
        return snapshot.table

    with pytest.raises(IndexConflictError):
        commit_with_retry(loc, always_beaten, attempts=3, base_delay=0.0)
    assert commit_with_retry(loc, lambda s: None) == load(loc).version


class CountingEngine:
    """A local engine that records which files it was asked to read."""

    name = "counting"

    def __init__(self) -> None:
        from storage_handler.stats import LocalEngine

        self.local = LocalEngine(max_workers=1)
        self.asked: list[str] = []

    def read(self, job, files, progress=None):
        self.asked += [f.path for f in files]
        return self.local.read(job, files, progress)


def test_a_seed_stands_for_the_files_it_covers_and_only_those(tmp_path):
    """Registration's seed rows are used as they are when they cover every file, in order (no footer read);
    a file the seed lacks, or whose seed row went stale, is still read."""
    loc = str(tmp_path)
    for name, xs in (("dt=1/a.parquet", [1]), ("dt=1/b.parquet", [2, 3]), ("dt=2/c.parquet", [4])):
        write(loc, name, pa.table({"x": xs}))
    files = list_data_files(loc, ["dt"])
    seed = build_index(loc, COLUMNS, files)

    engine = CountingEngine()
    whole, _ = refresh_index(loc, COLUMNS, files, None, seed=seed, engine=engine)
    assert engine.asked == [] and whole.equals(seed, check_metadata=True)

    partial_seed = build_index(loc, COLUMNS, [f for f in files if f.path != "dt=1/b.parquet"])
    engine = CountingEngine()
    table, _ = refresh_index(loc, COLUMNS, files, None, seed=partial_seed, engine=engine)
    assert engine.asked == ["dt=1/b.parquet"] and table.equals(seed, check_metadata=True)

    stale = [f._replace(size=f.size + 1) if f.path == "dt=2/c.parquet" else f for f in files]
    engine = CountingEngine()
    refresh_index(loc, COLUMNS, stale, None, seed=seed, engine=engine)
    assert engine.asked == ["dt=2/c.parquet"]


def test_diff_compares_partition_values_and_version_tags(tmp_path):
    """Vectorized comparison: a NULL partition value differs from the text 'null', a missing version tag is never
    trusted, a failed footer is retried, an index path nobody listed is removed."""
    loc = str(tmp_path)
    write(loc, "p=1/a.parquet", pa.table({"x": [1]}))
    write(loc, "p=1/b.parquet", pa.table({"x": [2]}))
    files = list_data_files(loc, ["p"])
    index = build_index(loc, COLUMNS, files)
    a, b = files
    same, kept = diff_files(index, files)
    assert same == FileDiff() and kept == [0, 1]
    listed = [a._replace(partition_values={"p": None}), b._replace(version=None),
              DataFile("p=2/c.parquet", 1, 1, {"p": "2"}, "t")]
    diff, kept = diff_files(index, listed)
    assert diff == FileDiff(added=("p=2/c.parquet",), changed=("p=1/a.parquet", "p=1/b.parquet")) and kept == []
    diff, _ = diff_files(index, [a])
    assert diff.removed == ("p=1/b.parquet",)
    failed = index.set_column(index.schema.get_field_index("stats_error"), "stats_error",
                              pa.array(["boom", None], pa.string()))
    diff, kept = diff_files(failed, files)
    assert diff.retried == ("p=1/a.parquet",) and kept == [1]


@pytest.mark.parametrize("membership", [False, True])
def test_an_index_built_under_older_footer_rules_is_rebuilt_whole(tmp_path, membership):
    """An index recorded without the rules' version trusted bounds the current rules do not (convert.py): its
    next refresh reads every footer again, whatever else it records (bloom filters included)."""
    import json

    from storage_handler.stats.index.file_stats import StatsOptions
    from storage_handler.stats.index.layout import OPTIONS_KEY, options_of
    from storage_handler.stats.membership.spec import MembershipSpec

    loc = str(tmp_path)
    write(loc, "a.parquet", pa.table({"x": [1], "y": ["q"]}))
    options = StatsOptions(membership=MembershipSpec(bloom_columns=("x",))) if membership else StatsOptions()
    first = build_index(loc, COLUMNS, list_data_files(loc), options=options)
    meta = dict(first.schema.metadata)
    assert json.loads(meta[OPTIONS_KEY])["rules"] == StatsOptions().rules
    meta[OPTIONS_KEY] = json.dumps({"scan_float_columns": False}).encode()  # as written before the version
    old = first.replace_schema_metadata(meta)
    assert options_of(old.schema).rules == 1
    table, diff = refresh_index(loc, COLUMNS, list_data_files(loc), old, options=options)
    assert diff.full_rebuild and options_of(table.schema).rules == StatsOptions().rules
    assert not refresh_index(loc, COLUMNS, list_data_files(loc), table, options=options)[1].full_rebuild
