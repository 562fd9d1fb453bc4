"""serde: versioned, lossless JSON; anything unreadable is a FilterError, never "no filter"."""

from __future__ import annotations

import datetime as dt
import json
import math
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from storage_handler.errors import FilterError
from storage_handler.sarg import ExprOp, LeafType, SearchArgument, SearchArgumentFactory, TruthValue
from storage_handler.sarg.printing import tree_to_old_string
from storage_handler.sarg.serde import dumps, loads
from storage_handler.sarg.tree import preorder
from tests.helpers import examples

from .oracle import build
from .strategies import cnf_stress, specs


def _same_literal(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    return (
        type(a) is type(b)
        and (a == b)
        and (not isinstance(a, float) or math.copysign(1, a) == math.copysign(1, b))
    )


def assert_identical(a: SearchArgument, b: SearchArgument) -> None:
    assert a.to_old_string() == b.to_old_string() and a.to_string() == b.to_string()
    assert a.expression == b.expression and a.compact_expression == b.compact_expression
    assert len(a.compact_leaves) == len(b.compact_leaves) and len(a.leaves) == len(b.leaves)
    for x, y in zip(a.compact_leaves, b.compact_leaves, strict=True):
        assert (x.operator, x.type, x.column_name) == (y.operator, y.type, y.column_name)
        assert _same_literal(x.literal, y.literal) or x.literal is y.literal is None
        assert len(x.literal_list) == len(y.literal_list)
        assert all(
            p is q is None or _same_literal(p, q) for p, q in zip(x.literal_list, y.literal_list, strict=True)
        )


def test_round_trip_keeps_literal_classes_exactly() -> None:
    sarg = (
        SearchArgumentFactory.new_builder()
        .start_or()
        .equals("d", LeafType.DECIMAL, Decimal("12.50"))
        .equals("d", LeafType.DECIMAL, Decimal("1E+10"))
        .in_("f", LeafType.FLOAT, math.nan, -0.0, 0.0, math.inf, 1e-320, None)
        .between("t", LeafType.TIMESTAMP, dt.datetime(1, 1, 1), dt.datetime(2024, 1, 2, 3, 4, 5, 6))
        .less_than("day", LeafType.DATE, dt.date(1582, 10, 10))
        .equals("s", LeafType.STRING, '\ud800 é 𝄞\n"q"')
        .equals("l", LeafType.LONG, -(2**63))
        .is_null("b", LeafType.BOOLEAN)
        .equals("b", LeafType.BOOLEAN, False)
        .literal(TruthValue.NO_NULL)
        .end()
        .build()
    )
    text = dumps(sarg)
    assert text.isascii()
    assert json.loads(text)["format"] == "hsh-sarg" and json.loads(text)["version"] == 1
    back = loads(text)
    assert_identical(sarg, back)
    assert back.compact_leaves[0].literal.as_tuple() == Decimal("12.50").as_tuple()
    assert dumps(back) == text
    assert loads(text.encode()).to_string() == sarg.to_string()


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=specs)
def test_round_trip_random(spec: list) -> None:
    try:
        sarg = build(spec)
    except FilterError:
        return
    text = dumps(sarg)
    assert_identical(sarg, loads(text))
    assert dumps(loads(text)) == text


@settings(
    max_examples=examples(15), deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
@given(spec=cnf_stress())
def test_round_trip_keeps_sharing_and_extra_leaves(spec: list) -> None:
    sarg = build(spec)
    text = dumps(sarg)
    back = loads(text)
    assert_identical(sarg, back)
    assert len(json.loads(text)["nodes"]) <= sum(1 for _ in preorder(sarg.expression)) + sum(
        1 for _ in preorder(sarg.compact_expression)
    )


def test_deep_tree_round_trips() -> None:
    b = SearchArgumentFactory.new_builder()
    for i in range(3_000):
        (b.start_and if i % 2 else b.start_or)()
        b.equals("x", LeafType.LONG, i)
    for _ in range(3_000):
        b.end()
    sarg = b.build()
    back = loads(dumps(sarg))
    # (== on 3,000-deep trees would hit the recursion limit: dataclass equality is recursive.)
    assert back.to_old_string() == sarg.to_old_string()
    assert tree_to_old_string(back.compact_expression) == tree_to_old_string(sarg.compact_expression)


def _valid() -> dict:
    return json.loads(
        dumps(SearchArgumentFactory.new_builder().start_not().equals("x", LeafType.LONG, 1).end().build())
    )


@pytest.mark.parametrize(
    ("mutate", "fragment"),
    [
        (lambda d: "not json", "not JSON"),
        (lambda d: "", "not JSON"),
        (lambda d: "[]", "not an 'hsh-sarg'"),
        (lambda d: {**d, "format": "other"}, "not an 'hsh-sarg'"),
        (lambda d: {**d, "version": 2}, "version 2"),
        (lambda d: {k: v for k, v in d.items() if k != "version"}, "version None"),
        (lambda d: {k: v for k, v in d.items() if k != "nodes"}, "KeyError"),
        (lambda d: {**d, "nodes": [["leaf", 5]]}, "missing leaf"),
        (lambda d: {**d, "nodes": [["leaf", 0], ["not", [1]]]}, "bad node reference"),
        (lambda d: {**d, "nodes": [["xor", [0]]]}, "unknown node kind"),
        (lambda d: {**d, "nodes": [["const", "MAYBE"]]}, "Corrupt"),
        (lambda d: {**d, "nodes": [["leaf", 0], ["not", [0, 0]]]}, "Malformed NOT"),
        (lambda d: {**d, "expression": 99}, "bad node reference"),
        (lambda d: {**d, "leaf_count": 3}, "leaf_count"),
        (lambda d: {**d, "leaves": [{**d["leaves"][0], "literal": "1"}]}, "LONG literal"),
        (lambda d: {**d, "leaves": [{**d["leaves"][0], "literal": True}]}, "LONG literal"),
        (lambda d: {**d, "leaves": [{**d["leaves"][0], "type": "FLOAT", "literal": 1.0}]}, "FLOAT literal"),
        (lambda d: {**d, "leaves": [{**d["leaves"][0], "type": "DATE", "literal": "2024-13-01"}]}, "Corrupt"),
        (
            lambda d: {
                **d,
                "leaves": [{**d["leaves"][0], "type": "TIMESTAMP", "literal": "2024-01-01T00:00+01:00"}],
            },
            "time zone",
        ),
        (lambda d: {**d, "leaves": [{**d["leaves"][0], "operator": "LIKE"}]}, "Corrupt"),
        (lambda d: {**d, "leaves": [{**d["leaves"][0], "literal": None}]}, "exactly one"),
        (lambda d: '{"format": "hsh-sarg", "version": 1, "leaves": NaN}', "not JSON"),
    ],
)
def test_corrupt_or_unknown_input_is_a_filter_error(mutate, fragment: str) -> None:  # type: ignore[no-untyped-def]
    document = mutate(_valid())
    text = document if isinstance(document, str) else json.dumps(document)
    with pytest.raises(FilterError, match=fragment):
        loads(text)


def test_dumps_refuses_other_objects() -> None:
    with pytest.raises(FilterError):
        dumps("leaf-0")  # type: ignore[arg-type]


def test_shared_nodes_are_written_once() -> None:
    b = SearchArgumentFactory.new_builder().start_or()
    for column in ("a", "b"):
        b.start_and().equals(column, LeafType.LONG, 1).equals(column, LeafType.LONG, 2).end()
    sarg = b.end().build()
    nodes = json.loads(dumps(sarg))["nodes"]
    assert sum(1 for node in nodes if node[0] == "leaf") == 4
    assert loads(dumps(sarg)).expression.operator is ExprOp.AND
