"""The index table: schema per the shared contract, building it in parallel from footers."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pyarrow as pa
import pytest

from storage_handler.errors import SchemaError, StatsIndexError
from storage_handler.stats import (
    DataFile,
    build_index,
    columns_of,
    index_schema,
    indexed_columns,
    list_data_files,
    stats_errors,
    unsafe_paths,
)
from storage_handler.types import parse_schema_text
from tests.stats.util import write

SCHEMA = "id bigint, Name varchar(20), c char(3), amount decimal(10,2), ts timestamp, d date, ok boolean, " \
         "f float, raw binary, tags array<string>, m map<string,int>, s struct<a:int>"


def test_schema_follows_the_contract():
    schema = index_schema(parse_schema_text(SCHEMA))
    assert schema.names == [
        "path", "size", "modification_time", "version_tag", "num_records", "partition_values", "min_values",
        "max_values", "null_count", "stats_error",
    ]
    assert schema.field("path").type == pa.string()
    for name in ("size", "modification_time", "num_records"):
        assert schema.field(name).type == pa.int64()
    assert schema.field("partition_values").type == pa.map_(pa.string(), pa.string())
    bounds = pa.struct([
        ("id", pa.int64()), ("name", pa.string()), ("c", pa.string()), ("amount", pa.decimal128(10, 2)),
        ("ts", pa.timestamp("us")), ("d", pa.date32()), ("ok", pa.bool_()), ("f", pa.float32()),
    ])
    assert schema.field("min_values").type == bounds
    assert schema.field("max_values").type == bounds
    assert schema.field("null_count").type == pa.struct([(f.name, pa.int64()) for f in bounds])
    assert schema.field("stats_error").type == pa.string()
    assert [str(t) for _, t in columns_of(schema)] == [
        "bigint", "varchar(20)", "char(3)", "decimal(10,2)", "timestamp", "date", "boolean", "float"
    ]


def test_duplicate_column_names_are_refused():
    with pytest.raises(SchemaError):
        indexed_columns(parse_schema_text("a int, A string"))


def test_build_index(tmp_path):
    write(tmp_path, "dt=2024-01-02/b.parquet", pa.table({
        "ID": [3, 1], "amount": pa.array([Decimal("1.50"), Decimal("-2.25")], pa.decimal128(4, 2)),
        "ts": pa.array([dt.datetime(2024, 1, 2, 3)] * 2, pa.timestamp("ms")), "raw": [b"x", b"y"],
    }))
    write(tmp_path, "dt=__HIVE_DEFAULT_PARTITION__/a.parquet", pa.table({"id": pa.array([None], pa.int64())}))
    (tmp_path / "dt=2024-01-02" / "broken.parquet").write_bytes(b"PAR1 definitely not a footer PAR1")
    calls: list[tuple[int, int]] = []
    files = list_data_files(str(tmp_path))
    index = build_index(str(tmp_path), parse_schema_text(SCHEMA), files, progress=lambda d, t: calls.append((d, t)),
                        max_workers=3)
    assert index.schema == index_schema(parse_schema_text(SCHEMA))
    rows = {r["path"]: r for r in index.to_pylist()}
    assert list(rows) == sorted(rows)
    assert sorted(calls) == [(1, 3), (2, 3), (3, 3)]
    good = rows["dt=2024-01-02/b.parquet"]
    assert good["num_records"] == 2 and good["stats_error"] is None
    assert good["partition_values"] == [("dt", "2024-01-02")]
    assert good["min_values"]["id"] == 1 and good["max_values"]["id"] == 3
    assert good["min_values"]["amount"] == Decimal("-2.25")
    assert good["min_values"]["ts"] == dt.datetime(2024, 1, 2, 3)
    assert good["null_count"]["name"] == 2  # not in this file: all null
    assert good["min_values"]["f"] is None
    null_part = rows["dt=__HIVE_DEFAULT_PARTITION__/a.parquet"]
    assert null_part["partition_values"] == [("dt", None)]
    assert null_part["null_count"]["id"] == 1 and null_part["min_values"]["id"] is None
    broken = rows["dt=2024-01-02/broken.parquet"]
    assert broken["num_records"] is None and broken["stats_error"]
    assert set(broken["null_count"].values()) == {None}
    assert [p for p, _ in stats_errors(index)] == ["dt=2024-01-02/broken.parquet"]


def test_build_index_many_files_in_chunks(tmp_path):
    from storage_handler.stats import LocalEngine

    for i in range(40):
        write(tmp_path, f"p{i:02d}.parquet", pa.table({"x": [i, i + 1]}))
    calls: list[tuple[int, int]] = []
    index = build_index(str(tmp_path), parse_schema_text("x bigint"), list_data_files(str(tmp_path)),
                        engine=LocalEngine(max_workers=2, chunk_files=7), progress=lambda d, t: calls.append((d, t)))
    assert index.num_rows == 40 and index.column("path").to_pylist() == sorted(index.column("path").to_pylist())
    assert calls[-1] == (40, 40) and [d for d, _ in calls] == sorted(d for d, _ in calls)
    assert index.column("min_values").combine_chunks().field("x").to_pylist() == list(range(40))


def test_table_without_stats_capable_columns(tmp_path):
    write(tmp_path, "a.parquet", pa.table({"b": [b"x"]}))
    index = build_index(str(tmp_path), parse_schema_text("b binary"), list_data_files(str(tmp_path)))
    assert index.num_rows == 1 and index.schema.field("min_values").type == pa.struct([])


@pytest.mark.parametrize(
    "bad", ["/etc/../passwd", "../x.parquet", "a/../../x", "a/./b", "./a", "", "a//b", "a/", "a\\..\\b", "a\x00b", ".."]
)
def test_unsafe_paths_are_refused(tmp_path, bad):
    assert unsafe_paths(pa.array([bad, "ok/x.parquet"])) == [bad]
    with pytest.raises(StatsIndexError):
        build_index(str(tmp_path), parse_schema_text("x int"), [DataFile(bad, 1, 1, {})])


def test_safe_paths_pass():
    ok = ["a.parquet", "dt=2024/x", "dt=../x", "a..b/c", ".x", "_x/y", "k=%2F/f"]
    assert unsafe_paths(pa.array(ok)) == []
    assert unsafe_paths(pa.array([None], pa.string())) == [None]


def test_duplicate_files_are_refused(tmp_path):
    with pytest.raises(StatsIndexError):
        build_index(str(tmp_path), [], [("a", 1, 1, {}), ("a", 1, 1, {})])


def test_plain_absolute_paths_are_allowed() -> None:
    """The files of a partition registered outside the table folder are indexed by their absolute path."""
    assert unsafe_paths(pa.array(["/data/backfill/dt=1/f.parquet", "dt=2/f.parquet"])) == []
