"""Dates and timestamps of files written in the hybrid Julian calendar, read as Spark reads them.

Spark 2 (and Spark 3+ with ``datetimeRebaseModeInWrite=LEGACY``) wrote day and microsecond numbers counted in
the hybrid calendar (Julian before 1582-10-15); Spark's reader sees it in the footer -- a Spark version below 3.0,
or the key ``org.apache.spark.legacyDateTime`` (``org.apache.spark.legacyINT96`` for INT96 timestamps) -- and
rebases the values to the proleptic Gregorian calendar every reader of Spark 3+ uses (``RebaseDateTime``):
the stored 1000-01-01 reads as 1000-01-01, not as the Julian day number's proleptic date, 1000-01-06.

The Python data source reads files with pyarrow, which never rebases, so this module does what Spark does:

* dates before 1582-10-15 in such a file: the Julian calendar date of the stored day number, counted again in
  the proleptic calendar (exact, and time-zone free);
* timestamps before 1900 in such a file: Spark rebases them in the writer's or the session's time zone, which a
  Python data source cannot know, so reading them is refused with a clear error naming ``read_table`` and
  ``spark.sql``, which read them as Spark does. From 1900 on the two calendars agree.

Files without Spark's version key are read as written (Spark's ``CORRECTED``, the reading of every non-Spark
writer).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from storage_handler.decode.kryo.javatime import julian_fields
from storage_handler.errors import DatasetError
from storage_handler.stats.footers.convert import FIRST_TRUSTED_DAY, FIRST_TRUSTED_US

SPARK_VERSION_KEY = b"org.apache.spark.version"
LEGACY_DATETIME_KEY = b"org.apache.spark.legacyDateTime"
LEGACY_INT96_KEY = b"org.apache.spark.legacyINT96"
_PROLEPTIC_EPOCH = 719163  # date(1970, 1, 1).toordinal()


def legacy_modes(metadata: Mapping[bytes, bytes] | None) -> tuple[bool, bool]:
    """(dates and INT64 timestamps, INT96 timestamps) written in the hybrid calendar, as Spark decides it."""
    meta = metadata or {}
    version = meta.get(SPARK_VERSION_KEY)
    if version is None:
        return False, False
    old = _version(version.decode("utf-8", "replace")) < (3, 0, 0)
    return old or LEGACY_DATETIME_KEY in meta, old or LEGACY_INT96_KEY in meta


def rebase_dates(days: pa.Array) -> pa.Array:
    """Hybrid-calendar day numbers (``date32``) as the proleptic ones of the same calendar dates."""
    raw = pc.cast(days, pa.int32())
    before = pc.fill_null(pc.less(raw, FIRST_TRUSTED_DAY), False)
    if not pc.any(before).as_py():
        return days
    values = pc.fill_null(raw, 0).to_numpy(zero_copy_only=False).astype(np.int32)
    mask = before.to_numpy(zero_copy_only=False)
    values[mask] = [_julian_to_proleptic(int(d)) for d in values[mask]]
    return pa.array(values, pa.int32(), mask=raw.is_null().to_numpy(zero_copy_only=False)).cast(pa.date32())


def refuse_old_timestamps(micros: pa.Array, column: str, path: str) -> None:
    """Timestamps (UTC microseconds) of a hybrid-calendar file: refused before 1900 (see the module docstring)."""
    if pc.any(pc.fill_null(pc.less(pc.cast(micros, pa.int64()), FIRST_TRUSTED_US), False)).as_py():
        raise DatasetError(
            f"column {column!r} in {path} holds timestamps before 1900 written in Spark's legacy hybrid calendar, "
            "which Spark rebases in the writer's time zone; the hsh data source cannot: read the table with "
            "spark.sql or storage_handler.spark.read_table"
        )


def _julian_to_proleptic(days: int) -> int:
    """A day number counted in the Julian calendar -> the proleptic Gregorian day number of the same date."""
    year, month, day = julian_fields(days)
    if year < 1:
        raise DatasetError(f"a date of the year {year} in Spark's legacy hybrid calendar has no proleptic reading "
                           "here; read the table with spark.sql or storage_handler.spark.read_table")
    # the first of the month plus the days, as Spark counts: a Julian 1000-02-29 (no such proleptic day) reads as
    # 1000-03-01
    return dt.date(year, month, 1).toordinal() + day - 1 - _PROLEPTIC_EPOCH


def _version(text: str) -> tuple[int, ...]:
    parts = []
    for piece in text.split(".")[:3]:
        digits = "".join(ch for ch in piece if ch.isdigit()) or "0"
        parts.append(int(digits))
    return tuple(parts)
