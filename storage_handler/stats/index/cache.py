"""Decoded index snapshots kept in memory between queries, by row group.

Why this is safe: a snapshot is immutable once committed (``v00000007.parquet`` is created once and never
rewritten; a collected version becomes an empty tombstone, which ``versions.current`` never picks). A cached row
group is keyed by the snapshot's location *and* its listing entry (size, modification time and version tag: ctime
locally, ETag on S3), so any other bytes under the same name are a different key. Which version is current is
still decided by one listing per query, so a commit counts from the next query on. Nothing here decides whether
a *data* file is fresh: every index row is still checked against the query's own listing
(``input_format.attach_stats``).

Why by row group: a query keeping one partition of a big table needs one row group; a query keeping every
partition needs all of them. Each group is read, projected and validated once per snapshot (and membership
projection), then sliced in memory: the rows of the kept partitions are found by binary search on the group's
sorted paths, so the caller gets only those rows, in path order, and aligning them with the listing is cheap.
Row groups can be validated one by one only when their path ranges are strictly increasing (then no path can be
in two groups); a snapshot whose groups overlap is read, validated and kept as one piece.

Memory: at most ``HSH_INDEX_CACHE_MB`` (default 256) per process, least recently used groups evicted first.
"""

from __future__ import annotations

import bisect
import contextlib
import itertools
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import pyarrow as pa
import pyarrow.parquet as pq

from storage_handler.stats.columns import PATH
from storage_handler.stats.index import versions
from storage_handler.stats.membership.columns import project, projection
from storage_handler.storage import Storage
from storage_handler.storage.base import decode_threads
from storage_handler.work import INDEX_GROUPS_READ, count

CACHE_MB_ENV = "HSH_INDEX_CACHE_MB"
DEFAULT_CACHE_MB = 256
WHOLE = -1  # the group number of a snapshot kept as one piece
MAX_CHUNKS = 64  # more slices than this are copied into one chunk (compute on thousands of chunks is slow)
Validate = Callable[[pa.Table], pa.Table]


@dataclass(frozen=True, slots=True)
class _Layout:
    """A snapshot's row groups: their first and last paths, and whether they can be handled one by one."""

    schema: pa.Schema
    firsts: tuple[str, ...]
    lasts: tuple[str, ...]
    separable: bool


class _Group(NamedTuple):
    table: pa.Table
    paths: list[str]  # for binary search
    ordered: bool  # paths are sorted (else the group is returned whole)
    nbytes: int


class SnapshotCache:
    """Row groups of immutable snapshots, decoded and validated, bounded by ``max_bytes``; thread-safe."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._layouts: OrderedDict[tuple[object, ...], _Layout] = OrderedDict()
        self._groups: OrderedDict[tuple[object, ...], _Group] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def clear(self) -> None:
        with self._lock:
            self._layouts.clear()
            self._groups.clear()
            self._bytes = 0

    def rows(self, storage: Storage, found: versions.Version, prefixes: Sequence[str] | None,
             membership: Collection[str] | None, validate: Validate) -> pa.Table:
        """The validated rows of snapshot ``found`` under ``prefixes`` (all rows when None), in path order.

        ``found.entry`` must be set (its size, time and tag are part of the key). Reading errors propagate
        (``FileNotFoundError``, ``ObjectChangedError``, corrupt Parquet): the caller decides.
        """
        entry = found.entry
        assert entry is not None
        key = (found.uri, entry.size, entry.mtime_ms, entry.version)
        wanted = None if membership is None else frozenset(m.lower() for m in membership)
        with contextlib.ExitStack() as stack:
            opened: list[pq.ParquetFile] = []
            threads: list[bool] = []

            def parquet() -> pq.ParquetFile:
                if not opened:
                    source = stack.enter_context(storage.open_input(found.uri, entry))
                    opened.append(pq.ParquetFile(source))
                    threads.append(decode_threads(source))
                return opened[0]

            with self._lock:
                layout = self._layouts.get(key)
                if layout is not None:
                    self._layouts.move_to_end(key)
            if layout is None:
                layout = _layout_of(parquet())
                with self._lock:
                    self._layouts[key] = layout
                    while len(self._layouts) > 256:
                        self._layouts.popitem(last=False)
            ranges = None if prefixes is None else sorted((p, p[:-1] + "0") for p in prefixes)
            needed = _groups_for(layout, ranges)
            groups: dict[int, _Group] = {}
            with self._lock:
                for g in needed:
                    if (key, wanted, g) in self._groups:
                        self._groups.move_to_end((key, wanted, g))
                        groups[g] = self._groups[(key, wanted, g)]
            missing = [g for g in needed if g not in groups]
            if missing:
                count(INDEX_GROUPS_READ, len(missing))
                columns = projection(parquet().schema_arrow, wanted)
                for g in missing:
                    raw = parquet().read(columns=columns, use_threads=threads[0]) if g == WHOLE else \
                        parquet().read_row_group(g, columns=columns, use_threads=threads[0])
                    groups[g] = _group(validate(project(raw, wanted)))
                    self._put((key, wanted, g), groups[g])
        if not needed:
            return validate(project(layout.schema.empty_table(), wanted))
        return _assemble([groups[g] for g in needed], ranges)

    def _put(self, key: tuple[object, ...], group: _Group) -> None:
        if group.nbytes > self.max_bytes:
            return
        with self._lock:
            old = self._groups.pop(key, None)
            self._bytes -= old.nbytes if old is not None else 0
            self._groups[key] = group
            self._bytes += group.nbytes
            while self._bytes > self.max_bytes and self._groups:
                _, evicted = self._groups.popitem(last=False)
                self._bytes -= evicted.nbytes


def _layout_of(parquet: pq.ParquetFile) -> _Layout:
    meta = parquet.metadata
    column = parquet.schema_arrow.get_field_index(PATH)
    firsts: list[str] = []
    lasts: list[str] = []
    separable = column >= 0 and meta.num_row_groups > 0
    for g in range(meta.num_row_groups):
        stats = meta.row_group(g).column(column).statistics if column >= 0 else None
        if stats is None or not stats.has_min_max or not isinstance(stats.min, str):
            separable = False
            break
        if lasts and not lasts[-1] < stats.min:
            separable = False  # overlapping or touching groups: a path could be in two of them
        firsts.append(stats.min)
        lasts.append(stats.max)
    if not separable:
        firsts, lasts = [], []
    return _Layout(parquet.schema_arrow, tuple(firsts), tuple(lasts), separable)


def _groups_for(layout: _Layout, ranges: list[tuple[str, str]] | None) -> list[int]:
    """The row groups that can hold a path in one of ``ranges`` ([lo, hi) each), in order."""
    if not layout.separable:
        return [WHOLE]
    if ranges is None:
        return list(range(len(layout.firsts)))
    needed: set[int] = set()
    for lo, hi in ranges:
        g = bisect.bisect_left(layout.lasts, lo)  # the first group whose last path is >= lo
        while g < len(layout.firsts) and layout.firsts[g] < hi:
            needed.add(g)
            g += 1
    return sorted(needed)


def _group(table: pa.Table) -> _Group:
    paths = table.column(PATH).to_pylist()
    ordered = all(a < b for a, b in zip(paths, paths[1:], strict=False))
    return _Group(table, paths, ordered, table.nbytes + sum(len(p) + 56 for p in paths))


def _assemble(groups: list[_Group], ranges: list[tuple[str, str]] | None) -> pa.Table:
    """The rows of ``groups`` under ``ranges`` (all of them when None, or for a group whose paths are not in
    order: extra index rows are harmless, they only ever match files the query listed)."""
    reach = list(itertools.accumulate((hi for _, hi in ranges), max)) if ranges else []
    pieces: list[pa.Table] = []
    for group in groups:
        if ranges is None or not group.ordered or not group.paths:
            pieces.append(group.table)
            continue
        spans: list[list[int]] = []
        first, last = group.paths[0], group.paths[-1]
        for lo, hi in ranges[bisect.bisect_right(reach, first):]:  # from the first range reaching past `first`
            if lo > last:
                break
            s, e = bisect.bisect_left(group.paths, lo), bisect.bisect_left(group.paths, hi)
            if s >= e:
                continue
            if spans and spans[-1][1] >= s:
                spans[-1][1] = max(spans[-1][1], e)
            else:
                spans.append([s, e])
        pieces += [group.table if (s, e) == (0, len(group.paths)) else group.table.slice(s, e - s) for s, e in spans]
    if not pieces:
        return groups[0].table.slice(0, 0)
    table = pa.concat_tables(pieces) if len(pieces) > 1 else pieces[0]
    if table.num_columns and table.column(0).num_chunks > MAX_CHUNKS:
        table = table.combine_chunks()
    return table


def _budget() -> int:
    raw = os.environ.get(CACHE_MB_ENV, "").strip()
    try:
        mb = float(raw) if raw else DEFAULT_CACHE_MB
    except ValueError:
        mb = DEFAULT_CACHE_MB
    return max(0, int(mb * (1 << 20)))


CACHE = SnapshotCache(_budget())
