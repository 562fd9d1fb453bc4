"""``storage_handler/decode/kryo/layouts.py`` is what the pyspark wheel's Kryo and Hive say, and covers every class
of the systematic filter set.

The oracle serializes the systematic set (every operator over every type, constants on either side, NULLs,
column-vs-column of every pair of types, common functions) with Hive's Kryo and Spark's plain Kryo; each must
decode here, and every entry of the module must equal the layout Kryo's own ``FieldSerializer`` reports. The
module is regenerated with ``python -m tests.decode.kryo_oracle`` (a fresh JVM: only the systematic set's classes).
"""

from __future__ import annotations

import json

import pytest

from storage_handler.decode.kryo import decode_filter_expression, decode_search_argument, layouts
from storage_handler.decode.kryo.hive_expr import UDF_NAMES
from tests.decode.kryo_oracle import Oracle, collect_layouts
from tests.decode.kryo_trees import inventory_trees


@pytest.fixture(scope="module")
def systematic(kryo_oracle: Oracle) -> list[tuple[dict, str, str]]:
    """(tree, hive.io.filter.expr.serialized, sarg.pushdown) for the systematic set, written by Hive's classes."""
    out = []
    for tree in inventory_trees():
        expression = kryo_oracle.ask("E " + json.dumps(tree)).split("\t")
        sarg = kryo_oracle.ask("S " + json.dumps(tree)).split("\t")
        assert expression[0] == "OK" and sarg[0] == "OK", (tree, expression, sarg)
        out.append((tree, expression[1], sarg[1]))
    return out


def test_every_class_of_the_systematic_set_decodes(systematic: list[tuple[dict, str, str]]) -> None:
    for _tree, expression, sarg in systematic:
        decode_filter_expression(expression)
        decode_search_argument(sarg)


def test_layouts_module_matches_the_jars(kryo_oracle: Oracle, systematic: list) -> None:
    jars = collect_layouts(kryo_oracle.layouts())  # every class met so far (other tests may have added some)
    for table in ("HIVE_REGISTERED", "KRYO_REGISTERED", "FIELDS", "ENUMS", "ARRAYS"):
        ours = getattr(layouts, table)
        missing = sorted(set(ours) - set(jars[table]), key=str)
        assert not missing, f"{table}: the oracle never met {missing}; run the systematic set first"
        wrong = {name: (ours[name], jars[table][name]) for name in ours if ours[name] != jars[table][name]}
        assert not wrong, f"layouts.py is stale ({table}): run python -m tests.decode.kryo_oracle; {wrong}"
    assert jars["HIVE_REGISTERED"] == layouts.HIVE_REGISTERED and jars["KRYO_REGISTERED"] == layouts.KRYO_REGISTERED


def test_every_function_class_with_a_layout_has_a_hive_name() -> None:
    udfs = {name.rsplit(".", 1)[1] for name in layouts.FIELDS if ".udf.generic.GenericUDF" in name}
    assert udfs - {"GenericUDFBridge"} <= set(UDF_NAMES), sorted(udfs - set(UDF_NAMES))
