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

from storage_handler.arrow_compat import one_array
from storage_handler.errors import DatasetError
from storage_handler.spark.legacy_calendar import legacy_modes, rebase_dates, refuse_old_timestamps
from storage_handler.spark.partition_text import spark_cast
from storage_handler.split import Split
from storage_handler.stats import indexed_columns
from storage_handler.stats.files.walk import absolute_path
from storage_handler.stats.index.layout import collated, without_columns
from storage_handler.stats.index.rows import row_group_rows
from storage_handler.storage import storage_for
from storage_handler.types import HiveType, is_list_view


def partition_array(value: str | None, target: pa.DataType, length: int) -> pa.Array:
    """A constant column for a partition value: the folder text cast as Spark's native scan casts it
    (:mod:`.partition_text`); NULL for the default partition and for text the cast rejects."""
    parsed = None if value is None else spark_cast(value, target)
    return pa.nulls(length, target) if parsed is None else pa.array([parsed] * length, target)


def cast_column(column: pa.ChunkedArray | pa.Array, target: pa.DataType, name: str, path: str) -> pa.Array:
    array = one_array(column)
    if pa.types.is_dictionary(array.type):
        array = array.dictionary_decode()
    if is_list_view(array.type):  # pyarrow's list_view cast drops values (26.0.1): rebuilt from Python values
        array = pa.array(array.to_pylist(), pa.list_(array.type.value_field))
    array = _names_as_declared(array, target)
    if array.type.equals(target):
        return array
    if pa.types.is_timestamp(array.type) and pa.types.is_timestamp(target):
        if array.type.tz is None:
            array = pc.assume_timezone(array, "UTC") if target.tz else array
        return array.cast(target, safe=False)  # ns -> us truncates sub-microsecond digits, as Spark does
    if (pa.types.is_binary(array.type) or pa.types.is_large_binary(array.type)) and pa.types.is_string(target):
        # Spark reads a plain BINARY column into a string column byte for byte; Arrow's cast would check UTF-8
        return (array if pa.types.is_binary(array.type) else array.cast(pa.binary())).view(pa.string())
    try:
        return array.cast(target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise DatasetError(
            f"column {name!r} in {path} has type {array.type}, which cannot be read as the table's {target}; "
            "run `hsh sync` to see the schema conflict"
        ) from e


def pad_char(array: pa.Array, hive_type: HiveType) -> pa.Array:
    """A ``char(n)`` column's values padded with spaces to ``n`` characters, as Spark's read-side padding does
    (longer values are left whole)."""
    if hive_type.name != "char" or hive_type.length is None:
        return array
    return pc.utf8_rpad(array, width=hive_type.length, padding=" ")


def _names_as_declared(array: pa.Array, target: pa.DataType) -> pa.Array:
    """Struct fields renamed to the declared spelling where they differ only in case (Spark matches them so;
    Arrow's cast matches names exactly and would read the field as NULL), through lists and nested structs."""
    if pa.types.is_struct(array.type) and pa.types.is_struct(target):
        declared = {target.field(i).name.lower(): target.field(i) for i in range(target.num_fields)}
        names, children = [], []
        for i in range(array.type.num_fields):
            field = array.type.field(i)
            match = declared.get(field.name.lower())
            names.append(match.name if match is not None else field.name)
            child = array.field(i)
            children.append(_names_as_declared(child, match.type) if match is not None else child)
        if names == [array.type.field(i).name for i in range(array.type.num_fields)] and all(
                c.type.equals(array.type.field(i).type) for i, c in enumerate(children)):
            return array
        return pa.StructArray.from_arrays(children, names=names, mask=array.is_null())
    if (pa.types.is_list(array.type) or pa.types.is_large_list(array.type)) and (
            pa.types.is_list(target) or pa.types.is_large_list(target)):
        values = _names_as_declared(array.values, target.value_type)
        if values is array.values:
            return array
        kind = pa.ListArray if pa.types.is_list(array.type) else pa.LargeListArray
        return kind.from_arrays(array.offsets, values, mask=array.is_null())
    return array


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
    by_collation = collated(columns)
    if by_collation:  # not byte order: unknown, as in the index (input_format._current_types)
        table = without_columns(table, by_collation)
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
        source = filesystem.open_input_file(path)
        if source.size() == 0:
            source.close()
            return  # a 0-byte file holds no rows: Spark's file index skips it (the index keeps it, unreadable)
        # INT96 as microseconds, as Spark reads it: pyarrow's nanoseconds overflow outside 1677..2262
        pf = pq.ParquetFile(source, pre_buffer=True, coerce_int96_timestamp_unit="us")
    except (OSError, pa.ArrowException) as e:
        raise DatasetError(f"cannot read data file {full}: {e}") from e
    legacy = _legacy_columns(pf)
    present = {name.lower(): name for name in pf.schema_arrow.names}
    wanted = [present[n] for n, _ in columns if n in present]
    groups = (list(split.row_groups) if split.row_groups is not None
              else row_groups_to_read(pf.metadata, split, columns, evaluator))
    parts = dict(split.partition_values)
    for batch in pf.iter_batches(batch_size=batch_size, row_groups=groups, columns=wanted):
        n = batch.num_rows
        arrays: list[pa.Array] = []
        for i, (name, hive_type) in enumerate(columns):
            target = schema.field(i).type
            if name in present:
                array = cast_column(batch.column(present[name]), target, name, str(full))
                if present[name] in legacy:
                    array = _as_spark_rebases(array, present[name], str(full))
                arrays.append(pad_char(array, hive_type))
            else:
                arrays.append(pa.nulls(n, target))
        for j, (name, _type) in enumerate(partition_keys):
            target = schema.field(len(columns) + j).type
            arrays.append(partition_array(parts.get(name), target, n))
        yield pa.RecordBatch.from_arrays(arrays, schema=schema)


def _legacy_columns(pf: pq.ParquetFile) -> frozenset[str]:
    """The file's top-level date and timestamp columns written in the hybrid calendar (:mod:`.legacy_calendar`)."""
    dates_legacy, int96_legacy = legacy_modes(pf.metadata.metadata)
    if not (dates_legacy or int96_legacy):
        return frozenset()
    out = set()
    for i in range(len(pf.schema)):
        leaf = pf.schema.column(i)
        if "." in leaf.path:
            continue
        int96 = str(leaf.physical_type) == "INT96"
        if (int96 and int96_legacy) or (not int96 and dates_legacy):
            out.add(leaf.path)
    return frozenset(out)


def _as_spark_rebases(array: pa.Array, column: str, path: str) -> pa.Array:
    if pa.types.is_date32(array.type):
        return rebase_dates(array)
    if pa.types.is_timestamp(array.type):
        refuse_old_timestamps(array, column, path)
    return array
