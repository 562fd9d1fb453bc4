"""Prune the partition list before storage is touched: one Arrow batch of partitions, one evaluator pass.

The batch has the scan-file shape the evaluator already knows (a ``partition_values`` map column, no statistics
columns), one row per partition: partition leaves are decided exactly as for files
(``partition_value(element_at(partition_values, k), type)``) and every data-column leaf is unknown, so a
partition is dropped only when its values alone rule the predicate out.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc

from storage_handler.catalog.partitions import parse_partition_name
from storage_handler.pruning import PredicateEvaluator
from storage_handler.pruning.partitions import PARTITION_VALUES_COLUMN


def partition_batch(names: Sequence[str], keys: Sequence[str], table: str = "?") -> pa.Table:
    """One row per partition name: its values as the ``partition_values`` map (keys lower-cased)."""
    lowered = [k.lower() for k in keys]
    maps = [list(zip(lowered, parse_partition_name(n, keys, table), strict=True)) for n in names]
    return pa.table({PARTITION_VALUES_COLUMN: pa.array(maps, pa.map_(pa.string(), pa.string()))})


def prune_partition_names(evaluator: PredicateEvaluator | None, names: Sequence[str], keys: Sequence[str],
                          table: str = "?") -> list[str]:
    """The names of the partitions that may hold a matching row (all of them without an evaluator)."""
    if evaluator is None or not names:
        return list(names)
    keep = evaluator.eval(partition_batch(names, keys, table))
    return [names[i] for i in pc.indices_nonzero(keep).to_pylist()]
