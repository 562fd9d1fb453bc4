"""A changed bloom-filter / value-list choice, applied to the index rows a refresh keeps.

Why separate from ``refresh.py``: choosing filters for one more column must not cost re-reading every footer
(the footers did not change). For the rows of unchanged files a refresh reuses, this module:

* keeps each filter whose choice did not change (same column, same false-positive rate / value-list cap);
* reads the values of only the newly chosen columns (or of every chosen column whose rate or cap changed), one
  file at a time in a thread pool, without touching the files' other statistics;
* drops filters of columns no longer chosen.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from storage_handler.arrow_compat import one_array
from storage_handler.stats.files.walk import DataFile, absolute_path
from storage_handler.stats.membership.columns import (
    MEMBERSHIP_COLUMNS,
    ColumnMembership,
    membership_arrays,
    membership_fields,
    read_membership,
)
from storage_handler.stats.membership.spec import MembershipSpec
from storage_handler.storage import FileEntry, storage_for
from storage_handler.types import HiveType


def to_read(previous: MembershipSpec, wanted: MembershipSpec) -> MembershipSpec:
    """The part of ``wanted`` that the rows built under ``previous`` lack."""
    same_rate = previous.fpp == wanted.fpp
    same_cap = previous.value_list_max == wanted.value_list_max
    return MembershipSpec(
        tuple(c for c in wanted.bloom_columns if not (same_rate and c in previous.bloom_columns)), wanted.fpp,
        tuple(c for c in wanted.value_list_columns if not (same_cap and c in previous.value_list_columns)),
        wanted.value_list_max,
    )


def read_files(table_location: str, columns: Sequence[tuple[str, HiveType]], files: Sequence[DataFile],
               spec: MembershipSpec, max_workers: int | None = None,
               conf: Mapping[str, str] | None = None) -> list[Mapping[str, ColumnMembership]]:
    """The filters of ``spec`` for each file, reading only those columns (a file that cannot be read gets none)."""
    if spec.is_empty or not files:
        return [{} for _ in files]

    def one(f: DataFile) -> Mapping[str, ColumnMembership]:
        path = absolute_path(table_location, f.path)
        try:
            entry = FileEntry(path, f.size, f.mtime_ms, f.version)
            with storage_for(path, conf).open_input(path, entry) as source, pq.ParquetFile(source) as pf:
                return read_membership(pf, source, path, columns, spec)
        except Exception:  # noqa: BLE001 - no filter means the file is kept: never wrong
            return {}

    workers = max_workers or min(32, 4 * (os.cpu_count() or 2), len(files))
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="hsh-membership") as pool:
        return list(pool.map(one, files))


def carry(reused: pa.Table, previous: MembershipSpec, wanted: MembershipSpec, table_location: str,
          columns: Sequence[tuple[str, HiveType]], files: Sequence[DataFile],
          max_workers: int | None = None, conf: Mapping[str, str] | None = None) -> tuple[pa.Table, tuple[str, ...]]:
    """``reused`` (rows of unchanged ``files``, in that order) with the membership columns ``wanted`` asks for;
    also the columns whose filters had to be read."""
    if previous == wanted:
        return reused, ()
    missing = to_read(previous, wanted)
    read = read_files(table_location, columns, files, missing, max_workers, conf)
    fresh = dict(zip((f.name for f in membership_fields(missing, columns)),
                     membership_arrays(membership_fields(missing, columns), read), strict=True))
    table = reused.drop_columns([c for c in MEMBERSHIP_COLUMNS if c in reused.column_names])
    for f in membership_fields(wanted, columns):
        children = []
        for child in f.type:
            if f.name in fresh and fresh[f.name].type.get_field_index(child.name) >= 0:
                children.append(fresh[f.name].field(child.name))
            else:
                children.append(_old_field(reused, f.name, child.name))
        table = table.append_column(f, pa.StructArray.from_arrays(children, fields=list(f.type)))
    return table, missing.columns


def _old_field(reused: pa.Table, struct: str, field: str) -> pa.Array:
    """One kept filter column (a null struct entry - no filter for any column of that file - stays null)."""
    values = pc.struct_field(reused.column(struct), field)
    return one_array(values)
