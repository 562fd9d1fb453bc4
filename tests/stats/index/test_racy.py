"""Rows of files changed in the last tick of a coarse file system are recorded untrusted (``index/racy.py``)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from storage_handler.stats.index.racy import RACY_MS, trusted_versions

NOW = 1_795_880_716_500


@pytest.mark.parametrize(("mtime", "tag", "trusted"), [
    (NOW - 123, str((NOW - 123) * 10**6 + 456), True),  # sub-second times: a fine-grained file system
    (1_795_880_716_000, "1795880716000000000", False),  # whole seconds, changed just now: racy
    (1_795_880_716_000 - RACY_MS, str((1_795_880_716_000 - RACY_MS) * 10**6), True),  # whole, but long enough ago
    (1_795_880_716_000, '"9b2cf535f27731c974343645a3985328"', True),  # an object store's ETag
    (1_795_880_716_000, None, None),  # no tag stays none
])
def test_whole_second_times_of_a_file_changed_just_now_are_not_trusted(mtime: int, tag: str | None,
                                                                       trusted: bool | None) -> None:
    got = trusted_versions(np.array([mtime], np.int64), pa.array([tag], pa.string()), NOW)[0].as_py()
    assert got == (tag if trusted else None)


class _Coarse:
    """An ``os.stat`` result with whole-second times, as ext3, HFS+ or many NFS / FUSE mounts report them."""

    def __init__(self, st: os.stat_result) -> None:
        self._st = st

    def __getattr__(self, name: str) -> object:
        return getattr(self._st, name)

    @property
    def st_mtime_ns(self) -> int:
        return self._st.st_mtime_ns // 10**9 * 10**9

    @property
    def st_ctime_ns(self) -> int:
        return self._st.st_ctime_ns // 10**9 * 10**9


def test_a_same_size_rewrite_in_the_same_second_is_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """On a coarse file system a file indexed at once (index on write, the follower) and rewritten in place with the
    same size in the same second kept size, times and tag: its old row pruned the file now holding x = 8."""
    from storage_handler.catalog import listing
    from storage_handler.freshness.scoped import IndexedTable, update_partitions
    from storage_handler.handler import list_status_for
    from storage_handler.storage import local
    from storage_handler.table_desc import TableDesc
    from storage_handler.types import parse_hive_type

    assert local._LIST_BY_FD  # the listing stats each entry with os.stat(name, dir_fd=...)
    real_stat = os.stat
    monkeypatch.setattr(local.os, "stat", lambda *a, **k: _Coarse(real_stat(*a, **k)))
    monkeypatch.setattr(listing, "native_lister", lambda: None)
    columns = (("x", parse_hive_type("bigint")),)
    table, data = tmp_path / "t", tmp_path / "t" / "p.parquet"
    table.mkdir()
    while time.time() % 1 > 0.3:  # start early in a second: all that follows fits in it
        time.sleep(0.02)
    pq.write_table(pa.table({"x": pa.array([1, 2, 3], pa.int64())}), data)
    update_partitions(IndexedTable("db.t", str(table), columns), None)
    pq.write_table(pa.table({"x": pa.array([7, 8, 9], pa.int64())}), data)
    result, _ = list_status_for(TableDesc("db.t", str(table), columns), "x = 8")
    assert [f.path for f in result.files] == ["p.parquet"]
