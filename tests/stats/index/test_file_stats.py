"""Footer statistics for every Hive-mappable type, with the data that breaks other engines' pruning."""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pytest

from storage_handler.stats import ColumnStats
from storage_handler.stats.footers.convert import Source, convert_bound, float_bound
from storage_handler.types import HiveType
from tests.pyarrow_compat import writer_options
from tests.stats.util import col, file_stats, write

NAN = float("nan")
EPOCH = dt.datetime(1970, 1, 1)


def us(value: dt.datetime) -> int:
    """µs since the epoch of a naive datetime (the index's timestamp representation)."""
    return (value - EPOCH) // dt.timedelta(microseconds=1)


def is_neg_zero(x: float) -> bool:
    return x == 0.0 and math.copysign(1.0, x) < 0


# ---------------------------------------------------------------- integers
@pytest.mark.parametrize(
    ("arrow_type", "hive", "lo", "hi"),
    [
        (pa.int8(), "tinyint", -128, 127),
        (pa.int16(), "smallint", -(2**15), 2**15 - 1),
        (pa.int32(), "int", -(2**31), 2**31 - 1),
        (pa.int64(), "bigint", -(2**63), 2**63 - 1),
        (pa.uint8(), "smallint", 0, 255),
        (pa.uint16(), "int", 0, 2**16 - 1),
        (pa.uint32(), "bigint", 0, 2**32 - 1),
    ],
)
def test_integer_extremes(tmp_path, arrow_type, hive, lo, hi):
    path = write(tmp_path, "f.parquet", pa.table({"x": pa.array([hi, None, lo, 0], arrow_type)}))
    assert col(path, f"x {hive}") == ColumnStats(lo, hi, 1)


def test_unsigned_64_is_bounded_only_where_spark_reads_it(tmp_path):
    """Spark reads UINT_64 only as decimal(20,0): under bigint the file has no statistics at all (it is read, and
    fails as in plain Spark), not even a null count."""
    path = write(tmp_path, "f.parquet", pa.table({"x": pa.array([3, 2**64 - 1], pa.uint64())}))
    assert col(path, "x bigint") == ColumnStats(None, None, None)
    assert col(path, "x decimal(20,0)") == ColumnStats(Decimal(3), Decimal(2**64 - 1), 0)


@pytest.mark.parametrize(("arrow_type", "values", "hive", "nulls"), [
    (pa.int64(), [-5, 3_000_000_000], "int", None),  # Spark refuses INT64 as int: no statistics at all
    (pa.uint8(), [5, 200], "tinyint", 0),  # Spark reads 200 as -56: the in-range min 5 bounds nothing it reads
    (pa.uint16(), [5, 40_000], "smallint", 0),
    (pa.uint32(), [5, 3_000_000_000], "int", None),  # Spark reads UINT_32 only as bigint or double
    (pa.int32(), [5, 200], "tinyint", 0),
])
def test_a_bound_out_of_the_columns_range_leaves_both_unknown(tmp_path, arrow_type, values, hive, nulls):
    """A reader wraps (or refuses) values out of the table column's range, so a row group with one bound out of
    range is not bounded by its other bound either (was: the in-range bound kept, and x < 0 pruned the -56)."""
    path = write(tmp_path, "f.parquet", pa.table({"x": pa.array(values, arrow_type)}))
    assert col(path, f"x {hive}") == ColumnStats(None, None, nulls)
    assert col(path, "x bigint") == ColumnStats(min(values), max(values), 0)


def test_integers_read_as_double_or_decimal_only_where_spark_widens_them(tmp_path):
    """INT32 reads as double (exactly) and INT64 as a decimal with 20 integer digits; where Spark refuses the file
    (INT64 as double, any integer as float, a decimal without room for every value of the type, whatever the
    file's own values) it has no statistics: it is read, and fails as in plain Spark."""
    big = 2**53 + 1  # not representable as a double
    path = write(tmp_path, "f.parquet", pa.table({"x": pa.array([big, big], pa.int64()),
                                                  "i": pa.array([-7, 2**31 - 1], pa.int32())}))
    assert col(path, "i double") == ColumnStats(-7.0, float(2**31 - 1), 0)
    assert col(path, "i decimal(12,2)") == ColumnStats(Decimal("-7.00"), Decimal(2**31 - 1).quantize(Decimal("0.01")), 0)
    assert col(path, "i decimal(11,2)") == ColumnStats(None, None, None)  # 9 integer digits: Spark refuses INT32
    assert col(path, "x decimal(22,2)") == ColumnStats(Decimal(big), Decimal(big), 0)
    for refused in ("double", "float", "decimal(20,2)", "decimal(5,2)"):
        assert col(path, f"x {refused}") == ColumnStats(None, None, None)


# ---------------------------------------------------------------- floats
def test_footer_float_bounds_are_never_trusted_without_nan_proof(tmp_path):
    # Arrow's writer leaves NaN out of min/max: the footer of a file with NaN looks like one without.
    with_nan = write(tmp_path, "a.parquet", pa.table({"x": [1.0, NAN, 2.0]}))
    without = write(tmp_path, "b.parquet", pa.table({"x": [1.0, 2.0, None]}))
    assert col(with_nan, "x double") == ColumnStats(None, None, 0)
    assert col(without, "x double") == ColumnStats(None, None, 1)


def test_scanned_floats_are_nan_aware(tmp_path):
    with_nan = write(tmp_path, "a.parquet", pa.table({"x": [1.0, NAN, 2.0, None]}))
    all_nan = write(tmp_path, "b.parquet", pa.table({"x": pa.array([NAN, NAN], pa.float32())}))
    clean = write(tmp_path, "c.parquet", pa.table({"x": [1.5, -2.0, None, math.inf]}))
    assert col(with_nan, "x double", scan_floats=True) == ColumnStats(None, None, 1)
    assert col(all_nan, "x float", scan_floats=True) == ColumnStats(None, None, 0)
    assert col(clean, "x double", scan_floats=True) == ColumnStats(-2.0, math.inf, 1)


def test_zero_bounds_are_widened_to_both_signs(tmp_path):
    pos = write(tmp_path, "a.parquet", pa.table({"x": [0.0, 1.0]}))
    neg = write(tmp_path, "b.parquet", pa.table({"x": pa.array([-0.0, -1.0], pa.float32())}))
    s = col(pos, "x double", scan_floats=True)
    assert is_neg_zero(s.min) and s.max == 1.0
    t = col(neg, "x float", scan_floats=True)
    assert t.min == -1.0 and t.max == 0.0 and not is_neg_zero(t.max)
    assert is_neg_zero(float_bound(0.0, False, upper=False))
    assert not is_neg_zero(float_bound(-0.0, True, upper=True))


def test_double_file_read_as_float_has_no_statistics_and_float_as_double_does(tmp_path):
    """Spark refuses a double file under a float column (it reads a float file as double)."""
    path = write(tmp_path, "a.parquet", pa.table({"x": [0.1, 0.7], "f": pa.array([0.5, 1.5], pa.float32())}))
    assert col(path, "x float", scan_floats=True) == ColumnStats(None, None, None)
    assert col(path, "f double", scan_floats=True) == ColumnStats(0.5, 1.5, 0)
    assert float_bound(1e300, True, upper=True) is None  # beyond float32
    assert float_bound(NAN, False, upper=False) is None


# ---------------------------------------------------------------- decimals
@pytest.mark.parametrize("as_integer", [False, True])
def test_decimal_physical_types_and_rescaling(tmp_path, as_integer):
    values = [Decimal("-1.25"), Decimal("3.45"), None]
    table = pa.table(
        {
            "d32": pa.array(values, pa.decimal128(5, 2)),  # INT32 when stored as integer
            "d64": pa.array(values, pa.decimal128(15, 2)),  # INT64
            "dfl": pa.array(values, pa.decimal128(30, 2)),  # always FIXED_LEN_BYTE_ARRAY
        }
    )
    path = write(tmp_path, "f.parquet", table, **writer_options(store_decimal_as_integer=as_integer))
    for name, precision in (("d32", 5), ("d64", 15), ("dfl", 30)):
        assert col(path, f"{name} decimal({precision},2)") == ColumnStats(Decimal("-1.25"), Decimal("3.45"), 1)
        widened = f"{name} decimal({precision + 2},4)"
        assert col(path, widened) == ColumnStats(Decimal("-1.2500"), Decimal("3.4500"), 1)
        # Spark reads a decimal file only as a type with as many places and integer digits: fewer places (ALTER
        # TABLE narrowed it: Hive rounds half-up), or fewer integer digits than the file's type whatever its
        # values, and the file has no statistics at all -- an outward bound (-1.3, 3.5) is no value either reads
        for refused in ("decimal(4,1)", "decimal(3,0)", "decimal(2,2)", f"decimal({precision + 1},4)"):
            assert col(path, f"{name} {refused}") == ColumnStats(None, None, None)


def test_decimal_38_digits_and_scale_per_file(tmp_path):
    top = Decimal("9" * 28 + "." + "9" * 10)
    bottom = Decimal("-" + str(top))  # not -top: unary minus rounds to the context's 28 digits
    path = write(tmp_path, "a.parquet", pa.table({"d": pa.array([top, bottom], pa.decimal128(38, 10))}))
    assert col(path, "d decimal(38,10)") == ColumnStats(bottom, top, 0)
    assert col(path, "d decimal(38,9)") == ColumnStats(None, None, None)  # fewer places than the file's
    # Two files of one table with different scales: the one with fewer places is converted to the table's scale.
    other = write(tmp_path, "b.parquet", pa.table({"d": pa.array([Decimal("0.01")], pa.decimal128(9, 2))}))
    assert col(other, "d decimal(38,10)") == ColumnStats(Decimal("0.0100000000"), Decimal("0.0100000000"), 0)
    assert col(other, "d decimal(10,1)") == ColumnStats(None, None, None)


# ---------------------------------------------------------------- strings, binary, booleans
def test_strings_unicode_order_is_utf8_byte_order(tmp_path):
    values = ["z", "é", "😀", "", "日本", None]
    path = write(tmp_path, "f.parquet", pa.table({"s": values}))
    assert col(path, "s string") == ColumnStats("", "😀", 1)
    assert sorted(v for v in values if v is not None) == sorted(
        (v for v in values if v is not None), key=lambda v: v.encode()
    )


def test_long_strings_dropped_by_the_writer_give_no_bounds(tmp_path):
    """pyarrow writes no max for a string over 4 KiB (before 18 it keeps the min, and its reader then reports
    an empty max): no bounds, whichever pyarrow wrote and reads the file."""
    path = write(tmp_path, "f.parquet", pa.table({"s": ["a", "b" * 10_000]}))
    assert col(path, "s string") == ColumnStats(None, None, 0)


def test_varchar_min_is_cut_max_is_whole_and_char_is_not_bounded(tmp_path):
    """Spark reads a varchar(n) value whole, Hive cut to n characters: the cut min and the whole max bound both
    readings (a max cut to 'éè' would prune a file holding 'éèêë' from Spark's s = 'éèêë')."""
    path = write(tmp_path, "f.parquet", pa.table({"s": ["abcdef", "abx", "éèêë"]}))
    assert col(path, "s varchar(2)") == ColumnStats("ab", "éèêë", 0)
    assert col(path, "s char(10)") == ColumnStats(None, None, 0)


def test_truncated_utf8_bounds():
    source = Source("string", "BYTE_ARRAY")
    cut = "aé".encode()[:-1]  # a writer truncated inside the 2-byte é
    assert convert_bound(cut, source, HiveType("string"), upper=False) == "a"
    assert convert_bound(cut, source, HiveType("string"), upper=True) is None
    assert convert_bound(b"\xff", source, HiveType("string"), upper=False) is None


def test_binary_columns_are_not_bounded_but_unannotated_bytes_can_be_strings(tmp_path):
    path = write(tmp_path, "f.parquet", pa.table({"b": pa.array([b"b", b"a", None], pa.binary())}))
    assert col(path, "b string") == ColumnStats("a", "b", 1)
    assert col(path, "b int") == ColumnStats(None, None, None)  # Spark does not read it as int


def test_booleans(tmp_path):
    path = write(tmp_path, "f.parquet", pa.table({"b": [True, None, False], "t": [True, True, None]}))
    assert col(path, "b boolean") == ColumnStats(False, True, 1)
    assert col(path, "t boolean") == ColumnStats(True, True, 1)


# ---------------------------------------------------------------- dates and timestamps
def test_dates_before_1970_and_far_future(tmp_path):
    days = [-141427, -1, 2932896]  # 1582-10-15, 1969-12-31, 9999-12-31
    path = write(tmp_path, "f.parquet", pa.table({"d": pa.array(days + [None], pa.date32())}))
    assert col(path, "d date") == ColumnStats(-141427, 2932896, 1)


@pytest.mark.parametrize(("values", "arrow_type", "hive_type"), [
    ([dt.date(1000, 1, 1), dt.date(2020, 1, 1)], pa.date32(), "date"),
    ([dt.date(1582, 10, 14), dt.date(1582, 10, 14)], pa.date32(), "date"),
    ([dt.datetime(1899, 12, 31, 23), dt.datetime(2020, 1, 1)], pa.timestamp("us"), "timestamp"),
    ([dt.datetime(1000, 1, 1), dt.datetime(1200, 1, 1)], pa.timestamp("ms", tz="UTC"), "timestamp"),
])
def test_a_bound_spark_may_rebase_is_unknown(tmp_path, values, arrow_type, hive_type):
    """Before 1582-10-15 (dates) or 1900 (timestamps) Spark may read a value days away from the stored one (legacy
    writers, datetimeRebaseModeInRead=LEGACY): such a bound is unknown; a later one in the same file still holds."""
    path = write(tmp_path, "f.parquet", pa.table({"v": pa.array(values, arrow_type)}))
    stats = col(path, f"v {hive_type}")
    assert stats.min is None and stats.null_count == 0
    assert (stats.max is None) == (values[1].year < 1900)


@pytest.mark.parametrize("unit", ["s", "ms", "us", "ns"])
@pytest.mark.parametrize("tz", [None, "UTC", "Asia/Kolkata"])
def test_timestamps_every_unit_and_zone_are_utc_wall_time_in_us(tmp_path, unit, tz):
    lo = dt.datetime(1901, 12, 13, 20, 45, 52, 123456)
    hi = dt.datetime(2038, 1, 19, 3, 14, 7, 654321)
    factor = {"s": 1, "ms": 1000, "us": 10**6, "ns": 10**9}[unit]
    raw = [us(lo) * factor // 10**6, None, us(hi) * factor // 10**6]  # truncated to the unit
    path = write(tmp_path, "f.parquet", pa.table({"t": pa.array(raw, pa.timestamp(unit, tz=tz))}))
    expected_lo = raw[0] * 10**6 // factor if factor <= 10**6 else raw[0] // 1000
    expected_hi = raw[2] * 10**6 // factor if factor <= 10**6 else raw[2] // 1000
    assert col(path, "t timestamp") == ColumnStats(expected_lo, expected_hi, 1)


def test_nanoseconds_floor_the_min_and_ceil_the_max(tmp_path):
    path = write(tmp_path, "f.parquet", pa.table({"t": pa.array([-1, 1501, 7], pa.timestamp("ns"))}))
    assert col(path, "t timestamp") == ColumnStats(-1, 2, 0)


def test_zoned_timestamps_are_stored_as_utc(tmp_path):
    local = dt.datetime(2024, 1, 1, 12, 0, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    path = write(tmp_path, "f.parquet", pa.table({"t": pa.array([local], pa.timestamp("us", tz="+02:00"))}))
    assert col(path, "t timestamp") == ColumnStats(us(dt.datetime(2024, 1, 1, 10)), us(dt.datetime(2024, 1, 1, 10)), 0)


def test_int96_timestamps_are_not_trusted(tmp_path):
    table = pa.table({"t": pa.array([1, 2, None], pa.timestamp("ns"))})
    path = write(tmp_path, "f.parquet", table, use_deprecated_int96_timestamps=True)
    s = col(path, "t timestamp")
    assert s.min is None and s.max is None


# ---------------------------------------------------------------- shapes of files
def test_all_null_file(tmp_path):
    path = write(tmp_path, "f.parquet", pa.table({"x": pa.array([None] * 4, pa.int32())}))
    stats = file_stats(path, "x int")
    assert stats.num_records == 4 and stats.column("x") == ColumnStats(None, None, 4)


def test_empty_file_with_zero_rows(tmp_path):
    table = pa.table({"x": pa.array([], pa.int32()), "s": pa.array([], pa.string())})
    stats = file_stats(write(tmp_path, "f.parquet", table), "x int, s string")
    assert stats.num_records == 0 and stats.error is None
    assert stats.column("x") == ColumnStats(None, None, 0)


def test_row_groups_are_aggregated_including_an_all_null_one(tmp_path):
    values = [5, 9, None, None, -3, 4]
    path = write(tmp_path, "f.parquet", pa.table({"x": pa.array(values, pa.int32())}), row_group_size=2)
    stats = file_stats(path, "x int")
    assert stats.num_records == 6 and stats.column("x") == ColumnStats(-3, 9, 2)


def test_no_statistics_written(tmp_path):
    path = write(tmp_path, "f.parquet", pa.table({"x": [1, 2]}), write_statistics=False)
    stats = file_stats(path, "x bigint")
    assert stats.num_records == 2 and stats.column("x") == ColumnStats(None, None, None)


def test_missing_columns_are_all_null_and_names_match_case_insensitively(tmp_path):
    path = write(tmp_path, "f.parquet", pa.table({"MixedCase": [1, 2, 3]}))
    stats = file_stats(path, "mixedcase bigint, added string")
    assert stats.column("mixedcase") == ColumnStats(1, 3, 0)
    assert stats.column("added") == ColumnStats(None, None, 3)
    assert stats.column("ADDED") == ColumnStats(None, None, 3)


def test_ambiguous_and_nested_names_give_unknown_stats(tmp_path):
    table = pa.table(
        {"a": [1], "A": [2], "st": pa.array([{"x": 1}], pa.struct([("x", pa.int64())])), "l": pa.array([[1]])}
    )
    stats = file_stats(write(tmp_path, "f.parquet", table), "a bigint, st bigint, x bigint, l bigint")
    assert stats.column("a") == ColumnStats()
    assert stats.column("st") == ColumnStats()  # a struct where the table says bigint
    assert stats.column("l") == ColumnStats()
    assert stats.column("x") == ColumnStats(None, None, 1)  # only nested st.x exists: no top-level x


def test_a_type_spark_cannot_read_as_the_columns_has_no_statistics(tmp_path):
    """Not even the null count: `count(x)` must read the file (and fail, as in plain Spark), not be answered."""
    path = write(tmp_path, "f.parquet", pa.table({"x": ["1", None], "d": pa.array([1, None], pa.date32())}))
    assert col(path, "x int") == ColumnStats(None, None, None)
    assert col(path, "d timestamp") == ColumnStats(None, None, None)


def test_dotted_top_level_name(tmp_path):
    path = write(tmp_path, "f.parquet", pa.table({"a.b": [4, 2]}))
    assert col(path, "`a.b` bigint", "a.b") == ColumnStats(2, 4, 0)


@pytest.mark.parametrize("damage", ["garbage", "truncated", "empty", "missing", "bad_magic"])
def test_unreadable_footer_is_recorded_not_raised(tmp_path, damage):
    path = write(tmp_path, "f.parquet", pa.table({"x": list(range(100))}))
    target = Path(path)
    data = target.read_bytes()
    if damage == "garbage":
        target.write_bytes(b"not parquet at all, but long enough")
    elif damage == "truncated":
        target.write_bytes(data[:-20])
    elif damage == "empty":
        target.write_bytes(b"")
    elif damage == "missing":
        target.unlink()
    else:
        target.write_bytes(data[:-4] + b"XXXX")
    stats = file_stats(path, "x bigint")
    assert stats.num_records is None and stats.error
    assert stats.column("x") == ColumnStats()
