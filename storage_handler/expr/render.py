"""Render an expression as HiveQL text (the ``hive.io.filter.text`` job property, ``hsh explain`` output).

The text is valid HiveQL and parses back to the same expression with
:func:`storage_handler.decode.hiveql.parse_filter`:

* identifiers are back-ticked (a back-tick inside is doubled); strings are single-quoted with ``\\`` and ``'``
  escaped by a backslash and control characters written as ``\\uXXXX``;
* literals are typed: ``5`` (int), ``5L`` / ``5S`` / ``5Y`` (bigint, smallint, tinyint; negative ones as
  ``CAST(-5 AS BIGINT)``), ``1.5E0`` (double; NaN/Infinity via ``CAST('NaN' AS DOUBLE)``), ``CAST(1.5E0 AS FLOAT)``,
  ``CAST('12.50' AS DECIMAL(4,2))``, ``DATE '2024-01-01'``, ``TIMESTAMP '2024-01-02 10:11:12.5'``,
  ``unhex('0A')`` (binary), ``TRUE``, ``NULL`` / ``CAST(NULL AS INT)``;
* operands are parenthesized where precedence needs it; ``NOT`` always parenthesizes a compound operand.
"""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal

from storage_handler.errors import FilterError
from storage_handler.expr.nodes import ARITHMETIC, COMPARISONS, OPAQUE, Call, Column, Constant, Expr
from storage_handler.sarg.literals import NanoTimestamp
from storage_handler.types import parse_hive_type

_ATOM, _UNARY, _ARITH, _PREDICATE, _NOT, _AND, _OR = 9, 8, 7, 4, 3, 2, 1


def to_hiveql(expr: Expr) -> str:
    """HiveQL text for ``expr``."""
    try:
        return _render(expr)[0]
    except RecursionError as e:
        raise FilterError("the expression is nested too deeply to render as HiveQL") from e


def quote_identifier(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def quote_string(text: str) -> str:
    out = ["'"]
    for ch in text:
        if ch in "\\'":
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04X}")
        else:
            out.append(ch)
    out.append("'")
    return "".join(out)


def _wrap(expr: Expr, min_level: int) -> str:
    text, level = _render(expr)
    return text if level >= min_level else f"({text})"


def _render(expr: Expr) -> tuple[str, int]:
    if isinstance(expr, Column):
        return quote_identifier(expr.name), _ATOM
    if isinstance(expr, Constant):
        text = render_constant(expr)
        return text, (_UNARY if text.startswith("-") else _ATOM)
    return _render_call(expr)


def _render_call(expr: Call) -> tuple[str, int]:
    fn, args = expr.function, expr.args
    if fn in ("and", "or"):
        level = _AND if fn == "and" else _OR
        return f" {fn.upper()} ".join(_wrap(a, level + 1) for a in args), level
    if fn == "not":
        return f"NOT {_wrap(args[0], _ATOM)}", _NOT
    if fn in COMPARISONS or fn in ("like", "rlike"):
        op = fn.upper()
        return f"{_wrap(args[0], _PREDICATE + 1)} {op} {_wrap(args[1], _PREDICATE + 1)}", _PREDICATE
    if fn in ("isnull", "isnotnull"):
        suffix = "IS NULL" if fn == "isnull" else "IS NOT NULL"
        return f"{_wrap(args[0], _PREDICATE + 1)} {suffix}", _PREDICATE
    if fn == "in":
        values = ", ".join(to_hiveql(a) for a in args[1:])
        return f"{_wrap(args[0], _PREDICATE + 1)} IN ({values})", _PREDICATE
    if fn == "between":
        invert, value, low, high = args
        assert isinstance(invert, Constant)
        keyword = "NOT BETWEEN" if invert.value else "BETWEEN"
        lo, hi = _wrap(low, _PREDICATE + 1), _wrap(high, _PREDICATE + 1)
        return f"{_wrap(value, _PREDICATE + 1)} {keyword} {lo} AND {hi}", _PREDICATE
    if fn in ARITHMETIC:
        op = fn.upper() if fn == "div" else fn
        return f"{_wrap(args[0], _ATOM)} {op} {_wrap(args[1], _ATOM)}", _ARITH
    if fn == "negative":
        return f"-({to_hiveql(args[0])})", _UNARY
    if fn == "~":
        return f"~({to_hiveql(args[0])})", _UNARY
    if fn == "cast":
        target = args[1]
        assert isinstance(target, Constant) and isinstance(target.value, str)
        return f"CAST({to_hiveql(args[0])} AS {_type_text(target.value)})", _ATOM
    if fn == OPAQUE:
        text = args[0]
        assert isinstance(text, Constant) and isinstance(text.value, str)
        return f"({text.value})", _ATOM
    return f"{fn}({', '.join(to_hiveql(a) for a in args)})", _ATOM


def _type_text(text: str) -> str:
    try:
        return str(parse_hive_type(text)).upper()
    except ValueError as e:
        raise FilterError(f"cannot render CAST to {text!r}: not a Hive type ({e})") from e


def render_constant(const: Constant) -> str:
    """HiveQL literal text for a constant."""
    value, hive_type = const.value, const.hive_type
    if value is None:
        return "NULL" if hive_type is None else f"CAST(NULL AS {str(hive_type).upper()})"
    assert hive_type is not None
    name = hive_type.name
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        if name == "int":
            return str(value)
        if value >= 0:
            return f"{value}{ {'bigint': 'L', 'smallint': 'S', 'tinyint': 'Y'}[name] }"
        return f"CAST({value} AS {name.upper()})"
    if isinstance(value, float):
        text = _double_text(value)
        return text if name == "double" else f"CAST({text} AS FLOAT)"
    if isinstance(value, Decimal):
        return f"CAST('{value}' AS {str(hive_type).upper()})"
    if isinstance(value, str):
        return quote_string(value) if name == "string" else f"CAST({quote_string(value)} AS {str(hive_type).upper()})"
    if isinstance(value, bytes):
        return f"unhex('{value.hex().upper()}')"
    if isinstance(value, (dt.datetime, NanoTimestamp)):
        return f"TIMESTAMP '{format_timestamp(value)}'"
    if isinstance(value, dt.date):
        return f"DATE '{value.isoformat()}'"
    raise FilterError(f"cannot render constant {value!r} as HiveQL")


def _double_text(value: float) -> str:
    if math.isnan(value):
        return "CAST('NaN' AS DOUBLE)"
    if math.isinf(value):
        return "CAST('Infinity' AS DOUBLE)" if value > 0 else "CAST('-Infinity' AS DOUBLE)"
    text = repr(value).upper()
    return text if "E" in text else text + "E0"


def format_timestamp(value: dt.datetime | NanoTimestamp) -> str:
    """``YYYY-MM-DD HH:MM:SS[.f]`` with trailing zeros of the fraction dropped (Hive's ``Timestamp.toString``)."""
    if isinstance(value, NanoTimestamp):
        return f"{format_timestamp(value.micros).split('.')[0]}.{value.nanosecond:09d}".rstrip("0")
    text = value.strftime("%H:%M:%S")
    date_text = f"{value.year:04d}-{value.month:02d}-{value.day:02d}"
    if value.microsecond:
        text += "." + f"{value.microsecond:06d}".rstrip("0")
    return f"{date_text} {text}"
