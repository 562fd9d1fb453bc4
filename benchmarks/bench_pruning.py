"""Benchmark the file-pruning evaluator: ns per file for a 5-leaf predicate over synthetic index tables.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_pruning.py [--sizes 100000 1000000] [--repeat 7]

Reports, per index size: bind+compile time (once per query), vectorized evaluation (best of ``--repeat``) in ns per
file, the scalar oracle's ns per file (measured on a subset, extrapolated per file) and the speed-up; then the same
for a partition-only and a mixed partition/data predicate. If ``pyiceberg`` is importable, the kept set is compared
with PyIceberg's InclusiveMetricsEvaluator on the same statistics (it is *not* a dependency of this project; run the
script from a separate virtualenv that has it to include that comparison). Timings are printed, never asserted.
"""

from __future__ import annotations

import argparse
import datetime as dt
import random
import sys
import time
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from storage_handler.pruning import PredicateEvaluator  # noqa: E402
from storage_handler.sarg import LeafType, SearchArgument, SearchArgumentFactory  # noqa: E402
from storage_handler.types import parse_schema_text  # noqa: E402
from tests.pruning.scalar_oracle import ScalarEvaluator  # noqa: E402 - the per-file oracle is the baseline

SCHEMA = parse_schema_text("id bigint, qty int, price decimal(12,2), score double, ts timestamp, name string")
PARTITIONS = parse_schema_text("dt date")
EPOCH_2024 = dt.datetime(2024, 1, 1)
SCALAR_SUBSET = 2_000


def synthetic_index(n: int, seed: int = 7) -> pa.Table:
    """An index table in the contract's schema: ``id`` clustered (file i holds ids i*1000..i*1000+999), the other
    columns with random overlapping ranges, a few files with nulls, one partition ``dt`` per 1000 files."""
    rng = random.Random(seed)
    file_no = pa.array(range(n), pa.int64())
    id_min = pc.multiply(file_no, 1000)
    id_max = pc.add(id_min, 999)
    qty_min = [rng.randint(1, 40) for _ in range(n)]
    qty_max = [q + rng.randint(0, 10) for q in qty_min]
    cents_min = [rng.randint(0, 9) for _ in range(n)]
    price_min = [Decimal(c).scaleb(-2) for c in cents_min]
    price_max = [Decimal(c + rng.randint(0, 1)).scaleb(-2) for c in cents_min]
    score_min = [rng.random() for _ in range(n)]
    score_max = [s + rng.random() * 0.1 for s in score_min]
    ts_min = pc.cast(pc.add(pc.multiply(file_no, 60_000_000), _micros(EPOCH_2024)), pa.timestamp("us"))
    ts_max = pc.cast(pc.add(pc.cast(ts_min, pa.int64()), 59_999_999), pa.timestamp("us"))
    name_min = pa.array([f"name-{i:07d}" for i in range(n)], pa.string())
    name_max = pa.array([f"name-{i:07d}z" for i in range(n)], pa.string())
    nulls = pa.array([rng.choice((0, 0, 0, 0, 3)) for _ in range(n)], pa.int64())
    zeros = pc.multiply(nulls, 0)

    def struct(values: dict[str, Any]) -> pa.StructArray:
        return pa.StructArray.from_arrays(list(values.values()), names=list(values))

    days = [(dt.date(2024, 1, 1) + dt.timedelta(days=i // 1000)).isoformat() for i in range(n)]
    maps = pa.array([[("dt", d)] for d in days], pa.map_(pa.string(), pa.string()))
    return pa.table({
        "path": pa.array([f"dt={d}/part-{i}.parquet" for i, d in enumerate(days)], pa.string()),
        "size": pc.add(zeros, 1 << 20),
        "modification_time": zeros,
        "num_records": pc.add(zeros, 1000),
        "partition_values": maps,
        "min_values": struct({
            "id": id_min, "qty": pa.array(qty_min, pa.int32()), "price": pa.array(price_min, pa.decimal128(12, 2)),
            "score": pa.array(score_min, pa.float64()), "ts": ts_min, "name": name_min}),
        "max_values": struct({
            "id": id_max, "qty": pa.array(qty_max, pa.int32()), "price": pa.array(price_max, pa.decimal128(12, 2)),
            "score": pa.array(score_max, pa.float64()), "ts": ts_max, "name": name_max}),
        "null_count": struct({"id": zeros, "qty": zeros, "price": nulls, "score": zeros, "ts": zeros, "name": nulls}),
        "stats_error": pa.nulls(n, pa.string()),
    })


def _micros(value: dt.datetime) -> int:
    return int((value - dt.datetime(1970, 1, 1)).total_seconds()) * 1_000_000


def five_leaf_predicate(n: int) -> SearchArgument:
    """``id >= n*250 AND id < n*750 AND qty < 24 AND price BETWEEN 0.05 AND 0.07 AND ts < <75% of files>``."""
    return (SearchArgumentFactory.new_builder().start_and()
            .start_not().less_than("id", LeafType.LONG, n * 250).end()
            .less_than("id", LeafType.LONG, n * 750)
            .less_than("qty", LeafType.LONG, 24)
            .between("price", LeafType.DECIMAL, Decimal("0.05"), Decimal("0.07"))
            .less_than("ts", LeafType.TIMESTAMP, EPOCH_2024 + dt.timedelta(minutes=int(n * 0.75)))
            .end().build())


def partition_predicate(n: int) -> SearchArgument:
    last = dt.date(2024, 1, 1) + dt.timedelta(days=n // 1000)
    return (SearchArgumentFactory.new_builder().start_and()
            .start_not().less_than("dt", LeafType.DATE, dt.date(2024, 1, 3)).end()
            .less_than("dt", LeafType.DATE, last - dt.timedelta(days=2))
            .end().build())


def mixed_predicate(n: int) -> SearchArgument:
    """``dt = '2024-01-02' OR qty < 3`` -- partition and data leaves in one OR."""
    return (SearchArgumentFactory.new_builder().start_or()
            .equals("dt", LeafType.STRING, "2024-01-02")
            .less_than("qty", LeafType.LONG, 3)
            .end().build())


def best_of(repeat: int, fn: Callable[[], Any]) -> tuple[float, Any]:
    fn()  # warm-up
    best, result = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def measure(name: str, sarg: SearchArgument, table: pa.Table, repeat: int) -> dict[str, Any]:
    n = table.num_rows
    start = time.perf_counter()
    evaluator = PredicateEvaluator(sarg, SCHEMA, PARTITIONS)
    compile_s = time.perf_counter() - start
    seconds, keep = best_of(repeat, lambda: evaluator.eval(table))
    subset = table.slice(0, min(SCALAR_SUBSET, n))
    oracle = ScalarEvaluator(sarg, SCHEMA, PARTITIONS)
    scalar_s, scalar_values = best_of(1, lambda: oracle.evaluate_table(subset))
    assert [v.is_needed() for v in scalar_values] == keep.slice(0, len(subset)).to_pylist(), "oracle disagrees"
    vector_ns = seconds / n * 1e9
    scalar_ns = scalar_s / len(subset) * 1e9
    return {"predicate": name, "files": n, "kept": keep.true_count, "compile_ms": compile_s * 1e3,
            "eval_ms": seconds * 1e3, "ns_per_file": vector_ns, "scalar_ns_per_file": scalar_ns,
            "speedup": scalar_ns / vector_ns, "keep": keep}


def iceberg_comparison(table: pa.Table, n: int, keep: pa.BooleanArray) -> str:
    try:
        import pyiceberg  # noqa: F401
    except ImportError:
        return "PyIceberg comparison skipped: pyiceberg is not importable in this environment"
    return _pyiceberg_compare(table, n, keep)


def _pyiceberg_compare(table: pa.Table, n: int, keep: pa.BooleanArray, limit: int = 20_000) -> str:
    """Evaluate the 5-leaf predicate with PyIceberg's InclusiveMetricsEvaluator on the same bounds."""
    from pyiceberg.conversions import to_bytes
    from pyiceberg.expressions import And, GreaterThanOrEqual, LessThan, LessThanOrEqual
    from pyiceberg.expressions.visitors import _InclusiveMetricsEvaluator
    from pyiceberg.manifest import DataFile
    from pyiceberg.schema import Schema
    from pyiceberg.types import (
        DecimalType,
        DoubleType,
        IntegerType,
        LongType,
        NestedField,
        StringType,
        TimestampType,
    )

    fields = {"id": (1, LongType()), "qty": (2, IntegerType()), "price": (3, DecimalType(12, 2)),
              "score": (4, DoubleType()), "ts": (5, TimestampType()), "name": (6, StringType())}
    schema = Schema(*(NestedField(fid, name, typ, required=False) for name, (fid, typ) in fields.items()))
    expr = And(GreaterThanOrEqual("id", n * 250), LessThan("id", n * 750), LessThan("qty", 24),
               And(GreaterThanOrEqual("price", Decimal("0.05")), LessThanOrEqual("price", Decimal("0.07"))),
               LessThan("ts", (EPOCH_2024 + dt.timedelta(minutes=int(n * 0.75))).isoformat()))
    evaluator = _InclusiveMetricsEvaluator(schema, expr, case_sensitive=True)
    sample = pa.array(range(0, table.num_rows, max(1, table.num_rows // limit)), pa.int64())  # spread out
    rows = table.take(sample).to_pylist()

    def to_iceberg(name: str, value: Any) -> Any:
        return _micros(value) if name == "ts" else value

    files = []
    for row in rows:
        lower = {fid: to_bytes(typ, to_iceberg(name, row["min_values"][name])) for name, (fid, typ) in fields.items()}
        upper = {fid: to_bytes(typ, to_iceberg(name, row["max_values"][name])) for name, (fid, typ) in fields.items()}
        counts = {fid: row["num_records"] for fid, _ in fields.values()}
        nulls = {fields[name][0]: row["null_count"][name] for name in fields}
        files.append(DataFile.from_args(record_count=row["num_records"], value_counts=counts,
                                        null_value_counts=nulls, nan_value_counts={}, lower_bounds=lower,
                                        upper_bounds=upper, file_path=row["path"]))
    start = time.perf_counter()
    theirs = [evaluator.eval(f) for f in files]
    seconds = time.perf_counter() - start
    ours = keep.take(sample).to_pylist()
    differ = sum(a != b for a, b in zip(theirs, ours, strict=True))
    same = "identical" if differ == 0 else f"DIFFERENT on {differ} files"
    return (f"PyIceberg InclusiveMetricsEvaluator on {len(files):,} files spread over the index: kept sets {same} "
            f"({sum(theirs):,} kept); {seconds / len(files) * 1e9:,.0f} ns/file (per-file Python)")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args(argv)
    rows = []
    tables = {}
    for n in args.sizes:
        start = time.perf_counter()
        tables[n] = synthetic_index(n)
        print(f"built a synthetic index of {n:,} files in {time.perf_counter() - start:.1f} s", file=sys.stderr)
        rows.append(measure("5 data leaves", five_leaf_predicate(n), tables[n], args.repeat))
        rows.append(measure("2 partition leaves", partition_predicate(n), tables[n], args.repeat))
        rows.append(measure("mixed OR", mixed_predicate(n), tables[n], args.repeat))
    header = f"{'predicate':<20}{'files':>11}{'kept':>11}{'compile ms':>12}{'eval ms':>10}{'ns/file':>10}" \
             f"{'scalar ns/file':>16}{'speed-up':>10}"
    print(header)
    print("-" * len(header))
    for r in rows:
        print(f"{r['predicate']:<20}{r['files']:>11,}{r['kept']:>11,}{r['compile_ms']:>12.2f}{r['eval_ms']:>10.2f}"
              f"{r['ns_per_file']:>10.1f}{r['scalar_ns_per_file']:>16,.0f}{r['speedup']:>9,.0f}x")
    first = args.sizes[0]
    print(iceberg_comparison(tables[first], first, rows[0]["keep"]))


if __name__ == "__main__":
    main()
