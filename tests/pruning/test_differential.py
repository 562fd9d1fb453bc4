"""Differential test: the vectorized evaluator and the scalar oracle agree exactly, file by file.

Generated: index rows with unknown / one-sided / inconsistent / NaN bounds, empty and all-null files, footer errors,
partition maps with NULL, default-partition, unparseable, upper-cased or missing keys; and random AND/OR/NOT trees of
every leaf operator over every column type (plus unknown columns and literals of the wrong type).
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from storage_handler.pruning import PredicateEvaluator, truth_of
from storage_handler.sarg import SearchArgument
from tests.helpers import examples
from tests.pruning.helpers import index_table
from tests.pruning.scalar_oracle import ScalarEvaluator
from tests.pruning.strategies import (
    DATA_SCHEMA,
    INDEX_COLUMNS,
    PARTITION_SCHEMA,
    index_file,
    search_arguments,
)

SETTINGS = settings(max_examples=examples(400), deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                            HealthCheck.filter_too_much])


def _compare(sarg: SearchArgument, files: list[dict[str, Any]], compact: bool) -> None:
    table = index_table(INDEX_COLUMNS, files)
    evaluator = PredicateEvaluator(sarg, DATA_SCHEMA, PARTITION_SCHEMA, compact=compact)
    fast = [truth_of(c) for c in evaluator.truth_values(table).to_pylist()]
    slow = ScalarEvaluator(sarg, DATA_SCHEMA, PARTITION_SCHEMA, compact=compact).evaluate_table(table)
    assert fast == slow, f"{sarg.to_old_string()}\n{table.to_pylist()}"
    keep = evaluator.eval(table).to_pylist()
    assert keep == [v.is_needed() for v in slow]


@SETTINGS
@given(sarg=search_arguments(), files=st.lists(index_file(), min_size=1, max_size=6))
def test_vectorized_matches_scalar_oracle(sarg: SearchArgument, files: list[dict[str, Any]]) -> None:
    _compare(sarg, files, compact=False)


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.filter_too_much])
@given(sarg=search_arguments(), files=st.lists(index_file(), min_size=1, max_size=4))
def test_vectorized_matches_scalar_oracle_on_compact_expression(sarg: SearchArgument,
                                                                files: list[dict[str, Any]]) -> None:
    _compare(sarg, files, compact=True)
