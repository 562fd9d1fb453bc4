"""A scalar oracle of footer statistics: one file, one column, one row group at a time, straight from pyarrow's
objects and :func:`convert_bound` -- the rules of :mod:`storage_handler.stats.footers.bounds` written the obvious way, so
property tests can compare the vectorized index build against it."""

from __future__ import annotations

from collections.abc import Sequence
from types import MappingProxyType
from typing import Any

import pyarrow.parquet as pq

from storage_handler.stats import ColumnStats, FileStats
from storage_handler.stats.footers.convert import convert_bound
from storage_handler.stats.footers.guard import GuardReport, inspect
from storage_handler.stats.footers.writers import DECIMAL_BYTES, orders_decimal_bytes
from storage_handler.stats.index.file_stats import UNKNOWN, column_plan
from storage_handler.types import HiveType


def oracle_stats(path: str, columns: Sequence[tuple[str, HiveType]]) -> FileStats:
    try:
        md = pq.read_metadata(path)
    except Exception as exc:  # noqa: BLE001
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        return FileStats.failed(f"{type(exc).__name__}: {text}"[:1000])
    result: dict[str, ColumnStats] = {}
    report = inspect(md)  # pyarrow aborts the process on undecodable chunks: they raise here instead
    plans = column_plan(md.schema, columns)
    leaves = sorted({p.leaf for p in plans if p.leaf is not None and p.source is not None})
    for g in range(md.num_row_groups):  # a chunk of a table column whose statistics do not decode: unreadable
        for leaf in leaves:
            if not _decodes(md, g, leaf, report):
                return FileStats.failed(f"the statistics of column {md.schema.column(leaf).path!r} in row group "
                                        f"{g} do not decode")
    rows = sum(md.row_group(g).num_rows for g in range(md.num_row_groups))  # Spark counts the row groups' rows
    for plan in plans:
        if plan.leaf is None or plan.source is None:
            result[plan.key] = ColumnStats(None, None, rows) if plan.absent else UNKNOWN
            continue
        try:
            result[plan.key] = _column(md, plan.leaf, plan.source, plan.hive_type, report)
        except Exception:  # noqa: BLE001 - statistics that do not decode: the column is unknown
            result[plan.key] = UNKNOWN
    return FileStats(rows, MappingProxyType(result))


def _decodes(md: pq.FileMetaData, g: int, leaf: int, report: GuardReport) -> bool:
    """Whether chunk (g, leaf)'s statistics can be used or ignored safely: the C++ reader's order of checks."""
    try:
        chunk = md.row_group(g).column(leaf)
        if chunk.physical_type != md.schema.column(leaf).physical_type:
            return False
        if not chunk.is_stats_set:
            return True  # untrusted statistics are never decoded
        if (g, leaf) in report.undecodable:
            return False
        chunk.statistics  # noqa: B018 - decoding is the check
    except Exception:  # noqa: BLE001
        return False
    return True


def _column(md: pq.FileMetaData, leaf: int, source: Any, hive_type: HiveType,
            report: GuardReport) -> ColumnStats:
    null_total: int | None = 0
    lo: Any = None
    hi: Any = None
    lo_known = hi_known = True
    for r in range(md.num_row_groups):
        rg = md.row_group(r)
        rows = rg.num_rows
        if rows == 0:
            continue
        chunk = rg.column(leaf)
        if (r, leaf) in report.undecodable:
            raise ValueError("statistics that do not decode")
        st = chunk.statistics if chunk.is_stats_set else None
        nulls = st.null_count if st is not None and st.has_null_count else None
        if nulls is not None and not 0 <= nulls <= rows:
            return UNKNOWN  # a footer contradicting itself
        if nulls is None:
            null_total = None
        elif null_total is not None:
            null_total += nulls
        if nulls is not None and nulls == rows:
            continue  # only nulls: no values to bound
        if st is None or not st.has_min_max or (r, leaf) in report.half_bounded or source.kind == "float":
            lo_known = hi_known = False
            continue
        if source.kind == "decimal" and source.physical in DECIMAL_BYTES and not orders_decimal_bytes(
                md.created_by or ""):
            lo_known = hi_known = False  # a writer that ordered decimals stored as bytes wrongly
            continue
        rg_lo = _convert(st.min_raw, source, hive_type, upper=False)
        rg_hi = _convert(st.max_raw, source, hive_type, upper=True)
        if (hive_type.is_integer or hive_type.name == "decimal") and (rg_lo is None or rg_hi is None):
            rg_lo = rg_hi = None  # one bound out of the column's range: the reader wraps, neither bound counts
        if rg_lo is None:
            lo_known = False
        elif lo_known and (lo is None or rg_lo < lo):
            lo = rg_lo
        if rg_hi is None:
            hi_known = False
        elif hi_known and (hi is None or rg_hi > hi):
            hi = rg_hi
    return ColumnStats(lo if lo_known else None, hi if hi_known else None, null_total)


def _convert(raw: Any, source: Any, hive_type: HiveType, upper: bool) -> Any:
    try:
        return convert_bound(raw, source, hive_type, upper)
    except Exception:  # noqa: BLE001 - as the vectorized path: a value the rule cannot read is unknown
        return None
