"""Decode the filter job properties a read is configured with.

Precedence for the SearchArgument (the first one present wins):

1. ``sarg.pushdown`` -- a serialized SearchArgument (:mod:`storage_handler.sarg.serde`); the expression is then
   taken from ``hive.io.filter.expr.serialized`` / ``hive.io.filter.text`` when present (for the residual),
   otherwise there is none.
2. ``hive.io.filter.expr.serialized`` -- the serialized expression (:mod:`storage_handler.expr.serde`).
3. ``hive.io.filter.text`` -- HiveQL text, parsed and bound against the schema.

Hive's ``ConvertAstToSearchArg.createFromConf`` looks at the expression before ``sarg.pushdown``; we prefer the
SearchArgument because it is what the planning side pushed (``decompose``'s pushed object, or the one built from
Spark's filters) and the expression is still decoded, for the residual. When both come from the same filter they
give the same SearchArgument.

No property: no filter (a SearchArgument that is the constant ``YES_NO_NULL``, keeping every file). A property
that is present but corrupt raises :class:`~storage_handler.errors.FilterError`; it never means "no filter".
"""

from __future__ import annotations

from collections.abc import Mapping

from storage_handler.decode.hiveql import parse_filter
from storage_handler.decode.schema import Schema
from storage_handler.decode.to_sarg import Decoded, to_search_argument
from storage_handler.errors import FilterError
from storage_handler.expr import serde as expr_serde
from storage_handler.expr.nodes import Expr

SARG_PUSHDOWN = "sarg.pushdown"
FILTER_EXPR_SERIALIZED = expr_serde.PROPERTY
FILTER_TEXT = "hive.io.filter.text"


def decode_job_conf(job_conf: Mapping[str, str], schema: Schema) -> Decoded:
    """The filter configured in ``job_conf`` (see the module docstring for the precedence)."""
    expr = _expression(job_conf, schema)
    sarg_text = job_conf.get(SARG_PUSHDOWN)
    if sarg_text is None:
        return to_search_argument(expr)
    if not str(sarg_text).strip():
        raise FilterError(f"job property {SARG_PUSHDOWN!r} is empty; remove it or set a serialized SearchArgument")
    from storage_handler.sarg import serde as sarg_serde

    try:
        sarg = sarg_serde.loads(sarg_text)
    except FilterError as e:
        raise FilterError(f"job property {SARG_PUSHDOWN!r} is corrupt: {e}") from e
    if expr is None:
        return Decoded(sarg, None, None, ())
    from_expr = to_search_argument(expr)
    return Decoded(sarg, from_expr.pushed, from_expr.residual, from_expr.unpushed)


def _expression(job_conf: Mapping[str, str], schema: Schema) -> Expr | None:
    serialized = job_conf.get(FILTER_EXPR_SERIALIZED)
    if serialized is not None:
        if not str(serialized).strip():
            raise FilterError(f"job property {FILTER_EXPR_SERIALIZED!r} is empty; remove it or set a filter")
        return expr_serde.loads(serialized)
    text = job_conf.get(FILTER_TEXT)
    if text is not None:
        try:
            return parse_filter(text, schema)
        except FilterError as e:
            raise FilterError(f"job property {FILTER_TEXT!r}: {e}") from e
    return None
