"""Parquet's split-block bloom filter: the hash against the xxhash library, the bytes against Arrow's own writer,
no false negatives over every supported type, and reading the filters a writer put in a file's footer."""

from __future__ import annotations

import datetime as dt
import struct
from decimal import Context, Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import xxhash
from hypothesis import given, settings
from hypothesis import strategies as st

from storage_handler.stats.footers.convert import classify
from storage_handler.stats.membership import bloom
from storage_handler.stats.membership.parquet_bloom import (
    encoding_matches,
    footer_filter,
    parse_header,
    read_filter,
)
from storage_handler.types import hive_to_arrow, parse_hive_type
from tests.helpers import examples
from tests.pyarrow_compat import needs_bloom_writer

EPOCH = dt.datetime(1970, 1, 1)
TS = st.datetimes(min_value=dt.datetime(1, 1, 1), max_value=dt.datetime(9999, 12, 31))
TYPES_AND_VALUES = {
    "tinyint": st.integers(-(2**7), 2**7 - 1),
    "smallint": st.integers(-(2**15), 2**15 - 1),
    "int": st.integers(-(2**31), 2**31 - 1),
    "bigint": st.integers(-(2**63), 2**63 - 1),
    "string": st.text(max_size=40),
    "varchar(5)": st.text(max_size=5),
    "date": st.dates(),
    "timestamp": TS,
    "decimal(5,2)": st.decimals(min_value=-999, max_value=999, places=2, allow_nan=False),
    "decimal(18,0)": st.decimals(min_value=-(10**18) + 1, max_value=10**18 - 1, places=0, allow_nan=False),
    "decimal(38,10)": st.decimals(min_value=Decimal("-" + "9" * 28), max_value=Decimal("9" * 28), places=10,
                                  allow_nan=False),
}


def plain_encoding(value: object, hive: str) -> bytes:
    """Parquet's plain encoding of one value of the table type, written out by hand (the reference)."""
    t = parse_hive_type(hive)
    if t.name in ("tinyint", "smallint", "int"):
        return struct.pack("<i", value)
    if t.name == "bigint":
        return struct.pack("<q", value)
    if t.name == "date":
        assert isinstance(value, dt.date)
        return struct.pack("<i", (value - dt.date(1970, 1, 1)).days)
    if t.name == "timestamp":
        assert isinstance(value, dt.datetime)
        return struct.pack("<q", (value - EPOCH) // dt.timedelta(microseconds=1))
    if t.name == "decimal":
        assert isinstance(value, Decimal) and t.precision is not None and t.scale is not None
        unscaled = int(value.scaleb(t.scale, Context(prec=100)))
        width = 4 if t.precision <= 9 else 8 if t.precision <= 18 else bloom.decimal_bytes(t.precision)
        return unscaled.to_bytes(width, "little" if t.precision <= 18 else "big", signed=True)
    assert isinstance(value, str)
    return value.encode("utf-8")


@settings(max_examples=examples(60), deadline=None)
@given(st.integers(0, 31).flatmap(lambda w: st.lists(st.binary(min_size=w, max_size=w), min_size=1, max_size=20)))
def test_numpy_xxh64_equals_the_library(rows: list[bytes]) -> None:
    matrix = np.frombuffer(b"".join(rows), dtype=np.uint8).reshape(len(rows), len(rows[0]))
    assert bloom.xxh64_rows(matrix).tolist() == [xxhash.xxh64_intdigest(r) for r in rows]


@pytest.mark.parametrize("hive", sorted(TYPES_AND_VALUES))
@settings(max_examples=examples(25), deadline=None)
@given(data=st.data())
def test_every_value_is_found_and_hashes_as_its_plain_encoding(hive: str, data: st.DataObject) -> None:
    values = data.draw(st.lists(st.one_of(st.none(), TYPES_AND_VALUES[hive]), max_size=30))
    hive_type = parse_hive_type(hive)
    array = pa.array(values, hive_to_arrow(hive_type))
    hashes = bloom.canonical_hashes(array, hive_type)
    present = [v for v in values if v is not None]
    assert hashes.tolist() == [xxhash.xxh64_intdigest(plain_encoding(v, hive)) for v in present]
    bits = bloom.filter_for(hashes, data.draw(st.sampled_from([0.5, 0.05, 0.001])))
    assert all(bloom.might_contain(bits, int(h)) for h in hashes)  # no false negatives, nulls never inserted


def test_negative_zero_and_decimal_scales_hash_as_the_same_value() -> None:
    t = parse_hive_type("decimal(10,2)")
    same = pa.array([Decimal("-0"), Decimal("0.00"), Decimal("-0.000")], hive_to_arrow(t))
    assert len(set(bloom.canonical_hashes(same, t).tolist())) == 1


def test_sizing_follows_parquet_and_caps() -> None:
    assert bloom.optimal_num_bytes(0, 0.01) == 32
    assert bloom.optimal_num_bytes(100, 0.01) == 128
    assert bloom.optimal_num_bytes(1500, 0.01) == 2048
    assert bloom.optimal_num_bytes(10**9, 0.01) == bloom.MAX_BYTES


def test_measured_false_positive_rate_is_near_the_target() -> None:
    rng = np.random.default_rng(7)
    stored = rng.integers(0, 2**64, 5000, dtype=np.uint64)
    bits = bloom.filter_for(stored, 0.01)
    probes = rng.integers(0, 2**64, 20000, dtype=np.uint64)
    rate = np.mean([bloom.might_contain(bits, int(h)) for h in probes])
    assert rate < 0.02 and bloom.estimated_fpp(bits) < 0.02


def test_folding_equals_building_smaller_and_union_keeps_everything() -> None:
    rng = np.random.default_rng(3)
    a, b = rng.integers(0, 2**63, 300, dtype=np.uint64), rng.integers(0, 2**63, 200, dtype=np.uint64)
    big = bloom.build(a, 4096)
    assert bloom.fold(big, 512) == bloom.build(a, 512)
    merged = bloom.union([big, bloom.build(b, 1024)], 1024)
    assert all(bloom.might_contain(merged, int(h)) for h in np.concatenate([a, b]))


def test_probing_many_files_at_once_ignores_missing_and_malformed_filters() -> None:
    f = bloom.build(np.array([42], dtype=np.uint64), 64)
    filters = pa.array([f, None, b"", b"x" * 48, bloom.build(np.array([7], dtype=np.uint64), 32)], pa.binary())
    assert bloom.ruled_out(filters, 42).tolist() == [False, False, False, False, True]
    assert bloom.ruled_out(filters.slice(4), 7).tolist() == [False]


# ------------------------------------------------------------------------------------------ Arrow's own filters
WRITTEN = {  # Hive type -> (Arrow type written, values, writer options)
    "int": (pa.int32(), list(range(-500, 1500, 3)), {}),
    "bigint": (pa.int64(), [v * 7919 - 2**40 for v in range(700)], {}),
    "string": (pa.string(), [f"ü-{v}-ñ" for v in range(600)], {}),
    "date": (pa.date32(), [dt.date(1960, 1, 1) + dt.timedelta(days=v) for v in range(400)], {}),
    "timestamp": (pa.timestamp("us"), [EPOCH + dt.timedelta(seconds=v * 37.5) for v in range(400)], {}),
    "decimal(9,2)": (pa.decimal128(9, 2), [Decimal(v) / 4 for v in range(-300, 300)],
                     {"store_decimal_as_integer": True}),
    "decimal(18,3)": (pa.decimal128(18, 3), [Decimal(v) * 1000 + Decimal("0.125") for v in range(400)],
                      {"store_decimal_as_integer": True}),
    "decimal(20,4)": (pa.decimal128(20, 4), [Decimal(v) * 10**10 + Decimal("0.5") for v in range(-200, 200)], {}),
}


@pytest.mark.parametrize("hive", sorted(WRITTEN))
@needs_bloom_writer
def test_our_bytes_equal_the_filter_arrow_writes(hive: str, tmp_path: Path) -> None:
    arrow_type, values, options = WRITTEN[hive]
    path = tmp_path / "f.parquet"
    pq.write_table(pa.table({"c": pa.array(values, arrow_type)}), path, row_group_size=len(values),
                   bloom_filter_options={"c": {"ndv": len(values), "fpp": 0.05}}, **options)
    md = pq.ParquetFile(path).metadata
    chunk = md.row_group(0).column(0)
    with open(path, "rb") as fh:
        theirs = read_filter(fh, chunk.bloom_filter_offset, chunk.bloom_filter_length)
    assert theirs is not None
    hive_type = parse_hive_type(hive)
    assert encoding_matches(classify(md.schema.column(0)), md.schema.column(0).length, hive_type)
    ours = bloom.build(bloom.canonical_hashes(pa.array(values, hive_to_arrow(hive_type)), hive_type), len(theirs))
    assert ours == theirs


@needs_bloom_writer
def test_footer_filters_of_several_row_groups_become_one(tmp_path: Path) -> None:
    path = tmp_path / "f.parquet"
    values = pa.array([(v % 300) * 104729 for v in range(3000)] + [None] * 10, pa.int64())
    pq.write_table(pa.table({"c": values}), path, row_group_size=1505,  # Arrow sizes each for its 1,505 rows
                   bloom_filter_options={"c": {"ndv": 3000, "fpp": 0.01}})
    md = pq.ParquetFile(path).metadata
    t = parse_hive_type("bigint")
    merged = _footer_filter(path, md, 0, classify(md.schema.column(0)), t, 0.01)
    sizes = [md.row_group(r).column(0).bloom_filter_length for r in range(md.num_row_groups)]
    assert len(sizes) == 2 and merged is not None and len(merged) < min(sizes)  # one filter, 300 values
    assert all(bloom.might_contain(merged, int(h)) for h in bloom.canonical_hashes(values, t))


@needs_bloom_writer
def test_footer_filters_sized_too_small_are_not_used(tmp_path: Path) -> None:
    path = tmp_path / "f.parquet"
    values = pa.array([v * 104729 for v in range(3000)], pa.int64())
    pq.write_table(pa.table({"c": values}), path, row_group_size=700,
                   bloom_filter_options={"c": {"ndv": 10, "fpp": 0.5}})
    md = pq.ParquetFile(path).metadata
    assert _footer_filter(path, md, 0, classify(md.schema.column(0)), parse_hive_type("bigint"), 0.01) is None


@needs_bloom_writer
@pytest.mark.parametrize(("written", "hive", "options"), [
    (pa.int32(), "bigint", {}),  # INT32 encoding, INT64 table type
    (pa.uint32(), "bigint", {}),  # unsigned
    (pa.string(), "varchar(3)", {}),  # the reader cuts values the writer hashed whole
    (pa.decimal128(9, 2), "decimal(9,2)", {}),  # Arrow's FIXED_LEN_BYTE_ARRAY, Spark's INT32
    (pa.timestamp("ms"), "timestamp", {}),  # milliseconds
])
def test_footer_filters_in_another_encoding_are_not_used(written: pa.DataType, hive: str, options: dict,
                                                         tmp_path: Path) -> None:
    path = tmp_path / "f.parquet"
    data = [1, 2, 3] if not pa.types.is_string(written) else ["abcd", "x", "y"]
    if pa.types.is_decimal(written):
        data = [Decimal("1.25"), Decimal("2.5"), Decimal("3")]
    pq.write_table(pa.table({"c": pa.array(data, written)}), path, bloom_filter_options={"c": True}, **options)
    md = pq.ParquetFile(path).metadata
    assert md.row_group(0).column(0).bloom_filter_offset is not None
    assert _footer_filter(path, md, 0, classify(md.schema.column(0)), parse_hive_type(hive), 0.01) is None


def test_a_file_without_footer_filters_gives_none(tmp_path: Path) -> None:
    path = tmp_path / "f.parquet"
    pq.write_table(pa.table({"c": pa.array([1, 2], pa.int64())}), path)
    md = pq.ParquetFile(path).metadata
    assert _footer_filter(path, md, 0, classify(md.schema.column(0)), parse_hive_type("bigint"), 0.01) is None


@pytest.mark.parametrize("raw", [b"", b"\x00", b"\x15\x00", b"\xff" * 20, b"\x15\x02\x00"])
def test_malformed_headers_are_no_filter(raw: bytes) -> None:
    assert parse_header(raw) is None


@needs_bloom_writer
@pytest.mark.parametrize(("hive", "small"), [("tinyint", True), ("tinyint", False), ("smallint", False)])
def test_footer_filters_of_int32_values_a_narrow_column_wraps_are_not_used(hive: str, small: bool,
                                                                          tmp_path: Path) -> None:
    """Spark reads the INT32 300 in a tinyint column as 44 (and 70000 in a smallint as 4464): the writer's filter
    hashed 300, so it could rule out the 44 Spark returns. Used only when every value is in the column's range."""
    path = tmp_path / "f.parquet"
    values = [1, 5] if small else [5, {"tinyint": 300, "smallint": 70000}[hive]]
    pq.write_table(pa.table({"c": pa.array(values, pa.int32())}), path,
                   bloom_filter_options={"c": {"ndv": 10, "fpp": 0.01}})
    md = pq.ParquetFile(path).metadata
    found = _footer_filter(path, md, 0, classify(md.schema.column(0)), parse_hive_type(hive), 0.01)
    assert (found is not None) is small


@needs_bloom_writer
@pytest.mark.parametrize(("values", "arrow_type", "hive"), [
    ([dt.date(1000, 1, 1), dt.date(2020, 1, 1)], pa.date32(), "date"),
    ([dt.datetime(1899, 6, 1), dt.datetime(2020, 1, 1)], pa.timestamp("us"), "timestamp"),
])
def test_dates_spark_may_rebase_get_no_filter(values: list, arrow_type: pa.DataType, hive: str,
                                              tmp_path: Path) -> None:
    """Spark may read a date before 1582-10-15 or a timestamp before 1900 days away from the stored value (legacy
    writers, datetimeRebaseModeInRead=LEGACY): a filter of the stored values could rule out the value Spark reads.
    Neither the footer's filter nor one built from the values is kept; the same file from 1900 on gets both."""
    from storage_handler.stats.membership.columns import to_table_values

    t = parse_hive_type(hive)
    for data, usable in ((values, False), (values[1:], True)):
        path = tmp_path / f"f{usable}.parquet"
        pq.write_table(pa.table({"c": pa.array(data, arrow_type)}), path,
                       bloom_filter_options={"c": {"ndv": 10, "fpp": 0.01}})
        md = pq.ParquetFile(path).metadata
        source = classify(md.schema.column(0))
        assert (_footer_filter(path, md, 0, source, t, 0.01) is not None) is usable
        readings, _ = to_table_values(pq.read_table(path).column(0), source, t)
        assert (readings is not None) is usable


def _footer_filter(path: Path, *args: Any) -> bytes | None:
    with open(path, "rb") as handle:
        return footer_filter(handle, *args)
