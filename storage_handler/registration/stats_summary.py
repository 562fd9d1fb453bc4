"""What the index says about each partition: files, bytes, rows, and per column the bounds and null counts that the
metastore's statistics are made of.

One Arrow group-by over the whole index (no Python object per file), keyed by the folder each file sits in, so a
partition's statistics are exactly the files under its own registered location -- Hive's model, the one
``list_status`` reads by: the table folder's ``k=v`` folders by relative path, a partition registered elsewhere by
its absolute location, and a folder nobody registered is nobody's.

The rules are the index's, unchanged: a bound the index does not hold (truncated, untrustworthy, a footer that
lacks it) is unknown, and one file with values but no bound makes the partition's bound unknown; a null count or a
row count unknown in one file is unknown for the partition. Float bounds count only when the index read them from
the data (``hsh.stats.scan_float_columns``).
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc

from storage_handler.catalog import Partition
from storage_handler.catalog.listing import index_prefixes
from storage_handler.registration.hive_stats import FLOATS, ColumnSummary, Summary, type_name, why_not
from storage_handler.stats.columns import MAX_VALUES, MIN_VALUES, NULL_COUNT, NUM_RECORDS, PATH, SIZE

_FOLDER = "folder"
_SUM0 = pc.ScalarAggregateOptions(min_count=0)


def folder_key(table_location: str, location: str) -> str:
    """The key :func:`summarize` files a partition's files under: ``""`` for the table folder itself, the relative
    folder (``dt=2024-01-01``) inside it, the absolute folder for a partition registered elsewhere."""
    prefixes = index_prefixes(table_location, [Partition("", (), location)])
    return "" if prefixes is None else prefixes[0].rstrip("/")


def summarize(index: pa.Table, columns: Sequence[tuple[str, str]], *, float_bounds: bool) -> dict[str, Summary]:
    """Per folder (see :func:`folder_key`), the summary of the index rows of the files directly in it.

    ``columns`` are the table's (name, Hive type); only those that can get statistics and that the index has are
    summarized. ``float_bounds``: whether the index's float/double bounds come from the data (else they are left out).
    """
    if index.num_rows == 0:
        return {}
    paths = index.column(PATH)
    folders = pc.if_else(pc.match_substring(paths, "/"), pc.replace_substring_regex(paths, r"/[^/]*$", ""), "")
    rows = index.column(NUM_RECORDS)
    arrays: dict[str, pa.ChunkedArray | pa.Array] = {_FOLDER: folders, SIZE: index.column(SIZE), "rows": rows,
                                                     "rows_unknown": pc.cast(pc.is_null(rows), pa.int64())}
    aggregates: list[tuple[str, str] | tuple[str, str, pc.FunctionOptions]] = [
        (SIZE, "count"), (SIZE, "sum"), ("rows", "sum", _SUM0), ("rows_unknown", "sum")]
    indexed = _indexed(index)
    summarized: list[tuple[int, str, str]] = []
    for i, (name, hive_type) in enumerate(columns):
        key = name.lower()
        if why_not(hive_type) is not None or key not in indexed:
            continue
        summarized.append((i, key, hive_type))
        low = pc.struct_field(index.column(MIN_VALUES), key)
        high = pc.struct_field(index.column(MAX_VALUES), key)
        nulls = pc.struct_field(index.column(NULL_COUNT), key)
        if type_name(hive_type) == "date":  # days: no Python date (its years stop at 9999)
            low, high = pc.cast(low, pa.int32()), pc.cast(high, pa.int32())
        if type_name(hive_type) in FLOATS and not float_bounds:
            low = high = pa.nulls(index.num_rows, low.type)
        # a file with (possibly) values but without a bound makes the folder's bound unknown
        has_values = pc.fill_null(pc.or_kleene(pc.is_null(rows), pc.less(nulls, rows)), True)
        lacks = pc.and_(has_values, pc.or_(pc.is_null(low), pc.is_null(high)))
        arrays.update({f"{i}_low": low, f"{i}_high": high, f"{i}_nulls": nulls,
                       f"{i}_nulls_unknown": pc.cast(pc.is_null(nulls), pa.int64()),
                       f"{i}_lacks": pc.cast(lacks, pa.int64())})
        aggregates += [(f"{i}_low", "min"), (f"{i}_high", "max"), (f"{i}_nulls", "sum", _SUM0),
                       (f"{i}_nulls_unknown", "sum"), (f"{i}_lacks", "sum")]
    flat = pa.table({k: v for k, v in arrays.items()})
    grouped = flat.group_by(_FOLDER).aggregate(aggregates).to_pydict()
    result: dict[str, Summary] = {}
    for g, folder in enumerate(grouped[_FOLDER]):
        cols: dict[str, ColumnSummary] = {}
        for i, key, hive_type in summarized:
            bounded = grouped[f"{i}_lacks_sum"][g] == 0
            cols[key] = ColumnSummary(
                hive_type,
                grouped[f"{i}_low_min"][g] if bounded else None,
                grouped[f"{i}_high_max"][g] if bounded else None,
                grouped[f"{i}_nulls_sum"][g] if grouped[f"{i}_nulls_unknown_sum"][g] == 0 else None)
        result[folder] = Summary(
            files=grouped[f"{SIZE}_count"][g], size=grouped[f"{SIZE}_sum"][g],
            rows=grouped["rows_sum"][g] if grouped["rows_unknown_sum"][g] == 0 else None, columns=cols)
    return result


def _indexed(index: pa.Table) -> set[str]:
    """The columns the index keeps bounds and null counts for."""
    names: set[str] = set()
    for struct in (MIN_VALUES, MAX_VALUES, NULL_COUNT):
        if struct not in index.column_names:
            return set()
        kind = index.schema.field(struct).type
        found = {kind.field(j).name for j in range(kind.num_fields)}
        names = found if struct == MIN_VALUES else names & found
    return names
