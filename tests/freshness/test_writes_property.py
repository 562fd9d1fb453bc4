"""Property (issue 26): whatever mix of writers keeps a table current, a handler query returns exactly the rows of an
independent reader of the registered partitions, and a handler-session write prunes on the very next query.

One registered table (``p int`` partitions, ``v bigint``) and a random interleaving of

* ``INSERT INTO ... PARTITION (p=k)`` from the handler's own Spark session (indexed at commit, handed off),
* ``INSERT OVERWRITE`` of a partition from that session (the replaced files' rows must leave the index),
* a Parquet file copied into a registered partition with its modification time kept (``cp -p``),
* a partition added by another metastore client, and one dropped (its files kept or deleted),
* ``hsh index refresh`` (a manual refresh), and a follower poll,
* queries through ``spark.sql`` with a random range on ``v`` (and sometimes on ``p``).

The oracle is pyarrow, reading every visible file of every partition the metastore lists, row by row: the table
Hive would read. The session never refreshes Spark's own caches, so a query that missed an external change would
fail the comparison. After each handler-session insert the next query must find no kept file unindexed.
"""

from __future__ import annotations

import itertools
import shutil
import tempfile
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from metastore.names import parse_table_name
from storage_handler.cli.main import main
from storage_handler.freshness.follow_events import FollowOptions
from storage_handler.freshness.follower import Follower
from storage_handler.registration.register import apply_registration, plan_registration
from storage_handler.registration.table_spec import build_partition
from tests.helpers import examples

KEYS = range(3)
VALUES = st.integers(0, 99)
ops = st.lists(st.one_of(
    st.tuples(st.just("insert"), st.sampled_from(KEYS), VALUES),
    st.tuples(st.just("overwrite"), st.sampled_from(KEYS), VALUES),
    st.tuples(st.just("copy"), st.sampled_from(KEYS), st.sampled_from(KEYS), st.integers(0, 5)),
    st.tuples(st.just("add_partition"), st.sampled_from(KEYS), VALUES),
    st.tuples(st.just("drop_partition"), st.sampled_from(KEYS), st.booleans()),
    st.tuples(st.just("refresh")),
    st.tuples(st.just("poll")),
    st.tuples(st.just("query"), VALUES, st.integers(1, 40), st.one_of(st.none(), st.sampled_from(KEYS))),
), min_size=1, max_size=8)


def _visible(folder: Path) -> list[Path]:
    """The files a Hive reader takes from a partition's folder: not hidden by ``_`` or ``.``."""
    if not folder.is_dir():
        return []
    return sorted(f for f in folder.iterdir() if f.is_file() and not f.name.startswith(("_", ".")))


class Table:
    """The registered table, the operations on it, and the independent reader of it."""

    def __init__(self, spark: Any, hms: Any, metastore_uri: str, base: Path) -> None:
        self.spark, self.hms, self.uri, self.root = spark, hms, metastore_uri, base / "t"
        self.name = parse_table_name(f"writeprop.t_{uuid.uuid4().hex[:10]}")
        self.fqn = f"{self.name.database}.{self.name.table}"
        self.clock = itertools.count(1)
        for k in (0, 1):
            self.write(k, k * 10)
        apply_registration(hms, plan_registration(hms, self.name, str(self.root)))
        self.inserted = False  # a handler-session write since the last query
        self.outside = False  # files another writer added (or re-exposed) since the last refresh or poll

    def folder(self, k: int) -> Path:
        return self.root / f"p={k}"

    def registered(self) -> set[int]:
        return {int(n.split("=")[1]) for n in self.hms.get_partition_names(self.name.database, self.name.table)}

    def write(self, k: int, value: int) -> None:
        path = self.folder(k) / f"w{next(self.clock)}.parquet"
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table({"v": pa.array([value, value + 1, None], pa.int64())}), path)

    def apply(self, op: tuple[Any, ...], follower: Follower) -> None:
        kind = op[0]
        if kind in ("copy", "add_partition", "drop_partition"):  # a dropped folder's files may be registered again
            self.outside = True
        elif kind in ("refresh", "poll"):
            self.outside = False
        if kind in ("insert", "overwrite"):
            mode = "INTO" if kind == "insert" else "OVERWRITE TABLE"
            self.spark.sql(f"INSERT {mode} {self.fqn} PARTITION (p={op[1]}) "
                           f"SELECT * FROM VALUES ({op[2]}L), ({op[2] + 2}L) AS s(v)")
            self.inserted = True
        elif kind == "copy" and op[2] in self.registered():
            sources = _visible(self.folder(op[1]))
            if sources:
                shutil.copy2(sources[op[3] % len(sources)], self.folder(op[2]) / f"c{next(self.clock)}.parquet")
        elif kind == "add_partition" and op[1] not in self.registered():
            self.write(op[1], op[2])
            table = self.hms.get_table(self.name.database, self.name.table)
            self.hms.add_partitions(self.name.database, self.name.table,
                                    [build_partition(table, [str(op[1])], str(self.folder(op[1])))])
        elif kind == "drop_partition" and op[1] in self.registered() and len(self.registered()) > 1:
            self.hms.drop_partitions(self.name.database, self.name.table, [f"p={op[1]}"])
            if op[2]:
                shutil.rmtree(self.folder(op[1]))
        elif kind == "refresh":  # the command, in this process: no interpreter start per example
            assert main(["index", "refresh", self.fqn, "--metastore", self.uri]) == 0
        elif kind == "poll":
            follower.poll()
        elif kind == "query":
            self.query(op[1], op[1] + op[2], op[3])

    def expected(self, lo: int, hi: int, p: int | None) -> list[tuple[int, int]]:
        rows = []
        for k in sorted(self.registered()):
            for f in _visible(self.folder(k)):
                rows += [(k, v) for v in pq.read_table(f).column("v").to_pylist()
                         if v is not None and lo <= v < hi and (p is None or k == p)]
        return sorted(rows)

    def query(self, lo: int, hi: int, p: int | None) -> None:
        from storage_handler.spark import last_scan_metrics

        where = f"v >= {lo} AND v < {hi}" + ("" if p is None else f" AND p = {p}")
        got = sorted((r[0], r[1]) for r in self.spark.sql(f"SELECT p, v FROM {self.fqn} WHERE {where}").collect())
        assert got == self.expected(lo, hi, p), where
        metrics = last_scan_metrics(self.fqn)
        if self.inserted and not self.outside:
            # only handler-session writes since the index was last whole: the very next query prunes them all
            assert metrics["files_kept_unindexed"] == 0, metrics
        self.inserted = False


@settings(max_examples=examples(6), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=ops)
def test_queries_return_the_registered_partitions_rows_whoever_wrote_them(
        spark: Any, hms: Any, metastore_uri: str, steps: list[tuple[Any, ...]]) -> None:
    with tempfile.TemporaryDirectory(prefix="hsh-writes-") as tmp:
        table = Table(spark, hms, metastore_uri, Path(tmp))
        follower = Follower(hms, FollowOptions(), Path(tmp) / "home", lambda event: None, tables=[table.name])
        for op in [*steps, ("query", 0, 200, None)]:
            table.apply(op, follower)
        spark.sql(f"DROP TABLE {table.fqn}")
