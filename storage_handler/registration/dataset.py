"""Discover a Parquet dataset on storage: its data files, Hive-style partition folders and unified schema.

Rules (decided here, once):

* Hidden names (starting with ``_`` or ``.``) are skipped at every level, as Hive and Spark skip them; this is
  also where the statistics index lives.
* Every data file sits under the same sequence of ``key=value`` folders; a file elsewhere is an error naming it.
* Listing and Hive's partition-path escaping are :mod:`storage_handler.stats.files.walk`'s (one rule for the
  registration and the index); ``__HIVE_DEFAULT_PARTITION__`` means NULL.
* Partition column types are inferred: ``int`` if every value fits a 32-bit integer, ``bigint`` if every value is
  an integer, otherwise ``string`` (dates stay strings, as Hive users usually declare them).
* The table schema is the union of all file schemas in first-seen order (files missing a column read it as NULL);
  one column with two types is an error naming both files. Every footer is read once, for the schema and the
  index rows together (:mod:`storage_handler.stats.engines.scan`).

**Unreadable files: one rule for every command that reads footers** -- ``register``, ``sync``, ``index refresh``,
and the meta hook's index refresh behind each of them (:func:`storage_handler.stats.update_index`). A file whose
footer cannot be read (not Parquet, truncated by a crashed writer, empty: 0 bytes) does not stop the command:

* the other files are indexed as usual; the unreadable one gets an index row with its ``stats_error`` (why) and no
  statistics, so **every scan keeps it** and a query reads it exactly as plain Spark would (Spark fails on a file
  that is not Parquet, and skips an empty one); every refresh tries it again;
* schema inference uses the readable files only; registering a dataset with no readable file is refused in one
  line (``sync`` keeps the metastore's schema then);
* the command says so in one warning line, and ``hsh describe`` lists the files (count, sample, oldest), both read
  from the index (:func:`storage_handler.registration.describe.unreadable_files`);
* ``--strict`` (``register``, ``sync``, ``index refresh``) refuses instead: the command fails in one line naming
  the files before the metastore or the index changes (:func:`refuse_unreadable`, :class:`StrictEngine`).

Why this rule and not a refusal: a table that a pipeline writes to always has a moment with a file a crashed
writer left behind; refusing would make registration depend on that moment (refresh cannot refuse: it runs after
the files are already part of the table), and plain Spark reads such a table the same way with or without the
index. Why not skip the files: a scan that silently dropped a file Spark would fail on changes query results.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date

import numpy as np
import pyarrow as pa

from storage_handler.errors import DatasetError, SchemaError
from storage_handler.hive_paths import partition_path
from storage_handler.stats.columns import PATH
from storage_handler.stats.engines.chunks import FooterJob
from storage_handler.stats.engines.local import FooterEngine, LocalEngine, ProgressCallback, build_index
from storage_handler.stats.engines.memory import release_memory
from storage_handler.stats.engines.scan import FooterScan
from storage_handler.stats.files.file_list import FileList
from storage_handler.stats.files.walk import DataFile, absolute_path, list_data_files
from storage_handler.stats.footers.convert import spark_reads_registered
from storage_handler.stats.index.file_stats import StatsOptions
from storage_handler.stats.index.layout import stats_errors
from storage_handler.storage import LOCAL, Storage, parse_location, storage_for
from storage_handler.types import HiveType, arrow_to_hive, hive_to_arrow

_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)


@dataclass(frozen=True, slots=True)
class Layout:
    """What a dataset's folders say before any footer is read: its files and partitions."""

    root: str  # where the files were listed: a local path or a URI
    location: str  # as registered in the metastore
    files: FileList
    """Every data file, sorted by path, as columns (a ``Sequence[DataFile]``)."""
    partition_keys: tuple[tuple[str, HiveType], ...]
    partition_folders: Mapping[tuple[str | None, ...], str] = field(default_factory=dict, compare=False)
    """Each partition's real folder (relative); ``p=`` and ``p=__HIVE_DEFAULT_PARTITION__`` are both NULL."""

    @property
    def partitions(self) -> list[tuple[str | None, ...]]:
        """Distinct partition value tuples, in sorted folder order."""
        return list(self.partition_folders) if self.partition_keys else []

    def partition_name(self, values: Sequence[str | None]) -> str:
        return partition_name(self.partition_keys, values)

    def partition_files(self) -> dict[tuple[str | None, ...], tuple[int, int]]:
        """Per partition (its values): how many data files it holds and their total size in bytes."""
        files = self.files
        counts = np.bincount(files.slots, minlength=len(files.partitions))
        sizes = np.zeros(len(files.partitions), np.int64)
        np.add.at(sizes, files.slots, files.sizes)
        result: dict[tuple[str | None, ...], tuple[int, int]] = {}
        for slot, mapping in enumerate(files.partitions):
            values = tuple(mapping.values())
            count, size = result.get(values, (0, 0))
            result[values] = (count + int(counts[slot]), size + int(sizes[slot]))
        return result

    def partition_location(self, values: Sequence[str | None]) -> str:
        folder = self.partition_folders.get(tuple(values)) or self.partition_name(values)
        return self.location.rstrip("/") + "/" + folder


@dataclass(frozen=True, slots=True)
class Dataset:
    """A dataset as a Hive table sees it: its :class:`Layout`, the union of its files' schemas, and the index rows
    read on the way."""

    layout: Layout
    columns: tuple[tuple[str, HiveType], ...]
    arrow_schema: pa.Schema = field(compare=False)
    seed: pa.Table | None = field(default=None, compare=False)
    """Index rows of :attr:`files` read during discovery (the index build reuses them instead of re-reading);
    unreadable files are rows with their ``stats_error``."""
    unreadable: tuple[tuple[str, str], ...] = ()
    """``(path, why)`` of every file whose footer could not be read, in path order (see the module docstring)."""

    # the layout's facts, as every caller of a dataset reads them
    root = property(lambda self: self.layout.root)
    location = property(lambda self: self.layout.location)
    files = property(lambda self: self.layout.files)
    partition_keys = property(lambda self: self.layout.partition_keys)
    partition_folders = property(lambda self: self.layout.partition_folders)
    partitions = property(lambda self: self.layout.partitions)

    def partition_name(self, values: Sequence[str | None]) -> str:
        return self.layout.partition_name(values)

    def partition_files(self) -> dict[tuple[str | None, ...], tuple[int, int]]:
        return self.layout.partition_files()

    def partition_location(self, values: Sequence[str | None]) -> str:
        return self.layout.partition_location(values)


def partition_name(keys: Sequence[tuple[str, HiveType]], values: Sequence[str | None]) -> str:
    """Hive's partition name (and folder), e.g. ``dt=2024-01-01/n=__HIVE_DEFAULT_PARTITION__``."""
    return partition_path(list(zip((k for k, _ in keys), values, strict=True)))


def list_files(root: str, storage: Storage) -> FileList:
    """Every visible file under ``root``; each must sit in ``key=value`` folders only (Hive reads nothing else)."""
    location = parse_location(root)
    if location.kind == LOCAL and storage.stat(root) is not None:
        raise DatasetError(f"dataset path {root} is not a folder; register the folder that holds the Parquet files")
    if not storage.is_dir(root):
        raise DatasetError(f"dataset path {root} does not exist")
    files = list_data_files(root, storage=storage)
    for values, first in files.slot_members():  # one file per folder: the folder decides
        path = files.paths[first].as_py()
        folders = path.split("/")[:-1]
        bad = [seg for seg in folders if "=" not in seg or seg.startswith("=")]
        if bad or len(values) != len(folders):
            raise DatasetError(
                f"file {path!r} is inside folder {(bad or folders)[0]!r}, which is not a Hive partition folder "
                "(key=value, each key once); move the file or rename the folder to start with '_' to have it ignored"
            )
    return files


def _partition_folders(root: str, files: FileList) -> dict[tuple[str | None, ...], str]:
    """Each partition's folder, in sorted folder order (one file per folder is looked at)."""
    folders: dict[tuple[str | None, ...], str] = {}
    for mapping, first in files.slot_members():
        folder = files.paths[first].as_py().rsplit("/", 1)[0]
        values = tuple(mapping.values())
        if folders.setdefault(values, folder) != folder:
            why = ("an empty value and __HIVE_DEFAULT_PARTITION__ are both NULL" if None in values else
                   "their values are the same once Hive's %XX escapes are decoded")
            raise DatasetError(
                f"folders {folders[values]!r} and {folder!r} under {root} are the same Hive partition ({why}); "
                "move the files into one of them"
            )
    return folders


def infer_partition_type(values: Sequence[str | None]) -> HiveType:
    present = [v for v in values if v is not None]
    if present and all(re.fullmatch(r"[+-]?[0-9]+", v) for v in present):  # ASCII: Spark casts no other digits
        ints = [int(v) for v in present]
        if all(_INT32[0] <= i <= _INT32[1] for i in ints):
            return HiveType("int")
        if all(_INT64[0] <= i <= _INT64[1] for i in ints):
            return HiveType("bigint")
    return HiveType("string")


_INTEGER_RANGES = {"tinyint": (-(2**7), 2**7 - 1), "smallint": (-(2**15), 2**15 - 1), "int": _INT32, "bigint": _INT64}


def partition_value_fits(value: str | None, hive_type: HiveType) -> bool:
    """Whether a folder's value can be a partition of a key already registered as ``hive_type``: what
    :func:`infer_partition_type` would have kept that type for (integers: ASCII digits in range), a date as
    ``YYYY-MM-DD``, and for other types (keys typed by hand) a value pyarrow's strict cast reads. A value that
    does not fit makes every plain Spark query on the table fail (ANSI casts of partition values) or read it as
    another value."""
    if value is None or hive_type.name in ("string", "varchar", "char"):
        return True
    if hive_type.name in _INTEGER_RANGES:
        low, high = _INTEGER_RANGES[hive_type.name]
        return re.fullmatch(r"[+-]?[0-9]+", value) is not None and low <= int(value) <= high
    if hive_type.name == "date":
        try:
            return re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", value) is not None and bool(date.fromisoformat(value))
        except ValueError:
            return False
    try:
        pa.array([value]).cast(hive_to_arrow(hive_type))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, ValueError):
        return False
    return value == value.strip()


def unify_schemas(root: str, schemas: Sequence[tuple[pa.Schema, str]],
                  declared: Mapping[str, HiveType] | None = None) -> pa.Schema:
    """The union of the distinct file schemas (each with the first file that has it), in first-seen order.

    ``declared``: a registered table's column types (lower-case names); files whose types differ are then fine
    where the table's type reads both (an ``int`` column widened to ``bigint`` by ``ALTER TABLE``, new files
    written as INT64 beside the old INT32 ones): ``hsh sync`` adds their partitions."""
    fields: dict[str, tuple[pa.Field, str]] = {}
    for schema, path in schemas:
        for fld in schema:
            key = fld.name.lower()
            if key not in fields:
                fields[key] = (fld, path)
                continue
            first, first_file = fields[key]
            if not _compatible(first.type, fld.type) and not _both_read_as(first.type, fld.type,
                                                                           (declared or {}).get(key)):
                raise SchemaError(
                    f"column {fld.name!r} has type {first.type} in {absolute_path(root, first_file)} but {fld.type} "
                    f"in {absolute_path(root, path)}; rewrite one of the files so the types agree (nothing was "
                    "changed)"
                )
    return pa.schema([fld.with_name(name) for name, (fld, _) in fields.items()])


def _both_read_as(a: pa.DataType, b: pa.DataType, declared: HiveType | None) -> bool:
    """Whether a registered column of type ``declared`` reads file columns of both Arrow types."""
    try:
        return declared is not None and all(spark_reads_registered(arrow_to_hive(t), declared) for t in (a, b))
    except SchemaError:
        return False


def _compatible(a: pa.DataType, b: pa.DataType) -> bool:
    if a.equals(b):
        return True
    if pa.types.is_timestamp(a) and pa.types.is_timestamp(b):
        return True  # units differ between writers; all map to Hive timestamp and the index normalises them
    try:
        return str(arrow_to_hive(a)) == str(arrow_to_hive(b))
    except SchemaError:
        return False


def discover(path: str, *, location: str | None = None, progress: Callable[[str], None] | None = None,
             conf: Mapping[str, str] | None = None, options: StatsOptions | None = None,
             footers: ProgressCallback | None = None, engine: FooterEngine | None = None,
             strict: bool = False, need_schema: bool = True,
             declared: Mapping[str, HiveType] | None = None) -> Dataset:
    """Scan ``path`` (a local folder or a URI such as ``s3a://bucket/folder``) and describe it as a Hive table
    would see it. ``conf`` carries ``fs.s3a.*`` settings for object stores.

    Every footer is read once (:mod:`storage_handler.stats.engines.scan`): for the schema, and for the index rows under
    ``options`` (the table's statistics options), which :attr:`Dataset.seed` hands to the index build so it reads
    no footer again. ``footers(done, total)`` reports the pass; ``engine`` runs it (default: this machine's
    pool; a Spark engine scans on a cluster).

    Unreadable files follow the module's rule: recorded in :attr:`Dataset.unreadable` (and as rows of the seed),
    refused with ``strict``; with ``need_schema`` (registration) a dataset without one readable file is refused.
    ``declared``: the registered table's column types, when there is one (see :func:`unify_schemas`).
    """
    layout = survey(path, location=location, conf=conf)
    (progress or (lambda _m: None))(f"found {len(layout.files)} files under {layout.root}; reading their Parquet footers")
    stats_options = options or StatsOptions()
    scan = (engine or LocalEngine()).scan(layout.root, layout.files, stats_options, conf=conf, progress=footers)
    return describe(layout, scan, stats_options, conf, strict=strict, need_schema=need_schema, declared=declared)


def survey(path: str, *, location: str | None = None, conf: Mapping[str, str] | None = None) -> Layout:
    """List ``path``'s files and partition folders (no footer is read): the dataset's :class:`Layout`."""
    parsed = parse_location(path)
    root = parsed.uri
    files = list_files(root, storage_for(root, conf))
    if not files:
        raise DatasetError(f"no data files under {root} (hidden names starting with '_' or '.' are ignored)")
    key_names = list(files[0].partition_values)
    members = files.slot_members()  # files of one folder share one mapping: checked once per folder
    for values, first in members:
        if list(values) != key_names:
            raise DatasetError(
                f"partition folders disagree: {files[0].path!r} has keys {key_names} but {files[first].path!r} "
                f"has {list(values)}; every file must sit under the same key=value levels"
            )
    keys = tuple((k, infer_partition_type([values[k] for values, _ in members])) for k in key_names)
    return Layout(root=root, location=location or (f"file:{root}" if parsed.kind == LOCAL else root), files=files,
                  partition_keys=keys, partition_folders=_partition_folders(root, files) if keys else {})


def describe(layout: Layout, scan: FooterScan, options: StatsOptions,
             conf: Mapping[str, str] | None = None, *, strict: bool = False, need_schema: bool = True,
             declared: Mapping[str, HiveType] | None = None) -> Dataset:
    """The dataset of ``layout`` once its footers are scanned: the table schema is the union of the readable files'
    schemas; columns of two types and columns that are also partition keys are refused. Unreadable files follow the
    module's rule: kept as rows with their ``stats_error`` (refused with ``strict``); with ``need_schema`` a
    dataset without one readable file is refused."""
    root = layout.root
    unreadable = tuple(sorted((f.path, why) for f, why in scan.unreadable))
    if strict:
        refuse_unreadable(root, unreadable)
    if need_schema and not scan.groups:
        path, why = unreadable[0]
        raise DatasetError(
            f"none of the {len(layout.files)} files under {root} is a readable Parquet file (e.g. "
            f"{absolute_path(root, path)}: {' '.join(why.split())}), so there is no schema to register; "
            "point at the folder that holds the Parquet files"
        )
    arrow_schema, columns = table_schema(layout, scan, declared)
    seed = _seed(root, columns, layout.files, scan, options, conf)
    del scan  # the chunks' rows, now merged into ``seed``
    release_memory()
    return Dataset(layout=layout, columns=columns, arrow_schema=arrow_schema, seed=seed, unreadable=unreadable)


def refuse_unreadable(root: str, unreadable: Sequence[tuple[str, str]]) -> None:
    """``--strict``: raise one line naming the unreadable files (``(path, why)``, paths relative to ``root`` or
    absolute), if there are any. Called before anything is committed, so a refusal changes nothing."""
    if not unreadable:
        return
    shown = [absolute_path(root, path) for path, _ in unreadable[:3]]
    first_why = " ".join(unreadable[0][1].split())
    more = f", and {len(unreadable) - len(shown)} more" if len(unreadable) > len(shown) else ""
    one = len(unreadable) == 1
    them = "it" if one else "them"
    raise DatasetError(
        f"{len(unreadable)} {'file is' if one else 'files are'} not readable Parquet ({shown[0]}: {first_why}"
        f"{'; ' + ', '.join(shown[1:]) if shown[1:] else ''}{more}) and --strict refuses {them}; nothing was "
        f"changed. Remove {them}, or rename {them} to start with '_' or '.' so readers ignore {them}; without "
        f"--strict {'it is' if one else 'they are'} recorded as unreadable and kept in every scan"
    )


class StrictEngine:
    """A footer engine that refuses unreadable files (``--strict``): ``inner`` reads; a file whose footer could not
    be read raises :class:`DatasetError` (see :func:`refuse_unreadable`) as soon as the footers are read, so the
    refresh behind ``sync`` / ``index refresh`` (or the meta hook's) stops before it commits an index version or
    alters the table."""

    def __init__(self, inner: FooterEngine | None = None) -> None:
        self.inner: FooterEngine = inner if inner is not None else LocalEngine()
        self.name = self.inner.name

    def read(self, job: FooterJob, files: Sequence[DataFile], progress: ProgressCallback | None = None) -> pa.Table:
        rows = self.inner.read(job, files, progress)
        refuse_unreadable(job.table_location, stats_errors(rows))
        return rows

    def scan(self, root: str, files: Sequence[DataFile], options: StatsOptions, *,
             conf: Mapping[str, str] | None = None, progress: ProgressCallback | None = None) -> FooterScan:
        found = self.inner.scan(root, files, options, conf=conf, progress=progress)
        refuse_unreadable(root, sorted((f.path, why) for f, why in found.unreadable))
        return found


def table_schema(layout: Layout, scan: FooterScan, declared: Mapping[str, HiveType] | None = None,
                 ) -> tuple[pa.Schema, tuple[tuple[str, HiveType], ...]]:
    """The union of the schemas ``scan`` found (its files may be a sample of the layout's), as Arrow and as Hive
    columns; a column that is also a partition key is refused."""
    for group in sorted(scan.groups, key=lambda g: g.first):  # the first file in path order, whatever the chunks did
        if group.nanos:
            raise SchemaError(
                f"column(s) {', '.join(repr(n) for n in group.nanos)} in {absolute_path(layout.root, group.nanos_file)} "
                "are stored as nanosecond timestamps (INT64 TIMESTAMP(NANOS), pandas' and pyarrow's default), which "
                "Spark cannot read: every query of the table would fail. Rewrite the files with microseconds "
                "(pyarrow: pq.write_table(..., coerce_timestamps='us'); pandas: df.to_parquet(..., "
                "coerce_timestamps='us', allow_truncated_timestamps=True)); nothing was changed"
            )
        for fld in group.arrow:
            try:
                arrow_to_hive(fld.type, fld.name)
            except SchemaError as e:  # name the file: in a big table the column alone does not say which to fix
                raise SchemaError(f"{e}; first seen in {absolute_path(layout.root, group.first_file)} (nothing was "
                                  "changed)") from e
    arrow_schema = unify_schemas(layout.root, scan.schemas, declared)
    clash = {k for k, _ in layout.partition_keys} & {n.lower() for n in arrow_schema.names}
    if clash:
        raise SchemaError(
            f"column(s) {sorted(clash)} appear both as partition folders and inside the files under {layout.root}; "
            "Hive cannot have a data column and a partition column with the same name. Rewrite the files without "
            "those columns (the folder names hold their values), or rename the folders' keys; nothing was changed"
        )
    return arrow_schema, tuple((fld.name, _as_declared(arrow_to_hive(fld.type, fld.name), (declared or {}).get(
        fld.name.lower()))) for fld in arrow_schema)


def _as_declared(found: HiveType, declared: HiveType | None) -> HiveType:
    """A registered column's own type where Spark reads the files' as it (their statistics are then read as the
    table reads the values), else the files' type (which ``hsh sync`` refuses, naming the files)."""
    return declared if declared is not None and spark_reads_registered(found, declared) else found


def _seed(root: str, columns: Sequence[tuple[str, HiveType]], files: FileList, scan: FooterScan,
          options: StatsOptions, conf: Mapping[str, str] | None) -> pa.Table:
    """The index rows of every file, from the one pass (files the pass could not plan alone read now)."""
    seed = scan.index_for(columns, options)
    if not scan.deferred:
        return seed
    extra = build_index(root, columns, scan.deferred, options=options, conf=conf)
    return pa.concat_tables([seed, extra.cast(seed.schema)]).sort_by(PATH)
