"""The 3-bit TruthValue encoding reproduces Hive's and/or/not tables exactly (all 49 pairs), scalar and vectorized."""

from __future__ import annotations

import itertools

import pyarrow as pa
import pytest

from storage_handler.pruning.truth_codes import (
    NO,
    NULL,
    YES,
    TruthPlanes,
    and_codes,
    code_of,
    is_needed,
    not_code,
    or_codes,
    planes_and,
    planes_not,
    planes_or,
    truth_of,
)
from storage_handler.sarg import TruthValue

ALL = list(TruthValue)
PAIRS = list(itertools.product(ALL, ALL))


def test_codes_are_the_outcome_sets() -> None:
    assert {tv.name: code_of(tv) for tv in ALL} == {
        "YES": YES, "NO": NO, "NULL": NULL, "YES_NULL": YES | NULL, "NO_NULL": NO | NULL, "YES_NO": YES | NO,
        "YES_NO_NULL": YES | NO | NULL,
    }
    assert all(truth_of(code_of(tv)) is tv for tv in ALL)


@pytest.mark.parametrize(("a", "b"), PAIRS, ids=[f"{a.name}-{b.name}" for a, b in PAIRS])
def test_and_or_match_hive(a: TruthValue, b: TruthValue) -> None:
    assert truth_of(and_codes([code_of(a), code_of(b)])) is a.and_(b)
    assert truth_of(or_codes([code_of(a), code_of(b)])) is a.or_(b)


def test_not_and_is_needed_match_hive() -> None:
    for tv in ALL:
        assert truth_of(not_code(code_of(tv))) is tv.not_()
        assert is_needed(code_of(tv)) == tv.is_needed()


def test_nary_matches_hive_left_fold() -> None:
    for triple in itertools.product(ALL, repeat=3):
        expected_and = triple[2].and_(triple[1].and_(triple[0]))
        expected_or = triple[2].or_(triple[1].or_(triple[0]))
        codes = [code_of(t) for t in triple]
        assert truth_of(and_codes(codes)) is expected_and
        assert truth_of(or_codes(codes)) is expected_or


def _planes(values: list[TruthValue]) -> TruthPlanes:
    codes = [code_of(v) for v in values]
    return TruthPlanes(
        pa.array([bool(c & YES) for c in codes]), pa.array([bool(c & NO) for c in codes]),
        pa.array([bool(c & NULL) for c in codes]),
    )


def _decode(planes: TruthPlanes, n: int) -> list[TruthValue]:
    return [truth_of(c) for c in planes.to_codes(n).to_pylist()]


def test_vectorized_planes_match_hive_for_all_pairs() -> None:
    left, right = [a for a, _ in PAIRS], [b for _, b in PAIRS]
    n = len(PAIRS)
    assert _decode(planes_and([_planes(left), _planes(right)]), n) == [a.and_(b) for a, b in PAIRS]
    assert _decode(planes_or([_planes(left), _planes(right)]), n) == [a.or_(b) for a, b in PAIRS]
    assert _decode(planes_not(_planes(left)), n) == [a.not_() for a in left]


def test_constant_planes_fold_without_arrays() -> None:
    array = _planes(ALL)
    unknown = TruthPlanes.constant(code_of(TruthValue.YES_NO_NULL))
    for op, hive in ((planes_and, TruthValue.and_), (planes_or, TruthValue.or_)):
        for constant in ALL:
            result = op([array, TruthPlanes.constant(code_of(constant))])
            assert _decode(result, len(ALL)) == [hive(v, constant) for v in ALL]
    assert _decode(planes_and([unknown, unknown]), 3) == [TruthValue.YES_NO_NULL] * 3
