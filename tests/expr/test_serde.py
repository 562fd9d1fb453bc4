from __future__ import annotations

import datetime as dt
import json
import math
from decimal import Decimal

import pytest
from hypothesis import given, settings

from storage_handler.errors import FilterError
from storage_handler.expr import Column, Constant, between, call, in_, lit, serde
from storage_handler.expr.nodes import and_
from storage_handler.types import HiveType, parse_hive_type
from tests.expr.strategies import expressions
from tests.helpers import examples

X = Column("x", HiveType("int"))


def test_document_shape():
    doc = json.loads(serde.dumps(call("=", X, lit(1))))
    assert doc == {"format": "hsh-expr", "version": 1, "expr": {
        "call": "=", "args": [{"column": "x", "type": "int"}, {"constant": 1, "type": "int"}]}}


@pytest.mark.parametrize(
    "const",
    [lit(Decimal("12.50")), lit(Decimal("-0.00")), lit(dt.date(1, 1, 1)), lit(dt.datetime(1969, 12, 31, 23, 59, 59, 1)),
     lit(float("nan")), lit(-0.0), lit(float("inf")), lit(5e-324), Constant(0.5, parse_hive_type("float")),
     lit(b"\x00\xff"), lit(""), lit("\x00é😀"), lit(True), lit(False), Constant(None, None),
     Constant(None, parse_hive_type("decimal(5,2)")), Constant(2**63 - 1, parse_hive_type("bigint")),
     Constant("ab", parse_hive_type("char(3)"))],
)
def test_constants_round_trip_losslessly(const):
    back = serde.loads(serde.dumps(const))
    assert isinstance(back, Constant)
    assert back.hive_type == const.hive_type
    assert type(back.value) is type(const.value)
    if isinstance(const.value, float):
        assert repr(back.value) == repr(const.value)
        assert math.copysign(1, back.value) == math.copysign(1, const.value)
    else:
        assert str(back.value) == str(const.value) and back.value == const.value


def test_structure_round_trip():
    expr = and_(between(X, lit(1), lit(2), invert=True), in_(X, lit(1), lit(2)),
                call("=", Column("m", parse_hive_type("map<string,array<int>>")), Constant(None, None)))
    assert serde.loads(serde.dumps(expr)) == expr


@settings(max_examples=examples(300), deadline=None)
@given(expressions)
def test_random_trees_round_trip(expr):
    text = serde.dumps(expr)
    assert serde.dumps(serde.loads(text)) == text
    assert serde.loads(text.encode("utf-8")) is not None


def _doc(expr_node, **top):
    return json.dumps({"format": "hsh-expr", "version": 1, "expr": expr_node, **top})


@pytest.mark.parametrize(
    ("text", "message"),
    [("", "not valid JSON"), ("{", "not valid JSON"), ("[]", "expected format"),
     (json.dumps({"format": "other", "version": 1, "expr": {}}), "expected format 'hsh-expr'"),
     (json.dumps({"format": "hsh-expr", "version": 2, "expr": {}}), "version 2"),
     (json.dumps({"format": "hsh-expr", "expr": {}}), "version None"),
     (_doc({"column": "x", "type": "int"}, extra=1), "unexpected keys"),
     (_doc({"column": "x"}), "expected column\\+type"),
     (_doc({"column": "x", "type": "integerz"}), "unsupported Hive type"),
     (_doc({"column": "", "type": "int"}), "non-empty"),
     (_doc({"constant": "1", "type": "int"}), "JSON integer"),
     (_doc({"constant": 1.5, "type": "double"}), "a string"),
     (_doc({"constant": "1,5", "type": "double"}), "repr"),
     (_doc({"constant": "12.345", "type": "decimal(4,2)"}), "does not fit"),
     (_doc({"constant": "2024-13-01", "type": "date"}), "valid date"),
     (_doc({"constant": "20240101", "type": "date"}), "documented form"),
     (_doc({"constant": "2024-01-01 00:00:00", "type": "timestamp"}), "documented form"),
     (_doc({"constant": "***", "type": "binary"}), "valid binary"),
     (_doc({"constant": 1, "type": None}), "must be null"),
     (_doc({"constant": 300, "type": "tinyint"}), "out of range"),
     (_doc({"call": "=", "args": [{"column": "x", "type": "int"}]}), "takes 2"),
     (_doc({"call": "=", "args": "x"}), "list 'args'"),
     ('{"format":"hsh-expr","version":1,"expr":{"constant":NaN,"type":"double"}}', "not valid JSON"),
     ("[" * 100000 + "]" * 100000, "not valid JSON|nested too deeply|expected format")],
)
def test_corrupt_input_is_an_error_never_no_filter(text, message):
    with pytest.raises(FilterError, match=message):
        serde.loads(text)
