"""5. Load: list_status from many threads while the index keeps moving, and concurrent Spark queries on one session

Answers are compared with pyarrow reading the files themselves.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pyarrow.dataset as pads
import pytest

from metastore.names import parse_table_name
from storage_handler.handler import list_status_for
from storage_handler.registration.register import apply_registration, plan_registration
from storage_handler.stats import commit, load
from storage_handler.table_desc import TableDesc
from storage_handler.types import parse_schema_text
from tests.helpers import folder_partitions
from tests.reliability.util import ints, write_parquet

THREADS = 8
ROUNDS = 15


def make_table(root: Path, days: int = 4, files: int = 5) -> None:
    """dt=0..days-1, ``files`` files per day; file j of day d holds v in [1000*d + 100*j, +20)."""
    for d in range(days):
        for j in range(files):
            base = 1000 * d + 100 * j
            write_parquet(root / f"dt={d}" / f"part-{j}.parquet", ints(range(base, base + 20)))


def oracle(root: Path, expr: Any) -> set[str]:
    """Files holding at least one row that satisfies ``expr`` (pyarrow over the files themselves)."""
    dataset = pads.dataset(root, format="parquet", partitioning="hive")
    names = dataset.to_table(columns=["__filename"], filter=expr).column("__filename").to_pylist()
    return {Path(n).relative_to(root).as_posix() for n in names}


def test_list_status_from_many_threads_while_the_index_is_recommitted(tmp_path: Path) -> None:
    """8 threads x 15 rounds of list_status with 4 different filters while another thread commits new index versions (old snapshots garbage-collected underneath the readers): every answer is exact."""
    root = tmp_path / "t"
    make_table(root)
    columns = tuple(parse_schema_text("v bigint"))
    keys = tuple(parse_schema_text("dt int"))
    from storage_handler.stats import update_index

    update_index(str(root), columns, partition_columns=["dt"])
    desc = TableDesc("load.t", f"file:{root}", columns, keys)
    probes = {
        "v = 2105": pads.field("v") == 2105,
        "v >= 3300": pads.field("v") >= 3300,
        "dt = 1 and v < 1150": (pads.field("dt") == 1) & (pads.field("v") < 1150),
        "v = 7": pads.field("v") == 7,
    }
    expected = {where: oracle(root, expr) for where, expr in probes.items()}
    assert all(expected.values())
    stop = threading.Event()
    commits = [0]

    def recommit() -> None:  # a concurrent writer: new versions of the same content, keep=2 so GC deletes snapshots
        while not stop.is_set():
            snap = load(str(root))
            assert snap is not None
            commit(str(root), snap.table, snap.version, keep=2)
            commits[0] += 1

    def reader(i: int) -> list[tuple[str, set[str], int | None]]:
        out = []
        for r in range(ROUNDS):
            where = list(probes)[(i + r) % len(probes)]
            result, _ = list_status_for(desc, where, folder_partitions(root, ["dt"]))
            out.append((where, {f.path for f in result.files}, result.metrics.index_version))
        return out

    writer = threading.Thread(target=recommit, daemon=True)
    writer.start()
    try:
        with ThreadPoolExecutor(THREADS) as pool:
            answers = [a for batch in pool.map(reader, range(THREADS)) for a in batch]
    finally:
        stop.set()
        writer.join()
    assert commits[0] > 5  # the index really moved under the readers
    versions = {v for _, _, v in answers}
    assert None not in versions and len(versions) > 1
    for where, kept, _ in answers:
        assert kept == expected[where], where  # the index is fresh, so pruning is exact here


# ---------------------------------------------------------------- Spark, one session, several threads
@pytest.fixture(scope="module")
def spark_table(tmp_path_factory: pytest.TempPathFactory, metastore_uri: str) -> Path:
    from metastore.client import MetastoreClient

    root = tmp_path_factory.mktemp("spark_load") / "t"
    make_table(root, days=3, files=3)
    with MetastoreClient(metastore_uri) as client:
        apply_registration(client, plan_registration(client, parse_table_name("load.spark"), str(root)))
    return root


def _fingerprint(root: Path) -> tuple[Any, ...]:
    """Every file under the table folder (index included) with its size and mtime."""
    return tuple(sorted((p.relative_to(root).as_posix(), p.stat().st_size, p.stat().st_mtime_ns)
                        for p in root.rglob("*") if p.is_file()))


@pytest.fixture(scope="module")
def spark_table_before(spark_table: Path) -> tuple[Any, ...]:
    return _fingerprint(spark_table)


QUERIES = [
    ("SELECT count(*) AS n FROM load.spark WHERE v = 1205", pads.field("v") == 1205),
    ("SELECT count(*) AS n FROM load.spark WHERE dt = 2 AND v >= 2100", (pads.field("dt") == 2) & (pads.field("v") >= 2100)),
    ("SELECT count(*) AS n FROM load.spark WHERE v < 150", pads.field("v") < 150),
    ("SELECT count(*) AS n FROM load.spark", None),
]


def test_concurrent_spark_queries_on_one_session(spark, spark_table: Path, spark_table_before: Any) -> None:
    """4 threads each run 2 of 4 different `spark.sql` counts (filters on data and partition columns) on one SparkSession at once: every count equals pyarrow's."""
    dataset = pads.dataset(spark_table, format="parquet", partitioning="hive")
    expected = {sql: dataset.count_rows(filter=expr) if expr is not None else dataset.count_rows()
                for sql, expr in QUERIES}
    assert all(expected.values())
    spark.sql("SELECT count(*) FROM load.spark").collect()  # warm-up: the first Python worker start is slow

    def run(i: int) -> list[tuple[str, int]]:
        order = QUERIES[i:] + QUERIES[:i]
        return [(sql, spark.sql(sql).collect()[0].n) for sql, _ in order[:2]]

    with ThreadPoolExecutor(4) as pool:
        results = [r for batch in pool.map(run, range(4)) for r in batch]
    assert len(results) == 8 and {sql for sql, _ in results} == set(expected)
    for sql, n in results:
        assert n == expected[sql], sql


def test_concurrent_spark_reads_return_the_rows(spark, spark_table: Path) -> None:
    """3 threads read the full rows of different partitions at once through Spark: each thread's rows equal pyarrow's."""
    dataset = pads.dataset(spark_table, format="parquet", partitioning="hive")

    def run(d: int) -> tuple[list[int], list[int]]:
        got = sorted(r.v for r in spark.sql(f"SELECT v FROM load.spark WHERE dt = {d}").collect())
        want = sorted(dataset.to_table(filter=pads.field("dt") == d).column("v").to_pylist())
        return got, want

    with ThreadPoolExecutor(3) as pool:
        for got, want in pool.map(run, range(3)):
            assert got == want and got


def test_concurrent_reads_changed_nothing(spark_table: Path, spark_table_before: tuple[Any, ...]) -> None:
    """After all the concurrent reads the table's files and its index are exactly as before: reads never write."""
    assert _fingerprint(spark_table) == spark_table_before
