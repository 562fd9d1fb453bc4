"""The query path's cache of decoded index snapshots (``load(..., cached=True)``), on local disk and S3."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from storage_handler.errors import StatsIndexError
from storage_handler.stats import commit, index_dir, load
from storage_handler.stats.index import cache as snapshot_cache
from storage_handler.stats.index.cache import SnapshotCache
from storage_handler.stats.index.store import ROW_GROUP_ROWS
from tests.stats.index.test_store import table_of


def write_raw_snapshot(loc: str, table: pa.Table, row_group_size: int | None = None) -> Path:
    """Version 1 as ``table`` is, bypassing commit's sorting and validation (what another writer might leave)."""
    snaps = Path(index_dir(loc)) / "snapshots"
    snaps.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, snaps / "v00000001.parquet", row_group_size=row_group_size)
    return snaps / "v00000001.parquet"


@pytest.fixture(autouse=True)
def fresh_cache(monkeypatch: pytest.MonkeyPatch) -> SnapshotCache:
    cache = SnapshotCache(64 << 20)
    monkeypatch.setattr(snapshot_cache, "CACHE", cache)
    monkeypatch.setattr("storage_handler.stats.index.store.CACHE", cache)
    return cache


@pytest.fixture()
def reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Row groups (or whole snapshots, as -1) the cache decoded from storage."""
    seen: list[int] = []
    real = pq.ParquetFile

    class Counting(real):  # type: ignore[misc, valid-type]
        def read_row_group(self, i, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
            seen.append(i)
            return super().read_row_group(i, *args, **kwargs)

        def read(self, *args, **kwargs):  # noqa: ANN002, ANN003, ANN202
            seen.append(-1)
            return super().read(*args, **kwargs)

    monkeypatch.setattr(snapshot_cache.pq, "ParquetFile", Counting)
    return seen


def paths_of(snap) -> list[str]:  # noqa: ANN001
    return snap.table.column("path").to_pylist()


def test_a_cached_load_returns_exactly_the_rows_under_the_prefixes_in_order(storage_root, reads) -> None:
    loc = storage_root
    paths = [f"dt={d}/f{i}.parquet" for d in range(300) for i in range(40)]  # 12,000 rows: 3 row groups
    backfill = "/backfill/dt=x/" if "://" not in loc else "s3a://other/backfill/dt=x/"
    commit(loc, table_of(*paths, f"{backfill}f.parquet"), None)
    wanted = ["dt=1/", "dt=10/", "dt=100/", "dt=299/", backfill]  # "dt=1/" < "dt=10" < "dt=100": spread out
    snap = load(loc, wanted, cached=True)
    groups = -(-(len(paths) + 1) // ROW_GROUP_ROWS)
    assert 0 < len(reads) <= groups  # each needed row group decoded once, none twice
    again = load(loc, ["dt=7/"], cached=True)  # another query: its rows come from the decoded groups
    everything = load(loc, cached=True)
    assert len(reads) <= groups and -1 not in reads
    expected = sorted(p for p in [*paths, f"{backfill}f.parquet"] if p.startswith(tuple(wanted)))
    assert paths_of(snap) == expected
    assert paths_of(again) == sorted(p for p in paths if p.startswith("dt=7/"))
    plain = load(loc)
    assert everything.table.equals(plain.table) and everything.version == plain.version == 1
    assert snap.table.equals(plain.table.filter(pa.array([p in set(expected) for p in paths_of(plain)])))
    assert load(loc, [], cached=True).table.num_rows == 0
    assert load(loc, ["zz=1/"], cached=True).table.num_rows == 0


def test_the_next_commit_counts_at_once(storage_root) -> None:
    loc = storage_root
    commit(loc, table_of("dt=1/a.parquet"), None)
    assert paths_of(load(loc, ["dt=1/"], cached=True)) == ["dt=1/a.parquet"]
    commit(loc, table_of("dt=1/a.parquet", "dt=1/b.parquet"), 1)
    snap = load(loc, ["dt=1/"], cached=True)
    assert snap.version == 2 and paths_of(snap) == ["dt=1/a.parquet", "dt=1/b.parquet"]


def test_other_bytes_under_the_same_name_are_not_served_from_the_cache(tmp_path: Path) -> None:
    """The key is the listing entry (size, mtime, ctime), not the name: a snapshot written again in place is
    read again, even within one clock tick (ctime moves on every write)."""
    loc = str(tmp_path)
    snapshot = write_raw_snapshot(loc, table_of("a"))
    assert paths_of(load(loc, cached=True)) == ["a"]
    version = load(loc).version
    body = pa.BufferOutputStream()
    pq.write_table(table_of("a", "b"), body)
    snapshot.write_bytes(body.getvalue().to_pybytes())  # in place: same inode, same name
    os.utime(snapshot, ns=(time.time_ns(), os.stat(snapshot).st_mtime_ns))
    snap = load(loc, cached=True)
    assert snap.version == version and paths_of(snap) == ["a", "b"]


def test_membership_projections_are_cached_apart(storage_root) -> None:
    loc = storage_root
    commit(loc, table_of("a"), None)
    none = load(loc, membership=(), cached=True)
    every = load(loc, cached=True)
    assert none.table.schema == load(loc, membership=()).table.schema
    assert every.table.schema == load(loc).table.schema


def test_row_groups_whose_paths_overlap_are_validated_together(tmp_path: Path) -> None:
    """A snapshot not written by commit (unsorted, a path in two row groups): read whole, duplicates refused."""
    loc = str(tmp_path)
    unsorted = pa.concat_tables([table_of("b", "c"), table_of("a", "b")])
    write_raw_snapshot(loc, unsorted, row_group_size=2)
    with pytest.raises(StatsIndexError, match="twice"):
        load(loc, ["x/"], cached=True)
    write_raw_snapshot(loc, pa.concat_tables([table_of("d/1", "d/2"), table_of("c/1", "d/0")]), row_group_size=2)
    assert {"d/0", "d/1", "d/2"} <= set(paths_of(load(loc, ["d/"], cached=True)))


def test_unsafe_and_corrupt_snapshots_are_refused_as_without_the_cache(storage_root, tmp_path: Path) -> None:
    from tests.s3 import put_bytes

    local = str(tmp_path / "evil")
    write_raw_snapshot(local, table_of("ok.parquet", "../../etc/passwd"))
    with pytest.raises(StatsIndexError, match="outside the table"):
        load(local, cached=True)
    loc = storage_root
    commit(loc, table_of("a"), None)
    put_bytes(loc, "_hsh_index/snapshots/v00000001.parquet", b"PAR1 garbage PAR1")
    with pytest.raises(StatsIndexError, match="corrupt"):
        load(loc, cached=True)


def test_the_cache_stays_within_its_budget(tmp_path: Path) -> None:
    loc = str(tmp_path)
    commit(loc, table_of(*(f"dt={d}/f{i}" for d in range(10) for i in range(1000))), None)
    found = load(loc)
    assert found is not None
    small = SnapshotCache(found.table.nbytes // 2)
    from storage_handler.stats.index import versions
    from storage_handler.storage import parse_location, storage_for

    storage = storage_for(loc)
    current = versions.current(storage, parse_location(loc))
    assert current is not None
    rows = small.rows(storage, current, None, None, lambda t: t)
    assert rows.num_rows == 10_000 and 0 < small._bytes <= small.max_bytes
    off = SnapshotCache(0)
    assert off.rows(storage, current, ["dt=3/"], None, lambda t: t).num_rows == 1000 and off._bytes == 0
