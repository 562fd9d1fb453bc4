"""``hive.io.filter.expr.serialized`` and ``sarg.pushdown`` as Hive writes them, decoded the way Hive's reader does,
for every supported Hive release.

Random filters (hypothesis; the seed is printed, replay with ``HSH_TEST_SEED``) are built and serialized with each
release's own classes in one JVM per release (``java/HiveKryoOracle.java`` on that release's jars), read back by
Hive's ``ConvertAstToSearchArg``, and decoded here -- both in the release's format (``writer_version``) and with
the release detected from the bytes; ``toString()`` and ``toOldString()`` must be equal, character for character,
and detection must name the writer's release among those whose format fits. The one deliberate difference,
``NOT BETWEEN`` (Hive 2.3 loses the NOT, HIVE-24209), is compared with what a fixed Hive makes of the same filter.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import os
import random
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from storage_handler.decode.kryo import (
    SUPPORTED_RELEASES,
    KryoDecoded,
    ReleaseMismatchError,
    decode_filter_expression,
    decode_search_argument,
    read_filter_expression,
    read_search_argument,
)
from storage_handler.decode.to_sarg import to_search_argument
from storage_handler.errors import FilterError
from storage_handler.expr import serde as expr_serde
from storage_handler.sarg import serde as sarg_serde
from tests.decode.kryo_oracle import Oracle
from tests.decode.kryo_trees import (
    COLUMNS,
    col,
    const,
    filter_trees,
    fn,
    has_inverted_between,
    null,
)
from tests.helpers import examples

SEED = int(os.environ.get("HSH_TEST_SEED") or random.SystemRandom().randrange(2**32))
print(f"\ntests/decode/test_kryo_conformance.py: hypothesis seed {SEED} (replay: HSH_TEST_SEED={SEED})")
RUN = settings(deadline=None, database=None, derandomize=False, print_blob=True,
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])


def ours_from_expression(text: str, zone: str = "UTC", release: str | None = None) -> tuple[str, str]:
    sarg = to_search_argument(decode_filter_expression(text, zone=zone, writer_version=release)).sarg
    return sarg.to_string(), sarg.to_old_string()


def check_detection(text: str, release: str, read: Callable[..., KryoDecoded[Any]], canonical: Callable[[Any], str],
                    zone: str = "UTC") -> None:
    """Detection names ``release`` (the writer) among the releases that fit, and each release it names reads the
    bytes to the same filter while every other one refuses them."""
    detected = read(text, zone=zone)
    assert release in detected.match.releases and detected.match.named_by is None, (SEED, detected.match)
    for other in SUPPORTED_RELEASES:
        if other in detected.match.releases:
            assert canonical(read(text, zone=zone, writer_version=other).value) == canonical(detected.value)
        else:
            with pytest.raises(ReleaseMismatchError):
                read(text, zone=zone, writer_version=other)


def check_expression(oracle: Oracle, tree: dict, zone: str = "UTC") -> None:
    answer = oracle.expression(tree)
    assert len(answer) == 5, (SEED, answer, json.dumps(tree))
    text, hive_new, hive_old, fixed_new, fixed_old = answer
    if not has_inverted_between(tree):
        assert (fixed_new, fixed_old) == (hive_new, hive_old)
    assert ours_from_expression(text, zone, oracle.release) == (fixed_new, fixed_old), (SEED, json.dumps(tree))
    assert ours_from_expression(text, zone) == (fixed_new, fixed_old), (SEED, json.dumps(tree))
    check_detection(text, oracle.release, read_filter_expression, expr_serde.dumps, zone)


@seed(SEED)
@settings(RUN, max_examples=examples(600))
@given(tree=filter_trees(max_leaves=16))
def test_serialized_expressions_decode_to_hives_search_argument(release_oracle: Oracle, tree: dict) -> None:
    check_expression(release_oracle, tree)


@seed(SEED)
@settings(RUN, max_examples=examples(300))
@given(tree=filter_trees(max_leaves=10))
def test_kryo_search_arguments_decode_as_hive_reads_them(release_oracle: Oracle, tree: dict) -> None:
    answer = release_oracle.sarg_pushdown(tree)
    assert len(answer) == 3, (SEED, answer, json.dumps(tree))
    text, hive_new, hive_old = answer
    for sarg in (decode_search_argument(text), decode_search_argument(text, writer_version=release_oracle.release)):
        assert (sarg.to_string(), sarg.to_old_string()) == (hive_new, hive_old), (SEED, json.dumps(tree))
    check_detection(text, release_oracle.release, read_search_argument, sarg_serde.dumps)


_ZONES = ["America/Los_Angeles", "Asia/Kolkata", "Australia/Lord_Howe", "Europe/Berlin", "Pacific/Apia"]
_MODERN = st.datetimes(dt.datetime(1900, 1, 1), dt.datetime(2100, 12, 31, 23, 59, 59))


@st.composite
def modern_time_leaf(draw: st.DrawFn) -> dict:
    """A comparison of a date or timestamp column with a constant of 1900-2100 (both sides' zone data agree)."""
    stamp = draw(st.one_of(_MODERN, st.sampled_from([  # wall clocks that do not exist or exist twice somewhere
        dt.datetime(2024, 3, 10, 2, 30), dt.datetime(2024, 11, 3, 1, 30), dt.datetime(2024, 10, 6, 2, 15),
        dt.datetime(2011, 12, 30, 12), dt.datetime(1918, 4, 15, 2, 0)])))
    nanos = draw(st.sampled_from([0, stamp.microsecond * 1000, 123_456_789]))
    if draw(st.booleans()):
        column, value = col("date", "d"), const("date", stamp.date().isoformat())
    else:
        fraction = f".{nanos:09d}".rstrip("0") if nanos else ""
        column, value = col("timestamp", "ts"), const("timestamp", f"{stamp:%Y-%m-%d %H:%M:%S}{fraction}")
    operator = draw(st.sampled_from(["=", "<", ">=", "in"]))
    return fn(operator, column, value)


@seed(SEED)
@settings(RUN, max_examples=examples(150))
@given(zone=st.sampled_from(_ZONES), trees=st.lists(modern_time_leaf(), min_size=1, max_size=4))
def test_dates_and_timestamps_are_read_in_the_writers_zone(release_oracle: Oracle, zone: str, trees: list) -> None:
    """Hive writes DATE/TIMESTAMP constants as epoch millis of the wall clock in its JVM's zone and reads them
    back in its own: with ``zone`` set to that zone, we read the same fields, DST gaps and overlaps included."""
    release_oracle.time_zone(zone)
    try:
        check_expression(release_oracle, fn("or", *trees) if len(trees) > 1 else trees[0], zone)
    finally:
        release_oracle.time_zone("UTC")


def test_reading_in_another_zone_than_the_writer_shifts_like_hive(kryo_oracle: Oracle) -> None:
    """The zone is the writer's: bytes written in Los Angeles read as UTC show the UTC wall clock (Hive's reader in
    a UTC JVM would print the same shifted value)."""
    tree = fn("=", col("timestamp", "ts"), const("timestamp", "2024-01-02 10:11:12"))
    kryo_oracle.time_zone("America/Los_Angeles")
    try:
        text = kryo_oracle.expression(tree)[0]
    finally:
        kryo_oracle.time_zone("UTC")
    assert ours_from_expression(text, "America/Los_Angeles")[1].startswith("leaf-0 = (EQUALS ts 2024-01-02 10:11:12.0)")
    assert ours_from_expression(text, "UTC")[1].startswith("leaf-0 = (EQUALS ts 2024-01-02 18:11:12.0)")


# ------------------------------------------------------------------------------------------ named cases
def test_the_bytes_are_what_the_issue_describes(kryo_oracle: Oracle) -> None:
    text = kryo_oracle.expression(fn("=", col("int", "x"), const("int", "5")))[0]
    assert text.startswith("AQEAamF2YS51dGlsLkFycmF5TGlz")  # Kryo 4: reference 1, class by name: java.util.ArrayList


@pytest.mark.parametrize(("tree", "expected"), [
    (fn("in", col("bigint", "big"), null("bigint"), const("bigint", "1"), const("bigint", "-1")),
     "leaf-0 = (IN big null 1 -1), expr = leaf-0"),
    (fn("<", col("timestamp", "ts"), const("timestamp", "2024-01-02 10:11:12.123456789")),
     "leaf-0 = (LESS_THAN ts 2024-01-02 10:11:12.123456789), expr = leaf-0"),
    (fn("<=>", col("int", "x"), null("int")), "expr = YES_NO_NULL"),
    (fn("<=>", null("int"), col("int", "x")), "expr = YES_NO_NULL"),
    (fn("=", col("date", "d"), const("date", "1000-01-01")), "leaf-0 = (EQUALS d 1000-01-01), expr = leaf-0"),
    (fn("=", col("date", "d"), const("date", "1582-10-10")), "leaf-0 = (EQUALS d 1582-10-20), expr = leaf-0"),
    (fn("and", col("boolean", "b"), fn("=", col("int", "x"), col("int", "y"))),
     "leaf-0 = (EQUALS b true), expr = leaf-0"),
    (fn("=", col("decimal(38,10)", "w"), const("decimal(38,10)", "-1234567890123456789012345678.0123456789")),
     "leaf-0 = (EQUALS w -1234567890123456789012345678.0123456789), expr = leaf-0"),
])
def test_named_cases_match_hive(release_oracle: Oracle, tree: dict, expected: str) -> None:
    check_expression(release_oracle, tree)
    assert ours_from_expression(release_oracle.expression(tree)[0])[1] == expected


def test_children_in_an_arrays_as_list(release_oracle: Oracle) -> None:
    """Hive registers Arrays.asList lists with a serializer of its own (class id 13): also read."""
    tree = {**fn("and", fn("=", col("int", "x"), const("int", "1")), {**fn("in", col("string", "s"), const("string", "a"),
                                                                            const("string", "b")), "aslist": True}),
            "aslist": True}
    text = release_oracle.expression(tree)[0]
    assert base64.b64decode(text)[1] == 13 + 2  # the children list: registered id 13, not a class name
    check_expression(release_oracle, tree)


def test_not_between_follows_fixed_hive(kryo_oracle: Oracle) -> None:
    """Hive 2.3.10 turns x NOT BETWEEN 1 AND 5 into BETWEEN (HIVE-24209): a file holding only 3 would be pruned
    although the filter matches nothing there... and a file holding only 7 would be pruned although it matches.
    We keep the NOT, like Hive 4."""
    tree = fn("between", const("boolean", "true"), col("int", "x"), const("int", "1"), const("int", "5"))
    _, _, hive_old, _, fixed_old = kryo_oracle.expression(tree)
    assert hive_old == "leaf-0 = (BETWEEN x 1 5), expr = leaf-0"
    assert fixed_old == "leaf-0 = (BETWEEN x 1 5), expr = (not leaf-0)"
    assert ours_from_expression(kryo_oracle.expression(tree)[0])[1] == fixed_old


@pytest.mark.parametrize(("column", "constant", "hive"), [
    ("int", const("double", "1.5"), "leaf-0 = (LESS_THAN x 1), expr = leaf-0"),
    ("bigint", const("decimal(10,2)", "1.5"), "leaf-0 = (LESS_THAN x 1), expr = leaf-0"),
    ("string", const("int", "5"), "leaf-0 = (LESS_THAN x 5), expr = leaf-0"),
])
def test_lossy_literal_conversions_stay_unknown(kryo_oracle: Oracle, column: str, constant: dict, hive: str) -> None:
    """Where the constant's type differs from the column's and Hive's conversion changes the filter (1.5 -> 1 for
    an int column makes x < 1.5 prune files holding 1; '5' against a string column compares numbers as text), we
    keep YES_NO_NULL: never a wrong prune. Hive's planner does not produce these for ordinary queries."""
    tree = fn("<", col(column, "x"), constant)
    text, _, hive_old, _, _ = kryo_oracle.expression(tree)
    assert hive_old == hive
    assert ours_from_expression(text)[1] == "expr = YES_NO_NULL"


def test_every_column_type_of_the_issue_is_covered() -> None:
    assert {"int", "bigint", "string", "double", "date", "timestamp", "boolean"} <= set(COLUMNS.values())
    assert any(t.startswith("decimal") for t in COLUMNS.values())


def test_a_julian_only_date_is_refused_clearly(kryo_oracle: Oracle) -> None:
    """Java keeps 1000-02-29 (a Julian leap day); a Python date cannot hold it: an error, not another date."""
    text = kryo_oracle.expression(fn("=", col("date", "d"), const("date", "1000-02-29")))[0]
    with pytest.raises(FilterError, match="hive.io.filter.expr.serialized.*Julian-calendar date 1000-02-29"):
        decode_filter_expression(text)


def test_the_samples_other_tests_use_are_what_hive_writes(kryo_oracle: Oracle) -> None:
    from tests.decode import hive_samples as s

    assert kryo_oracle.expression(s.EXPR_X2_UPPER_Y_TREE)[0] == s.EXPR_X2_UPPER_Y
    assert kryo_oracle.sarg_pushdown(s.SARG_X3_TREE)[0] == s.SARG_X3
    kryo_oracle.time_zone("America/Los_Angeles")
    try:
        assert kryo_oracle.expression(s.EXPR_TS_TREE)[0] == s.EXPR_TS_LOS_ANGELES
    finally:
        kryo_oracle.time_zone("UTC")
