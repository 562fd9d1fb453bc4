"""Hive's own serialized filters, decoded in Python: the Kryo bytes Hive 2.3's planner and Spark's ORC path write.

* :func:`decode_filter_expression` -- ``hive.io.filter.expr.serialized``: base64 of
  ``SerializationUtilities.serializeExpression(ExprNodeGenericFuncDesc)`` -> the expression model, which
  :func:`storage_handler.decode.to_sarg.to_search_argument` turns into the SearchArgument Hive's
  ``ConvertAstToSearchArg`` makes of it.
* :func:`decode_search_argument` -- ``sarg.pushdown``: base64 of a ``SearchArgumentImpl`` written by a plain
  ``new Kryo()`` (Spark's Hive ORC path, later Hive versions) -> the SearchArgument, as Hive reads it.

Why no JVM: the job properties are read in the Python process that plans the scan, once per query; starting a JVM
per decode would cost seconds, and Kryo's format for these few classes is small and fixed. Modules:
:mod:`.stream` (Kryo's byte encodings), :mod:`.graph` (classes, references, serializers), :mod:`.layouts`
(generated from the jars: the fields of every class a filter holds), :mod:`.javatime` (``java.sql`` dates and
timestamps in the writer's time zone), :mod:`.hive_expr` and :mod:`.hive_sarg` (Hive's objects -> ours).

Anything that is not exactly such bytes -- truncated, corrupt, a class Hive never writes there, another Kryo or
Hive version -- raises :class:`KryoFormatError` (a :class:`~storage_handler.errors.FilterError`) naming the job
property: never a different filter, never "no filter".
"""

from __future__ import annotations

import base64
import binascii

from storage_handler.decode.kryo.graph import Flavor, GraphReader, UnknownClassError
from storage_handler.decode.kryo.hive_expr import to_expression
from storage_handler.decode.kryo.hive_sarg import to_search_argument
from storage_handler.decode.kryo.javatime import time_zone
from storage_handler.decode.kryo.stream import KryoFormatError
from storage_handler.errors import FilterError
from storage_handler.expr.nodes import Call
from storage_handler.sarg import SearchArgument

__all__ = [
    "KryoFormatError", "UnknownClassError", "base64_bytes", "decode_filter_expression", "decode_search_argument",
    "time_zone",
]

EXPRESSION_CLASS = "org.apache.hadoop.hive.ql.plan.ExprNodeGenericFuncDesc"
SARG_CLASS = "org.apache.hadoop.hive.ql.io.sarg.SearchArgumentImpl"
_URL_SAFE = str.maketrans("-_", "+/")


def base64_bytes(text: str) -> bytes:
    """Decode base64 like Hive's commons-codec does for valid input: whitespace and line breaks are skipped,
    missing padding and the URL-safe alphabet are accepted; any other character is an error."""
    compact = "".join(text.split()).translate(_URL_SAFE)
    compact += "=" * (-len(compact) % 4)
    try:
        data = base64.b64decode(compact.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError, ValueError) as e:
        raise KryoFormatError(f"it is not base64 ({e})") from e
    if not data:
        raise KryoFormatError("it is empty")
    return data


def _decode(text: str, key: str, flavor: Flavor, root: str, writer: str) -> object:
    """The object graph in ``text``; every failure becomes one KryoFormatError naming ``key`` and the writer."""
    try:
        return GraphReader(base64_bytes(text), flavor).read_root(root)
    except RecursionError as e:
        raise KryoFormatError(f"job property {key!r}: the filter is nested too deeply to decode") from e
    except FilterError as e:
        raise _fail(key, e, writer) from e


def _fail(key: str, error: FilterError, writer: str) -> KryoFormatError:
    kind = UnknownClassError if isinstance(error, UnknownClassError) else KryoFormatError
    return kind(f"job property {key!r} cannot be decoded: {error}. It must hold what {writer} writes (base64 "
                "Kryo); remove the property, or set it again from the query")


_EXPRESSION_WRITER = "Hive 2.3's SerializationUtilities.serializeExpression"
_SARG_WRITER = "Kryo's writeObject of Hive's SearchArgumentImpl (Spark's Hive ORC path)"


def decode_filter_expression(text: str, *, zone: str = "UTC", key: str = "hive.io.filter.expr.serialized") -> Call:
    """The expression Hive serialized with ``SerializationUtilities.serializeExpression``.

    ``zone``: the time zone of the JVM that wrote it (DATE/TIMESTAMP constants are epoch milliseconds of a
    wall-clock value in that zone). ``key`` only names the property in error messages.
    """
    tz = time_zone(zone)
    root = _decode(text, key, "hive", EXPRESSION_CLASS, _EXPRESSION_WRITER)
    try:
        return to_expression(root, tz)
    except RecursionError as e:
        raise KryoFormatError(f"job property {key!r}: the filter is nested too deeply to decode") from e
    except FilterError as e:
        raise _fail(key, e, _EXPRESSION_WRITER) from e


def decode_search_argument(text: str, *, zone: str = "UTC", key: str = "sarg.pushdown") -> SearchArgument:
    """The SearchArgument a plain ``new Kryo().writeObject(output, searchArgumentImpl)`` wrote (base64)."""
    tz = time_zone(zone)
    root = _decode(text, key, "plain", SARG_CLASS, _SARG_WRITER)
    try:
        return to_search_argument(root, tz)
    except RecursionError as e:
        raise KryoFormatError(f"job property {key!r}: the SearchArgument is nested too deeply to decode") from e
    except FilterError as e:
        raise _fail(key, e, _SARG_WRITER) from e
