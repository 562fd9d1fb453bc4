"""Property: for random columns, recorded bounds are conservative and null counts exact when known."""

from __future__ import annotations

import math
import tempfile
from decimal import Decimal

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from storage_handler.stats import StatsOptions, read_file_stats
from storage_handler.types import HiveType, arrow_to_hive
from tests.helpers import examples
from tests.stats.util import write

INT_TYPES = [pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint16(), pa.uint32()]
TS_UNITS = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}  # nanoseconds per unit
TS_LIMITS = {"s": 10**15, "ms": 10**17, "us": 10**18, "ns": 9 * 10**18}  # beyond int64 µs for s/ms on purpose


@st.composite
def columns(draw: st.DrawFn) -> tuple[pa.Array, HiveType]:
    kind = draw(st.sampled_from(["int", "float", "string", "decimal", "date", "timestamp", "bool"]))
    size = draw(st.integers(0, 30))

    def values(elements: st.SearchStrategy) -> list:
        return draw(st.lists(st.one_of(st.none(), elements), min_size=size, max_size=size))

    if kind == "int":
        t = draw(st.sampled_from(INT_TYPES))
        info = (0, 2 ** t.bit_width - 1) if pa.types.is_unsigned_integer(t) else (
            -(2 ** (t.bit_width - 1)), 2 ** (t.bit_width - 1) - 1)
        return pa.array(values(st.integers(*info)), t), arrow_to_hive(t)
    if kind == "float":
        t = draw(st.sampled_from([pa.float32(), pa.float64()]))
        width = 32 if t == pa.float32() else 64
        specials = st.sampled_from([math.nan, 0.0, -0.0, math.inf, -math.inf])
        return pa.array(values(st.one_of(st.floats(width=width), specials)), t), arrow_to_hive(t)
    if kind == "string":
        return pa.array(values(st.text(max_size=12)), pa.string()), HiveType("string")
    if kind == "decimal":
        precision = draw(st.integers(1, 38))
        scale = draw(st.integers(0, precision))
        limit = 10**precision - 1
        decs = st.integers(-limit, limit).map(  # exact: Decimal arithmetic would round to 28 digits
            lambda u: Decimal((int(u < 0), tuple(int(c) for c in str(abs(u))), -scale)))
        table_precision = draw(st.integers(1, 38))
        table_type = HiveType("decimal", precision=table_precision, scale=draw(st.integers(0, table_precision)))
        return pa.array(values(decs), pa.decimal128(precision, scale)), table_type
    if kind == "date":
        return pa.array(values(st.integers(-719162, 2932896)), pa.date32()), HiveType("date")
    if kind == "timestamp":
        unit = draw(st.sampled_from(list(TS_UNITS)))
        tz = draw(st.sampled_from([None, "UTC", "America/New_York"]))
        raw = values(st.integers(-TS_LIMITS[unit], TS_LIMITS[unit]))
        return pa.array(raw, pa.timestamp(unit, tz=tz)), HiveType("timestamp")
    return pa.array(values(st.booleans()), pa.bool_()), HiveType("boolean")


def comparable(value: object, arrow_type: pa.DataType) -> object:
    """A value on the scale of the index's representation (timestamps: ns, compared against µs * 1000)."""
    if pa.types.is_timestamp(arrow_type):
        return value * TS_UNITS[arrow_type.unit]
    return value


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(column=columns(), row_group_size=st.integers(1, 8), scan=st.booleans())
def test_bounds_are_conservative_and_null_counts_exact(column, row_group_size, scan):
    array, hive_type = column
    if pa.types.is_timestamp(array.type):
        storage = array.cast(pa.int64())
    elif pa.types.is_date(array.type):
        storage = array.cast(pa.int32())  # the index holds dates as days since 1970
    else:
        storage = array
    raw_values = storage.to_pylist()
    with tempfile.TemporaryDirectory() as folder:
        path = write(folder, "f.parquet", pa.table({"c": array}), row_group_size=row_group_size)
        stats = read_file_stats(path, [("c", hive_type)], StatsOptions(scan_float_columns=scan))
    assert stats.error is None and stats.num_records == len(raw_values)
    s = stats.column("c")
    if s.null_count is not None:
        assert s.null_count == sum(v is None for v in raw_values)
    scale = 1000 if pa.types.is_timestamp(array.type) else 1
    lo = None if s.min is None else s.min * scale
    hi = None if s.max is None else s.max * scale
    for v in raw_values:
        if v is None:
            continue
        if isinstance(v, float) and math.isnan(v):
            assert lo is None and hi is None, "a NaN file must not carry float bounds"
            continue
        v = comparable(v, array.type)
        if lo is not None:
            assert lo <= v, (lo, v)
        if hi is not None:
            assert v <= hi, (v, hi)
    if pa.types.is_floating(array.type) and lo is not None and lo == 0.0:
        assert math.copysign(1.0, lo) < 0  # a zero min is always -0.0
