"""Hypothesis strategies: index rows with awkward statistics, partition texts, and random SearchArguments.

Values come from small pools full of edge cases (type extremes, -0.0, NaN, inf, unicode, dates before 1970), so
literals hit bounds exactly often enough to exercise every YES/NO/YES_NO branch.
"""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal
from typing import Any

from hypothesis import strategies as st

from storage_handler.errors import FilterError
from storage_handler.pruning.partitions import HIVE_DEFAULT_PARTITION
from storage_handler.sarg import SearchArgument
from storage_handler.types import HiveType, parse_schema_text
from tests.pruning.helpers import add_leaf, builder, leaf_type_of, trees

F32_MAX = 3.4028234663852886e38
F32_TENTH = 0.10000000149011612

BOUNDS: dict[str, list[Any]] = {
    "int": [-(2**31), -1, 0, 1, 5, 2**31 - 1],
    "bigint": [-(2**63), -1, 0, 5, 2**53 + 1, 2**63 - 1],
    "double": [-math.inf, -1e308, -1.5, -0.0, 0.0, 5e-324, 0.1, 1.5, math.inf, math.nan],
    "float": [-F32_MAX, -1.5, -0.0, 0.0, F32_TENTH, 1.5, math.inf, math.nan],
    "decimal(5,2)": [Decimal("-999.99"), Decimal("-1.50"), Decimal("0.00"), Decimal("1.25"), Decimal("999.99")],
    "string": ["", "a", "ab", "b", "é", "z", "\U0001f600", "ÿ"],
    "date": [dt.date(1, 1, 1), dt.date(1969, 12, 31), dt.date(1970, 1, 1), dt.date(2024, 1, 1), dt.date(2024, 2, 29)],
    "timestamp": [dt.datetime(1969, 12, 31, 23, 59, 59, 999999), dt.datetime(1970, 1, 1), dt.datetime(2024, 1, 1),
                  dt.datetime(2024, 1, 1, 0, 0, 0, 1), dt.datetime(2024, 1, 1, 12)],
    "boolean": [False, True],
}
BOUNDS["varchar(4)"] = BOUNDS["string"]
BOUNDS["char(3)"] = ["a", "ab"]
BOUNDS["smallint"] = [-(2**15), 0, 7, 2**15 - 1]

_NUMBER_LITERALS = [0, 1, 5, -1, 7, 2**31 - 1, 2**31, 3_000_000_000, -3_000_000_000, 2**53 + 1, 2**63 - 1, -(2**63),
                    Decimal("1.5"), Decimal("-0.5"), Decimal("5"), Decimal("1.25"), Decimal("1.250"), Decimal("1.255"),
                    Decimal("0.1"), Decimal("999.995"), Decimal("1E+30"), Decimal("-1E+30"), Decimal("1E-30"),
                    0.5, 5.0, 1.5, -0.0, 0.0, 0.1, F32_TENTH, 1.25, 1e300, -1e300, math.inf, -math.inf, math.nan,
                    float(2**53), 9.3e18, "5", True]
LITERALS: dict[str, list[Any]] = {
    "int": _NUMBER_LITERALS, "bigint": _NUMBER_LITERALS, "smallint": _NUMBER_LITERALS + [40000],
    "double": _NUMBER_LITERALS + [5e-324, -1e308, 1.7976931348623157e308],
    "float": _NUMBER_LITERALS + [F32_MAX, 3.5e38],
    "decimal(5,2)": _NUMBER_LITERALS + [Decimal("-999.99"), Decimal("999.99"), Decimal("-1.50")],
    "string": BOUNDS["string"] + ["aa", "\uffff", 5],
    "varchar(4)": BOUNDS["string"] + ["abcde"],
    "char(3)": ["a", "ab"],
    "date": BOUNDS["date"] + [dt.datetime(2024, 1, 1), dt.datetime(2024, 1, 1, 12), dt.datetime(1969, 12, 31, 23),
                              dt.datetime(9999, 12, 31, 1), "2024-01-01", "1970-01-01", "2024-1-1", "2024-02-30", 5],
    "timestamp": BOUNDS["timestamp"] + [dt.date(2024, 1, 1), dt.date(2024, 1, 2), dt.date(1969, 12, 31),
                                        "2024-01-01"],
    "boolean": [False, True, 1],
}

PARTITION_TEXTS: dict[str, list[str | None]] = {
    "int": ["1", "10", "2", "5", "-5", "007", "+5", "1.5", "", "abc", "2147483648", None, HIVE_DEFAULT_PARTITION],
    "string": ["a", "b", "10", "2", "", "é", None, HIVE_DEFAULT_PARTITION],
    "date": ["2024-01-01", "2024-01-02", "1969-12-31", "2024-02-30", "2024-1-1", "0000-01-01", "9999-12-31", None],
    "decimal(5,2)": ["1.25", "1.250", "1.255", ".5", "5.", "+1", "-0", "1000", "999.99", "x", ".", None],
    "double": ["1.5", "-0", "0", "1e999", "NaN", "inf", ".5", "5.", "1e5", "0.1", None],
    "boolean": ["true", "FALSE", "yes", None],
    "timestamp": ["2024-01-01 00:00:00", "2024-01-01 00:00:00.5", "2024-01-01 00:00:00.000001", "2024-01-01",
                  "2024-02-30 00:00:00", "2024-01-01 24:00:00", "0000-01-01 00:00:00", None],
    "float": ["1.5", None],
}

DATA_SCHEMA = parse_schema_text(
    "i int, sm smallint, l bigint, d double, f float, dec decimal(5,2), s string, v varchar(4), c char(3), "
    "dt date, ts timestamp, b boolean, bin binary, gone int"
)
#: Stats-capable columns present in the index (``gone`` is in the table but not in the index; ``bin`` has none).
INDEX_COLUMNS = [(n, t) for n, t in DATA_SCHEMA if n not in ("bin", "gone")]
PARTITION_SCHEMA = parse_schema_text(
    "p_int int, p_str string, p_date date, p_dec decimal(5,2), p_dbl double, p_bool boolean, p_ts timestamp, "
    "p_flt float"
)


def type_key(hive_type: HiveType) -> str:
    return str(hive_type)


@st.composite
def column_stats(draw: st.DrawFn, hive_type: HiveType, records: int | None) -> tuple[Any, Any, int | None]:
    pool = BOUNDS[type_key(hive_type)]
    kind = draw(st.sampled_from(["ordered", "ordered", "ordered", "any", "all_null"]))
    if kind == "all_null" and records:
        return None, None, records
    lo, hi = draw(st.sampled_from(pool + [None])), draw(st.sampled_from(pool + [None]))
    if kind == "ordered" and lo is not None and hi is not None:
        try:
            if hi < lo:
                lo, hi = hi, lo
        except TypeError:
            pass
    nulls = draw(st.one_of(st.none(), st.integers(0, 3) if records is None else st.integers(0, records + 1)))
    return lo, hi, nulls


@st.composite
def partition_map(draw: st.DrawFn) -> list[tuple[str, str | None]] | None:
    if draw(st.integers(0, 20)) == 0:
        return None
    entries: list[tuple[str, str | None]] = []
    for name, hive_type in PARTITION_SCHEMA:
        how = draw(st.sampled_from(["exact"] * 6 + ["upper", "missing"]))
        if how == "missing":
            continue
        key = name.upper() if how == "upper" else name
        entries.append((key, draw(st.sampled_from(PARTITION_TEXTS[type_key(hive_type)]))))
    return entries


@st.composite
def index_file(draw: st.DrawFn) -> dict[str, Any]:
    records = draw(st.sampled_from([None, 0, 1, 3, 10]))
    mins, maxs, nulls = {}, {}, {}
    for name, hive_type in INDEX_COLUMNS:
        mins[name], maxs[name], nulls[name] = draw(column_stats(hive_type, records))
    file: dict[str, Any] = {"num_records": records, "min": mins, "max": maxs, "nulls": nulls,
                            "partition_values": draw(partition_map())}
    if draw(st.integers(0, 15)) == 0:
        file["error"] = "cannot read footer"
        file["min"], file["max"], file["nulls"] = None, None, None
    if draw(st.integers(0, 25)) == 0:
        file["min"] = None  # a null struct: every lower bound unknown
    return file


ALL_COLUMNS = [(n, t) for n, t in DATA_SCHEMA] + [(n, t) for n, t in PARTITION_SCHEMA]
OPERATORS = ["equals", "null_safe_equals", "less_than", "less_than_equals", "in_", "between", "is_null"]


@st.composite
def leaf_spec(draw: st.DrawFn) -> tuple[str, str, tuple[Any, ...]]:
    name, hive_type = draw(st.sampled_from(ALL_COLUMNS + [("nope", parse_schema_text("x int")[0][1])]))
    if hive_type.name == "binary":
        pool: list[Any] = ["a", 5]
    else:
        pool = LITERALS.get(type_key(hive_type), LITERALS["int"])
    op = draw(st.sampled_from(OPERATORS))
    column = draw(st.sampled_from([name, name.upper()]))
    if op == "is_null":
        return op, column, ()
    first = draw(st.sampled_from(pool))
    same_class = [v for v in pool if type(v) is type(first)]
    if op == "between":
        return op, column, (first, draw(st.sampled_from(same_class)))
    if op == "in_":
        more = draw(st.lists(st.sampled_from(same_class + [None]), max_size=3))
        return op, column, (first, *more)
    return op, column, (first,)


def _add_leaf(b: Any, spec: tuple[str, str, tuple[Any, ...]]) -> None:
    op, column, literals = spec
    kind = leaf_type_of(literals[0]) if literals else leaf_type_of(0)
    add_leaf(b, op, column, kind, literals)


def build_sarg(tree: Any) -> SearchArgument:
    """Feed a nested ``(op, [children])`` / leaf-spec tree to the builder (iteratively, via an explicit stack)."""
    b = builder()
    stack: list[Any] = [tree]
    while stack:
        item = stack.pop()
        if item == "end":
            b.end()
        elif isinstance(item, tuple) and item[0] in ("and", "or", "not") and isinstance(item[1], list):
            {"and": b.start_and, "or": b.start_or, "not": b.start_not}[item[0]]()
            stack.append("end")
            stack.extend(reversed(item[1]))
        else:
            _add_leaf(b, item)
    return b.build()


@st.composite
def search_arguments(draw: st.DrawFn, leaves: st.SearchStrategy[Any] | None = None) -> SearchArgument:
    tree = draw(trees(leaves if leaves is not None else leaf_spec()))
    try:
        return build_sarg(tree)
    except FilterError as exc:  # the builder refuses a literal Hive could not hold: not our concern here
        from hypothesis import reject

        reject()
        raise AssertionError from exc
