"""Partition-folder text as the value Spark's native scan gives it, for the Python data source's reader.

The native scan casts a folder's text to the column's declared type with Spark's (legacy, non-ANSI) cast, which
is lenient: spaces around the text, a leading ``+``, ``2024-1-3`` as a date, ``yes`` as a boolean, ``1.5d`` as a
double. pyarrow's casts are strict, so without this module the two Spark read paths would return different
partition values (NULL on one side) for the same folder. Text the cast rejects is NULL, as in Spark.

One difference is left on purpose: zone-less timestamp text is read as UTC wall-clock time, the rule the handler's
pruning and statistics use; Spark reads it in the session time zone. Sessions from
:func:`storage_handler.spark.session` are on UTC, where the two agree.
"""

from __future__ import annotations

import datetime as dt
import re
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any

import pyarrow as pa

_INTEGER = re.compile(r"([+-]?[0-9]+)(\.[0-9]*)?")
_DATE = re.compile(r"([+-]?[0-9]{4,})(?:-([0-9]{1,2})(?:-([0-9]{1,2})(?:[ T].*)?)?)?", re.DOTALL)
_TIMESTAMP = re.compile(
    r"([0-9]{4})-([0-9]{1,2})-([0-9]{1,2})"
    r"(?:[ T]([0-9]{1,2}):([0-9]{1,2})(?::([0-9]{1,2})(?:\.([0-9]{1,9}))?)?)?"
    r"\s*(Z|UTC|[+-][0-9]{2}:?[0-9]{2})?"
)
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


def _date(text: str) -> dt.date | None:
    match = _DATE.fullmatch(text)
    if match is None:
        return None
    year, month, day = match.groups()
    return dt.date(int(year), int(month or 1), int(day or 1))


def _timestamp(text: str) -> dt.datetime | None:
    match = _TIMESTAMP.fullmatch(text)
    if match is None:
        date_only = _date(text) if re.fullmatch(r"[0-9]{4}(-[0-9]{1,2}){0,2}", text) else None
        return None if date_only is None else dt.datetime.combine(date_only, dt.time(), dt.UTC)
    year, month, day, hour, minute, second, fraction, zone = match.groups()
    micros = int((fraction or "0")[:6].ljust(6, "0"))
    wall = dt.datetime(int(year), int(month), int(day), int(hour or 0), int(minute or 0), int(second or 0), micros)
    offset = dt.timedelta(0)
    if zone and zone not in ("Z", "UTC"):
        sign = -1 if zone[0] == "-" else 1
        digits = zone[1:].replace(":", "")
        offset = sign * dt.timedelta(hours=int(digits[:2]), minutes=int(digits[2:]))
    return (wall - offset).replace(tzinfo=dt.UTC)

