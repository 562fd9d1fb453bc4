"""``storage_handler/decode/kryo/layouts.py`` is exactly what the pyspark wheel's Kryo and Hive say.

The oracle serializes the systematic filter set (every operator over every type, constants on either side, NULLs,
column-vs-column of every pair of types, common functions) with Hive's Kryo and Spark's plain Kryo, then reports
the field layout Kryo's own ``FieldSerializer`` uses for every class it met. The committed module must be the text
the generator makes of that answer; regenerate it with ``python -m tests.decode.kryo_oracle``.
"""

from __future__ import annotations

import json

from storage_handler.decode.kryo import layouts
from storage_handler.decode.kryo.hive_expr import UDF_NAMES
from tests.decode.kryo_oracle import LAYOUTS_MODULE, Oracle, render_layouts
from tests.decode.kryo_trees import inventory_trees


def test_layouts_module_matches_the_jars(kryo_oracle: Oracle) -> None:
    for tree in inventory_trees():
        assert kryo_oracle.ask("E " + json.dumps(tree)).startswith("OK"), tree
        assert kryo_oracle.ask("S " + json.dumps(tree)).startswith("OK"), tree
    expected = render_layouts(kryo_oracle.layouts())
    assert LAYOUTS_MODULE.read_text() == expected, "layouts.py is stale: run python -m tests.decode.kryo_oracle"


def test_every_function_class_with_a_layout_has_a_hive_name() -> None:
    udfs = {name.rsplit(".", 1)[1] for name in layouts.FIELDS if ".udf.generic.GenericUDF" in name}
    assert udfs - {"GenericUDFBridge"} <= set(UDF_NAMES), sorted(udfs - set(UDF_NAMES))
