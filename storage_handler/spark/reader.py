"""Read one split (a data file, optionally some of its row groups) as Arrow batches of exactly the table schema.

Spark checks the batches a Python data source yields against the declared schema and refuses any difference
(int64 for int32, a missing column, a zone on a timestamp). So every batch is built column by column:

* a data column present in the file is cast to the declared type (timestamps of any unit become microseconds;
  zone-less values are taken as UTC wall-clock time, the rule the statistics index uses too);
* a data column missing from the file (schema evolution) is all NULL;
* a partition column is the folder's value parsed as its declared type (unparseable or default partition: NULL,
  as Hive reads it).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from storage_handler.errors import DatasetError
from storage_handler.spark.partition_text import spark_cast
from storage_handler.split import Split
from storage_handler.stats import indexed_columns
from storage_handler.stats.files.walk import absolute_path
from storage_handler.stats.index.rows import row_group_rows
from storage_handler.storage import storage_for
from storage_handler.types import HiveType


def partition_array(value: str | None, target: pa.DataType, length: int) -> pa.Array:
    """A constant column for a partition value: the folder text cast as Spark's native scan casts it
    (:mod:`.partition_text`); NULL for the default partition and for text the cast rejects."""
    parsed = None if value is None else spark_cast(value, target)
    return pa.nulls(length, target) if parsed is None else pa.array([parsed] * length, target)


def cast_column(column: pa.ChunkedArray | pa.Array, target: pa.DataType, name: str, path: str) -> pa.Array:
    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if pa.types.is_dictionary(array.type):
        array = array.dictionary_decode()
    if array.type.equals(target):
        return array
    if pa.types.is_timestamp(array.type) and pa.types.is_timestamp(target):
        if array.type.tz is None:
            array = pc.assume_timezone(array, "UTC") if target.tz else array
        return array.cast(target, safe=False)  # ns -> us truncates sub-microsecond digits, as Spark does
    try:
        return array.cast(target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise DatasetError(
            f"column {name!r} in {path} has type {array.type}, which cannot be read as the table's {target}; "
            "run `hsh sync` to see the schema conflict"
        ) from e


def row_groups_to_read(
    metadata: pq.FileMetaData, split: Split, columns: Sequence[tuple[str, HiveType]], evaluator: Any
) -> list[int]:
    """The row groups whose statistics may hold a matching row: the file-level evaluator, applied per row group.

    Each row group becomes one row of an index-shaped table (:func:`~storage_handler.stats.index.rows.row_group_rows`:
    the same statistics rules as the index), so the very same compiled predicate decides.
    """
    everything = list(range(metadata.num_row_groups))
    if evaluator is None or metadata.num_row_groups <= 1:
        return everything
    table = row_group_rows(indexed_columns(columns), metadata, dict(split.partition_values))
    keep = evaluator.eval(table).to_pylist()
    return [r for r in everything if keep[r]]


def read_split(
    location: str,
    split: Split,
    schema: pa.Schema,
    columns: Sequence[tuple[str, HiveType]],
    partition_keys: Sequence[tuple[str, HiveType]],
    *,
    evaluator: Any = None,
    batch_size: int = 65536,
    conf: Mapping[str, str] | None = None,
) -> Iterator[pa.RecordBatch]:
    """Yield record batches of ``schema`` (the Arrow form of Spark's schema: data columns, then partition keys).

    ``location`` is the table's (``split.path`` is relative to it, or absolute); the file is read through
    ``pyarrow.fs`` on its storage (``conf``: the table's ``fs.s3a.*`` settings). With an ``evaluator`` (a
    :class:`~storage_handler.pruning.PredicateEvaluator` of the query), row groups whose statistics rule out every
    match are skipped.
    """
    full = absolute_path(location, split.path)
    try:
        filesystem, path = storage_for(full, conf).arrow_filesystem(full)
        pf = pq.ParquetFile(filesystem.open_input_file(path), pre_buffer=True)
    except (OSError, pa.ArrowException) as e:
        raise DatasetError(f"cannot read data file {full}: {e}") from e
    present = {name.lower(): name for name in pf.schema_arrow.names}
    wanted = [present[n] for n, _ in columns if n in present]
    groups = (list(split.row_groups) if split.row_groups is not None
              else row_groups_to_read(pf.metadata, split, columns, evaluator))
    parts = dict(split.partition_values)
    for batch in pf.iter_batches(batch_size=batch_size, row_groups=groups, columns=wanted):
        n = batch.num_rows
        arrays: list[pa.Array] = []
        for i, (name, _t) in enumerate(columns):
            target = schema.field(i).type
            if name in present:
                arrays.append(cast_column(batch.column(present[name]), target, name, str(full)))
            else:
                arrays.append(pa.nulls(n, target))
        for j, (name, _type) in enumerate(partition_keys):
            target = schema.field(len(columns) + j).type
            arrays.append(partition_array(parts.get(name), target, n))
        yield pa.RecordBatch.from_arrays(arrays, schema=schema)
