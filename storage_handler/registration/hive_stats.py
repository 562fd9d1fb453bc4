"""The metastore's column statistics, made of what the index knows: Hive's Thrift objects and encodings.

Which types get statistics, and why (measured against Hive Metastore 2.3.10 from the pyspark wheel):

=====================  ==================  ==========================================================================
Hive type              Thrift union field  published
=====================  ==================  ==========================================================================
tinyint .. bigint      ``longStats``       low/high, numNulls, numDVs (the lower bound the footers prove, see below)
float, double          ``doubleStats``     only when the index bounds them from the data (``hsh.stats.
                                           scan_float_columns``: footers cannot exclude NaN) and finite
decimal(p,s)           ``decimalStats``    low/high as Java's ``BigInteger`` bytes of the unscaled value at scale s
date                   ``dateStats``       low/high as days since 1970-01-01
boolean                ``booleanStats``    only when numTrues/numFalses are exact: all values alike, or all null
string, varchar, char  --                  nothing: ``maxColLen``/``avgColLen`` are required, footers give neither,
binary                                     and 0 makes Hive size the column at 0 bytes (map joins the risky way)
timestamp              --                  nothing: Hive 2.3/3 keep it as ``longStats`` in seconds, Hive 4 as
                                           ``timestampStats``; either choice breaks the other's readers
complex types          --                  nothing (the index does not bound them)
=====================  ==================  ==========================================================================

``numNulls`` is required everywhere: a column whose null count is unknown in any file gets nothing. So does a
column with values whose bounds the index does not know (floats without a data scan, a file with dates before
1582 or values out of the column's range): the metastore counts every column written as accurate
(``COLUMN_STATS_ACCURATE``), and Hive 2 with ``hive.compute.query.using.stats`` answers ``min`` / ``max`` of an
accurate column without bounds as if it held no values (NULL for a table, the partition left out of a partitioned
one). ``numDVs`` is
required too and has no "unknown": Parquet footers hold no distinct counts, so we write the count the footers
*prove* -- 0 when there is no non-null value, 1 when the bounds are equal (or unknown), 2 when they differ. Never 0
next to bounds: the metastore's aggregation divides ``(high - low) / numDVs`` in SQL (a division by zero on Derby,
Postgres, Oracle, SQL Server). A lower bound errs on the safe side for every planner that reads it (fewer distinct
values means bigger join estimates, so fewer broadcasts); Trino normalizes it the same way, Spark ignores it.

Everything here is pure: summaries in, Thrift objects out; :func:`check_required` refuses an object the metastore
would reject while *reading* the request (which leaves the connection out of step).
"""

from __future__ import annotations

import decimal
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hmsclient.genthrift.hive_metastore import ttypes as hms

INTEGERS = frozenset({"tinyint", "smallint", "int", "bigint"})
FLOATS = frozenset({"float", "double"})
#: the Hive types that can get column statistics (whether a given partition's do depends on what the index knows)
PUBLISHED_TYPES = INTEGERS | FLOATS | {"decimal", "date", "boolean"}


@dataclass(frozen=True, slots=True)
class ColumnSummary:
    """What the index knows about one column over a partition's (or table's) files.

    ``min``/``max``: int (integers; dates as days since 1970-01-01), float, ``decimal.Decimal`` or bool; None when
    some file holding values lacks them. ``nulls``: the exact null count, None when some file's is unknown.
    """

    hive_type: str
    min: Any = None
    max: Any = None
    nulls: int | None = None


@dataclass(frozen=True, slots=True)
class Summary:
    """A partition's (or an unpartitioned table's) files as the index lists them: how many, their bytes, their rows
    (None: some file's count is unknown, e.g. an unreadable file) and the publishable columns."""

    files: int
    size: int
    rows: int | None
    columns: Mapping[str, ColumnSummary] = field(default_factory=dict)


def type_name(hive_type: str) -> str:
    return hive_type.strip().lower().split("(", 1)[0].strip()


def why_not(hive_type: str) -> str | None:
    """Why a column of this type never gets statistics (None: it can)."""
    kind = type_name(hive_type)
    if kind in PUBLISHED_TYPES:
        return None
    if kind in ("string", "varchar", "char", "binary"):
        return "lengths unknown (maxColLen/avgColLen are required; footers hold neither)"
    if kind == "timestamp":
        return "Hive 2.3 (longStats) and Hive 4 (timestampStats) disagree on timestamp statistics"
    return f"no metastore statistics for type {hive_type}"


def empty_summary(columns: Sequence[tuple[str, str]]) -> Summary:
    """A registered partition without files: nothing in it, which is exactly known."""
    return Summary(0, 0, 0, {n: ColumnSummary(t, None, None, 0) for n, t in columns if why_not(t) is None})


# ---------------------------------------------------------------------------------------------- encodings
def hive_decimal(value: decimal.Decimal, scale: int) -> hms.Decimal:
    """Hive's Thrift ``Decimal``: the unscaled value at ``scale`` as big-endian two's complement in the fewest bytes
    (Java's ``BigInteger.toByteArray()``, what the metastore hands back), and the scale. Integer arithmetic, so all
    38 digits are exact (``Decimal.scaleb`` would round to the context's 28)."""
    sign, digits, exponent = value.as_tuple()
    if not isinstance(exponent, int):
        raise ValueError(f"{value} is not a finite decimal")
    coefficient = int("".join(map(str, digits)) or "0")
    shift = exponent + scale
    if shift < 0:
        coefficient, rest = divmod(coefficient, 10 ** -shift)
        if rest:
            raise ValueError(f"{value} has more than {scale} fractional digits")
    else:
        coefficient *= 10**shift
    n = -coefficient if sign else coefficient
    length = (n.bit_length() if n >= 0 else (~n).bit_length()) // 8 + 1
    return hms.Decimal(unscaled=n.to_bytes(length, "big", signed=True), scale=scale)


def decimal_of(value: hms.Decimal) -> decimal.Decimal:
    """The inverse of :func:`hive_decimal` (exact: built from text, not by context arithmetic)."""
    return decimal.Decimal(f"{int.from_bytes(value.unscaled, 'big', signed=True)}E-{value.scale}")


def _decimal_scale(hive_type: str) -> int:
    if "(" not in hive_type:
        return 0  # Hive's bare ``decimal`` is decimal(10,0)
    inside = hive_type[hive_type.index("(") + 1:hive_type.rindex(")")].split(",")
    return int(inside[1]) if len(inside) > 1 else 0


def distinct_lower_bound(low: Any, high: Any, non_null: int | None) -> int:
    """``numDVs``: what the footers prove (see the module docstring); never 0 next to bounds."""
    if low is None or high is None:
        return 1 if non_null else 0
    return 1 if low == high else 2


def column_stats_obj(name: str, col: ColumnSummary, rows: int | None) -> hms.ColumnStatisticsObj | None:
    """The metastore's statistics for one column, or None when the index makes nothing publishable."""
    kind = type_name(col.hive_type)
    if col.nulls is None or col.nulls < 0 or (rows is not None and col.nulls > rows) or kind not in PUBLISHED_TYPES:
        return None
    non_null = None if rows is None else rows - col.nulls
    bounded = col.min is not None and col.max is not None and non_null != 0
    data: hms.ColumnStatisticsData
    if kind in INTEGERS:
        low, high = (int(col.min), int(col.max)) if bounded else (None, None)
        data = hms.ColumnStatisticsData(longStats=hms.LongColumnStatsData(
            lowValue=low, highValue=high, numNulls=col.nulls, numDVs=distinct_lower_bound(low, high, non_null)))
    elif kind in FLOATS:
        finite = bounded and all(math.isfinite(float(v)) for v in (col.min, col.max))
        low_f, high_f = (float(col.min) + 0.0, float(col.max) + 0.0) if finite else (None, None)  # -0.0 -> 0.0
        data = hms.ColumnStatisticsData(doubleStats=hms.DoubleColumnStatsData(
            lowValue=low_f, highValue=high_f, numNulls=col.nulls,
            numDVs=distinct_lower_bound(low_f, high_f, non_null)))
    elif kind == "decimal":
        scale = _decimal_scale(col.hive_type)
        low_d = high_d = None
        if bounded:
            try:
                low_d, high_d = hive_decimal(col.min, scale), hive_decimal(col.max, scale)
            except (ValueError, TypeError, AttributeError):  # not a decimal of the column's scale: no bounds
                low_d = high_d = None
        ndv = distinct_lower_bound(col.min, col.max, non_null) if low_d is not None else \
            distinct_lower_bound(None, None, non_null)
        data = hms.ColumnStatisticsData(decimalStats=hms.DecimalColumnStatsData(
            lowValue=low_d, highValue=high_d, numNulls=col.nulls, numDVs=ndv))
    elif kind == "date":
        low_i, high_i = (int(col.min), int(col.max)) if bounded else (None, None)
        data = hms.ColumnStatisticsData(dateStats=hms.DateColumnStatsData(
            lowValue=None if low_i is None else hms.Date(low_i), highValue=None if high_i is None else hms.Date(high_i),
            numNulls=col.nulls, numDVs=distinct_lower_bound(low_i, high_i, non_null)))
    else:  # boolean: exact counts only
        if non_null is None:
            return None
        if non_null == 0:
            trues = falses = 0
        elif bounded and bool(col.min) == bool(col.max):
            trues, falses = (non_null, 0) if bool(col.max) else (0, non_null)
        else:
            return None
        data = hms.ColumnStatisticsData(booleanStats=hms.BooleanColumnStatsData(
            numTrues=trues, numFalses=falses, numNulls=col.nulls))
    if kind != "boolean" and non_null != 0 and not _has_bounds(data):
        return None  # values whose range is unknown: an object without bounds would say "no values" (see above)
    return hms.ColumnStatisticsObj(colName=name.lower(), colType=col.hive_type.lower(), statsData=data)


def _has_bounds(data: hms.ColumnStatisticsData) -> bool:
    stats = data.longStats or data.doubleStats or data.decimalStats or data.dateStats
    return stats is not None and stats.lowValue is not None and stats.highValue is not None


def column_objects(summary: Summary) -> list[hms.ColumnStatisticsObj]:
    """Every publishable column's statistics of one partition or table, by column name."""
    found = (column_stats_obj(n, c, summary.rows) for n, c in sorted(summary.columns.items()))
    return [o for o in found if o is not None]


def merge(parts: Sequence[Summary], columns: Sequence[tuple[str, str]]) -> Summary:
    """The table-level summary of a partitioned table: sums, bounds of the bounds, unknown anywhere = unknown."""
    rows = [p.rows for p in parts]
    merged: dict[str, ColumnSummary] = {}
    for name, hive_type in columns:
        if why_not(hive_type) is not None:
            continue
        cols = [p.columns.get(name) for p in parts]
        if any(c is None for c in cols):
            continue
        known = [c for c in cols if c is not None]
        nulls = [c.nulls for c in known]
        # partitions with values: each must bound them, else the table's bounds are unknown
        valued = [c for c, p in zip(known, parts, strict=True) if p.rows is None or c.nulls is None or p.rows > c.nulls]
        bounded = bool(valued) and all(c.min is not None and c.max is not None for c in valued)
        merged[name] = ColumnSummary(
            hive_type,
            min(c.min for c in valued) if bounded else None,
            max(c.max for c in valued) if bounded else None,
            None if any(n is None for n in nulls) else sum(n for n in nulls if n is not None))
    return Summary(sum(p.files for p in parts), sum(p.size for p in parts),
                   None if any(r is None for r in rows) else sum(r for r in rows if r is not None), merged)


# ---------------------------------------------------------------------------------------------- reading them back
def union_value(data: hms.ColumnStatisticsData) -> Any:
    """The one field a ``ColumnStatisticsData`` union holds."""
    for entry in data.thrift_spec[1:]:
        if entry is not None and getattr(data, entry[2]) is not None:
            return getattr(data, entry[2])
    return None


def plain_values(obj: hms.ColumnStatisticsObj) -> dict[str, Any]:
    """A column's statistics as plain values (decimals as text, dates as ISO dates): what ``--dry-run`` lists."""
    import datetime as dt

    data = union_value(obj.statsData)
    out: dict[str, Any] = {"type": obj.colType}
    for entry in data.thrift_spec[1:] if data is not None else ():
        if entry is None or entry[2] == "bitVectors":
            continue
        value = getattr(data, entry[2])
        if isinstance(value, hms.Decimal):
            value = str(decimal_of(value))
        elif isinstance(value, hms.Date):
            value = str(dt.date(1970, 1, 1) + dt.timedelta(days=value.daysSinceEpoch))
        if value is not None:
            out[entry[2]] = value
    return out


def check_required(obj: Any) -> None:
    """Raise ValueError if a Thrift struct (recursively) lacks a required field or a union is not exactly one field:
    the metastore would reject it while reading the request and leave the rest of it unread on the connection."""
    spec = getattr(obj, "thrift_spec", None)
    if spec is None:
        return
    try:
        obj.validate()
    except Exception as e:  # thrift raises TProtocolException(message=...)
        raise ValueError(f"{type(obj).__name__}: {getattr(e, 'message', e)}") from e
    if isinstance(obj, hms.ColumnStatisticsData):
        chosen = [f[2] for f in spec[1:] if f is not None and getattr(obj, f[2]) is not None]
        if len(chosen) != 1:
            raise ValueError(f"ColumnStatisticsData must set exactly one field, not {chosen}")
    if isinstance(obj, hms.Decimal) and not obj.unscaled:
        raise ValueError("Decimal.unscaled needs at least one byte (the metastore fails on an empty one)")
    for entry in spec[1:]:
        if entry is None:
            continue
        value = getattr(obj, entry[2])
        for item in value if isinstance(value, list) else [value]:
            check_required(item)
