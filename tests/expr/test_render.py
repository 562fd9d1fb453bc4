from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from hypothesis import given, settings

from storage_handler.decode.hiveql import parse_filter
from storage_handler.expr import Call, Column, Constant, between, call, in_, lit, not_, or_, serde, to_hiveql
from storage_handler.expr.nodes import and_
from storage_handler.expr.render import quote_identifier, quote_string
from storage_handler.types import HiveType, parse_hive_type
from tests.expr.strategies import SCHEMA, expressions
from tests.helpers import examples

X = Column("x", HiveType("int"))
Y = Column("y", HiveType("string"))
Z = Column("z", HiveType("int"))


def T(text: str) -> HiveType:
    return parse_hive_type(text)


def test_design_example():
    expr = or_(and_(call("=", X, lit(1)), call("<", Y, lit("abc"))), not_(call("isnull", Z)))
    assert to_hiveql(expr) == "`x` = 1 AND `y` < 'abc' OR NOT (`z` IS NULL)"
    assert str(expr) == to_hiveql(expr)


@pytest.mark.parametrize(
    ("const", "text"),
    [(lit(5), "5"), (lit(-5), "-5"), (Constant(5, T("bigint")), "5L"), (Constant(5, T("smallint")), "5S"),
     (Constant(5, T("tinyint")), "5Y"), (Constant(-5, T("bigint")), "CAST(-5 AS BIGINT)"),
     (lit(1.5), "1.5E0"), (lit(1e20), "1E+20"), (lit(-0.0), "-0.0E0"), (lit(float("nan")), "CAST('NaN' AS DOUBLE)"),
     (lit(float("-inf")), "CAST('-Infinity' AS DOUBLE)"), (Constant(1.5, T("float")), "CAST(1.5E0 AS FLOAT)"),
     (lit(Decimal("12.50")), "CAST('12.50' AS DECIMAL(4,2))"), (lit("it's \\ ok"), "'it\\'s \\\\ ok'"),
     (lit("a\nb"), "'a\\u000Ab'"), (Constant("ab", T("varchar(5)")), "CAST('ab' AS VARCHAR(5))"),
     (lit(b"\x00\xff"), "unhex('00FF')"), (lit(dt.date(2024, 1, 1)), "DATE '2024-01-01'"),
     (lit(dt.date(999, 1, 1)), "DATE '0999-01-01'"),
     (lit(dt.datetime(2024, 1, 2, 10, 11, 12, 500000)), "TIMESTAMP '2024-01-02 10:11:12.5'"),
     (lit(dt.datetime(2024, 1, 2)), "TIMESTAMP '2024-01-02 00:00:00'"), (lit(True), "TRUE"), (lit(False), "FALSE"),
     (Constant(None, None), "NULL"), (Constant(None, T("int")), "CAST(NULL AS INT)")],
)
def test_typed_literals(const, text):
    assert to_hiveql(const) == text


@pytest.mark.parametrize(
    ("expr", "text"),
    [(between(X, lit(1), lit(5)), "`x` BETWEEN 1 AND 5"),
     (between(X, lit(1), lit(5), invert=True), "`x` NOT BETWEEN 1 AND 5"),
     (not_(between(X, lit(1), lit(5))), "NOT (`x` BETWEEN 1 AND 5)"),
     (in_(X, lit(1), lit(2)), "`x` IN (1, 2)"), (call("isnotnull", X), "`x` IS NOT NULL"),
     (call("<=>", X, Constant(None, None)), "`x` <=> NULL"), (call("like", Y, lit("a%")), "`y` LIKE 'a%'"),
     (call("=", call("*", call("+", X, lit(1)), lit(2)), lit(4)), "(`x` + 1) * 2 = 4"),
     (call("=", call("-", X, lit(-1)), lit(0)), "`x` - (-1) = 0"),
     (call("=", call("negative", X), lit(0)), "-(`x`) = 0"),
     (and_(or_(call("=", X, lit(1)), call("=", X, lit(2))), call("=", Z, lit(3))),
      "(`x` = 1 OR `x` = 2) AND `z` = 3"),
     (call("=", Call("cast", (Y, lit("decimal(10,2)"))), lit(1)), "CAST(`y` AS DECIMAL(10,2)) = 1"),
     (call("=", call("upper", Y), lit("A")), "upper(`y`) = 'A'"),
     (not_(Column("b", HiveType("boolean"))), "NOT `b`")],
)
def test_operators_and_precedence(expr, text):
    assert to_hiveql(expr) == text


def test_quoting():
    assert quote_identifier("a`b") == "`a``b`"
    assert quote_string("'\\\t") == "'\\'\\\\\\u0009'"


@settings(max_examples=examples(300), deadline=None)
@given(expressions)
def test_hiveql_round_trip(expr):
    text = to_hiveql(expr)
    parsed = parse_filter(text, SCHEMA)
    assert serde.dumps(parsed) == serde.dumps(expr), text


def test_deep_nesting_is_a_filter_error():
    from storage_handler.errors import FilterError

    expr = call("=", X, lit(1))
    for _ in range(5000):
        expr = not_(expr)
    with pytest.raises(FilterError, match="nested too deeply"):
        to_hiveql(expr)
