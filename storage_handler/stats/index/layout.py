"""The column-statistics index: its Arrow schema, building it from footers, and checking its paths.

Why one Arrow table: the pruning evaluator compares a predicate with every file's bounds in a few vectorized
``pyarrow.compute`` calls, so the index is columnar (the shape of Delta's ``add`` actions), one row per data file:

``path`` (relative POSIX path, or the absolute location of a file of a partition registered outside the table
folder), ``size``, ``modification_time`` (ms), ``version_tag`` (the storage's version tag: inode ctime locally, ETag
on S3; null = unknown: such a row is never trusted, see :mod:`storage_handler.storage.base`), ``num_records`` (null
= unknown),
``partition_values`` map<string,string> (null value = NULL partition), ``min_values`` / ``max_values`` (struct, one
field per stats-capable column typed as ``hive_to_arrow(type)``, null = unknown), ``null_count`` (struct of int64),
``stats_error`` (why a footer could not be read); when the table chooses bloom filters or value lists,
``bloom_filters`` / ``value_lists`` follow (see ``membership.py``; an index without them has no filters).

The table's columns (name + Hive type, so ``varchar(10)`` survives) ride in the schema metadata under
``hsh.index.columns``; ``store.py`` writes them into every snapshot.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from storage_handler.errors import SchemaError, StatsIndexError
from storage_handler.stats.columns import (
    BLOOM_FILTERS,
    MAX_VALUES,
    MIN_VALUES,
    MODIFICATION_TIME,
    NULL_COUNT,
    NUM_RECORDS,
    PARTITION_VALUES,
    PATH,
    SIZE,
    STATS_ERROR,
    VALUE_LISTS,
    VERSION_TAG,
)
from storage_handler.stats.files.file_list import DataFile, FileList
from storage_handler.stats.index.file_stats import BOUND_RULES, FileStats, StatsOptions
from storage_handler.stats.index.racy import trusted_versions
from storage_handler.stats.membership.columns import MEMBERSHIP_KEY, membership_arrays, membership_fields
from storage_handler.stats.membership.spec import MembershipSpec
from storage_handler.types import HiveType, arrow_to_hive, hive_to_arrow, parse_hive_type

BOUNDED_TYPES = frozenset(
    {"tinyint", "smallint", "int", "bigint", "float", "double", "decimal", "string", "varchar", "char", "boolean",
     "date", "timestamp"}
)
COLUMNS_KEY = b"hsh.index.columns"
FORMAT_KEY = b"hsh.index.format"
FORMAT_VERSION = b"1"
OPTIONS_KEY = b"hsh.index.options"  # the StatsOptions the footers were read with (JSON)
PARTITION_TYPE = pa.map_(pa.string(), pa.string())
# relative paths inside the table, or the absolute path or URI of a file in a partition registered outside it
_URI_PREFIX = r"^[a-z][a-z0-9+.-]*://[^/]+/"
_UNSAFE_PATH = r"^$|/$|//|(^|/)\.\.?(/|$)|\\|\x00"


def indexed_columns(columns: Iterable[tuple[str, HiveType]]) -> tuple[tuple[str, HiveType], ...]:
    """The stats-capable columns (lower-case names): binary and complex types are not bounded, hence absent."""
    seen: set[str] = set()
    result: list[tuple[str, HiveType]] = []
    for name, hive_type in columns:
        key = name.lower()
        if key in seen:
            raise SchemaError(f"column {key!r} appears twice (names are compared case-insensitively, as in Hive)")
        seen.add(key)
        if hive_type.name in BOUNDED_TYPES:
            result.append((key, hive_type))
    return tuple(result)


def index_schema(columns: Iterable[tuple[str, HiveType]], options: StatsOptions | None = None) -> pa.Schema:
    """The index's Arrow schema for a table with these data columns (partition columns excluded)."""
    cols = indexed_columns(columns)
    bounds = pa.struct([pa.field(n, hive_to_arrow(t)) for n, t in cols])
    counts = pa.struct([pa.field(n, pa.int64()) for n, _ in cols])
    options = options or StatsOptions()
    meta = {COLUMNS_KEY: json.dumps([[n, str(t)] for n, t in cols]).encode(), FORMAT_KEY: FORMAT_VERSION,
            OPTIONS_KEY: options.to_json().encode()}
    extra = membership_fields(options.membership, cols)
    if extra:  # bloom filters / value lists (absent from older indexes: no filters)
        meta[MEMBERSHIP_KEY] = options.membership.to_json().encode()
    return pa.schema(
        [
            pa.field(PATH, pa.string()),
            pa.field(SIZE, pa.int64()),
            pa.field(MODIFICATION_TIME, pa.int64()),
            pa.field(VERSION_TAG, pa.string()),
            pa.field(NUM_RECORDS, pa.int64()),
            pa.field(PARTITION_VALUES, PARTITION_TYPE),
            pa.field(MIN_VALUES, bounds),
            pa.field(MAX_VALUES, bounds),
            pa.field(NULL_COUNT, counts),
            pa.field(STATS_ERROR, pa.string()),
            *extra,
        ],
        metadata=meta,
    )


def columns_of(schema: pa.Schema) -> tuple[tuple[str, HiveType], ...]:
    """The indexed columns an index table was built for (from its metadata, else from its struct types)."""
    raw = (schema.metadata or {}).get(COLUMNS_KEY)
    if raw is not None:
        return _declared_columns(raw)
    bounds = schema.field(MIN_VALUES).type
    return tuple((bounds.field(i).name, arrow_to_hive(bounds.field(i).type)) for i in range(bounds.num_fields))


@functools.lru_cache(maxsize=256)
def _declared_columns(raw: bytes) -> tuple[tuple[str, HiveType], ...]:
    """The columns recorded in an index's metadata (parsed once per text: every query of a table reads them)."""
    try:
        return tuple((str(n), parse_hive_type(str(t))) for n, t in json.loads(raw))
    except (ValueError, TypeError, SchemaError) as exc:
        raise StatsIndexError(f"index metadata {COLUMNS_KEY.decode()} is corrupt ({exc})") from exc


def options_of(schema: pa.Schema) -> StatsOptions:
    """The statistics options an index table was built with."""
    meta = schema.metadata or {}
    options = StatsOptions.from_json(meta.get(OPTIONS_KEY))
    membership = MembershipSpec.from_json(meta.get(MEMBERSHIP_KEY))
    return options if membership.is_empty else replace(options, membership=membership)


def outdated(schema: pa.Schema) -> bool:
    """Whether an index table's rows were made under footer rules older than this build's
    (:attr:`StatsOptions.rules`): those rules trusted bounds these do not, so none of its rows may prune until a
    refresh reads its files again. An index written by a newer build is not outdated: rules only get stricter."""
    return options_of(schema).rules < BOUND_RULES


def retyped(index_columns: Iterable[tuple[str, HiveType]], table_columns: Iterable[tuple[str, HiveType]]) -> list[str]:
    """The indexed columns whose type the table no longer has (an ``ALTER TABLE`` the index has not seen): their
    bounds, bloom filters (hashed in the old type's encoding) and value lists describe other values than a
    query of the new type asks about (``int`` -> ``bigint`` hashes 6 as another key; ``string`` ->
    ``varchar(3)`` cuts values Spark compares)."""
    now = {name.lower(): str(hive_type) for name, hive_type in table_columns}
    return [name for name, hive_type in index_columns if now.get(name.lower(), str(hive_type)) != str(hive_type)]


def collated(columns: Iterable[tuple[str, HiveType]]) -> list[str]:
    """The string columns with a collation (Spark 4's ``COLLATE UTF8_LCASE`` ...): they compare by it, not byte
    order, so their byte-ordered bounds, hashes and value lists must be left out (:func:`without_columns`)."""
    return [name for name, hive_type in columns if hive_type.collation is not None]


def without_columns(index: pa.Table, names: Iterable[str]) -> pa.Table:
    """``index`` with the named columns' statistics (bounds, null counts, filters) taken out of every per-column
    struct: unknown, so every query keeps their files, until a refresh indexes them under the table's types."""
    drop = {name.lower() for name in names}
    for struct_name in (MIN_VALUES, MAX_VALUES, NULL_COUNT, BLOOM_FILTERS, VALUE_LISTS):
        if struct_name not in index.column_names:
            continue
        column = index.column(struct_name).combine_chunks()
        keep = [i for i in range(column.type.num_fields) if column.type.field(i).name.lower() not in drop]
        if len(keep) == column.type.num_fields:
            continue
        children = column.flatten()  # offsets and the parent's nulls applied
        fields = [column.type.field(i) for i in keep]
        rebuilt = (pa.StructArray.from_arrays([children[i] for i in keep], fields=fields) if keep
                   else pa.array([{}] * index.num_rows, pa.struct([])))
        at = index.column_names.index(struct_name)
        index = index.set_column(at, pa.field(struct_name, rebuilt.type), rebuilt)
    return index


def stats_table(
    columns: Iterable[tuple[str, HiveType]], entries: Iterable[tuple[DataFile, FileStats]],
    options: StatsOptions | None = None,
) -> pa.Table:
    """Assemble index rows (sorted by path) from files and their stats; ``entries`` may be any iterable."""
    schema = index_schema(columns, options)
    cols = columns_of(schema)
    rows = sorted(((DataFile(*f), s) for f, s in entries), key=lambda e: e[0].path)
    files = [f for f, _ in rows]
    stats = [s for _, s in rows]
    n = len(rows)

    def struct_of(getter: Callable[[FileStats, str], object], struct_type: pa.StructType) -> pa.Array:
        if struct_type.num_fields == 0:
            return pa.array([{}] * n, struct_type)
        children = [
            pa.array([getter(s, name) for s in stats], struct_type.field(i).type)
            for i, (name, _) in enumerate(cols)
        ]
        return pa.StructArray.from_arrays(children, fields=list(struct_type))

    bounds_type = schema.field(MIN_VALUES).type
    mtimes = np.array([int(f.mtime_ms) for f in files], np.int64)
    arrays = [
        pa.array([f.path for f in files], pa.string()),
        pa.array([int(f.size) for f in files], pa.int64()),
        pa.array(mtimes, pa.int64()),
        trusted_versions(mtimes, pa.array([f.version for f in files], pa.string())),
        pa.array([s.num_records for s in stats], pa.int64()),
        pa.array([list(dict(f.partition_values).items()) for f in files], PARTITION_TYPE),
        struct_of(lambda s, c: s.column(c).min, bounds_type),
        struct_of(lambda s, c: s.column(c).max, bounds_type),
        struct_of(lambda s, c: s.column(c).null_count, schema.field(NULL_COUNT).type),
        pa.array([s.error for s in stats], pa.string()),
    ]
    arrays += membership_arrays(list(schema)[len(arrays):], [s.membership for s in stats])
    return pa.Table.from_arrays(arrays, schema=schema)


def unsafe_paths(paths: pa.Array | pa.ChunkedArray, limit: int = 3) -> list[str | None]:
    """Up to ``limit`` paths that are neither plain relative paths inside the table location nor plain absolute
    paths (a file of a partition registered outside the table folder); vectorized.

    Refused: null, empty, ``.``/``..`` segments, empty segments, trailing ``/``, backslashes, NUL. An index row is
    only ever *matched* against a file that ``list_status`` listed under a registered partition's location; it
    never makes a reader open a path of its own.
    """
    plain = pc.replace_substring_regex(paths, _URI_PREFIX, "/", max_replacements=1)  # s3a://b/k -> /k
    bad = pc.or_kleene(pc.is_null(paths), pc.match_substring_regex(plain, _UNSAFE_PATH))
    bad = pc.fill_null(bad, True)
    if not pc.any(bad).as_py():
        return []
    return pc.filter(paths, bad).slice(0, limit).to_pylist()


def stats_errors(table: pa.Table) -> list[tuple[str, str]]:
    """(path, error) of every file whose footer could not be read: what a CLI reports after building."""
    failed = table.filter(pc.is_valid(table.column(STATS_ERROR)))
    return list(zip(failed.column(PATH).to_pylist(), failed.column(STATS_ERROR).to_pylist(), strict=True))


def in_path_order(table: pa.Table) -> bool:
    """Whether the rows' paths strictly increase, i.e. the table is already what sorting by path would give
    (checked by Arrow, so a table in order is never copied just to sort it)."""
    paths = table.column(PATH)
    n = len(paths)
    return n < 2 or bool(pc.all(pc.less(paths.slice(0, n - 1), paths.slice(1))).as_py())


def check_files(files: Sequence[DataFile]) -> None:
    """Refuse file lists an index must never hold: unsafe or duplicate paths."""
    listed = FileList.of(files)
    bad = unsafe_paths(listed.paths)
    if bad:
        raise StatsIndexError(
            f"data file paths {bad!r} are neither relative paths inside the table location nor plain absolute "
            "paths; list files with storage_handler.stats.files.walk.list_data_files or "
            "storage_handler.catalog.list_partition_files"
        )
    if listed.has_duplicate_paths():
        raise StatsIndexError("the data file list names the same path twice; pass each file once")
