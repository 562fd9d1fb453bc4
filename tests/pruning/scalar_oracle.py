"""The scalar evaluator: one file at a time, in plain Python -- the test oracle for the vectorized evaluator.

It is written independently of ``vectorized.py`` on purpose: literals are compared with bounds as exact Python
values (``Fraction`` for numbers, dates widened to timestamps), leaves follow the shape of ORC's
``evaluatePredicateMinMax`` (locate the literal against [min, max]) and the tree is evaluated by the
SearchArgument itself (``SearchArgument.evaluate``), with Hive's own TruthValue tables. What it shares with the
vectorized path is only the policy of which literals convert (``domain.parse_date_text``, the accepted types).
About 1-2 us per leaf and file: never use it on the hot path.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Iterable, Mapping
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from typing import Any

import pyarrow as pa

from storage_handler.pruning.bind import SchemaLike, normalize_schema
from storage_handler.pruning.domain import (
    COMPARABLE_TYPES,
    SWITCH_DAYS,
    UnconvertibleLiteral,
    parse_date_text,
)
from storage_handler.pruning.partitions import HIVE_DEFAULT_PARTITION, PARSED_TYPES, PARTITION_VALUES_COLUMN
from storage_handler.pruning.tree import Leaf, leaf_from_sarg
from storage_handler.sarg import LeafOperator, SearchArgument, TruthValue
from storage_handler.types import EXACT_DECIMALS, HiveType

Op = LeafOperator
TV = TruthValue
_STRUCTS = ("min_values", "max_values", "null_count")
_WITH_NULL = {TV.YES: TV.YES_NULL, TV.NO: TV.NO_NULL, TV.YES_NO: TV.YES_NO_NULL}


class _Unknown(Exception):
    """Raised while evaluating a leaf whose answer must be YES_NO_NULL."""


class ScalarEvaluator:
    """Evaluate a SearchArgument against index rows one by one (see the module docstring)."""

    def __init__(self, sarg: SearchArgument, schema: SchemaLike, partition_columns: SchemaLike = (), *,
                 compact: bool = False) -> None:
        self.sarg = sarg
        self.compact = compact
        self.data = normalize_schema(schema)
        self.partitions = normalize_schema(partition_columns)
        predicates = sarg.compact_leaves if compact else sarg.leaves
        self.leaves = [leaf_from_sarg(i, p) for i, p in enumerate(predicates)]
        self._cache: dict[int, list[tuple[object, bool]] | _Unknown] = {}

    def evaluate_table(self, table: pa.Table | pa.RecordBatch) -> list[TruthValue]:
        """One TruthValue per row of an index table (or scan-file batch)."""
        present = _present_columns(table.schema)
        return [self.evaluate(row, present) for row in table.to_pylist()]

    def evaluate(self, row: Mapping[str, object], present: Iterable[str] | None = None) -> TruthValue:
        """The TruthValue of one index row; ``present`` = columns the index structs have (default: all)."""
        values = self.leaf_values(row, present)
        return self.sarg.evaluate_compact(values) if self.compact else self.sarg.evaluate(values)

    def leaf_values(self, row: Mapping[str, object], present: Iterable[str] | None = None) -> list[TruthValue]:
        have = None if present is None else set(present)
        return [self._leaf(leaf, row, have) for leaf in self.leaves]

    # ------------------------------------------------------------------ one leaf
    def _leaf(self, leaf: Leaf, row: Mapping[str, object], present: set[str] | None) -> TruthValue:
        column = leaf.column.lower()
        try:
            literals = self._converted(leaf)
            if column in self.partitions:
                hive_type = self.partitions[column]
                value = _partition_value(row, column, hive_type)
                if value is None:
                    return _all_null(leaf.operator)
                return _range(leaf.operator, literals, value, value, has_null=False)
            return _data_leaf(leaf.operator, literals, row, column, present)
        except (_Unknown, UnconvertibleLiteral):  # the latter from an unparseable partition date
            return TV.YES_NO_NULL

    def _converted(self, leaf: Leaf) -> list[tuple[object, bool]]:
        """The leaf's literals for its column (computed once per leaf); raises ``_Unknown`` for unusable leaves."""
        cached = self._cache.get(leaf.index)
        if cached is None:
            cached = self._cache[leaf.index] = self._convert(leaf)
        if isinstance(cached, _Unknown):
            raise cached
        return cached

    def _convert(self, leaf: Leaf) -> list[tuple[object, bool]] | _Unknown:
        column = leaf.column.lower()
        if column in self.partitions:
            hive_type = self.partitions[column]
            usable = hive_type.name in PARSED_TYPES
        else:
            hive_type = self.data.get(column)  # type: ignore[assignment]
            usable = hive_type is not None and hive_type.name in COMPARABLE_TYPES
        if not usable:
            return _Unknown()
        try:
            return _literals(leaf, hive_type)
        except (_Unknown, UnconvertibleLiteral):
            return _Unknown()


def _present_columns(schema: pa.Schema) -> set[str]:
    names: set[str] = set()
    for struct in _STRUCTS:
        if struct in schema.names and pa.types.is_struct(schema.field(struct).type):
            names.update(f.name for f in schema.field(struct).type)
    return names


def _data_leaf(op: LeafOperator, literals: list[tuple[object, bool]], row: Mapping[str, object], column: str,
               present: set[str] | None) -> TruthValue:
    if row.get("stats_error") is not None:
        raise _Unknown
    if present is not None and column not in present:
        raise _Unknown
    lo, hi, nulls = (_field(row, s, column) for s in _STRUCTS)  # Any: Python values of the index
    lo = None if isinstance(lo, float) and math.isnan(lo) else lo
    hi = None if isinstance(hi, float) and math.isnan(hi) else hi
    records: Any = row.get("num_records")
    if (lo is not None and hi is not None and _cmp(lo, hi) > 0) or (records is not None and records < 0):
        raise _Unknown  # inconsistent statistics
    if nulls is not None and (nulls < 0 or (records is not None and nulls > records)):
        raise _Unknown
    if records == 0:
        return TV.NO
    if records is not None and nulls == records:
        return _all_null(op)
    return _range(op, literals, lo, hi, has_null=nulls is None or nulls != 0)


def _field(row: Mapping[str, object], struct: str, column: str) -> Any:
    values = row.get(struct)
    return values.get(column) if isinstance(values, dict) else None


def _all_null(op: LeafOperator) -> TruthValue:
    return {Op.IS_NULL: TV.YES, Op.NULL_SAFE_EQUALS: TV.NO}.get(op, TV.NULL)


def _literals(leaf: Leaf, hive_type: HiveType) -> list[tuple[object, bool]]:
    """Each literal converted for comparison, with whether the column type can hold it at all."""
    converted = [_literal(v, hive_type) for v in leaf.literals]
    return [(v, _in_domain(v, hive_type)) for v in converted]


def _in_domain(value: object, hive_type: HiveType) -> bool:
    """Whether some value of the column's type equals ``value`` (``int = 1.5`` can never be true)."""
    name = hive_type.name
    if hive_type.is_integer or name == "decimal":
        if isinstance(value, float) and math.isinf(value):
            return False
        number = Fraction(value)  # type: ignore[call-overload]
        if name == "decimal":
            number *= 10 ** (hive_type.scale or 0)
            low, high = -(10 ** (hive_type.precision or 10) - 1), 10 ** (hive_type.precision or 10) - 1
        else:
            low, high = hive_type.integer_range
        return number.denominator == 1 and low <= number <= high
    if name in ("float", "double"):  # float bounds are compared as doubles
        if isinstance(value, float):
            return True
        try:
            return Fraction(float(value)) == Fraction(value)  # type: ignore[arg-type,call-overload]
        except OverflowError:
            return False
    if name == "date" and isinstance(value, dt.datetime):
        return value.time() == dt.time(0)
    return True


def _range(op: LeafOperator, typed: list[tuple[object, bool]], lo: object, hi: object, has_null: bool
           ) -> TruthValue:
    """ORC's evaluatePredicateMinMax with possibly unknown (None) bounds. ``typed`` pairs each literal with
    whether the column's type can hold it: EQUALS / IN ignore literals it cannot."""
    literals = [v for v, _ in typed]
    if op in (Op.EQUALS, Op.NULL_SAFE_EQUALS, Op.IN) and not any(ok for _, ok in typed):
        return TV.NO_NULL if has_null and op != Op.NULL_SAFE_EQUALS else TV.NO
    if op == Op.IN:
        literals = [v for v, ok in typed if ok]

    def below(v: object) -> bool:
        return lo is not None and _cmp(v, lo) < 0

    def above(v: object) -> bool:
        return hi is not None and _cmp(v, hi) > 0

    def at_min(v: object) -> bool:
        return lo is not None and _cmp(v, lo) == 0

    def at_max(v: object) -> bool:
        return hi is not None and _cmp(v, hi) == 0

    single = lo is not None and hi is not None and _cmp(lo, hi) == 0
    if op == Op.IS_NULL:
        return TV.YES_NO if has_null else TV.NO
    if op == Op.NULL_SAFE_EQUALS:
        v = literals[0]
        if below(v) or above(v):
            return TV.NO
        return TV.YES if single and at_min(v) and not has_null else TV.YES_NO
    if op == Op.EQUALS:
        v = literals[0]
        result = TV.YES if single and at_min(v) else TV.NO if below(v) or above(v) else TV.YES_NO
    elif op == Op.LESS_THAN:
        v = literals[0]
        result = TV.YES if above(v) else TV.NO if below(v) or at_min(v) else TV.YES_NO
    elif op == Op.LESS_THAN_EQUALS:
        v = literals[0]
        result = TV.YES if above(v) or at_max(v) else TV.NO if below(v) else TV.YES_NO
    elif op == Op.IN:
        if single:
            result = TV.YES if any(at_min(v) for v in literals) else TV.NO
        else:
            inside = any(not below(v) and not above(v) for v in literals)
            result = TV.YES_NO if inside else TV.NO
    elif op == Op.BETWEEN:
        first, last = literals
        if below(first) or at_min(first):
            result = TV.YES if above(last) or at_max(last) else TV.NO if below(last) else TV.YES_NO
        elif above(first) or below(last):  # ORC stops at YES_NO for an inverted range; this is still exact
            result = TV.NO
        else:
            result = TV.YES_NO
    else:  # pragma: no cover
        raise AssertionError(op)
    return _WITH_NULL[result] if has_null else result


# ------------------------------------------------------------------ exact comparison of Python values
def _cmp(a: object, b: object) -> int:
    a, b = _comparable(a), _comparable(b)
    return (a > b) - (a < b)  # type: ignore[operator]


def _comparable(v: object) -> object:
    if isinstance(v, bool):
        return v
    if isinstance(v, (int, Decimal)):
        return Fraction(v)
    if isinstance(v, float):
        return v if math.isinf(v) else Fraction(v)
    if isinstance(v, dt.datetime):
        return v
    if isinstance(v, dt.date):
        return dt.datetime(v.year, v.month, v.day)
    return v


def _literal(value: object, hive_type: HiveType) -> object:
    """The oracle's literal policy (mirrors ``domain.convert_literal``, without locating the value)."""
    name = hive_type.name
    if value is None:
        raise _Unknown
    if hive_type.is_integer or name in ("decimal", "float", "double"):
        if isinstance(value, bool) or not isinstance(value, (int, float, Decimal)):
            raise _Unknown
        if (isinstance(value, float) and math.isnan(value)) or (isinstance(value, Decimal) and value.is_nan()):
            raise _Unknown
        if isinstance(value, Decimal) and value.is_infinite():
            return math.inf if value > 0 else -math.inf
        return value
    if name in ("string", "varchar"):
        if not isinstance(value, str):
            raise _Unknown
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise _Unknown from exc
        return value
    if name == "boolean":
        if not isinstance(value, bool):
            raise _Unknown
        return value
    if name in ("date", "timestamp") and isinstance(value, (dt.date, str)):
        day = parse_date_text(value) if isinstance(value, str) and name == "date" else value
        if isinstance(day, dt.date) and SWITCH_DAYS[0] <= (day.date() if isinstance(day, dt.datetime) else day) \
                < SWITCH_DAYS[1]:
            raise _Unknown  # a day Java's equality merges with another: the leaf may stand for either
    if name == "date":
        if isinstance(value, str):
            return parse_date_text(value)
        if isinstance(value, dt.datetime) and value.tzinfo is not None:
            raise _Unknown
        if isinstance(value, dt.date):
            return value
        raise _Unknown
    if name == "timestamp":
        if isinstance(value, dt.datetime):
            if value.tzinfo is not None:
                raise _Unknown
            return value
        if isinstance(value, dt.date):
            return value
        raise _Unknown
    raise _Unknown


# ------------------------------------------------------------------ partition values, parsed in Python
def _partition_value(row: Mapping[str, object], column: str, hive_type: HiveType) -> object:
    """The parsed value, ``None`` for NULL (missing key, null, default partition); raises ``_Unknown``."""
    entries = row.get(PARTITION_VALUES_COLUMN)
    if entries is None:
        if PARTITION_VALUES_COLUMN not in row:
            raise _Unknown
        return None
    pairs: list[Any] = list(entries.items()) if isinstance(entries, dict) else list(entries)  # type: ignore[call-overload]
    text = next((v for k, v in pairs if k == column), _MISSING)
    if text is _MISSING:
        text = next((v for k, v in pairs if k.lower() == column), None)
    if text is None or text == HIVE_DEFAULT_PARTITION:
        return None
    assert isinstance(text, str)
    return parse_partition_text(text, hive_type)


_MISSING = object()
_INTEGER = re.compile(r"-?[0-9]{1,18}")
_DOUBLE = re.compile(r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]{1,4})?")
_TIMESTAMP = re.compile(r"([0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2})(?:\.([0-9]{1,6}))?")


def parse_partition_text(text: str, hive_type: HiveType) -> object:
    """Parse one partition value (raises ``_Unknown`` when it does not parse as ``hive_type``)."""
    name = hive_type.name
    if name in ("string", "varchar"):
        return text
    if name == "boolean":
        if text.lower() not in ("true", "false"):
            raise _Unknown
        return text.lower() == "true"
    if hive_type.is_integer:
        if not _INTEGER.fullmatch(text):
            raise _Unknown
        number = int(text)
        low, high = hive_type.integer_range
        if not low <= number <= high:
            raise _Unknown
        return number
    if name == "double":
        if not _DOUBLE.fullmatch(text):
            raise _Unknown
        return float(text)
    if name == "decimal":
        return _decimal_text(text, hive_type.precision or 10, hive_type.scale or 0)
    if name == "date":
        return parse_date_text(text)
    if name == "timestamp":
        match = _TIMESTAMP.fullmatch(text)
        if not match:
            raise _Unknown
        try:
            stamp = dt.datetime.strptime(match.group(1), "%Y-%m-%d %H:%M:%S")
        except ValueError as exc:
            raise _Unknown from exc
        return stamp.replace(microsecond=int((match.group(2) or "0").ljust(6, "0")))
    raise _Unknown


def _decimal_text(text: str, precision: int, scale: int) -> Decimal:
    if not re.fullmatch(r"[+-]?[0-9]*(\.[0-9]*)?", text) or not re.search(r"[0-9]", text):
        raise _Unknown
    try:
        value = Decimal(text)
    except InvalidOperation as exc:
        raise _Unknown from exc
    scaled = value.scaleb(scale, EXACT_DECIMALS)
    if scaled != scaled.to_integral_value() or abs(scaled) > 10**precision - 1:
        raise _Unknown
    return value
