"""Values the Python data source's reader gives as Spark's own read gives them (pure Python: no Spark needed)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from storage_handler.errors import DatasetError
from storage_handler.spark.partition_text import spark_cast
from storage_handler.spark.reader import read_split
from storage_handler.split import Split
from storage_handler.types import HiveType, hive_to_arrow, parse_schema_text

EPOCH = dt.date(1970, 1, 1)


def _read(root: Path, columns: list[tuple[str, HiveType]], table: pa.Table, **write: object) -> pa.Table:
    pq.write_table(table, root / "f.parquet", **write)  # type: ignore[arg-type]
    schema = pa.schema([(n, hive_to_arrow(t)) for n, t in columns])
    batches = list(read_split(str(root), Split("f.parquet", 0, ()), schema, columns, []))
    return pa.Table.from_batches(batches, schema)


def test_char_columns_are_padded_as_spark_pads_them(tmp_path: Path) -> None:
    got = _read(tmp_path, parse_schema_text("c char(5)"), pa.table({"c": ["ab", "abcde", "abcdefg", None, "é"]}))
    assert got.column("c").to_pylist() == ["ab   ", "abcde", "abcdefg", None, "é    "]  # longer values stay whole


def test_int96_timestamps_outside_the_nanosecond_range(tmp_path: Path) -> None:
    values = [dt.datetime(1500, 6, 1, 12), dt.datetime(2500, 1, 1), dt.datetime(2024, 5, 6, 7, 8, 9, 123456)]
    table = pa.table({"t": pa.array(values, pa.timestamp("us"))})
    got = _read(tmp_path, parse_schema_text("t timestamp"), table, use_deprecated_int96_timestamps=True)
    assert [v.replace(tzinfo=None) for v in got.column("t").to_pylist()] == values


def _julian_days(year: int, month: int, day: int) -> int:
    """The day number a hybrid-calendar writer stores for a Julian calendar date (before 1582-10-15)."""
    a = (14 - month) // 12
    y, m = year + 4800 - a, month + 12 * a - 3
    return day + (153 * m + 2) // 5 + 365 * y + y // 4 - 32083 - 2440588


@pytest.mark.parametrize(("metadata", "rebased"), [
    ({b"org.apache.spark.version": b"2.4.8"}, True),
    ({b"org.apache.spark.version": b"3.5.1", b"org.apache.spark.legacyDateTime": b""}, True),
    ({b"org.apache.spark.version": b"3.5.1"}, False),
    ({}, False),
])
def test_dates_of_hybrid_calendar_files_are_rebased_as_spark_does(tmp_path: Path, metadata: dict[bytes, bytes],
                                                                    rebased: bool) -> None:
    stored = [_julian_days(1000, 1, 1), _julian_days(1582, 10, 4), (dt.date(2024, 2, 29) - EPOCH).days, None,
              _julian_days(1500, 2, 29)]  # a Julian leap day no proleptic year has: Spark reads 1500-03-01
    table = pa.table({"d": pa.array(stored, pa.int32()).cast(pa.date32())}).replace_schema_metadata(metadata)
    got = _read(tmp_path, parse_schema_text("d date"), table).column("d").to_pylist()
    if rebased:
        assert got == [dt.date(1000, 1, 1), dt.date(1582, 10, 4), dt.date(2024, 2, 29), None, dt.date(1500, 3, 1)]
    else:
        assert got == [EPOCH + dt.timedelta(days=d) if d is not None else None for d in stored]


def test_old_timestamps_of_hybrid_calendar_files_are_refused(tmp_path: Path) -> None:
    legacy = {b"org.apache.spark.version": b"2.4.8"}
    old = pa.table({"t": pa.array([dt.datetime(1850, 1, 1)], pa.timestamp("us"))}).replace_schema_metadata(legacy)
    with pytest.raises(DatasetError, match="before 1900.*read_table"):
        _read(tmp_path, parse_schema_text("t timestamp"), old)
    recent = pa.table({"t": pa.array([dt.datetime(1950, 1, 1)], pa.timestamp("us"))}).replace_schema_metadata(legacy)
    assert _read(tmp_path, parse_schema_text("t timestamp"), recent).column("t")[0].as_py().year == 1950


def test_struct_fields_match_ignoring_case(tmp_path: Path) -> None:
    table = pa.table({"s": pa.array([{"A": 4, "b": "x"}, None], pa.struct([("A", pa.int64()), ("b", pa.string())]))})
    got = _read(tmp_path, parse_schema_text("s struct<a:bigint,b:string>"), table)
    assert got.column("s").to_pylist() == [{"a": 4, "b": "x"}, None]


def test_a_binary_file_column_reads_into_a_string_column_byte_for_byte(tmp_path: Path) -> None:
    table = pa.table({"s": pa.array([b"\xff\xfe", b"ok", None], pa.binary())})
    got = _read(tmp_path, parse_schema_text("s string"), table).column("s").combine_chunks()
    assert got.type == pa.string() and got.view(pa.binary()).to_pylist() == [b"\xff\xfe", b"ok", None]


@pytest.mark.parametrize(("text", "target", "value"), [
    (" b", pa.string(), " b"), ("c ", pa.string(), "c "), ("\td", pa.string(), "\td"),  # strings stay whole
    (" 5\t", pa.int32(), 5), ("\u00a05", pa.int32(), None),  # Spark trims ASCII controls and spaces only
])
def test_partition_text_is_trimmed_only_where_spark_trims(text: str, target: pa.DataType, value: object) -> None:
    assert spark_cast(text, target) == value
