"""The oracle of the no-false-negative tests (``test_no_false_negatives_e2e.py``): a scenario's files written and
indexed, storage changed behind the index's back, ``list_status`` run, and every file read back with pyarrow and
judged row by row with SQL's three-valued logic, independently of the product, under every reasonable reading of
the table's semantics (timestamp rounding, decimal rescaling, NaN order). A file holding a row the predicate makes
TRUE must have been kept; the report of one that was not names the file, the row and the leaf."""

from __future__ import annotations

import datetime as dt
import math
import os
from collections.abc import Callable
from decimal import ROUND_CEILING, ROUND_FLOOR, ROUND_HALF_UP, Context, Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import event
from hypothesis.control import currently_in_test_context

from storage_handler.hive_paths import HIVE_DEFAULT_PARTITION
from storage_handler.input_format import ParquetInputFormat
from storage_handler.job_conf import FILTER_COMPLETE, SARG_PUSHDOWN, table_properties
from storage_handler.sarg import LeafOperator, SearchArgument, TruthValue
from storage_handler.sarg import serde as sarg_serde
from storage_handler.stats import StatsOptions, load, update_index
from storage_handler.stats.membership.spec import MembershipSpec
from storage_handler.types import HiveType, parse_hive_type
from tests.e2e_strategies import (
    DAY_NS,
    EPOCH,
    EPOCH_DATE,
    NS_PER_UNIT,
    Column,
    ParquetFile,
    Scenario,
    build_sarg,
    is_node,
)
from tests.helpers import folder_partitions

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
        if tree is sc.predicates[0]:
            _check_deferred_strict(location, sc, sarg, result)
        pruned += len(on_disk) - len(kept)
    return pruned


def _check_deferred_strict(location: str, sc: Scenario, sarg: SearchArgument, strict: Any) -> None:
    """The prune service's scan leaves the strict evaluation until its answer is sent
    (``list_status(strict=False)``, then ``matched()``): the same files certain, the same fully-matched metrics."""
    lazy = ParquetInputFormat().list_status(configure(location, sc.columns, sc.partitioned, sarg),
                                            folder_partitions(location, [PARTITION]), strict=False)
    assert lazy.certain is None and lazy.metrics.files_matched_fully == 0
    done = lazy.matched()
    assert done.certain is not None and done.certain.to_pylist() == strict.certain.to_pylist()
    assert (done.metrics.files_matched_fully, done.metrics.rows_matched_fully) == (
        strict.metrics.files_matched_fully, strict.metrics.rows_matched_fully)
    assert done.matched() is done


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
