"""decode_job_conf: the handler's own keys, Hive's Kryo keys (real bytes from Hive's jars: hive_samples), the old
JSON under Hive's keys, precedence, time zone, and corrupt properties."""

from __future__ import annotations

import pytest

from storage_handler import job_conf as keys
from storage_handler.decode.hiveql import parse_filter
from storage_handler.decode.serialized import decode_job_conf
from storage_handler.decode.to_sarg import to_search_argument
from storage_handler.errors import ConfigurationError, FilterError
from storage_handler.expr import serde, to_hiveql
from storage_handler.sarg import serde as sarg_serde
from tests.decode.hive_samples import EXPR_TS_LOS_ANGELES, EXPR_X2_UPPER_Y, SARG_X3

SCHEMA = "x int, y string"
TEXT = "x = 1 AND upper(y) = 'A'"


def test_text_only():
    decoded = decode_job_conf({"hive.io.filter.text": TEXT}, SCHEMA)
    assert decoded.sarg.to_old_string() == "leaf-0 = (EQUALS x 1), expr = leaf-0"
    assert to_hiveql(decoded.residual) == "`x` = 1 AND upper(`y`) = 'A'"
    assert to_hiveql(decoded.pushed) == "`x` = 1"
    assert [to_hiveql(u) for u in decoded.unpushed] == ["upper(`y`) = 'A'"]


def test_text_is_bound_against_the_job_configurations_columns_without_a_schema():
    conf = {"columns": "x,y", "columns.types": "int:string", "hive.io.filter.text": "x = 4"}
    assert decode_job_conf(conf).sarg.to_old_string() == "leaf-0 = (EQUALS x 4), expr = leaf-0"


def test_hives_kryo_expression_is_what_hive_reads():
    decoded = decode_job_conf({keys.FILTER_EXPR: EXPR_X2_UPPER_Y})
    assert decoded.sarg.to_old_string() == "leaf-0 = (EQUALS x 2), expr = leaf-0"
    assert to_hiveql(decoded.residual) == "`x` = 2 AND upper(`y`) = 'A'"


def test_hives_text_is_not_parsed_when_an_expression_is_there():
    """Hive writes hive.io.filter.text for people (getExprString); the expression is what its reader uses."""
    conf = {keys.FILTER_EXPR: EXPR_X2_UPPER_Y, keys.FILTER_TEXT: "((x = 2) and (upper(y) = 'A'))  UDFToDouble("}
    assert decode_job_conf(conf).sarg.to_old_string() == "leaf-0 = (EQUALS x 2), expr = leaf-0"


def test_kryo_sarg_pushdown_alone():
    decoded = decode_job_conf({keys.SARG_PUSHDOWN: SARG_X3})
    assert decoded.sarg.to_old_string() == "leaf-0 = (EQUALS x 3), expr = leaf-0" and decoded.residual is None


def test_hives_expression_wins_over_sarg_pushdown_like_create_from_conf():
    decoded = decode_job_conf({keys.SARG_PUSHDOWN: SARG_X3, keys.FILTER_EXPR: EXPR_X2_UPPER_Y})
    assert decoded.sarg.to_old_string() == "leaf-0 = (EQUALS x 2), expr = leaf-0"


def test_our_keys_win_over_hives_and_the_text():
    ours = parse_filter("x = 7", SCHEMA)
    conf = {keys.HSH_SARG: sarg_serde.dumps(to_search_argument(ours).sarg), keys.HSH_FILTER_EXPR: serde.dumps(ours),
            keys.FILTER_EXPR: EXPR_X2_UPPER_Y, keys.SARG_PUSHDOWN: SARG_X3, keys.FILTER_TEXT: TEXT}
    decoded = decode_job_conf(conf, SCHEMA)
    assert decoded.sarg.to_old_string() == "leaf-0 = (EQUALS x 7), expr = leaf-0"
    assert decoded.residual == ours


def test_our_sarg_with_hives_expression_as_the_residual():
    sarg = to_search_argument(parse_filter("x = 3", SCHEMA)).sarg
    decoded = decode_job_conf({keys.HSH_SARG: sarg_serde.dumps(sarg), keys.FILTER_EXPR: EXPR_X2_UPPER_Y})
    assert decoded.sarg.to_old_string() == "leaf-0 = (EQUALS x 3), expr = leaf-0"
    assert to_hiveql(decoded.residual) == "`x` = 2 AND upper(`y`) = 'A'"


def test_older_releases_json_under_hives_keys_is_still_read():
    expr = parse_filter("x = 2", SCHEMA)
    decoded = decode_job_conf({keys.FILTER_EXPR: serde.dumps(expr), keys.FILTER_TEXT: TEXT}, SCHEMA)
    assert decoded.sarg.to_old_string() == "leaf-0 = (EQUALS x 2), expr = leaf-0" and decoded.residual == expr
    sarg = to_search_argument(parse_filter("x = 3", SCHEMA)).sarg
    only = decode_job_conf({keys.SARG_PUSHDOWN: " " + sarg_serde.dumps(sarg)}, SCHEMA)
    assert only.sarg.to_old_string() == sarg.to_old_string() and only.residual is None


def test_time_zone_of_the_writer():
    la = decode_job_conf({keys.FILTER_EXPR: EXPR_TS_LOS_ANGELES, keys.FILTER_TIME_ZONE: "America/Los_Angeles"})
    assert la.sarg.to_old_string() == "leaf-0 = (LESS_THAN ts 2024-01-02 10:11:12.5), expr = leaf-0"
    utc = decode_job_conf({keys.FILTER_EXPR: EXPR_TS_LOS_ANGELES})  # UTC unless told: Hive in UTC reads the same
    assert utc.sarg.to_old_string() == "leaf-0 = (LESS_THAN ts 2024-01-02 18:11:12.5), expr = leaf-0"
    with pytest.raises(ConfigurationError, match="hsh.filter.time.zone.*unknown time zone 'Mars/Olympus'"):
        decode_job_conf({keys.FILTER_EXPR: EXPR_TS_LOS_ANGELES, keys.FILTER_TIME_ZONE: "Mars/Olympus"})


def test_no_properties_means_no_filter():
    decoded = decode_job_conf({"unrelated": "1"}, SCHEMA)
    assert decoded.sarg.to_old_string() == "expr = YES_NO_NULL" and decoded.residual is None


@pytest.mark.parametrize(
    ("conf", "message"),
    [({"sarg.pushdown": "{not json"}, "sarg.pushdown"), ({"sarg.pushdown": ""}, "'sarg.pushdown' is empty"),
     ({"sarg.pushdown": "AQEA"}, "'sarg.pushdown' cannot be decoded"),
     ({"hsh.sarg": "AQEA"}, "'hsh.sarg' is corrupt"),
     ({"hive.io.filter.expr.serialized": "garbage"}, "'hive.io.filter.expr.serialized' cannot be decoded"),
     ({"hive.io.filter.expr.serialized": "{garbage"}, "hive.io.filter.expr.serialized is not valid JSON"),
     ({"hive.io.filter.expr.serialized": " "}, "empty"),
     ({"hive.io.filter.expr.serialized": '{"format":"hsh-expr","version":99,"expr":{}}'}, "version 99"),
     ({"hsh.filter.expr": '{"format":"hsh-expr","version":1,"expr":{"column":1}}'}, "'hsh.filter.expr' is corrupt"),
     ({"hive.io.filter.text": "x = "}, "hive.io.filter.text.*syntax error"),
     ({"hive.io.filter.text": "nope = 1"}, "unknown column 'nope'"),
     ({"hive.io.filter.text": ""}, "empty"),
     # a corrupt property is an error even when another one wins
     ({"hsh.filter.expr": serde.dumps(parse_filter("x = 1", SCHEMA)), "sarg.pushdown": SARG_X3[:40]},
      "'sarg.pushdown' cannot be decoded.*never ends")],
)
def test_corrupt_properties_raise(conf, message):
    with pytest.raises(FilterError, match=message):
        decode_job_conf(conf, SCHEMA)
