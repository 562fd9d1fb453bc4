"""Decoders: HiveQL text, serialized job properties and Spark data-source filters -> SearchArgument + residual.

* :func:`parse_filter` (``hiveql``): HiveQL filter text -> bound expression.
* :func:`to_search_argument` / :func:`decompose` (``to_sarg``): expression -> SearchArgument with Hive's
  ``ConvertAstToSearchArg`` mapping; the residual always keeps the whole predicate.
* :func:`decode_job_conf` (``serialized``): the filter job properties -> :class:`Decoded`: the handler's own
  ``hsh.sarg`` / ``hsh.filter.expr`` JSON, HiveQL ``hive.io.filter.text``, and Hive's Kryo bytes in
  ``hive.io.filter.expr.serialized`` / ``sarg.pushdown`` (decoded by ``storage_handler.decode.kryo``).
* ``storage_handler.decode.spark_filters.decode_spark_filters``: Spark's ``pushFilters`` filters (imported on
  demand: it imports pyspark).
"""

from __future__ import annotations

from storage_handler.decode.hiveql import parse_filter
from storage_handler.decode.schema import Schema, normalize_schema
from storage_handler.decode.serialized import (
    FILTER_EXPR_SERIALIZED,
    FILTER_TEXT,
    SARG_PUSHDOWN,
    decode_job_conf,
)
from storage_handler.decode.to_sarg import (
    Decoded,
    DecomposedPredicate,
    decompose,
    leaf_type,
    to_search_argument,
)

__all__ = [
    "FILTER_EXPR_SERIALIZED", "FILTER_TEXT", "SARG_PUSHDOWN", "Decoded", "DecomposedPredicate", "Schema", "decode_job_conf",
    "decompose", "leaf_type", "normalize_schema", "parse_filter", "to_search_argument",
]
