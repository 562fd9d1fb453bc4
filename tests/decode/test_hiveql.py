from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from storage_handler.decode.hiveql import parse_filter
from storage_handler.errors import FilterError
from storage_handler.expr import Call, Column, Constant, lit
from storage_handler.expr.nodes import OPAQUE, between
from storage_handler.types import HiveType, parse_hive_type, parse_schema_text

SCHEMA = parse_schema_text(
    "x int, y string, z int, b boolean, d decimal(5,2), dt date, ts timestamp, f double, s struct<a:int>, "
    "EventId string"
)
X = Column("x", HiveType("int"))
Y = Column("y", HiveType("string"))


def T(text: str) -> HiveType:
    return parse_hive_type(text)


def test_design_example():
    expr = parse_filter("(x = 1 AND y < 'abc') OR NOT (z IS NULL)", SCHEMA)
    z = Column("z", HiveType("int"))
    assert expr == Call("or", (Call("and", (Call("=", (X, lit(1))), Call("<", (Y, lit("abc"))))),
                               Call("not", (Call("isnull", (z,)),))))


@pytest.mark.parametrize("text", ["X = 1", "x = 1", "`X` = 1", "`x` = 1"])
def test_columns_bind_case_insensitively(text):
    assert parse_filter(text, SCHEMA) == Call("=", (X, lit(1)))


def test_schema_forms():
    for schema in ("x int, y string", {"X": "int"}, {"x": HiveType("int")}, [("X", "int")]):
        assert parse_filter("x = 1", schema) == Call("=", (X, lit(1)))
    assert parse_filter("eventid = '1'", SCHEMA).args[0] == Column("eventid", HiveType("string"))
    with pytest.raises(FilterError, match="twice"):
        parse_filter("x = 1", {"x": "int", "X": "string"})
    with pytest.raises(FilterError, match="bad table schema"):
        parse_filter("x = 1", "x nosuchtype")


@pytest.mark.parametrize(
    ("text", "function"),
    [("x = 1", "="), ("x == 1", "="), ("x <> 1", "<>"), ("x != 1", "<>"), ("x < 1", "<"), ("x <= 1", "<="),
     ("x > 1", ">"), ("x >= 1", ">="), ("x <=> 1", "<=>"), ("y LIKE 'a%'", "like"), ("y RLIKE 'a'", "rlike"),
     ("x IS NULL", "isnull"), ("x IS NOT NULL", "isnotnull"), ("x IN (1, 2)", "in"), ("x BETWEEN 1 AND 2", "between"),
     ("NOT b", "not"), ("!b", "not"), ("b AND b", "and"), ("b OR b", "or"), ("b || b", "concat")],
)
def test_operators_map_to_hive_function_names(text, function):
    assert parse_filter(text, SCHEMA).function == function


def test_not_forms():
    assert parse_filter("x NOT BETWEEN 1 AND 2", SCHEMA) == between(X, lit(1), lit(2), invert=True)
    assert parse_filter("NOT (x BETWEEN 1 AND 2)", SCHEMA) == Call("not", (between(X, lit(1), lit(2)),))
    assert parse_filter("x NOT IN (1)", SCHEMA) == Call("not", (Call("in", (X, lit(1))),))
    assert parse_filter("y NOT LIKE 'a'", SCHEMA) == Call("not", (Call("like", (Y, lit("a"))),))
    assert parse_filter("NOT (x IS NULL)", SCHEMA) == Call("not", (Call("isnull", (X,)),))
    assert parse_filter("x IS DISTINCT FROM z", SCHEMA).function == "not"


def test_and_or_chains_are_flat():
    expr = parse_filter(" AND ".join(f"x = {i}" for i in range(2000)), SCHEMA)
    assert expr.function == "and" and len(expr.args) == 2000
    expr = parse_filter("(x = 1 OR (x = 2 OR x = 3)) OR x = 4", SCHEMA)
    assert expr.function == "or" and len(expr.args) == 4


@pytest.mark.parametrize(
    ("text", "constant"),
    [("5", lit(5)), ("-5", lit(-5)), ("-2147483648", lit(-(2**31))), ("2147483648", Constant(2**31, T("bigint"))),
     ("99999999999999999999", Constant(Decimal("99999999999999999999"), T("decimal(20,0)"))),
     ("5L", Constant(5, T("bigint"))), ("5S", Constant(5, T("smallint"))), ("-5Y", Constant(-5, T("tinyint"))),
     ("12.50", Constant(Decimal("12.50"), T("decimal(4,2)"))), ("-0.5", Constant(Decimal("-0.5"), T("decimal(1,1)"))),
     ("12.50BD", Constant(Decimal("12.5"), T("decimal(3,1)"))), ("1.5e0", lit(1.5)), ("1.5D", lit(1.5)),
     ("-1e3", lit(-1000.0)), ("'a'", lit("a")), ('"a"', lit("a")), ("'it\\'s'", lit("it's")), ("'a' 'b'", lit("ab")),
     ("TRUE", lit(True)), ("false", lit(False)), ("NULL", Constant(None, None)),
     ("CAST(NULL AS INT)", Constant(None, T("int"))), ("DATE '2024-01-31'", lit(dt.date(2024, 1, 31))),
     ("TIMESTAMP '2024-01-02 10:11:12.123456'", lit(dt.datetime(2024, 1, 2, 10, 11, 12, 123456))),
     ("CAST('2024-01-02' AS TIMESTAMP)", lit(dt.datetime(2024, 1, 2))), ("CAST('5' AS BIGINT)", Constant(5, T("bigint"))),
     ("CAST(1.5 AS DOUBLE)", lit(1.5)), ("CAST('NaN' AS DOUBLE)", None), ("unhex('0aFF')", lit(b"\n\xff")),
     ("CAST('12.5' AS DECIMAL(5,2))", Constant(Decimal("12.50"), T("decimal(5,2)")))],
)
def test_literal_typing(text, constant):
    expr = parse_filter(f"x = {text}", SCHEMA)
    assert isinstance(expr.args[1], Constant)
    if constant is not None:
        assert expr.args[1] == constant
        assert str(expr.args[1].value) == str(constant.value)


@pytest.mark.parametrize(
    "text", ["CAST(1.5 AS INT)", "CAST('abc' AS INT)", "CAST('2024-13-01' AS DATE)", "CAST(0.1 AS FLOAT)",
             "CAST('123.456' AS DECIMAL(5,2))", "DATE 'garbage'"],
)
def test_inexact_casts_stay_casts(text):
    assert parse_filter(f"x = {text}", SCHEMA).args[1].function == "cast"


def test_functions_keep_hive_names_and_arguments():
    assert parse_filter("upper(y) = 'A'", SCHEMA).args[0] == Call("upper", (Y,))
    assert parse_filter("my_udf(y, 1) = 'A'", SCHEMA).args[0] == Call("my_udf", (Y, lit(1)))
    assert parse_filter("nvl(x, 0) = 1", SCHEMA).args[0] == Call("coalesce", (X, lit(0)))
    assert parse_filter("substr(y, 1, 2) = 'ab'", SCHEMA).args[0] == Call("substr", (Y, lit(1), lit(2)))
    assert parse_filter("x + 1 * 2 = 3", SCHEMA).args[0] == Call("+", (X, Call("*", (lit(1), lit(2)))))
    assert parse_filter("x div 2 = 1", SCHEMA).args[0] == Call("div", (X, lit(2)))
    assert parse_filter("-x = 1", SCHEMA).args[0] == Call("negative", (X,))
    assert parse_filter("CAST(y AS INT) = 1", SCHEMA).args[0] == Call("cast", (Y, lit("int")))


@pytest.mark.parametrize(
    ("text", "columns"),
    [("s.a = 1", ("s",)), ("CASE WHEN x = 1 THEN y END = 'a'", ("x", "y")), ("date_add(dt, 1) > dt", ("dt",))],
)
def test_constructs_without_a_node_are_kept_as_hiveql(text, columns):
    expr = parse_filter(text, SCHEMA)
    opaque = expr.args[0]
    assert opaque.function == OPAQUE
    assert tuple(c.name for c in opaque.args[1:]) == columns


@pytest.mark.parametrize(
    ("text", "line", "col", "near"),
    [("x = 1 AND", 1, 7, "AND"), ("x = = 1", 1, 5, "="), ("x = 1\n and (y", 2, 7, "y"), ("x ==== 1", 1, 5, "==")],
)
def test_syntax_errors_name_the_position(text, line, col, near):
    with pytest.raises(FilterError) as info:
        parse_filter(text, SCHEMA)
    message = str(info.value)
    assert f"line {line}, column {col}" in message
    assert f"near {near!r}" in message
    assert "syntax error" in message
    assert "<class" not in message and "Required keyword" not in message  # the parser's words, not the user's


def test_unterminated_string_names_the_position():
    with pytest.raises(FilterError, match=r"line 2, column 6: ' opened here is never closed .*'abc"):
        parse_filter("x = 1 and\n y = 'abc", SCHEMA)



def test_an_exponent_without_digits_is_a_filter_error():
    with pytest.raises(FilterError, match=r"'5e' is not a number"):
        parse_filter("x = 5e", SCHEMA)

def test_unknown_column_lists_the_known_ones():
    with pytest.raises(FilterError) as info:
        parse_filter("x = 1 and nope = 2", SCHEMA)
    message = str(info.value)
    assert "unknown column 'nope'" in message
    assert "x, y, z, b, d, dt, ts, f, s, eventid" in message


def test_unknown_column_inside_an_opaque_expression():
    with pytest.raises(FilterError, match="unknown column 'nope'"):
        parse_filter("CASE WHEN nope = 1 THEN 1 END = 1", SCHEMA)


def test_qualified_names_are_refused():
    with pytest.raises(FilterError, match="qualified names"):
        parse_filter("t.x = 1", SCHEMA)


@pytest.mark.parametrize(
    ("text", "message"),
    [("", "empty"), ("   ", "empty"), ("x IN (SELECT 1)", "subquery"), ("x = sum(z)", "sum"),
     ("x = (SELECT 1)", "only use columns"), ("x = 1; z = 2", "only use columns"), ("x y", "only use columns"),
     ("x = row_number() OVER ()", "only use columns"), ("x IN ()", r"filter .x IN \(\).: x IN \(\) has no values"),
     ("x NOT IN ()", "has no values")],
)
def test_refused_constructs(text, message):
    with pytest.raises(FilterError, match=message):
        parse_filter(text, SCHEMA)


def test_deep_nesting_is_an_error_not_a_crash():
    with pytest.raises(FilterError):
        parse_filter("(" * 3000 + "x = 1" + ")" * 3000, SCHEMA)
