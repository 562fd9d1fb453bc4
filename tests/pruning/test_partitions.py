"""element_at / partition_value, and partition pruning with a selection vector (Delta-kernel style)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pyarrow as pa
import pytest

from storage_handler.errors import FilterError
from storage_handler.pruning import (
    ElementAt,
    PartitionValue,
    PredicateEvaluator,
    element_at,
    partition_value,
    truth_of,
)
from storage_handler.sarg import LeafType, TruthValue
from storage_handler.stats.columns import IndexStatistics
from storage_handler.types import parse_hive_type, parse_schema_text
from tests.pruning.helpers import MAP, builder, index_table, single
from tests.pruning.scalar_oracle import ScalarEvaluator

TV = TruthValue


def test_element_at_handles_missing_keys_null_maps_slices_and_case() -> None:
    maps = pa.array(
        [[("dt", "a"), ("h", "1")], None, [("h", "2")], [], [("DT", "b")], [("dt", None)], [("x", "y"), ("dt", "c")]],
        MAP,
    )
    assert element_at(maps, "dt").to_pylist() == ["a", None, None, None, "b", None, "c"]
    assert element_at(maps.slice(2), "dt").to_pylist() == [None, None, "b", None, "c"]
    assert element_at(maps.slice(4, 2), "h").to_pylist() == [None, None]
    assert element_at(pa.array([], MAP), "dt").to_pylist() == []
    # exact key wins over a case-insensitive one; the first exact match wins
    mixed = pa.array([[("DT", "upper"), ("dt", "lower")], [("dt", "1"), ("dt", "2")]], MAP)
    assert element_at(mixed, "dt").to_pylist() == ["lower", "1"]


def test_element_at_node_on_a_batch() -> None:
    table = pa.table({"partition_values": pa.chunked_array([pa.array([[("p", "1")]], MAP), pa.array([[]], MAP)])})
    assert ElementAt("partition_values", "p").evaluate(IndexStatistics(table)).to_pylist() == ["1", None]
    no_partitions = IndexStatistics(pa.table({"path": ["a"]}))  # containers without partition values: unknown
    assert ElementAt("partition_values", "p").evaluate(no_partitions) is None


@pytest.mark.parametrize(("type_text", "texts", "values", "unknown"), [
    ("int", ["10", "2", "-5", "007", "+5", "1.5", "", "2147483648", "99999999999999999999", None,
             "__HIVE_DEFAULT_PARTITION__"],
     [10, 2, -5, 7, None, None, None, None, None, None, None],
     [False, False, False, False, True, True, True, True, True, False, False]),
    ("string", ["10", "", None, "__HIVE_DEFAULT_PARTITION__"], ["10", "", None, None], [False] * 4),
    ("date", ["2024-01-01", "2024-02-30", "2024-1-1", "0000-01-01", "9999-12-31", None],
     [dt.date(2024, 1, 1), None, None, None, dt.date(9999, 12, 31), None], [False, True, True, True, False, False]),
    ("decimal(5,2)", ["1.25", "1.250", "1.255", ".5", "5.", "+1", "-0", "1000", "999.99", "x", ".",
                      "1.5" + "0" * 45, "0" * 45 + "7.25",  # more digits than Arrow's cast takes (was a crash)
                      ".0", "-.00", "+.0"],  # no integer digit, all zeros after the point (was a crash)
     [Decimal("1.25"), Decimal("1.25"), None, Decimal("0.5"), Decimal("5"), Decimal("1"), Decimal("0"), None,
      Decimal("999.99"), None, None, Decimal("1.5"), Decimal("7.25"), Decimal("0"), Decimal("0"), Decimal("0")],
     [False, False, True, False, False, False, False, True, False, True, True, False, False, False, False, False]),
    ("double", ["1.5", "-0", "1e999", "NaN", "inf", ".5", "1e5"], [1.5, -0.0, float("inf"), None, None, 0.5, 1e5],
     [False, False, False, True, True, False, False]),
    ("boolean", ["true", "FALSE", "yes"], [True, False, None], [False, False, True]),
    ("timestamp", ["2024-01-01 00:00:00", "2024-01-01 00:00:00.5", "2024-01-01", "2024-01-01 24:00:00"],
     [dt.datetime(2024, 1, 1), dt.datetime(2024, 1, 1, 0, 0, 0, 500000), None, None], [False, False, True, True]),
    ("float", ["1.5", None], [None, None], [True, True]),
])
def test_partition_value_parses_the_declared_type(type_text: str, texts: list[str | None], values: list[object],
                                                  unknown: list[bool]) -> None:
    parsed, bad = partition_value(pa.array(texts, pa.string()), parse_hive_type(type_text))
    assert parsed.to_pylist() == values
    assert (bad.to_pylist() if not isinstance(bad, bool) else [bad] * len(texts)) == unknown


def test_partition_value_node() -> None:
    table = pa.table({"partition_values": pa.array([[("p", "10")], [("p", "2")]], MAP)})
    node = PartitionValue(ElementAt("partition_values", "p"), parse_hive_type("int"))
    values, unknown = node.evaluate(IndexStatistics(table))
    assert values.to_pylist() == [10, 2] and unknown.to_pylist() == [False, False]


PARTS = parse_schema_text("p int, dt date")
DATA = parse_schema_text("x bigint")


def files(*partition_values: list[tuple[str, str | None]] | None) -> pa.Table:
    return index_table("x bigint", [
        {"partition_values": pv, "min": {"x": 0}, "max": {"x": 100}, "nulls": {"x": 0}} for pv in partition_values
    ])


def test_int_partition_values_compare_as_numbers() -> None:
    table = files([("p", "10")], [("p", "2")], [("p", "x")], [("p", None)], [])
    sarg = builder().start_not().less_than_equals("p", LeafType.LONG, 5).end().build()  # p > 5
    evaluator = PredicateEvaluator(sarg, DATA, PARTS)
    assert evaluator.eval(table).to_pylist() == [True, False, True, False, False]
    assert [truth_of(c) for c in evaluator.truth_values(table).to_pylist()] == [TV.YES, TV.NO, TV.YES_NO_NULL,
                                                                               TV.NULL, TV.NULL]


def test_partition_is_null_and_null_safe_equals() -> None:
    table = files([("p", "__HIVE_DEFAULT_PARTITION__")], [("p", "3")])
    assert PredicateEvaluator(single("is_null", "p"), DATA, PARTS).eval(table).to_pylist() == [True, False]
    assert PredicateEvaluator(single("null_safe_equals", "P", 3), DATA, PARTS).truth_values(table).to_pylist() == [
        2, 1]


def test_selection_vector_is_combined() -> None:
    table = files([("p", "1")], [("p", "2")], [("p", "3")], [("p", "4")])
    evaluator = PredicateEvaluator(single("less_than", "p", 4), DATA, PARTS)
    assert evaluator.eval(table).to_pylist() == [True, True, True, False]
    assert evaluator.eval(table, [True, False, True, True]).to_pylist() == [True, False, True, False]
    assert evaluator.eval(table, pa.array([None, False], pa.bool_())).to_pylist() == [True, False, True, False]
    with pytest.raises(FilterError, match="5 entries"):
        evaluator.eval(table, [True] * 5)


def test_mixed_partition_and_data_leaves_in_one_or() -> None:
    table = index_table("x bigint", [
        {"partition_values": [("dt", "2024-01-01")], "min": {"x": 0}, "max": {"x": 9}, "nulls": {"x": 0}},
        {"partition_values": [("dt", "2024-01-05")], "min": {"x": 0}, "max": {"x": 9}, "nulls": {"x": 0}},
        {"partition_values": [("dt", "2024-01-05")], "min": {"x": 50}, "max": {"x": 60}, "nulls": {"x": 0}},
        {"partition_values": [("dt", "2024-01-05")], "min": {"x": 50}, "max": {"x": 60}, "nulls": {"x": 2}},
    ])
    # dt < '2024-01-02' OR x = 55
    sarg = builder().start_or().less_than("dt", LeafType.DATE, dt.date(2024, 1, 2)).equals(
        "x", LeafType.LONG, 55).end().build()
    evaluator = PredicateEvaluator(sarg, DATA, PARTS)
    assert evaluator.eval(table).to_pylist() == [True, False, True, True]
    assert [truth_of(c) for c in evaluator.truth_values(table).to_pylist()] == ScalarEvaluator(
        sarg, DATA, PARTS).evaluate_table(table) == [TV.YES, TV.NO, TV.YES_NO, TV.YES_NO_NULL]


def test_batch_without_partition_values_or_stats_keeps_everything() -> None:
    batch = pa.table({"path": ["a", "b"]})
    sarg = builder().start_and().equals("p", LeafType.LONG, 1).equals("x", LeafType.LONG, 1).end().build()
    assert PredicateEvaluator(sarg, DATA, PARTS).eval(batch).to_pylist() == [True, True]
