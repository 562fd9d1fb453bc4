"""Value lists and bloom filters per file in the index: what is kept, exactly; refresh after a changed choice;
loading only the filters a query needs; the table parameters."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from storage_handler.errors import ConfigurationError, StatsIndexError
from storage_handler.stats import StatsOptions, load, read_file_stats, update_index
from storage_handler.stats.membership import bloom as bloom_mod
from storage_handler.stats.membership.spec import MembershipSpec
from storage_handler.types import hive_to_arrow, parse_hive_type, parse_schema_text
from tests.pyarrow_compat import needs_bloom_writer

EPOCH = dt.datetime(1970, 1, 1)


def _stats(path: Path, schema: str, spec: MembershipSpec) -> Any:
    return read_file_stats(str(path), parse_schema_text(schema), StatsOptions(membership=spec))


def _holds(bitset: bytes | None, value: object, hive: str) -> bool:
    assert bitset is not None
    t = parse_hive_type(hive)
    h = bloom_mod.canonical_hashes(pa.array([value], hive_to_arrow(t)), t)
    return bloom_mod.might_contain(bitset, int(h[0]))


def test_value_lists_are_the_exact_distinct_values_up_to_the_cap(tmp_path: Path) -> None:
    path = tmp_path / "f.parquet"
    pq.write_table(pa.table({
        "code": pa.array(["b", "a", None, "b", "ü"] * 10),
        "many": pa.array(list(range(50))),
        "v": pa.array(["abcdef", "abc", "xy", None, "abcz"] * 10),
    }), path, row_group_size=7)
    spec = MembershipSpec((), 0.01, ("code", "many", "v"), 4)
    m = _stats(path, "code string, many bigint, v varchar(3)", spec).membership
    assert m["code"].values == ("a", "b", "ü")  # nulls are not values
    assert m["many"].values is None  # 50 > 4: no list, min/max still apply
    # values longer than varchar(3) read whole in Spark and cut in Hive: two readings, so no exact list
    assert m["v"].values is None
    assert all(c.bloom is None for c in m.values())


def test_varchar_values_have_both_readings(tmp_path: Path) -> None:
    """Spark reads 'abcdef' in a varchar(3) column whole, Hive as 'abc': the filter holds both, a list only when
    no value is longer than the length (then both read it the same)."""
    path = tmp_path / "f.parquet"
    pq.write_table(pa.table({"v": pa.array(["abcdef", "xy", None]), "w": pa.array(["ab", "xy", None])}), path)
    m = _stats(path, "v varchar(3), w varchar(3)", MembershipSpec(("v", "w"), 0.01, ("w",), 10)).membership
    assert all(_holds(m["v"].bloom, value, "varchar(3)") for value in ("abcdef", "abc", "xy"))
    assert m["w"].values == ("ab", "xy")


def test_bloom_filters_hold_every_value_and_are_sized_from_the_distinct_count(tmp_path: Path) -> None:
    path = tmp_path / "f.parquet"
    ids = [i * 7_919_000_003 for i in range(2000)]
    pq.write_table(pa.table({"uid": pa.array(ids * 2 + [None])}), path, row_group_size=999)
    m = _stats(path, "uid bigint", MembershipSpec(("uid",), 0.01)).membership["uid"]
    assert len(m.bloom) == bloom_mod.optimal_num_bytes(2000, 0.01) and not m.from_footer
    assert all(_holds(m.bloom, i, "bigint") for i in ids)
    assert sum(_holds(m.bloom, i + 1, "bigint") for i in ids) < 0.03 * len(ids)


def test_several_readings_of_one_value_all_go_into_the_filter_and_no_list_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "f.parquet"
    ns = [1_500, -1_500, 3_000, 7_000_000_999]
    pq.write_table(pa.table({
        "ts": pa.array(ns, pa.int64()).cast(pa.timestamp("ns")),
        "d": pa.array([Decimal("1.005"), Decimal("-2.995"), Decimal("3.000"), None], pa.decimal128(6, 3)),
    }), path)
    spec = MembershipSpec(("ts", "d"), 0.01, ("ts", "d"), 64)
    m = _stats(path, "ts timestamp, d decimal(5,2)", spec).membership
    assert m["ts"].values is None
    for value in ns:  # floor and ceiling microsecond: a reader may truncate either way
        for us in (value // 1000, -((-value) // 1000)):
            assert _holds(m["ts"].bloom, EPOCH + dt.timedelta(microseconds=us), "timestamp")
    # fewer places than the file's: Spark refuses to read it (Hive rounds half-up), so no filter rules it out
    assert m["d"].bloom is None and m["d"].values is None


def test_nanoseconds_beside_a_null_keep_both_readings_exact(tmp_path: Path) -> None:
    """With a null in the column, numpy's view of the nanoseconds was float64: 2020-01-01 00:00:00.123456999
    became ...123457 and ...123458 µs, and the microsecond a truncating reader sees was ruled out."""
    path = tmp_path / "f.parquet"
    ns = 1_577_836_800_123_456_999
    pq.write_table(pa.table({"ts": pa.array([ns, None], pa.int64()).cast(pa.timestamp("ns"))}), path)
    m = _stats(path, "ts timestamp", MembershipSpec(("ts",), 0.01)).membership
    for us in (ns // 1000, -((-ns) // 1000)):
        assert _holds(m["ts"].bloom, EPOCH + dt.timedelta(microseconds=us), "timestamp")


def test_exact_readings_keep_lists_of_table_values(tmp_path: Path) -> None:
    path = tmp_path / "f.parquet"
    pq.write_table(pa.table({
        "ts": pa.array([1_000, 2_000], pa.int64()).cast(pa.timestamp("ms", tz="UTC")),
        "d": pa.array([Decimal("1.5"), Decimal("-2")], pa.decimal128(4, 1)),
        "day": pa.array([dt.date(1900, 1, 1), dt.date(2024, 2, 29)]),
        "small": pa.array([-3, 100], pa.int8()),
    }), path)
    spec = MembershipSpec(("ts",), 0.01, ("ts", "d", "day", "small"), 64)
    m = _stats(path, "ts timestamp, d decimal(5,2), day date, small int", spec).membership
    assert m["ts"].values == (EPOCH + dt.timedelta(seconds=1), EPOCH + dt.timedelta(seconds=2))
    assert _holds(m["ts"].bloom, EPOCH + dt.timedelta(seconds=2), "timestamp")
    assert m["d"].values == (Decimal("-2.00"), Decimal("1.50"))
    assert m["day"].values == (dt.date(1900, 1, 1), dt.date(2024, 2, 29))
    assert m["small"].values == (-3, 100)


def test_int96_and_absent_columns_get_nothing(tmp_path: Path) -> None:
    path = tmp_path / "f.parquet"
    pq.write_table(pa.table({"ts": pa.array([dt.datetime(2020, 1, 1)], pa.timestamp("us"))}), path,
                   use_deprecated_int96_timestamps=True)
    spec = MembershipSpec(("ts", "gone"), 0.01, ("ts",), 64)
    m = _stats(path, "ts timestamp, gone bigint", spec).membership
    assert m["ts"].bloom is None and m["ts"].values is None and "gone" not in m


@needs_bloom_writer
def test_a_good_footer_filter_is_used_without_reading_the_column(tmp_path: Path) -> None:
    path = tmp_path / "f.parquet"
    ids = list(range(0, 30_000, 3))
    pq.write_table(pa.table({"uid": pa.array(ids, pa.int64())}), path,
                   bloom_filter_options={"uid": {"ndv": len(ids), "fpp": 0.01}})
    m = _stats(path, "uid bigint", MembershipSpec(("uid",), 0.01)).membership["uid"]
    assert m.from_footer and all(_holds(m.bloom, i, "bigint") for i in ids[::50])


# ------------------------------------------------------------------------------------------ the index
def _table(root: Path) -> tuple[str, list[tuple[str, Any]]]:
    root.mkdir()
    for i in range(3):
        pq.write_table(pa.table({"uid": pa.array([i * 1000 + k for k in range(50)]),
                                 "code": pa.array([f"c{i}", "z"] * 25)}), root / f"part-{i}.parquet")
    return f"file:{root}", parse_schema_text("uid bigint, code string")


def test_refresh_after_a_changed_choice_reads_only_the_new_columns(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    location, cols = _table(tmp_path / "t")
    update_index(location, cols, options=StatsOptions(membership=MembershipSpec(("uid",))), max_workers=1)
    first = load(location)
    assert first is not None and [f.name for f in first.table.column("bloom_filters").type] == ["uid"]

    import storage_handler.stats.engines.chunks as chunks_mod

    def no_footers(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("unchanged files' footers were read again")

    monkeypatch.setattr(chunks_mod, "read_file_stats", no_footers)
    spec = MembershipSpec(("uid",), 0.01, ("code",), 64)
    version, diff = update_index(location, cols, options=StatsOptions(membership=spec), max_workers=1)
    assert version == 2 and diff.membership_changed and diff.membership_read == ("code",)
    table = load(location).table  # type: ignore[union-attr]
    assert table.column("bloom_filters").combine_chunks().equals(first.table.column("bloom_filters").combine_chunks())
    assert [v["code"] for v in table.column("value_lists").to_pylist()] == [["c0", "z"], ["c1", "z"], ["c2", "z"]]

    version, diff = update_index(location, cols, options=StatsOptions(membership=spec), max_workers=1)
    assert version == 2 and diff.is_empty  # nothing changed: no new version
    version, diff = update_index(location, cols, options=StatsOptions(), max_workers=1)
    assert version == 3 and diff.membership_read == ()
    assert "bloom_filters" not in load(location).table.column_names  # type: ignore[union-attr]


def test_load_reads_only_the_filters_a_query_names(tmp_path: Path) -> None:
    location, cols = _table(tmp_path / "t")
    spec = MembershipSpec(("uid", "code"), 0.01, ("code",), 64)
    update_index(location, cols, options=StatsOptions(membership=spec), max_workers=1)
    only_uid = load(location, membership=["uid"])
    assert only_uid is not None and [f.name for f in only_uid.table.column("bloom_filters").type] == ["uid"]
    assert "value_lists" not in only_uid.table.column_names
    none = load(location, prefixes=["part-"], membership=())
    assert none is not None and "bloom_filters" not in none.table.column_names and none.table.num_rows == 3
    everything = load(location)
    assert everything is not None
    assert [f.name for f in everything.table.column("bloom_filters").type] == ["uid", "code"]


def test_an_index_without_filters_loads_for_a_query_that_wants_them(tmp_path: Path) -> None:
    location, cols = _table(tmp_path / "t")
    update_index(location, cols, max_workers=1)
    snapshot = load(location, membership=["uid"])
    assert snapshot is not None and "bloom_filters" not in snapshot.table.column_names


@pytest.mark.parametrize(("params", "message"), [
    ({"hsh.bloom.filter.fpp": "1.5"}, "hsh.bloom.filter.fpp='1.5' is not a false-positive rate"),
    ({"hsh.bloom.filter.fpp": "x"}, "hsh.bloom.filter.fpp='x'"),
    ({"hsh.value.list.max": "0"}, "hsh.value.list.max='0' is not a count"),
])
def test_bad_parameters_are_one_clear_error(params: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigurationError, match=message.replace("(", r"\(").replace(".", r"\.")):
        MembershipSpec.for_table(params, "db.t")


def test_chosen_columns_must_exist_and_have_a_supported_type() -> None:
    cols = parse_schema_text("uid bigint, f double, c char(2)")
    MembershipSpec.for_table({"hsh.bloom.filter.columns": " UID "}).check("db.t", cols)
    with pytest.raises(ConfigurationError, match="names column 'nope', which is not a data column of the table"):
        MembershipSpec.for_table({"hsh.bloom.filter.columns": "uid,nope"}).check("db.t", cols)
    for column in ("f", "c"):
        with pytest.raises(ConfigurationError, match=f"table db.t: hsh.value.list.columns names column '{column}'"):
            MembershipSpec.for_table({"hsh.value.list.columns": column}).check("db.t", cols)


def test_a_corrupt_recorded_spec_is_an_index_error() -> None:
    with pytest.raises(StatsIndexError, match="hsh.index.membership is corrupt"):
        MembershipSpec.from_json('{"bloom_columns": 3}')
