"""Per-file bloom filters and value lists: reading them from a file, and their columns in the index.

Why the values are read (not only the footer): min/max prune only the columns the data is clustered by, while a
lookup by an id the data is not sorted by needs to know which values each file holds. For every chosen column
(:class:`~storage_handler.stats.membership.spec.MembershipSpec`) of one file, in the same file open that reads
its footer (``footer.read_file_stats``):

* the footer's own bloom filters are used when they can stand for the column (``parquet_bloom.py``) and no value
  list is wanted; otherwise the column is read **one row group at a time** (memory bounded by a row group plus the
  file's distinct hashes), its values converted to the table's type exactly as the reader converts them;
* a bloom filter gets every distinct non-null value's hash, sized from the file's distinct count and the table's
  false-positive rate; a value list the distinct values, if there are at most ``value_list_max`` of them.

Where the table's reading of a value is not one exact value, every candidate goes into the filter and no list is
kept: nanosecond timestamps (floor and ceiling microsecond), decimals written at a larger scale than the table's
(rounded down and up), strings longer than a ``varchar(n)`` column (Spark reads them whole, Hive cut). INT96 timestamps, values that do not fit the table's type, and dates and timestamps older
than the footer bounds trust (``convert.FIRST_TRUSTED_DAY`` / ``_US``: Spark may rebase them) get nothing (keep). Any
failure only costs that column its filter in that file.

In the index (``index.py``), ``bloom_filters`` is a struct of one ``binary`` field per bloom column and
``value_lists`` a struct of one ``list<type>`` field per value-list column; a null entry means "no filter" (keep).
An index written before either existed has neither column, and loads as "no filters".
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from storage_handler.arrow_compat import one_array
from storage_handler.stats.columns import BLOOM_FILTERS, VALUE_LISTS
from storage_handler.stats.footers.convert import (
    FIRST_TRUSTED_DAY,
    FIRST_TRUSTED_US,
    Source,
    classify,
    spark_reads,
)
from storage_handler.stats.membership import bloom
from storage_handler.stats.membership.parquet_bloom import footer_filter
from storage_handler.stats.membership.spec import MembershipSpec
from storage_handler.types import HiveType, hive_to_arrow

log = logging.getLogger(__name__)
MEMBERSHIP_COLUMNS = (BLOOM_FILTERS, VALUE_LISTS)
MEMBERSHIP_KEY = b"hsh.index.membership"


@dataclass(frozen=True, slots=True)
class ColumnMembership:
    """One column of one file: its bloom filter bitset and its distinct values (None = not kept)."""

    bloom: bytes | None = None
    values: tuple[Any, ...] | None = None
    from_footer: bool = False  # the filter is the file's own (Parquet footer), not built from the values


# ------------------------------------------------------------------------------------------------ reading
def read_membership(pf: pq.ParquetFile, handle: Any, path: str, columns: Sequence[tuple[str, HiveType]],
                    spec: MembershipSpec) -> dict[str, ColumnMembership]:
    """Bloom filters and value lists of ``spec``'s columns for one open file (``handle``: the open file ``pf``
    reads, whose own filters are read from it too); never raises."""
    types = {name.lower(): hive_type for name, hive_type in columns}
    leaves = _top_level_leaves(pf.metadata.schema)
    result: dict[str, ColumnMembership] = {}
    for column in spec.columns:
        hive_type = types.get(column)
        found = leaves.get(column)
        if hive_type is None or hive_type.name not in bloom.MEMBERSHIP_TYPES or found is None or len(found) != 1:
            continue  # absent from this file: all null here, which min/max/null count already say
        try:
            result[column] = _column(pf, handle, found[0], hive_type, column in spec.bloom_columns,
                                     column in spec.value_list_columns, spec)
        except Exception as exc:  # noqa: BLE001 - a column we cannot read gets no filter (files are kept)
            log.debug("no bloom filter / value list for %s in %s: %s", column, path, exc)
    return result


def _top_level_leaves(schema: Any) -> dict[str, list[int]]:
    leaves: dict[str, list[int]] = {}
    for i in range(len(schema)):
        col = schema.column(i)
        if col.path == col.name and col.max_repetition_level == 0:
            leaves.setdefault(col.name.lower(), []).append(i)
    return leaves


def _column(pf: pq.ParquetFile, handle: Any, leaf: int, hive_type: HiveType, want_bloom: bool, want_list: bool,
            spec: MembershipSpec) -> ColumnMembership:
    md = pf.metadata
    source = classify(md.schema.column(leaf))
    if not spark_reads(source, hive_type):  # a file Spark cannot read as the column: no membership, read it
        return ColumnMembership()
    if want_bloom and not want_list:
        from_footer = footer_filter(handle, md, leaf, source, hive_type, spec.fpp)
        if from_footer is not None:
            return ColumnMembership(bloom=from_footer, from_footer=True)
    name = md.schema.column(leaf).name
    hashes: list[np.ndarray] = []
    distinct: pa.Array | None = None
    exact = want_list
    for r in range(md.num_row_groups):
        if md.row_group(r).num_rows == 0:
            continue
        raw = pf.read_row_group(r, columns=[name], use_threads=False).column(0)
        candidates, is_exact = to_table_values(raw, source, hive_type)
        if candidates is None:
            return ColumnMembership()
        if want_bloom:
            hashes.extend(np.unique(bloom.canonical_hashes(c, hive_type)) for c in candidates)
        exact = exact and is_exact
        if exact:
            distinct = pc.unique(candidates[0] if distinct is None else pa.concat_arrays([distinct, candidates[0]]))
            exact = len(distinct) - distinct.null_count <= spec.value_list_max
        if not want_bloom and not exact:
            return ColumnMembership()
    bitset = bloom.filter_for(np.concatenate(hashes), spec.fpp) if want_bloom and hashes else None
    if want_bloom and not hashes:
        bitset = bloom.build(np.zeros(0, dtype=np.uint64), bloom.MIN_BYTES)  # no value at all
    values = None
    if want_list and exact:
        kept = distinct.drop_null() if distinct is not None else pa.array([], hive_to_arrow(hive_type))
        values = tuple(kept.take(pc.sort_indices(kept)).to_pylist())
    return ColumnMembership(bloom=bitset, values=values)


def to_table_values(raw: pa.ChunkedArray | pa.Array, source: Source,
                    hive_type: HiveType) -> tuple[list[pa.Array] | None, bool]:
    """The values the table reads for one column chunk: one array if each stored value reads as one table value
    (``True``), two (floor and ceiling readings) if not (``False``); ``None`` if we cannot tell."""
    arr = one_array(raw)
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    target = hive_to_arrow(hive_type)
    name = hive_type.name
    kind = source.kind
    try:
        if name in ("string", "varchar") and kind == "string":
            arr = arr.cast(pa.string())
            if name == "varchar" and hive_type.length is not None:
                # Spark reads the value whole, Hive cut to the length: a value longer than that has two readings
                cut = pc.utf8_slice_codeunits(arr, 0, hive_type.length)
                if not cut.equals(arr):
                    return [arr, cut], False
            return [arr], True
        if hive_type.is_integer and kind == "int":
            return [arr.cast(target)], True  # safe cast: a value outside the type raises (no filter)
        if name == "date" and kind == "date":
            days = arr.cast(target)
            return ([days], True) if _from(days.view(pa.int32()), FIRST_TRUSTED_DAY) else (None, False)
        if name == "timestamp" and kind == "timestamp":
            readings, exact = _timestamps(arr, source.unit)
            if readings is not None and not all(_from(r.view(pa.int64()), FIRST_TRUSTED_US) for r in readings):
                return None, False
            return readings, exact
        if name == "decimal" and kind == "decimal":
            return _decimals(arr, target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return None, False
    return None, False  # int96 and anything the table would not read as this type


def _from(values: pa.Array, first: int) -> bool:
    """Whether no value is before ``first``: an older date or timestamp may read as another value in Spark (see
    :mod:`storage_handler.stats.footers.convert`), so its column gets no filter in that file."""
    least = pc.min(values).as_py()
    return least is None or least >= first


def _timestamps(arr: pa.Array, unit: str) -> tuple[list[pa.Array] | None, bool]:
    ints = arr.view(pa.int64()) if arr.type.bit_width == 64 else arr.cast(pa.int64())
    if unit == "MILLIS":
        return [pc.multiply_checked(ints, 1000).view(pa.timestamp("us"))], True
    if unit == "MICROS":
        return [ints.view(pa.timestamp("us"))], True
    if unit != "NANOS":
        return None, False
    # int64 without the nulls: with them, to_numpy gives float64, which rounds nanoseconds near 1.6e18 by ~128 ns
    # and so off the microsecond a reader truncates to
    ns = ints.drop_null().to_numpy(zero_copy_only=False)
    floor = np.floor_divide(ns, 1000)
    ceil = -np.floor_divide(-ns, 1000)
    exact = bool((floor == ceil).all())
    readings = [pa.array(floor, pa.int64()).view(pa.timestamp("us"))]
    if not exact:
        readings.append(pa.array(ceil, pa.int64()).view(pa.timestamp("us")))
    return readings, exact


def _decimals(arr: pa.Array, target: pa.DataType) -> tuple[list[pa.Array] | None, bool]:
    try:
        return [arr.cast(target)], True
    except pa.ArrowInvalid:
        pass  # more digits after the point than the table keeps: the reader rounds, one way or another
    down = pc.round(arr, ndigits=target.scale, round_mode="down").cast(target)
    up = pc.round(arr, ndigits=target.scale, round_mode="up").cast(target)
    return [down, up], False


# ------------------------------------------------------------------------------------------------ the index
def membership_fields(spec: MembershipSpec, columns: Sequence[tuple[str, HiveType]]) -> list[pa.Field]:
    """The index columns for ``spec``: ``bloom_filters`` and ``value_lists`` structs, each only if non-empty."""
    types = dict(columns)
    fields = []
    blooms = [pa.field(c, pa.binary()) for c in spec.bloom_columns if c in types]
    if blooms:
        fields.append(pa.field(BLOOM_FILTERS, pa.struct(blooms)))
    lists = [pa.field(c, pa.list_(hive_to_arrow(types[c]))) for c in spec.value_list_columns if c in types]
    if lists:
        fields.append(pa.field(VALUE_LISTS, pa.struct(lists)))
    return fields


def membership_arrays(fields: Sequence[pa.Field], per_file: Sequence[Mapping[str, ColumnMembership]]) -> list[pa.Array]:
    """The arrays of :func:`membership_fields` for files in order."""
    arrays = []
    for f in fields:
        children = []
        for child in f.type:
            if f.name == BLOOM_FILTERS:
                data: list[Any] = [_get(m, child.name).bloom for m in per_file]
            else:
                data = [_get(m, child.name).values for m in per_file]
            children.append(pa.array(data, child.type))
        arrays.append(pa.StructArray.from_arrays(children, fields=list(f.type)) if per_file
                      else pa.array([], f.type))
    return arrays


_NONE = ColumnMembership()


def _get(membership: Mapping[str, ColumnMembership], column: str) -> ColumnMembership:
    return membership.get(column, _NONE)


def projection(schema: pa.Schema, wanted: Collection[str] | None) -> list[str] | None:
    """The columns to read from a snapshot for a query that needs the filters of ``wanted`` only (None: all)."""
    if wanted is None:
        return None
    names = {w.lower() for w in wanted}
    selected: list[str] = []
    for f in schema:
        if f.name not in MEMBERSHIP_COLUMNS:
            selected.append(f.name)
        elif pa.types.is_struct(f.type):
            selected.extend(f"{f.name}.{child.name}" for child in f.type if child.name in names)
    return selected


def project(table: pa.Table, wanted: Collection[str] | None) -> pa.Table:
    """``table`` with only the filters of ``wanted`` (in memory; also fixes the recorded spec to match)."""
    if wanted is None:
        return table
    meta = dict(table.schema.metadata or {})
    spec = MembershipSpec.from_json(meta.get(MEMBERSHIP_KEY)).restricted(wanted)
    for name in MEMBERSHIP_COLUMNS:
        if name not in table.column_names:
            continue
        keep = spec.bloom_columns if name == BLOOM_FILTERS else spec.value_list_columns
        column = table.column(name)
        fields = [f for f in column.type if f.name in keep]
        at = table.column_names.index(name)
        if not fields:
            table = table.remove_column(at)
            continue
        if len(fields) != column.type.num_fields:
            chunks = [pa.StructArray.from_arrays([c.field(f.name) for f in fields], fields=fields,
                                                 mask=c.is_null()) for c in column.chunks]
            table = table.set_column(at, pa.field(name, pa.struct(fields)), pa.chunked_array(chunks, pa.struct(fields)))
    if spec.is_empty:
        meta.pop(MEMBERSHIP_KEY, None)
    else:
        meta[MEMBERSHIP_KEY] = spec.to_json().encode()
    return table.replace_schema_metadata(meta)


def membership_sizes(table: pa.Table) -> list[dict[str, Any]]:
    """Per chosen column: how many files keep a filter or list, and its size in bytes in memory (``describe``)."""
    rows: list[dict[str, Any]] = []
    for struct, kind in ((BLOOM_FILTERS, "bloom filter"), (VALUE_LISTS, "value list")):
        if struct not in table.column_names:
            continue
        for child in table.schema.field(struct).type:
            values = pc.struct_field(table.column(struct), child.name)
            files = len(values) - values.null_count
            if kind == "bloom filter":
                size = int(pc.sum(pc.binary_length(values)).as_py() or 0)
            else:
                size = int(pc.list_flatten(values).nbytes) if files else 0
            rows.append({"column": child.name, "kind": kind, "files": files, "bytes": size,
                         "bytes_per_file": round(size / files, 1) if files else 0})
    return rows
