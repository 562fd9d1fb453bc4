"""Which Hive release's format the Kryo bytes are read in: named, detected, refused.

Real bytes from each release's own jars (one oracle JVM per release): filters that hold a Hadoop ``Text`` (BETWEEN
over strings, ``trim``) are written differently by the two supported releases' jars. Read with a setting naming
the other release they must be refused, never misread; read with no setting, exactly the writer's release must be
detected. The decision rules that real bytes cannot reach (two releases decoding to different filters) are checked
on a copy of a release's table changed on purpose.
"""

from __future__ import annotations

import dataclasses
import os
import random
from types import MappingProxyType

import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from storage_handler import job_conf as keys
from storage_handler.decode.kryo import (
    SUPPORTED_RELEASES,
    AmbiguousReleaseError,
    KryoFormatError,
    ReleaseMismatchError,
    UnsupportedReleaseError,
    decode_filter_expression,
    graph,
    layouts,
    read_filter_expression,
    read_search_argument,
    releases,
)
from storage_handler.decode.serialized import decode_job_conf, decode_job_conf_filter
from storage_handler.errors import FilterError
from storage_handler.expr import serde as expr_serde
from storage_handler.sarg import serde as sarg_serde
from tests.decode.hive_samples import EXPR_X2_UPPER_Y, SARG_X3
from tests.decode.kryo_oracle import Oracle
from tests.decode.kryo_trees import col, const, filter_trees, fn, value_text

SEED = int(os.environ.get("HSH_TEST_SEED") or random.SystemRandom().randrange(2**32))
print(f"\ntests/decode/test_kryo_releases.py: hypothesis seed {SEED} (replay: HSH_TEST_SEED={SEED})")
EXAMPLES = int(os.environ.get("HSH_RELEASE_EXAMPLES") or 150)  # a run with 1500 found nothing more
RUN = settings(deadline=None, database=None, print_blob=True, max_examples=EXAMPLES,
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])
EXPR_KEY = keys.FILTER_EXPR
STRINGS = ("string", "varchar(8)", "char(5)")


@st.composite
def text_leaf(draw: st.DrawFn) -> dict:
    """A filter part whose initialized UDF holds a Hadoop Text (the one class whose layout differs)."""
    if draw(st.booleans()):
        hive_type = draw(st.sampled_from(STRINGS))
        low, high = (const(hive_type, draw(value_text("varchar(8)"))) for _ in range(2))
        invert = const("boolean", draw(st.sampled_from(["true", "false"])))
        return fn("between", invert, col(hive_type, "s"), low, high)
    return fn("=", fn("trim", col("string", "s")), const("string", draw(value_text("varchar(8)"))))


def text_filters() -> st.SearchStrategy[dict]:
    return st.one_of(text_leaf(), st.builds(lambda tree, leaf: fn("and", tree, leaf), filter_trees(6), text_leaf()))


@pytest.fixture(scope="module")
def both(oracle_pool) -> dict[str, Oracle]:
    return {release: oracle_pool.get(release) for release in SUPPORTED_RELEASES}


def other_than(release: str) -> str:
    return next(r for r in SUPPORTED_RELEASES if r != release)


# ------------------------------------------------------------------------------------------ real bytes
def test_the_releases_write_text_differently_and_everything_else_alike(both: dict[str, Oracle]) -> None:
    """Guards the tests below: they are only meaningful while the jars write these filters differently."""
    between = fn("between", const("boolean", "false"), col("string", "s"), const("string", "a"),
                 const("string", "b"))
    texts = {release: oracle.expression(between)[0] for release, oracle in both.items()}
    assert len(set(texts.values())) == len(SUPPORTED_RELEASES), texts
    plain = fn("=", col("int", "x"), const("int", "1"))
    assert len({oracle.expression(plain)[0] for oracle in both.values()}) == 1


@seed(SEED)
@settings(RUN)
@given(tree=text_filters())
def test_bytes_of_one_release_named_as_the_other_are_refused(both: dict[str, Oracle], tree: dict) -> None:
    for writer, oracle in both.items():
        answer = oracle.expression(tree)
        assert len(answer) == 5, (SEED, answer)
        text = answer[0]
        expected = read_filter_expression(text, writer_version=writer)
        assert expected.match.releases == (writer,) and expected.match.named_by == "writer_version"
        wrong = other_than(writer)
        with pytest.raises(ReleaseMismatchError, match=(
                rf"job property '{EXPR_KEY}' cannot be decoded in Hive {wrong}'s format, which 'writer_version' "
                rf"names: .*; it does decode in the format of Hive {writer}\. Set 'writer_version' to the release")):
            read_filter_expression(text, writer_version=wrong)
        detected = read_filter_expression(text)
        assert detected.match.releases == (writer,) and detected.match.named_by is None, (SEED, tree)
        assert expr_serde.dumps(detected.value) == expr_serde.dumps(expected.value)
        assert "no other supported release's format fits" in detected.match.describe()


def test_the_job_configuration_names_the_release(both: dict[str, Oracle]) -> None:
    tree = fn("between", const("boolean", "false"), col("string", "s"), const("string", "a"), const("string", "b"))
    old, new = (both[r].expression(tree)[0] for r in SUPPORTED_RELEASES)
    oldest, newest = SUPPORTED_RELEASES[0], SUPPORTED_RELEASES[-1]
    found = decode_job_conf_filter({EXPR_KEY: old, keys.SPARK_HIVE_VERSION: oldest})
    assert found.kryo_formats[0].describe() == f"Hive {oldest}'s format (named by spark.sql.hive.version)"
    assert (found.sarg_from, found.expression_from) == (EXPR_KEY, EXPR_KEY)
    assert found.decoded.sarg.to_old_string() == "leaf-0 = (BETWEEN s a b), expr = leaf-0"
    with pytest.raises(ReleaseMismatchError, match=f"Hive {newest}'s format, which 'spark.sql.hive.version' names"):
        decode_job_conf({EXPR_KEY: old, keys.SPARK_HIVE_VERSION: newest})
    # ours wins over Spark's; "auto" lets the bytes tell even when Spark's key names a release
    named = decode_job_conf_filter({EXPR_KEY: old, keys.SPARK_HIVE_VERSION: newest, keys.HIVE_WRITER_VERSION: oldest})
    assert named.kryo_formats[0].named_by == keys.HIVE_WRITER_VERSION
    auto = decode_job_conf_filter({EXPR_KEY: new, keys.SPARK_HIVE_VERSION: oldest, keys.HIVE_WRITER_VERSION: "auto"})
    assert auto.kryo_formats[0].releases == (newest,) and auto.kryo_formats[0].named_by is None


def test_bytes_every_release_writes_alike_are_reported_as_such() -> None:
    found = decode_job_conf_filter({EXPR_KEY: EXPR_X2_UPPER_Y, keys.SARG_PUSHDOWN: SARG_X3})
    assert [(m.key, m.releases, m.named_by) for m in found.kryo_formats] == [
        (EXPR_KEY, SUPPORTED_RELEASES, None), (keys.SARG_PUSHDOWN, SUPPORTED_RELEASES, None)]
    assert found.kryo_formats[0].describe().startswith(f"Hive {' and '.join(SUPPORTED_RELEASES)}'s formats alike")
    assert decode_job_conf_filter({"unrelated": "1"}).kryo_formats == ()


# ------------------------------------------------------------------------------------------ unverified releases
@pytest.mark.parametrize("version", ["3.1.3", "4.0.1", "2.3.8", "2.3.9-amzn-1", "latest"])
def test_releases_that_cannot_be_verified_are_refused(version: str) -> None:
    supported = ", ".join(SUPPORTED_RELEASES)
    with pytest.raises(UnsupportedReleaseError, match=(
            rf"^job property '{EXPR_KEY}' cannot be decoded: 'hsh.hive.writer.version' names Hive '{version}', "
            rf"whose Kryo format this decoder is not verified against: the supported releases are {supported}; "
            r"set it to one of them, or to 'auto' to let the bytes tell$")):
        decode_job_conf({EXPR_KEY: EXPR_X2_UPPER_Y, keys.HIVE_WRITER_VERSION: version})
    with pytest.raises(UnsupportedReleaseError, match="'spark.sql.hive.version' names Hive .*set 'hsh.hive.writer"):
        decode_job_conf({keys.SARG_PUSHDOWN: SARG_X3, keys.SPARK_HIVE_VERSION: version})
    with pytest.raises(UnsupportedReleaseError, match="'writer_version' names"):
        decode_filter_expression(EXPR_X2_UPPER_Y, writer_version=version)


def test_the_release_matters_only_when_kryo_bytes_are_read() -> None:
    """Spark's key naming an old Hive does not break a read whose filter is HiveQL text."""
    conf = {"columns": "x", "columns.types": "int", keys.FILTER_TEXT: "x = 1", keys.SPARK_HIVE_VERSION: "2.3.7"}
    assert decode_job_conf(conf).sarg.to_old_string() == "leaf-0 = (EQUALS x 1), expr = leaf-0"


def test_corrupt_bytes_are_not_a_question_of_the_release() -> None:
    """Bytes that fail before anything release-specific is read give the plain error, whatever is named."""
    for version in (None, *SUPPORTED_RELEASES):
        with pytest.raises(KryoFormatError, match=f"^job property '{EXPR_KEY}' cannot be decoded: .*never ends") as e:
            decode_filter_expression(EXPR_X2_UPPER_Y[:40], writer_version=version)
        assert not isinstance(e.value, ReleaseMismatchError)


# ------------------------------------------------------------------------------------------ decision rules
def with_release(monkeypatch: pytest.MonkeyPatch, version: str, **changes: object) -> None:
    """Add a fake release ``version``: the newest release's table with ``changes``, as if generated."""
    base = layouts.RELEASES[SUPPORTED_RELEASES[-1]]
    fake = dataclasses.replace(base, version=version, **changes)
    table = MappingProxyType({version: fake, **layouts.RELEASES})
    order = (*SUPPORTED_RELEASES, version)
    monkeypatch.setattr(releases, "RELEASES", table)
    monkeypatch.setattr(releases, "SUPPORTED", order)
    monkeypatch.setattr(releases, "_ALL", "Hive " + " or ".join(order))
    monkeypatch.setattr(graph, "VARIANT", layouts._variant(list(table.values())))


def swapped_enum(cls: str, first: str, second: str) -> MappingProxyType:
    enums = dict(layouts.RELEASES[SUPPORTED_RELEASES[-1]].enums)
    enums[cls] = tuple({first: second, second: first}.get(c, c) for c in enums[cls])
    return MappingProxyType(enums)


def test_two_releases_decoding_to_different_filters_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    leaf_operator = "org.apache.hadoop.hive.ql.io.sarg.PredicateLeaf$Operator"
    with_release(monkeypatch, "9.9.9", enums=swapped_enum(leaf_operator, "EQUALS", "LESS_THAN"))
    with pytest.raises(AmbiguousReleaseError, match=(
            r"^job property 'sarg.pushdown' decodes to different filters in the formats of Hive 2\.3\.9 and "
            r"2\.3\.10 and 9\.9\.9; set 'hsh.hive.writer.version' to the release that wrote it$")):
        read_search_argument(SARG_X3)
    assert "LESS_THAN x 3" in read_search_argument(SARG_X3, writer_version="9.9.9").value.to_old_string()
    assert "EQUALS x 3" in read_search_argument(SARG_X3, writer_version="2.3.10").value.to_old_string()


def test_releases_that_read_a_differing_entry_alike_are_all_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    """A table entry that differs but is read to the same filter (an enum constant past those written)."""
    compare = "org.apache.hadoop.hive.ql.udf.generic.GenericUDFBaseCompare$CompareType"
    enums = dict(layouts.RELEASES[SUPPORTED_RELEASES[-1]].enums)
    enums[compare] = (*enums[compare], "ADDED_LATER")
    with_release(monkeypatch, "9.9.9", enums=MappingProxyType(enums))
    detected = read_filter_expression(EXPR_X2_UPPER_Y)
    assert detected.match.releases == (*SUPPORTED_RELEASES, "9.9.9")
    assert expr_serde.dumps(detected.value) == expr_serde.dumps(decode_filter_expression(EXPR_X2_UPPER_Y))


def test_only_the_release_that_fits_is_detected(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fake release whose UDF layout lacks a field cannot read the bytes: detection keeps the real ones."""
    fields = dict(layouts.RELEASES[SUPPORTED_RELEASES[-1]].fields)
    upper = "org.apache.hadoop.hive.ql.udf.generic.GenericUDFOPEqual"
    fields[upper] = fields[upper][1:]
    with_release(monkeypatch, "9.9.9", fields=MappingProxyType(fields))
    assert read_filter_expression(EXPR_X2_UPPER_Y).match.releases == SUPPORTED_RELEASES
    with pytest.raises(ReleaseMismatchError, match=(
            "in Hive 9.9.9's format, which 'writer_version' names: .*it does decode in the format of Hive 2.3.9 and "
            "of Hive 2.3.10")):
        read_filter_expression(EXPR_X2_UPPER_Y, writer_version="9.9.9")


def test_no_release_fits(monkeypatch: pytest.MonkeyPatch) -> None:
    """Bytes that fail in every release's format after a release-specific entry: one error listing each."""
    fields = dict(layouts.RELEASES[SUPPORTED_RELEASES[-1]].fields)
    upper = "org.apache.hadoop.hive.ql.udf.generic.GenericUDFOPEqual"
    fields[upper] = fields[upper][1:]
    with_release(monkeypatch, "9.9.9", fields=MappingProxyType(fields))
    with pytest.raises(FilterError, match=(
            f"^job property '{EXPR_KEY}' cannot be decoded in any supported Hive release's format "
            r"\(as Hive 2\.3\.9's: .*; as Hive 2\.3\.10's: .*; as Hive 9\.9\.9's: .*\)\. It must hold what")):
        read_filter_expression(EXPR_X2_UPPER_Y[:-8])


def test_the_match_is_one_line_for_the_cli() -> None:
    match = read_search_argument(SARG_X3, writer_version="2.3.9").match
    assert match.describe() == "Hive 2.3.9's format (named by writer_version)" and "\n" not in match.describe()
    assert sarg_serde.dumps(read_search_argument(SARG_X3).value) == sarg_serde.dumps(
        read_search_argument(SARG_X3, writer_version="2.3.10").value)
