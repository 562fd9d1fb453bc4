"""Batch shapes: chunked tables, record batches, empty batches, index fields typed unlike the schema."""

from __future__ import annotations

import pyarrow as pa

from storage_handler.pruning import PredicateEvaluator
from storage_handler.sarg import LeafType
from storage_handler.types import parse_schema_text
from tests.pruning.helpers import MAP, builder, index_table

SCHEMA = parse_schema_text("x int")
PARTS = parse_schema_text("p int")
SARG = builder().start_or().equals("x", LeafType.LONG, 5).equals("p", LeafType.LONG, 1).end().build()


def files(n: int) -> pa.Table:
    return index_table("x int", [
        {"min": {"x": i}, "max": {"x": i + 2}, "nulls": {"x": 0}, "partition_values": [("p", str(i % 3))]}
        for i in range(n)
    ])


def test_chunked_tables_and_record_batches_give_the_same_answer() -> None:
    table = files(10)
    expected = PredicateEvaluator(SARG, SCHEMA, PARTS).eval(table).to_pylist()
    assert expected == [False, True, False, True, True, True, False, True, False, False]
    chunked = pa.concat_tables([table.slice(0, 3), table.slice(3, 4), table.slice(7)])
    assert chunked.column("min_values").num_chunks == 3
    evaluator = PredicateEvaluator(SARG, SCHEMA, PARTS)
    assert evaluator.eval(chunked).to_pylist() == expected
    assert evaluator.eval(table.to_batches()[0]).to_pylist() == expected
    assert evaluator.eval(table.slice(4)).to_pylist() == expected[4:]


def test_empty_batch() -> None:
    empty = files(0)
    evaluator = PredicateEvaluator(SARG, SCHEMA, PARTS)
    assert evaluator.eval(empty).to_pylist() == []
    assert evaluator.truth_values(empty).to_pylist() == []


def test_index_fields_of_another_type_are_cast_or_ignored() -> None:
    def table(kind: pa.DataType, lo: object, hi: object) -> pa.Table:
        struct = pa.struct([("x", kind)])
        return pa.table({
            "num_records": pa.array([10], pa.int64()),
            "partition_values": pa.array([[]], MAP),
            "min_values": pa.array([{"x": lo}], struct),
            "max_values": pa.array([{"x": hi}], struct),
            "null_count": pa.array([{"x": 0}], pa.struct([("x", pa.int64())])),
        })

    sarg = builder().equals("x", LeafType.LONG, 50).build()
    evaluator = PredicateEvaluator(sarg, SCHEMA, ())
    assert evaluator.truth_values(table(pa.int64(), 1, 2)).to_pylist() == [2]  # widened int: cast safely
    assert evaluator.truth_values(table(pa.int64(), 1, 2**40)).to_pylist() == [7]  # does not fit: no stats
    assert evaluator.truth_values(table(pa.string(), "1", "2")).to_pylist() == [2]  # castable text
    assert evaluator.truth_values(table(pa.string(), "a", "b")).to_pylist() == [7]  # not numbers: no stats
