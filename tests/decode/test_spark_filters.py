from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from storage_handler.decode.filters import (
    EqualNullSafe,
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNotNull,
    IsNull,
    LessThan,
    LessThanOrEqual,
    Not,
    StringContains,
    StringEndsWith,
    StringStartsWith,
)
from storage_handler.decode.spark_filters import decode_spark_filters, escape_like, prefix_upper_bound
from storage_handler.expr import to_hiveql

SCHEMA = ("id int, name string, price decimal(10,2), dt date, ts timestamp, score double, ok boolean, "
          "code char(2), s struct<a:int>, bin binary")


def one(f):
    result = decode_spark_filters([f], SCHEMA)
    return result, result.decoded.sarg.to_old_string()


@pytest.mark.parametrize(
    ("f", "hiveql", "sarg"),
    [
        (EqualTo(("id",), 1), "`id` = 1", "leaf-0 = (EQUALS id 1), expr = leaf-0"),
        (EqualTo(("ID",), 1), "`id` = 1", "leaf-0 = (EQUALS id 1), expr = leaf-0"),
        (EqualNullSafe(("id",), 1), "`id` <=> 1", "leaf-0 = (NULL_SAFE_EQUALS id 1), expr = leaf-0"),
        (EqualNullSafe(("id",), None), "`id` IS NULL", "leaf-0 = (IS_NULL id), expr = leaf-0"),
        (GreaterThan(("id",), 1), "`id` > 1", "leaf-0 = (LESS_THAN_EQUALS id 1), expr = (not leaf-0)"),
        (GreaterThanOrEqual(("id",), 1), "`id` >= 1", "leaf-0 = (LESS_THAN id 1), expr = (not leaf-0)"),
        (LessThan(("price",), Decimal("9.99")), "`price` < CAST('9.99' AS DECIMAL(3,2))",
         "leaf-0 = (LESS_THAN price 9.99), expr = leaf-0"),
        (LessThanOrEqual(("dt",), dt.date(2024, 1, 1)), "`dt` <= DATE '2024-01-01'",
         "leaf-0 = (LESS_THAN_EQUALS dt 2024-01-01), expr = leaf-0"),
        (In(("name",), ("a", "b")), "`name` IN ('a', 'b')", "leaf-0 = (IN name a b), expr = leaf-0"),
        (In(("id",), [1, 2]), "`id` IN (1, 2)", "leaf-0 = (IN id 1 2), expr = leaf-0"),
        (In(("id",), (1, None)), "`id` IN (1, NULL)", "leaf-0 = (IN id 1 null), expr = leaf-0"),  # as Hive keeps it
        (IsNull(("name",)), "`name` IS NULL", "leaf-0 = (IS_NULL name), expr = leaf-0"),
        (IsNotNull(("name",)), "`name` IS NOT NULL", "leaf-0 = (IS_NULL name), expr = (not leaf-0)"),
        (Not(EqualTo(("id",), 1)), "NOT (`id` = 1)", "leaf-0 = (EQUALS id 1), expr = (not leaf-0)"),
        (EqualTo(("ok",), True), "`ok` = TRUE", "leaf-0 = (EQUALS ok true), expr = leaf-0"),
        (EqualTo(("score",), 0.5), "`score` = 0.5E0",
         "leaf-0 = (EQUALS score 0.5), expr = leaf-0"),
        (EqualTo(("ts",), dt.datetime(2024, 1, 2, 3, 4, 5, 600000)), "`ts` = TIMESTAMP '2024-01-02 03:04:05.6'",
         "leaf-0 = (EQUALS ts 2024-01-02 03:04:05.6), expr = leaf-0"),
        (EqualTo(("ts",), dt.datetime(2024, 1, 2, 5, tzinfo=dt.timezone(dt.timedelta(hours=2)))),
         "`ts` = TIMESTAMP '2024-01-02 03:00:00'", "leaf-0 = (EQUALS ts 2024-01-02 03:00:00.0), expr = leaf-0"),
        (StringStartsWith(("name",), "ab"), "`name` LIKE 'ab%' AND `name` >= 'ab' AND `name` < 'ac'",
         "leaf-0 = (LESS_THAN name ab), leaf-1 = (LESS_THAN name ac), expr = (and (not leaf-0) leaf-1)"),
    ],
)
def test_converted_filters(f, hiveql, sarg):
    result, text = one(f)
    assert to_hiveql(result.decoded.residual) == hiveql
    assert text == sarg
    assert result.converted == (f,) and result.unsupported == ()


@pytest.mark.parametrize(
    ("f", "hiveql"),
    [
        (StringEndsWith(("name",), "a%_"), "`name` LIKE '%a\\\\%\\\\_'"),
        (StringContains(("name",), "x"), "`name` LIKE '%x%'"),
        (StringStartsWith(("code",), "a"), "`code` LIKE 'a%'"),
        (EqualTo(("id",), "abc"), "`id` = 'abc'"),
        (EqualTo(("code",), "ab"), "`code` = 'ab'"),
        (EqualTo(("bin",), b"\x00"), "`bin` = unhex('00')"),
        (Not(StringStartsWith(("name",), "ab")), "NOT (`name` LIKE 'ab%' AND `name` >= 'ab' AND `name` < 'ac')"),
        (EqualTo(("id",), None), "`id` = NULL"),
    ],
)
def test_expressible_but_not_pushed(f, hiveql):
    result, text = one(f)
    assert to_hiveql(result.decoded.residual) == hiveql
    assert text == "expr = YES_NO_NULL"
    assert result.converted == () and result.unsupported == (f,)


@pytest.mark.parametrize(
    "f",
    [EqualTo(("s", "a"), 1), EqualTo(("nope",), 1), EqualTo(("id",), [1, 2]), In(("id",), ()),
     Not(EqualTo(("s", "a"), 1)), EqualTo(("id",), {"a": 1}), StringStartsWith(("name",), 5)],
)
def test_unsupported_filters_are_left_out(f):
    result, text = one(f)
    assert result.decoded.residual is None
    assert text == "expr = YES_NO_NULL"
    assert result.converted == () and result.unsupported == (f,)


def test_and_of_filters():
    filters = [EqualTo(("id",), 1), StringContains(("name",), "x"), EqualTo(("nope",), 1), GreaterThan(("dt",),
                                                                                                  dt.date(2024, 1, 1))]
    result = decode_spark_filters(filters, SCHEMA)
    assert result.decoded.sarg.to_old_string() == (
        "leaf-0 = (EQUALS id 1), leaf-1 = (LESS_THAN_EQUALS dt 2024-01-01), expr = (and leaf-0 (not leaf-1))"
    )
    assert result.converted == (filters[0], filters[3])
    assert result.unsupported == (filters[2], filters[1])
    assert to_hiveql(result.decoded.residual) == "`id` = 1 AND `name` LIKE '%x%' AND `dt` > DATE '2024-01-01'"
    assert to_hiveql(result.decoded.pushed) == "`id` = 1 AND `dt` > DATE '2024-01-01'"


def test_no_filters():
    result = decode_spark_filters([], SCHEMA)
    assert result.decoded.residual is None and result.converted == () and result.unsupported == ()


def test_like_escaping():
    assert escape_like("a\\b%c_d") == "a\\\\b\\%c\\_d"


@pytest.mark.parametrize(
    ("prefix", "upper"),
    [("ab", "ac"), ("a\U0010ffff", "b"), ("\U0010ffff", None), ("", None), ("a\ud7ff", "a\ue000"), ("é", "ê")],
)
def test_prefix_upper_bound(prefix, upper):
    assert prefix_upper_bound(prefix) == upper


@pytest.mark.parametrize("value", ["ab", "ab\x00", "ab\U0010ffff", "abz" * 5, "ab" + "\ud7ff", "ab\ue000"])
def test_prefix_range_contains_every_string_with_the_prefix(value):
    assert "ab" <= value < prefix_upper_bound("ab")
    assert value.encode("utf-8", "surrogatepass") >= b"ab"
    assert value.encode("utf-8", "surrogatepass") < prefix_upper_bound("ab").encode("utf-8")


@pytest.mark.parametrize("value", ["aa", "ac", "b", "a", ""])
def test_prefix_range_excludes_strings_without_the_prefix(value):
    assert not ("ab" <= value < prefix_upper_bound("ab"))
