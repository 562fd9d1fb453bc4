"""Hive type parsing and the Arrow <-> Hive mapping."""

from __future__ import annotations

import pyarrow as pa
import pytest

from storage_handler.errors import SchemaError
from storage_handler.types import arrow_to_hive, hive_to_arrow, parse_hive_type, parse_schema_text


@pytest.mark.parametrize(
    ("arrow", "hive"),
    [
        (pa.int8(), "tinyint"), (pa.int16(), "smallint"), (pa.int32(), "int"), (pa.int64(), "bigint"),
        (pa.uint8(), "smallint"), (pa.uint32(), "bigint"), (pa.float32(), "float"), (pa.float64(), "double"),
        (pa.decimal128(38, 10), "decimal(38,10)"), (pa.string(), "string"), (pa.large_string(), "string"),
        (pa.binary(), "binary"), (pa.bool_(), "boolean"), (pa.date32(), "date"),
        (pa.timestamp("ns", "UTC"), "timestamp"), (pa.timestamp("ms"), "timestamp"),
        (pa.list_(pa.int32()), "array<int>"), (pa.map_(pa.string(), pa.float64()), "map<string,double>"),
        (pa.struct([("A", pa.int8()), ("b", pa.string())]), "struct<a:tinyint,b:string>"),
    ],
)
def test_arrow_to_hive(arrow: pa.DataType, hive: str) -> None:
    assert str(arrow_to_hive(arrow)) == hive
    assert str(parse_hive_type(hive)) == hive


@pytest.mark.parametrize("arrow", [pa.uint64(), pa.float16(), pa.duration("s"), pa.decimal256(40, 2)])
def test_unrepresentable_types_are_refused_naming_the_column(arrow: pa.DataType) -> None:
    with pytest.raises(SchemaError, match="'col'"):
        arrow_to_hive(arrow, "col")


def test_hive_to_arrow_reads_varchar_and_char_as_string() -> None:
    assert hive_to_arrow("varchar(10)") == pa.string()
    assert hive_to_arrow("char(3)") == pa.string()
    assert hive_to_arrow("decimal(12,3)") == pa.decimal128(12, 3)
    assert hive_to_arrow("timestamp") == pa.timestamp("us")


def test_schema_text() -> None:
    cols = parse_schema_text("A int, b decimal(10,2), c map<string,array<int>>, `d` varchar(5)")
    assert [(n, str(t)) for n, t in cols] == [
        ("a", "int"), ("b", "decimal(10,2)"), ("c", "map<string,array<int>>"), ("d", "varchar(5)")
    ]
    with pytest.raises(SchemaError):
        parse_schema_text("a")
    with pytest.raises(SchemaError):
        parse_hive_type("decimal(50,2)")
