from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from hypothesis import given, settings

from storage_handler.decode.hiveql import parse_filter
from storage_handler.decode.to_sarg import DecomposedPredicate, decompose, leaf_type, to_search_argument
from storage_handler.expr import Call, Column, Constant, and_, conjuncts, lit
from storage_handler.sarg import LeafType, TruthValue
from storage_handler.types import HiveType, parse_hive_type
from tests.expr.strategies import expressions
from tests.helpers import examples

SCHEMA = (
    "x int, y string, z int, b boolean, d decimal(5,2), dt date, ts timestamp, f double, fl float, t tinyint, "
    "l bigint, vc varchar(10), ch char(3), bin binary, arr array<int>, s struct<a:int>, big decimal(38,10)"
)


def sarg_of(text: str) -> str:
    return to_search_argument(parse_filter(text, SCHEMA)).sarg.to_old_string()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("(x = 1 AND y < 'abc') OR NOT (z IS NULL)",
         "leaf-0 = (IS_NULL z), leaf-1 = (EQUALS x 1), leaf-2 = (LESS_THAN y abc), "
         "expr = (and (or (not leaf-0) leaf-1) (or (not leaf-0) leaf-2))"),
        ("x = 1", "leaf-0 = (EQUALS x 1), expr = leaf-0"),
        ("x <> 1", "leaf-0 = (EQUALS x 1), expr = (not leaf-0)"),
        ("x != 1", "leaf-0 = (EQUALS x 1), expr = (not leaf-0)"),
        ("x <=> 1", "leaf-0 = (NULL_SAFE_EQUALS x 1), expr = leaf-0"),
        ("x < 1", "leaf-0 = (LESS_THAN x 1), expr = leaf-0"),
        ("x <= 1", "leaf-0 = (LESS_THAN_EQUALS x 1), expr = leaf-0"),
        ("x > 1", "leaf-0 = (LESS_THAN_EQUALS x 1), expr = (not leaf-0)"),
        ("x >= 1", "leaf-0 = (LESS_THAN x 1), expr = (not leaf-0)"),
        # column on the right: the comparison flips
        ("5 = x", "leaf-0 = (EQUALS x 5), expr = leaf-0"),
        ("5 <> x", "leaf-0 = (EQUALS x 5), expr = (not leaf-0)"),
        ("5 <=> x", "leaf-0 = (NULL_SAFE_EQUALS x 5), expr = leaf-0"),
        ("5 < x", "leaf-0 = (LESS_THAN_EQUALS x 5), expr = (not leaf-0)"),
        ("5 <= x", "leaf-0 = (LESS_THAN x 5), expr = (not leaf-0)"),
        ("5 > x", "leaf-0 = (LESS_THAN x 5), expr = leaf-0"),
        ("5 >= x", "leaf-0 = (LESS_THAN_EQUALS x 5), expr = leaf-0"),
        ("x IS NULL", "leaf-0 = (IS_NULL x), expr = leaf-0"),
        ("x IS NOT NULL", "leaf-0 = (IS_NULL x), expr = (not leaf-0)"),
        ("x <=> NULL", "expr = YES_NO_NULL"),  # Hive's builder makes nothing of a null literal
        ("x IN (1, NULL)", "leaf-0 = (IN x 1 null), expr = leaf-0"),  # ... except in an IN list, where it stays
        ("x IN (1, 2, 3)", "leaf-0 = (IN x 1 2 3), expr = leaf-0"),
        ("x NOT IN (1, 2, 3)", "leaf-0 = (IN x 1 2 3), expr = (not leaf-0)"),
        ("x BETWEEN 1 AND 5", "leaf-0 = (BETWEEN x 1 5), expr = leaf-0"),
        ("x NOT BETWEEN 1 AND 5", "leaf-0 = (BETWEEN x 1 5), expr = (not leaf-0)"),
        ("NOT (x BETWEEN 1 AND 5)", "leaf-0 = (BETWEEN x 1 5), expr = (not leaf-0)"),
        ("b", "leaf-0 = (EQUALS b true), expr = leaf-0"),
        ("NOT b", "leaf-0 = (EQUALS b true), expr = (not leaf-0)"),
        ("b = false", "leaf-0 = (EQUALS b false), expr = leaf-0"),
        ("X = 1 AND Y = 'a'", "leaf-0 = (EQUALS x 1), leaf-1 = (EQUALS y a), expr = (and leaf-0 leaf-1)"),
        ("x = 1 OR x = 2", "leaf-0 = (EQUALS x 1), leaf-1 = (EQUALS x 2), expr = (or leaf-0 leaf-1)"),
        ("NOT (x = 1 AND y = 'a')",
         "leaf-0 = (EQUALS x 1), leaf-1 = (EQUALS y a), expr = (or (not leaf-0) (not leaf-1))"),
    ],
)
def test_hive_mapping(text, expected):
    assert sarg_of(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # LONG, from every integer type and from exactly-convertible literals
        ("t = 5", "leaf-0 = (EQUALS t 5), expr = leaf-0"),
        ("l = 3000000000", "leaf-0 = (EQUALS l 3000000000), expr = leaf-0"),
        ("x = 2.0", "leaf-0 = (EQUALS x 2), expr = leaf-0"),
        ("x = '42'", "leaf-0 = (EQUALS x 42), expr = leaf-0"),
        ("x = 5L", "leaf-0 = (EQUALS x 5), expr = leaf-0"),
        # FLOAT
        ("f < 0.1", "leaf-0 = (LESS_THAN f 0.1), expr = leaf-0"),
        ("f = 1.5e0", "leaf-0 = (EQUALS f 1.5), expr = leaf-0"),
        ("f = 3", "leaf-0 = (EQUALS f 3.0), expr = leaf-0"),
        ("f = '2.5'", "leaf-0 = (EQUALS f 2.5), expr = leaf-0"),
        ("fl < 0.5", "leaf-0 = (LESS_THAN fl 0.5), expr = leaf-0"),
        ("f = -0.0e0", "leaf-0 = (EQUALS f -0.0), expr = leaf-0"),
        # STRING
        ("y = 'it''s'", "leaf-0 = (EQUALS y its), expr = leaf-0"),
        ("vc >= 'a b'", "leaf-0 = (LESS_THAN vc a b), expr = (not leaf-0)"),
        ("y IS NULL", "leaf-0 = (IS_NULL y), expr = leaf-0"),
        ("ch IS NULL", "leaf-0 = (IS_NULL ch), expr = leaf-0"),
        # DATE
        ("dt = DATE '2024-01-01'", "leaf-0 = (EQUALS dt 2024-01-01), expr = leaf-0"),
        ("dt < '2024-01-31'", "leaf-0 = (LESS_THAN dt 2024-01-31), expr = leaf-0"),
        ("dt = TIMESTAMP '2024-01-01 00:00:00'", "leaf-0 = (EQUALS dt 2024-01-01), expr = leaf-0"),
        ("dt BETWEEN '2024-01-01' AND DATE '2024-12-31'", "leaf-0 = (BETWEEN dt 2024-01-01 2024-12-31), expr = leaf-0"),
        # DECIMAL
        ("d = 12.50", "leaf-0 = (EQUALS d 12.5), expr = leaf-0"),
        ("d = 12", "leaf-0 = (EQUALS d 12), expr = leaf-0"),
        ("d < '999.99'", "leaf-0 = (LESS_THAN d 999.99), expr = leaf-0"),
        ("d = 1.5e0", "leaf-0 = (EQUALS d 1.5), expr = leaf-0"),
        ("d IN (1.1, 2.25)", "leaf-0 = (IN d 1.1 2.25), expr = leaf-0"),
        # TIMESTAMP
        ("ts = TIMESTAMP '2024-01-02 10:11:12.5'", "leaf-0 = (EQUALS ts 2024-01-02 10:11:12.5), expr = leaf-0"),
        ("ts >= '2024-01-02 10:11:12'", "leaf-0 = (LESS_THAN ts 2024-01-02 10:11:12.0), expr = (not leaf-0)"),
        ("ts < DATE '2024-01-02'", "leaf-0 = (LESS_THAN ts 2024-01-02 00:00:00.0), expr = leaf-0"),
        ("ts = '2024-01-02 10:11:12.123456000'",
         "leaf-0 = (EQUALS ts 2024-01-02 10:11:12.123456), expr = leaf-0"),
        ("ts = '2024-01-02 10:11:12.1234567'",  # nanoseconds are kept, as java.sql.Timestamp keeps them
         "leaf-0 = (EQUALS ts 2024-01-02 10:11:12.1234567), expr = leaf-0"),
        ("ts < TIMESTAMP '2024-01-02 10:11:12.123456789'",
         "leaf-0 = (LESS_THAN ts 2024-01-02 10:11:12.123456789), expr = leaf-0"),
        # BOOLEAN
        ("b = true", "leaf-0 = (EQUALS b true), expr = leaf-0"),
        ("b <> false", "leaf-0 = (EQUALS b false), expr = (not leaf-0)"),
    ],
)
def test_every_literal_type(text, expected):
    decoded = to_search_argument(parse_filter(text, SCHEMA))
    assert decoded.sarg.to_old_string() == expected
    assert decoded.unpushed == ()


@pytest.mark.parametrize(
    "text",
    [
        # literals that cannot be represented exactly in the column's type
        "x = 'abc'", "t = 1000", "t < -129", "x = 3000000000", "x = 1.5", "x = '5.0'", "x = true", "x = DATE '2024-01-01'",
        "dt < 'not a date'", "dt = '2024-1-1'", "dt = TIMESTAMP '2024-01-01 10:00:00'", "dt = 5",
        "d = 1.234", "d = 12345.6", "d = 'abc'", "big = 0.1e0", "fl = 0.1", "fl = 16777217", "f = CAST('NaN' AS DOUBLE)",
        "f = 9007199254740993", "f = 'abc'", "ts = 'yesterday'", "ts = 5",
        "y = 5", "y = DATE '2024-01-01'", "b = 1", "b = 'true'", "ch = 'a'", "x IN (1, 'a')", "x BETWEEN 1 AND 'z'",
        # not pushable: functions, LIKE, arithmetic, column vs column, NULL comparisons, unsupported types
        "upper(y) = 'A'", "y LIKE 'a%'", "y RLIKE 'a'", "x + 1 = 2", "x = z", "x = NULL", "x > NULL", "NULL = x",
        "bin IS NULL", "arr IS NULL", "s.a = 1", "x", "TRUE", "CAST(y AS INT) = 1", "1 = 1", "x IN (z, 1)",
        "x BETWEEN z AND 5", "1 IN (x)", "CASE WHEN x = 1 THEN TRUE END",
        # char / varchar casts: sqlglot reads them as STRING (Hive cuts to the length, pads and strips a char)
        "y = CAST('abcdef' AS VARCHAR(3))", "y = CAST('ab   ' AS CHAR(5))", "y IN (CAST('a' AS CHAR(2)), 'b')",
        "y < CAST('ab' AS CHAR(4)) OR x = 1",
    ],
)
def test_unconvertible_becomes_yes_no_null_and_is_not_pushed(text):
    expr = parse_filter(text, SCHEMA)
    decoded = to_search_argument(expr)
    assert decoded.sarg.to_old_string() == "expr = YES_NO_NULL"
    assert decoded.pushed is None
    assert decoded.unpushed == (expr,)
    assert decoded.residual == expr


def test_partial_pushdown_keeps_every_conjunct_in_the_residual():
    expr = parse_filter("x = 1 AND upper(y) = 'A' AND (z = 2 OR y LIKE 'a%') AND dt > '2024-01-01'", SCHEMA)
    decoded = to_search_argument(expr)
    assert decoded.sarg.to_old_string() == (
        "leaf-0 = (EQUALS x 1), leaf-1 = (LESS_THAN_EQUALS dt 2024-01-01), expr = (and leaf-0 (not leaf-1))"
    )
    terms = conjuncts(expr)
    assert decoded.pushed == and_(terms[0], terms[3])
    assert decoded.unpushed == (terms[1], terms[2])
    assert decoded.residual == expr


def test_an_unconvertible_and_branch_inside_or_still_prunes_but_is_not_pushed():
    expr = parse_filter("(x = 1 AND upper(y) = 'A') OR x = 2", SCHEMA)
    decoded = to_search_argument(expr)
    assert decoded.sarg.to_old_string() == (
        "leaf-0 = (EQUALS x 1), leaf-1 = (EQUALS x 2), expr = (or leaf-0 leaf-1)"
    )
    assert decoded.pushed is None and decoded.unpushed == (expr,)


def test_decompose_is_hives_triple():
    expr = parse_filter("x = 1 AND upper(y) = 'A'", SCHEMA)
    result = decompose(expr)
    assert isinstance(result, DecomposedPredicate)
    assert result.pushed_predicate == conjuncts(expr)[0]
    assert result.residual_predicate == expr
    assert result.pushed_object.to_old_string() == "leaf-0 = (EQUALS x 1), expr = leaf-0"
    assert "WHOLE predicate" in decompose.__doc__


def test_no_filter():
    decoded = to_search_argument(None)
    assert decoded.sarg.to_old_string() == "expr = YES_NO_NULL"
    assert decoded.pushed is None and decoded.residual is None and decoded.unpushed == ()


def test_leaf_types():
    expected = {"tinyint": LeafType.LONG, "smallint": LeafType.LONG, "int": LeafType.LONG, "bigint": LeafType.LONG,
                "float": LeafType.FLOAT, "double": LeafType.FLOAT, "string": LeafType.STRING,
                "varchar(3)": LeafType.STRING, "char(3)": LeafType.STRING, "date": LeafType.DATE,
                "decimal(5,2)": LeafType.DECIMAL, "timestamp": LeafType.TIMESTAMP, "boolean": LeafType.BOOLEAN,
                "binary": None, "array<int>": None, "map<string,int>": None, "struct<a:int>": None}
    for text, kind in expected.items():
        assert leaf_type(parse_hive_type(text)) is kind


def test_leaf_literals_have_the_leaf_types_python_class():
    sarg = to_search_argument(parse_filter(
        "x = 1 AND f = 1 AND y = 'a' AND dt = '2024-01-01' AND d = 1 AND ts = '2024-01-01' AND b", SCHEMA)).sarg
    classes = {leaf.type: type(leaf.literal) for leaf in sarg.leaves}
    assert classes == {LeafType.LONG: int, LeafType.FLOAT: float, LeafType.STRING: str, LeafType.DATE: dt.date,
                       LeafType.DECIMAL: Decimal, LeafType.TIMESTAMP: dt.datetime, LeafType.BOOLEAN: bool}


def test_built_expressions_without_the_parser():
    x = Column("x", HiveType("int"))
    decoded = to_search_argument(Call("in", (x, lit(1), Constant(2, HiveType("bigint")))))
    assert decoded.sarg.to_old_string() == "leaf-0 = (IN x 1 2), expr = leaf-0"
    assert to_search_argument(Call("=", (x, Constant(None, None)))).sarg.to_old_string() == "expr = YES_NO_NULL"


@settings(max_examples=examples(200), deadline=None)
@given(expressions)
def test_any_expression_converts_and_the_residual_is_the_whole_predicate(expr):
    decoded = to_search_argument(expr)
    assert decoded.residual == expr
    pushed = conjuncts(decoded.pushed) if decoded.pushed is not None else ()
    assert len(pushed) + len(decoded.unpushed) == len(conjuncts(expr))
    if decoded.pushed is None:
        assert decoded.unpushed == conjuncts(expr)
    assert decoded.sarg.evaluate([TruthValue.YES_NO_NULL] * len(decoded.sarg.leaves)).is_needed()


def test_deep_nesting_is_a_filter_error():
    from storage_handler.errors import FilterError

    expr = Call("=", (Column("x", HiveType("int")), lit(1)))
    for _ in range(5000):
        expr = Call("not", (expr,))
    with pytest.raises(FilterError, match="nested too deeply"):
        to_search_argument(expr)


def test_a_char_constant_makes_no_leaf_against_a_string_column():
    """Hive stores a char constant padded ('ab   ') and strips the padding to compare it with a string, so
    ``s = 'ab   '`` as a leaf would prune the files holding 'ab' (Kryo filters carry such constants)."""
    padded = Call("=", (Column("y", HiveType("string")), Constant("ab   ", parse_hive_type("char(5)"))))
    assert to_search_argument(padded).sarg.to_old_string() == "expr = YES_NO_NULL"
    plain = Call("=", (Column("y", HiveType("string")), Constant("ab", HiveType("string"))))
    assert to_search_argument(plain).sarg.to_old_string() == "leaf-0 = (EQUALS y ab), expr = leaf-0"
