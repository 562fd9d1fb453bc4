"""Locating literals in a column's domain: exact points, floor/ceil between values, folding out of range."""

from __future__ import annotations

import datetime as dt
import math
import sys
from decimal import Decimal

import pytest

from storage_handler.pruning import DomainPoint, UnconvertibleLiteral, convert_literal
from storage_handler.types import parse_hive_type

at, between = DomainPoint.at, DomainPoint.between
MAX = sys.float_info.max


@pytest.mark.parametrize(("type_text", "literal", "expected"), [
    ("int", 5, at(5)),
    ("int", 3_000_000_000, between(2**31 - 1, None)),
    ("int", -3_000_000_000, between(None, -(2**31))),
    ("int", Decimal("1.5"), between(1, 2)),
    ("int", Decimal("-1.5"), between(-2, -1)),
    ("int", 2.0, at(2)),
    ("int", math.inf, between(2**31 - 1, None)),
    ("tinyint", 200, between(127, None)),
    ("bigint", 9.3e18, between(2**63 - 1, None)),
    ("decimal(5,2)", Decimal("1.250"), at(Decimal("1.25"))),
    ("decimal(5,2)", Decimal("1.255"), between(Decimal("1.25"), Decimal("1.26"))),
    ("decimal(5,2)", 1000, between(Decimal("999.99"), None)),
    ("decimal(5,2)", -math.inf, between(None, Decimal("-999.99"))),
    ("decimal(5,2)", 0.1, between(Decimal("0.10"), Decimal("0.11"))),  # the double 0.1 is a bit above 1/10
    ("double", 0.1, at(0.1)),
    ("double", -0.0, at(0.0)),
    ("double", Decimal("0.1"), between(math.nextafter(0.1, -math.inf), 0.1)),  # the double 0.1 > 1/10
    ("double", 2**53 + 1, between(2.0**53, 2.0**53 + 2)),
    ("double", Decimal("1E+400"), between(MAX, math.inf)),
    ("double", -math.inf, at(-math.inf)),
    ("float", 0.1, at(0.1)),  # float bounds are widened to double: exact comparison in doubles
    ("string", "é", at("é")),
    ("varchar(3)", "abcd", at("abcd")),
    ("boolean", True, at(True)),
    ("date", dt.date(2024, 1, 1), at(dt.date(2024, 1, 1))),
    ("date", "2024-01-01", at(dt.date(2024, 1, 1))),
    ("date", dt.datetime(2024, 1, 1), at(dt.date(2024, 1, 1))),
    ("date", dt.datetime(2024, 1, 1, 0, 0, 1), between(dt.date(2024, 1, 1), dt.date(2024, 1, 2))),
    ("date", dt.datetime(9999, 12, 31, 1), between(dt.date(9999, 12, 31), None)),
    ("timestamp", dt.date(2024, 1, 1), at(dt.datetime(2024, 1, 1))),
    ("timestamp", dt.datetime(2024, 1, 1, 0, 0, 0, 1), at(dt.datetime(2024, 1, 1, 0, 0, 0, 1))),
])
def test_convert_literal(type_text: str, literal: object, expected: DomainPoint) -> None:
    assert convert_literal(literal, parse_hive_type(type_text)) == expected


@pytest.mark.parametrize(("type_text", "literal"), [
    ("int", "5"), ("int", True), ("int", math.nan), ("int", Decimal("NaN")), ("int", None), ("double", math.nan),
    ("string", 5), ("string", "\ud800"), ("boolean", 1), ("date", "2024-1-1"), ("date", "2024-02-30"),
    ("date", 20240101), ("timestamp", "2024-01-01 00:00:00"), ("timestamp", dt.datetime(2024, 1, 1, tzinfo=dt.UTC)),
    ("char(3)", "a"), ("binary", "a"), ("array<int>", 1),
])
def test_unconvertible_literals(type_text: str, literal: object) -> None:
    with pytest.raises(UnconvertibleLiteral):
        convert_literal(literal, parse_hive_type(type_text))
