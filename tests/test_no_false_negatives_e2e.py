"""No false negatives, end to end: real Parquet files, a real index, ``list_status`` with a pushed SearchArgument.

GitHub issue 4, "Must hold". Hypothesis writes random Parquet tables with pyarrow (see ``tests/e2e_strategies.py``:
nulls, all-null and missing columns, empty files, NaN, +-0.0, +-inf, unicode and long strings, integer extremes and
narrower integer files, decimals at another scale than the table's, every timestamp unit with and without a zone,
INT96, dates before 1970, several row groups, legacy format versions, a ``p=<int>`` partition level with
``__HIVE_DEFAULT_PARTITION__``), indexes them with ``update_index``, changes storage behind the index's back (new,
rewritten and deleted files) and runs ``ParquetInputFormat.list_status`` for random predicates.

The oracle reads every file on storage back with pyarrow and evaluates the predicate row by row with SQL's
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
from collections.abc import Callable
from dataclasses import replace
from decimal import ROUND_CEILING, ROUND_FLOOR, ROUND_HALF_UP, Context, Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis.control import currently_in_test_context

from storage_handler.handler import list_status_for
from storage_handler.hive_paths import HIVE_DEFAULT_PARTITION
from storage_handler.input_format import ParquetInputFormat
from storage_handler.job_conf import FILTER_COMPLETE, SARG_PUSHDOWN, table_properties
from storage_handler.sarg import LeafOperator, LeafType, SearchArgument, TruthValue
from storage_handler.sarg import serde as sarg_serde
from storage_handler.stats import StatsOptions, load, update_index
from storage_handler.stats.membership.spec import MembershipSpec
from storage_handler.table_desc import TableDesc
from storage_handler.types import HiveType, parse_hive_type
from tests.e2e_strategies import (
    DATE_MAX,
    DATE_MIN,
    DAY_NS,
    EPOCH,
    EPOCH_DATE,
    NATURAL_TYPE,
    NS_PER_UNIT,
    Column,
    FileColumn,
    ParquetFile,
    Scenario,
    build_sarg,
    is_node,
    literal_pool,
    scenarios,
)
from tests.helpers import examples, folder_partitions

TV = TruthValue
PARTITION = "p"
PARTITION_TYPE = parse_hive_type("int")
ROUNDINGS = ("floor", "ceil", "hive")
MODES = [(rounding, total) for rounding in ROUNDINGS for total in (False, True)]
_OP_NAMES = {LeafOperator.EQUALS: "equals", LeafOperator.NULL_SAFE_EQUALS: "null_safe_equals",
             LeafOperator.LESS_THAN: "less_than", LeafOperator.LESS_THAN_EQUALS: "less_than_equals",
             LeafOperator.IN: "in_", LeafOperator.BETWEEN: "between", LeafOperator.IS_NULL: "is_null"}
_EXACT = Context(prec=100)


# ================================================================================================ writing
def write_file(root: Path, partitioned: bool, f: ParquetFile) -> str:
    """Write ``f`` under the table folder; return its path relative to the table (as ``list_status`` gives it)."""
    rel = f.name
    if partitioned:
        rel = f"{PARTITION}={HIVE_DEFAULT_PARTITION if f.partition is None else f.partition}/{f.name}"
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(f.table(), path, **f.write_options())
    return rel


def table_columns(columns: tuple[Column, ...]) -> list[tuple[str, HiveType]]:
    return [(c.name, c.hive) for c in columns]


def configure(location: str, columns: tuple[Column, ...], partitioned: bool, sarg: SearchArgument) -> dict[str, str]:
    props = table_properties("db.e2e", location, table_columns(columns),
                             [(PARTITION, PARTITION_TYPE)] if partitioned else [])
    props[SARG_PUSHDOWN] = sarg_serde.dumps(sarg)
    props[FILTER_COMPLETE] = "true"  # the SearchArgument is the whole predicate: files may be fully matched
    return props


# ================================================================================================ the oracle
def read_rows(path: Path, rel: str, columns: tuple[Column, ...], partitioned: bool) -> list[dict[str, Any]]:
    """Every row of a file with exact values: ints, floats, Decimals at the file's scale, str, bool, dates as days,
    timestamps as ns since the epoch (UTC wall time). A column the file lacks is NULL; names match ignoring case."""
    table = pq.read_table(path, coerce_int96_timestamp_unit="us")
    by_name = {name.lower(): i for i, name in enumerate(table.column_names)}
    rows: list[dict[str, Any]] = [{} for _ in range(table.num_rows)]
    for c in columns:
        i = by_name.get(c.name)
        if i is None:
            values: list[Any] = [None] * table.num_rows
        else:
            data = table.column(i)
            if pa.types.is_timestamp(data.type):
                factor = NS_PER_UNIT[data.type.unit]
                values = [None if v is None else v * factor for v in data.cast(pa.int64()).to_pylist()]
            elif pa.types.is_date32(data.type):
                values = data.cast(pa.int32()).to_pylist()
            elif pa.types.is_binary(data.type):  # un-annotated BYTE_ARRAY in a string column: read as text
                values = [None if v is None else v.decode("utf-8") for v in data.to_pylist()]
            else:
                values = data.to_pylist()
        for row, v in zip(rows, values, strict=True):
            row[c.name] = v
    if partitioned:
        text = rel.split("/")[0].split("=", 1)[1]
        for row in rows:
            row[PARTITION] = None if text == HIVE_DEFAULT_PARTITION else int(text)
    return rows


def in_mode(value: Any, column: Column | None, rounding: str) -> Any:
    """A stored value as the table shows it, under one reading of the table's semantics."""
    if value is None or column is None:
        return value
    if column.kind == "decimal":
        scale = column.arrow.scale
        how = {"floor": ROUND_FLOOR, "ceil": ROUND_CEILING, "hive": ROUND_HALF_UP}[rounding]
        return value.quantize(Decimal(1).scaleb(-scale), rounding=how, context=_EXACT)
    if column.kind == "timestamp":
        if rounding == "floor":
            return value // 1000 * 1000
        if rounding == "ceil":
            return -((-value) // 1000) * 1000
    return value


def comparable(value: Any, kind: str) -> Any:
    """Literals and stored values in one exactly ordered domain per column kind."""
    if kind in ("date", "timestamp"):
        if isinstance(value, dt.datetime):
            return (value - EPOCH) // dt.timedelta(microseconds=1) * 1000
        if isinstance(value, dt.date):
            return (value - EPOCH_DATE).days * DAY_NS
        return value * DAY_NS if kind == "date" else value  # stored: days / ns
    if isinstance(value, (int, Decimal)) and not isinstance(value, bool):
        return Fraction(value)
    return value  # float (compared exactly with Fractions by Python), str, bool


def compare(a: Any, b: Any, total: bool) -> int | None:
    """-1 / 0 / 1, or None when unordered (a NaN under IEEE semantics)."""
    a_nan, b_nan = isinstance(a, float) and math.isnan(a), isinstance(b, float) and math.isnan(b)
    if a_nan or b_nan:
        return (a_nan > b_nan) - (a_nan < b_nan) if total else None
    return (a > b) - (a < b)


def row_leaf(op: str, literals: tuple[Any, ...], value: Any, kind: str, total: bool) -> TruthValue:
    """SQL semantics of one leaf for one row: YES, NO or NULL."""
    if op == "is_null":
        return TV.YES if value is None else TV.NO
    if value is None:
        return TV.NO if op == "null_safe_equals" else TV.NULL
    v = comparable(value, kind)
    lits = [comparable(x, kind) for x in literals]
    if op in ("equals", "null_safe_equals"):
        ok = compare(v, lits[0], total) == 0
    elif op == "less_than":
        ok = compare(v, lits[0], total) == -1
    elif op == "less_than_equals":
        ok = compare(v, lits[0], total) in (-1, 0)
    elif op == "in_":
        ok = any(compare(v, x, total) == 0 for x in lits)
    else:
        ok = compare(lits[0], v, total) in (-1, 0) and compare(v, lits[1], total) in (-1, 0)
    return TV.YES if ok else TV.NO


def kleene(tree: Any, leaf_value: Callable[[Any], TruthValue]) -> TruthValue:
    if not is_node(tree):
        return leaf_value(tree)
    op, kids = tree
    values = [kleene(k, leaf_value) for k in kids]
    if op == "not":
        return {TV.YES: TV.NO, TV.NO: TV.YES, TV.NULL: TV.NULL}[values[0]]
    if op == "and":
        return TV.NO if TV.NO in values else TV.NULL if TV.NULL in values else TV.YES
    return TV.YES if TV.YES in values else TV.NULL if TV.NULL in values else TV.NO


class Oracle:
    """Whether a stored row matches a predicate under some reading of the table's semantics (see module doc)."""

    def __init__(self, columns: tuple[Column, ...]) -> None:
        self.columns = {c.name: c for c in columns}

    def _kind(self, column: str) -> tuple[str, Column | None]:
        name = column.lower()
        return ("partition", None) if name == PARTITION else (self.columns[name].kind, self.columns[name])

    def _leaf(self, row: dict[str, Any], op: str, column: str, literals: tuple[Any, ...], rounding: str,
              total: bool) -> TruthValue:
        kind, col = self._kind(column)
        return row_leaf(op, literals, in_mode(row[column.lower()], col, rounding), kind, total)

    def matching_mode(self, row: dict[str, Any], tree: Any, sarg: SearchArgument) -> tuple[str, bool] | None:
        """The first semantics mode in which the row matches (None: no match), cross-checking the CNF."""
        found = None
        for rounding, total in MODES:
            truth = kleene(tree, lambda leaf, r=rounding, t=total: self._leaf(row, leaf[0], leaf[1], leaf[3], r, t))
            leaf_values = [
                self._leaf(row, _OP_NAMES[p.operator], p.column_name,
                           (p.literal,) if p.literal is not None else p.literal_list, rounding, total)
                for p in sarg.leaves
            ]
            via_sarg = sarg.evaluate(leaf_values)
            if via_sarg in (TV.YES, TV.NO, TV.NULL):  # a CNF past 256 clauses folds to YES_NO_NULL: no opinion
                assert via_sarg == truth, (
                    f"SearchArgument.evaluate gives {via_sarg} but the predicate tree gives {truth} "
                    f"for row {row}: {sarg.to_old_string()} from {tree}"
                )
            if truth is TV.YES and found is None:
                found = (rounding, total)
        return found

    def certainly_matches(self, row: dict[str, Any], tree: Any) -> bool:
        """Whether the row matches under *every* reading of the semantics (what a fully matched file needs)."""
        return all(
            kleene(tree, lambda leaf, r=rounding, t=total: self._leaf(row, leaf[0], leaf[1], leaf[3], r, t)) is TV.YES
            for rounding, total in MODES
        )


# ================================================================================================ the property
def run_scenario(sc: Scenario, tmp: str, membership: MembershipSpec | None = None) -> int:  # noqa: C901
    """Write, index, change storage, then check every predicate; returns how many (file, predicate) were pruned.
    ``membership``: bloom filters / value lists to index too (``tests/test_membership_e2e.py``)."""
    root = Path(tmp) / "table"
    root.mkdir(parents=True)
    location = "file:" + str(root)
    cols = table_columns(sc.columns)
    partition_columns = [PARTITION] if sc.partitioned else []
    options = StatsOptions(scan_float_columns=sc.scan_floats, membership=membership or MembershipSpec())
    indexed = [write_file(root, sc.partitioned, f) for f in sc.indexed]
    update_index(location, cols, partition_columns=partition_columns, options=options, max_workers=1)
    for f in sc.added:
        write_file(root, sc.partitioned, f)
    if sc.reindex:
        update_index(location, cols, partition_columns=partition_columns, options=options, max_workers=1)
    for i, f in sc.rewritten:
        before = os.stat(root / indexed[i]).st_mtime_ns
        write_file(root, sc.partitioned, f)
        later = before + 10 * 10**9  # a rewrite within the same millisecond must still look changed
        os.utime(root / indexed[i], ns=(later, later))
    for i in sc.deleted:
        os.remove(root / indexed[i])

    on_disk = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.parquet") if "_hsh_index" not in p.parts)
    rows = {rel: read_rows(root / rel, rel, sc.columns, sc.partitioned) for rel in on_disk}
    oracle = Oracle(sc.columns)
    pruned = 0
    for tree in sc.predicates:
        sarg = build_sarg(tree)
        result = ParquetInputFormat().list_status(configure(location, sc.columns, sc.partitioned, sarg),
                                                  folder_partitions(location, [PARTITION]))
        kept = [f.path for f in result.files]
        assert len(kept) == len(set(kept)), f"a file was returned twice: {kept}"
        assert set(kept) <= set(on_disk), f"returned files that are not on storage: {set(kept) - set(on_disk)}"
        # partitioned: only the kept partitions are listed (every other file is checked by the oracle below)
        assert result.metrics.files_total == len(on_disk) if not sc.partitioned else \
            result.metrics.files_total <= len(on_disk)
        for f in result.files:
            assert f.length == os.stat(root / f.path).st_size
        for rel in on_disk:
            if rel in kept:
                continue
            for row in rows[rel]:
                mode = oracle.matching_mode(row, tree, sarg)
                assert mode is None, false_negative_report(root, location, sc, rel, row, mode, tree, sarg)
        # strict evaluation: a file called fully matched has no row that fails the predicate in any reading
        assert result.certain is not None
        for rel, certain in zip(kept, result.certain.to_pylist(), strict=True):
            if certain:
                if currently_in_test_context():
                    event("a file was fully matched")
                for row in rows[rel]:
                    assert oracle.certainly_matches(row, tree), (
                        f"FALSE CERTAINTY: {rel} was called fully matched but this row does not match in every "
                        f"reading: {row}\n  predicate: {tree}\n  sarg: {sarg.to_old_string()}")
        pruned += len(on_disk) - len(kept)
    return pruned


def false_negative_report(root: Path, location: str, sc: Scenario, rel: str, row: dict[str, Any],
                          mode: tuple[str, bool] | None, tree: Any, sarg: SearchArgument) -> str:
    snapshot = load(location)
    stats: Any = None
    if snapshot is not None:
        stats = [r for r in snapshot.table.to_pylist() if r["path"] == rel]
    return (
        f"FALSE NEGATIVE: {rel} was pruned but holds a matching row (semantics {mode}).\n"
        f"  predicate: {tree}\n  sarg: {sarg.to_old_string()}\n  row: {row}\n"
        f"  columns: {[(c.name, str(c.hive)) for c in sc.columns]}\n"
        f"  file schema: {pq.read_schema(root / rel)}\n  index row: {stats}"
    )


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
    scale = 2 if i % 2 == 0 else 4
    return _file(f"f{i:02d}.parquet", {
        "x": (pa.int64() if i % 2 == 0 else pa.int32(), [1000 * i + 10 * j for j in k]),
        "ts": (pa.timestamp(unit, tz="UTC" if i % 2 == 0 else None), [start + j * minute for j in k]),
        "s": (pa.string(), [f"k{i:02d}-{j:03d}" for j in k]),
        "d": (pa.decimal128(8 + scale, scale), [(10_000 * i + 50 * j) * 10 ** (scale - 2) for j in k]),
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
