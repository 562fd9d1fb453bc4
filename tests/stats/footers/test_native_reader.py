"""The native footer reader, the pyarrow one and a scalar oracle give the same index rows, on random files and on
footers rewritten into every odd case (missing statistics, old writers, values of the wrong width, contradicting
null counts, no column orders)."""

from __future__ import annotations

import datetime as dt
import random
import shutil
from decimal import Decimal
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from storage_handler.stats import DataFile, indexed_columns, list_data_files, stats_from_metadata, stats_table
from storage_handler.stats.engines.chunks import _local_error, read_raw
from storage_handler.stats.footers import thrift_compact as tc
from storage_handler.stats.footers.native_reader import MIN_PYARROW, native_reader
from storage_handler.stats.footers.raw import RawFooters
from storage_handler.stats.index.rows import footer_rows, row_group_rows
from storage_handler.types import HiveType, arrow_to_hive, parse_hive_type
from tests.helpers import examples
from tests.pyarrow_compat import writer_options
from tests.stats.oracle import oracle_stats

OLD_PYARROW = tuple(int(p) for p in pa.__version__.split(".")[:2]) < MIN_PYARROW
needs_native = pytest.mark.skipif(native_reader() is None,
                                  reason="the native reader is not built here (no C++ compiler, or pyarrow < 18)")


def test_the_native_reader_builds_wherever_there_is_a_compiler() -> None:
    """A broken build must not hide behind the (slower) pyarrow path: with a C++ compiler and pyarrow 18 or
    newer it is built; before 18 it is refused (pyarrow's half-bounds defect, see stats/footer_guard.py)."""
    if OLD_PYARROW:
        assert native_reader() is None
    elif shutil.which("c++") or shutil.which("g++"):
        assert native_reader() is not None

# Arrow type -> table types it may be read as (its own first)
TYPES: list[tuple[pa.DataType, list[str]]] = [
    (pa.int8(), ["tinyint", "int"]), (pa.int32(), ["int", "smallint", "bigint", "double", "decimal(12,2)"]),
    (pa.int64(), ["bigint", "int", "decimal(20,0)"]), (pa.uint32(), ["bigint", "int"]),
    (pa.uint64(), ["bigint"]), (pa.float64(), ["double"]), (pa.float32(), ["float", "double"]),
    (pa.string(), ["string", "varchar(3)", "char(2)"]), (pa.binary(), ["string"]), (pa.bool_(), ["boolean"]),
    (pa.date32(), ["date"]), (pa.timestamp("ms"), ["timestamp"]), (pa.timestamp("ns"), ["timestamp"]),
    (pa.timestamp("us", tz="UTC"), ["timestamp"]), (pa.decimal128(9, 2), ["decimal(9,2)", "decimal(5,1)"]),
    (pa.decimal128(30, 4), ["decimal(30,4)", "decimal(38,6)"]), (pa.large_string(), ["string"]),
]
WRITERS = ["parquet-mr version 1.8.0", "parquet-mr version 1.9.0 (build x)", "parquet-mr version 1.10.0",
           "parquet-mr version 1.12.3 (build abc)", "parquet-cpp version 1.2.0", "parquet-cpp version 1.3.0",
           "parquet-cpp-arrow version 26.0.1", "impala version 1.0", "", "parquet-mr", "parquet-mr version 1.10",
           "  parquet-mr   version 1.7.0", "DuckDB version v1.1.0"]


def values_for(t: pa.DataType, n: int, rnd: random.Random) -> pa.Array:
    def maybe(v: object) -> object:
        return None if rnd.random() < 0.2 else v

    if pa.types.is_integer(t):
        lo, hi = (0, 2 ** t.bit_width - 1) if pa.types.is_unsigned_integer(t) else (
            -(2 ** (t.bit_width - 1)), 2 ** (t.bit_width - 1) - 1)
        return pa.array([maybe(rnd.choice([lo, hi, 0, rnd.randint(lo, hi), rnd.randint(-50, 50) % hi]))
                         for _ in range(n)], t)
    if pa.types.is_floating(t):
        return pa.array([maybe(rnd.choice([0.0, -0.0, float("nan"), rnd.uniform(-1e6, 1e6)])) for _ in range(n)], t)
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return pa.array([maybe(rnd.choice(["", "a", "zé", "日本語", "x" * rnd.randint(1, 40), "\U0001f600b"]))
                         for _ in range(n)], t)
    if pa.types.is_binary(t):
        return pa.array([maybe(bytes(rnd.randint(0, 255) for _ in range(rnd.randint(0, 5)))) for _ in range(n)], t)
    if pa.types.is_boolean(t):
        return pa.array([maybe(rnd.random() < 0.5) for _ in range(n)], t)
    if pa.types.is_date(t):
        return pa.array([maybe(rnd.randint(-800_000, 2_900_000)) for _ in range(n)], pa.int32()).cast(t)
    if pa.types.is_timestamp(t):
        return pa.array([maybe(rnd.randint(-(10**17), 10**17)) for _ in range(n)], pa.int64()).cast(t)
    scale, precision = t.scale, t.precision
    return pa.array([maybe(Decimal(rnd.randint(-(10 ** precision) + 1, 10**precision - 1)).scaleb(-scale))
                     for _ in range(n)], t)


def random_file(path: Path, seed: int, columns: list[tuple[str, pa.DataType]]) -> None:
    rnd = random.Random(seed)
    n = rnd.choice([0, 1, 3, 10, 40])
    table = pa.table({name: values_for(t, n, rnd) for name, t in columns})
    if rnd.random() < 0.3 and n:  # a column of nulls only
        name, t = rnd.choice(columns)
        table = table.set_column(table.column_names.index(name), name, pa.nulls(n, t))
    stats: bool | list[str] = rnd.choice([True, True, False, [c for c, _ in columns if rnd.random() < 0.5]])
    pq.write_table(table, path, row_group_size=rnd.choice([1, 3, 7, 1000]), write_statistics=stats,
                   use_dictionary=rnd.random() < 0.5, data_page_version=rnd.choice(["1.0", "2.0"]),
                   **writer_options(store_decimal_as_integer=rnd.random() < 0.5))


def three_ways(root: Path, columns: tuple[tuple[str, HiveType], ...]) -> tuple[pa.Table, pa.Table, pa.Table]:
    """Index rows of every file under ``root`` read natively from the files, from pyarrow's footers in Python
    (the guard keeping pyarrow off undecodable chunks), and by the scalar oracle. Pyarrow's footers parsed
    natively must give the native reader's raw arrays exactly."""
    files = list_data_files(str(root))
    paths = [str(root / p) for p in files.paths.to_pylist()]
    reader = native_reader()
    assert reader is not None
    native = reader.read(paths, _local_error)
    assert native is not None
    footers: list[pq.FileMetaData | str] = []
    for p in paths:
        why = _local_error(p)
        footers.append(why if why is not None else pq.read_metadata(p))
    reparsed = reader.parse(footers)
    for name in ("num_rows", "schema", "row_groups", "first_chunk", "rg_rows", "flags", "null_count"):
        assert np.array_equal(getattr(native, name), getattr(reparsed, name)), name
    assert native.mins.equals(reparsed.mins) and native.maxs.equals(reparsed.maxs)
    assert native.errors == reparsed.errors
    in_python = RawFooters.from_metadata(footers)
    oracle = stats_table(columns, [(f, oracle_stats(p, columns)) for f, p in zip(files, paths, strict=True)])
    return footer_rows(columns, files, native), footer_rows(columns, files, in_python), oracle


def assert_three_ways_agree(root: Path, columns: tuple[tuple[str, HiveType], ...]) -> None:
    """The three readings of :func:`three_ways` are the same table, schema metadata included."""
    native, by_pyarrow, oracle = three_ways(root, columns)
    assert native.equals(by_pyarrow, check_metadata=True)
    assert native.equals(oracle, check_metadata=True), (native.to_pylist(), oracle.to_pylist())


def draw_columns(data: st.DataObject, most: int) -> list[tuple[str, pa.DataType]]:
    """Up to ``most`` distinct columns of the types above, named after their type's position."""
    picked = data.draw(st.lists(st.sampled_from(range(len(TYPES))), min_size=1, max_size=most, unique=True))
    return [(f"c{i}", TYPES[i][0]) for i in picked]


def table_columns(draw: st.DrawFn, columns: list[tuple[str, pa.DataType]]) -> tuple[tuple[str, HiveType], ...]:
    chosen = [(name, parse_hive_type(draw(st.sampled_from(dict(TYPES)[t])))) for name, t in columns]
    return indexed_columns(chosen)


@needs_native
@settings(max_examples=examples(80), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_random_files_give_the_same_rows_three_ways(tmp_path_factory: pytest.TempPathFactory,
                                                    data: st.DataObject) -> None:
    root = tmp_path_factory.mktemp("files")
    columns = draw_columns(data, 5)
    for k in range(data.draw(st.integers(1, 4))):
        mine = columns if k == 0 or data.draw(st.booleans()) else columns[: max(1, len(columns) - 1)]
        random_file(root / f"f{k}.parquet", data.draw(st.integers(0, 2**32)), mine)
    assert_three_ways_agree(root, table_columns(data.draw, columns))


# ------------------------------------------------------------------ rewritten footers
def rewrite(path: Path, rnd: random.Random) -> None:
    """Rewrite ``path``'s footer at random: statistics fields dropped or replaced, null counts contradicting the
    row count, row groups of no rows, another writer, no column orders or an unknown one."""
    body, footer = tc.split_file(path.read_bytes())
    st = tc.Statistics
    for group in tc.get(footer, tc.FileMetaData.ROW_GROUPS) or []:
        rows = tc.get(group, tc.RowGroup.NUM_ROWS)
        if rnd.random() < 0.1:  # a row group claiming no rows: ignored whatever its statistics say
            tc.field(group, tc.RowGroup.NUM_ROWS)[2] = 0  # type: ignore[index]
        for chunk in tc.get(group, tc.RowGroup.COLUMNS):
            meta = tc.get(chunk, tc.ColumnChunk.META_DATA)
            fields = tc.get(meta, tc.ColumnMetaData.STATISTICS) if meta else None
            if fields is None or rnd.random() < 0.4:
                continue
            for fid in (st.MAX, st.MIN, st.NULL_COUNT, st.MAX_VALUE, st.MIN_VALUE):
                entry = tc.field(fields, fid)
                choice = rnd.random()
                if entry is not None and choice < 0.2:
                    fields.remove(entry)
                elif entry is not None and fid != st.NULL_COUNT and choice < 0.35:
                    entry[2] = bytes(rnd.randint(0, 255) for _ in range(rnd.choice([0, 1, 3, 4, 7, 8, 12, 16])))
                elif entry is not None and fid == st.NULL_COUNT and choice < 0.4:
                    entry[2] = rnd.choice([-1, rows + 1, rows, 0, rows * 3 + 2])
            fields.sort(key=lambda f: f[0])
    if rnd.random() < 0.5:
        created = tc.field(footer, tc.FileMetaData.CREATED_BY)
        writer = rnd.choice([*WRITERS, None])
        if created is not None:
            footer.remove(created)
        if writer is not None:
            footer.append([tc.FileMetaData.CREATED_BY, tc.BINARY, writer.encode()])
    if rnd.random() < 0.15:  # a file-level row count that contradicts the row groups (which Spark reads)
        tc.field(footer, tc.FileMetaData.NUM_ROWS)[2] = rnd.choice([0, 1, 9, 10**6])  # type: ignore[index]
    orders = tc.field(footer, tc.FileMetaData.COLUMN_ORDERS)
    if orders is not None and rnd.random() < 0.3:
        footer.remove(orders)
    elif orders is not None and rnd.random() < 0.3 and orders[2][1]:
        orders[2][1][rnd.randrange(len(orders[2][1]))] = [[2, tc.STRUCT, []]]  # an order this reader lacks
    footer.sort(key=lambda f: f[0])
    path.write_bytes(tc.join_file(body, footer))


@needs_native
def test_the_codec_re_encodes_a_footer_byte_for_byte(tmp_path: Path) -> None:
    path = tmp_path / "f.parquet"
    random_file(path, 7, [("a", pa.int64()), ("b", pa.string())])
    data = path.read_bytes()
    body, footer = tc.split_file(data)
    assert tc.join_file(body, footer) == data


@needs_native
@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_rewritten_footers_give_the_same_rows_three_ways(tmp_path_factory: pytest.TempPathFactory,
                                                         data: st.DataObject) -> None:
    root = tmp_path_factory.mktemp("odd")
    columns = draw_columns(data, 4)
    for k in range(data.draw(st.integers(1, 3))):
        path = root / f"f{k}.parquet"
        random_file(path, data.draw(st.integers(0, 2**32)), columns)
        rewrite(path, random.Random(data.draw(st.integers(0, 2**32))))
    assert_three_ways_agree(root, table_columns(data.draw, columns))


@needs_native
@pytest.mark.parametrize("claimed", [0, 9])
def test_a_file_s_rows_are_its_row_groups_whatever_the_footer_claims(tmp_path: Path, claimed: int) -> None:
    """Spark, pyarrow and DuckDB read the row groups' 5 rows. The footer's own count was indexed: 9 answered
    count(*) wrong, and 0 made every filter rule the file out (its rows lost, aggregates or not)."""
    path = tmp_path / "a.parquet"
    pq.write_table(pa.table({"x": pa.array([1, 2, 3, 4, 5], pa.int64())}), path, row_group_size=2)
    body, footer = tc.split_file(path.read_bytes())
    tc.field(footer, tc.FileMetaData.NUM_ROWS)[2] = claimed  # type: ignore[index]
    path.write_bytes(tc.join_file(body, footer))
    assert pq.read_metadata(path).num_rows == claimed and pq.read_table(path).num_rows == 5
    for rows in three_ways(tmp_path, (("x", HiveType("bigint")),)):
        assert rows.column("num_records").to_pylist() == [5]


@needs_native
def test_unreadable_files_carry_pyarrow_s_own_error(tmp_path: Path) -> None:
    (tmp_path / "a.parquet").write_bytes(b"not a Parquet file at all")
    (tmp_path / "b.parquet").write_bytes(b"")
    random_file(tmp_path / "c.parquet", 1, [("x", pa.int64())])
    native, by_pyarrow, oracle = three_ways(tmp_path, (("x", HiveType("bigint")),))
    assert native.equals(by_pyarrow) and native.equals(oracle)
    errors = native.column("stats_error").to_pylist()
    assert errors[0] and "magic" in errors[0].lower() and errors[1] and errors[2] is None


@needs_native
def test_read_raw_uses_pyarrow_when_the_native_reader_is_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for k in range(3):
        random_file(tmp_path / f"f{k}.parquet", k, [("x", pa.int64()), ("s", pa.string())])
    files = list_data_files(str(tmp_path))
    columns = (("x", HiveType("bigint")), ("s", HiveType("string")))
    native = footer_rows(columns, files, read_raw(str(tmp_path), files, {}))
    monkeypatch.setattr("storage_handler.stats.engines.chunks.native_reader", lambda: None)
    assert footer_rows(columns, files, read_raw(str(tmp_path), files, {})).equals(native)


@needs_native
def test_a_chunk_of_many_files_and_row_groups(tmp_path: Path) -> None:
    """Files of several row groups next to files of one: the grouped min/max of bounds."""
    for k in range(30):
        t = pa.table({"i": pa.array([k, k * 2, None, k + 100], pa.int32()),
                      "s": [f"s{k}", None, "a", "zz"],
                      "d": pa.array([dt.date(2020, 1, 1 + k % 28)] * 4)})
        pq.write_table(t, tmp_path / f"f{k:02d}.parquet", row_group_size=1 + k % 3)
    columns = tuple((n, arrow_to_hive(t)) for n, t in [("i", pa.int32()), ("s", pa.string()), ("d", pa.date32())])
    native, by_pyarrow, oracle = three_ways(tmp_path, columns)
    assert native.equals(by_pyarrow) and native.equals(oracle)
    row = native.to_pylist()[5]
    assert row["min_values"]["i"] == 5 and row["max_values"]["i"] == 105 and row["null_count"]["s"] == 1


@needs_native
@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_row_group_rows_are_each_row_group_read_alone(tmp_path_factory: pytest.TempPathFactory,
                                                       data: st.DataObject) -> None:
    """The reader's per-row-group rows equal each row group's statistics taken alone (``stats_from_metadata``
    restricted to it), footers rewritten into odd cases included."""
    root = tmp_path_factory.mktemp("rg")
    columns = draw_columns(data, 4)
    path = root / "f.parquet"
    random_file(path, data.draw(st.integers(0, 2**32)), columns)
    if data.draw(st.booleans()):
        rewrite(path, random.Random(data.draw(st.integers(0, 2**32))))
    try:
        md = pq.read_metadata(path)
    except Exception:  # noqa: BLE001 - a rewrite pyarrow refuses: nothing to compare
        return
    cols = table_columns(data.draw, columns)
    parts = {"dt": "1"}
    got = row_group_rows(cols, md, parts)
    expected = stats_table(cols, [(DataFile(f"{r:09d}", 0, 0, parts), stats_from_metadata(md, cols, [r]))
                                  for r in range(md.num_row_groups)])
    assert got.equals(expected.cast(got.schema)), (got.to_pylist(), expected.to_pylist())
