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
