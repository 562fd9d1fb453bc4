"""Bloom filters Spark itself writes (parquet-mr's ``parquet.bloom.filter.enabled#col``): read from the footer,
byte-identical to our own filter over the same values, and used by the index instead of reading the column.

parquet-mr writes no bloom filter for a column chunk that is entirely dictionary-encoded (its dictionary already
answers lookups); the index then builds its own filter from the values."""

from __future__ import annotations

import glob
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from storage_handler.stats import StatsOptions, read_file_stats
from storage_handler.stats.membership import bloom
from storage_handler.stats.membership.parquet_bloom import read_filter
from storage_handler.stats.membership.spec import MembershipSpec
from storage_handler.types import hive_to_arrow, parse_hive_type, parse_schema_text

SCHEMA = "uid bigint, code string, small int"


def _write(spark: Any, out: Path, dictionary: bool) -> str:
    df = spark.sql("SELECT id * 7919 - 4000000 AS uid, concat('k', CAST(id % 500 AS STRING)) AS code, "
                   "CAST(id % 100 AS INT) AS small FROM range(3000)").coalesce(1)
    (df.write.option("parquet.enable.dictionary", str(dictionary).lower())
       .option("parquet.bloom.filter.enabled#uid", "true").option("parquet.bloom.filter.expected.ndv#uid", "3000")
       .option("parquet.bloom.filter.enabled#code", "true")  # no NDV: parquet-mr's 1 MiB filter
       .option("parquet.bloom.filter.enabled#small", "true").option("parquet.bloom.filter.expected.ndv#small", "100")
       .parquet(str(out)))
    return glob.glob(str(out / "*.parquet"))[0]


@pytest.mark.jvm
def test_spark_written_filters_equal_ours_and_serve_the_index(spark: Any, tmp_path: Path) -> None:
    plain = _write(spark, tmp_path / "plain", dictionary=False)
    data = pq.read_table(plain)
    md = pq.ParquetFile(plain).metadata
    for leaf, (name, hive) in enumerate((("uid", "bigint"), ("code", "string"), ("small", "int"))):
        chunk = md.row_group(0).column(leaf)
        with open(plain, "rb") as fh:
            theirs = read_filter(fh, chunk.bloom_filter_offset, chunk.bloom_filter_length)
        assert theirs is not None, f"no filter read for {name}"
        t = parse_hive_type(hive)
        ours = bloom.build(bloom.canonical_hashes(data.column(leaf).cast(hive_to_arrow(t)), t), len(theirs))
        assert ours == theirs, f"{name}: our bytes differ from parquet-mr's"
    stats = read_file_stats(plain, parse_schema_text(SCHEMA),
                            StatsOptions(membership=MembershipSpec(("uid", "code", "small"), 0.01)))
    for name, distinct_bound in (("uid", 3000), ("code", 3000), ("small", 3000)):
        m = stats.membership[name]  # the footer's filter, folded to what 3,000 values at 1 % need at most
        assert m.from_footer and len(m.bloom) <= bloom.optimal_num_bytes(distinct_bound, 0.01)
        hive = dict(parse_schema_text(SCHEMA))[name]
        assert all(bloom.might_contain(m.bloom, int(h)) for h in
                   bloom.canonical_hashes(data.column(name).cast(hive_to_arrow(hive)), hive))

    encoded = _write(spark, tmp_path / "dictionary", dictionary=True)
    md = pq.ParquetFile(encoded).metadata
    assert md.row_group(0).column(1).bloom_filter_offset is None  # dictionary-encoded: parquet-mr skips it
    stats = read_file_stats(encoded, parse_schema_text(SCHEMA),
                            StatsOptions(membership=MembershipSpec(("uid", "code"), 0.01)))
    assert stats.membership["uid"].from_footer and not stats.membership["code"].from_footer
    assert len(stats.membership["code"].bloom) == bloom.optimal_num_bytes(500, 0.01)  # built from the values
