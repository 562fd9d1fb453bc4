"""The tables, queries and checks the aggregate tests share (issue 28): random tables made to break an answer
taken from the index wrongly, the differential case (handler against plain Spark and DuckDB), a folder registered
twice (through the handler and as a plain Hive table), and readers of the plan and of the extension's steps."""

from __future__ import annotations

import datetime as dt
import json
import os
import random
import re
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import event
from hypothesis import strategies as st

SCHEMA = pa.schema([("i", pa.int32()), ("big", pa.int64()), ("dec", pa.decimal128(9, 2)), ("d", pa.date32()),
                    ("s", pa.string()), ("f", pa.float64()), ("b", pa.bool_()), ("ts", pa.timestamp("us"))])
QUERIES = [
    "SELECT count(*) FROM {t} WHERE {w}",
    "SELECT count(i), min(i), max(i), count(*) FROM {t} WHERE {w}",
    "SELECT min(big), max(big), min(d), max(d), min(dec), max(dec) FROM {t} WHERE {w}",
    "SELECT count(s), min(s), max(s), min(b), max(b) FROM {t} WHERE {w}",
    "SELECT p, count(*), min(i), max(d), count(dec) FROM {t} WHERE {w} GROUP BY p",
    "SELECT max(f), min(ts), count(f) FROM {t} WHERE {w}",
]
DUCKDB_SAFE = QUERIES[:5]  # doubles and timestamps compare across engines differently enough to leave to Spark


def random_rows(rng: random.Random, n: int, base: int, all_null: str | None, long_strings: bool) -> pa.Table:
    def maybe(v: Any, column: str) -> Any:
        return None if column == all_null or rng.random() < 0.2 else v

    day0 = dt.date(2020, 1, 1) + dt.timedelta(days=base)
    rows = [{
        "i": maybe(base + k, "i"), "big": maybe((base + k) * 10**10, "big"),
        "dec": maybe(Decimal(base * 100 + k) / 100, "dec"), "d": maybe(day0 + dt.timedelta(days=k % 3), "d"),
        "s": maybe(("x" * 5000 + str(k)) if long_strings else rng.choice(["a", "bb", "c", "é"]), "s"),
        "f": maybe(rng.choice([1.5, -0.0, float("nan"), float(base)]), "f"), "b": maybe(k % 2 == 0, "b"),
        "ts": maybe(dt.datetime.combine(day0, dt.time()) + dt.timedelta(minutes=k), "ts"),
    } for k in range(n)]
    return pa.Table.from_pylist(rows, schema=SCHEMA)


def write_table(root: Path, seed: int) -> list[Path]:
    """Partitions ``p=0..``; returns the files, for changes made after indexing."""
    rng = random.Random(seed)
    files = []
    for p in range(rng.randint(1, 3)):
        folder = root / f"p={p}"
        folder.mkdir(parents=True)
        for k in range(rng.randint(1, 3)):
            base = p * 100 + k * 10
            table = random_rows(rng, rng.choice([0, 1, 5, 12]), base, rng.choice([None, None, "i", "dec", "s"]),
                          rng.random() < 0.15)
            path = folder / f"part-{k}.parquet"
            pq.write_table(table, path, write_statistics=rng.random() > 0.15)
            files.append(path)
    return files


FILTERS = st.sampled_from([
    "true", "i >= {n}", "i < {n}", "i BETWEEN {n} AND {m}", "p = {p}", "p <> {p} OR i > {n}",
    "d >= DATE '2020-01-{day:02d}'", "dec < {n}.5", "s = 'a'", "s IS NULL", "i IS NOT NULL AND b",
    "NOT (i > {n})", "big > {n}0000000000", "i IN ({n}, {m})", "upper(s) = 'A'", "f > 1.0", "p = {p} AND i >= {n}",
    # partition-only conjuncts no data-source filter expresses: evaluated on each partition's values
    "cast(p AS STRING) = '{p}'", "p % 2 = 0 AND i >= {n}", "NOT ((p + 1) * 10 > {n}) OR i < {m}",
    # filters pushed to the handler that the SearchArgument holds only in part (YES_NO_NULL)
    "s LIKE '%b'", "i >= {n} AND s LIKE '%x%'", "NOT (s LIKE 'b%')", "contains(s, 'c') OR i < {n}",
])
COUNTER = iter(range(1 << 30))


def register_pair(client: Any, root: Path) -> tuple[str, str]:
    """The folder as a handler table and as a plain Hive table (no ``hsh.*`` parameters): Spark reads it natively."""
    from metastore.names import parse_table_name
    from storage_handler.registration.register import apply_registration, plan_registration

    n = next(COUNTER)
    handled, plain = f"agg.t{n}", f"agg.plain{n}"
    for name in (handled, plain):
        apply_registration(client, plan_registration(client, parse_table_name(name), str(root)))
    table = client.get_table("agg", f"plain{n}")
    for key in [k for k in table.parameters if k.startswith("hsh.")]:
        del table.parameters[key]
    client.alter_table(table)
    return handled, plain


def canonical(rows: list[Any]) -> list[tuple[Any, ...]]:
    def norm(v: Any) -> Any:
        if isinstance(v, float) and v != v:
            return "NaN"
        if isinstance(v, dt.datetime):
            return v.replace(tzinfo=None)
        return v

    return sorted((tuple(norm(v) for v in r) for r in rows), key=repr)


def duckdb_rows(root: Path, sql: str) -> list[Any]:
    source = f"read_parquet('{root}/p=*/*.parquet', hive_partitioning = true)"  # not _hsh_index/
    return duckdb.sql(sql.replace("{t}", source)).fetchall()


def run_case(spark: Any, catalog: Any, root: Path, seed: int, where: str, mutate: bool, driver: bool) -> None:
    """``driver``: whether the files left to read may be read in the driver (``IndexAnswer``) or only by Spark's
    plan of the rewrite."""
    from storage_handler.stats import update_index  # noqa: F401  (registration indexes; refresh is not needed)

    files = write_table(root, seed)
    handled, plain = register_pair(catalog, root)
    if mutate:  # after indexing: one file changed, one added (the index knows neither)
        rng = random.Random(seed + 1)
        pq.write_table(random_rows(rng, 7, 900, None, False), files[0])
        pq.write_table(random_rows(rng, 3, 950, None, False), files[0].parent / "part-new.parquet")
    answered_steps(spark)
    spark.conf.set(DRIVER_BYTES, str(4 << 20) if driver else "0")
    for template in QUERIES:
        sql = template.format(t="{t}", w=where)
        ours = canonical(spark.sql(sql.replace("{t}", handled)).collect())
        steps = answered_steps(spark)
        if any(step["answered"] for step in steps if step["step"] == "aggregate_from_index"):
            event("some files answered from the index")
        if any(step["step"] == "aggregate_in_driver" for step in steps):
            event("answered in the driver")
            assert driver, "answered in the driver with spark.hsh.aggregates.driverReadBytes=0"
        theirs = canonical(spark.sql(sql.replace("{t}", plain)).collect())  # (a plain table: no rewrite)
        assert ours == theirs, f"{sql} on {handled}: handler {ours} != plain Spark {theirs}"
        if template in DUCKDB_SAFE and "upper(" not in where and "f >" not in where:
            expected = canonical(duckdb_rows(root, sql))
            assert ours == expected, f"{sql}: handler {ours} != DuckDB {expected}"


def executed_plan(spark: Any, sql: str) -> str:
    return str(spark.sql(sql)._jdf.queryExecution().executedPlan().toString())


def answered_steps(spark: Any) -> list[dict[str, Any]]:
    """The rewrites recorded since the last call (``aggregate_from_index``), and the answers computed in the driver
    (``aggregate_in_driver``)."""
    return [e for e in json.loads(spark._jvm.hsh.spark.Timings.drain())
            if e["step"] in ("aggregate_from_index", "aggregate_in_driver")]


def rewrites(spark: Any) -> list[dict[str, Any]]:
    return [e for e in answered_steps(spark) if e["step"] == "aggregate_from_index"]


DRIVER_BYTES = "spark.hsh.aggregates.driverReadBytes"
DRIVER_ROWS = "spark.hsh.aggregates.driverReadRows"

# EXPLAIN of a rewrite: Spark's plan of it names the index's columns ("count_all_of_5_files_from_index"), the
# answer in the driver says what it answered ("5 files answered from the index")
FROM_INDEX = re.compile(r"_of_(\d+)_files_from_index|(\d+) files answered from the index")


def files_from_index(plan: str) -> int | None:
    """How many files ``plan`` answers from the index, or None when it is not rewritten."""
    found = FROM_INDEX.search(plan)
    return None if found is None else int(found.group(1) or found.group(2))


def with_jobs(spark: Any, action: Any) -> tuple[Any, int]:
    """``action()``'s result and the number of Spark jobs it ran."""
    group = f"hsh-test-{next(COUNTER)}"
    spark.sparkContext.setJobGroup(group, "counting jobs")
    try:
        result = action()
    finally:
        spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)
    return result, len(spark.sparkContext.statusTracker().getJobIdsForGroup(group))


def open_in_jvm(spark: Any, path: Path) -> list[str]:
    """The Spark JVM's open file descriptors on ``path`` (Linux ``/proc``). A reader nobody closed keeps its
    descriptor until it is collected, so this is asked without provoking a collection."""
    proc = spark.sparkContext._gateway.proc
    fds = Path(f"/proc/{proc.pid}/fd")
    if not fds.is_dir():
        pytest.skip("no /proc here to list a process's open files")
    out = []
    for fd in fds.iterdir():
        try:
            if os.readlink(fd) == str(path):
                out.append(fd.name)
        except OSError:  # closed meanwhile
            continue
    return out


def steps_named(spark: Any, name: str) -> int:
    return sum(e["step"] == name for e in json.loads(spark._jvm.hsh.spark.Timings.drain()))
