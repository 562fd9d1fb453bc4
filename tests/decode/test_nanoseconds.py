"""Timestamps with nanoseconds (``java.sql.Timestamp`` keeps nine fraction digits): held exactly, printed like Java,
serialized losslessly, and never used to prune (pruning compares in microseconds)."""

from __future__ import annotations

import datetime as dt

import pytest

from storage_handler.decode.hiveql import parse_filter
from storage_handler.decode.to_sarg import to_search_argument
from storage_handler.errors import FilterError
from storage_handler.expr import serde as expr_serde
from storage_handler.expr import to_hiveql
from storage_handler.pruning import UnboundLeaf, bind, from_sarg
from storage_handler.sarg import LeafType, PredicateLeaf, SearchArgumentFactory
from storage_handler.sarg import serde as sarg_serde
from storage_handler.sarg.leaf import LeafOperator
from storage_handler.sarg.literals import NanoTimestamp

STAMP = NanoTimestamp(dt.datetime(2024, 1, 2, 10, 11, 12, 123456), 789)
SCHEMA = "ts timestamp, d date"


def test_prints_all_nine_digits_like_java_and_compares_by_value():
    assert str(STAMP) == "2024-01-02 10:11:12.123456789"
    assert STAMP.nanosecond == 123456789
    leaf = PredicateLeaf(LeafOperator.EQUALS, LeafType.TIMESTAMP, "ts", STAMP)
    assert leaf.to_string() == "(EQUALS ts 2024-01-02 10:11:12.123456789)"
    plain = PredicateLeaf(LeafOperator.EQUALS, LeafType.TIMESTAMP, "ts", STAMP.micros)
    assert leaf.key() != plain.key()  # 789 ns apart: different leaves, as in Java


@pytest.mark.parametrize("nanos", [0, 1000, -1, "1"])
def test_only_the_sub_microsecond_part_is_held(nanos):
    with pytest.raises(FilterError, match="1..999"):
        NanoTimestamp(dt.datetime(2024, 1, 1), nanos)  # type: ignore[arg-type]


def test_hiveql_literal_keeps_nanoseconds_through_both_json_forms():
    expr = parse_filter("ts < TIMESTAMP '2024-01-02 10:11:12.123456789' AND ts > '2024-01-02 10:11:12.0000001'",
                        SCHEMA)
    assert to_hiveql(expr) == ("`ts` < TIMESTAMP '2024-01-02 10:11:12.123456789' AND "
                               "`ts` > '2024-01-02 10:11:12.0000001'")
    assert expr_serde.loads(expr_serde.dumps(expr)) == expr
    sarg = to_search_argument(expr).sarg
    assert sarg.to_old_string() == (
        "leaf-0 = (LESS_THAN ts 2024-01-02 10:11:12.123456789), "
        "leaf-1 = (LESS_THAN_EQUALS ts 2024-01-02 10:11:12.0000001), expr = (and leaf-0 (not leaf-1))")
    again = sarg_serde.loads(sarg_serde.dumps(sarg))
    assert again.to_old_string() == sarg.to_old_string()
    assert again.leaves[0].literal == STAMP


def test_a_nanosecond_literal_never_prunes_and_never_becomes_a_date():
    sarg = SearchArgumentFactory.new_builder().less_than("ts", LeafType.TIMESTAMP, STAMP).build()
    bound = bind(from_sarg(sarg), [("ts", "timestamp")])
    assert isinstance(bound, UnboundLeaf)  # microsecond statistics cannot decide it: keep every file
    assert to_search_argument(parse_filter("d = TIMESTAMP '2024-01-02 00:00:00.000000001'", SCHEMA)).sarg \
        .to_old_string() == "expr = YES_NO_NULL"
