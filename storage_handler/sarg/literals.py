"""Literal classes per leaf type, Hive-exact printing, and Java-equality keys.

Each leaf type takes exactly one Python class, mirroring the Java class Hive's ``PredicateLeafImpl`` insists on:

============  ============================  =========================================
type          Python class                  Java class in Hive (storage-api 2.8.1)
============  ============================  =========================================
LONG          int (not bool), 64-bit        java.lang.Long
FLOAT         float                         java.lang.Double
STRING        str                           java.lang.String
DATE          datetime.date (not datetime)  java.sql.Date
DECIMAL       decimal.Decimal               HiveDecimalWritable
TIMESTAMP     datetime.datetime (naive),    java.sql.Timestamp
              or NanoTimestamp
BOOLEAN       bool                          java.lang.Boolean
============  ============================  =========================================

``java.sql.Timestamp`` keeps nanoseconds and a ``datetime`` only microseconds: a timestamp whose fraction has more
than six digits is a :class:`NanoTimestamp` (used for nothing else, so every other timestamp stays a plain
``datetime``).

Values Hive cannot hold exactly are refused rather than silently changed: ints outside a Java long, and decimals
with more than 38 digits (Hive would round ``1E-39`` to ``0``, which turns ``x > 1E-39`` into a different filter).
Printing follows the Java ``toString`` of the Hive class, including its calendar: ``java.sql.Date`` moves a date in
the 1582-10-05..14 Julian/Gregorian gap ten days forward, so we print (and compare) such dates the same way. The
Java side is assumed to run in UTC, as the conformance oracle does.
"""

from __future__ import annotations

import datetime as _dt
import decimal
import math
import struct
from dataclasses import dataclass
from typing import Any

from storage_handler.errors import FilterError
from storage_handler.sarg.jdouble import java_double_to_string

LONG_MIN = -(2**63)
LONG_MAX = 2**63 - 1
#: Hive's ``HiveDecimal.MAX_PRECISION`` / ``MAX_SCALE``.
DECIMAL_MAX_DIGITS = 38

LITERAL_CLASSES: dict[str, type] = {
    "LONG": int,
    "FLOAT": float,
    "STRING": str,
    "DATE": _dt.date,
    "DECIMAL": decimal.Decimal,
    "TIMESTAMP": _dt.datetime,
    "BOOLEAN": bool,
}



@dataclass(frozen=True, slots=True, order=True)
class NanoTimestamp:
    """A zone-less timestamp with nanoseconds beyond the microsecond: ``micros`` + ``nanos`` (1..999) ns.

    Hive's filters carry ``java.sql.Timestamp`` literals with nine fraction digits (``10:11:12.123456789``); a
    ``datetime`` would round them, changing the filter. Only leaves print and compare these exactly: file
    pruning compares literals in microseconds, so it treats a leaf holding one as unknown (keeps every file).
    """

    micros: _dt.datetime
    nanos: int

    def __post_init__(self) -> None:
        if type(self.micros) is not _dt.datetime or self.micros.tzinfo is not None:
            raise FilterError(f"NanoTimestamp needs a naive datetime, got {self.micros!r}")
        if type(self.nanos) is not int or not 1 <= self.nanos <= 999:
            raise FilterError(
                f"NanoTimestamp.nanos must be 1..999 (the nanoseconds beyond the microsecond), got {self.nanos!r}"
            )

    @property
    def nanosecond(self) -> int:
        """The whole fraction of the second in nanoseconds (0..999999999)."""
        return self.micros.microsecond * 1000 + self.nanos

    def isoformat(self, sep: str = "T") -> str:
        """``YYYY-MM-DD<sep>HH:MM:SS.fffffffff`` (all nine digits)."""
        return f"{self.micros.isoformat(sep, timespec='seconds')}.{self.nanosecond:09d}"

    def __str__(self) -> str:
        return self.isoformat(" ")


_GAP_FIRST = _dt.date(1582, 10, 5)
_GAP_LAST = _dt.date(1582, 10, 14)
_GAP_SHIFT = _dt.timedelta(days=10)


def coerce_literal(type_name: str, value: Any) -> Any:
    """Turn a subclass of the expected class (an ``IntEnum``, a ``numpy.float64``) into the plain class.

    Only lossless conversions: DATE and TIMESTAMP are left alone (a ``datetime`` is a ``date`` subclass that must
    be refused for DATE, and ``pandas.Timestamp`` may carry nanoseconds).
    """
    cls = LITERAL_CLASSES[type_name]
    if type(value) is cls or type_name in ("DATE", "TIMESTAMP", "BOOLEAN"):
        return value
    if isinstance(value, cls) and not isinstance(value, bool):
        return cls(value)
    return value


def check_literal(type_name: str, value: Any, where: str) -> None:
    """Refuse a literal of the wrong class or one Hive cannot represent exactly; ``where`` names the leaf."""
    cls = LITERAL_CLASSES[type_name]
    if type(value) is not cls and not (type_name == "TIMESTAMP" and type(value) is NanoTimestamp):
        hint = {
            "LONG": "int (not bool)",
            "FLOAT": "float (convert ints with float())",
            "DATE": "datetime.date (not datetime.datetime)",
            "TIMESTAMP": "a naive datetime.datetime (or a NanoTimestamp)",
        }.get(type_name, cls.__qualname__)
        raise FilterError(
            f"Wrong literal class {type(value).__qualname__} for the {where}: {value!r}; "
            f"{type_name} literals must be {hint}"
        )
    # The class matches type_name now; isinstance only narrows the type for the checks below.
    if type_name == "LONG" and isinstance(value, int) and not LONG_MIN <= value <= LONG_MAX:
        raise FilterError(
            f"Literal {value} for the {where} does not fit a 64-bit LONG; compare as DECIMAL instead"
        )
    if isinstance(value, decimal.Decimal):
        _check_decimal(value, where)
    elif isinstance(value, _dt.datetime) and value.tzinfo is not None:
        raise FilterError(
            f"Timestamp literal {value!r} for the {where} has a time zone; Hive timestamps are zone-less, "
            "convert it to a naive local datetime first"
        )


def _stripped_decimal(value: decimal.Decimal) -> tuple[int, str, int]:
    """(sign, digits, exponent) with trailing zeros removed; context-free (``normalize`` would round to 28)."""
    sign, digit_tuple, exponent = value.as_tuple()
    assert isinstance(exponent, int)
    digits = "".join(map(str, digit_tuple)).lstrip("0")
    if not digits:
        return 0, "", 0
    stripped = digits.rstrip("0")
    return sign, stripped, exponent + len(digits) - len(stripped)


def _check_decimal(value: decimal.Decimal, where: str) -> None:
    if not value.is_finite():
        raise FilterError(
            f"Decimal literal {value} for the {where} is not a finite number; Hive has no such decimal"
        )
    _, digits, exponent = _stripped_decimal(value)
    scale = max(0, -exponent)
    integer_digits = max(0, len(digits) + exponent)
    if scale > DECIMAL_MAX_DIGITS or integer_digits + scale > DECIMAL_MAX_DIGITS:
        raise FilterError(
            f"Decimal literal {value} for the {where} needs more than {DECIMAL_MAX_DIGITS} digits; Hive would "
            "round it (changing the filter), so round it yourself or compare as FLOAT"
        )


def hive_decimal_string(value: decimal.Decimal) -> str:
    """``HiveDecimal.toString()``: plain notation, trailing zeros dropped, no negative zero (12.50 -> 12.5)."""
    sign, digits, exponent = _stripped_decimal(value)
    if not digits:
        return "0"
    if exponent >= 0:
        text = digits + "0" * exponent
    elif len(digits) > -exponent:
        text = digits[:exponent] + "." + digits[exponent:]
    else:
        text = "0." + "0" * (-exponent - len(digits)) + digits
    return "-" + text if sign else text


def java_date(value: _dt.date) -> _dt.date:
    """The date ``java.sql.Date`` ends up holding for these year/month/day fields (the 1582 gap moves on)."""
    return value + _GAP_SHIFT if _GAP_FIRST <= value <= _GAP_LAST else value


def java_date_string(value: _dt.date) -> str:
    """``java.sql.Date.toString()``: ``yyyy-mm-dd``."""
    return java_date(value).isoformat()


def java_timestamp_string(value: _dt.datetime | NanoTimestamp) -> str:
    """``java.sql.Timestamp.toString()``: ``yyyy-mm-dd hh:mm:ss.f`` with trailing zeros of the nanos dropped."""
    stamp = value.micros if isinstance(value, NanoTimestamp) else value
    fraction = value.nanosecond if isinstance(value, NanoTimestamp) else value.microsecond * 1000
    day = java_date(stamp.date())
    nanos = str(fraction).rjust(9, "0").rstrip("0") or "0"
    return f"{day.isoformat()} {stamp.hour:02d}:{stamp.minute:02d}:{stamp.second:02d}.{nanos}"


def format_literal(type_name: str, value: Any) -> str:
    """The Java ``toString`` of the literal Hive would hold for this value."""
    if type_name == "FLOAT":
        return java_double_to_string(value)
    if type_name == "DECIMAL":
        return hive_decimal_string(value)
    if type_name == "TIMESTAMP":
        return java_timestamp_string(value)
    if type_name == "DATE":
        return java_date_string(value)
    if type_name == "BOOLEAN":
        return "true" if value else "false"
    return str(value)


def literal_key(type_name: str, value: Any) -> Any:
    """A hashable key equal exactly when the Java literals are ``equals`` (how Hive de-duplicates leaves)."""
    if type_name == "FLOAT":
        if math.isnan(value):
            return "NaN"  # Double.equals: every NaN equals every NaN
        return struct.pack(">d", value)  # ... and -0.0 differs from 0.0
    if type_name == "DECIMAL":
        return hive_decimal_string(value)
    if type_name == "DATE":
        return java_date(value)
    if type_name == "TIMESTAMP":
        if isinstance(value, NanoTimestamp):
            return (java_date(value.micros.date()), value.micros.time(), value.nanos)
        return (java_date(value.date()), value.time(), 0)
    if type_name == "STRING":
        return java_string_key(value)
    return value


def java_string_key(value: str) -> bytes:
    """Java compares strings as UTF-16 units: a surrogate pair spelled as two Python code points equals the
    character it encodes."""
    return value.encode("utf-16-le", "surrogatepass")
