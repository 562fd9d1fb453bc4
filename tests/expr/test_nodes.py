from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from storage_handler.errors import FilterError
from storage_handler.expr import Call, Column, Constant, and_, columns_of, conjuncts, lit, or_
from storage_handler.expr.nodes import between, fit_decimal, is_float32, type_of_value
from storage_handler.types import HiveType, parse_hive_type

X = Column("x", HiveType("int"))
Y = Column("y", HiveType("string"))


def test_nodes_are_frozen_slotted_values():
    a = Call("=", (X, lit(1)))
    assert a == Call("=", (Column("x", HiveType("int")), Constant(1, HiveType("int"))))
    assert hash(a) == hash(Call("=", (X, lit(1))))
    with pytest.raises(AttributeError):
        a.function = "<"  # type: ignore[misc]
    assert not hasattr(a, "__dict__")


@pytest.mark.parametrize(
    ("value", "expected"),
    [(True, "boolean"), (1, "int"), (2**31, "bigint"), (2**63, "decimal(19,0)"), (1.5, "double"),
     (Decimal("12.50"), "decimal(4,2)"), (Decimal("0.05"), "decimal(2,2)"), ("a", "string"), (b"a", "binary"),
     (dt.date(2024, 1, 1), "date"), (dt.datetime(2024, 1, 1), "timestamp")],
)
def test_literal_types(value, expected):
    assert str(lit(value).hive_type) == expected
    if not isinstance(value, int) or isinstance(value, bool) or value < 2**63:
        assert str(type_of_value(value)) == expected


@pytest.mark.parametrize(
    ("value", "hive_type", "message"),
    [(1, "string", "does not match"), (True, "int", "does not match"), (128, "tinyint", "out of range"),
     (0.1, "float", "32 bits"), (1, "double", "does not match"), (Decimal("1.234"), "decimal(5,2)", "exactly"),
     (dt.datetime(2024, 1, 1), "date", "does not match"), (dt.datetime(2024, 1, 1, tzinfo=dt.UTC),
                                                          "timestamp", "time zone"),
     ([1], "array<int>", "not supported")],
)
def test_constant_checks_value_against_type(value, hive_type, message):
    with pytest.raises(FilterError, match=message):
        Constant(value, parse_hive_type(hive_type))


def test_constant_without_type_must_be_null():
    assert Constant(None, None).value is None
    with pytest.raises(FilterError, match="needs a Hive type"):
        Constant(1, None)


def test_decimal_constants_are_quantized_to_the_scale():
    c = Constant(Decimal("12.5"), parse_hive_type("decimal(5,2)"))
    assert str(c.value) == "12.50"
    assert fit_decimal(Decimal("1E+3"), 4, 0) == Decimal(1000)
    assert fit_decimal(Decimal("1E+3"), 3, 0) is None
    assert fit_decimal(Decimal("999.99"), 5, 2) == Decimal("999.99")
    assert fit_decimal(Decimal("1000"), 5, 2) is None
    assert fit_decimal(Decimal("1.2300000000000000000000000000000000000000000"), 3, 2) == Decimal("1.23")


def test_float32_check():
    assert is_float32(1.5) and is_float32(float("nan")) and is_float32(float("-inf"))
    assert not is_float32(0.1) and not is_float32(1e300)


@pytest.mark.parametrize(
    ("function", "args", "message"),
    [("=", (X,), "takes 2"), ("not", (X, X), "takes 1"), ("and", (X,), "at least 2"), ("between", (X, X, X, X),
                                                                                    "invert"),
     ("UPPER", (X,), "lower-case"), ("drop table", (X,), "not a valid function name"), ("cast", (X, X), "target")],
)
def test_call_validation(function, args, message):
    with pytest.raises(FilterError, match=message):
        Call(function, args)


def test_call_needs_tuple_of_nodes():
    with pytest.raises(FilterError, match="tuple"):
        Call("=", [X, lit(1)])  # type: ignore[arg-type]
    with pytest.raises(FilterError, match="not an expression node"):
        Call("=", (X, 1))  # type: ignore[arg-type]


def test_and_or_flatten_and_conjuncts():
    a, b, c = (Call("=", (X, lit(i))) for i in range(3))
    assert and_(a, and_(b, c)) == Call("and", (a, b, c))
    assert or_(a) is a
    assert conjuncts(Call("and", (a, Call("and", (b, c))))) == (a, b, c)
    assert conjuncts(or_(a, b)) == (or_(a, b),)
    assert columns_of(and_(a, Call("=", (Y, lit("s"))))) == {"x", "y"}


def test_between_has_hive_invert_flag():
    node = between(X, lit(1), lit(2), invert=True)
    assert node.args[0] == Constant(True, HiveType("boolean"))


def test_conjuncts_of_a_long_chain_do_not_recurse():
    terms = [Call("=", (X, lit(i))) for i in range(5000)]
    node = terms[0]
    for t in terms[1:]:
        node = Call("and", (node, t))  # left-deep, as a naive builder would make it
    assert conjuncts(node) == tuple(terms)
