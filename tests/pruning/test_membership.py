"""Bloom filters and value lists in the vectorized evaluator, with Hive's TruthValue semantics.

Each file is written by pyarrow and indexed by the real index builder; the leaves are built with the
SearchArgument builder, as the decoders build them.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from storage_handler.input_format import attach_stats, scan_batch
from storage_handler.pruning import PredicateEvaluator
from storage_handler.pruning.membership import membership_columns
from storage_handler.sarg import LeafType, SearchArgument, TruthValue
from storage_handler.stats import StatsOptions, build_index, list_data_files
from storage_handler.stats.membership.spec import MembershipSpec
from storage_handler.types import parse_schema_text
from tests.pruning.helpers import builder, negated, single

TV = TruthValue
SCHEMA = "uid bigint, code string, i int, d decimal(5,2), day date, ts timestamp, c char(2)"
T0 = dt.datetime(2024, 1, 2, 3, 4, 5, 6)
FILES: dict[str, dict[str, list[Any]]] = {
    # no nulls; one code
    "a.parquet": {"uid": [10, 20, 30, 1000], "code": ["x"] * 4, "i": [1, 2, 3, 4],
                  "d": [Decimal("1.50")] * 4, "day": [dt.date(2024, 1, 1)] * 4, "ts": [T0] * 4, "c": ["q"] * 4},
    # nulls everywhere; two codes
    "b.parquet": {"uid": [10, 500, None, 1000], "code": ["x", "y", None, "y"], "i": [None, 7, 9, 11],
                  "d": [None, Decimal("-2.25"), Decimal("3"), None], "day": [None, dt.date(1969, 12, 31)] * 2,
                  "ts": [None, T0, None, T0 + dt.timedelta(microseconds=1)], "c": ["q", None, "r", "r"]},
}
SPEC = MembershipSpec(("uid", "i", "d", "day", "ts", "code"), 0.01, ("code", "i", "d", "day", "ts"), 8)


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> pa.Table:
    root = tmp_path_factory.mktemp("membership")
    types = {"uid": pa.int64(), "code": pa.string(), "i": pa.int32(), "d": pa.decimal128(5, 2), "day": pa.date32(),
             "ts": pa.timestamp("us"), "c": pa.string()}
    for name, data in FILES.items():
        pq.write_table(pa.table({k: pa.array(v, types[k]) for k, v in data.items()}), root / name)
    location = f"file:{root}"
    return build_index(location, parse_schema_text(SCHEMA), list_data_files(location, []),
                       options=StatsOptions(membership=SPEC), max_workers=1)


def truth(index: pa.Table, sarg: SearchArgument) -> list[TruthValue]:
    codes = PredicateEvaluator(sarg, parse_schema_text(SCHEMA)).truth_values(index).to_pylist()
    names = {1: "YES", 2: "NO", 4: "NULL", 3: "YES_NO", 5: "YES_NULL", 6: "NO_NULL", 7: "YES_NO_NULL"}
    return [TV[names[c]] for c in codes]


def test_a_ruled_out_literal_is_no_or_no_null_where_the_column_has_nulls(index: pa.Table) -> None:
    assert truth(index, single("equals", "uid", 25)) == [TV.NO, TV.NO_NULL]  # inside both files' [min, max]
    assert truth(index, single("equals", "uid", 500)) == [TV.NO, TV.YES_NO_NULL]
    assert truth(index, single("null_safe_equals", "uid", 25)) == [TV.NO, TV.NO]  # <=> never NULL
    assert truth(index, single("in_", "uid", 25, 26, 27)) == [TV.NO, TV.NO_NULL]
    assert truth(index, single("in_", "uid", 25, 30)) == [TV.YES_NO, TV.NO_NULL]


def test_value_lists_answer_equality_exactly(index: pa.Table) -> None:
    assert truth(index, single("equals", "code", "x")) == [TV.YES, TV.YES_NO_NULL]
    assert truth(index, negated("equals", "code", "x")) == [TV.NO, TV.YES_NO_NULL]  # <> prunes file a
    assert truth(index, negated("in_", "code", "x", "y")) == [TV.NO, TV.NO_NULL]  # NOT IN covering every value
    assert truth(index, single("in_", "code", "y", "zz")) == [TV.NO, TV.YES_NO_NULL]
    assert truth(index, single("null_safe_equals", "code", "x")) == [TV.YES, TV.YES_NO]
    assert truth(index, single("equals", "i", 9)) == [TV.NO, TV.YES_NO_NULL]
    assert truth(index, single("equals", "i", 8)) == [TV.NO, TV.NO_NULL]  # between 7 and 11, not listed


@pytest.mark.parametrize(("op", "column", "literals", "expected"), [
    ("equals", "d", (Decimal("1.5"),), [TV.YES, TV.NO_NULL]),  # another scale, same value
    ("equals", "d", (Decimal("-2.250"),), [TV.NO, TV.YES_NO_NULL]),
    ("equals", "d", (Decimal("1.505"),), [TV.NO, TV.NO_NULL]),  # no decimal(5,2) equals it
    ("equals", "d", (2,), [TV.NO, TV.NO_NULL]),  # a LONG literal against a decimal column
    ("equals", "i", (9.0,), [TV.NO, TV.YES_NO_NULL]),  # a FLOAT literal that is an int value
    ("equals", "i", (8.0,), [TV.NO, TV.NO_NULL]),
    ("equals", "day", (dt.date(1969, 12, 31),), [TV.NO, TV.YES_NULL]),  # the only value, with nulls
    ("equals", "day", (dt.date(1970, 1, 1),), [TV.NO, TV.NO_NULL]),
    ("equals", "ts", (T0,), [TV.YES, TV.YES_NO_NULL]),
    ("equals", "ts", (T0 + dt.timedelta(microseconds=2),), [TV.NO, TV.NO_NULL]),
    ("equals", "i", ("abc",), [TV.YES_NO_NULL, TV.YES_NO_NULL]),  # does not convert: unknown, never NO
    ("equals", "c", ("q",), [TV.YES_NO_NULL, TV.YES_NO_NULL]),  # char is never pruned
])
def test_literals_follow_the_leaf_conversion_rules(index: pa.Table, op: str, column: str,
                                                    literals: tuple[object, ...], expected: list[TruthValue]) -> None:
    assert truth(index, single(op, column, *literals)) == expected


def test_a_string_literal_on_a_bigint_column_is_unknown_even_with_a_filter(index: pa.Table) -> None:
    b = builder()
    b.equals("uid", LeafType.STRING, "10")
    assert truth(index, b.build()) == [TV.YES_NO_NULL, TV.YES_NO_NULL]


def test_files_the_index_does_not_know_are_kept(index: pa.Table, tmp_path: Path) -> None:
    from storage_handler.stats import DataFile

    listing = [DataFile(p, s, m, {}, c) for p, s, m, c in zip(
        index.column("path").to_pylist(), index.column("size").to_pylist(),
        index.column("modification_time").to_pylist(), index.column("version_tag").to_pylist(), strict=True)]
    listing[1] = DataFile(listing[1].path, listing[1].size + 1, listing[1].mtime_ms, {}, listing[1].version)
    scan, unknown = attach_stats(scan_batch(listing), index)
    assert unknown == 1 and truth(scan, single("equals", "uid", 25)) == [TV.NO, TV.YES_NO_NULL]


def test_the_query_names_which_filters_to_load() -> None:
    schema = parse_schema_text(SCHEMA)
    b = builder().start_or()
    b.equals("uid", LeafType.LONG, 1)
    b.less_than("code", LeafType.STRING, "a")
    b.in_("day", LeafType.DATE, dt.date(2024, 1, 1))
    sarg = b.end().build()
    assert membership_columns(PredicateEvaluator(sarg, schema).bound) == {"uid", "day"}


def test_explain_names_the_filter_that_ruled_a_file_out(index: pa.Table) -> None:
    ev = PredicateEvaluator(single("equals", "uid", 25), parse_schema_text(SCHEMA))
    assert [str(r) for r in ev.explain(index, 0).reasons] == [
        "leaf-0 (EQUALS uid 25) = NO (ruled out by the bloom filter of uid)"]
    ev = PredicateEvaluator(single("equals", "i", 8), parse_schema_text(SCHEMA))
    assert [str(r) for r in ev.explain(index, 1).reasons] == [
        "leaf-0 (EQUALS i 8) = NO_NULL (ruled out by the bloom filter and the value list of i)"]
    ev = PredicateEvaluator(negated("in_", "code", "x", "y"), parse_schema_text(SCHEMA))
    assert [str(r) for r in ev.explain(index, 1).reasons] == [
        "not leaf-0 (IN code x y) = YES_NULL (made certain by the value list of code)"]
