"""Literal conversion: place a SearchArgument literal inside the value domain of a column.

Pruning compares a literal with per-file bounds. The two often live in different domains (``int`` column vs
``3_000_000_000``, ``decimal(10,2)`` vs ``12.345``, ``date`` vs a timestamp, ``double`` vs a decimal that no double
represents). Instead of casting the literal -- which rounds, overflows or wraps and then prunes wrongly -- we locate it
in the column's ordered domain once, at bind time:

* ``floor``: the largest domain value <= the literal (``None`` if the literal is below every domain value);
* ``ceil``: the smallest domain value >= the literal (``None`` if it is above every domain value);
* ``exact``: the literal *is* a domain value (``floor == ceil``).

Every comparison of a bound ``b`` with the literal ``v`` is then exact using only domain values:
``b < v`` <=> ``b < floor`` if exact else ``b <= floor``; ``b > v`` <=> ``b > ceil`` if exact else ``b >= ceil``;
``b <= v`` <=> ``b <= floor``; ``b >= v`` <=> ``b >= ceil``; ``b == v`` <=> exact and ``b == floor``
(a missing floor/ceil makes the comparison false). Out-of-range literals therefore fold to the right constant.

A literal that has no unambiguous meaning for the column (a string against a number, a NaN, an aware timestamp,
anything against ``char``/``binary``/complex types) raises :class:`UnconvertibleLiteral`; the binder turns the leaf into
``YES_NO_NULL`` -- never a wrong prune.
"""

from __future__ import annotations

import datetime as dt
import math
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction

import pyarrow as pa

from storage_handler.errors import FilterError
from storage_handler.types import EXACT_DECIMALS, HiveType, hive_to_arrow

_DATE_TEXT = re.compile(r"\d{4}-\d{2}-\d{2}")
_MAX_DOUBLE = sys.float_info.max

#: Hive types the evaluator can compare (the index bounds exactly these). ``char`` is left out on purpose: Hive
#: compares ``char`` values ignoring trailing pad spaces, which bytewise bounds cannot reproduce.
COMPARABLE_TYPES = frozenset(
    {"tinyint", "smallint", "int", "bigint", "float", "double", "decimal", "string", "varchar", "date",
     "timestamp", "boolean"}
)


class UnconvertibleLiteral(FilterError):
    """The literal cannot be compared exactly with the column; the leaf must stay unknown (``YES_NO_NULL``)."""


@dataclass(frozen=True, slots=True)
class DomainPoint:
    """Where a literal falls in a column's ordered domain (see the module docstring)."""

    floor: object | None
    ceil: object | None
    exact: bool

    @staticmethod
    def at(value: object) -> DomainPoint:
        return DomainPoint(value, value, True)

    @staticmethod
    def between(floor: object | None, ceil: object | None) -> DomainPoint:
        return DomainPoint(floor, ceil, False)


def domain_arrow_type(hive_type: HiveType) -> pa.DataType:
    """Arrow type bounds are compared in: the column's own type, except ``float`` bounds are widened to double
    (exactly), so one double domain serves both float widths."""
    if hive_type.name == "float":
        return pa.float64()
    return hive_to_arrow(hive_type)


def parse_date_text(text: str) -> dt.date:
    """Strict ``YYYY-MM-DD``: the only text form whose string order equals date order in every engine."""
    if not _DATE_TEXT.fullmatch(text):
        raise UnconvertibleLiteral(f"{text!r} is not a date in the form YYYY-MM-DD")
    try:
        return dt.date.fromisoformat(text)
    except ValueError as exc:
        raise UnconvertibleLiteral(f"{text!r} is not a valid calendar date") from exc


def convert_literal(value: object, hive_type: HiveType) -> DomainPoint:
    """Locate ``value`` (a SearchArgument literal) in the domain of a column of ``hive_type``."""
    name = hive_type.name
    if name not in COMPARABLE_TYPES:
        raise UnconvertibleLiteral(f"columns of type {hive_type} are not compared with literals")
    if value is None:
        raise UnconvertibleLiteral("a NULL literal compares as unknown")
    if hive_type.is_integer:
        lo, hi = hive_type.integer_range
        return _integer_point(_exact_number(value), lo, hi, lambda k: k)
    if name == "decimal":
        precision, scale = hive_type.precision or 10, hive_type.scale or 0
        limit = 10**precision - 1
        number = _exact_number(value)
        scaled = number if isinstance(number, float) else number * 10**scale
        return _integer_point(scaled, -limit, limit, lambda k: Decimal(k).scaleb(-scale, EXACT_DECIMALS))
    if name in ("float", "double"):
        return _double_point(_exact_number(value))
    if name in ("string", "varchar"):
        if not isinstance(value, str):
            raise UnconvertibleLiteral(f"{type(value).__name__} literal {value!r} against a {hive_type} column")
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise UnconvertibleLiteral(f"{value!r} is not valid Unicode text") from exc
        return DomainPoint.at(value)
    if name == "boolean":
        if not isinstance(value, bool):
            raise UnconvertibleLiteral(f"{type(value).__name__} literal {value!r} against a boolean column")
        return DomainPoint.at(value)
    if name == "date":
        return _date_point(value)
    return _timestamp_point(value)  # timestamp


def _exact_number(value: object) -> Fraction | float:
    """An exact rational, or ``+-inf`` as a float; NaN and non-numbers are refused."""
    if isinstance(value, bool) or not isinstance(value, (int, float, Decimal)):
        raise UnconvertibleLiteral(f"{type(value).__name__} literal {value!r} against a numeric column")
    if isinstance(value, float):
        if math.isnan(value):
            raise UnconvertibleLiteral("NaN literals are not used for pruning (engines order NaN differently)")
        return value if math.isinf(value) else Fraction(value)
    if isinstance(value, Decimal):
        if value.is_nan():
            raise UnconvertibleLiteral("NaN literals are not used for pruning (engines order NaN differently)")
        return math.copysign(math.inf, 1 if value > 0 else -1) if value.is_infinite() else Fraction(value)
    return Fraction(value)


def _integer_point(
    number: Fraction | float, lo: int, hi: int, to_value: Callable[[int], object]
) -> DomainPoint:
    """Domain = the integers ``lo..hi`` (a decimal's unscaled values), mapped to column values by ``to_value``."""
    if number > hi:
        return DomainPoint.between(to_value(hi), None)
    if number < lo:
        return DomainPoint.between(None, to_value(lo))
    assert isinstance(number, Fraction)  # +-inf was handled above
    floor, ceil = math.floor(number), math.ceil(number)
    if floor == ceil:
        return DomainPoint.at(to_value(floor))
    return DomainPoint.between(to_value(floor), to_value(ceil))


def _double_point(number: Fraction | float) -> DomainPoint:
    """Domain = all doubles including +-inf (float columns' bounds are widened to double exactly)."""
    if isinstance(number, float):  # +-inf is itself a double
        return DomainPoint.at(number)
    try:
        nearest = float(number)  # correctly rounded
    except OverflowError:
        if number > 0:
            return DomainPoint.between(_MAX_DOUBLE, math.inf)
        return DomainPoint.between(-math.inf, -_MAX_DOUBLE)
    if math.isinf(nearest):  # rounds to infinity without overflowing
        return DomainPoint.between(_MAX_DOUBLE, math.inf) if nearest > 0 else DomainPoint.between(-math.inf, -_MAX_DOUBLE)
    exact = Fraction(nearest)
    if exact == number:
        return DomainPoint.at(nearest + 0.0)  # normalise -0.0: it equals +0.0 anyway
    if exact < number:
        return DomainPoint.between(nearest, math.nextafter(nearest, math.inf))
    return DomainPoint.between(math.nextafter(nearest, -math.inf), nearest)


#: days a SearchArgument literal cannot tell apart from another: Hive's builder keeps one leaf per
#: ``java.sql.Date`` / ``Timestamp`` equality, where each day of the Julian-Gregorian gap (1582-10-05..14)
#: equals the day ten days later, so a leaf literal in these twenty days may stand for either of two
#: proleptic days (``dt = '1582-10-05' OR dt = '1582-10-15'`` is one leaf)
SWITCH_DAYS = (dt.date(1582, 10, 5), dt.date(1582, 10, 25))


def _outside_switch(day: dt.date) -> dt.date:
    if SWITCH_DAYS[0] <= day < SWITCH_DAYS[1]:
        raise UnconvertibleLiteral(f"{day} may stand for another day: Java's calendar merges 1582-10-05..14 with "
                                   "the ten days after")
    return day


def _date_point(value: object) -> DomainPoint:
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            raise UnconvertibleLiteral(f"timestamp literal {value} has a time zone; Hive timestamps have none")
        day = _outside_switch(value.date())
        if value.time() == dt.time(0):
            return DomainPoint.at(day)
        try:
            return DomainPoint.between(day, day + dt.timedelta(days=1))
        except OverflowError:
            return DomainPoint.between(day, None)
    if isinstance(value, dt.date):
        return DomainPoint.at(_outside_switch(value))
    if isinstance(value, str):
        return DomainPoint.at(_outside_switch(parse_date_text(value)))
    raise UnconvertibleLiteral(f"{type(value).__name__} literal {value!r} against a date column")


def _timestamp_point(value: object) -> DomainPoint:
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            raise UnconvertibleLiteral(f"timestamp literal {value} has a time zone; Hive timestamps have none")
        _outside_switch(value.date())
        return DomainPoint.at(value)
    if isinstance(value, dt.date):
        _outside_switch(value)
        return DomainPoint.at(dt.datetime(value.year, value.month, value.day))
    # Text against a timestamp is refused: engines disagree on whether to compare it as text or as a timestamp.
    raise UnconvertibleLiteral(f"{type(value).__name__} literal {value!r} against a timestamp column")


def to_arrow_scalar(value: object | None, hive_type: HiveType) -> pa.Scalar | None:
    """A domain value as an Arrow scalar of the column's comparison type (``None`` stays ``None``)."""
    if value is None:
        return None
    return pa.scalar(value, type=domain_arrow_type(hive_type))
