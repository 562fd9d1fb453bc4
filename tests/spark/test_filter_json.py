"""The JSON form of Spark filters the JVM side sends decodes to what Spark's Python data-source API delivers."""

from __future__ import annotations

import datetime as dt
import math
import struct
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from storage_handler.decode import filters as ds
from storage_handler.decode.filters import And, Or
from storage_handler.decode.spark_filters import decode_spark_filters
from storage_handler.errors import FilterError
from storage_handler.spark.filter_json import decode_filter, decode_filters, decode_value
from storage_handler.types import parse_hive_type


def _bits(x: float) -> dict:
    return {"t": "double", "bits": str(struct.unpack("<q", struct.pack("<d", x))[0])}


@pytest.mark.parametrize(("value", "expected"), [
    ({"t": "null"}, None),
    ({"t": "bool", "v": False}, False),
    ({"t": "int", "v": -(2**63)}, -(2**63)),
    ({"t": "decimal", "v": "12.50"}, Decimal("12.50")),
    ({"t": "string", "v": "épsilon"}, "épsilon"),
    ({"t": "date", "v": "1969-12-31"}, dt.date(1969, 12, 31)),
    ({"t": "timestamp", "micros": -1}, dt.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=dt.UTC)),
    ({"t": "timestamp_ntz", "v": "2020-01-01T00:00"}, dt.datetime(2020, 1, 1)),
    ({"t": "binary", "v": "AAE="}, b"\x00\x01"),
])
def test_values(value: dict, expected: object) -> None:
    assert decode_value(value) == expected


@given(st.floats(allow_nan=False) | st.just(-0.0))
def test_doubles_are_bit_exact(x: float) -> None:
    got = decode_value(_bits(x))
    assert got == x and math.copysign(1, got) == math.copysign(1, x)


def test_nan() -> None:
    assert math.isnan(decode_value(_bits(math.nan)))


@pytest.mark.parametrize("value", [
    {"t": "int", "v": "5"}, {"t": "int", "v": True}, {"t": "bool", "v": 1}, {"t": "date", "v": "2020-13-01"},
    {"t": "decimal", "v": "x"}, {"t": "binary", "v": "**"}, {"t": "map"}, {"t": "string"}, "5",
])
def test_malformed_values_are_errors(value: object) -> None:
    with pytest.raises(FilterError):
        decode_value(value)


def test_filters_nest() -> None:
    node = {"op": "Not", "child": {"op": "Or",
            "left": {"op": "In", "attribute": "a", "values": [{"t": "int", "v": 1}, {"t": "null"}]},
            "right": {"op": "And", "left": {"op": "IsNull", "attribute": "b"},
                      "right": {"op": "StringStartsWith", "attribute": "b", "value": {"t": "string", "v": "x"}}}}}
    assert decode_filter(node) == ds.Not(Or(ds.In(("a",), (1, None)),
                                            And(ds.IsNull(("b",)), ds.StringStartsWith(("b",), "x"))))


@pytest.mark.parametrize("nodes", [{"op": "IsNull"}, [{"op": "Between", "attribute": "a"}], [{"op": "And"}], [5]])
def test_malformed_filters_are_errors(nodes: object) -> None:
    with pytest.raises(FilterError):
        decode_filters(nodes if isinstance(nodes, list) else [nodes])


def test_and_or_reach_the_search_argument() -> None:
    schema = [("a", parse_hive_type("int")), ("b", parse_hive_type("string"))]
    f = Or(ds.EqualTo(("a",), 1), And(ds.GreaterThan(("a",), 5), ds.IsNull(("b",))))
    decoded = decode_spark_filters([f], schema)
    assert decoded.converted == (f,)
    text = decoded.decoded.sarg.to_old_string()
    assert "EQUALS a 1" in text and "IS_NULL b" in text and "LESS_THAN_EQUALS a 5" in text


def test_or_with_an_unsupported_side_is_not_pushed() -> None:
    schema = [("a", parse_hive_type("int"))]
    f = Or(ds.EqualTo(("a",), 1), ds.EqualTo(("nested", "x"), 2))
    decoded = decode_spark_filters([f], schema)
    assert decoded.unsupported == (f,) and decoded.converted == ()
