"""Which column chunks of a footer pyarrow cannot decode statistics of -- found without asking pyarrow.

Why: ``ColumnChunkMetaData.statistics`` decodes the chunk's min and max, and when one is too short for the
column's physical type (a 1-byte min of an INT32 column, in a damaged or hand-made footer) the C++ exception
escapes pyarrow's bindings and aborts the process: one bad file would kill a registration, a refresh or a Spark
task. The native reader (``native/footers.cc``) catches it; where that reader is not built, this module reads the
footer's Thrift (pyarrow's ``FileMetaData`` pickles as its Thrift bytes) and names the chunks whose statistics would
fail, so :class:`~storage_handler.stats.footers.raw.RawFooters` marks them unreadable without touching them.

Which min/max pyarrow decodes (Arrow 26, ``GetStatisticsMinMaxField``): with a column order of ``TYPE_ORDER`` and a
known sort order, ``min_value``/``max_value``; with no column orders at all and a signed sort order, the legacy
``min``/``max``; otherwise none. Both must be present to be decoded. A chunk whose metadata claims another physical
type than its column is reported too (decoding it would read the wrong type).

Half bounds: pyarrow before 18 reports a chunk whose statistics hold only a min (or only a max) as having both,
the missing one empty (``has_min_max`` true, ``max == b""``) -- and pyarrow 14-17 itself writes such chunks for
long strings. An empty max would prune every file whose real values are greater, so such chunks are reported
too (:func:`inspect`'s ``half_bounded``) and read as having no min/max, whichever pyarrow reads them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import pyarrow.parquet as pq

from storage_handler.stats.footers import thrift_compact as tc

_WIDTH = {"BOOLEAN": 1, "INT32": 4, "INT64": 8, "INT96": 12, "FLOAT": 4, "DOUBLE": 8, "BYTE_ARRAY": 0}
_PHYSICAL = ["BOOLEAN", "INT32", "INT64", "INT96", "FLOAT", "DOUBLE", "BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY"]
_UNSIGNED = {"STRING", "ENUM", "JSON", "BSON", "UUID"}
_SIGNED = {"DECIMAL", "DATE", "TIME", "TIMESTAMP", "FLOAT16"}


def sort_order(column: pq.ColumnSchema) -> str:
    """``signed``, ``unsigned`` or ``unknown``: Parquet C++'s ``GetSortOrder`` for the column's logical type."""
    logical = str(column.logical_type.type).upper()
    physical = str(column.physical_type)
    if logical == "NONE":
        if physical in ("BOOLEAN", "INT32", "INT64", "FLOAT", "DOUBLE"):
            return "signed"
        return "unsigned" if physical in ("BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY") else "unknown"
    if logical in _UNSIGNED:
        return "unsigned"
    if logical in _SIGNED:
        return "signed"
    if logical == "INT":
        return "signed" if json.loads(column.logical_type.to_json()).get("isSigned", True) else "unsigned"
    return "unknown"


@dataclass(frozen=True, slots=True)
class GuardReport:
    """``(row group, leaf)`` of the chunks to treat specially (see the module docstring)."""

    undecodable: frozenset[tuple[int, int]]  # reading their statistics would fail: unreadable
    half_bounded: frozenset[tuple[int, int]]  # only a min or only a max: no bounds


def undecodable(md: pq.FileMetaData) -> set[tuple[int, int]]:
    """``(row group, leaf)`` of every chunk whose statistics pyarrow would fail to decode."""
    return set(inspect(md).undecodable)


def inspect(md: pq.FileMetaData) -> GuardReport:
    """The chunks of ``md`` whose statistics pyarrow would fail to decode, or would decode with half bounds."""
    footer = tc.decode(tc.footer_bytes(md))
    schema = md.schema
    leaves = len(schema)
    orders = tc.get(footer, tc.FileMetaData.COLUMN_ORDERS, tc.LIST)
    bounds: list[tuple[int, int] | None] = []  # per leaf: the (min, max) fields pyarrow decodes, if any
    for leaf in range(leaves):
        order = sort_order(schema.column(leaf))
        if orders is not None:
            typed = leaf < len(orders) and tc.get(orders[leaf], tc.ColumnOrder.TYPE_ORDER) is not None
            bounds.append((tc.Statistics.MIN_VALUE, tc.Statistics.MAX_VALUE) if typed and order != "unknown"
                          else None)
        else:
            bounds.append((tc.Statistics.MIN, tc.Statistics.MAX) if order == "signed" else None)
    widths = [_WIDTH.get(str(schema.column(i).physical_type), schema.column(i).length) for i in range(leaves)]
    physical = [str(schema.column(i).physical_type) for i in range(leaves)]
    bad: set[tuple[int, int]] = set()
    half: set[tuple[int, int]] = set()
    for g, group in enumerate(tc.get(footer, tc.FileMetaData.ROW_GROUPS, tc.LIST) or []):
        for leaf, chunk in enumerate((tc.get(group, tc.RowGroup.COLUMNS, tc.LIST) or [])[:leaves]):
            meta = tc.get(chunk, tc.ColumnChunk.META_DATA, tc.STRUCT)
            if meta is None:
                continue
            kind = tc.get(meta, tc.ColumnMetaData.TYPE)
            if kind is not None and (not 0 <= kind < len(_PHYSICAL) or _PHYSICAL[kind] != physical[leaf]):
                bad.add((g, leaf))  # a chunk claiming another type than its column: decoding it is unsafe
                continue
            stats = tc.get(meta, tc.ColumnMetaData.STATISTICS, tc.STRUCT)
            pair = bounds[leaf]
            if stats is None or pair is None:
                continue
            lo, hi = (tc.get(stats, f) for f in pair)
            if (lo is None) != (hi is None):
                half.add((g, leaf))
            elif lo is not None and hi is not None and min(len(lo), len(hi)) < widths[leaf]:
                bad.add((g, leaf))
    return GuardReport(frozenset(bad), frozenset(half))
