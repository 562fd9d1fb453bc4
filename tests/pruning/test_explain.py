"""explain: which leaf ruled a file out."""

from __future__ import annotations

import pytest

from storage_handler.pruning import PredicateEvaluator
from storage_handler.sarg import LeafType, TruthValue
from storage_handler.types import parse_schema_text
from tests.pruning.helpers import builder, index_table

SCHEMA = parse_schema_text("x bigint, y string")
PARTS = parse_schema_text("p int")


def table():  # type: ignore[no-untyped-def]
    return index_table("x bigint, y string", [
        {"min": {"x": 1, "y": "a"}, "max": {"x": 9, "y": "c"}, "nulls": {"x": 0, "y": 0},
         "partition_values": [("p", "1")]},
        {"min": {"x": 20, "y": "a"}, "max": {"x": 30, "y": "c"}, "nulls": {"x": 0, "y": 0},
         "partition_values": [("p", "1")]},
        {"min": {"x": 1, "y": "x"}, "max": {"x": 9, "y": "z"}, "nulls": {"x": 0, "y": 0},
         "partition_values": [("p", "7")]},
        {"min": {"x": 1, "y": "a"}, "max": {"x": 9, "y": "c"}, "nulls": {"x": 0, "y": 5},
         "partition_values": [("p", None)]},
    ])


def test_and_reports_the_leaf_that_is_no() -> None:
    sarg = builder().start_and().equals("x", LeafType.LONG, 5).less_than("y", LeafType.STRING, "d").end().build()
    evaluator = PredicateEvaluator(sarg, SCHEMA, PARTS)
    kept = evaluator.explain(table(), 0)
    assert kept.kept and kept.reasons == () and kept.value is TruthValue.YES_NO
    second = evaluator.explain(table(), 1)
    assert not second.kept
    assert [(r.index, r.text, r.value) for r in second.reasons] == [(0, "(EQUALS x 5)", TruthValue.NO)]
    assert str(second) == "file 1: pruned (NO) by leaf-0 (EQUALS x 5) = NO"
    third = evaluator.explain(table(), 2)
    assert [(r.index, r.value) for r in third.reasons] == [(1, TruthValue.NO)]
    assert [str(v) for v in third.leaves] == ["leaf-0 (EQUALS x 5) = YES_NO", "leaf-1 (LESS_THAN y d) = NO"]


def test_or_reports_every_branch_and_not_is_marked() -> None:
    # x = 25 OR NOT (p = 7)   ->   file 2: x in [1,9] and p = 7
    sarg = builder().start_or().equals("x", LeafType.LONG, 25).start_not().equals("p", LeafType.LONG, 7).end() \
        .end().build()
    explanation = PredicateEvaluator(sarg, SCHEMA, PARTS).explain(table(), 2)
    assert not explanation.kept
    assert [(r.text, r.value, r.negated) for r in explanation.reasons] == [
        ("(EQUALS x 25)", TruthValue.NO, False), ("(EQUALS p 7)", TruthValue.YES, True)]
    assert "not leaf-1 (EQUALS p 7) = YES" in str(explanation)


def test_null_results_and_unbound_notes() -> None:
    sarg = builder().start_and().equals("p", LeafType.LONG, 1).equals("nope", LeafType.LONG, 1).end().build()
    explanation = PredicateEvaluator(sarg, SCHEMA, PARTS).explain(table(), 3)
    assert not explanation.kept and explanation.value is TruthValue.NO_NULL  # NULL and YES_NO_NULL
    assert [(r.text, r.value) for r in explanation.reasons] == [("(EQUALS p 1)", TruthValue.NULL)]
    unbound = [v for v in explanation.leaves if v.note]
    assert len(unbound) == 1 and "not a column" in unbound[0].note


def test_constant_no_is_reported_and_row_is_checked() -> None:
    sarg = builder().literal(TruthValue.NO).build()
    evaluator = PredicateEvaluator(sarg, SCHEMA, PARTS)
    explanation = evaluator.explain(table(), 0)
    assert [r.text for r in explanation.reasons] == ["constant NO"]
    with pytest.raises(IndexError):
        evaluator.explain(table(), 4)
