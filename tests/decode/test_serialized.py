from __future__ import annotations

import pytest

from storage_handler.decode.hiveql import parse_filter
from storage_handler.decode.serialized import decode_job_conf
from storage_handler.decode.to_sarg import to_search_argument
from storage_handler.errors import FilterError
from storage_handler.expr import serde, to_hiveql
from storage_handler.sarg import serde as sarg_serde

SCHEMA = "x int, y string"
TEXT = "x = 1 AND upper(y) = 'A'"


def test_text_only():
    decoded = decode_job_conf({"hive.io.filter.text": TEXT}, SCHEMA)
    assert decoded.sarg.to_old_string() == "leaf-0 = (EQUALS x 1), expr = leaf-0"
    assert to_hiveql(decoded.residual) == "`x` = 1 AND upper(`y`) = 'A'"
    assert to_hiveql(decoded.pushed) == "`x` = 1"
    assert [to_hiveql(u) for u in decoded.unpushed] == ["upper(`y`) = 'A'"]


def test_serialized_expression_wins_over_text():
    expr = parse_filter("x = 2", SCHEMA)
    decoded = decode_job_conf({"hive.io.filter.text": TEXT, "hive.io.filter.expr.serialized": serde.dumps(expr)},
                              SCHEMA)
    assert decoded.sarg.to_old_string() == "leaf-0 = (EQUALS x 2), expr = leaf-0"
    assert decoded.residual == expr


def test_sarg_pushdown_wins_and_keeps_the_expression_as_residual():
    sarg = to_search_argument(parse_filter("x = 3", SCHEMA)).sarg
    conf = {"sarg.pushdown": sarg_serde.dumps(sarg), "hive.io.filter.text": TEXT}
    decoded = decode_job_conf(conf, SCHEMA)
    assert decoded.sarg.to_old_string() == "leaf-0 = (EQUALS x 3), expr = leaf-0"
    assert to_hiveql(decoded.residual) == "`x` = 1 AND upper(`y`) = 'A'"
    only = decode_job_conf({"sarg.pushdown": sarg_serde.dumps(sarg)}, SCHEMA)
    assert only.sarg.to_old_string() == sarg.to_old_string() and only.residual is None


def test_no_properties_means_no_filter():
    decoded = decode_job_conf({"unrelated": "1"}, SCHEMA)
    assert decoded.sarg.to_old_string() == "expr = YES_NO_NULL" and decoded.residual is None


@pytest.mark.parametrize(
    ("conf", "message"),
    [({"sarg.pushdown": "{not json"}, "sarg.pushdown"), ({"sarg.pushdown": ""}, "empty"),
     ({"hive.io.filter.expr.serialized": "garbage"}, "not valid JSON"),
     ({"hive.io.filter.expr.serialized": " "}, "empty"),
     ({"hive.io.filter.expr.serialized": '{"format":"hsh-expr","version":99,"expr":{}}'}, "version 99"),
     ({"hive.io.filter.text": "x = "}, "hive.io.filter.text.*syntax error"),
     ({"hive.io.filter.text": "nope = 1"}, "unknown column 'nope'"),
     ({"hive.io.filter.text": ""}, "empty")],
)
def test_corrupt_properties_raise(conf, message):
    with pytest.raises(FilterError, match=message):
        decode_job_conf(conf, SCHEMA)
