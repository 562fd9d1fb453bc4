from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from storage_handler.decode.literals import cast_constant, leaf_literal, parse_timestamp
from storage_handler.expr import Constant, lit
from storage_handler.sarg.literals import NanoTimestamp
from storage_handler.types import parse_hive_type


def T(text: str):
    return parse_hive_type(text)


@pytest.mark.parametrize(
    ("value", "column", "expected"),
    [
        (5, "tinyint", 5), (127, "tinyint", 127), (128, "tinyint", None), (-129, "tinyint", None),
        (2**31, "int", None), (2**31, "bigint", 2**31), (2**63, "bigint", None), (True, "int", None),
        (2.0, "int", 2), (2.5, "int", None), (math.inf, "bigint", None), (Decimal("3.00"), "int", 3),
        (Decimal("3.01"), "int", None), (Decimal("1E+50"), "bigint", None), ("42", "int", 42), ("-42", "int", -42),
        ("4.0", "int", None), (" 4", "int", None), ("9" * 50, "bigint", None), (dt.date(2024, 1, 1), "int", None),
        (1, "double", 1.0), (2**53 + 1, "double", None), (0.1, "double", 0.1), (math.nan, "double", None),
        (math.inf, "double", math.inf), (Decimal("0.1"), "double", 0.1), ("0.1", "double", 0.1),
        ("NaN", "double", None), (Decimal("1E+400"), "double", None), (True, "double", None),
        (0.5, "float", 0.5), (0.1, "float", None), (16777217, "float", None), (Decimal("0.25"), "float", 0.25),
        (Decimal("0.1"), "float", None), ("0.1", "float", None),
        ("a", "string", "a"), ("a", "varchar(5)", "a"), (5, "string", None), ("a", "char(3)", None),
        (dt.date(2024, 1, 1), "date", dt.date(2024, 1, 1)), (dt.datetime(2024, 1, 1), "date", dt.date(2024, 1, 1)),
        (dt.datetime(2024, 1, 1, 0, 0, 1), "date", None), ("2024-02-29", "date", dt.date(2024, 2, 29)),
        ("2023-02-29", "date", None), ("2024-1-1", "date", None),
        (dt.datetime(2024, 1, 1, 1), "timestamp", dt.datetime(2024, 1, 1, 1)),
        (dt.date(2024, 1, 1), "timestamp", dt.datetime(2024, 1, 1)),
        (dt.datetime(2024, 1, 1, tzinfo=dt.UTC), "timestamp", None),
        ("2024-01-01T10:00:00", "timestamp", dt.datetime(2024, 1, 1, 10)), ("2024-01-01 25:00:00", "timestamp", None),
        (Decimal("12.5"), "decimal(5,2)", Decimal("12.50")), (Decimal("1.234"), "decimal(5,2)", None),
        (1000, "decimal(5,2)", None), (999, "decimal(5,2)", Decimal("999.00")), ("1.5", "decimal(5,2)", Decimal("1.50")),
        (0.5, "decimal(5,2)", Decimal("0.50")), (0.5, "decimal(20,2)", None), (0.1, "decimal(5,2)", Decimal("0.10")),
        (True, "decimal(5,2)", None),
        (True, "boolean", True), (1, "boolean", None), ("true", "boolean", None),
        (b"a", "binary", None), (1, "array<int>", None), (None, "int", None),
        # compared as doubles (a float literal; a string in Hive): from 2**53 on several longs equal one double
        (2.0**53, "bigint", None), (-(2.0**53), "bigint", None), (2.0**53 - 2, "bigint", 2**53 - 2),
        ("9007199254740992", "bigint", None), ("9007199254740991", "bigint", 2**53 - 1), (2**60, "bigint", 2**60),
        ("1.5", "decimal(20,2)", None), (Decimal("1.5"), "decimal(20,2)", Decimal("1.50")),
    ],
)
def test_leaf_literal(value, column, expected):
    result = leaf_literal(value, T(column))
    assert result == expected
    if expected is not None:
        assert type(result) is type(expected)


@pytest.mark.parametrize(
    ("const", "target", "expected"),
    [
        (lit("5"), "int", lit(5)), (lit(5), "bigint", Constant(5, T("bigint"))), (lit(1.0), "int", lit(1)),
        (lit(1.5), "int", None), (lit("x"), "int", None), (lit(300), "tinyint", None),
        (lit("1e3"), "double", lit(1000.0)), (lit(0.1), "float", None),
        (lit(Decimal("12.5")), "decimal(5,2)", Constant(Decimal("12.50"), T("decimal(5,2)"))),
        (lit(1.5), "decimal(3,1)", Constant(Decimal("1.5"), T("decimal(3,1)"))),
        (lit("ab"), "varchar(2)", Constant("ab", T("varchar(2)"))), (lit("abc"), "varchar(2)", None),
        (lit("2024-01-01"), "date", lit(dt.date(2024, 1, 1))), (lit("2024-01-01"), "timestamp",
                                                              lit(dt.datetime(2024, 1, 1))),
        (lit("é"), "binary", lit("é".encode())), (lit(True), "boolean", lit(True)), (lit(1), "boolean", None),
        (Constant(None, None), "int", Constant(None, T("int"))), (lit(1), "array<int>", None),
    ],
)
def test_cast_constant_folds_only_exact_casts(const, target, expected):
    assert cast_constant(const, T(target)) == expected


def test_java_double_words():
    assert math.isnan(cast_constant(lit("NaN"), T("double")).value)
    assert cast_constant(lit("-Infinity"), T("double")).value == -math.inf


def test_timestamp_fraction_beyond_microseconds_keeps_the_nanoseconds():
    assert parse_timestamp("2024-01-01 00:00:00.123456789") == NanoTimestamp(dt.datetime(2024, 1, 1, 0, 0, 0, 123456), 789)
    assert parse_timestamp("2024-01-01 00:00:00.123456000") == dt.datetime(2024, 1, 1, 0, 0, 0, 123456)
    assert parse_timestamp("2024-01-01") == dt.datetime(2024, 1, 1)


_OPS = {"=": lambda a, b: a == b, "<": lambda a, b: a < b, "<=": lambda a, b: a <= b}


@given(st.integers(-(2**63), 2**63 - 1), st.integers(-4, 4), st.booleans(), st.sampled_from(sorted(_OPS)))
def test_a_converted_double_or_string_literal_compares_like_the_engines_on_a_bigint(row, delta, as_text, op):
    """Safety: Spark and Hive compare a bigint column with a double literal (Hive: with a string literal too) as
    doubles; a converted literal must give their answer for every row, the neighbouring ones above all."""
    literal: object = str(row + delta) if as_text else float(row + delta)
    converted = leaf_literal(literal, T("bigint"))
    if converted is None:
        return
    assert _OPS[op](row, converted) == _OPS[op](float(row), float(literal))


@given(st.integers(-(2**31), 2**31 - 1),
       st.one_of(st.integers(), st.decimals(allow_nan=False, allow_infinity=False), st.floats(allow_nan=False),
                 st.integers().map(str)),
       st.sampled_from(sorted(_OPS)))
def test_a_converted_integer_literal_compares_like_the_exact_value(row, literal, op):
    """Safety: whenever a literal is converted, comparing with it gives the exact numeric answer."""
    converted = leaf_literal(literal, T("int"))
    if converted is None:
        return
    exact = Decimal(literal) if not isinstance(literal, float) else Decimal(literal)
    assert _OPS[op](row, converted) == _OPS[op](Decimal(row), exact)


@given(st.decimals(min_value=-999, max_value=999, places=2),
       st.one_of(st.integers(-2000, 2000), st.decimals(allow_nan=False, allow_infinity=False),
                 st.floats(-2000, 2000), st.floats(width=32)),
       st.sampled_from(sorted(_OPS)))
def test_a_converted_decimal_literal_compares_like_the_value(row, literal, op):
    converted = leaf_literal(literal, T("decimal(5,2)"))
    if converted is None:
        return
    engine = float(literal) if isinstance(literal, float) else Decimal(literal)
    row_value = float(row) if isinstance(literal, float) else row  # engines compare decimal vs double as doubles
    assert _OPS[op](row, converted) == _OPS[op](row_value, engine)


@given(st.floats(width=32, allow_nan=False), st.one_of(st.integers(), st.floats(allow_nan=False),
                                                      st.decimals(allow_nan=False, allow_infinity=False)),
       st.sampled_from(sorted(_OPS)))
def test_a_converted_float32_literal_is_exact(row, literal, op):
    converted = leaf_literal(literal, T("float"))
    if converted is None:
        return
    assert _OPS[op](row, converted) == _OPS[op](Decimal(row), Decimal(literal))
