"""The JSON form of Spark's data-source filters, as the JVM side (``java/hsh/spark/FilterJson.java``) writes it.

A list of AND-ed filters; each filter is an object::

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

They decode to the very filter objects Spark's Python data-source API passes (plus this project's ``And``/``Or``),
with the values that API would deliver, so both read paths share :func:`decode_spark_filters` and prune alike.
Anything else raises :class:`~storage_handler.errors.FilterError`.
"""

from __future__ import annotations

import base64
import datetime as dt
import struct
from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from typing import Any

from pyspark.sql import datasource as ds

from storage_handler.decode.spark_filters import And, Or
from storage_handler.errors import FilterError

_COMPARE: dict[str, type[ds.Filter]] = {
    "EqualTo": ds.EqualTo, "EqualNullSafe": ds.EqualNullSafe, "GreaterThan": ds.GreaterThan,
    "GreaterThanOrEqual": ds.GreaterThanOrEqual, "LessThan": ds.LessThan, "LessThanOrEqual": ds.LessThanOrEqual,
    "StringStartsWith": ds.StringStartsWith, "StringEndsWith": ds.StringEndsWith,
    "StringContains": ds.StringContains,
}
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


def decode_filters(
    nodes: Any, *, on_undecodable: Callable[[FilterError], None] | None = None
) -> list[ds.Filter]:
    """The filters of a JSON list (see the module docstring).

    With ``on_undecodable``, a filter that does not decode is reported to it and left out instead of raising:
    the filters are AND-ed, so leaving one out only prunes less.
    """
    if not isinstance(nodes, list):
        raise FilterError(f"filters must be a JSON list, found {type(nodes).__name__}")
    filters = []
    for node in nodes:
        try:
            filters.append(decode_filter(node))
        except FilterError as e:
            if on_undecodable is None:
                raise
            on_undecodable(e)
    return filters


def decode_filter(node: Any) -> ds.Filter:
    if not isinstance(node, dict):
        raise FilterError(f"a filter must be a JSON object, found {node!r}")
    op = node.get("op")
    try:
        if op in ("And", "Or"):
            return (And if op == "And" else Or)(decode_filter(node["left"]), decode_filter(node["right"]))
        if op == "Not":
            return ds.Not(decode_filter(node["child"]))
        column = (str(node["attribute"]),)
        if op in ("IsNull", "IsNotNull"):
            return (ds.IsNull if op == "IsNull" else ds.IsNotNull)(column)
        if op == "In":
            return ds.In(column, tuple(decode_value(v) for v in node["values"]))
        if op in _COMPARE:
            return _COMPARE[op](column, decode_value(node["value"]))  # type: ignore[call-arg]
    except KeyError as e:
        raise FilterError(f"filter {node!r} lacks {e}") from e
    raise FilterError(f"unknown filter operation {op!r} in {node!r}")


def decode_value(value: Any) -> Any:
    """The Python value Spark's Python data-source API would deliver for ``value``."""
    if not isinstance(value, dict):
        raise FilterError(f"a filter value must be a JSON object, found {value!r}")
    kind = value.get("t")
    try:
        if kind == "null":
            return None
        if kind == "bool" and isinstance(value["v"], bool):
            return value["v"]
        if kind == "int" and isinstance(value["v"], int) and not isinstance(value["v"], bool):
            return value["v"]
        if kind == "double":
            return struct.unpack("<d", struct.pack("<q", int(value["bits"])))[0]
        if kind == "decimal":
            return Decimal(str(value["v"]))
        if kind == "string" and isinstance(value["v"], str):
            return value["v"]
        if kind == "date":
            return dt.date.fromisoformat(value["v"])
        if kind == "timestamp":
            return _EPOCH + dt.timedelta(microseconds=int(value["micros"]))
        if kind == "timestamp_ntz":
            return dt.datetime.fromisoformat(value["v"])
        if kind == "binary":
            return base64.b64decode(value["v"], validate=True)
    except (KeyError, ValueError, TypeError, OverflowError, InvalidOperation, struct.error) as e:
        raise FilterError(f"malformed filter value {value!r}: {e}") from e
    raise FilterError(f"unsupported filter value {value!r}")
