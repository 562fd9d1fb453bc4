"""The StorageHandler's method contracts: job properties, idempotence, the decompose triple."""

from __future__ import annotations

import pytest

from storage_handler import job_conf as keys
from storage_handler.decode.hiveql import parse_filter
from storage_handler.expr import serde as expr_serde
from storage_handler.expr.render import to_hiveql
from storage_handler.handler import StorageHandler
from storage_handler.input_format import ParquetInputFormat
from storage_handler.sarg import serde as sarg_serde
from storage_handler.table_desc import TableDesc
from storage_handler.types import parse_schema_text

DESC = TableDesc(
    "db.t", "file:/data/t", tuple(parse_schema_text("a int, b string, m map<string,int>, s struct<x:int,y:string>")),
    tuple(parse_schema_text("dt string, n int")), {"hsh.index.version": "3"},
)


def test_class_names_are_hives_parquet_ones() -> None:
    h = StorageHandler()
    assert h.get_input_format_class() is ParquetInputFormat
    assert h.get_output_format_class() == "org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat"
    assert h.get_serde_class() == "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe"
    assert h.get_authorization_provider() is None
    assert hasattr(h.get_meta_hook(), "pre_create_table")


def test_input_job_properties_carry_table_and_filter() -> None:
    h = StorageHandler()
    pushed = h.decompose_where(DESC, "a > 5 and dt = '2024-01-01'")
    props: dict[str, str] = {}
    h.configure_input_job_properties(DESC, props, pushed)
    assert props[keys.INPUT_DIR] == "file:/data/t"
    assert props[keys.COLUMNS] == "a,b,m,s"
    assert props[keys.COLUMN_TYPES] == "int:string:map<string,int>:struct<x:int,y:string>"
    assert props[keys.PARTITION_COLUMNS] == "dt/n" and props[keys.PARTITION_COLUMN_TYPES] == "string:int"
    assert props[keys.INDEX_VERSION] == "3"
    assert sarg_serde.loads(props[keys.HSH_SARG]).to_old_string() == (
        "leaf-0 = (LESS_THAN_EQUALS a 5), leaf-1 = (EQUALS dt 2024-01-01), expr = (and (not leaf-0) leaf-1)"
    )
    assert expr_serde.loads(props[keys.HSH_FILTER_EXPR]) == pushed.residual_predicate
    assert parse_filter(props[keys.FILTER_TEXT], DESC.schema) == pushed.residual_predicate
    assert keys.JobConf.from_properties(props).columns == DESC.columns


def test_hives_own_keys_are_never_written_with_a_foreign_format() -> None:
    """hive.io.filter.expr.serialized and sarg.pushdown hold Kryo bytes in Hive: the handler writes neither (its
    JSON goes under hsh.*), and removes stale ones so a read never mixes two filters."""
    h = StorageHandler()
    props = {keys.FILTER_EXPR: "stale", keys.SARG_PUSHDOWN: "stale"}
    h.configure_input_job_properties(DESC, props, h.decompose_where(DESC, "a = 1"))
    assert keys.FILTER_EXPR not in props and keys.SARG_PUSHDOWN not in props
    assert {keys.HSH_SARG, keys.HSH_FILTER_EXPR, keys.FILTER_TEXT} <= set(props)
    assert all(v.startswith("{") for k, v in props.items() if k in (keys.HSH_SARG, keys.HSH_FILTER_EXPR))


def test_configure_is_idempotent_and_clears_stale_filters() -> None:
    h = StorageHandler()
    pushed = h.decompose_where(DESC, "b = 'x'")
    once: dict[str, str] = {}
    h.configure_input_job_properties(DESC, once, pushed)
    twice = dict(once)
    h.configure_input_job_properties(DESC, twice, pushed)
    assert once == twice
    h.configure_input_job_properties(DESC, twice, None)
    assert not any(k in twice for k in keys.FILTER_KEYS)


def test_decompose_returns_hives_triple_with_the_whole_residual() -> None:
    h = StorageHandler()
    expr = parse_filter("a = 1 and upper(b) = 'X'", DESC.schema)
    result = h.decompose_predicate(None, None, expr)
    assert result is not None
    assert to_hiveql(result.pushed_predicate) == "`a` = 1"
    assert result.residual_predicate == expr  # pruning is inexact: every conjunct is re-checked
    assert result.pushed_object.to_old_string() == "leaf-0 = (EQUALS a 1), expr = leaf-0"


@pytest.mark.parametrize("where", ["upper(b) = 'X'", "a = b"])
def test_nothing_pushable_gives_none(where: str) -> None:
    assert StorageHandler().decompose_where(DESC, where) is None


@pytest.mark.parametrize(("where", "whole"), [
    ("a > 5 and dt = '2024-01-01'", True),
    ("a > 5 or not (n in (1, 2))", True),
    ("a > 5 and b like '%y%'", False),  # the LIKE is dropped from the AND: a > 5 alone would be proven
    ("not (b like 'x%') or a > 5", False),  # YES_NO_NULL swallows the OR
    ("upper(b) = 'A'", False),  # nothing pushed at all
    ("m['k'] = 1 and a = 1", False),
])
def test_files_are_called_fully_matched_only_when_the_sarg_is_the_whole_filter(where: str, whole: bool) -> None:
    """``complete`` (the caller passed the whole filter) holds only if every conjunct converted without a
    YES_NO_NULL: Hive's normalization drops those, and the SearchArgument left is a weaker condition."""
    h = StorageHandler()
    pushed = h.decompose_where(DESC, where)
    props: dict[str, str] = {}
    h.configure_input_job_properties(DESC, props, pushed, complete=pushed is not None)
    assert (props.get(keys.FILTER_COMPLETE) == "true") is whole
    none: dict[str, str] = {}
    h.configure_input_job_properties(DESC, none, None, complete=True)  # no filter: every file matches whole
    assert none[keys.FILTER_COMPLETE] == "true"
