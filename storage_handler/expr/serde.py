"""The handler's own JSON form of an expression, for the ``hsh.filter.expr`` job property.

(Older releases wrote it under Hive's ``hive.io.filter.expr.serialized``, where Hive keeps Kryo bytes; it is still
read there: see :mod:`storage_handler.decode.serialized`.)

Format (JSON, UTF-8), version 1::

    {"format": "hsh-expr", "version": 1, "expr": NODE}

    NODE  := {"column": NAME, "type": HIVE_TYPE}
           | {"constant": VALUE, "type": HIVE_TYPE | null}      (null type only for a NULL of unknown type)
           | {"call": FUNCTION, "args": [NODE, ...]}

``HIVE_TYPE`` is Hive's type text (``int``, ``decimal(10,2)``, ``varchar(5)``, ``array<int>``...). ``VALUE`` is
``null`` for NULL, otherwise encoded by the constant's type so the round trip is lossless:

============================  ============================================================================
boolean                       JSON ``true`` / ``false``
tinyint, smallint, int,       JSON integer
bigint
float, double                 string: Python ``repr`` (``"1.5"``, ``"-0.0"``, ``"nan"``, ``"inf"``, ``"-inf"``)
decimal(p,s)                  string: the decimal with exactly ``s`` fraction digits (``"12.50"``)
string, varchar, char         JSON string
date                          string ``YYYY-MM-DD``
timestamp                     string ``YYYY-MM-DDTHH:MM:SS.ffffff`` (zone-less, microseconds), or nine fraction
                              digits for a timestamp with nanoseconds (a ``NanoTimestamp``)
binary                        string: standard base64
============================  ============================================================================

Anything else -- not JSON, another ``format``, an unknown ``version``, unknown keys, a value that does not match
its type -- raises :class:`~storage_handler.errors.FilterError`: a corrupt filter never silently means "no filter".
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import json
import re
from decimal import Decimal
from typing import Any

from storage_handler.errors import FilterError, SchemaError
from storage_handler.expr.nodes import Call, Column, Constant, Expr
from storage_handler.sarg.literals import NanoTimestamp
from storage_handler.types import HiveType, parse_hive_type

FORMAT = "hsh-expr"
VERSION = 1
PROPERTY = "hsh.filter.expr"

_FLOAT = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?\Z|[+-]?(inf|nan)\Z")
_DECIMAL = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?\Z")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}\Z")
_TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}(\d{3})?\Z")


def dumps(expr: Expr) -> str:
    """The versioned JSON text for ``expr`` (compact, keys in a fixed order)."""
    return json.dumps({"format": FORMAT, "version": VERSION, "expr": encode(expr)},
                      separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def loads(text: str | bytes, *, key: str = PROPERTY) -> Expr:
    """Parse text written by :func:`dumps`; raise FilterError naming the problem (and the job property ``key``
    it was read from) if it is not exactly that."""
    try:
        doc = json.loads(text, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as e:
        raise FilterError(f"{key} is not valid JSON ({e}); re-create the filter instead of editing it") from e
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        found = doc.get("format") if isinstance(doc, dict) else type(doc).__name__
        raise FilterError(f"{key} is not a serialized filter: expected format {FORMAT!r}, found {found!r}")
    version = doc.get("version")
    if version != VERSION:
        raise FilterError(
            f"{key} has version {version!r}; this hive-storage-handler reads version {VERSION} only "
            "(written by a newer release? upgrade the reader, or re-create the filter)"
        )
    if set(doc) != {"format", "version", "expr"}:
        raise FilterError(f"{key}: unexpected keys {sorted(set(doc) - {'format', 'version', 'expr'})}")
    try:
        return decode(doc["expr"])
    except RecursionError as e:
        raise FilterError(f"{key}: the expression is nested too deeply to decode") from e
    except FilterError as e:
        raise FilterError(f"{key}: {e}") from e


def _reject_constant(token: str) -> Any:
    raise ValueError(f"bare {token} is not allowed (floats are encoded as strings)")


# ---------------------------------------------------------------- encode
def encode(expr: Expr) -> dict[str, Any]:
    """The JSON-ready ``NODE`` for ``expr``."""
    if isinstance(expr, Column):
        return {"column": expr.name, "type": str(expr.hive_type)}
    if isinstance(expr, Constant):
        return {"constant": encode_value(expr.value, expr.hive_type),
                "type": None if expr.hive_type is None else str(expr.hive_type)}
    return {"call": expr.function, "args": [encode(a) for a in expr.args]}


def encode_value(value: Any, hive_type: HiveType | None) -> Any:
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, NanoTimestamp):
        return value.isoformat()
    if isinstance(value, dt.datetime):
        return value.isoformat(timespec="microseconds")
    if isinstance(value, dt.date):
        return value.isoformat()
    raise FilterError(f"cannot serialize constant {value!r} of type {hive_type}")


# ---------------------------------------------------------------- decode
def decode(node: Any, path: str = "expr") -> Expr:
    """The expression for a ``NODE`` (see the module docstring); ``path`` names the node in error messages."""
    if not isinstance(node, dict):
        raise FilterError(f"{path} must be an object, found {type(node).__name__}")
    keys = set(node)
    if keys == {"column", "type"}:
        name = node["column"]
        if not isinstance(name, str) or not name:
            raise FilterError(f"{path}.column must be a non-empty string, found {name!r}")
        return Column(name, _decode_type(node["type"], f"{path}.type"))
    if keys == {"constant", "type"}:
        hive_type = None if node["type"] is None else _decode_type(node["type"], f"{path}.type")
        try:
            return Constant(decode_value(node["constant"], hive_type, path), hive_type)
        except FilterError as e:
            raise FilterError(f"{path}: {e}") from e
    if keys == {"call", "args"}:
        function, args = node["call"], node["args"]
        if not isinstance(function, str) or not isinstance(args, list):
            raise FilterError(f"{path} needs a string 'call' and a list 'args'")
        decoded = tuple(decode(a, f"{path}.args[{i}]") for i, a in enumerate(args))
        try:
            return Call(function, decoded)
        except FilterError as e:
            raise FilterError(f"{path}: {e}") from e
    raise FilterError(
        f"{path} has keys {sorted(keys)}; expected column+type, constant+type or call+args"
    )


def _decode_type(text: Any, path: str) -> HiveType:
    if not isinstance(text, str):
        raise FilterError(f"{path} must be a Hive type string, found {text!r}")
    try:
        return parse_hive_type(text)
    except SchemaError as e:
        raise FilterError(f"{path}: {e}") from e


def decode_value(raw: Any, hive_type: HiveType | None, path: str = "expr") -> Any:
    """The Python value of an encoded constant of ``hive_type``."""
    if raw is None:
        return None
    if hive_type is None:
        raise FilterError(f"{path}: a constant with no type must be null, found {raw!r}")
    name = hive_type.name

    def bad(what: str) -> FilterError:
        return FilterError(f"{path}: {raw!r} is not {what} (constant of type {hive_type})")

    if name == "boolean" or hive_type.is_integer:
        if name == "boolean" and not isinstance(raw, bool):
            raise bad("a JSON boolean")
        if hive_type.is_integer and (not isinstance(raw, int) or isinstance(raw, bool)):
            raise bad("a JSON integer")
        return raw
    if not isinstance(raw, str):
        raise bad("a string")
    if hive_type.is_string:
        return raw
    if name in ("float", "double"):
        if not _FLOAT.match(raw):
            raise bad("a float written by repr()")
        return float(raw)
    if name == "decimal":
        if not _DECIMAL.match(raw):
            raise bad("a decimal number")
        return Decimal(raw)
    try:
        if name == "date" and _DATE.match(raw):
            return dt.date.fromisoformat(raw)
        if name == "timestamp" and (match := _TIMESTAMP.match(raw)):
            if match[1] and match[1] != "000":
                return NanoTimestamp(dt.datetime.fromisoformat(raw[:-3]), int(match[1]))
            return dt.datetime.fromisoformat(raw[:-3] if match[1] else raw)
        if name == "binary":
            return base64.b64decode(raw.encode("ascii"), validate=True)
    except (ValueError, binascii.Error) as e:
        raise bad(f"a valid {name}") from e
    raise bad(f"a {name} in the documented form")
