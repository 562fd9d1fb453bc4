"""TruthValue: Hive's and/or/not tables, checked against the jar for every pair."""

from __future__ import annotations

import itertools

import pytest

from storage_handler.sarg import TruthValue
from storage_handler.sarg.truth import AND_TABLE, NOT_TABLE, OR_TABLE

from .oracle import HiveOracle

ALL = list(TruthValue)
Y, N, NULL, YN_, N_N, YN, YNN = ALL  # YES, NO, NULL, YES_NULL, NO_NULL, YES_NO, YES_NO_NULL


def test_enum_order_and_names_are_hives() -> None:
    assert [v.value for v in ALL] == ["YES", "NO", "NULL", "YES_NULL", "NO_NULL", "YES_NO", "YES_NO_NULL"]


def test_all_49_pairs_and_not_match_the_jar(hive_oracle: HiveOracle) -> None:
    java = hive_oracle.truth()
    assert java["values"] == [v.value for v in ALL]
    for (i, a), (j, b) in itertools.product(enumerate(ALL), repeat=2):
        assert a.and_(b).value == java["and"][i][j], (a, b)
        assert a.or_(b).value == java["or"][i][j], (a, b)
    assert [a.not_().value for a in ALL] == java["not"]
    assert [a.is_needed() for a in ALL] == java["needed"]
    assert [a.and_(None).value for a in ALL] == java["and_null"]
    assert [a.or_(None).value for a in ALL] == java["or_null"]


@pytest.mark.parametrize(
    ("left", "right", "expected_and", "expected_or"),
    [
        (Y, N, N, Y),
        (NULL, Y, NULL, Y),
        (NULL, N, N, NULL),
        (NULL, YN, N_N, YN_),  # Hive's table, not plain three-valued logic on sets
        (YN_, N_N, N_N, YN_),
        (YN, YN, YN, YN),
        (NULL, YNN, N_N, YN_),
    ],
)
def test_selected_entries(
    left: TruthValue, right: TruthValue, expected_and: TruthValue, expected_or: TruthValue
) -> None:
    assert left.and_(right) is expected_and
    assert left.or_(right) is expected_or


def test_tables_are_symmetric_and_exported_read_only() -> None:
    for a, b in itertools.product(ALL, repeat=2):
        assert AND_TABLE[a, b] is AND_TABLE[b, a] is a.and_(b)
        assert OR_TABLE[a, b] is OR_TABLE[b, a] is a.or_(b)
    assert all(NOT_TABLE[a] is a.not_() and a.not_().not_() is a for a in ALL)
    with pytest.raises(TypeError):
        AND_TABLE[Y, Y] = N  # type: ignore[index]


def test_is_needed_only_skips_no_null_and_no_null() -> None:
    assert {v for v in ALL if not v.is_needed()} == {N, NULL, N_N}
