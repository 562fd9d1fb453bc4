"""Leaf semantics against per-file statistics (ORC's evaluatePredicateRange), case by case.

Every case is checked on both evaluators: the vectorized one and the scalar oracle.
"""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal
from typing import Any

import pytest

from storage_handler.pruning import PredicateEvaluator, truth_of
from storage_handler.sarg import LeafType, SearchArgument, TruthValue
from storage_handler.types import parse_schema_text
from tests.pruning.helpers import builder, index_table, negated, single
from tests.pruning.scalar_oracle import ScalarEvaluator

TV = TruthValue
SCHEMA = (
    "i int, l bigint, d double, f float, dec decimal(5,2), s string, v varchar(4), c char(3), dt date, "
    "ts timestamp, b boolean, bin binary"
)
STATS_COLUMNS = "i int, l bigint, d double, f float, dec decimal(5,2), s string, v varchar(4), c char(3), " \
    "dt date, ts timestamp, b boolean"


def truth(sarg: SearchArgument, file: dict[str, Any], schema: str = SCHEMA) -> TruthValue:
    """The file's TruthValue; asserts that both evaluators agree."""
    table = index_table(STATS_COLUMNS, [file])
    columns = parse_schema_text(schema)
    fast = PredicateEvaluator(sarg, columns).truth_values(table).to_pylist()
    slow = ScalarEvaluator(sarg, columns).evaluate_table(table)
    assert [truth_of(c) for c in fast] == slow
    return slow[0]


def stats(column: str, lo: object, hi: object, nulls: int | None = 0, records: int | None = 10) -> dict[str, Any]:
    return {"num_records": records, "min": {column: lo}, "max": {column: hi}, "nulls": {column: nulls}}


R = stats("i", 10, 20)
R_NULLS = stats("i", 10, 20, nulls=3)


@pytest.mark.parametrize(("op", "literals", "file", "expected"), [
    # EQUALS
    ("equals", (5,), R, TV.NO), ("equals", (10,), R, TV.YES_NO), ("equals", (25,), R, TV.NO),
    ("equals", (15,), R_NULLS, TV.YES_NO_NULL), ("equals", (5,), R_NULLS, TV.NO_NULL),
    ("equals", (7,), stats("i", 7, 7), TV.YES), ("equals", (7,), stats("i", 7, 7, nulls=1), TV.YES_NULL),
    # NULL_SAFE_EQUALS never has a NULL variant; YES only without nulls
    ("null_safe_equals", (5,), R_NULLS, TV.NO), ("null_safe_equals", (15,), R_NULLS, TV.YES_NO),
    ("null_safe_equals", (7,), stats("i", 7, 7), TV.YES), ("null_safe_equals", (7,), stats("i", 7, 7, 1), TV.YES_NO),
    # LESS_THAN / LESS_THAN_EQUALS
    ("less_than", (10,), R, TV.NO), ("less_than", (11,), R, TV.YES_NO), ("less_than", (21,), R, TV.YES),
    ("less_than", (20,), R, TV.YES_NO), ("less_than_equals", (20,), R, TV.YES),
    ("less_than_equals", (9,), R, TV.NO), ("less_than_equals", (10,), R, TV.YES_NO),
    ("less_than", (21,), R_NULLS, TV.YES_NULL),
    # IN
    ("in_", (1, 2, 30), R, TV.NO), ("in_", (1, 15), R, TV.YES_NO), ("in_", (7, 8), stats("i", 7, 7), TV.YES),
    ("in_", (6, 8), stats("i", 7, 7), TV.NO), ("in_", (6, 8), stats("i", 7, 7, 2), TV.NO_NULL),
    # BETWEEN
    ("between", (0, 30), R, TV.YES), ("between", (10, 20), R, TV.YES), ("between", (0, 9), R, TV.NO),
    ("between", (21, 30), R, TV.NO), ("between", (0, 15), R, TV.YES_NO), ("between", (12, 15), R, TV.YES_NO),
    ("between", (15, 12), R, TV.YES_NO), ("between", (15, 5), R, TV.NO),  # inverted: ORC says YES_NO for both
    # IS_NULL
    ("is_null", (), R, TV.NO), ("is_null", (), R_NULLS, TV.YES_NO),
])
def test_range_semantics(op: str, literals: tuple[object, ...], file: dict[str, Any], expected: TruthValue) -> None:
    assert truth(single(op, "i", *literals), file) is expected


@pytest.mark.parametrize(("op", "literals", "expected"), [
    ("equals", (5,), TV.NULL), ("less_than", (5,), TV.NULL), ("in_", (5, 6), TV.NULL), ("between", (1, 2), TV.NULL),
    ("null_safe_equals", (5,), TV.NO), ("is_null", (), TV.YES),
])
def test_all_null_file(op: str, literals: tuple[object, ...], expected: TruthValue) -> None:
    assert truth(single(op, "i", *literals), stats("i", None, None, nulls=10, records=10)) is expected


@pytest.mark.parametrize("op", ["equals", "less_than", "is_null", "null_safe_equals"])
def test_empty_file_is_no_and_its_negation_is_kept(op: str) -> None:
    literals = () if op == "is_null" else (5,)
    empty = stats("i", None, None, nulls=0, records=0)
    assert truth(single(op, "i", *literals), empty) is TV.NO
    assert truth(negated(op, "i", *literals), empty) is TV.YES


def test_missing_stats_keep_the_file() -> None:
    unknown_everything = {"num_records": None, "min": {}, "max": {}, "nulls": {}}
    assert truth(single("equals", "i", 5), unknown_everything) is TV.YES_NO_NULL
    assert truth(single("equals", "i", 5), {**R, "error": "footer unreadable"}) is TV.YES_NO_NULL
    assert truth(single("equals", "i", 5), {"min": None, "max": None, "nulls": None}) is TV.YES_NO_NULL
    # unknown null count: nulls possible
    assert truth(single("less_than", "i", 30), stats("i", 10, 20, nulls=None)) is TV.YES_NULL
    assert truth(single("is_null", "i"), stats("i", 10, 20, nulls=None)) is TV.YES_NO
    # one-sided bounds
    assert truth(single("less_than", "i", 5), stats("i", 10, None)) is TV.NO
    assert truth(single("less_than", "i", 50), stats("i", 10, None)) is TV.YES_NO
    assert truth(single("less_than", "i", 50), stats("i", None, 20)) is TV.YES
    assert truth(single("equals", "i", 50), stats("i", None, 20)) is TV.NO


def test_inconsistent_stats_are_not_trusted() -> None:
    assert truth(single("equals", "i", 15), stats("i", 20, 10)) is TV.YES_NO_NULL
    assert truth(single("equals", "i", 15), stats("i", 10, 20, nulls=11, records=10)) is TV.YES_NO_NULL
    assert truth(single("equals", "i", 15), stats("i", 10, 20, nulls=-1)) is TV.YES_NO_NULL


def test_columns_without_usable_stats_and_unknown_columns() -> None:
    assert truth(single("equals", "bin", "x"), R) is TV.YES_NO_NULL  # binary: not in the index
    assert truth(single("equals", "c", "ab"), stats("c", "ab", "ab")) is TV.YES_NO_NULL  # char: pad semantics
    assert truth(single("equals", "nope", 1), R) is TV.YES_NO_NULL
    assert truth(single("equals", "I", 5), R) is TV.NO  # case-insensitive


def test_integer_column_against_out_of_range_and_fractional_literals() -> None:
    full = stats("i", -(2**31), 2**31 - 1)
    assert truth(single("equals", "i", 3_000_000_000), full) is TV.NO
    assert truth(single("less_than", "i", 3_000_000_000), full) is TV.YES
    assert truth(single("less_than", "i", -3_000_000_000), full) is TV.NO
    assert truth(negated("less_than_equals", "i", 3_000_000_000), full) is TV.NO  # i > 3e9
    assert truth(single("equals", "i", Decimal("15.5")), R) is TV.NO
    assert truth(single("less_than", "i", Decimal("10.5")), R) is TV.YES_NO
    assert truth(single("less_than", "i", Decimal("9.5")), R) is TV.NO
    assert truth(single("less_than_equals", "i", 20.5), R) is TV.YES
    assert truth(single("equals", "i", 15.0), R) is TV.YES_NO
    assert truth(single("less_than", "i", math.inf), R) is TV.YES
    assert truth(single("equals", "i", math.nan), R) is TV.YES_NO_NULL
    assert truth(single("equals", "i", "15"), R) is TV.YES_NO_NULL  # text vs number: engines disagree
    big = stats("l", 2**63 - 2, 2**63 - 1)
    assert truth(single("equals", "l", 2**63 - 1), big) is TV.YES_NO
    assert truth(single("less_than", "l", 9.3e18), big) is TV.YES
    assert truth(single("equals", "l", float(2**63)), big) is TV.NO


def test_floats_nan_and_signed_zero() -> None:
    assert truth(single("equals", "d", 0.0), stats("d", -0.0, -0.0)) is TV.YES
    assert truth(single("equals", "d", -0.0), stats("d", 0.0, 0.0)) is TV.YES
    assert truth(single("less_than", "d", 0.0), stats("d", -0.0, 1.0)) is TV.NO
    assert truth(single("equals", "d", 5.0), stats("d", math.nan, math.nan)) is TV.YES_NO
    assert truth(single("equals", "d", 5.0), stats("d", 1.0, math.nan)) is TV.YES_NO
    assert truth(single("equals", "d", 0.5), stats("d", 1.0, math.nan)) is TV.NO
    assert truth(single("equals", "d", math.nan), stats("d", 1.0, 2.0)) is TV.YES_NO_NULL
    assert truth(single("less_than", "d", math.inf), stats("d", 1.0, math.inf)) is TV.YES_NO
    assert truth(single("equals", "d", Decimal("0.1")), stats("d", 0.1, 0.1)) is TV.NO  # 0.1 is no double
    assert truth(single("equals", "d", 2**53 + 1), stats("d", 2.0**53, 2.0**53 + 2)) is TV.NO  # not a double
    assert truth(single("less_than", "d", 2**53 + 1), stats("d", 2.0**53, 2.0**53 + 2)) is TV.YES_NO
    assert truth(single("equals", "d", 2**53 + 1), stats("d", 2.0**53, 2.0**53)) is TV.NO
    f32 = 0.10000000149011612  # float32(0.1), exactly
    assert truth(single("equals", "f", 0.1), stats("f", f32, f32)) is TV.NO
    assert truth(single("equals", "f", f32), stats("f", f32, f32)) is TV.YES
    assert truth(single("less_than", "f", 0.1), stats("f", f32, f32)) is TV.NO


def test_decimal_scales_are_compared_exactly() -> None:
    file = stats("dec", Decimal("1.25"), Decimal("1.25"))
    assert truth(single("equals", "dec", Decimal("1.250")), file) is TV.YES
    assert truth(single("equals", "dec", Decimal("1.2500001")), file) is TV.NO
    assert truth(single("less_than", "dec", Decimal("1.251")), file) is TV.YES
    assert truth(single("less_than", "dec", Decimal("1.249")), file) is TV.NO
    assert truth(single("equals", "dec", 1.25), file) is TV.YES  # 1.25 is an exact double
    assert truth(single("equals", "dec", 0.1), stats("dec", Decimal("0.10"), Decimal("0.10"))) is TV.NO
    assert truth(single("less_than", "dec", 10**6), stats("dec", Decimal("-999.99"), Decimal("999.99"))) is TV.YES


def test_strings_compare_in_utf8_byte_order() -> None:
    file = stats("s", "a", "é")
    assert truth(single("equals", "s", "z"), file) is TV.YES_NO
    assert truth(single("equals", "s", "\U0001f600"), file) is TV.NO  # above é in byte order
    assert truth(single("less_than", "s", "a"), file) is TV.NO
    assert truth(single("less_than", "s", "\uffff"), file) is TV.YES
    assert truth(single("equals", "s", 5), file) is TV.YES_NO_NULL
    assert truth(single("equals", "v", "ab"), stats("v", "ab", "ab")) is TV.YES


def test_dates_timestamps_and_booleans() -> None:
    day = stats("dt", dt.date(2024, 1, 1), dt.date(2024, 1, 1))
    assert truth(single("equals", "dt", dt.date(2024, 1, 1)), day) is TV.YES
    assert truth(single("equals", "dt", "2024-01-01"), day) is TV.YES
    assert truth(single("equals", "dt", "2024-1-1"), day) is TV.YES_NO_NULL
    assert truth(single("equals", "dt", dt.datetime(2024, 1, 1)), day) is TV.YES
    assert truth(single("equals", "dt", dt.datetime(2024, 1, 1, 12)), day) is TV.NO
    assert truth(single("less_than", "dt", dt.datetime(2024, 1, 1, 12)), day) is TV.YES
    before_epoch = stats("dt", dt.date(1969, 12, 31), dt.date(1969, 12, 31))
    assert truth(single("less_than", "dt", dt.date(1970, 1, 1)), before_epoch) is TV.YES
    stamp = stats("ts", dt.datetime(2024, 1, 1, 0, 0, 0, 1), dt.datetime(2024, 1, 1, 12))
    assert truth(single("less_than", "ts", dt.date(2024, 1, 1)), stamp) is TV.NO
    assert truth(single("less_than_equals", "ts", dt.datetime(2024, 1, 1, 12)), stamp) is TV.YES
    assert truth(single("equals", "ts", dt.datetime(2024, 1, 1)), stamp) is TV.NO
    assert truth(single("equals", "ts", "2024-01-01 12:00:00"), stamp) is TV.YES_NO_NULL
    assert truth(single("equals", "b", True), stats("b", False, False)) is TV.NO
    assert truth(single("equals", "b", True), stats("b", False, True)) is TV.YES_NO
    assert truth(single("equals", "b", 1), stats("b", True, True)) is TV.YES_NO_NULL


def test_literals_java_merges_with_another_day_keep_the_file() -> None:
    """Hive's builder keeps one leaf per Java equality, where 1582-10-05 equals 1582-10-15: in
    ``dt = '1582-10-05' OR dt = '1582-10-15'`` the second is the first's leaf, so no literal of the twenty days
    can be trusted to mean its own day (the file holding 1582-10-15 was pruned)."""
    switch = stats("dt", dt.date(1582, 10, 15), dt.date(1582, 10, 15))
    sarg = builder().start_or().equals("dt", LeafType.DATE, dt.date(1582, 10, 5)) \
        .equals("dt", LeafType.DATE, dt.date(1582, 10, 15)).end().build()
    assert len(sarg.leaves) == 1 and truth(sarg, switch) is TV.YES_NO_NULL
    for day in (dt.date(1582, 10, 5), dt.date(1582, 10, 14), dt.date(1582, 10, 24)):
        assert truth(single("equals", "dt", day), switch) is TV.YES_NO_NULL
        assert truth(single("equals", "ts", dt.datetime.combine(day, dt.time(1))), switch) is TV.YES_NO_NULL
    assert truth(single("equals", "dt", dt.date(1582, 10, 25)), switch) is TV.NO
    assert truth(single("equals", "dt", dt.date(1582, 10, 4)), switch) is TV.NO


def test_in_with_a_null_item_is_not_used() -> None:
    assert truth(single("in_", "i", 5, None), R) is TV.YES_NO_NULL


def test_an_unusable_or_branch_keeps_the_file() -> None:
    """``x = 5 OR nope = 1``: the unknown branch must not be dropped (that would prune on ``x = 5`` alone)."""
    sarg = builder().start_or().equals("i", LeafType.LONG, 5).equals("nope", LeafType.LONG, 1).end().build()
    assert truth(sarg, R) is TV.YES_NO_NULL
    sarg = builder().start_or().equals("i", LeafType.LONG, 5).equals("s", LeafType.STRING, "a").end().build()
    assert truth(sarg, {**R, "min": {"i": 10, "s": None}, "max": {"i": 20, "s": None}}) is TV.YES_NO_NULL
