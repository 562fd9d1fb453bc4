"""Partition-folder text as the value Spark's native scan gives it, for the Python data source's reader.

The native scan casts a folder's text to the column's declared type with Spark's (legacy, non-ANSI) cast, which
is lenient: spaces around the text, a leading ``+``, ``2024-1-3`` as a date, ``yes`` as a boolean, ``1.5d`` as a
double. pyarrow's casts are strict, so without this module the two Spark read paths would return different
partition values (NULL on one side) for the same folder. Text the cast rejects is NULL, as in Spark.

Timestamp text naming its zone (``+01:00``, ``GMT+1``, ``America/Los_Angeles``, ``PST``) is read in that zone,
and dates in years Python's dates cannot hold (``+12024-01-01``, ``-0001-01-01``) as their day numbers.

One difference is left on purpose: zone-less timestamp text is read as UTC wall-clock time, the rule the handler's
pruning and statistics use; Spark reads it in the session time zone. Sessions from
:func:`storage_handler.spark.session` are on UTC, where the two agree.
"""

from __future__ import annotations

import datetime as dt
import re
import zoneinfo
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any

import pyarrow as pa

_INTEGER = re.compile(r"([+-]?[0-9]+)(\.[0-9]*)?")
_DATE = re.compile(r"([+-]?[0-9]{4,})(?:-([0-9]{1,2})(?:-([0-9]{1,2})(?:[ T].*)?)?)?", re.DOTALL)
_TIMESTAMP = re.compile(
    r"([0-9]{4})-([0-9]{1,2})-([0-9]{1,2})"
    r"(?:[ T]([0-9]{1,2}):([0-9]{1,2})(?::([0-9]{1,2})(?:\.([0-9]{1,9}))?)?)?"
    r"(?:\s*(\S.*))?", re.DOTALL
)
#: Java's ``ZoneId.SHORT_IDS``, which Spark's cast accepts as zones (``2024-01-01 05:00:00 PST``)
_SHORT_IDS = {
    "ACT": "Australia/Darwin", "AET": "Australia/Sydney", "AGT": "America/Argentina/Buenos_Aires",
    "ART": "Africa/Cairo", "AST": "America/Anchorage", "BET": "America/Sao_Paulo", "BST": "Asia/Dhaka",
    "CAT": "Africa/Harare", "CNT": "America/St_Johns", "CST": "America/Chicago", "CTT": "Asia/Shanghai",
    "EAT": "Africa/Addis_Ababa", "ECT": "Europe/Paris", "IET": "America/Indiana/Indianapolis",
    "IST": "Asia/Kolkata", "JST": "Asia/Tokyo", "MIT": "Pacific/Apia", "NET": "Asia/Yerevan",
    "NST": "Pacific/Auckland", "PLT": "Asia/Karachi", "PNT": "America/Phoenix", "PRT": "America/Puerto_Rico",
    "PST": "America/Los_Angeles", "SST": "Pacific/Guadalcanal", "VST": "Asia/Ho_Chi_Minh",
    "EST": "-05:00", "MST": "-07:00", "HST": "-10:00",
}
_OFFSET = re.compile(r"(?:UTC|GMT|UT)?([+-])([0-9]{1,2})(?::?([0-9]{2}))?(?::?([0-9]{2}))?")
_TRIMMED = "".join(map(chr, range(33))) + "\x7f"
_TRUE = frozenset({"t", "true", "y", "yes", "1"})
_FALSE = frozenset({"f", "false", "n", "no", "0"})


def spark_cast(text: str, target: pa.DataType) -> Any:
    """``text`` cast to ``target`` as Spark casts a string; None where Spark gives NULL. A string stays whole;
    casts to other types first trim what Spark's ``trimAll`` trims (ASCII controls, space and DEL, never
    Unicode spaces)."""
    if pa.types.is_string(target) or pa.types.is_large_string(target):
        return text
    text = text.strip(_TRIMMED)
    try:
        if pa.types.is_integer(target):
            return _integer(text, target.bit_width)
        if pa.types.is_boolean(target):
            return True if text.lower() in _TRUE else False if text.lower() in _FALSE else None
        if pa.types.is_floating(target):
            return _floating(text)
        if pa.types.is_decimal(target):
            return _decimal(text, target.precision, target.scale)
        if pa.types.is_date(target):
            return _date(text)
        if pa.types.is_timestamp(target):
            return _timestamp(text)
    except (ValueError, OverflowError, InvalidOperation):
        return None
    return pa.array([text], pa.string()).cast(target)[0].as_py()  # binary and the rest: pyarrow's cast


def _integer(text: str, bits: int) -> int | None:
    match = _INTEGER.fullmatch(text)
    if match is None:
        return None
    number = int(match.group(1))  # a fraction is truncated
    limit = 1 << (bits - 1)  # Hive's integers are signed
    return number if -limit <= number < limit else None


def _floating(text: str) -> float | None:
    """Java's ``parseDouble`` with Spark's special words: an optional d/f suffix, ``inf``, no ``_`` separators."""
    if "_" in text:
        return None
    try:
        return float(text)
    except ValueError:
        if text[-1:] in ("d", "D", "f", "F") and len(text) > 1:
            return float(text[:-1])
        raise


def _decimal(text: str, precision: int, scale: int) -> Decimal | None:
    value = Decimal(text)
    if not value.is_finite():
        return None
    value = value.quantize(Decimal(1).scaleb(-scale), rounding=ROUND_HALF_UP)
    return value if len(value.as_tuple().digits) <= precision else None


def _date(text: str) -> dt.date | int | None:
    """A ``date`` (days since 1970-01-01 as an int for a year Python's dates cannot hold: Spark's reach years
    0, -1 and 10000 on, ``+12024-01-01``), or None for no date."""
    match = _DATE.fullmatch(text)
    if match is None:
        return None
    year, month, day = int(match.group(1)), int(match.group(2) or 1), int(match.group(3) or 1)
    if 1 <= year <= 9999:
        return dt.date(year, month, day)
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    if not 1 <= month <= 12 or not 1 <= day <= (29 if month == 2 and leap else _MONTH_DAYS[month - 1]):
        return None
    return _days_from_civil(year, month, day)


_MONTH_DAYS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def _days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date, any year (H. Hinnant's algorithm)."""
    year -= month <= 2
    era = year // 400  # Python's floor division: the C original's (year - 399) / 400 for negative years
    yoe = year - era * 400
    doy = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def _timestamp(text: str) -> dt.datetime | None:
    match = _TIMESTAMP.fullmatch(text)
    if match is None:
        date_only = _date(text) if re.fullmatch(r"[0-9]{4}(-[0-9]{1,2}){0,2}", text) else None
        return dt.datetime.combine(date_only, dt.time(), dt.UTC) if isinstance(date_only, dt.date) else None
    year, month, day, hour, minute, second, fraction, zone = match.groups()
    micros = int((fraction or "0")[:6].ljust(6, "0"))
    wall = dt.datetime(int(year), int(month), int(day), int(hour or 0), int(minute or 0), int(second or 0), micros)
    zone_info = dt.UTC if zone is None else _zone(zone.strip())
    if zone_info is None:
        return None
    # a wall time in a gap or an overlap resolves as Java's ZonedDateTime does (fold 0: the earlier offset)
    return wall.replace(tzinfo=zone_info).astimezone(dt.UTC)


def _zone(text: str) -> dt.tzinfo | None:
    """The zone Spark's cast reads after a timestamp's time: ``Z``, ``UTC`` / ``GMT`` / ``UT`` with or without an
    offset, an offset (``+1``, ``+01:00``, ``-0800``), a region (``America/Los_Angeles``) or one of Java's short
    ids (``PST``); None when it is none of these (the value is then NULL, as in Spark)."""
    text = _SHORT_IDS.get(text, text)
    if text in ("Z", "UTC", "GMT", "UT"):
        return dt.UTC
    match = _OFFSET.fullmatch(text)
    if match is not None:
        sign, hours, minutes, seconds = match.groups()
        offset = dt.timedelta(hours=int(hours), minutes=int(minutes or 0), seconds=int(seconds or 0))
        if offset > dt.timedelta(hours=18) or int(minutes or 0) > 59 or int(seconds or 0) > 59:
            return None
        return dt.timezone(-offset if sign == "-" else offset)
    if "/" not in text:
        return None  # Python's zone database also knows names Java's does not (EST5EDT aside): regions only
    try:
        return zoneinfo.ZoneInfo(text)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return None

