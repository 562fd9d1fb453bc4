"""PredicateLeaf: literal class checks (as Hive refuses a wrong class), shapes, printing and Java equality."""

from __future__ import annotations

import datetime as dt
import enum
import math
from decimal import Decimal

import pytest

from storage_handler.errors import FilterError
from storage_handler.sarg import LeafOperator, LeafType, PredicateLeaf
from storage_handler.sarg.literals import (
    coerce_literal,
    format_literal,
    hive_decimal_string,
    java_timestamp_string,
    literal_key,
)

EQ = LeafOperator.EQUALS


@pytest.mark.parametrize(
    ("leaf_type", "value"),
    [
        (LeafType.LONG, True),
        (LeafType.LONG, 1.0),
        (LeafType.LONG, "1"),
        (LeafType.FLOAT, 1),
        (LeafType.FLOAT, Decimal("1.5")),
        (LeafType.STRING, 1),
        (LeafType.DATE, dt.datetime(2024, 1, 2)),
        (LeafType.DATE, "2024-01-02"),
        (LeafType.DECIMAL, 1.5),
        (LeafType.DECIMAL, 2),
        (LeafType.TIMESTAMP, dt.date(2024, 1, 2)),
        (LeafType.BOOLEAN, 1),
        (LeafType.BOOLEAN, "true"),
    ],
)
def test_wrong_literal_class_is_refused_naming_column_type_and_value(
    leaf_type: LeafType, value: object
) -> None:
    with pytest.raises(FilterError) as info:
        PredicateLeaf(EQ, leaf_type, "price", value)
    message = str(info.value)
    assert "'price'" in message and leaf_type.value in message and repr(value) in message


@pytest.mark.parametrize(
    ("leaf_type", "value", "fragment"),
    [
        (LeafType.LONG, 2**63, "64-bit"),
        (LeafType.LONG, -(2**63) - 1, "64-bit"),
        (LeafType.DECIMAL, Decimal("1E-39"), "38 digits"),
        (LeafType.DECIMAL, Decimal("123456789012345678901234567890123456789"), "38 digits"),
        (LeafType.DECIMAL, Decimal("1234567890123456789012345678901234567.89"), "38 digits"),
        (LeafType.DECIMAL, Decimal("NaN"), "finite"),
        (LeafType.DECIMAL, Decimal("-Infinity"), "finite"),
        (LeafType.TIMESTAMP, dt.datetime(2024, 1, 2, tzinfo=dt.UTC), "time zone"),
    ],
)
def test_values_hive_cannot_hold_exactly_are_refused(
    leaf_type: LeafType, value: object, fragment: str
) -> None:
    with pytest.raises(FilterError, match=fragment):
        PredicateLeaf(EQ, leaf_type, "c", value)


def test_limits_that_are_accepted() -> None:
    for value in (2**63 - 1, -(2**63)):
        PredicateLeaf(EQ, LeafType.LONG, "c", value)
    for text in (
        "1E-38",
        "99999999999999999999999999999999999999",
        "0.12345678901234567890123456789012345678",
        "12345678901234567890123456789012345678.0000",
        "1E+37",
    ):
        PredicateLeaf(EQ, LeafType.DECIMAL, "c", Decimal(text))


@pytest.mark.parametrize(
    ("op", "literal", "literal_list"),
    [
        (LeafOperator.EQUALS, None, ()),
        (LeafOperator.LESS_THAN, 1, (1,)),
        (LeafOperator.IN, None, ()),
        (LeafOperator.IN, 1, (1,)),
        (LeafOperator.BETWEEN, None, (1,)),
        (LeafOperator.BETWEEN, None, (1, None)),
        (LeafOperator.IS_NULL, 1, ()),
        (LeafOperator.IS_NULL, None, (1,)),
    ],
)
def test_malformed_shapes_are_refused(op: LeafOperator, literal: object, literal_list: tuple) -> None:
    with pytest.raises(FilterError, match=op.value):
        PredicateLeaf(op, LeafType.LONG, "c", literal, literal_list)


def test_bad_operator_type_column_and_list_container() -> None:
    with pytest.raises(FilterError):
        PredicateLeaf("EQUALS", LeafType.LONG, "c", 1)  # type: ignore[arg-type]
    with pytest.raises(FilterError):
        PredicateLeaf(EQ, "LONG", "c", 1)  # type: ignore[arg-type]
    with pytest.raises(FilterError):
        PredicateLeaf(EQ, LeafType.LONG, 3, 1)  # type: ignore[arg-type]
    with pytest.raises(FilterError):
        PredicateLeaf(LeafOperator.IN, LeafType.LONG, "c", None, {1, 2})  # type: ignore[arg-type]
    leaf = PredicateLeaf(LeafOperator.IN, LeafType.LONG, "c", None, [1, 2])  # type: ignore[arg-type]
    assert leaf.literal_list == (1, 2)


def test_leaf_is_frozen_hashable_and_printed_like_hive() -> None:
    leaf = PredicateLeaf(LeafOperator.IN, LeafType.STRING, "event id", None, ("a b", None))
    assert str(leaf) == leaf.to_string() == "(IN event id a b null)"
    assert {leaf: 1}[PredicateLeaf(LeafOperator.IN, LeafType.STRING, "event id", None, ("a b", None))] == 1
    with pytest.raises(AttributeError):
        leaf.column_name = "other"  # type: ignore[misc]
    assert PredicateLeaf(LeafOperator.IS_NULL, LeafType.LONG, "z").to_string() == "(IS_NULL z)"
    assert (
        PredicateLeaf(LeafOperator.BETWEEN, LeafType.LONG, "y", None, (1, 5)).to_string() == "(BETWEEN y 1 5)"
    )


def test_keys_follow_java_equals() -> None:
    def key(leaf_type: LeafType, value: object) -> object:
        return PredicateLeaf(EQ, leaf_type, "c", value).key()

    assert key(LeafType.FLOAT, math.nan) == key(LeafType.FLOAT, -math.nan)
    assert key(LeafType.FLOAT, -0.0) != key(LeafType.FLOAT, 0.0)
    assert key(LeafType.DECIMAL, Decimal("12.50")) == key(LeafType.DECIMAL, Decimal("12.5"))
    assert key(LeafType.DECIMAL, Decimal("-0")) == key(LeafType.DECIMAL, Decimal("0.00"))
    assert key(LeafType.DATE, dt.date(1582, 10, 5)) == key(LeafType.DATE, dt.date(1582, 10, 15))
    assert key(LeafType.DATE, dt.date(1582, 10, 4)) != key(LeafType.DATE, dt.date(1582, 10, 14))
    assert key(LeafType.TIMESTAMP, dt.datetime(1582, 10, 14, 1)) == key(
        LeafType.TIMESTAMP, dt.datetime(1582, 10, 24, 1)
    )
    assert key(LeafType.LONG, 1) != key(LeafType.BOOLEAN, True)
    assert key(LeafType.STRING, "\U0001d11e") == key(LeafType.STRING, "\ud834\udd1e")  # same UTF-16 units
    assert literal_key("STRING", "a") != literal_key("STRING", "b")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("12.50", "12.5"),
        ("100", "100"),
        ("1E+2", "100"),
        ("-0", "0"),
        ("0.000", "0"),
        ("-0.0001", "-0.0001"),
        ("1E-38", "0.00000000000000000000000000000000000001"),
        ("-12.340", "-12.34"),
        ("5", "5"),
    ],
)
def test_hive_decimal_printing(text: str, expected: str) -> None:
    assert hive_decimal_string(Decimal(text)) == expected


def test_date_and_timestamp_printing() -> None:
    assert format_literal("DATE", dt.date(1, 2, 3)) == "0001-02-03"
    assert format_literal("DATE", dt.date(1582, 10, 14)) == "1582-10-24"
    assert java_timestamp_string(dt.datetime(2024, 1, 2, 10, 11, 12, 500000)) == "2024-01-02 10:11:12.5"
    assert java_timestamp_string(dt.datetime(2024, 1, 2)) == "2024-01-02 00:00:00.0"
    assert java_timestamp_string(dt.datetime(2024, 1, 2, 0, 0, 0, 1)) == "2024-01-02 00:00:00.000001"
    assert format_literal("BOOLEAN", False) == "false"
    assert format_literal("FLOAT", 1e10) == "1.0E10"


def test_coercion_of_subclasses_only() -> None:
    class Size(enum.IntEnum):
        BIG = 3

    class MyFloat(float):
        pass

    assert type(coerce_literal("LONG", Size.BIG)) is int
    assert type(coerce_literal("FLOAT", MyFloat(1.5))) is float
    assert coerce_literal("LONG", True) is True  # refused later, as Hive refuses a Boolean for LONG
    assert type(coerce_literal("DATE", dt.datetime(2024, 1, 1))) is dt.datetime  # refused later too
