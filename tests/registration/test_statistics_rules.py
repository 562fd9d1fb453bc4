"""The pure parts of publishing statistics: Hive's encodings, what the index makes of a partition, and whose
statistics are whose. No metastore here (``test_statistics.py`` runs them against a real one)."""

from __future__ import annotations

import decimal
import json

import pyarrow as pa
import pytest
from hmsclient.genthrift.hive_metastore import ttypes as hms

from storage_handler.registration import hive_stats as H
from storage_handler.registration import stats_ownership as O
from storage_handler.registration.stats_summary import summarize
from storage_handler.stats import stats_table
from storage_handler.stats.files.file_list import DataFile
from storage_handler.stats.index.file_stats import ColumnStats, FileStats
from storage_handler.types import parse_hive_type


# ---------------------------------------------------------------------------------------------- encodings
@pytest.mark.parametrize(("unscaled", "expected"), [
    (0, b"\x00"), (1, b"\x01"), (-1, b"\xff"), (127, b"\x7f"), (128, b"\x00\x80"), (-128, b"\x80"),
    (-129, b"\xff\x7f"), (255, b"\x00\xff"), (256, b"\x01\x00"),
    (-(10**37), (-(10**37)).to_bytes(16, "big", signed=True)),
])
def test_decimals_are_encoded_as_java_big_integer_bytes(unscaled: int, expected: bytes) -> None:
    """``BigInteger.toByteArray()``: the fewest two's-complement bytes (what the metastore hands back)."""
    encoded = H.hive_decimal(decimal.Decimal(unscaled).scaleb(-2), 2)
    assert (encoded.unscaled, encoded.scale) == (expected, 2)
    assert H.decimal_of(encoded) == decimal.Decimal(unscaled).scaleb(-2)


def test_decimals_keep_all_38_digits() -> None:
    value = decimal.Decimal("-1234567890123456789012345678.9012345678")
    encoded = H.hive_decimal(value, 10)
    assert int.from_bytes(encoded.unscaled, "big", signed=True) == -12345678901234567890123456789012345678
    assert H.decimal_of(encoded) == value
    assert H.hive_decimal(decimal.Decimal("1.5"), 3).unscaled == (1500).to_bytes(2, "big")
    with pytest.raises(ValueError, match="fractional"):
        H.hive_decimal(decimal.Decimal("1.2345"), 2)


def test_distinct_counts_are_the_lower_bound_the_footers_prove_never_zero_next_to_bounds() -> None:
    def ndv(col: H.ColumnSummary, rows: int) -> int:
        obj = H.column_stats_obj("c", col, rows)
        assert obj is not None
        return int(H.union_value(obj.statsData).numDVs)

    assert ndv(H.ColumnSummary("int", 3, 3, 0), 10) == 1
    assert ndv(H.ColumnSummary("int", 3, 4, 0), 10) == 2
    assert ndv(H.ColumnSummary("int", None, None, 10), 10) == 0  # all null: no value, no bounds
    assert ndv(H.ColumnSummary("date", -400, 20000, 0), 10) == 2


@pytest.mark.parametrize("col", [
    H.ColumnSummary("int", 1, 2, None),  # null count unknown in some file
    H.ColumnSummary("string", "a", "b", 0), H.ColumnSummary("varchar(3)", "a", "b", 0),
    H.ColumnSummary("char(3)", "a", "b", 0), H.ColumnSummary("binary", b"a", b"b", 0),
    H.ColumnSummary("timestamp", 1, 2, 0), H.ColumnSummary("array<int>", None, None, 0),
    H.ColumnSummary("boolean", False, True, 0),  # both kinds: true/false counts unknown
    H.ColumnSummary("int", 1, 2, 11),  # more nulls than rows: the index contradicts itself
    # values whose range is unknown: the metastore vouches for every column written, and Hive 2 then answers
    # max(c) as NULL (or leaves the partition out) from an object without bounds
    H.ColumnSummary("double", None, None, 2), H.ColumnSummary("int", None, None, 0),
    H.ColumnSummary("date", None, 5, 0), H.ColumnSummary("decimal(5,2)", None, None, 1),
    H.ColumnSummary("double", float("-inf"), 2.0, 1), H.ColumnSummary("double", 1.0, float("nan"), 1),
], ids=["nulls_unknown", "string", "varchar", "char", "binary", "timestamp", "array", "mixed_bool", "bad_nulls",
        "double_unbounded", "int_unbounded", "date_half", "decimal_unbounded", "double_inf", "double_nan"])
def test_what_footers_cannot_say_is_not_published(col: H.ColumnSummary) -> None:
    assert H.column_stats_obj("c", col, 10) is None


def test_unbounded_values_with_unknown_row_counts_are_not_published() -> None:
    assert H.column_stats_obj("c", H.ColumnSummary("int", None, None, 0), None) is None
    assert H.column_stats_obj("c", H.ColumnSummary("int", 1, 2, 0), None) is not None


def test_booleans_only_with_exact_counts_and_all_null_columns_without_bounds() -> None:
    true = H.column_stats_obj("b", H.ColumnSummary("boolean", True, True, 3), 10)
    assert true is not None and (true.statsData.booleanStats.numTrues, true.statsData.booleanStats.numFalses) == (7, 0)
    nulls = H.column_stats_obj("b", H.ColumnSummary("boolean", None, None, 10), 10)
    assert nulls is not None and nulls.statsData.booleanStats.numNulls == 10
    all_null = H.column_stats_obj("d", H.ColumnSummary("double", None, None, 10), 10)
    assert all_null is not None and all_null.statsData.doubleStats.numDVs == 0  # no values: nothing to bound
    zero = H.column_stats_obj("d", H.ColumnSummary("float", -0.0, 0.0, 0), 1)
    assert zero is not None and str(zero.statsData.doubleStats.lowValue) == "0.0"  # the metastore keeps 0.0


def test_incomplete_structs_are_refused_before_sending() -> None:
    bad = hms.ColumnStatisticsObj("c", "int", hms.ColumnStatisticsData(
        longStats=hms.LongColumnStatsData(lowValue=1, highValue=2, numNulls=0)))
    with pytest.raises(ValueError, match="numDVs"):
        H.check_required(bad)
    with pytest.raises(ValueError, match="exactly one"):
        H.check_required(hms.ColumnStatisticsObj("c", "int", hms.ColumnStatisticsData()))


def test_table_level_merge_is_bounds_of_bounds_and_unknown_anywhere_is_unknown() -> None:
    cols = [("a", "int"), ("b", "int"), ("s", "string")]
    one = H.Summary(2, 100, 10, {"a": H.ColumnSummary("int", 1, 5, 0), "b": H.ColumnSummary("int", 1, 1, None)})
    two = H.Summary(1, 50, 4, {"a": H.ColumnSummary("int", -3, 2, 4), "b": H.ColumnSummary("int", 7, 7, 0)})
    whole = H.merge([one, two], cols)
    assert (whole.files, whole.size, whole.rows) == (3, 150, 14)
    assert whole.columns["a"] == H.ColumnSummary("int", 1, 5, 4)  # `two` is all null: its (absent) bounds don't count
    assert whole.columns["b"].nulls is None and "s" not in whole.columns
    assert H.merge([one, H.Summary(1, 1, None, {})], cols).rows is None


# ---------------------------------------------------------------------------------------------- from the index
def _index(rows: list[tuple[str, int, int | None, dict[str, ColumnStats]]]) -> pa.Table:
    columns = [("i", parse_hive_type("int")), ("d", parse_hive_type("decimal(9,2)")),
               ("dt", parse_hive_type("date")), ("x", parse_hive_type("double")), ("s", parse_hive_type("string"))]
    entries = [(DataFile(path, size, 0, {}, "t"), FileStats(records, cols, None if records is not None else "bad"))
               for path, size, records, cols in rows]
    return stats_table(columns, entries)


def test_a_partition_is_the_files_directly_in_its_folder_and_one_unknown_makes_it_unknown() -> None:
    d = decimal.Decimal
    index = _index([
        ("dt=1/a.parquet", 10, 5, {"i": ColumnStats(1, 4, 0), "d": ColumnStats(d("1.50"), d("2.00"), 1),
                                   "dt": ColumnStats(-10, 3, 0), "x": ColumnStats(0.5, 9.5, 0)}),
        ("dt=1/b.parquet", 20, 3, {"i": ColumnStats(None, None, 3), "d": ColumnStats(d("-1.00"), d("0.25"), 0),
                                   "dt": ColumnStats(None, None, 1), "x": ColumnStats(1.0, 2.0, None)}),
        ("dt=2/c.parquet", 30, None, {}),  # unreadable: size known, rows and everything else unknown
        ("/elsewhere/p/e.parquet", 7, 2, {"i": ColumnStats(9, 9, 0)}),
        ("top.parquet", 1, 1, {"i": ColumnStats(0, 0, 0)}),
    ])
    got = summarize(index, [("i", "int"), ("d", "decimal(9,2)"), ("dt", "date"), ("x", "double"), ("s", "string")],
                    float_bounds=True)
    assert set(got) == {"dt=1", "dt=2", "/elsewhere/p", ""}
    one = got["dt=1"]
    assert (one.files, one.size, one.rows) == (2, 30, 8)
    assert one.columns["i"] == H.ColumnSummary("int", 1, 4, 3)  # b.parquet is all null: no bounds needed from it
    assert one.columns["d"] == H.ColumnSummary("decimal(9,2)", d("-1.00"), d("2.00"), 1)
    assert one.columns["dt"] == H.ColumnSummary("date", None, None, 1)  # b has values but no bounds
    assert one.columns["x"] == H.ColumnSummary("double", 0.5, 9.5, None) and "s" not in one.columns
    two = got["dt=2"]
    assert (two.files, two.size, two.rows) == (1, 30, None)
    assert two.columns["i"] == H.ColumnSummary("int", None, None, None)
    assert got["/elsewhere/p"].columns["i"] == H.ColumnSummary("int", 9, 9, 0)
    no_floats = summarize(index, [("x", "double")], float_bounds=False)
    assert no_floats["dt=1"].columns["x"] == H.ColumnSummary("double", None, None, None)


# ---------------------------------------------------------------------------------------------- whose
def test_column_stats_accurate_is_written_and_read_as_hive_does() -> None:
    expected = '{"BASIC_STATS":"true","COLUMN_STATS":{"a":"true","b":"true"}}'
    assert O.render_accurate(True, ["b", "a"]) == expected
    assert O.render_accurate(False, []) is None
    assert O.parse_accurate('{"BASIC_STATS":"true","COLUMN_STATS":{"A":"true","b":"false"}}') == (True, {"a"})
    assert O.parse_accurate("TRUE") == (True, set())  # Hive < 2.1
    assert O.parse_accurate("{not json") == (False, set())
    wide = [f"column_with_a_long_name_{i:04d}" for i in range(200)]
    assert O.render_accurate(True, wide) == '{"BASIC_STATS":"true"}'  # would not fit VARCHAR(4000)


def test_the_marker_round_trips_and_fits_the_metastore() -> None:
    marker = O.Marker(7, "b" * 16, "c" * 16, ("a", "b"), "2026-11-28T10:00:00Z", 12)
    assert O.Marker.parse(marker.render()) == marker
    wide = O.Marker(7, "b" * 16, "c" * 16, tuple(f"col_{i:05d}" for i in range(1000)), "2026-11-28T10:00:00Z")
    text = wide.render()
    assert len(text) <= O.MAX_MARKER and O.Marker.parse(text) == O.Marker(7, "b" * 16, "c" * 16, None, wide.at)
    assert O.Marker.parse('{"v":2}') is None and O.Marker.parse("garbage") is None


def _long(name: str, low: int) -> hms.ColumnStatisticsObj:
    return hms.ColumnStatisticsObj(name, "int", hms.ColumnStatisticsData(
        longStats=hms.LongColumnStatsData(lowValue=low, highValue=9, numNulls=0, numDVs=2)))


def test_whose_statistics_decides_what_is_written() -> None:
    fast = {"numFiles": "1", "totalSize": "10"}
    claim = {**fast, "numRows": "5", "COLUMN_STATS_ACCURATE": O.render_accurate(True, ["a", "b", "gone"]) or ""}
    ours = [_long("a", 1), _long("b", 1), _long("c", 1)]
    theirs = [_long("a", 0), _long("b", 1)]  # a: analyzed by someone; b: equal to ours (a run that stopped)
    d = O.decide(claim, theirs, fast, ours)
    assert d.write_basic is False  # their numRows, their files unchanged
    assert d.keep_columns == ("a",) and d.write_columns == ("b", "c")  # "gone": claimed, no statistics
    changed = O.decide(claim, theirs, {"numFiles": "2", "totalSize": "20"}, ours)  # the files changed: stale
    assert changed.write_basic and changed.keep_columns == () and changed.write_columns == ("a", "b", "c")
    assert O.decide(claim, theirs, fast, ours, overwrite=True).write_columns == ("a", "b", "c")
    assert O.decide(fast, theirs, fast, ours).write_basic is True  # nobody vouches for the metastore's fast stats
    off = O.decide(claim, theirs, {"numFiles": "2", "totalSize": "20"}, ours, publish=False)
    assert (off.write_basic, off.mark_stale, off.write_columns) == (False, True, ())
    assert O.decide(claim, theirs, fast, ours, publish=False).mark_stale is False


def test_our_own_statistics_are_recognized_rewritten_and_left_alone_when_current() -> None:
    summary = H.Summary(2, 30, 8, {"a": H.ColumnSummary("int", 1, 9, 0)})
    objs = H.column_objects(summary)
    decision = O.decide({}, [], O.basic_parameters(summary), objs)
    params = O.new_parameters({"numFiles": "2", "totalSize": "30"}, summary, decision, objs, 3, at="now")
    assert json.loads(params[O.ACCURATE]) == {"BASIC_STATS": "true", "COLUMN_STATS": {"a": "true"}}
    assert O.unchanged(params, summary, objs)  # a publish of the same index sends nothing
    assert not O.unchanged(params, H.Summary(3, 40, 9, summary.columns), objs)
    later = O.decide(params, objs, O.basic_parameters(summary), [])  # the column can no longer be published
    assert later.write_basic and later.delete_columns == ("a",)
    stale = {**params, "numFiles": "3", "totalSize": "40"}
    marked = O.new_parameters(stale, summary, O.decide(stale, objs, {"numFiles": "4", "totalSize": "50"}, [],
                                                       publish=False), [], 4)
    assert O.ACCURATE not in marked and marked["numRows"] == "8"  # Hive's stale mark: claims gone, numbers kept
    assert O.new_parameters({"rawDataSize": "1"}, summary, decision, objs, 3).get("rawDataSize") is None
