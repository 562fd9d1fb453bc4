"""No false negatives, end to end: real Parquet files, a real index, ``list_status`` with a pushed SearchArgument.

GitHub issue 4, "Must hold". Hypothesis writes random Parquet tables with pyarrow (see ``tests/e2e_strategies.py``:
nulls, all-null and missing columns, empty files, NaN, +-0.0, +-inf, unicode and long strings, integer extremes and
narrower integer files, decimals at another scale than the table's, every timestamp unit with and without a zone,
INT96, dates before 1970, several row groups, legacy format versions, a ``p=<int>`` partition level with
``__HIVE_DEFAULT_PARTITION__``), indexes them with ``update_index``, changes storage behind the index's back (new,
rewritten and deleted files) and runs ``ParquetInputFormat.list_status`` for random predicates.

The oracle (``no_false_negatives_oracle.py``) reads every file on storage back with pyarrow and evaluates the predicate row by row with SQL's
three-valued logic, independently of the product: over the generated predicate tree (Kleene AND/OR/NOT), and, as a
cross-check, through ``SearchArgument.evaluate`` on the built CNF. A file holding a row for which the predicate is
TRUE must be kept. Where the table's semantics leave a choice, every reasonable reading counts as a match:

* timestamps: the raw value (nanoseconds) as well as floored and ceiled to microseconds;
* decimals written at a larger scale than the table's: rounded down, up, and half-up (Hive) to the table's scale;
* NaN: IEEE (every comparison false) and Spark's total order (NaN = NaN, NaN above +inf).

Besides the random test:

* ``test_known_pitfalls_...``: hand-written tables for each known pitfall (timestamp units/zones/INT96, decimal
  scales, NaN and signed zeros with and without scanned float bounds, nulls/empty/missing columns/default partition,
  integer extremes and unsigned files, long and unicode strings, old dates, storage changed after indexing), each
  checked with every operator, plain and negated, at every literal its data suggests;
* ``test_pruning_stays_strong_...``: on sorted / clustered columns a selective predicate keeps exactly the files
  whose ranges overlap;
* ``test_regression_...``: the two bugs this module found, minimized.
"""

from __future__ import annotations

import datetime as dt
import math
import os
import tempfile
from dataclasses import replace
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, event, given, settings

from storage_handler.handler import list_status_for
from storage_handler.input_format import ParquetInputFormat
from storage_handler.job_conf import SARG_PUSHDOWN, table_properties
from storage_handler.sarg import LeafType
from storage_handler.sarg import serde as sarg_serde
from storage_handler.stats import update_index
from storage_handler.table_desc import TableDesc
from storage_handler.types import parse_hive_type
from tests.e2e_strategies import (
    DATE_MAX,
    DATE_MIN,
    EPOCH,
    NATURAL_TYPE,
    NS_PER_UNIT,
    Column,
    FileColumn,
    ParquetFile,
    Scenario,
    build_sarg,
    literal_pool,
    scenarios,
)
from tests.helpers import examples, folder_partitions
from tests.no_false_negatives_oracle import PARTITION, configure, run_scenario, table_columns, write_file


@settings(max_examples=examples(250), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])
@given(scenarios())
def test_every_file_with_a_matching_row_is_kept(sc: Scenario) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        pruned = run_scenario(sc, tmp)
    event("pruned some files" if pruned else "pruned nothing")


# ================================================================================================ known pitfalls
def _file(name: str, data: dict[str, tuple[pa.DataType, list[Any]]], *, partition: int | None = None,
          int96: bool = False, row_group_size: int = 2, version: str = "2.6", coerce: str | None = None,
          decimal_as_int: bool = False) -> ParquetFile:
    sizes = {len(values) for _, values in data.values()}
    assert len(sizes) == 1, sizes
    cols = tuple((name_.lower(), FileColumn(name_, arrow, tuple(values))) for name_, (arrow, values) in data.items())
    return ParquetFile(name, partition, sizes.pop(), cols, row_group_size, version, int96, coerce, decimal_as_int)


def every_single_leaf(sc: Scenario) -> tuple[Any, ...]:
    """Every operator, plain and negated, with every literal the data suggests: catches any bound that is off by
    one unit (a ceiled max that was floored, a rounded decimal, a NaN left out of the bounds)."""
    every = sc.indexed + sc.added + tuple(f for _, f in sc.rewritten)
    trees: list[Any] = []
    targets = [(c.name, literal_pool(every, c), NATURAL_TYPE.get(c.kind, LeafType.LONG)) for c in sc.columns]
    if sc.partitioned:
        targets.append((PARTITION, sorted({f.partition for f in every if f.partition is not None}), LeafType.LONG))
    for name, pool, leaf_type in targets:
        trees.append(("is_null", name, leaf_type, ()))
        trees.append(("not", [("is_null", name, leaf_type, ())]))
        distinct = list({(type(v), repr(v)): v for v in pool}.values())  # keeps -0.0 and 0.0, one NaN
        for v in distinct:
            for op in ("equals", "null_safe_equals", "less_than", "less_than_equals"):
                trees.append((op, name, leaf_type, (v,)))
                trees.append(("not", [(op, name, leaf_type, (v,))]))
            trees.append(("between", name, leaf_type, (v, v)))
        if len(distinct) > 1:
            trees.append(("in_", name, leaf_type, tuple(distinct[:3])))
    return tuple(trees)


US = pa.timestamp("us")


NS_UTC = pa.timestamp("ns", tz="UTC")


EDGE_CASES: dict[str, Scenario] = {
    "timestamps in every unit, zone and INT96": Scenario(
        columns=(Column("ts", "timestamp", US),), partitioned=False,
        indexed=(
            _file("ns.parquet", {"ts": (NS_UTC, [1_000_000_000_000_000_999, None, -1_999, 1_000_000_000_000_000_001])}),
            _file("ns-naive.parquet", {"ts": (pa.timestamp("ns"), [-1, 1])}, row_group_size=1),
            _file("ms-zoned.parquet", {"ts": (pa.timestamp("ms", tz="America/New_York"), [-86_400_001, 0])}),
            _file("s.parquet", {"ts": (pa.timestamp("s"), [-62_135_596_800, 253_402_300_799])}),
            _file("int96.parquet", {"ts": (pa.timestamp("us", tz="+05:30"), [1, 2, None])}, int96=True),
            _file("legacy.parquet", {"ts": (pa.timestamp("ns"), [5_000_000_123, 7_000_000_999])}, version="1.0"),
            _file("coerced-ms.parquet", {"ts": (pa.timestamp("us"), [1_999, 3_001])}, coerce="ms"),
        ),
        added=(), reindex=False, rewritten=(), deleted=(), scan_floats=False),
    "decimals written at other scales": Scenario(
        columns=(Column("d", "decimal", pa.decimal128(10, 2)),), partitioned=False,
        indexed=(
            _file("scale4.parquet", {"d": (pa.decimal128(12, 4), [12_345, -12_355, 999_999_999_900, None])}),
            _file("scale4-int.parquet", {"d": (pa.decimal128(12, 4), [15, -5])}, decimal_as_int=True),
            _file("scale0.parquet", {"d": (pa.decimal128(8, 0), [12, -99_999_999])}, decimal_as_int=True),
            _file("same.parquet", {"d": (pa.decimal128(10, 2), [1, 9_999_999_999])}),
            _file("scale3.parquet", {"d": (pa.decimal128(13, 5), [1_234_567, 5])}, row_group_size=1),
        ),
        added=(), reindex=False, rewritten=(), deleted=(), scan_floats=False),
    "floats: NaN, signed zeros, infinities": Scenario(
        columns=(Column("f", "float", pa.float32()), Column("x", "double", pa.float64())), partitioned=False,
        indexed=(
            _file("nan-inside.parquet", {"f": (pa.float32(), [1.0, math.nan, 3.0]),
                                          "x": (pa.float64(), [math.nan, 2.5, -7.0])}, row_group_size=3),
            _file("nan-row-group.parquet", {"f": (pa.float32(), [1.0, math.nan]),
                                             "x": (pa.float64(), [math.nan, 2.5])}, row_group_size=1),
            _file("nan-only.parquet", {"f": (pa.float32(), [math.nan]), "x": (pa.float64(), [math.nan])}),
            _file("neg-zero.parquet", {"f": (pa.float32(), [-0.0]), "x": (pa.float64(), [-0.0])}),
            _file("zeros.parquet", {"f": (pa.float32(), [0.0, -0.0]), "x": (pa.float64(), [0.0, None])}),
            _file("inf.parquet", {"f": (pa.float32(), [math.inf, -math.inf]), "x": (pa.float64(), [math.inf, 5e-324])}),
            _file("tenth.parquet", {"f": (pa.float32(), [0.1]), "x": (pa.float64(), [0.1])}),
        ),
        added=(), reindex=False, rewritten=(), deleted=(), scan_floats=False),
    "nulls, empty files, missing columns, default partition": Scenario(
        columns=(Column("i", "int", pa.int32()), Column("s", "string", pa.string())), partitioned=True,
        indexed=(
            _file("all-null.parquet", {"i": (pa.int32(), [None, None]), "s": (pa.string(), [None, None])},
                  partition=1),
            _file("empty.parquet", {"i": (pa.int32(), []), "s": (pa.string(), [])}, partition=1),
            _file("no-i.parquet", {"s": (pa.string(), ["a", "b"])}, partition=2),
            _file("upper.parquet", {"I": (pa.int32(), [7, None]), "S": (pa.string(), ["", None])}, partition=10),
            _file("default.parquet", {"i": (pa.int32(), [1]), "s": (pa.string(), ["x"])}, partition=None),
            _file("mixed.parquet", {"i": (pa.int32(), [3, None, 5]), "s": (pa.string(), [None, "c", "d"])},
                  partition=-5, row_group_size=1),
        ),
        added=(), reindex=False, rewritten=(), deleted=(), scan_floats=False),
    "integer extremes and narrower files": Scenario(
        columns=(Column("l", "bigint", pa.int64()), Column("t", "tinyint", pa.int8())), partitioned=False,
        indexed=(
            _file("int8.parquet", {"l": (pa.int8(), [-128, 127]), "t": (pa.int8(), [-128, 127])}),
            _file("int32.parquet", {"l": (pa.int32(), [-(2**31), 2**31 - 1]), "t": (pa.int8(), [0, None])},
                  version="1.0"),
            _file("int64.parquet", {"l": (pa.int64(), [-(2**63), 2**63 - 1]), "t": (pa.int8(), [1, 1])}),
            _file("big.parquet", {"l": (pa.int64(), [2**53 + 1, 2**53 + 1]), "t": (pa.int8(), [None, None])}),
        ),
        added=(), reindex=False, rewritten=(), deleted=(), scan_floats=False),
    "unicode, long and empty strings": Scenario(
        columns=(Column("s", "string", pa.string()),), partitioned=False,
        indexed=(
            _file("long.parquet", {"s": (pa.string(), ["a" * 64 + "b", "a" * 64 + "c" * 40])}),
            _file("long2.parquet", {"s": (pa.string(), ["a" * 200, "a" * 64])}),
            _file("unicode.parquet", {"s": (pa.string(), ["é", "\U0001f600" * 30, "\uffff", "ÿ"])}),
            _file("empty-string.parquet", {"s": (pa.string(), ["", "\x00"])}),
            _file("ascii.parquet", {"s": (pa.string(), ["z", "zz"])}),
        ),
        added=(), reindex=False, rewritten=(), deleted=(), scan_floats=False),
    "dates before 1970": Scenario(
        columns=(Column("d", "date", pa.date32()),), partitioned=False,
        indexed=(
            _file("old.parquet", {"d": (pa.date32(), [DATE_MIN, -25_509])}),  # 0001-01-01, 1900-03-01
            _file("edge.parquet", {"d": (pa.date32(), [-1, 0])}),
            _file("future.parquet", {"d": (pa.date32(), [19_782, DATE_MAX])}),
        ),
        added=(), reindex=False, rewritten=(), deleted=(), scan_floats=False),
}


EDGE_CASES["unsigned and un-annotated files"] = Scenario(
    columns=(Column("l", "bigint", pa.int64()), Column("i", "int", pa.int32()), Column("s", "string", pa.string())),
    partitioned=False,
    indexed=(
        _file("u32.parquet", {"l": (pa.uint32(), [4_000_000_000, 1]), "i": (pa.uint16(), [65_535, 0]),
                              "s": (pa.binary(), [b"\xc3\xa9", b"a"])}),
        _file("u8.parquet", {"l": (pa.uint8(), [255, 128]), "i": (pa.uint8(), [200, 7]),
                             "s": (pa.binary(), [b"\xf0\x9f\x98\x80", b""])}),
        _file("signed.parquet", {"l": (pa.int64(), [-1, 5]), "i": (pa.int32(), [-1, 300]),
                                 "s": (pa.string(), ["b", "\U0001f600"])}),
    ),
    added=(), reindex=False, rewritten=(), deleted=(), scan_floats=False)


EDGE_CASES["floats, bounds scanned from the data"] = replace(EDGE_CASES["floats: NaN, signed zeros, infinities"],
                                                             scan_floats=True)


_STORAGE_BASE = _file("a.parquet", {"x": (pa.int64(), [1, 2])}, partition=1)


EDGE_CASES["files added, rewritten and deleted after indexing"] = Scenario(
    columns=(Column("x", "bigint", pa.int64()),), partitioned=True,
    indexed=(_STORAGE_BASE, replace(_STORAGE_BASE, name="b.parquet"), replace(_STORAGE_BASE, name="c.parquet"),
             _file("d.parquet", {"x": (pa.int64(), [100])}, partition=None)),
    added=(_file("new.parquet", {"x": (pa.int64(), [50, 60])}, partition=2),),
    reindex=False,
    rewritten=((0, _file("a.parquet", {"x": (pa.int64(), [1000, 2])}, partition=1)),
               (3, _file("d.parquet", {"x": (pa.int64(), [101])}, partition=None))),
    deleted=(1,), scan_floats=False)


@pytest.mark.parametrize("name", sorted(EDGE_CASES))
def test_known_pitfalls_never_lose_a_matching_file(name: str, tmp_path: Path) -> None:
    sc = EDGE_CASES[name]
    run_scenario(replace(sc, predicates=every_single_leaf(sc)), str(tmp_path))


# ================================================================================================ strength
STRENGTH_COLUMNS = (Column("x", "bigint", pa.int64()), Column("ts", "timestamp", US), Column("s", "string", pa.string()),
                    Column("d", "decimal", pa.decimal128(10, 2)))


JAN_1 = dt.datetime(2024, 1, 1)


def _strength_file(i: int) -> ParquetFile:
    """File ``i`` of 20: x in [1000 i, 1000 i + 490], ts on day i of 2024 (00:00-00:49), s 'k<i>-000'..'k<i>-049',
    d in [100 i, 100 i + 24.5]. Units, zones, integer widths and decimal scales vary by file; 2 row groups each."""
    k = range(50)
    unit = ("ms", "us", "ns")[i % 3]
    minute = 60 * 10**9 // NS_PER_UNIT[unit]
    start = (JAN_1 + dt.timedelta(days=i) - EPOCH) // dt.timedelta(seconds=1) * 10**9 // NS_PER_UNIT[unit]
    scale = 2 if i % 2 == 0 else 1  # a file with more places than the column has no bounds (Spark cannot read it)
    return _file(f"f{i:02d}.parquet", {
        "x": (pa.int64() if i % 2 == 0 else pa.int32(), [1000 * i + 10 * j for j in k]),
        "ts": (pa.timestamp(unit, tz="UTC" if i % 2 == 0 else None), [start + j * minute for j in k]),
        "s": (pa.string(), [f"k{i:02d}-{j:03d}" for j in k]),
        "d": (pa.decimal128(8 + scale, scale), [(10_000 * i + 50 * j) // 10 ** (2 - scale) for j in k]),
    }, partition=i // 5, row_group_size=25)


def _t(day: int, hour: int = 0, minute: int = 0) -> dt.datetime:
    return dt.datetime(2024, 1, day, hour, minute)


D, L, S, T = LeafType.DECIMAL, LeafType.LONG, LeafType.STRING, LeafType.TIMESTAMP


STRENGTH_CASES: list[tuple[Any, set[int]]] = [
    (("equals", "x", L, (5020,)), {5}),
    (("equals", "x", L, (5485,)), {5}),  # not stored, but inside file 5's range
    (("equals", "x", L, (5500,)), set()),  # between two files
    (("between", "x", L, (3400, 7000)), {3, 4, 5, 6, 7}),
    (("in_", "x", L, (1200, 17000, 99999)), {1, 17}),
    (("not", [("less_than", "x", L, (18000,))]), {18, 19}),
    (("less_than", "ts", T, (_t(4),)), {0, 1, 2}),
    (("not", [("less_than_equals", "ts", T, (_t(18, 8),))]), {18, 19}),
    (("between", "ts", T, (_t(6, 0, 10), _t(6, 0, 20))), {5}),
    (("equals", "ts", T, (_t(11, 0, 49),)), {10}),
    (("equals", "ts", T, (_t(11, 0, 50),)), set()),
    (("equals", "s", S, ("k07-010",)), {7}),
    (("less_than", "s", S, ("k03",)), {0, 1, 2}),
    (("between", "s", S, ("k05", "k08")), {5, 6, 7}),
    (("less_than", "d", D, (Decimal("150.00"),)), {0, 1}),
    (("equals", "d", D, (Decimal("1000.5"),)), {10}),
    (("equals", "d", D, (Decimal("1000.505"),)), set()),  # no decimal(10,2) value equals it
    (("and", [("equals", "p", L, (2,)), ("less_than", "x", L, (12000,))]), {10, 11}),
    (("or", [("less_than", "x", L, (2000,)), ("equals", "s", S, ("k19-000",))]), {0, 1, 19}),
    (("is_null", "x", L, ()), set()),
    (("not", [("is_null", "x", L, ())]), set(range(20))),
]


def test_pruning_stays_strong_on_sorted_and_clustered_columns(tmp_path: Path) -> None:
    files = tuple(_strength_file(i) for i in range(20))
    sc = Scenario(STRENGTH_COLUMNS, True, files, (), False, (), (), False)
    root = tmp_path / "table"
    location = "file:" + str(root)
    paths = [write_file(root, True, f) for f in files]
    update_index(location, table_columns(STRENGTH_COLUMNS), partition_columns=[PARTITION], max_workers=1)
    for tree, expected in STRENGTH_CASES:
        result = ParquetInputFormat().list_status(configure(location, STRENGTH_COLUMNS, True, build_sarg(tree)),
                                                  folder_partitions(location, [PARTITION]))
        kept = {paths.index(f.path) for f in result.files}
        assert kept == expected, f"{tree}: kept {sorted(kept)}, expected exactly {sorted(expected)}"
        assert result.metrics.files_without_stats == 0
    run_scenario(replace(sc, predicates=tuple(tree for tree, _ in STRENGTH_CASES)), str(tmp_path / "oracle"))


# ================================================================================================ regressions
def _single_file_table(tmp_path: Path, hive_type: str, arrow: pa.DataType, values: list[Any]) -> tuple[str, Any]:
    root = tmp_path / "table"
    root.mkdir()
    pq.write_table(pa.table({"c": pa.array(values, arrow)}), root / "f.parquet")
    columns = ((("c", parse_hive_type(hive_type))),)
    update_index("file:" + str(root), columns, max_workers=1)
    return "file:" + str(root), columns


# Found by this module (fixed in 62ec87b): pruning/domain.py built a decimal column's domain point with
# ``Decimal(k).scaleb(-scale)`` under Python's default 28-digit context, so a literal needing more than 28
# significant digits at the column's scale was rounded and the file holding exactly that value was pruned; when the
# rounding carried past the precision (38 nines), Arrow raised while compiling the predicate.
@pytest.mark.parametrize(("hive_type", "value", "where"), [
    ("decimal(38,18)", "12345678901.123456789012345678", "c = 12345678901.123456789012345678"),
    ("decimal(38,18)", "12345678901.123456789012345678", "c >= 12345678901.123456789012345678"),
    ("decimal(38,0)", "12345678901234567890123456789012345678", "c = 12345678901234567890123456789012345678"),
    ("decimal(38,0)", "99999999999999999999999999999999999999", "c = 99999999999999999999999999999999999999"),
])
def test_regression_decimal_literal_with_more_than_28_digits(tmp_path: Path, hive_type: str, value: str,
                                                             where: str) -> None:
    t = parse_hive_type(hive_type)
    location, columns = _single_file_table(tmp_path, hive_type, pa.decimal128(t.precision, t.scale), [Decimal(value)])
    result, _ = list_status_for(TableDesc("db.t", location, columns), where)
    assert [f.path for f in result.files] == ["f.parquet"]


def test_regression_every_indexed_file_deleted(tmp_path: Path) -> None:
    """Found by this module: with an empty listing and a non-empty index, ``attach_stats`` subtracted the null sum
    of an empty selection and ``list_status`` raised TypeError instead of returning no files."""
    location, columns = _single_file_table(tmp_path, "bigint", pa.int64(), [1, 2])
    os.remove(tmp_path / "table" / "f.parquet")
    sarg = build_sarg(("equals", "c", LeafType.LONG, (1,)))
    props = table_properties("db.t", location, columns, [])
    props[SARG_PUSHDOWN] = sarg_serde.dumps(sarg)
    assert ParquetInputFormat().list_status(props).files == ()
