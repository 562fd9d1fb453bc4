"""What the evaluator asks of the things it prunes: one small protocol (DataFusion's ``PruningStatistics``).

A *container* is whatever one verdict is about: a data file (the index), a row group (the Spark reader's row-group
pruning), a partition (the table model's partition pruning). The evaluator never names an index column; it asks
for one statistic of one column across all containers at once, as an Arrow array, and gets ``None`` where nothing
is kept -- which always means "unknown", never "empty". The Arrow-backed implementation over the index's layout is
:class:`storage_handler.stats.columns.IndexStatistics`; :func:`as_statistics` wraps an Arrow table or batch in it.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import pyarrow as pa

from storage_handler.stats.columns import IndexStatistics, StatValues

__all__ = ["PruningStatistics", "StatValues", "as_statistics"]


@runtime_checkable
class PruningStatistics(Protocol):
    """Per-container statistics, one column and one statistic at a time, as arrays aligned with the containers."""

    @property
    def num_containers(self) -> int: ...

    def min_values(self, column: str, target: pa.DataType) -> StatValues:
        """Each container's minimum of ``column``, cast to ``target`` (the leaf's domain type)."""
        ...

    def max_values(self, column: str, target: pa.DataType) -> StatValues: ...

    def null_counts(self, column: str) -> StatValues: ...

    def row_counts(self) -> pa.Array | None:
        """Rows per container (null: unknown)."""
        ...

    def errors(self) -> pa.Array | None:
        """Why a container's statistics could not be read (null: they could); such containers are unknown."""
        ...

    def partition_values(self) -> pa.Array | None:
        """Each container's partition values, ``map<string, string>`` (a null value is the NULL partition)."""
        ...

    def bloom_filters(self, column: str) -> StatValues: ...

    def value_lists(self, column: str, element: pa.DataType) -> StatValues: ...


def as_statistics(data: PruningStatistics | pa.RecordBatch | pa.Table) -> PruningStatistics:
    """``data`` itself, or an Arrow table / batch in the index's layout wrapped as statistics."""
    if isinstance(data, (pa.RecordBatch, pa.Table)):
        return IndexStatistics(data)
    return data
