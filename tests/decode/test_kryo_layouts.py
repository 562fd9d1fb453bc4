"""Each release's table in ``storage_handler/decode/kryo/layouts/`` is what that release's jars say, and covers
every class of the systematic filter set.

Per release, that release's oracle serializes the systematic set (every operator over every type, constants on
either side, NULLs, column-vs-column of every pair of types, common functions) with Hive's Kryo and Spark's plain
Kryo; each must decode here in that release's format, and every entry of the release's table must equal the layout
Kryo reports on its jars. The tables are regenerated with ``python -m tests.decode.kryo_oracle``.
"""

from __future__ import annotations

import importlib
import json

import pytest

from storage_handler.decode.kryo import decode_filter_expression, decode_search_argument, layouts
from storage_handler.decode.kryo.graph import SERIALIZER_READERS
from storage_handler.decode.kryo.hive_expr import UDF_NAMES
from tests import hive_releases
from tests.decode.kryo_layout_render import TABLES, collect_layouts, differences, tables_of_module
from tests.decode.kryo_oracle import Oracle, jar_names
from tests.decode.kryo_trees import inventory_trees


@pytest.fixture(scope="module")
def systematic(release_oracle: Oracle) -> list[tuple[dict, str, str]]:
    """(tree, hive.io.filter.expr.serialized, sarg.pushdown) for the systematic set, written by the release's
    classes (module scope: once per release)."""
    out = []
    for tree in inventory_trees():
        expression = release_oracle.ask("E " + json.dumps(tree)).split("\t")
        sarg = release_oracle.ask("S " + json.dumps(tree)).split("\t")
        assert expression[0] == "OK" and sarg[0] == "OK", (tree, expression, sarg)
        out.append((tree, expression[1], sarg[1]))
    return out


def test_the_supported_releases_are_the_tested_ones() -> None:
    assert layouts.SUPPORTED == hive_releases.RELEASES


def test_every_class_of_the_systematic_set_decodes(release_oracle: Oracle, systematic: list) -> None:
    for _tree, expression, sarg in systematic:
        decode_filter_expression(expression, writer_version=release_oracle.release)
        decode_search_argument(sarg, writer_version=release_oracle.release)
        decode_filter_expression(expression)


def test_the_release_table_matches_its_jars(release_oracle: Oracle, systematic: list) -> None:
    release = layouts.RELEASES[release_oracle.release]
    ours = tables_of_module(release.version)
    assert ours is not None
    jars = collect_layouts(release_oracle.layouts())  # every class met so far (other tests may have added some)
    for table in TABLES:
        missing = sorted(set(ours[table]) - set(jars[table]), key=str)
        assert not missing, f"{release.name} {table}: the oracle never met {missing}; run the systematic set first"
        wrong = {name: (ours[table][name], jars[table][name]) for name in ours[table]
                 if ours[table][name] != jars[table][name]}
        assert not wrong, (f"{release.name}'s table is stale ({table}): run python -m tests.decode.kryo_oracle "
                           f"{release.version}; {wrong}")
    for table in ("HIVE_REGISTERED", "PLAIN_REGISTERED"):
        assert jars[table] == ours[table]
    assert release.jars == jar_names(release.version)


def test_the_generated_docstrings_list_the_current_differences() -> None:
    tables = {version: tables_of_module(version) for version in layouts.SUPPORTED}
    for version, ours in tables.items():
        assert ours is not None
        module = importlib.import_module(f"storage_handler.decode.kryo.layouts.hive_{version.replace('.', '_')}")
        others = {v: t for v, t in tables.items() if t is not None}
        expected = "\n".join(differences(version, ours, others))
        assert expected in (module.__doc__ or ""), (
            f"the docstring of Hive {version}'s table is stale: run python -m tests.decode.kryo_oracle")


def test_every_serializer_of_every_table_has_a_reader() -> None:
    for release in layouts.RELEASES.values():
        for flavor, serializers in release.serializers.items():
            unknown = sorted(set(serializers.values()) - set(SERIALIZER_READERS))
            assert not unknown, (release.name, flavor, unknown)
            no_fields = [c for c, s in serializers.items() if s == "FieldSerializer" and c not in release.fields]
            assert not no_fields, (release.name, flavor, no_fields)


def test_every_function_class_with_a_layout_has_a_hive_name() -> None:
    for release in layouts.RELEASES.values():
        udfs = {name.rsplit(".", 1)[1] for name in release.fields if ".udf.generic.GenericUDF" in name}
        assert udfs - {"GenericUDFBridge"} <= set(UDF_NAMES), (release.name, sorted(udfs - set(UDF_NAMES)))
