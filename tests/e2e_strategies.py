"""Hypothesis strategies for the end-to-end no-false-negatives test: random Parquet tables and predicates.

A :class:`Scenario` is a table (columns with a canonical Arrow type each; the table's Hive type is
``arrow_to_hive`` of it), Parquet files written with pyarrow in awkward ways (narrower integer types, decimals at
another scale, every timestamp unit with and without a zone, INT96, legacy format versions, several row groups,
empty files, all-null and missing columns, upper-case field names), what happens to storage after indexing (new
files, rewritten files, deleted files) and a few predicate trees whose literals come mostly from the data.

Values are kept in each file's own domain: ints, floats, decimals as unscaled ints at the file's scale, strings,
bools, dates as days since 1970-01-01, timestamps as ints in the file's unit.
"""

from __future__ import annotations

import datetime as dt
import math
import struct
from dataclasses import dataclass, field, replace
from decimal import ROUND_CEILING, ROUND_FLOOR, Context, Decimal, localcontext
from typing import Any

import pyarrow as pa
from hypothesis import strategies as st

from storage_handler.errors import FilterError
from storage_handler.sarg import LeafType, SearchArgument, SearchArgumentFactory
from storage_handler.sarg.literals import check_literal
from storage_handler.types import HiveType, arrow_to_hive
from tests.pruning.helpers import add_leaf, trees
from tests.pyarrow_compat import writer_options

EPOCH = dt.datetime(1970, 1, 1)
EPOCH_DATE = dt.date(1970, 1, 1)
DAY_NS = 86_400 * 10**9
DATE_MIN = (dt.date(1, 1, 1) - EPOCH_DATE).days
DATE_MAX = (dt.date(9999, 12, 31) - EPOCH_DATE).days
SECONDS_MIN = DATE_MIN * 86_400
SECONDS_MAX = DATE_MAX * 86_400 + 86_399
NS_PER_UNIT = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
EXACT = Context(prec=100)
#: java.sql.Date moves dates in the Julian/Gregorian gap: literals there are not what they look like in Hive.
GAP = (dt.date(1582, 10, 5), dt.date(1582, 10, 14))

INT_TYPES = {"tinyint": pa.int8(), "smallint": pa.int16(), "int": pa.int32(), "bigint": pa.int64()}
INT_ORDER = list(INT_TYPES)
#: Column kinds; the ones whose statistics are subtle (floats, decimals, strings, timestamps) are drawn more often.
KINDS = [*INT_ORDER, "float", "double", "decimal", "string", "boolean", "date", "timestamp", "float", "double",
         "decimal", "decimal", "string", "timestamp", "timestamp"]
OPERATORS = ["equals", "null_safe_equals", "less_than", "less_than_equals", "in_", "between", "is_null"]
ZONES = [None, "UTC", "America/New_York", "+05:30"]
F32_MAX = 3.4028234663852886e38
STRING_EDGES = ["", "a", "ab", "b", "é", "z", "ÿ", "\uffff", "\U0001f600", "\x00", "a" * 70, "a" * 64 + "b",
                "\U0001f600" * 20 + "x"]


def _to_width(value: float, width: int) -> float:
    return struct.unpack("<f", struct.pack("<f", value))[0] if width == 32 else value


def int_range(arrow_type: pa.DataType) -> tuple[int, int]:
    bits = arrow_type.bit_width
    return -(2 ** (bits - 1)), 2 ** (bits - 1) - 1


@dataclass(frozen=True)
class Column:
    """A table column: ``arrow`` is its canonical Arrow type; the table declares ``arrow_to_hive(arrow)``."""

    name: str
    kind: str
    arrow: pa.DataType

    @property
    def hive(self) -> HiveType:
        return arrow_to_hive(self.arrow, self.name)


@dataclass(frozen=True)
class FileColumn:
    """One column as written to one file: its own Arrow type, field name (case may differ) and values."""

    field_name: str
    arrow: pa.DataType
    values: tuple[Any, ...]

    def to_arrow(self) -> pa.Array:
        t = self.arrow
        if pa.types.is_timestamp(t):
            return pa.array(self.values, pa.int64()).cast(t)
        if pa.types.is_date32(t):
            return pa.array(self.values, pa.int32()).cast(t)
        if pa.types.is_decimal(t):
            return pa.array([None if v is None else Decimal(f"{v}E-{t.scale}") for v in self.values], t)
        return pa.array(list(self.values), t)


@dataclass(frozen=True)
class ParquetFile:
    """One data file and how pyarrow writes it; ``partition`` None = ``__HIVE_DEFAULT_PARTITION__``."""

    name: str
    partition: int | None
    num_rows: int
    columns: tuple[tuple[str, FileColumn], ...]  # table column name -> data; absent columns are not listed
    row_group_size: int
    version: str
    int96: bool
    coerce: str | None
    decimal_as_int: bool

    def table(self) -> pa.Table:
        fields = [pa.field(fc.field_name, fc.arrow) for _, fc in self.columns]
        return pa.Table.from_arrays([fc.to_arrow() for _, fc in self.columns], schema=pa.schema(fields))

    def write_options(self) -> dict[str, Any]:
        coerce = self.coerce
        if coerce is None and self.version != "2.6":
            coerce = "us"  # older format versions have no nanoseconds: truncate explicitly rather than fail
        return writer_options(
            row_group_size=self.row_group_size, version=self.version,
            use_deprecated_int96_timestamps=self.int96, coerce_timestamps=coerce,
            allow_truncated_timestamps=True, store_decimal_as_integer=self.decimal_as_int,
        )


@dataclass(frozen=True)
class Scenario:
    columns: tuple[Column, ...]
    partitioned: bool
    indexed: tuple[ParquetFile, ...]  # written, then indexed
    added: tuple[ParquetFile, ...]  # written after indexing (the index does not know them)
    reindex: bool  # refresh the index once more after ``added`` (before the rewrites/deletes below)
    rewritten: tuple[tuple[int, ParquetFile], ...]  # indexed file i replaced by new content (and a new mtime)
    deleted: tuple[int, ...]  # indexed files removed from storage
    scan_floats: bool
    predicates: tuple[Any, ...] = field(default=())  # predicate trees, see ``trees``


# ----------------------------------------------------------------------------------------------- table layout
@st.composite
def columns(draw: st.DrawFn) -> tuple[Column, ...]:
    kinds = draw(st.lists(st.sampled_from(KINDS), min_size=1, max_size=6))
    result = []
    for i, kind in enumerate(kinds):
        if kind in INT_TYPES:
            arrow = INT_TYPES[kind]
        elif kind == "float":
            arrow = pa.float32()
        elif kind == "double":
            arrow = pa.float64()
        elif kind == "decimal":
            precision = draw(st.sampled_from([1, 3, 5, 9, 10, 18, 19, 38]))
            arrow = pa.decimal128(precision, draw(st.integers(0, precision)))
        elif kind == "string":
            arrow = pa.string()
        elif kind == "boolean":
            arrow = pa.bool_()
        elif kind == "date":
            arrow = pa.date32()
        else:
            arrow = pa.timestamp("us")
        result.append(Column(f"c{i}_{kind}", kind, arrow))
    return tuple(result)


def _with_nulls(draw: st.DrawFn, values: st.SearchStrategy[Any], size: int) -> tuple[Any, ...]:
    mode = draw(st.sampled_from(["values", "values", "some_null", "some_null", "all_null"]))
    if mode == "all_null":
        return (None,) * size
    element = st.one_of(st.none(), values) if mode == "some_null" else values
    return tuple(draw(st.lists(element, min_size=size, max_size=size)))


def _clustered_ints(draw: st.DrawFn, lo: int, hi: int, edges: list[int]) -> st.SearchStrategy[int]:
    """Edge values, or values near a per-file base (so that files cover different ranges and pruning happens)."""
    base = draw(st.integers(lo, hi))
    spread = draw(st.sampled_from([0, 1, 10, 1000, 10**6, 10**12]))
    window = st.integers(base, min(hi, base + spread))
    return st.one_of(window, window, st.sampled_from([e for e in edges if lo <= e <= hi]))


@st.composite
def file_column(draw: st.DrawFn, column: Column, size: int, int96: bool) -> FileColumn:
    kind, arrow = column.kind, column.arrow
    name = column.name.upper() if draw(st.integers(0, 9)) == 0 else column.name
    if kind in INT_TYPES:
        narrower = INT_ORDER[: INT_ORDER.index(kind) + 1]
        arrow = INT_TYPES[draw(st.sampled_from(narrower))] if draw(st.booleans()) else arrow
        lo, hi = int_range(arrow)
        values = _clustered_ints(draw, lo, hi, [lo, hi, 0, -1, 1, lo + 1, hi - 1])
    elif kind in ("float", "double"):
        width = 32 if kind == "float" else 64
        top = F32_MAX if width == 32 else 1.7976931348623157e308
        specials = st.sampled_from([math.nan, -0.0, 0.0, math.inf, -math.inf, 1.5, -1.5, top, -top, 5e-324 if
                                    width == 64 else 1.401298464324817e-45])
        base = draw(st.floats(-1e6, 1e6, width=width))
        step = draw(st.sampled_from([0.0, 0.25, 10.0]))
        window = st.integers(0, 100).map(lambda k: _to_width(base + k * step, width))
        values = st.one_of(window, window, specials, st.floats(width=width))
    elif kind == "decimal":
        precision, scale = arrow.precision, arrow.scale
        shift = draw(st.integers(max(-scale, 1 - precision), min(3, 38 - precision))) if draw(st.booleans()) else 0
        arrow = pa.decimal128(precision + shift, scale + shift)
        # fits the file's precision and, rounded to the table's scale, still the table's
        limit = 10 ** (precision + shift) - 1 if shift <= 0 else (10**precision - 1) * 10**shift
        values = _clustered_ints(draw, -limit, limit, [-limit, limit, 0, 1, -1, 5 * 10**max(shift - 1, 0)])
    elif kind == "string":
        prefix = draw(st.text(max_size=3))
        values = st.one_of(
            st.sampled_from(STRING_EDGES),
            st.text(max_size=6).map(lambda s: prefix + s),
            st.text(min_size=65, max_size=90),
        )
    elif kind == "boolean":
        values = st.booleans()
    elif kind == "date":
        values = _clustered_ints(draw, DATE_MIN, DATE_MAX, [DATE_MIN, DATE_MAX, -1, 0, 1, -25567, 19723])
    else:
        unit = draw(st.sampled_from(["s", "ms", "us"] if int96 else ["s", "ms", "us", "ns", "ns"]))
        arrow = pa.timestamp(unit, tz=draw(st.sampled_from(ZONES)))
        if unit == "ns":
            lo, hi = INT64_MIN + 1, INT64_MAX
        else:
            lo, hi = SECONDS_MIN * 10**9 // NS_PER_UNIT[unit], (SECONDS_MAX + 1) * 10**9 // NS_PER_UNIT[unit] - 1
        per_second = 10**9 // NS_PER_UNIT[unit]
        values = _clustered_ints(draw, lo, hi, [lo, hi, -1, 0, 1, 86_400 * per_second, -per_second])
    return FileColumn(name, arrow, _with_nulls(draw, values, size))


@st.composite
def parquet_file(draw: st.DrawFn, table_columns: tuple[Column, ...], partitioned: bool, name: str) -> ParquetFile:
    num_rows = draw(st.integers(0, 8))
    int96 = draw(st.integers(0, 4)) == 0
    present = [c for c in table_columns if draw(st.integers(0, 9)) > 0] or [table_columns[0]]
    cols = tuple((c.name, draw(file_column(c, num_rows, int96))) for c in present)
    partition = draw(st.sampled_from([None, -5, 0, 1, 2, 10])) if partitioned else None
    return ParquetFile(
        name=name, partition=partition, num_rows=num_rows, columns=cols,
        row_group_size=draw(st.integers(1, max(num_rows, 1))),
        version=draw(st.sampled_from(["2.6", "2.6", "2.6", "2.4", "1.0"])), int96=int96,
        coerce=draw(st.sampled_from([None, None, None, "ms", "us"])), decimal_as_int=draw(st.booleans()),
    )


# ----------------------------------------------------------------------------------------------- literals
def date_literal(days: int) -> dt.date | None:
    if not DATE_MIN <= days <= DATE_MAX:
        return None
    day = EPOCH_DATE + dt.timedelta(days=days)
    return None if GAP[0] <= day <= GAP[1] else day


def timestamp_literal(ns: int) -> dt.datetime | None:
    """The naive UTC datetime of ``ns`` nanoseconds since the epoch, floored to microseconds."""
    days = ns // DAY_NS
    if date_literal(days) is None:
        return None
    return EPOCH + dt.timedelta(microseconds=ns // 1000)


def literal_pool(scenario_files: tuple[ParquetFile, ...], column: Column) -> list[Any]:
    """Literals of the column's natural leaf type taken from the data: every value, each file's extremes again
    (bounds are where pruning goes wrong), and values as the table shows them (decimals rounded to the table's
    scale, timestamps floored and ceiled to microseconds)."""
    pool: list[Any] = []
    for f in scenario_files:
        for name, fc in f.columns:
            present = [v for v in fc.values if v is not None] if name == column.name else []
            if not present:
                continue
            for v in [*present, min(present), max(present)]:
                pool.extend(_as_literals(v, fc.arrow, column))
    return [v for v in pool if v is not None]


def _as_literals(v: Any, file_type: pa.DataType, column: Column) -> list[Any]:
    if column.kind == "decimal":
        exact = Decimal(f"{v}E-{file_type.scale}")
        step = Decimal(1).scaleb(-column.arrow.scale)
        return [exact, exact.quantize(step, rounding=ROUND_FLOOR, context=EXACT),
                exact.quantize(step, rounding=ROUND_CEILING, context=EXACT)]
    if column.kind == "date":
        return [date_literal(v)]
    if column.kind == "timestamp":
        ns = v * NS_PER_UNIT[file_type.unit]
        return [timestamp_literal(ns), timestamp_literal(-((-ns) // 1000) * 1000)]
    if isinstance(v, bytes):
        return [v.decode("utf-8")]
    return [v]


def _nudge(kind: str, value: Any, step: int) -> Any:
    """A literal next to ``value`` (``step`` -1, 0 or +1 units); None when that leaves the literal domain."""
    try:
        if kind in INT_TYPES or kind == "partition":
            v = value + step
            return v if INT64_MIN <= v <= INT64_MAX else None
        if kind in ("float", "double"):
            return value if step == 0 or math.isnan(value) else math.nextafter(value, math.inf * step)
        if kind == "decimal":
            exponent = value.as_tuple().exponent
            with localcontext(EXACT):
                nudged = value + Decimal(step).scaleb(min(exponent, 0) - 1) if step else value
            try:
                check_literal("DECIMAL", nudged, "nudged literal")
            except FilterError:
                return None
            return nudged
        if kind == "string":
            return {-1: value[:-1], 0: value, 1: value + "\x00"}[step]
        if kind == "boolean":
            return value if step == 0 else not value
        if kind == "date":
            return date_literal((value - EPOCH_DATE).days + step)
        if kind == "timestamp":
            return timestamp_literal(((value - EPOCH) // dt.timedelta(microseconds=1) + step) * 1000)
    except (OverflowError, ValueError):
        return None
    raise AssertionError(kind)


RANDOM_LITERALS: dict[str, list[Any]] = {
    "int": [0, 1, -1, 127, 128, -129, 2**15, 2**31 - 1, 2**31, -(2**31) - 1, 3_000_000_000, 2**53 + 1, INT64_MAX,
            INT64_MIN],
    "float": [0.0, -0.0, 1.5, -1.5, math.inf, -math.inf, math.nan, 1e300, F32_MAX, 0.1, 5e-324],
    "decimal": [Decimal("0"), Decimal("0.00"), Decimal("-1.5"), Decimal("1.25"), Decimal("999.99"), Decimal("1E+30"),
                Decimal("-1E+30"), Decimal("1E-30"), Decimal("99999999999999999999999999999999999999")],
    "string": STRING_EDGES + ["aa", "\U0010ffff"],
    "boolean": [False, True],
    "date": [dt.date(1, 1, 1), dt.date(1969, 12, 31), dt.date(1970, 1, 1), dt.date(1900, 3, 1), dt.date(2024, 2, 29),
             dt.date(9999, 12, 31), dt.date(1582, 10, 4), dt.date(1582, 10, 15)],
    "timestamp": [dt.datetime(1969, 12, 31, 23, 59, 59, 999999), EPOCH, dt.datetime(1970, 1, 1, 0, 0, 0, 1),
                  dt.datetime(2024, 1, 1, 12), dt.datetime(1, 1, 1), dt.datetime(9999, 12, 31, 23, 59, 59, 999999),
                  dt.datetime(1677, 9, 21, 0, 12, 43, 145224), dt.datetime(2262, 4, 11, 23, 47, 16, 854775)],
}
NATURAL_TYPE = {"float": LeafType.FLOAT, "double": LeafType.FLOAT, "decimal": LeafType.DECIMAL,
                "string": LeafType.STRING, "boolean": LeafType.BOOLEAN, "date": LeafType.DATE,
                "timestamp": LeafType.TIMESTAMP}


def _random_pool(kind: str) -> list[Any]:
    if kind in INT_TYPES or kind == "partition":
        return RANDOM_LITERALS["int"]
    return RANDOM_LITERALS["float" if kind == "double" else kind]


@st.composite
def literal_kind(draw: st.DrawFn, kind: str, pool: list[Any]) -> tuple[LeafType, st.SearchStrategy[Any]]:
    """The leaf type and a strategy for its literals: mostly the column's own type with literals from the data
    (exactly, or nudged by one unit), sometimes random edge literals or an exactly comparable other type."""
    natural = NATURAL_TYPE.get(kind, LeafType.LONG)
    own = st.sampled_from(pool) if pool else st.sampled_from(_random_pool(kind))
    nudged = st.tuples(own, st.sampled_from([-1, 0, 0, 1])).map(lambda p: _nudge(kind, *p)).filter(
        lambda v: v is not None)
    natural_literals = st.one_of(own, nudged, nudged, st.sampled_from(_random_pool(kind)))
    cross = draw(st.integers(0, 9)) == 0
    if cross and (kind in INT_TYPES or kind == "partition"):  # int vs DECIMAL: Hive compares as decimals, exactly
        return LeafType.DECIMAL, st.one_of(natural_literals.map(Decimal),
                                           natural_literals.map(lambda v: Decimal(v) + Decimal("0.5")))
    if cross and kind == "decimal":  # decimal vs LONG: exact as well
        return LeafType.LONG, natural_literals.map(lambda v: int(v.to_integral_value(context=EXACT))).filter(
            lambda v: INT64_MIN <= v <= INT64_MAX)
    if cross and kind == "timestamp":  # timestamp vs DATE: the date's midnight
        return LeafType.DATE, natural_literals.map(lambda v: v.date()).filter(lambda d: not GAP[0] <= d <= GAP[1])
    if cross and kind == "date":  # date vs TIMESTAMP: compared as timestamps (the date's midnight)
        hours = st.sampled_from([0, 0, 1, 23])
        return LeafType.TIMESTAMP, st.tuples(natural_literals, hours).map(
            lambda p: dt.datetime(p[0].year, p[0].month, p[0].day, p[1]))
    return natural, natural_literals


Leaf = tuple[str, str, LeafType, tuple[Any, ...]]  # (operator, column as written in the leaf, type, literals)


@st.composite
def leaf(draw: st.DrawFn, targets: list[tuple[str, str, list[Any]]]) -> Leaf:
    """``targets``: (column name, kind, literal pool); the partition column has kind ``partition``."""
    name, kind, pool = draw(st.sampled_from(targets))
    column = name.upper() if draw(st.integers(0, 9)) == 0 else name
    op = draw(st.sampled_from(OPERATORS))
    leaf_type, literals = draw(literal_kind(kind, pool))
    if op == "is_null":
        return op, column, leaf_type, ()
    if op == "between":
        return op, column, leaf_type, tuple(draw(st.lists(literals, min_size=2, max_size=2)))
    if op == "in_":
        return op, column, leaf_type, tuple(draw(st.lists(literals, min_size=1, max_size=4)))
    return op, column, leaf_type, (draw(literals),)


def is_node(tree: Any) -> bool:
    return isinstance(tree, tuple) and len(tree) == 2 and tree[0] in ("and", "or", "not")


def build_sarg(tree: Any) -> SearchArgument:
    """The SearchArgument of a predicate tree, through Hive's builder API."""
    b = SearchArgumentFactory.new_builder()

    def add(node: Any) -> None:
        if is_node(node):
            {"and": b.start_and, "or": b.start_or, "not": b.start_not}[node[0]]()
            for child in node[1]:
                add(child)
            b.end()
            return
        op, column, leaf_type, literals = node
        add_leaf(b, op, column, leaf_type, literals)

    add(tree)
    return b.build()


@st.composite
def boundary_probes(draw: st.DrawFn, files: tuple[ParquetFile, ...], cols: tuple[Column, ...]) -> tuple[Any, ...]:
    """Single leaves right at one file's bounds, as the table shows them: ``= max``, ``NOT <= max``, ``= min`` and
    ``< min`` (with the floored and ceiled forms of a timestamp or rounded decimal). A bound that is off by one unit
    (a floored maximum, a decimal rounded the wrong way, a NaN left out of the bounds) fails one of these."""
    candidates = []
    for f in files:
        for name, fc in f.columns:
            present = [v for v in fc.values if v is not None and not (isinstance(v, float) and math.isnan(v))]
            column = next(c for c in cols if c.name == name)
            if present:
                subtle = (  # where a bound is easiest to get wrong by one unit: weigh these more
                    (column.kind == "timestamp" and fc.arrow.unit == "ns" and f.version == "2.6" and f.coerce is None
                     and not f.int96)
                    or (column.kind == "decimal" and fc.arrow.scale != column.arrow.scale)
                    or (len(present) < sum(v is not None for v in fc.values))  # NaN beside the bounds
                )
                candidates += [(column, fc, min(present), max(present))] * (4 if subtle else 1)
    if not candidates:
        return ()
    column, fc, low, high = draw(st.sampled_from(candidates))
    leaf_type = NATURAL_TYPE.get(column.kind, LeafType.LONG)
    highs = [v for v in _as_literals(high, fc.arrow, column) if v is not None]
    lows = [v for v in _as_literals(low, fc.arrow, column) if v is not None]
    result: list[Any] = []
    if highs:
        result += [("equals", column.name, leaf_type, (max(highs),)),
                   ("not", [("less_than_equals", column.name, leaf_type, (min(highs),))])]
    if lows:
        result += [("equals", column.name, leaf_type, (min(lows),)),
                   ("less_than", column.name, leaf_type, (max(lows),))]
    return tuple(result)


@st.composite
def scenarios(draw: st.DrawFn) -> Scenario:
    cols = draw(columns())
    partitioned = draw(st.booleans())
    count = draw(st.integers(1, 6))
    indexed = tuple(draw(parquet_file(cols, partitioned, f"part-{i}.parquet")) for i in range(count))
    added = tuple(draw(parquet_file(cols, partitioned, f"new-{i}.parquet"))
                  for i in range(draw(st.sampled_from([0, 0, 0, 1, 2]))))
    rewritten: list[tuple[int, ParquetFile]] = []
    deleted: list[int] = []
    for i, f in enumerate(indexed):
        fate = draw(st.sampled_from(["keep"] * 8 + ["rewrite", "delete"]))
        if fate == "rewrite":
            new = draw(parquet_file(cols, partitioned, f.name))
            rewritten.append((i, replace(new, partition=f.partition)))
        elif fate == "delete":
            deleted.append(i)
    every = indexed + added + tuple(f for _, f in rewritten)
    targets = [(c.name, c.kind, literal_pool(every, c)) for c in cols]
    if partitioned:
        targets.append(("p", "partition", sorted({f.partition for f in every if f.partition is not None})))
    probes = draw(boundary_probes(every, cols))
    leaves = leaf(targets)
    single = st.one_of(leaves, st.tuples(st.just("not"), st.lists(leaves, min_size=1, max_size=1)))
    predicates = probes + tuple(draw(st.lists(st.one_of(single, trees(leaves)), min_size=2, max_size=8)))
    return Scenario(cols, partitioned, indexed, added, draw(st.booleans()), tuple(rewritten), tuple(deleted),
                    draw(st.booleans()), predicates)
