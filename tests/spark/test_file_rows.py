"""The row counts the prune answer carries for the files left to read (``aggregates.file_rows``): the extension reads
those files in the driver only while their rows are few, so a count the index does not trust must be unknown."""

from __future__ import annotations

import pyarrow as pa

from storage_handler.spark.aggregates import file_rows
from storage_handler.stats.columns import NUM_RECORDS, STATS_ERROR


def test_trusted_counts_pass_and_untrusted_ones_are_unknown() -> None:
    rows = pa.table({NUM_RECORDS: pa.array([5, None, 7, 0], pa.int64()),  # None: unindexed, or changed since
                     STATS_ERROR: pa.array([None, None, "footer unreadable", None], pa.string())})
    assert file_rows(rows) == [5, None, None, 0]


def test_no_counts_at_all_are_all_unknown() -> None:
    assert file_rows(pa.table({"path": ["a", "b"]})) == [None, None]
    assert file_rows(pa.table({NUM_RECORDS: pa.array([3], pa.int64())})) == [3]


def test_an_aggregate_over_no_kept_file_answers_nothing() -> None:
    """Nothing kept: the index rows are a table with no chunks, and pyarrow 14 (Spark 3.5's environments) crashed
    the prune service (SIGSEGV) on ``indices_nonzero`` of such a mask: every count/min/max whose filter ruled out
    every file failed the query."""
    from storage_handler.catalog import ScanFiles
    from storage_handler.spark.aggregates import matched
    from storage_handler.stats.columns import MAX_VALUES, MIN_VALUES, NULL_COUNT
    from storage_handler.types import HiveType

    bounds = pa.struct([("x", pa.int64())])
    rows = pa.Table.from_batches([], pa.schema([(NUM_RECORDS, pa.int64()), (NULL_COUNT, bounds),
                                                (MIN_VALUES, bounds), (MAX_VALUES, bounds)]))
    kept = ScanFiles(pa.Table.from_batches([], pa.schema([("path", pa.string())])), pa.array([], pa.int32()), ())
    certain = pa.chunked_array([], pa.bool_())
    empty = kept.filter(certain)
    assert empty.num_rows == 0
    answer = matched(kept, rows, certain, {"x": HiveType("bigint")}, ["x"], ["x"])
    assert answer["positions"] == [] and answer["rows"] == [] and answer["file_rows"] == []
