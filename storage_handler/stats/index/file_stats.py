"""Per-file statistics from a Parquet footer: record count and, per top-level column, min, max and null count.

Why footers only: a footer is a few KB at the end of the file, so indexing a table costs one small read per file,
not a scan. The price is that we must only keep what the footer proves (``bounds.py`` aggregates row groups,
``convert.py`` holds the value rules):

* Row groups are aggregated: null counts are summed (unknown if any row group lacks one); a row group with only
  nulls contributes no bounds; a row group with values but no usable min/max makes the file's bound unknown; a
  row group whose statistics do not decode, or whose null count is outside ``[0, rows]``, makes the column unknown.
* Floats: the NaN rule. Parquet footers written by Arrow (and parquet-mr) leave NaN out of min/max, and pyarrow 26
  exposes no ``nan_count``, so a footer cannot prove that a float column has no NaN: float/double bounds from a
  footer are unknown, unless ``StatsOptions(scan_float_columns=True)`` asks to read those columns' data and
  compute exact NaN-aware bounds.
* Strings: pyarrow 26 does not expose ``is_min_value_exact``/``is_max_value_exact``. The Parquet spec makes a
  truncated bound still a bound (min cut to a prefix, max cut and incremented), and pyarrow already drops string
  stats from writers known to have written wrong ones (PARQUET-251/686, signed byte order), so string bounds are
  kept as conservative bounds - never as exact values - with the UTF-8 rules in ``convert.py``. (pyarrow keeps
  wrongly ordered decimal-as-bytes bounds: ``footers/writers.py`` drops those.)
* Columns are matched by name case-insensitively (Hive lower-cases names). A column absent from the file is all-null
  there (``null_count = num_records``). A name that matches a nested column, or two columns differing only in case,
  gives unknown stats. A file whose footer cannot be read gets ``num_records = None``, all stats unknown and
  ``error`` set: one bad file never fails the table.

Many files at once (the index build) go through :mod:`storage_handler.stats.index.rows` instead of a ``FileStats`` per
file; both use the same :func:`schema_column_stats`."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

try:
    from pyarrow._parquet import ParquetReader as _ParquetReader
except ImportError:  # pragma: no cover - a pyarrow without it: the public path (see read_footer)
    _ParquetReader = None  # type: ignore[assignment, misc]

from storage_handler.errors import ConfigurationError, StatsIndexError
from storage_handler.stats.footers.bounds import column_stats
from storage_handler.stats.footers.convert import Source, classify, float_bound, spark_reads
from storage_handler.stats.footers.native_reader import raw_of
from storage_handler.stats.footers.raw import RawFooters
from storage_handler.stats.membership.columns import ColumnMembership, read_membership
from storage_handler.stats.membership.spec import MembershipSpec
from storage_handler.storage import FileEntry, Storage, storage_for
from storage_handler.types import HiveType, hive_to_arrow

TABLE_PARAM_SCAN_FLOAT = "hsh.stats.scan_float_columns"
BOUND_RULES = 6


@dataclass(frozen=True, slots=True)
class StatsOptions:
    """How much work to do per file. ``scan_float_columns`` reads float/double columns to bound them NaN-safely.

    A table opts in with the table parameter ``hsh.stats.scan_float_columns=true`` (``hsh register
    --scan-float-columns``); every index build and refresh of that table then uses it (:meth:`for_table`). The
    index records the options it was built with, and a refresh under other options re-reads every footer.
    ``membership`` (bloom filters and value lists, ``membership_spec.py``) is recorded separately: a refresh under
    another choice reads only the columns whose filters it adds.
    """

    scan_float_columns: bool = False
    membership: MembershipSpec = MembershipSpec()
    #: the footer rules' version (``convert.py``): an index built under older rules, which trusted what these do
    #: not, is trusted for nothing (``store.validate_table``) and rebuilt whole at its next refresh. 2: dates before 1582-10-15 and timestamps before 1900 unknown;
    #: 3: a varchar(n) max is the whole value (Spark does not cut it); 4: decimals stored as bytes bounded only
    #: from writers that ordered them right, integer / decimal row groups with a bound out of range unbounded;
    #: 5: a file's rows are its row groups' (what Spark reads), not the footer's own count, which broken writers
    #: set to anything (0 ruled the file out of every filter); a decimal file with more places than its column has
    #: no bounds; 6: a file column Spark refuses to read as the table's type (``convert.spark_reads``) has no
    #: statistics at all, not even a null count.
    rules: int = BOUND_RULES

    @classmethod
    def for_table(cls, parameters: Mapping[str, str]) -> StatsOptions:
        value = str(parameters.get(TABLE_PARAM_SCAN_FLOAT, "false")).strip().lower()
        if value not in ("true", "false"):
            raise ConfigurationError(
                f"table parameter {TABLE_PARAM_SCAN_FLOAT}={parameters[TABLE_PARAM_SCAN_FLOAT]!r}: use true or false"
            )
        return cls(scan_float_columns=value == "true", membership=MembershipSpec.for_table(parameters))

    @property
    def footer_only(self) -> bool:
        """Whether statistics come from footers alone (no column data read: no float scan, no filters)."""
        return not self.scan_float_columns and self.membership.is_empty

    @property
    def footer_options(self) -> StatsOptions:
        """These options without the membership choice: what decides whether footers must be read again."""
        return replace(self, membership=MembershipSpec())

    def to_json(self) -> str:
        return json.dumps({"scan_float_columns": self.scan_float_columns, "rules": self.rules}, sort_keys=True)

    @classmethod
    def from_json(cls, text: str | bytes | None) -> StatsOptions:
        """The options recorded in an index (an index without them was built with the defaults)."""
        if not text:
            return cls(rules=1)
        try:
            recorded = json.loads(text)
            return cls(scan_float_columns=bool(recorded.get("scan_float_columns", False)),
                       rules=int(recorded.get("rules", 1)))
        except (ValueError, AttributeError) as exc:
            raise StatsIndexError(f"index metadata hsh.index.options is corrupt ({exc}); rebuild the index") from exc


@dataclass(frozen=True, slots=True)
class ColumnStats:
    """Conservative stats of one column in one file; ``None`` = unknown (see ``convert.py`` for value types)."""

    min: Any = None
    max: Any = None
    null_count: int | None = None


UNKNOWN = ColumnStats()


@dataclass(frozen=True, slots=True)
class FileStats:
    """Stats of one file, keyed by lower-case table column name; ``error`` says why the footer was not read."""

    num_records: int | None
    columns: Mapping[str, ColumnStats] = field(default_factory=lambda: MappingProxyType({}))
    error: str | None = None
    membership: Mapping[str, ColumnMembership] = field(default_factory=lambda: MappingProxyType({}))

    @classmethod
    def failed(cls, error: str) -> FileStats:
        return cls(None, MappingProxyType({}), error)

    def column(self, name: str) -> ColumnStats:
        return self.columns.get(name.lower(), UNKNOWN)


def read_file_stats(
    path: str, columns: Sequence[tuple[str, HiveType]], options: StatsOptions | None = None, *,
    storage: Storage | None = None, entry: FileEntry | None = None,
) -> FileStats:
    """Read one file's footer; never raises for a bad file (the error goes to ``FileStats.error``).

    ``path`` is a local path or a URI; with the listing's ``entry`` an object store reads the footer in one
    request, of exactly the listed version of the file.
    """
    options = options or StatsOptions()
    try:
        store = storage or storage_for(path)
        with store.open_input(path, entry) as source:
            if options.footer_only:
                return stats_from_metadata(read_footer(source), columns)  # the common case: the footer only
            with pq.ParquetFile(source) as pf:
                stats = stats_from_metadata(pf.metadata, columns)
                if options.scan_float_columns:
                    stats = _scan_float_columns(pf, columns, stats)
                if not options.membership.is_empty:  # bloom filters / value lists: same open file
                    stats = replace(stats, membership=MappingProxyType(read_membership(pf, source, path, columns,
                                                                                       options.membership)))
                return stats
    except Exception as exc:  # noqa: BLE001 - any unreadable footer is recorded, never fatal for the table
        return FileStats.failed(footer_error(exc))


def read_footer(source: pa.NativeFile) -> pq.FileMetaData:
    """The footer of an open Parquet file.

    Why not ``pq.read_metadata``: that builds a ``ParquetFile`` (path resolution, nested-path maps) around the same
    C++ reader; opening the reader directly costs a third as much per file (measured 88 vs 310 us on tiny files),
    which is most of indexing a table of many small files. ``ParquetReader`` is the class behind ``ParquetFile``
    in every pyarrow this project supports (pinned below 27); should it move, the public path is used.
    """
    if _ParquetReader is None:
        return pq.ParquetFile(source).metadata
    reader = _ParquetReader()
    reader.open(source)
    return reader.metadata


def stats_from_metadata(
    metadata: pq.FileMetaData, columns: Sequence[tuple[str, HiveType]], row_groups: Sequence[int] | None = None
) -> FileStats:
    """Stats of the given table columns from an already-read footer (pure: no I/O), by the same rules as the
    index (:mod:`storage_handler.stats.footers.bounds`).

    ``row_groups`` restricts the aggregation to those row groups.
    """
    raw = raw_of([metadata])
    if row_groups is None:  # a whole file: one whose statistics do not decode is unreadable (one rule)
        checked = raw.with_undecodable_as_unreadable(lambda s: planned_leaves(raw.schemas[s], columns))
        if checked.errors[0] is not None:
            return FileStats.failed(checked.errors[0])
    groups = range(metadata.num_row_groups) if row_groups is None else row_groups
    num_rows = sum(metadata.row_group(r).num_rows for r in groups)  # the row groups', as Spark counts (raw.py)
    one = np.zeros(1, np.int64)
    stats = schema_column_stats(raw, metadata.schema, columns, 1, pa.array([num_rows], pa.int64()),
                                lambda leaf: raw.chunks_of(one, leaf, row_groups))
    return FileStats(num_rows, MappingProxyType({
        name.lower(): ColumnStats(_python(lo), _python(hi), nulls[0].as_py())
        for (name, _), (lo, hi, nulls) in zip(columns, stats, strict=True)}))


def planned_leaves(schema: pq.ParquetSchema, columns: Sequence[tuple[str, HiveType]]) -> frozenset[int]:
    """The leaves of ``schema`` whose statistics the table's ``columns`` read."""
    return frozenset(p.leaf for p in column_plan(schema, columns) if p.leaf is not None and p.source is not None)


def schema_column_stats(
    raw: RawFooters, schema: pq.ParquetSchema, columns: Sequence[tuple[str, HiveType]], n: int, records: pa.Array,
    chunks_for: Callable[[int], tuple[np.ndarray, np.ndarray]],
) -> list[tuple[pa.Array, pa.Array, pa.Array]]:
    """Per table column, (min, max, null count) over ``n`` units -- files, or row groups -- that all have the
    Parquet ``schema``, null = unknown: a column absent from the schema is all null there (null count = each
    unit's ``records``); a nested or ambiguous one is unknown; any other is read from its chunk rows
    (``chunks_for(leaf)``: the rows and, for each, its unit) by :func:`~storage_handler.stats.footers.bounds.column_stats`.
    The one place the index build, the reader's row groups and :func:`stats_from_metadata` apply the plan."""
    out = []
    for plan in column_plan(schema, columns):
        if plan.leaf is None or plan.source is None:
            unknown = pa.nulls(n, hive_to_arrow(plan.hive_type))
            out.append((unknown, unknown, records if plan.absent else pa.nulls(n, pa.int64())))
            continue
        chunks, owner = chunks_for(plan.leaf)
        out.append(column_stats(raw, chunks, owner, n, plan.source, plan.hive_type))
    return out


def _python(values: pa.Array) -> Any:
    """The one value of ``values`` in the form ``convert.py`` gives bounds (dates as days, timestamps as µs)."""
    if pa.types.is_date32(values.type):
        values = values.cast(pa.int32())
    elif pa.types.is_timestamp(values.type):
        values = values.cast(pa.int64())
    return values[0].as_py()


def footer_error(exc: BaseException) -> str:
    """Why a footer could not be read, as the index records it (``stats_error``): the exception's type and the
    first line of its message."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}"[:1000]


@dataclass(frozen=True, slots=True)
class ColumnPlan:
    """Where a table column is in a file's schema and how its statistics are read (see :func:`column_plan`)."""

    key: str
    hive_type: HiveType
    leaf: int | None  # the file's leaf column; None: absent (``absent``) or not readable (nested, ambiguous)
    absent: bool
    source: Source | None


_PLANS: list[tuple[pq.ParquetSchema, Sequence[tuple[str, HiveType]], tuple[ColumnPlan, ...]]] = []
_PLANS_LOCK = threading.Lock()


def column_plan(schema: pq.ParquetSchema, columns: Sequence[tuple[str, HiveType]]) -> tuple[ColumnPlan, ...]:
    """Each table column's leaf and classification in ``schema``, computed once per distinct file schema.

    Files of one table nearly always share their schema, and matching names and classifying types (which parses
    the logical type's JSON) cost more per file than reading the statistics themselves; comparing two schemas
    is one C++ call.
    """
    for cached_schema, cached_columns, plan in _PLANS:
        if (cached_columns is columns or cached_columns == columns) and cached_schema.equals(schema):
            return plan
    primitives, nested_paths = _leaf_map(schema)
    plans = []
    for name, hive_type in columns:
        key = name.lower()
        leaves = primitives.get(key)
        if leaves is None:
            nested = any(p.startswith(key + ".") for p in nested_paths)
            plans.append(ColumnPlan(key, hive_type, None, not nested, None))
        elif len(leaves) != 1:
            plans.append(ColumnPlan(key, hive_type, None, False, None))
        else:
            source = classify(schema.column(leaves[0]))
            readable = spark_reads(source, hive_type)  # else: no statistics, the file is read (and fails)
            plans.append(ColumnPlan(key, hive_type, leaves[0] if readable else None, False,
                                    source if readable else None))
    plan = tuple(plans)
    with _PLANS_LOCK:
        _PLANS.insert(0, (schema, columns, plan))
        del _PLANS[8:]
    return plan


def _leaf_map(schema: pq.ParquetSchema) -> tuple[dict[str, list[int]], list[str]]:
    """Top-level primitive leaves by lower-case name, and the lower-case paths of every nested leaf.

    A leaf is a top-level primitive exactly when its dotted path equals its own name (nested leaves have a longer
    path), which stays right even for names containing dots.
    """
    primitives: dict[str, list[int]] = {}
    nested: list[str] = []
    for i in range(len(schema)):
        col = schema.column(i)
        if col.path == col.name and col.max_repetition_level == 0:
            primitives.setdefault(col.name.lower(), []).append(i)
        else:
            nested.append(col.path.lower())
    return primitives, nested


def _scan_float_columns(pf: pq.ParquetFile, columns: Sequence[tuple[str, HiveType]], stats: FileStats) -> FileStats:
    """Bound float/double columns from their data: exact null count, NaN-aware min/max (NaN -> unknown)."""
    primitives, _ = _leaf_map(pf.metadata.schema)
    updated = dict(stats.columns)
    for name, hive_type in columns:
        key = name.lower()
        leaves = primitives.get(key)
        if hive_type.name not in ("float", "double") or leaves is None or len(leaves) != 1:
            continue
        col = pf.metadata.schema.column(leaves[0])
        if classify(col).kind != "float" or not spark_reads(classify(col), hive_type):
            continue
        try:
            data = pf.read(columns=[col.name], use_threads=False).column(0)
        except Exception:  # noqa: BLE001 - keep the footer's answer for this column
            continue
        nulls = data.null_count
        if len(data) - nulls == 0 or pc.any(pc.is_nan(data)).as_py():
            updated[key] = ColumnStats(None, None, nulls)
            continue
        mm = pc.min_max(data)
        to_f32 = hive_type.name == "float"
        updated[key] = ColumnStats(
            float_bound(mm["min"].as_py(), to_f32, upper=False),
            float_bound(mm["max"].as_py(), to_f32, upper=True),
            nulls,
        )
    return FileStats(stats.num_records, MappingProxyType(updated), stats.error)
