"""The index's columns: one home for their names, and the one way the evaluator reads statistics from them.

Every module that reads or writes an index row, a scan-file batch (the listing the query path builds has the
index's file columns) or a row-group table (the Spark reader's row groups in the index's layout) names columns
through these constants: a renamed column then fails loudly everywhere instead of silently reading as missing
(a missing column means "no statistics", which prunes nothing and says nothing).

:class:`IndexStatistics` is the Arrow-backed implementation of the evaluator's
:class:`~storage_handler.pruning.statistics.PruningStatistics` protocol (DataFusion's ``PruningStatistics``):
files, row groups and partitions all reach the evaluator through it, the same way.

The bottom of ``stats``: it imports nothing of the package.
"""

from __future__ import annotations

from typing import NamedTuple

import pyarrow as pa
import pyarrow.compute as pc

PATH = "path"  # relative POSIX path inside the table folder, or the absolute location of an outside file
SIZE = "size"  # bytes
MODIFICATION_TIME = "modification_time"  # milliseconds since the epoch
VERSION_TAG = "version_tag"  # the storage's version tag (inode ctime locally, ETag on S3); null = unknown
NUM_RECORDS = "num_records"  # rows in the file (null = unknown)
PARTITION_VALUES = "partition_values"  # map<string, string>; a null value is the NULL partition
MIN_VALUES = "min_values"  # struct: one field per stats-capable column, typed as the column
MAX_VALUES = "max_values"
NULL_COUNT = "null_count"  # struct of int64
STATS_ERROR = "stats_error"  # why the footer could not be read (null: it could)
BLOOM_FILTERS = "bloom_filters"  # struct of binary: one split-block filter per chosen column
VALUE_LISTS = "value_lists"  # struct of lists: the exact distinct values per chosen column

#: the columns that identify a file and tell whether an index row still describes it
FILE_COLUMNS = (PATH, SIZE, MODIFICATION_TIME, VERSION_TAG)
#: the per-column statistics (each a struct with one field per column)
STATS_STRUCTS = (MIN_VALUES, MAX_VALUES, NULL_COUNT)


class StatValues(NamedTuple):
    """One column's statistic for every container: ``values`` (None: not kept), whether the index keeps the
    field at all (``present``) and whether it could be read as the asked type (``usable``)."""

    values: pa.Array | None
    present: bool
    usable: bool


_ABSENT = StatValues(None, False, True)


def _single(column: pa.Array | pa.ChunkedArray) -> pa.Array:
    if isinstance(column, pa.ChunkedArray):
        return column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    return column


class IndexStatistics:
    """Statistics of the containers (files, or row groups) of an Arrow table or batch in the index's layout."""

    def __init__(self, data: pa.RecordBatch | pa.Table) -> None:
        self.data = data
        self._columns: dict[str, pa.Array | None] = {}

    @property
    def num_containers(self) -> int:
        return self.data.num_rows

    def _column(self, name: str) -> pa.Array | None:
        if name not in self._columns:
            found = name in self.data.schema.names
            self._columns[name] = _single(self.data.column(name)) if found else None
        return self._columns[name]

    def _field(self, struct_name: str, field: str, target: pa.DataType) -> StatValues:
        struct = self._column(struct_name)
        if struct is None or not pa.types.is_struct(struct.type) or struct.type.get_field_index(field) < 0:
            return _ABSENT
        values = pc.struct_field(struct, field)
        if values.type != target:
            try:
                values = pc.cast(values, target, safe=True)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
                return StatValues(None, True, False)
        return StatValues(values, True, True)

    def min_values(self, column: str, target: pa.DataType) -> StatValues:
        return self._field(MIN_VALUES, column, target)

    def max_values(self, column: str, target: pa.DataType) -> StatValues:
        return self._field(MAX_VALUES, column, target)

    def null_counts(self, column: str) -> StatValues:
        return self._field(NULL_COUNT, column, pa.int64())

    def row_counts(self) -> pa.Array | None:
        return self._column(NUM_RECORDS)

    def errors(self) -> pa.Array | None:
        return self._column(STATS_ERROR)

    def partition_values(self) -> pa.Array | None:
        return self._column(PARTITION_VALUES)

    def bloom_filters(self, column: str) -> StatValues:
        return self._field(BLOOM_FILTERS, column, pa.binary())

    def value_lists(self, column: str, element: pa.DataType) -> StatValues:
        return self._field(VALUE_LISTS, column, pa.list_(element))
