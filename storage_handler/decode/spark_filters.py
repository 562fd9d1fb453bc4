"""Spark's data-source filters (:mod:`storage_handler.decode.filters`) -> expression model + SearchArgument.

A scan receives a list of AND-ed filters. Each one becomes a conjunct:

=======================================  =========================================================
``EqualTo(a, v)``                        ``a = v``
``EqualNullSafe(a, v)``                  ``a <=> v`` (``EqualNullSafe(a, None)`` is ``a IS NULL``: Hive's
                                         conversion makes nothing of ``a <=> NULL``, Spark means IS NULL)
``GreaterThan`` / ``GreaterThanOrEqual``  ``a > v`` / ``a >= v``
``LessThan`` / ``LessThanOrEqual``        ``a < v`` / ``a <= v``
``In(a, (v, ...))``                      ``a IN (v, ...)``
``IsNull(a)`` / ``IsNotNull(a)``         ``a IS NULL`` / ``a IS NOT NULL``
``Not(f)``                               ``NOT f``
``And(l, r)`` / ``Or(l, r)``             ``l AND r`` / ``l OR r`` (the JVM side sends them)
``StringStartsWith(a, p)``               ``a LIKE 'p%' AND a >= 'p' AND a < 'q'`` (see below)
``StringEndsWith`` / ``StringContains``  ``a LIKE '%p'`` / ``a LIKE '%p%'`` (never pushed)
=======================================  =========================================================

``StringStartsWith`` is pruned with a range, which is exact for statistics: every string with prefix ``p`` lies in
``[p, q)`` where ``q`` is ``p`` cut after its last character below U+10FFFF, that character incremented (skipping
the surrogate block). Statistics compare strings by UTF-8 bytes, which is code-point order, the same order as
Python's ``str``. The ``LIKE`` stays in the expression so that the expression is equivalent to the filter (the
range is only implied by it). Only plain ``string``/``varchar`` columns get the range.

Values arrive as Python objects; timestamps with a time zone (Spark's ``TIMESTAMP``, delivered in the session
zone) are converted to UTC and made zone-less, matching how zoned Parquet timestamps are read
(:func:`storage_handler.types.hive_to_arrow`). Filters on nested fields (``a.b``), unknown columns, or with values
that have no Hive literal (lists, maps) are reported as unsupported and left out of the expression.

Spark does not re-check a filter a source accepts, and file pruning is inexact: hand every filter back to Spark.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from storage_handler.decode import filters as flt
from storage_handler.decode.schema import Schema, normalize_schema
from storage_handler.decode.to_sarg import Decoded, to_search_argument
from storage_handler.errors import FilterError
from storage_handler.expr.nodes import STRING, Call, Column, Constant, Expr, and_, lit, or_
from storage_handler.types import HiveType

_COMPARISONS: dict[type, str] = {
    flt.EqualTo: "=", flt.EqualNullSafe: "<=>", flt.GreaterThan: ">", flt.GreaterThanOrEqual: ">=",
    flt.LessThan: "<", flt.LessThanOrEqual: "<=",
}
_LIKE_PATTERNS: dict[type, str] = {
    flt.StringStartsWith: "{}%", flt.StringEndsWith: "%{}", flt.StringContains: "%{}%",
}
_MAX_CODE_POINT = 0x10FFFF


@dataclass(frozen=True, slots=True)
class SparkDecoded:
    """The decoded filters: ``decoded`` (SearchArgument, pushed, residual), and which filters did what.

    ``converted``: filters that contribute leaves to the SearchArgument. ``unsupported``: filters that do not
    prune (they are still part of ``decoded.residual`` when they could be expressed at all). ``unexpressed``:
    the unsupported ones that have no expression at all, hence are missing from the SearchArgument (while an
    expressed but unconvertible one is in it as ``YES_NO_NULL``).
    """

    decoded: Decoded
    converted: tuple[flt.Filter, ...]
    unsupported: tuple[flt.Filter, ...]
    unexpressed: tuple[flt.Filter, ...] = ()


class _Unsupported(Exception):
    """The filter cannot be expressed; carries the reason."""


def decode_spark_filters(filters: Iterable[flt.Filter], schema: Schema) -> SparkDecoded:
    """Convert AND-ed Spark filters bound to ``schema`` into a :class:`SparkDecoded`."""
    columns = normalize_schema(schema)
    terms: list[Expr] = []
    expressible: list[tuple[flt.Filter, Expr]] = []
    unsupported: list[flt.Filter] = []
    unexpressed: list[flt.Filter] = []
    for f in filters:
        try:
            expr = filter_to_expr(f, columns)
        except _Unsupported:
            unsupported.append(f)
            unexpressed.append(f)
            continue
        terms.append(expr)
        expressible.append((f, expr))
    decoded = to_search_argument(and_(*terms) if terms else None)
    not_pushed = set(map(id, decoded.unpushed))
    converted: list[flt.Filter] = []
    for f, expr in expressible:
        # a filter is converted when at least one of its conjuncts was fully pushed
        parts = expr.args if isinstance(expr, Call) and expr.function == "and" else (expr,)
        if any(id(p) not in not_pushed for p in parts):
            converted.append(f)
        else:
            unsupported.append(f)
    return SparkDecoded(decoded, tuple(converted), tuple(unsupported), tuple(unexpressed))


def filter_to_expr(f: flt.Filter, columns: Mapping[str, HiveType]) -> Expr:
    """The expression for one Spark filter; raises ``_Unsupported`` when it has none."""
    if isinstance(f, flt.Not):
        return Call("not", (filter_to_expr(f.child, columns),))
    if isinstance(f, (flt.And, flt.Or)):
        junction = and_ if isinstance(f, flt.And) else or_
        return junction(filter_to_expr(f.left, columns), filter_to_expr(f.right, columns))
    if isinstance(f, (flt.IsNull, flt.IsNotNull)):
        return Call("isnull" if isinstance(f, flt.IsNull) else "isnotnull", (_column(f.attribute, columns),))
    column = _column(f.attribute, columns)  # type: ignore[attr-defined]
    if isinstance(f, flt.EqualNullSafe) and f.value is None:
        return Call("isnull", (column,))
    if type(f) in _COMPARISONS:
        return Call(_COMPARISONS[type(f)], (column, _constant(f.value)))  # type: ignore[attr-defined]
    if isinstance(f, flt.In):
        values = f.value if isinstance(f.value, (list, tuple)) else (f.value,)
        if not values:
            raise _Unsupported("IN with no values")
        return Call("in", (column, *(_constant(v) for v in values)))
    if type(f) in _LIKE_PATTERNS:
        value = f.value  # type: ignore[attr-defined]
        if not isinstance(value, str):
            raise _Unsupported(f"{type(f).__name__} with a non-string value")
        like = Call("like", (column, Constant(_LIKE_PATTERNS[type(f)].format(escape_like(value)), STRING)))
        if isinstance(f, flt.StringStartsWith) and column.hive_type.name in ("string", "varchar"):
            return and_(like, *prefix_range(column, value))
        return like
    raise _Unsupported(f"unknown filter {type(f).__name__}")


def _column(attribute: Any, columns: Mapping[str, HiveType]) -> Column:
    if not isinstance(attribute, tuple) or len(attribute) != 1 or not isinstance(attribute[0], str):
        raise _Unsupported(f"nested or malformed column reference {attribute!r}")
    hive_type = columns.get(attribute[0].lower())
    if hive_type is None:
        raise _Unsupported(f"unknown column {attribute[0]!r}")
    return Column(attribute[0].lower(), hive_type)


def _constant(value: Any) -> Constant:
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        value = value.astimezone(dt.UTC).replace(tzinfo=None)
    try:
        return lit(value)
    except FilterError as e:
        raise _Unsupported(str(e)) from e


def escape_like(text: str) -> str:
    """``text`` as a LIKE pattern matching itself: ``\\``, ``%`` and ``_`` escaped with a backslash (Hive's)."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def prefix_range(column: Column, prefix: str) -> tuple[Expr, ...]:
    """``column >= prefix AND column < upper``: the code-point range of the strings starting with ``prefix``."""
    lower = Call(">=", (column, Constant(prefix, STRING)))
    upper = prefix_upper_bound(prefix)
    return (lower,) if upper is None else (lower, Call("<", (column, Constant(upper, STRING))))


def prefix_upper_bound(prefix: str) -> str | None:
    """The least string greater than every string starting with ``prefix``; None if there is none."""
    chars = list(prefix)
    while chars:
        code = ord(chars[-1])
        if code < _MAX_CODE_POINT:
            code += 1
            if 0xD800 <= code <= 0xDFFF:
                code = 0xE000
            chars[-1] = chr(code)
            return "".join(chars)
        chars.pop()
    return None
