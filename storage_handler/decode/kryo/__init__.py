"""Hive's own serialized filters, decoded in Python: the Kryo bytes Hive 2.3's planner and Spark's ORC path write.

* :func:`decode_filter_expression` -- ``hive.io.filter.expr.serialized``: base64 of
  ``SerializationUtilities.serializeExpression(ExprNodeGenericFuncDesc)`` -> the expression model, which
  :func:`storage_handler.decode.to_sarg.to_search_argument` turns into the SearchArgument Hive's
  ``ConvertAstToSearchArg`` makes of it.
* :func:`decode_search_argument` -- ``sarg.pushdown``: base64 of a ``SearchArgumentImpl`` written by a plain
  ``new Kryo()`` (Spark's Hive ORC path, later Hive versions) -> the SearchArgument, as Hive reads it.
* :func:`read_filter_expression` / :func:`read_search_argument`: the same, with the release whose format was
  decoded (:class:`~.releases.KryoDecoded`).

Each supported Hive release (:data:`SUPPORTED_RELEASES`: 2.3.9 and 2.3.10) has its own generated table of
registrations and layouts (:mod:`.layouts`). ``writer_version`` names the release that wrote the bytes; without
it the bytes must fit exactly one release's format, or all that fit must agree (:mod:`.releases`).

Why no JVM: the job properties are read in the Python process that plans the scan, once per query; starting a JVM
per decode would cost seconds, and Kryo's format for these few classes is small and fixed. Modules:
:mod:`.stream` (Kryo's byte encodings), :mod:`.graph` (classes, references, serializers), :mod:`.layouts`
(generated from each release's jars: the fields of every class a filter holds), :mod:`.releases` (which
release's format), :mod:`.javatime` (``java.sql`` dates and timestamps in the writer's time zone),
:mod:`.hive_expr` and :mod:`.hive_sarg` (Hive's objects -> ours).

Anything that is not exactly such bytes -- truncated, corrupt, a class Hive never writes there, another Kryo or
Hive version -- raises :class:`KryoFormatError` (a :class:`~storage_handler.errors.FilterError`) naming the job
property: never a different filter, never "no filter".
"""

from __future__ import annotations

import base64
import binascii
import functools
from collections.abc import Callable
from typing import Any

from storage_handler.decode.kryo.graph import UnknownClassError
from storage_handler.decode.kryo.hive_expr import to_expression
from storage_handler.decode.kryo.hive_sarg import to_search_argument
from storage_handler.decode.kryo.javatime import time_zone
from storage_handler.decode.kryo.layouts import SUPPORTED, Flavor
from storage_handler.decode.kryo.releases import (
    AmbiguousReleaseError,
    KryoDecoded,
    ReleaseMatch,
    ReleaseMismatchError,
    Request,
    UnsupportedReleaseError,
    decode,
    failure,
)
from storage_handler.decode.kryo.stream import KryoFormatError
from storage_handler.errors import FilterError
from storage_handler.expr import serde as expr_serde
from storage_handler.expr.nodes import Call
from storage_handler.sarg import SearchArgument
from storage_handler.sarg import serde as sarg_serde

__all__ = [
    "SUPPORTED_RELEASES", "AmbiguousReleaseError", "KryoDecoded", "KryoFormatError", "ReleaseMatch",
    "ReleaseMismatchError", "UnknownClassError", "UnsupportedReleaseError", "base64_bytes",
    "decode_filter_expression", "decode_search_argument", "read_filter_expression", "read_search_argument",
    "time_zone",
]

#: The Hive releases whose Kryo format this decoder reads, each verified against its own jars.
SUPPORTED_RELEASES = SUPPORTED
EXPRESSION_CLASS = "org.apache.hadoop.hive.ql.plan.ExprNodeGenericFuncDesc"
SARG_CLASS = "org.apache.hadoop.hive.ql.io.sarg.SearchArgumentImpl"
_URL_SAFE = str.maketrans("-_", "+/")
_EXPRESSION_WRITER = "Hive 2.3's SerializationUtilities.serializeExpression"
_SARG_WRITER = "Kryo's writeObject of Hive's SearchArgumentImpl (Spark's Hive ORC path)"


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


def _request(text: str, key: str, flavor: Flavor, root: str, convert: Callable[[Any], Any],
             canonical: Callable[[Any], str], writer: str) -> Request:
    try:
        data = base64_bytes(text)
    except FilterError as e:
        raise failure(key, writer, e) from e
    return Request(data, key, flavor, root, convert, canonical, writer)


def read_filter_expression(text: str, *, zone: str = "UTC", key: str = "hive.io.filter.expr.serialized",
                           writer_version: str | None = None,
                           writer_version_from: str = "writer_version") -> KryoDecoded[Call]:
    """The expression Hive serialized with ``SerializationUtilities.serializeExpression``, and the release whose
    format it was decoded in.

    ``zone``: the time zone of the JVM that wrote it (DATE/TIMESTAMP constants are epoch milliseconds of a
    wall-clock value in that zone). ``writer_version``: the Hive release that wrote it (one of
    :data:`SUPPORTED_RELEASES`, or ``"auto"``/None to let the bytes tell); ``writer_version_from`` names where that
    came from in messages. ``key`` only names the property in error messages.
    """
    convert = functools.partial(to_expression, zone=time_zone(zone))
    request = _request(text, key, "hive", EXPRESSION_CLASS, convert, expr_serde.dumps, _EXPRESSION_WRITER)
    return decode(request, writer_version, writer_version_from)


def read_search_argument(text: str, *, zone: str = "UTC", key: str = "sarg.pushdown",
                         writer_version: str | None = None,
                         writer_version_from: str = "writer_version") -> KryoDecoded[SearchArgument]:
    """The SearchArgument a plain ``new Kryo().writeObject(output, searchArgumentImpl)`` wrote (base64), and the
    release whose format it was decoded in (arguments as :func:`read_filter_expression`)."""
    convert = functools.partial(to_search_argument, zone=time_zone(zone))
    request = _request(text, key, "plain", SARG_CLASS, convert, sarg_serde.dumps, _SARG_WRITER)
    return decode(request, writer_version, writer_version_from)


def decode_filter_expression(text: str, *, zone: str = "UTC", key: str = "hive.io.filter.expr.serialized",
                             writer_version: str | None = None) -> Call:
    """:func:`read_filter_expression`'s expression."""
    return read_filter_expression(text, zone=zone, key=key, writer_version=writer_version).value


def decode_search_argument(text: str, *, zone: str = "UTC", key: str = "sarg.pushdown",
                           writer_version: str | None = None) -> SearchArgument:
    """:func:`read_search_argument`'s SearchArgument."""
    return read_search_argument(text, zone=zone, key=key, writer_version=writer_version).value
