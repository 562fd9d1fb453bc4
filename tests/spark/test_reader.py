"""The split reader: exact schema, partition columns, schema evolution, and row-group pruning that never loses rows."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from storage_handler.decode.hiveql import parse_filter
from storage_handler.decode.to_sarg import to_search_argument
from storage_handler.pruning import PredicateEvaluator
from storage_handler.spark.reader import read_split, row_groups_to_read
from storage_handler.split import Split
from storage_handler.types import hive_to_arrow, parse_schema_text

COLUMNS = parse_schema_text("a bigint, s string, t timestamp, missing int")
KEYS = parse_schema_text("p int")
SCHEMA = pa.schema([(n, hive_to_arrow(t)) for n, t in [*COLUMNS, *KEYS]])


@pytest.fixture()
def data_file(tmp_path: Path) -> Path:
    n = 1000
    table = pa.table({
        "A": pa.array(range(n), pa.int32()),  # upper-case name and narrower type than the table declares
        "s": [None if i % 7 == 0 else f"v{i:04d}" for i in range(n)],
        "t": pa.array([dt.datetime(2024, 1, 1) + dt.timedelta(seconds=i) for i in range(n)], pa.timestamp("ns")),
    })
    (tmp_path / "p=10").mkdir()
    pq.write_table(table, tmp_path / "p=10" / "f.parquet", row_group_size=100)
    return tmp_path


def _read(root: Path, where: str | None) -> pa.Table:
    evaluator = None
    if where:
        sarg = to_search_argument(parse_filter(where, [*COLUMNS, *KEYS])).sarg
        evaluator = PredicateEvaluator(sarg, COLUMNS, KEYS)
    split = Split("p=10/f.parquet", 0, (("p", "10"),))
    return pa.Table.from_batches(list(read_split(root, split, SCHEMA, COLUMNS, KEYS, evaluator=evaluator)), SCHEMA)


def test_batches_match_the_declared_schema_exactly(data_file: Path) -> None:
    table = _read(data_file, None)
    assert table.schema.equals(SCHEMA) and table.num_rows == 1000
    assert table.column("missing").null_count == 1000
    assert set(table.column("p").to_pylist()) == {10}


@pytest.mark.parametrize(
    ("where", "max_groups"),
    [("a = 450", 1), ("a < 150", 2), ("a >= 950", 1), ("a between 120 and 330", 3), ("s = 'v0512'", 1),
     ("s is null", 10), ("a > 5000", 0), ("p = 10 and a < 50", 1), ("p = 3", 0), ("a = 5 or a = 905", 2),
     ("t < timestamp '2024-01-01 00:01:40'", 1)],
)
def test_row_group_pruning_keeps_every_matching_row(data_file: Path, where: str, max_groups: int) -> None:
    full = _read(data_file, None)
    pruned = _read(data_file, where)
    sarg = to_search_argument(parse_filter(where, [*COLUMNS, *KEYS])).sarg
    groups = row_groups_to_read(pq.ParquetFile(data_file / "p=10" / "f.parquet").metadata,
                                Split("p=10/f.parquet", 0, (("p", "10"),)), COLUMNS,
                                PredicateEvaluator(sarg, COLUMNS, KEYS))
    assert len(groups) <= max_groups
    matching = _matching_ids(full, where)
    assert matching <= set(pruned.column("a").to_pylist())


def _matching_ids(table: pa.Table, where: str) -> set[int]:
    """The rows satisfying ``where``, computed with pyarrow (SQL three-valued logic: NULL is not a match)."""
    a, s, t, p = (table.column(c) for c in ("a", "s", "t", "p"))
    masks = {
        "a = 450": pc.equal(a, 450), "a < 150": pc.less(a, 150), "a >= 950": pc.greater_equal(a, 950),
        "a between 120 and 330": pc.and_(pc.greater_equal(a, 120), pc.less_equal(a, 330)),
        "s = 'v0512'": pc.equal(s, "v0512"), "s is null": pc.is_null(s), "a > 5000": pc.greater(a, 5000),
        "p = 10 and a < 50": pc.and_(pc.equal(p, 10), pc.less(a, 50)), "p = 3": pc.equal(p, 3),
        "a = 5 or a = 905": pc.or_(pc.equal(a, 5), pc.equal(a, 905)),
        "t < timestamp '2024-01-01 00:01:40'": pc.less(t, pa.scalar(dt.datetime(2024, 1, 1, 0, 1, 40),
                                                                       pa.timestamp("us"))),
    }
    return set(table.filter(pc.fill_null(masks[where], False)).column("a").to_pylist())


def test_a_zero_byte_file_reads_as_no_rows_as_spark_skips_it(tmp_path: Path) -> None:
    """The index keeps a 0-byte file (unreadable, so never pruned); Spark's file index skips it. The data source
    failed the whole query on it instead ("Parquet file size is 0 bytes")."""
    (tmp_path / "p=10").mkdir()
    (tmp_path / "p=10" / "f.parquet").write_bytes(b"")
    assert list(read_split(str(tmp_path), Split("p=10/f.parquet", 0, (("p", "10"),)), SCHEMA, COLUMNS, KEYS)) == []


@pytest.mark.skipif(not hasattr(pa, "list_view"), reason="this pyarrow has no view types")
@pytest.mark.parametrize("arrow_type", ["binary_view", "string_view", "list_view", "large_list_view", "duration",
                                        "large_string"])
def test_columns_registered_by_their_parquet_type_read_as_spark_reads_them(tmp_path: Path, arrow_type: str) -> None:
    """A column a writer stored with an Arrow-only type (its Parquet type is plain) registers as that plain type;
    the data source reads the file back with the stored Arrow type and must give Spark's values (pyarrow's cast of
    a list_view dropped values or made an invalid batch)."""
    from storage_handler.registration.dataset import discover

    values, plain = {"binary_view": ([b"x", None], pa.binary()), "string_view": (["y", None], pa.string()),
                     "list_view": ([[1, 2], [3]], pa.list_(pa.int32())),
                     "large_list_view": ([[1, 2], [3]], pa.list_(pa.int32())),
                     "duration": ([5, None], pa.int64()), "large_string": (["z", None], pa.string())}[arrow_type]
    stored = {"binary_view": pa.binary_view(), "string_view": pa.string_view(),
              "list_view": pa.list_view(pa.int32()), "large_list_view": pa.large_list_view(pa.int32()),
              "duration": pa.duration("s"), "large_string": pa.large_string()}[arrow_type]
    array = pa.array(values, plain if arrow_type != "duration" else pa.int64())
    array = pa.array(values, stored) if "list_view" in arrow_type else array.cast(stored)
    pq.write_table(pa.table({"c": array}), tmp_path / "f.parquet")
    dataset = discover(str(tmp_path))
    schema = pa.schema([(n, hive_to_arrow(t)) for n, t in dataset.columns])
    batches = list(read_split(str(tmp_path), Split("f.parquet", 1, ()), schema, dataset.columns, ()))
    assert pa.Table.from_batches(batches, schema).column("c").to_pylist() == values
