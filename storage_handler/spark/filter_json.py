"""The JSON form of Spark's data-source filters, as the JVM side (``FilterJson.java``) writes it.

A list of AND-ed filters. The vocabulary -- operation names, each operation's fields, value tags and their
fields -- is ``contract.json``'s ``filters`` section, which the Java side checks every name against as well::

    {"op": "EqualTo" | "EqualNullSafe" | "GreaterThan" | "GreaterThanOrEqual" | "LessThan" | "LessThanOrEqual"
           | "StringStartsWith" | "StringEndsWith" | "StringContains", "attribute": NAME, "value": VALUE}
    {"op": "In", "attribute": NAME, "values": [VALUE, ...]}
    {"op": "IsNull" | "IsNotNull", "attribute": NAME}
    {"op": "Not", "child": FILTER}
    {"op": "And" | "Or", "left": FILTER, "right": FILTER}

    VALUE := {"t": "null"} | {"t": "bool", "v": true} | {"t": "int", "v": 42}
           | {"t": "double", "bits": "<the IEEE 754 bits as a signed 64-bit decimal>"}
           | {"t": "decimal", "v": "12.50"} | {"t": "string", "v": "x"} | {"t": "date", "v": "1994-01-01"}
           | {"t": "timestamp", "micros": <microseconds since the epoch, UTC>}
           | {"t": "timestamp_ntz", "v": "2020-01-01T00:00:00"} | {"t": "binary", "v": "<base64>"}

They decode to the project's filter classes (:mod:`storage_handler.decode.filters`) with the values Spark's
Python data-source API would deliver, so every read path shares :func:`decode_spark_filters` and prunes alike.
Anything else raises :class:`~storage_handler.errors.FilterError`.
"""

from __future__ import annotations

import base64
import datetime as dt
import struct
from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from typing import Any

from storage_handler import contract
from storage_handler.decode import filters as f
from storage_handler.errors import FilterError

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def _checked(kind: type, text: Any) -> Any:
    if not isinstance(text, kind) or (kind is int and isinstance(text, bool)):
        raise TypeError(f"expected {kind.__name__}, found {text!r}")
    return text


#: the Python value of each value tag, from its fields in the contract's order
_VALUES: dict[str, Callable[..., Any]] = {
    "null": lambda: None,
    "bool": lambda v: _checked(bool, v),
    "int": lambda v: _checked(int, v),
    "double": lambda bits: struct.unpack("<d", struct.pack("<q", int(bits)))[0],
    "decimal": lambda v: Decimal(str(v)),
    "string": lambda v: _checked(str, v),
    "date": lambda v: dt.date.fromisoformat(v),
    "timestamp": lambda micros: _EPOCH + dt.timedelta(microseconds=int(micros)),
    "timestamp_ntz": lambda v: dt.datetime.fromisoformat(v),
    "binary": lambda v: base64.b64decode(v, validate=True),
}

if set(_VALUES) != set(contract.VALUE_FIELDS) or set(f.BY_NAME) != set(contract.FILTER_FIELDS):
    raise AssertionError("filter_json.py and contract.json's filters section disagree: update both together")


def decode_filters(
    nodes: Any, *, on_undecodable: Callable[[FilterError], None] | None = None
) -> list[f.Filter]:
    """The filters of a JSON list (see the module docstring).

    With ``on_undecodable``, a filter that does not decode is reported to it and left out instead of raising:
    the filters are AND-ed, so leaving one out only prunes less.
    """
    if not isinstance(nodes, list):
        raise FilterError(f"filters must be a JSON list, found {type(nodes).__name__}")
    out = []
    for node in nodes:
        try:
            out.append(decode_filter(node))
        except FilterError as e:
            if on_undecodable is None:
                raise
            on_undecodable(e)
    return out


def decode_filter(node: Any) -> f.Filter:
    if not isinstance(node, dict):
        raise FilterError(f"a filter must be a JSON object, found {node!r}")
    op = node.get(contract.FILTER_OP)
    if not isinstance(op, str) or op not in f.BY_NAME:
        raise FilterError(f"unknown filter operation {op!r} in {node!r}")
    cls = f.BY_NAME[op]
    try:
        fields = [node[name] for name in contract.FILTER_FIELDS[op]]
    except KeyError as e:
        raise FilterError(f"filter {node!r} lacks {e}") from e
    if issubclass(cls, (f.And, f.Or)):
        return cls(decode_filter(fields[0]), decode_filter(fields[1]))  # type: ignore[call-arg]
    if cls is f.Not:
        return f.Not(decode_filter(fields[0]))
    column = (str(fields[0]),)
    if cls is f.In:
        if not isinstance(fields[1], list):
            raise FilterError(f"filter {node!r}: the values of In must be a list")
        return f.In(column, tuple(decode_value(v) for v in fields[1]))
    if len(fields) == 1:
        return cls(column)  # type: ignore[call-arg]
    return cls(column, decode_value(fields[1]))  # type: ignore[call-arg]


def decode_value(value: Any) -> Any:
    """The Python value Spark's Python data-source API would deliver for ``value``."""
    if not isinstance(value, dict):
        raise FilterError(f"a filter value must be a JSON object, found {value!r}")
    tag = value.get(contract.VALUE_TAG)
    if not isinstance(tag, str) or tag not in _VALUES:
        raise FilterError(f"unsupported filter value {value!r}")
    try:
        return _VALUES[tag](*(value[name] for name in contract.VALUE_FIELDS[tag]))
    except (KeyError, ValueError, TypeError, OverflowError, InvalidOperation, struct.error) as e:
        raise FilterError(f"malformed filter value {value!r}: {e}") from e
