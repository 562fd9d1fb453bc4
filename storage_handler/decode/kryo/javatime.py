"""``java.sql.Date`` / ``java.sql.Timestamp`` epoch milliseconds -> the date and time fields Java prints for them.

Hive 2.3 writes a DATE or TIMESTAMP constant as the epoch milliseconds of the wall-clock value *in the planning
JVM's default time zone*, and its reader turns them back into fields (``toString``) in *its* JVM's zone. Both
sides are the same JVM setting in a consistent cluster; we take it as an argument (the ``hsh.filter.time.zone`` job
property, UTC when unset: see :mod:`storage_handler.decode.serialized`).

Java's ``Date`` uses the Julian calendar before the Gregorian cutover (1582-10-15): ``Date.valueOf("1000-01-01")``
holds the milliseconds of *Julian* 1000-01-01 and prints ``1000-01-01`` again. We convert the same way, so the
fields match what Hive prints, and refuse the few Julian dates a Python ``date`` cannot hold (Julian-only leap
days such as 1000-02-29, years before 1).
"""

from __future__ import annotations

import datetime as dt
import functools
import zoneinfo

from storage_handler.errors import FilterError
from storage_handler.sarg.literals import NanoTimestamp

MILLIS_PER_DAY = 86_400_000
#: ``GregorianCalendar.DEFAULT_GREGORIAN_CUTOVER``: 1582-10-15T00:00Z; Java compares it with *local* milliseconds.
GREGORIAN_CUTOVER_MILLIS = -12_219_292_800_000
_EPOCH_JDN = 2_440_588  # Julian day number of 1970-01-01
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_EPOCH_ORDINAL = dt.date(1970, 1, 1).toordinal()


class JavaTimeError(FilterError):
    """A date or timestamp Java can hold but a Python ``date``/``datetime`` cannot (or an unknown time zone)."""


@functools.lru_cache(maxsize=64)
def time_zone(name: str) -> dt.tzinfo:
    """The zone for ``name`` (an IANA name such as ``America/Los_Angeles``, or ``UTC``)."""
    if name.upper() in ("UTC", "Z", "GMT"):
        return dt.UTC
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError) as e:
        raise JavaTimeError(f"unknown time zone {name!r}; use an IANA name such as 'UTC' or 'Europe/Berlin'") from e


def _offset_millis(millis: int, zone: dt.tzinfo) -> int:
    if zone is dt.UTC:
        return 0
    try:
        instant = _EPOCH + dt.timedelta(milliseconds=millis)
    except OverflowError as e:
        raise JavaTimeError(f"epoch milliseconds {millis} are outside the years 1..9999") from e
    offset = instant.astimezone(zone).utcoffset()
    assert offset is not None
    return offset // dt.timedelta(milliseconds=1)


def julian_fields(days: int) -> tuple[int, int, int]:
    """(year, month, day) in the Julian calendar of the day ``days`` after 1970-01-01 (any year, 0 and below too)."""
    c = days + _EPOCH_JDN + 32082
    d = (4 * c + 3) // 1461
    e = c - 1461 * d // 4
    m = (5 * e + 2) // 153
    return d - 4800 + m // 10, m + 3 - 12 * (m // 10), e - (153 * m + 2) // 5 + 1


def _julian(days: int) -> dt.date:
    """The Julian-calendar fields of ``days`` since 1970-01-01, as a ``date`` with the same year/month/day."""
    year, month, day = julian_fields(days)
    try:
        return dt.date(year, month, day)
    except ValueError as exc:
        raise JavaTimeError(
            f"the Julian-calendar date {year:04d}-{month:02d}-{day:02d} has no Python equivalent"
        ) from exc


def local_fields(millis: int, zone: dt.tzinfo) -> tuple[dt.date, int]:
    """(calendar date, milliseconds into that day) that Java's ``toString`` shows for ``millis`` in ``zone``."""
    local = millis + _offset_millis(millis, zone)
    days, in_day = divmod(local, MILLIS_PER_DAY)
    if local < GREGORIAN_CUTOVER_MILLIS:
        return _julian(days), in_day
    try:
        return dt.date.fromordinal(_EPOCH_ORDINAL + days), in_day
    except (ValueError, OverflowError) as e:
        raise JavaTimeError(f"epoch milliseconds {millis} are outside the years 1..9999") from e


def sql_date(millis: int, zone: dt.tzinfo) -> dt.date:
    """What ``new java.sql.Date(millis).toString()`` shows, as a date."""
    return local_fields(millis, zone)[0]


def sql_timestamp(millis: int, nanos: int, zone: dt.tzinfo) -> dt.datetime | NanoTimestamp:
    """What ``Timestamp t = new Timestamp(millis); t.setNanos(nanos)`` shows: a datetime, or a
    :class:`NanoTimestamp` when the fraction has digits beyond microseconds."""
    if not 0 <= nanos <= 999_999_999:
        raise JavaTimeError(f"timestamp nanoseconds {nanos} are outside 0..999999999")
    day, in_day = local_fields(millis, zone)
    seconds = in_day // 1000
    value = dt.datetime(day.year, day.month, day.day, seconds // 3600, seconds // 60 % 60, seconds % 60,
                        nanos // 1000)
    return NanoTimestamp(value, nanos % 1000) if nanos % 1000 else value
