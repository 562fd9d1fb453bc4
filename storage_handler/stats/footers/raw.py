"""Footer statistics of many files as columns, exactly as pyarrow's Parquet reader reports them, not yet turned
into table values.

Why a raw, columnar form: indexing a table of many small files used to build a ``FileStats`` per file and read
every column chunk's statistics through pyarrow's Python objects -- tens of microseconds of Python per file, most
of indexing a big local table. Here a chunk of files becomes a handful of arrays (one row per column chunk: its
row group's rows, flags, null count, plain-encoded min and max), and :mod:`storage_handler.stats.footers.bounds` turns
them into index values for all files at once.

Two producers fill the same arrays and must agree exactly (a property test compares them on random files and on
footers mutated to every odd case):

* :func:`storage_handler.stats.footers.native_reader.read_native`: local files, read by the Parquet C++ library inside
  pyarrow (no Python per file);
* :meth:`RawFooters.from_metadata`: footers already read by pyarrow (object stores, the reader's row groups, and
  wherever the native reader is unavailable).

A chunk row's ``flags``: :data:`STATS_SET` (``ColumnChunkMetaData.is_stats_set``), :data:`HAS_NULL_COUNT`,
:data:`HAS_MIN_MAX` (``Statistics.has_null_count`` / ``has_min_max``) and :data:`ERROR` (reading the chunk's
statistics raised: pyarrow decodes min/max when ``.statistics`` is read, and a value of the wrong width fails).
Min and max are plain-encoded as Parquet stores them (``Statistics.EncodeMin``): little-endian 4/8-byte integers,
one byte for a boolean, the bytes themselves for byte arrays.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from storage_handler.stats.footers.guard import GuardReport, inspect

STATS_SET = 1
HAS_NULL_COUNT = 2
HAS_MIN_MAX = 4
ERROR = 8

_FIXED = {"INT32": "<i", "INT64": "<q", "FLOAT": "<f", "DOUBLE": "<d"}


@dataclass(frozen=True, slots=True)
class RawFooters:
    """Columns of footer statistics (see the module docstring). Per file: ``num_rows`` (-1: unreadable, see
    ``errors``), ``schema`` (index into ``schemas``), ``row_groups``, ``first_chunk``, ``writers``. Per chunk row
    (file-major, then row group, then every leaf column of the file's schema): ``rg_rows``, ``flags``,
    ``null_count``, ``mins``, ``maxs``."""

    num_rows: np.ndarray
    schema: np.ndarray
    row_groups: np.ndarray
    first_chunk: np.ndarray
    schemas: tuple[pq.ParquetSchema, ...]
    errors: tuple[str | None, ...]
    writers: tuple[str, ...]  # per file: the footer's ``created_by`` ('' when none; :mod:`.writers` reads it)
    rg_rows: np.ndarray
    flags: np.ndarray
    null_count: np.ndarray
    mins: pa.LargeBinaryArray
    maxs: pa.LargeBinaryArray

    def __len__(self) -> int:
        return len(self.num_rows)

    def select(self, files: np.ndarray) -> RawFooters:
        """The statistics of ``files`` (positions) only, in that order; chunk rows are shared, not copied."""
        return replace(self, num_rows=self.num_rows[files], schema=self.schema[files],
                       row_groups=self.row_groups[files], first_chunk=self.first_chunk[files],
                       errors=tuple(self.errors[int(i)] for i in files),
                       writers=tuple(self.writers[int(i)] for i in files))

    def file_of(self, chunks: np.ndarray) -> np.ndarray:
        """The file (position) each chunk row of a readable file belongs to."""
        readable = np.flatnonzero((self.schema >= 0) & (self.row_groups > 0))  # files that own chunk rows
        order = readable[np.argsort(self.first_chunk[readable], kind="stable")]
        return order[np.searchsorted(self.first_chunk[order], chunks, side="right") - 1]

    def leaves(self, schema: int) -> int:
        return len(self.schemas[schema])

    def with_undecodable_as_unreadable(self, leaves_of: Callable[[int], Collection[int]]) -> RawFooters:
        """These footers with every file that has a chunk whose statistics do not decode (``ERROR``) recorded as
        unreadable, naming the first such chunk; only the chunks of the leaves ``leaves_of(schema)`` names count
        (the table's columns: a leaf no column reads is neither indexed nor filtered on).

        Why: such a file's footer parses, but Spark's reader fails on it as on a file that is not Parquet (it
        decodes the same statistics to filter row groups), so the one rule for unreadable files applies
        (``registration/dataset.py``): recorded with its error, no statistics, kept in every scan.
        """
        bad = np.flatnonzero((self.flags & ERROR) != 0)
        if len(bad) == 0:
            return self
        owners = self.file_of(bad)
        errors = list(self.errors)
        num_rows, schema = self.num_rows.copy(), self.schema.copy()
        wanted: dict[int, Collection[int]] = {}
        for chunk, f in zip(bad.tolist(), owners.tolist(), strict=True):
            if schema[f] < 0:
                continue  # named already by an earlier chunk of the same file
            leaves = self.leaves(int(schema[f]))
            group, leaf = divmod(chunk - int(self.first_chunk[f]), leaves)
            if leaf not in wanted.setdefault(int(schema[f]), leaves_of(int(schema[f]))):
                continue
            column = self.schemas[int(schema[f])].column(leaf).path
            errors[f] = f"the statistics of column {column!r} in row group {group} do not decode"
            num_rows[f], schema[f] = -1, -1
        return replace(self, num_rows=num_rows, schema=schema, errors=tuple(errors))

    def chunks_of(self, files: np.ndarray, leaf: int,
                  row_groups: Sequence[int] | np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Chunk rows of ``leaf`` in ``files`` (positions, all of one schema), and for each the number of its file
        in ``files``: every row group, or only ``row_groups`` (then ``files`` is one file)."""
        if len(files) == 0:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        leaves = self.leaves(int(self.schema[files[0]]))
        if row_groups is not None:
            groups = np.asarray(row_groups, dtype=np.int64)
            return self.first_chunk[files[0]] + groups * leaves + leaf, np.zeros(len(groups), np.int64)
        counts = self.row_groups[files].astype(np.int64)
        owner = np.repeat(np.arange(len(files), dtype=np.int64), counts)
        starts = np.cumsum(counts) - counts
        group = np.arange(len(owner), dtype=np.int64) - np.repeat(starts, counts)
        return self.first_chunk[files][owner] + group * leaves + leaf, owner

    @classmethod
    def from_metadata(cls, footers: Sequence[pq.FileMetaData | str]) -> RawFooters:
        """The raw statistics of footers pyarrow has read (a ``str`` stands for a file that could not be read:
        why), in Python per column chunk: where the native reader is not built
        (:func:`storage_handler.stats.footers.native_reader.raw_of` chooses). Chunks whose statistics pyarrow cannot
        decode are found first (:mod:`.footer_guard`) and never touched: touching them aborts the process."""
        num_rows: list[int] = []
        schema_of: list[int] = []
        groups_of: list[int] = []
        first: list[int] = []
        schemas: list[pq.ParquetSchema] = []
        errors: list[str | None] = []
        writers: list[str] = []
        out = _Chunks()
        for md in footers:
            first.append(len(out.rows))
            writers.append("" if isinstance(md, str) else md.created_by or "")
            if isinstance(md, str):
                num_rows.append(-1)
                schema_of.append(-1)
                groups_of.append(0)
                errors.append(md)
                continue
            s = next((i for i, known in enumerate(schemas) if known.equals(md.schema)), None)
            if s is None:
                s = len(schemas)
                schemas.append(md.schema)
            # the row groups' rows (what Spark reads and counts), not the footer's own field: see footers.cc
            num_rows.append(sum(int(md.row_group(g).num_rows) for g in range(md.num_row_groups)))
            schema_of.append(s)
            groups_of.append(md.num_row_groups)
            errors.append(None)
            physical = [md.schema.column(i).physical_type for i in range(len(md.schema))]
            report = inspect(md)
            for g in range(md.num_row_groups):
                out.add_row_group(md, g, physical, report)
        return cls(
            num_rows=np.array(num_rows, np.int64), schema=np.array(schema_of, np.int32),
            row_groups=np.array(groups_of, np.int32), first_chunk=np.array(first, np.int64),
            schemas=tuple(schemas), errors=tuple(errors), writers=tuple(writers), rg_rows=np.array(out.rows, np.int64),
            flags=np.array(out.flags, np.uint8), null_count=np.array(out.nulls, np.int64),
            mins=pa.array(out.mins, pa.large_binary()), maxs=pa.array(out.maxs, pa.large_binary()),
        )


class _Chunks:
    """Chunk rows being collected from pyarrow objects (what ``footers.cc`` does in C++)."""

    def __init__(self) -> None:
        self.rows: list[int] = []
        self.flags: list[int] = []
        self.nulls: list[int] = []
        self.mins: list[bytes] = []
        self.maxs: list[bytes] = []

    def add(self, rows: int, flags: int, nulls: int = 0, lo: bytes = b"", hi: bytes = b"") -> None:
        self.rows.append(rows)
        self.flags.append(flags)
        self.nulls.append(nulls)
        self.mins.append(lo)
        self.maxs.append(hi)

    def add_row_group(self, md: pq.FileMetaData, g: int, physical: Sequence[str], report: GuardReport) -> None:
        try:
            rg = md.row_group(g)
        except Exception:  # noqa: BLE001 - the same as footers.cc: every chunk of the row group unreadable
            for _ in physical:
                self.add(1, ERROR)
            return
        rows = rg.num_rows
        for leaf, kind in enumerate(physical):
            try:
                chunk = rg.column(leaf)
                if (g, leaf) in report.undecodable:
                    # as the C++ reader orders it: another type is an error; statistics a writer's version makes
                    # untrusted are simply not set (never decoded); otherwise decoding would fail
                    trusted = chunk.physical_type == kind and chunk.is_stats_set
                    self.add(rows, ERROR if trusted or chunk.physical_type != kind else 0)
                    continue
                if not chunk.is_stats_set:
                    self.add(rows, 0)
                    continue
                st = chunk.statistics
                flags = STATS_SET
                nulls = 0
                if st.has_null_count:
                    flags |= HAS_NULL_COUNT
                    nulls = st.null_count
                if not st.has_min_max or (g, leaf) in report.half_bounded:
                    self.add(rows, flags, nulls)
                    continue
                self.add(rows, flags | HAS_MIN_MAX, nulls, _encode(st.min_raw, kind), _encode(st.max_raw, kind))
            except Exception:  # noqa: BLE001 - a chunk whose statistics do not decode
                self.add(rows, ERROR)


def _encode(value: object, physical: str) -> bytes:
    """A raw statistics value (pyarrow's ``min_raw``) in Parquet's plain encoding, as the C++ reader reports it."""
    if isinstance(value, bytes):
        return value
    if physical == "BOOLEAN":
        return bytes([1 if value else 0])
    fmt = _FIXED.get(physical)
    if fmt is None or value is None:  # INT96: pyarrow gives no raw value; nothing reads its bounds
        return b""
    return struct.pack(fmt, value)


def decode_raw(value: bytes | None, physical: str) -> Any:
    """A plain-encoded statistics value as pyarrow's ``Statistics.min_raw`` gives it (``_encode`` reversed)."""
    if value is None:
        return None
    if physical == "BOOLEAN":
        return bool(value[0] & 1)
    fmt = _FIXED.get(physical)
    if fmt is not None:
        return struct.unpack(fmt, value[: struct.calcsize(fmt)])[0]
    return None if physical == "INT96" else value
