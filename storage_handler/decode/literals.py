"""Literal conversions: folding ``CAST(constant AS type)`` and converting a literal to a column's leaf type.

Two different questions, two functions:

* :func:`cast_constant` folds a cast of a constant in the HiveQL parser. It folds only casts whose result is exact
  (``CAST('2024-01-01' AS DATE)``, ``CAST(5 AS BIGINT)``); a lossy or failing cast (``CAST(1.5 AS INT)``,
  ``CAST('abc' AS INT)``) stays a ``cast`` call, which is never pushed.
* :func:`leaf_literal` converts the literal of a comparison to the Python class of the column's
  :class:`~storage_handler.sarg.LeafType`, or returns ``None`` when the literal cannot be represented exactly --
  the caller then emits ``YES_NO_NULL`` (keep every file) instead of risking a wrong prune. The rules, per column:

  - integers (LONG): ints inside the column type's range; integral floats/decimals; strings of digits. Floats
    and strings only below 2**53 in magnitude: Spark and Hive compare an integer column with a double literal as
    doubles, and Hive with a string literal too, and from 2**53 on several longs equal the same double.
  - ``double`` (FLOAT): ints exactly representable as a double; floats other than NaN; decimals and numeric
    strings rounded to the nearest double (Spark and Hive compare a double column with a decimal literal in
    double precision, so the nearest double is exactly what they compare with).
  - ``float`` (FLOAT): only values exactly representable in 32 bits (engines round the literal to float or widen
    the column; the two agree only on exact values).
  - ``decimal(p,s)`` (DECIMAL): ints and decimals that fit ``(p,s)`` exactly; floats and numeric strings only when
    ``p <= 15`` (Hive compares both as doubles, which hold every value of such a column exactly) and they fit.
  - ``string``/``varchar`` (STRING): strings only (a number compared with a string column is compared as a
    double by Hive: ``'05' = 5`` is true). ``char(n)`` is not pushed for values: its pad semantics differ.
  - ``date`` (DATE): dates; midnight timestamps; ``YYYY-MM-DD`` strings.
  - ``timestamp`` (TIMESTAMP): zone-less datetimes (and :class:`~storage_handler.sarg.literals.NanoTimestamp`s);
    dates (midnight); ``YYYY-MM-DD[ HH:MM:SS[.fffffffff]]`` strings (nine fraction digits kept exactly).
  - ``boolean`` (BOOLEAN): booleans only.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from decimal import Decimal

from storage_handler.errors import FilterError
from storage_handler.expr.nodes import Constant, ConstantValue, check_constant, fit_decimal, is_float32
from storage_handler.sarg.literals import NanoTimestamp
from storage_handler.types import HiveType

#: 2**53: from here on a double does not hold every integer, so engines comparing an integer column with a double
#: (a float literal) or, in Hive, with a string literal, find neighbouring values equal to it
_DOUBLE_EXACT = 2**53
_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?\Z")
_INTEGER = re.compile(r"[+-]?\d{1,40}\Z")
_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})\Z")
_TIMESTAMP = re.compile(r"(\d{4})-(\d{2})-(\d{2})(?:[ T](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?)?\Z")
_JAVA_DOUBLE_WORDS = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf, "+Infinity": math.inf}


# ---------------------------------------------------------------- text parsing (strict)
def parse_number(text: str) -> Decimal | None:
    return Decimal(text) if _NUMBER.match(text) else None


def parse_date(text: str) -> dt.date | None:
    m = _DATE.match(text)
    if not m:
        return None
    try:
        return dt.date(int(m[1]), int(m[2]), int(m[3]))
    except ValueError:
        return None


def parse_timestamp(text: str) -> dt.datetime | NanoTimestamp | None:
    """A zone-less datetime (a NanoTimestamp when the fraction has non-zero digits beyond microseconds), or None
    when malformed."""
    m = _TIMESTAMP.match(text)
    if not m:
        return None
    fraction = (m[7] or "").ljust(9, "0")
    try:
        value = dt.datetime(int(m[1]), int(m[2]), int(m[3]), int(m[4] or 0), int(m[5] or 0), int(m[6] or 0),
                            int(fraction[:6]))
    except ValueError:
        return None
    return NanoTimestamp(value, int(fraction[6:])) if fraction[6:] != "000" else value


# ---------------------------------------------------------------- exact numeric helpers
def _integral(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value) if math.isfinite(value) and value.is_integer() else None
    if isinstance(value, Decimal):
        if not value.is_finite() or value != value.to_integral_value():
            return None
        if value.adjusted() > 40:  # far beyond any Hive integer; avoid materializing huge ints
            return None
        return int(value)
    return None


def _exact_double(value: int | Decimal) -> float | None:
    try:
        result = float(value)
    except OverflowError:
        return None
    if not math.isfinite(result):
        return None
    return result if Decimal(result) == Decimal(value) else None


def _nearest_double(value: Decimal) -> float | None:
    result = float(value)
    return result if math.isfinite(result) else None


# ---------------------------------------------------------------- casts of constants (parser)
def cast_constant(const: Constant, target: HiveType) -> Constant | None:
    """``CAST(const AS target)`` as a constant when the cast is exact, else None (the cast stays a call)."""
    value = const.value
    if value is None:
        return Constant(None, target)
    result: ConstantValue | None = None
    name = target.name
    if target.is_integer:
        result = _integral(value) if not isinstance(value, str) else (
            int(value) if _INTEGER.match(value) else None)
        if result is not None:
            lo, hi = target.integer_range
            result = result if lo <= result <= hi else None
    elif name in ("double", "float"):
        if isinstance(value, float):
            result = value
        elif isinstance(value, (int, Decimal)) and not isinstance(value, bool):
            result = _exact_double(value)
        elif isinstance(value, str):
            number = parse_number(value)
            result = _JAVA_DOUBLE_WORDS.get(value) if number is None else _exact_double(number)
        if name == "float" and result is not None and not is_float32(result):  # type: ignore[arg-type]
            result = None
    elif name == "decimal":
        exact: Decimal | None = None
        if isinstance(value, (int, Decimal)) and not isinstance(value, bool):
            exact = Decimal(value)
        elif isinstance(value, float) and math.isfinite(value):
            exact = Decimal(repr(value))
        elif isinstance(value, str):
            exact = parse_number(value)
        result = None if exact is None else fit_decimal(exact, target.precision or 10, target.scale or 0)
    elif target.is_string:
        if isinstance(value, str) and (target.length is None or len(value) <= target.length):
            result = value
    elif name == "date":
        result = _to_date(value)
    elif name == "timestamp":
        result = _to_timestamp(value)
    elif name == "boolean":
        result = value if isinstance(value, bool) else None
    elif name == "binary":
        result = value if isinstance(value, bytes) else value.encode("utf-8") if isinstance(value, str) else None
    if result is None:
        return None
    try:
        return Constant(check_constant(result, target), target)
    except FilterError:
        return None


def _to_date(value: object) -> dt.date | None:
    if isinstance(value, NanoTimestamp):
        return None  # never midnight
    if isinstance(value, dt.datetime):
        return value.date() if value.tzinfo is None and value.time() == dt.time() else None
    if isinstance(value, dt.date):
        return value
    if isinstance(value, str):
        return parse_date(value)
    return None


def _to_timestamp(value: object) -> dt.datetime | NanoTimestamp | None:
    if isinstance(value, NanoTimestamp):
        return value
    if isinstance(value, dt.datetime):
        return value if value.tzinfo is None else None
    if isinstance(value, dt.date):
        return dt.datetime(value.year, value.month, value.day)
    if isinstance(value, str):
        return parse_timestamp(value)
    return None


# ---------------------------------------------------------------- leaf literals (SearchArgument)
def leaf_literal(value: ConstantValue, column_type: HiveType) -> object | None:
    """``value`` as the literal of a leaf on a column of ``column_type``, or None if not exactly representable."""
    if value is None:
        return None
    name = column_type.name
    if column_type.is_integer:
        number = value if not isinstance(value, str) else (int(value) if _INTEGER.match(value) else None)
        if isinstance(value, (str, float)) and isinstance(number, (int, float)) and abs(number) >= _DOUBLE_EXACT:
            return None  # compared as doubles (see the module docstring), where neighbouring longs are equal
        result = _integral(number)
        if result is None:
            return None
        lo, hi = column_type.integer_range
        return result if lo <= result <= hi else None
    if name in ("double", "float"):
        return _float_literal(value, float32=name == "float")
    if name == "decimal":
        return _decimal_literal(value, column_type.precision or 10, column_type.scale or 0)
    if name in ("string", "varchar"):
        return value if isinstance(value, str) else None
    if name == "date":
        return _to_date(value)
    if name == "timestamp":
        return _to_timestamp(value)
    if name == "boolean":
        return value if isinstance(value, bool) else None
    return None  # char (pad semantics), binary, complex types


def _float_literal(value: object, *, float32: bool) -> float | None:
    result: float | None = None
    if isinstance(value, float):
        result = None if math.isnan(value) else value
    elif isinstance(value, int) and not isinstance(value, bool):
        result = _exact_double(value)
    elif isinstance(value, (Decimal, str)):
        number = value if isinstance(value, Decimal) else parse_number(value)
        if number is not None and number.is_finite():
            result = _exact_double(number) if float32 else _nearest_double(number)
    if result is not None and float32 and not is_float32(result):
        return None
    return result


def _decimal_literal(value: object, precision: int, scale: int) -> Decimal | None:
    number: Decimal | None = None
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, Decimal)):
        number = Decimal(value)
    elif isinstance(value, str):
        if precision > 15:
            return None  # Hive compares a decimal column with a string as doubles (see the module docstring)
        number = parse_number(value)
    elif isinstance(value, float):
        if precision > 15 or not math.isfinite(value):
            return None
        number = Decimal(repr(value))
    if number is None:
        return None
    return fit_decimal(number, precision, scale)
