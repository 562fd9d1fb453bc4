"""Bloom filters a Parquet writer already put in a file (Spark's ``parquet.bloom.filter.enabled#col``, Arrow's
``bloom_filter_options``): read them, and turn a file's row-group filters into the index's filter for that file.

Why by hand: no maintained Python library reads them. pyarrow 26 writes them and exposes where they are
(``ColumnChunkMetaData.bloom_filter_offset`` / ``bloom_filter_length``) but has no reader; the Arrow C++
``BloomFilterReader`` is not bound. What is left is small: a Thrift compact-protocol ``BloomFilterHeader`` (read
with the project's one Parquet Thrift codec, :mod:`storage_handler.stats.footers.thrift_compact`) followed by the
bitset, which ``bloom.py`` probes as is.

A footer's filters are used only when they describe exactly the values the table reads:

* every row group that holds a non-null value of the column has a filter (else we must read the values);
* each header says SPLIT_BLOCK / XXHASH / UNCOMPRESSED (the only ones the format defines), with a power-of-two size;
* the column's physical encoding is the one ``bloom.canonical_hashes`` uses for the table's type (INT32 for
  int/date, INT64 for bigint and microsecond timestamps, decimals at the table's scale in Spark's width, UTF-8
  strings; never ``varchar(n)``, whose reader cuts values the writer hashed whole; never unsigned integers).

The row groups' filters are folded to one size and OR-ed (``bloom.union``): the size the table's false-positive
rate asks for, given at most as many distinct values as the row groups hold non-null values. If the result's
estimated false-positive rate is above twice the table's (a writer sized its filters too small), the values are
read instead.
"""

from __future__ import annotations

import struct
from typing import Any

from storage_handler.stats.footers import thrift_compact as tc
from storage_handler.stats.footers.convert import FIRST_TRUSTED_DAY, FIRST_TRUSTED_US, Source
from storage_handler.stats.membership.bloom import (
    INT32_TYPES,
    MIN_BYTES,
    decimal_bytes,
    estimated_fpp,
    optimal_num_bytes,
    union,
)
from storage_handler.types import HiveType

_HEADER_PEEK = 64  # a BloomFilterHeader is about 15 bytes
_MAX_FILTER_BYTES = 128 << 20  # parquet-mr's upper bound


def encoding_matches(source: Source, type_length: int | None, hive_type: HiveType) -> bool:
    """Does the file column's plain encoding equal the canonical one of the table's type?"""
    name = hive_type.name
    if name in INT32_TYPES:
        if name == "date":
            return source.kind == "date"
        return source.kind == "int" and source.physical == "INT32" and source.signed
    if name == "bigint":
        return source.kind == "int" and source.physical == "INT64" and source.signed
    if name == "timestamp":
        return source.kind == "timestamp" and source.unit == "MICROS"
    if name == "string":
        return source.kind == "string"
    if name == "decimal":
        precision, scale = hive_type.precision or 10, hive_type.scale or 0
        if source.kind != "decimal" or source.scale != scale:
            return False
        if precision <= 9:
            return source.physical == "INT32"
        if precision <= 18:
            return source.physical == "INT64"
        return source.physical == "FIXED_LEN_BYTE_ARRAY" and type_length == decimal_bytes(precision)
    return False


def parse_header(buffer: bytes) -> tuple[int, int] | None:
    """``(header length, bitset bytes)`` of a SPLIT_BLOCK / XXHASH / UNCOMPRESSED header, else None."""
    try:
        header, consumed = tc.decode_prefix(buffer)
    except (IndexError, ValueError, struct.error):  # a truncated or malformed header: "no usable filter"
        return None
    num_bytes = tc.get(header, tc.BloomFilterHeader.NUM_BYTES, tc.I32)
    unions = (tc.BloomFilterHeader.ALGORITHM, tc.BloomFilterHeader.HASH, tc.BloomFilterHeader.COMPRESSION)
    if num_bytes is None or not all(_is_first_member(tc.get(header, f, tc.STRUCT)) for f in unions):
        return None
    if num_bytes < MIN_BYTES or num_bytes > _MAX_FILTER_BYTES or num_bytes & (num_bytes - 1):
        return None
    return consumed, num_bytes


def _is_first_member(union: tc.Struct | None) -> bool:
    """A Thrift union whose set member is field 1 (BLOCK, XXHASH, UNCOMPRESSED: the only ones defined)."""
    return union is not None and len(union) == 1 and union[0][0] == 1


def read_filter(handle: Any, offset: int, length: int | None) -> bytes | None:
    """The bitset of the filter at ``offset`` of an open binary file, or None if it is not one we can use."""
    if offset is None or offset <= 0:
        return None
    handle.seek(offset)
    head = handle.read(length if length and length > 0 else _HEADER_PEEK)
    parsed = parse_header(head)
    if parsed is None:
        return None
    header_len, num_bytes = parsed
    if length and length > 0 and header_len + num_bytes != length:
        return None
    body = head[header_len:header_len + num_bytes]
    if len(body) < num_bytes:
        handle.seek(offset + header_len + len(body))
        body += handle.read(num_bytes - len(body))
    return body if len(body) == num_bytes else None


def _readable_range(hive_type: HiveType) -> tuple[int | None, int | None]:
    """The stored values (INT32 / INT64) Spark reads as themselves for ``hive_type``; a writer's filter hashed the
    stored values, so a row group with any other may not be described by it. Dates before 1582-10-15 and
    timestamps before 1900 may be rebased (``convert.FIRST_TRUSTED_DAY``); an INT32 outside ``tinyint`` or
    ``smallint`` wraps (Spark reads 300 as the tinyint 44)."""
    if hive_type.name == "date":
        return FIRST_TRUSTED_DAY, None
    if hive_type.name == "timestamp":
        return FIRST_TRUSTED_US, None
    if hive_type.name in ("tinyint", "smallint"):
        return hive_type.integer_range
    return None, None


def footer_filter(handle: Any, metadata: Any, leaf: int, source: Source, hive_type: HiveType,
                  fpp: float) -> bytes | None:
    """The index's filter for one column of one file, from the file's own row-group filters; None when they
    cannot stand for the column (see the module docstring) and the values must be read instead.

    ``handle`` is the open file ``metadata`` was read from: the filters are read from that same version of the
    object, through the table's own storage settings (opening the path again went to the environment's S3
    endpoint, not the table's, and without the listed ETag: another store's bytes ruled out the file)."""
    column = metadata.schema.column(leaf)
    if not encoding_matches(source, getattr(column, "length", None), hive_type):
        return None
    lo, hi = _readable_range(hive_type)
    places: list[tuple[int, int | None]] = []
    values_bound = 0
    for r in range(metadata.num_row_groups):
        chunk = metadata.row_group(r).column(leaf)
        rows = metadata.row_group(r).num_rows
        stats = chunk.statistics if chunk.is_stats_set else None
        nulls = stats.null_count if stats is not None and stats.has_null_count else None
        non_null = rows - nulls if nulls is not None else rows
        if rows == 0 or non_null <= 0:
            continue
        if (lo is not None or hi is not None) and (
                stats is None or not stats.has_min_max or (lo is not None and stats.min_raw < lo)
                or (hi is not None and stats.max_raw > hi)):
            return None  # values Spark reads as others (see _readable_range), or none known: read them
        offset = getattr(chunk, "bloom_filter_offset", None)
        if offset is None:
            return None
        places.append((offset, getattr(chunk, "bloom_filter_length", None)))
        values_bound += non_null
    if not places:
        return None
    bitsets: list[bytes] = []
    for offset, length in places:
        bitset = read_filter(handle, offset, length)
        if bitset is None:
            return None
        bitsets.append(bitset)
    size = min([optimal_num_bytes(values_bound, fpp), *(len(b) for b in bitsets)])
    merged = union(bitsets, size)
    # a writer's filters sized for fewer values than it put in (or folded to one) rule out little: build our own
    return merged if estimated_fpp(merged) <= 2 * fpp else None
