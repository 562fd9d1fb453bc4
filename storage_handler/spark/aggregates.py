"""What the index can answer of ``count(*)``, ``count(col)``, ``min(col)`` and ``max(col)`` for one scan.

The session extension asks with a scan request that carries ``aggregate: {"columns": [...], "bounds": [...]}``
(the data columns whose null counts, and whose min / max, its aggregates need). The answer's ``matched`` part
lists the kept files whose every row certainly matches the query's filter (``list_status``'s strict
evaluation) *and* whose index rows hold what the aggregates need -- folded per partition, so the extension gets
one row per partition to put under Spark's final aggregation; every other kept file is read by Spark as before.

What a file needs to be answered from the index, per column:

* ``count(*)``: the row count (``num_records``) -- not null, and the file's footer read without error;
* ``count(col)``: the column's null count;
* ``min(col)`` / ``max(col)``: the null count, and bounds that are the *exact* minimum and maximum, which the
  index only guarantees for the types in :data:`EXACT_BOUND_TYPES` (integers, decimals, dates, booleans: a
  Parquet writer stores these values whole). Strings may be truncated by writers, floats may hide NaN, and
  timestamps may have been rounded to microseconds, so ``min``/``max`` of those columns are always read. A file
  whose column is all null answers ``NULL`` (no value), which ``min``/``max`` ignore.

A file changed since it was indexed has no statistics here (``attach_stats`` trusts an index row only while the
file's size, modification time and version tag match the listing), so it is read: answers are never stale.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from storage_handler.arrow_compat import true_positions
from storage_handler.catalog import ScanFiles
from storage_handler.stats.columns import MAX_VALUES, MIN_VALUES, NULL_COUNT, NUM_RECORDS, STATS_ERROR
from storage_handler.types import HiveType

#: Hive types whose index min/max are the exact minimum and maximum of the file's values
EXACT_BOUND_TYPES = frozenset({"tinyint", "smallint", "int", "bigint", "decimal", "date", "boolean"})


def exact_bounds(hive_type: HiveType) -> bool:
    return hive_type.name in EXACT_BOUND_TYPES


def matched(kept: ScanFiles, rows: pa.Table, certain: pa.BooleanArray | None, columns: Mapping[str, HiveType],
            counted: Sequence[str], bounded: Sequence[str]) -> dict[str, Any]:
    """The ``matched`` part of an answer (see the module docstring), JSON-ready.

    ``rows``: the kept files' listing joined with their index rows (aligned with ``kept``); ``columns``: the
    table's data columns by lower-case name; ``counted``/``bounded``: the columns whose null counts / min and max
    the aggregates need. Keys: ``positions`` (the kept files answered, by position in the answer's file list),
    ``partitions`` (one ``{key: value}`` per answered partition), ``rows`` (their row counts), and per column
    ``nulls`` / ``min`` / ``max`` lists aligned with ``partitions``; ``exact`` says which bounded columns could be
    answered at all (a column whose type has no exact bounds makes every file be read); ``file_rows``: every kept
    file's row count as the index trusts it (:func:`file_rows`), which bounds the rows left to read.
    """
    exact = {c: exact_bounds(columns[c.lower()]) for c in bounded if c.lower() in columns}
    counts = file_rows(rows)  # every kept file's, whether or not any is answered
    empty: dict[str, Any] = {"positions": [], "partitions": [], "rows": [], "columns": {}, "exact": exact,
                             "file_rows": counts}
    if certain is None or NUM_RECORDS not in rows.column_names or not all(exact.get(c, False) for c in bounded):
        return empty
    mask = pc.and_(certain, pc.is_valid(rows.column(NUM_RECORDS)))
    if STATS_ERROR in rows.column_names:
        mask = pc.and_(mask, pc.is_null(rows.column(STATS_ERROR)))
    needed = {c.lower() for c in [*counted, *bounded]}
    stats: dict[str, dict[str, pa.Array]] = {}
    for name in sorted(needed):
        nulls = _field(rows, NULL_COUNT, name)
        if nulls is None:
            return empty
        mask = pc.and_(mask, pc.is_valid(nulls))
        stats[name] = {"nulls": nulls}
        if name in {c.lower() for c in bounded}:
            low, high = _field(rows, MIN_VALUES, name), _field(rows, MAX_VALUES, name)
            if low is None or high is None:
                return empty
            some = pc.less(nulls, rows.column(NUM_RECORDS))  # a file with values must have both bounds
            mask = pc.and_(mask, pc.invert(pc.and_(some, pc.or_(pc.is_null(low), pc.is_null(high)))))
            stats[name].update(min=low, max=high)
    mask = pc.fill_null(mask, False)
    positions = true_positions(mask)  # nothing kept gives a chunked mask with no chunks
    if len(positions) == 0:
        return empty
    table = pa.table({"part": pc.take(kept.partition_of, positions),
                      "rows": pc.take(rows.column(NUM_RECORDS), positions),
                      **{f"{c}.{k}": pc.take(v, positions) for c, s in stats.items() for k, v in s.items()}})
    aggregations = [("rows", "sum"), *((f"{c}.nulls", "sum") for c in stats),
                    *((f"{c}.min", "min") for c in stats if "min" in stats[c]),
                    *((f"{c}.max", "max") for c in stats if "max" in stats[c])]
    folded = table.group_by("part").aggregate(aggregations)
    return {
        "positions": positions.to_pylist(),
        "partitions": [dict(kept.partitions[p]) for p in folded.column("part").to_pylist()],
        "rows": folded.column("rows_sum").to_pylist(),
        "columns": {c: {k: _json(folded.column(f"{c}.{k}_{'sum' if k == 'nulls' else k}")) for k in s}
                    for c, s in stats.items()},
        "exact": exact,
        "file_rows": counts,
    }


def file_rows(rows: pa.Table) -> list[int | None]:
    """Each kept file's row count from the index, aligned with the answer's files; ``None`` where the index holds
    none it trusts (a file unindexed, changed since indexing, or whose footer failed to read).

    Why: the extension reads the files left to read in the driver only while their rows are few
    (``spark.hsh.aggregates.driverReadRows``); bytes alone do not bound rows (a few hundred KiB of repetitive
    values can hold millions), and a file whose count is unknown is left to a Spark job.
    """
    if NUM_RECORDS not in rows.column_names:
        return [None] * rows.num_rows
    counts = rows.column(NUM_RECORDS)
    if STATS_ERROR in rows.column_names:
        counts = pc.if_else(pc.is_null(rows.column(STATS_ERROR)), counts, pa.scalar(None, counts.type))
    return counts.to_pylist()  # type: ignore[no-any-return]


def _field(rows: pa.Table, struct: str, name: str) -> pa.Array | None:
    if struct not in rows.column_names:
        return None
    column = rows.column(struct).combine_chunks()
    if column.type.get_field_index(name) < 0:
        return None
    return pc.struct_field(column, name)


def _json(values: pa.Array | pa.ChunkedArray) -> list[Any]:
    """Values as the JSON the extension decodes by the column's Spark type (folded first, in their own type):
    dates as days since the epoch, decimals as plain text, integers and booleans as themselves."""
    if pa.types.is_date32(values.type):
        return pc.cast(values, pa.int32()).to_pylist()
    if pa.types.is_decimal(values.type):
        return pc.cast(values, pa.string()).to_pylist()
    return values.to_pylist()
