"""How far behind the index is: the files it lacks (or whose row no longer matches), their bytes, and their ages.

Why it matters: a file the index lacks is never wrong -- every query keeps it -- but it is never pruned either, so
the newest partitions, the ones most queries ask for, are exactly the ones read in full while the index lags.
This says by how much, in the terms a user can act on: how many files, how many bytes, and how old the newest and
the oldest of them are (age = now minus the file's modification time; a file copied with ``cp -p`` keeps its old
mtime and so looks older than its wait was).

Two ways to get one: :func:`unindexed` compares a listing with an index snapshot (what a scan or ``describe``
would report), and :func:`behind` takes the paths an update just had to add or re-read (what the follower logs
for each update, at no extra cost).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from storage_handler.stats.files.diff import KEPT, RETRIED, compare
from storage_handler.stats.files.file_list import FileList


@dataclass(frozen=True, slots=True)
class Lag:
    """``files`` files of ``bytes`` bytes that the index did not (correctly) describe; the oldest and newest of
    their modification times (ms), None when there are none."""

    files: int = 0
    bytes: int = 0
    oldest_ms: int | None = None
    newest_ms: int | None = None

    def seconds(self, now_ms: int) -> float | None:
        """The age of the newest such file: how long at least the index has been behind (None: it is not)."""
        return None if self.newest_ms is None else max(0.0, (now_ms - self.newest_ms) / 1000)

    def oldest_seconds(self, now_ms: int) -> float | None:
        return None if self.oldest_ms is None else max(0.0, (now_ms - self.oldest_ms) / 1000)

    def as_dict(self, now_ms: int) -> dict[str, Any]:
        return {"files": self.files, "bytes": self.bytes, "lag_seconds": _round(self.seconds(now_ms)),
                "oldest_seconds": _round(self.oldest_seconds(now_ms))}

    def describe(self, now_ms: int) -> str:
        """``3 files (1.2 MB), newest 1.4 s old, oldest 3.0 s old`` or ``nothing``."""
        if not self.files:
            return "nothing"
        text = f"{self.files} file{'s' if self.files != 1 else ''} ({_size(self.bytes)}), newest " \
               f"{_age(self.seconds(now_ms))} old"
        if self.files > 1:
            text += f", oldest {_age(self.oldest_seconds(now_ms))} old"
        return text


def of_files(files: FileList, mask: np.ndarray | None = None) -> Lag:
    """The lag of ``files`` (those where ``mask`` is true)."""
    chosen = files if mask is None else files.filter(mask)
    if not len(chosen):
        return Lag()
    return Lag(len(chosen), chosen.total_size, int(chosen.mtimes.min()), int(chosen.mtimes.max()))


def behind(files: FileList, paths: Collection[str]) -> Lag:
    """The lag of the listed ``files`` whose path is one of ``paths`` (an update's added and changed files)."""
    if not paths or not len(files):
        return Lag()
    found = pc.is_in(files.paths, value_set=pa.array(list(paths), pa.string()))
    return of_files(files, np.asarray(found.to_numpy(zero_copy_only=False), dtype=bool))


def unindexed(files: FileList, index: pa.Table | None) -> Lag:
    """The listed files the index lacks, or describes by an older size, mtime or version tag (kept by every
    query, never pruned); files whose footer was unreadable and still is count as indexed (they are recorded)."""
    if index is None:
        return of_files(files)
    status = compare(index, files).status
    return of_files(files, (status != KEPT) & (status != RETRIED))


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def _age(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    if seconds < 120:
        return f"{seconds:.1f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    if seconds < 172800:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"


def _size(n: int) -> str:
    value = float(n)
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if value < 1000 or unit == "TB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    raise AssertionError("unreachable")  # pragma: no cover
