"""Property: whatever other writers do to a local table between polls -- files added, rewritten (by rename, as
engines write), deleted or copied with their mtime kept (``cp -p``), partitions added by another client or dropped
(their files kept or deleted) -- after one poll the follower's index is exactly what a full refresh of the
registered partitions makes, and the poll read footers only of files written since the last one.

Every path an operation touches is aged to a time of its own a minute or more in the past, so no folder is
"racy": which folders are listed is decided by their stamps alone (the racy rule and the sweep have tests of their
own in ``test_follower.py``).
"""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from metastore.names import parse_table_name
from storage_handler.catalog.listing import list_partition_files
from storage_handler.catalog.metastore_source import MetastorePartitions
from storage_handler.freshness.follow_events import FollowOptions
from storage_handler.freshness.follower import Follower
from storage_handler.registration.register import apply_registration, plan_registration
from storage_handler.registration.table_spec import build_partition
from storage_handler.stats import load
from storage_handler.stats.index.layout import options_of
from storage_handler.stats.refresh import refresh_index
from tests.helpers import examples

KEYS = range(4)
ops = st.lists(st.one_of(
    st.tuples(st.just("add"), st.sampled_from(KEYS), st.integers(0, 999)),
    st.tuples(st.just("rewrite"), st.sampled_from(KEYS), st.integers(0, 5), st.integers(0, 999)),
    st.tuples(st.just("delete"), st.sampled_from(KEYS), st.integers(0, 5)),
    st.tuples(st.just("copy"), st.sampled_from(KEYS), st.sampled_from(KEYS), st.integers(0, 5)),
    st.tuples(st.just("add_partition"), st.sampled_from(KEYS)),
    st.tuples(st.just("drop_partition"), st.sampled_from(KEYS), st.booleans()),
    st.tuples(st.just("poll")),
), min_size=1, max_size=10)


class Model:
    """A registered table under a temporary folder, and what the test did to it since the last poll."""

    def __init__(self, hms: Any, base: Path) -> None:
        self.hms, self.root = hms, base / "t"
        self.name = parse_table_name(f"followprop.t_{uuid.uuid4().hex[:10]}")
        self.clock = itertools.count(1)
        self.touched: set[str] = set()  # files written since the last poll: the only footers it may read
        for k in (0, 1):
            self.write(k, f"f{k}.parquet", k)
        apply_registration(hms, plan_registration(hms, self.name, str(self.root)))
        self.touched.clear()

    def folder(self, k: int) -> Path:
        return self.root / f"p={k}"

    def registered(self) -> set[int]:
        return {int(n.split("=")[1]) for n in self.hms.get_partition_names(self.name.database, self.name.table)}

    def files(self, k: int) -> list[Path]:
        folder = self.folder(k)
        return sorted(folder.glob("*.parquet")) if folder.is_dir() else []

    def aged(self, *paths: Path) -> None:
        """A time of its own, in the past, for each path: stamps then differ by the mtime alone."""
        for path in paths:
            when = time.time() - 60 - next(self.clock)
            os.utime(path, (when, when))

    def write(self, k: int, name: str, value: int) -> None:
        path = self.folder(k) / name
        path.parent.mkdir(parents=True, exist_ok=True)
        temp = path.parent / f".tmp-{uuid.uuid4().hex}"
        pq.write_table(pa.table({"v": pa.array([value, value + 1], pa.int64())}), temp)
        os.replace(temp, path)  # as engines commit a file
        self.aged(path, path.parent)
        self.touched.add(f"p={k}/{name}")

    def apply(self, op: tuple[Any, ...]) -> None:
        kind, k = op[0], op[1] if len(op) > 1 else 0
        files = self.files(k)
        if kind == "add" and k in self.registered():
            self.write(k, f"n{next(self.clock)}.parquet", op[2])
        elif kind == "rewrite" and files:
            self.write(k, files[op[2] % len(files)].name, op[3])
        elif kind == "delete" and files:
            files[op[2] % len(files)].unlink()
            self.aged(self.folder(k))
        elif kind == "copy" and files and op[2] in self.registered():
            target = self.folder(op[2]) / f"c{next(self.clock)}.parquet"
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(files[op[3] % len(files)], target)  # cp -p: the source's mtime, a new ctime
            self.aged(target.parent)
            self.touched.add(f"p={op[2]}/{target.name}")
        elif kind == "add_partition" and k not in self.registered():
            self.write(k, f"n{next(self.clock)}.parquet", k * 100)
            table = self.hms.get_table(self.name.database, self.name.table)
            self.hms.add_partitions(self.name.database, self.name.table,
                                    [build_partition(table, [str(k)], str(self.folder(k)))])
            self.aged(self.folder(k))
            # a folder registered again (dropped with its files kept): its files are the table's again
            self.touched.update(f"p={k}/{f.name}" for f in self.files(k))
        elif kind == "drop_partition" and k in self.registered():
            self.hms.drop_partitions(self.name.database, self.name.table, [f"p={k}"])
            if op[2]:
                shutil.rmtree(self.folder(k))

    def check(self, follower: Follower, read: list[str]) -> None:
        """One poll, then: the index is a full refresh of the registered partitions, and no footer was read
        that the test did not write since the last poll."""
        read.clear()
        follower.poll()
        assert set(read) <= self.touched, (read, self.touched)
        self.touched.clear()
        snapshot = load(str(self.root))
        assert snapshot is not None
        keys = ("p",)
        with MetastorePartitions.using(self.hms, self.name.database, self.name.table, keys) as source:
            parts = source.by_names(source.names())
        listed = list_partition_files(str(self.root), keys, parts)
        oracle, _ = refresh_index(str(self.root), snapshot.columns, listed, None,
                                  options=options_of(snapshot.table.schema))
        got = snapshot.table.select(oracle.column_names).sort_by("path")
        assert got.to_pylist() == oracle.sort_by("path").to_pylist()


@settings(max_examples=examples(12), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=ops)
def test_after_any_writes_one_poll_makes_the_index_a_full_refresh(hms: Any, steps: list[tuple[Any, ...]],
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from storage_handler.stats.engines.local import LocalEngine

    read: list[str] = []
    real = LocalEngine.read

    def counting(self: Any, job: Any, files: Any, progress: Any = None) -> Any:
        read.extend(f.path for f in files)
        return real(self, job, files, progress)

    monkeypatch.setattr(LocalEngine, "read", counting)
    with tempfile.TemporaryDirectory(prefix="hsh-follow-") as tmp:
        model = Model(hms, Path(tmp))
        follower = Follower(hms, FollowOptions(), Path(tmp) / "home", lambda event: None,
                            tables=[model.name])
        model.check(follower, read)  # the first poll: a sweep that finds the registration's index complete
        for op in steps:
            if op[0] == "poll":
                model.check(follower, read)
            else:
                model.apply(op)
        model.check(follower, read)
