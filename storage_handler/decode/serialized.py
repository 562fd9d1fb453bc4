"""Decode the filter job properties a read is configured with: the handler's own, and the ones Hive writes.

=================================  ==========================================================  ==============
job property                       holds                                                       written by
=================================  ==========================================================  ==============
``hsh.sarg``                       the SearchArgument, our JSON (:mod:`..sarg.serde`)          this handler
``hsh.filter.expr``                the expression, our JSON (:mod:`..expr.serde`)              this handler
``hive.io.filter.text``            the expression as HiveQL text                               both
``hive.io.filter.expr.serialized`` base64 Kryo of Hive's ``ExprNodeGenericFuncDesc``           Hive's planner
``sarg.pushdown``                  base64 Kryo of Hive's ``SearchArgumentImpl``                Spark (Hive ORC)
``hsh.filter.time.zone``           zone of the JVM that wrote the Kryo bytes (default ``UTC``)  you
``hsh.hive.writer.version``        the Hive release that wrote the Kryo bytes (or ``auto``)     you
``spark.sql.hive.version``         the Hive release bundled with the Spark that planned         Spark
=================================  ==========================================================  ==============

Older releases of this handler wrote their JSON under Hive's two keys; it is still read there. The forms cannot be
confused: our JSON starts with ``{``, base64 never does.

Precedence, the first one present wins:

* the SearchArgument: ``hsh.sarg``; then, as Hive's ``ConvertAstToSearchArg.createFromConf``,
  ``hive.io.filter.expr.serialized`` (converted) before ``sarg.pushdown``; then ``hsh.filter.expr``, then
  ``hive.io.filter.text`` (converted);
* the expression (the residual the engine re-checks): ``hsh.filter.expr``, ``hive.io.filter.expr.serialized``,
  ``hive.io.filter.text``. The text is parsed only when it is the only expression: Hive writes it for people
  (``ExprNodeDesc.getExprString``), not always as HiveQL this parser reads.

Every present SearchArgument or expression property is decoded, even when another one wins: a corrupt one raises
:class:`~storage_handler.errors.FilterError` naming it; it never means "no filter". No property: no filter (the
constant ``YES_NO_NULL``, keeping every file).

Dates and timestamps in Hive's Kryo bytes are epoch milliseconds of a wall-clock value in the writing JVM's
default zone (``user.timezone``), and Hive's reader converts them back in its own JVM's zone. We read them in
``hsh.filter.time.zone`` (an IANA name; UTC when unset): set it to the zone your Hive JVMs run in.

Kryo bytes are read in the format of the Hive release ``hsh.hive.writer.version`` names, else the one
``spark.sql.hive.version`` names, else (or with ``auto``) the release(s) whose format the bytes fit (see
:mod:`storage_handler.decode.kryo.releases`); :func:`decode_job_conf_filter` reports which.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from storage_handler.decode import kryo
from storage_handler.decode.hiveql import parse_filter
from storage_handler.decode.schema import Schema
from storage_handler.decode.to_sarg import Decoded, to_search_argument
from storage_handler.errors import ConfigurationError, FilterError
from storage_handler.expr import serde as expr_serde
from storage_handler.expr.nodes import Expr
from storage_handler.job_conf import (
    FILTER_EXPR,
    FILTER_TEXT,
    FILTER_TIME_ZONE,
    HIVE_WRITER_VERSION,
    HSH_FILTER_EXPR,
    HSH_SARG,
    SARG_PUSHDOWN,
    SPARK_HIVE_VERSION,
    JobConf,
)
from storage_handler.sarg import SearchArgument
from storage_handler.sarg import serde as sarg_serde

FILTER_EXPR_SERIALIZED = FILTER_EXPR


def filter_sources(job_conf: Mapping[str, str]) -> tuple[str | None, str | None]:
    """(the property the SearchArgument comes from, the property the expression comes from), by precedence;
    None where there is none."""
    present = [key for key in (HSH_SARG, HSH_FILTER_EXPR, FILTER_EXPR, SARG_PUSHDOWN, FILTER_TEXT) if key in job_conf]
    expression = next((k for k in (HSH_FILTER_EXPR, FILTER_EXPR, FILTER_TEXT) if k in present), None)
    sarg = next((k for k in (HSH_SARG, FILTER_EXPR, SARG_PUSHDOWN) if k in present), expression)
    return sarg, expression


@dataclass(frozen=True, slots=True)
class JobConfFilter:
    """What :func:`decode_job_conf_filter` found: the filter, the properties it came from (None where there is
    none), and for each Kryo property decoded, the Hive release whose format it was decoded in."""

    decoded: Decoded
    sarg_from: str | None
    expression_from: str | None
    kryo_formats: tuple[kryo.ReleaseMatch, ...]


def decode_job_conf(job_conf: Mapping[str, str], schema: Schema | None = None) -> Decoded:
    """The filter configured in ``job_conf`` (see the module docstring for keys and precedence).

    ``schema`` binds ``hive.io.filter.text``; when None, the job configuration's ``columns`` / ``columns.types``
    (and partition columns) are used. The Kryo and JSON forms carry their own types and need none.
    """
    return decode_job_conf_filter(job_conf, schema).decoded


def decode_job_conf_filter(job_conf: Mapping[str, str], schema: Schema | None = None) -> JobConfFilter:
    """:func:`decode_job_conf`, and where the filter came from: its properties and the Kryo formats decoded."""
    zone = _time_zone(job_conf)
    version, version_from = writer_version(job_conf)
    sarg_key, expression_key = filter_sources(job_conf)
    formats: list[kryo.ReleaseMatch] = []
    # Decode every present SearchArgument / expression property, so that a corrupt one is never ignored.
    expressions = {key: _expression(text, key, zone, version, version_from, formats)
                   for key in (HSH_FILTER_EXPR, FILTER_EXPR) if (text := _value(job_conf, key)) is not None}
    sargs = {key: _search_argument(text, key, zone, version, version_from, formats)
             for key in (HSH_SARG, SARG_PUSHDOWN) if (text := _value(job_conf, key)) is not None}
    if expression_key == FILTER_TEXT:
        expressions[FILTER_TEXT] = _text_expression(job_conf, schema)
    from_expr = to_search_argument(expressions.get(expression_key) if expression_key else None)
    if sarg_key == expression_key:
        decoded = from_expr
    else:
        sarg = sargs[sarg_key] if sarg_key in sargs else to_search_argument(expressions[str(sarg_key)]).sarg
        decoded = Decoded(sarg, from_expr.pushed, from_expr.residual, from_expr.unpushed)
    return JobConfFilter(decoded, sarg_key, expression_key, tuple(formats))


def writer_version(job_conf: Mapping[str, str]) -> tuple[str | None, str]:
    """(the Hive release named for the Kryo bytes' writer, the property naming it); (None, ...) when none is."""
    for key in (HIVE_WRITER_VERSION, SPARK_HIVE_VERSION):
        value = job_conf.get(key)
        if value is not None and str(value).strip():
            return str(value), key
    return None, HIVE_WRITER_VERSION


def _value(job_conf: Mapping[str, str], key: str) -> str | None:
    text = job_conf.get(key)
    if text is None:
        return None
    if not str(text).strip():
        raise FilterError(f"job property {key!r} is empty; remove it or set a filter")
    return str(text)


def _time_zone(job_conf: Mapping[str, str]) -> str:
    name = str(job_conf.get(FILTER_TIME_ZONE) or "UTC").strip()
    try:
        kryo.time_zone(name)
    except FilterError as e:
        raise ConfigurationError(f"job property {FILTER_TIME_ZONE!r}: {e}") from e
    return name


def _is_json(text: str) -> bool:
    return text.lstrip().startswith("{")


def _json_expression(text: str, key: str) -> Expr:
    try:
        return expr_serde.loads(text, key=key)
    except FilterError as e:
        raise FilterError(f"job property {key!r} is corrupt: {e}") from e


def _expression(text: str, key: str, zone: str, version: str | None, version_from: str,
                formats: list[kryo.ReleaseMatch]) -> Expr:
    if key == FILTER_EXPR and not _is_json(text):  # JSON there was written by an older release of this handler
        result = kryo.read_filter_expression(text, zone=zone, key=key, writer_version=version,
                                             writer_version_from=version_from)
        formats.append(result.match)
        return result.value
    return _json_expression(text, key)


def _search_argument(text: str, key: str, zone: str, version: str | None, version_from: str,
                     formats: list[kryo.ReleaseMatch]) -> SearchArgument:
    if key == SARG_PUSHDOWN and not _is_json(text):
        result = kryo.read_search_argument(text, zone=zone, key=key, writer_version=version,
                                           writer_version_from=version_from)
        formats.append(result.match)
        return result.value
    try:
        return sarg_serde.loads(text)
    except FilterError as e:
        raise FilterError(f"job property {key!r} is corrupt: {e}") from e


def _text_expression(job_conf: Mapping[str, str], schema: Schema | None) -> Expr:
    text = str(job_conf[FILTER_TEXT])
    if schema is None:
        try:
            conf = JobConf.from_properties({"location": "-", **job_conf})
        except ConfigurationError as e:
            raise FilterError(f"job property {FILTER_TEXT!r} needs the table's columns to be read: {e}") from e
        schema = [*conf.columns, *conf.partition_keys]
    try:
        return parse_filter(text, schema)
    except FilterError as e:
        raise FilterError(f"job property {FILTER_TEXT!r}: {e}") from e
