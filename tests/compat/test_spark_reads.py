"""Statistics are kept exactly for the file columns Spark reads as the table's type (``convert.spark_reads``).

A file Spark refuses to read under the table's column type (an INT64 file under ``int``, a double under
``float``, a decimal with fewer places than the file's) must have no statistics at all: pruned or answered from
the index, the query would return an answer where plain Spark fails. Each pair of a Parquet column type and a
table type is read by this line's Spark (``spark.read.schema``) and compared with the rule: on Spark 4 nothing
Spark refuses may count as readable, and everything it reads must (but ``binary``, which is never bounded);
Spark 3.5 reads fewer widenings than Spark 4, whose rules the index follows (decided in ``spark_reads``), so
there only the second holds.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from storage_handler.spark.compat import pyspark_version
from storage_handler.stats.footers.convert import classify, spark_reads
from storage_handler.types import parse_hive_type

COLUMNS = {
    "int8": pa.array([1, 2], pa.int8()), "int32": pa.array([1, 2], pa.int32()), "int64": pa.array([1, 2], pa.int64()),
    "uint8": pa.array([1, 2], pa.uint8()), "uint32": pa.array([1, 2], pa.uint32()),
    "uint64": pa.array([1, 2], pa.uint64()), "float": pa.array([1.5, 2.5], pa.float32()),
    "double": pa.array([1.5, 2.5], pa.float64()),
    "dec5_2": pa.array([Decimal("1.25"), Decimal("2.50")], pa.decimal128(5, 2)),
    "dec12_2": pa.array([Decimal("1.25"), Decimal("2.50")], pa.decimal128(12, 2)),
    "string": pa.array(["a", "b"]), "bool": pa.array([True, False]),
    "date": pa.array([dt.date(2020, 1, 1), dt.date(2020, 1, 2)]),
    "ts_us_utc": pa.array([1, 2], pa.timestamp("us", tz="UTC")),
}
TYPES = ("tinyint", "int", "bigint", "float", "double", "decimal(6,3)", "decimal(7,2)", "decimal(10,0)",
         "decimal(11,2)", "decimal(20,0)", "string", "boolean", "date", "timestamp")


def test_statistics_are_kept_exactly_for_what_this_spark_reads(spark, tmp_path: Path) -> None:
    folders = {}
    for name, values in COLUMNS.items():
        folders[name] = tmp_path / name
        folders[name].mkdir()
        pq.write_table(pa.table({"c": values}), folders[name] / "f.parquet", store_schema=False)
    spark_4 = pyspark_version() >= (4, 0)
    disagree = []
    for name, folder in folders.items():
        source = classify(pq.ParquetFile(folder / "f.parquet").metadata.schema.column(0))
        for hive in TYPES:
            try:
                spark.read.schema(f"c {hive}").parquet(str(folder)).collect()
                reads = True
            except Exception:  # noqa: BLE001 - any refusal: Spark's error classes differ between lines
                reads = False
            ours = spark_reads(source, parse_hive_type(hive))
            unsafe = ours and not reads and spark_4  # statistics of a file Spark refuses: answered where it fails
            weaker = reads and not ours and hive != "binary"  # no statistics where Spark reads (binary: none kept)
            if unsafe or weaker:
                disagree.append(f"{name} as {hive}: Spark {'reads' if reads else 'refuses'} it, the rule says "
                                f"{'readable' if ours else 'unreadable'}")
    assert not disagree, "\n".join(disagree)


@pytest.mark.parametrize(("name", "hive"), [("int64", "int"), ("double", "float"), ("dec12_2", "decimal(7,2)")])
def test_the_pairs_spark_refuses_are_refused(name: str, hive: str, tmp_path: Path) -> None:
    """The reviewer's cases, without Spark: these pairs have no statistics on any line."""
    pq.write_table(pa.table({"c": COLUMNS[name]}), tmp_path / "f.parquet", store_schema=False)
    source = classify(pq.ParquetFile(tmp_path / "f.parquet").metadata.schema.column(0))
    assert not spark_reads(source, parse_hive_type(hive))
