"""A dataset with every column type, nulls everywhere, an int and a string partition key and a NULL partition.

Values are clustered by file (each file covers its own range of ``c_bigint``, ``c_date`` and ``c_ts``) so
selective predicates can prune, while the other columns are random.
"""

from __future__ import annotations

import datetime as dt
import random
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from storage_handler.hive_paths import escape_partition_value

SCHEMA = pa.schema([
    ("c_tiny", pa.int8()), ("c_small", pa.int16()), ("c_int", pa.int32()), ("c_bigint", pa.int64()),
    ("c_float", pa.float32()), ("c_double", pa.float64()), ("c_dec", pa.decimal128(9, 2)),
    ("c_str", pa.string()), ("c_bool", pa.bool_()), ("c_date", pa.date32()), ("c_ts", pa.timestamp("us")),
    ("c_bin", pa.binary()),
])
REGIONS = ["eu", "us", None]
BUCKETS = [2, 10]
WORDS = ["alpha", "beta", "gamma", "delta", "épsilon", "zeta zeta", ""]


def _maybe(rng: random.Random, value: object, p_null: float = 0.15) -> object:
    return None if rng.random() < p_null else value


def generate_typed(root: Path, rows_per_file: int = 40, files_per_partition: int = 2, seed: int = 3) -> Path:
    rng = random.Random(seed)
    n = 0
    for region in REGIONS:
        for bucket in BUCKETS:
            folder = root / f"region={escape_partition_value(region)}" / f"bucket={bucket}"
            folder.mkdir(parents=True, exist_ok=True)
            for part in range(files_per_partition):
                base = n
                n += rows_per_file
                day0 = dt.date(2024, 1, 1) + dt.timedelta(days=base // rows_per_file)
                rows = [
                    {
                        "c_tiny": _maybe(rng, rng.randint(-128, 127)),
                        "c_small": _maybe(rng, rng.randint(-1000, 1000)),
                        "c_int": _maybe(rng, rng.randint(0, 30)),
                        "c_bigint": _maybe(rng, base + i),
                        "c_float": _maybe(rng, rng.choice([rng.random(), -0.0, 0.0, 1.5])),
                        "c_double": _maybe(rng, rng.random()),
                        "c_dec": _maybe(rng, Decimal(rng.randint(0, 2000)) / 100),
                        "c_str": _maybe(rng, rng.choice(WORDS)),
                        "c_bool": _maybe(rng, rng.random() < 0.5),
                        "c_date": _maybe(rng, day0),
                        "c_ts": _maybe(rng, dt.datetime.combine(day0, dt.time()) + dt.timedelta(minutes=7 * i)),
                        "c_bin": _maybe(rng, bytes([i % 256])),
                    }
                    for i in range(rows_per_file)
                ]
                pq.write_table(pa.Table.from_pylist(rows, schema=SCHEMA), folder / f"part-{part}.parquet")
    return root


COLUMNS = "c_tiny, c_small, c_int, c_bigint, c_float, c_double, c_dec, c_str, c_bool, c_date, c_ts, region, bucket"
"""The columns Spark and the oracle are compared on (``c_bin`` is left out: Spark and pyarrow differ on binary)."""


def register_typed(root: Path, metastore_uri: str, table: str, spark: Any = None, oracle_view: str | None = None,
                   **generate: Any) -> Path:
    """Generate the dataset under ``root``, register it as ``table``; with ``spark``, also a pyarrow-read view."""
    import pyarrow.dataset as ds

    from metastore.client import MetastoreClient
    from metastore.names import parse_table_name
    from storage_handler.registration.register import apply_registration, plan_registration

    generate_typed(root, **generate)
    with MetastoreClient(metastore_uri) as client:
        apply_registration(client, plan_registration(client, parse_table_name(table), str(root)))
    if spark is not None and oracle_view:
        spark.createDataFrame(ds.dataset(root, format="parquet", partitioning="hive").to_table()) \
            .createOrReplaceTempView(oracle_view)
    return root


# Spark SQL predicates (also valid HiveQL), covering every operator and type; "selective" ones must prune.
QUERIES: list[tuple[str, bool]] = [
    ("c_bigint = 5", True),
    ("c_bigint <> 5", False),
    ("c_bigint < 30", True),
    ("c_bigint <= 30", True),
    ("c_bigint > 420", True),
    ("c_bigint >= 420", True),
    ("c_bigint IN (3, 200, 401)", True),
    ("c_bigint BETWEEN 100 AND 120", True),
    ("c_bigint NOT BETWEEN 10 AND 470", False),
    ("NOT (c_bigint >= 40)", True),
    ("c_str IS NULL", False),
    ("c_str IS NOT NULL", False),
    ("c_str = 'gamma'", False),
    ("c_str IN ('alpha', 'zeta zeta')", False),
    ("c_str >= 'épsilon'", False),
    ("c_str = ''", False),
    ("c_int = 7", False),
    ("c_tiny < -100", False),
    ("c_small >= 900", False),
    ("c_float > 0.5", False),
    ("c_double <= 0.25", False),
    ("c_dec = 12.50", False),
    ("c_dec BETWEEN 1.00 AND 2.00", False),
    ("c_bool = true", False),
    ("c_bool", False),
    ("c_date = DATE '2024-01-03'", True),
    ("c_date >= DATE '2024-01-10'", True),
    ("c_ts < TIMESTAMP '2024-01-02 00:00:00'", True),
    ("c_ts BETWEEN TIMESTAMP '2024-01-05 01:00:00' AND TIMESTAMP '2024-01-05 02:00:00'", True),
    ("region = 'eu'", True),
    ("region IS NULL", True),
    ("bucket = 10", True),
    ("bucket > 2", True),
    ("bucket < 10 AND region <> 'us'", True),
    ("region = 'us' OR c_bigint < 20", True),
    ("(bucket = 2 AND c_bigint > 400) OR c_str IS NULL", False),
    ("c_bigint + 1 = 6", False),
    ("upper(c_str) = 'BETA'", False),
    ("c_str LIKE 'al%'", False),
    ("c_int = c_small", False),
    ("c_bigint = 5 AND c_str IS NULL", True),
]
