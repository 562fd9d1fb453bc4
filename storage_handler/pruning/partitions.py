"""Partition values as expressions over the scan-file batch (Delta-kernel style).

A leaf on a partition column ``p`` of Hive type ``t`` is rewritten to
``partition_value(element_at(partition_values, 'p'), t)``: look the key up in the file's ``map<string,string>`` and
parse the text as the declared type, so ``'10' > '2'`` for an ``int`` key. Outcomes per file:

* a value -> compared exactly, like a column whose min = max = value and that holds no NULLs;
* NULL (a null map value -- ``__HIVE_DEFAULT_PARTITION__`` -- the literal text ``__HIVE_DEFAULT_PARTITION__``, or
  a missing key) -> the column is NULL for every row of the file;
* text that does not parse as the declared type -> *unknown*: the leaf is ``YES_NO_NULL`` and the file is kept.

Both functions are vectorized with pyarrow.compute; values are parsed once per distinct text (dictionary
encoding), because a table has far fewer partitions than files.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from storage_handler.hive_paths import HIVE_DEFAULT_PARTITION
from storage_handler.pruning.domain import domain_arrow_type
from storage_handler.pruning.statistics import PruningStatistics
from storage_handler.stats.columns import PARTITION_VALUES
from storage_handler.types import HiveType

PARTITION_VALUES_COLUMN = PARTITION_VALUES

#: Partition key types whose text is parsed; any other declared type makes its leaves unknown. ``float`` is left
#: out because text -> float32 rounding is not reproduced identically everywhere; ``char`` because of pad spaces.
PARSED_TYPES = frozenset(
    {"tinyint", "smallint", "int", "bigint", "double", "decimal", "string", "varchar", "date", "timestamp",
     "boolean"}
)
_INTEGER_TEXT = r"^-?[0-9]{1,18}$"
_DOUBLE_TEXT = r"^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]{1,4})?$"
_DATE_TEXT = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$"
_TIMESTAMP_TEXT = r"^[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,6})?$"


@dataclass(frozen=True, slots=True)
class ElementAt:
    """``element_at(map_column, key)``: the map's value for ``key``, NULL when absent."""

    map_column: str
    key: str

    def evaluate(self, stats: PruningStatistics) -> pa.Array | None:
        """The looked-up strings, or ``None`` when the containers have no partition values."""
        maps = stats.partition_values()
        return None if maps is None else element_at(single_chunk(maps), self.key)


@dataclass(frozen=True, slots=True)
class PartitionValue:
    """``partition_value(text, type)``: the text parsed as the partition column's declared Hive type."""

    child: ElementAt
    hive_type: HiveType

    def evaluate(self, stats: PruningStatistics) -> tuple[pa.Array, pa.BooleanArray | bool]:
        """``(values, unknown)``: typed values (NULL where NULL, missing or unparseable) and the unparseable mask."""
        text = self.child.evaluate(stats)
        if text is None:
            return pa.nulls(stats.num_containers, _value_type(self.hive_type)), True
        return partition_value(text, self.hive_type)


def single_chunk(column: pa.Array | pa.ChunkedArray) -> pa.Array:
    """One contiguous array: kernels then return arrays aligned with each other, whatever the input chunking."""
    if isinstance(column, pa.ChunkedArray):
        return column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    return column


def element_at(maps: pa.MapArray, key: str) -> pa.Array:
    """Vectorized map lookup (first match wins; a null map or a missing key gives NULL).

    ``pc.map_lookup`` costs ~300 ns per row; this version works on the flattened keys instead. Common case: every
    row has the key exactly once, so the k-th match belongs to row k. Otherwise: count matches with a running sum
    and read each row's first match through the map offsets.
    """
    n = len(maps)
    offsets = maps.offsets  # absolute positions into the flattened keys / items, also for a sliced array
    if n == 0:
        return pa.nulls(0, pa.string())
    first_entry, end_entry = offsets[0].as_py(), offsets[n].as_py()
    keys = maps.keys.slice(first_entry, end_entry - first_entry)
    items = maps.items.slice(first_entry, end_entry - first_entry)
    if first_entry:
        offsets = pc.subtract(offsets, pa.scalar(first_entry, offsets.type))
    if len(keys) == 0:
        return pa.nulls(n, pa.string())
    matches = pc.fill_null(pc.equal(keys, pa.scalar(key, keys.type)), False)
    value, found = _first_match(maps, offsets, matches, items, n)
    if found.false_count > maps.null_count:
        # Hive lower-cases partition keys, but a hand-written map may not: rows without an exact match get a
        # second, case-insensitive chance (only paid for when some row missed).
        lowered = pc.fill_null(pc.equal(pc.utf8_lower(keys), pa.scalar(key.lower(), pa.string())), False)
        value = pc.if_else(found, value, _first_match(maps, offsets, lowered, items, n)[0])
    return value


def _first_match(
    maps: pa.MapArray, offsets: pa.Array, matches: pa.BooleanArray, items: pa.Array, n: int
) -> tuple[pa.Array, pa.BooleanArray]:
    """Per map row, the item of the first matching entry (NULL when none matches) and whether one matched."""
    positions = pc.indices_nonzero(matches)  # entry position of the k-th match
    starts, ends = offsets.slice(0, n), offsets.slice(1, n)
    if len(positions) == n:
        inside = pc.and_(pc.greater_equal(positions, starts), pc.less(positions, ends))
        if inside.false_count == 0:  # exactly one match per row
            return pc.cast(pc.take(items, positions), pa.string()), pc.fill_null(pa.nulls(n, pa.bool_()), True)
    running = pc.cumulative_sum(pc.cast(matches, pa.int64()))
    before = pa.concat_arrays([pa.array([0], pa.int64()), running])  # before[i] = matches among entries < i
    start = pc.take(before, starts)
    found = pc.greater(pc.subtract(pc.take(before, ends), start), 0)
    if maps.null_count:
        found = pc.fill_null(pc.and_(found, pc.is_valid(maps)), False)
    first = pc.take(positions, pc.if_else(found, start, pa.scalar(None, pa.int64())))
    return pc.cast(pc.take(items, first), pa.string()), found


def _value_type(hive_type: HiveType) -> pa.DataType:
    return domain_arrow_type(hive_type)


def partition_value(text: pa.Array, hive_type: HiveType) -> tuple[pa.Array, pa.BooleanArray | bool]:
    """Parse partition-value text as ``hive_type``: returns ``(values, unknown)`` (see the module docstring)."""
    name = hive_type.name
    if name in ("string", "varchar"):
        is_default = pc.fill_null(pc.equal(text, HIVE_DEFAULT_PARTITION), False)
        if is_default.true_count:
            text = pc.if_else(is_default, pa.scalar(None, pa.string()), text)
        return text, False
    if name not in PARSED_TYPES:
        return pa.nulls(len(text), pa.null()), True
    encoded = pc.dictionary_encode(text)  # parse each distinct text once
    distinct = encoded.dictionary
    parsed, bad = _parse_distinct(distinct, hive_type)
    bad = pc.and_(bad, pc.not_equal(distinct, HIVE_DEFAULT_PARTITION))  # the default partition is NULL, not bad
    values = pc.take(parsed, encoded.indices)
    unknown = pc.fill_null(pc.take(bad, encoded.indices), False)
    return values, unknown


def _parse_distinct(text: pa.StringArray, hive_type: HiveType) -> tuple[pa.Array, pa.BooleanArray]:
    """Parse distinct non-null strings; returns typed values (null where bad) and the bad mask."""
    name = hive_type.name
    value_type = _value_type(hive_type)
    if name == "boolean":
        lowered = pc.utf8_lower(text)
        is_true, is_false = pc.equal(lowered, "true"), pc.equal(lowered, "false")
        good = pc.or_(is_true, is_false)
        return pc.if_else(good, is_true, pa.scalar(None, pa.bool_())), pc.invert(good)
    if name in ("tinyint", "smallint", "int", "bigint"):
        good = pc.match_substring_regex(text, _INTEGER_TEXT)
        wide = pc.cast(_blank_bad(text, good, "0"), pa.int64())
        lo, hi = hive_type.integer_range
        good = pc.and_(good, pc.and_(pc.greater_equal(wide, lo), pc.less_equal(wide, hi)))
        return _null_bad(pc.cast(_blank_bad(wide, good, 0), value_type), good), pc.invert(good)
    if name == "double":
        good = pc.match_substring_regex(text, _DOUBLE_TEXT)
        values = pc.cast(_blank_bad(text, good, "0"), pa.float64())
        return _null_bad(values, good), pc.invert(good)
    if name == "decimal":
        good = _decimal_text_mask(text, hive_type.precision or 10, hive_type.scale or 0)
        # the extra trailing zeros the mask allows would make Arrow's cast refuse ("would cause data loss"); a
        # text with no integer digit gets a 0 first, so ".0" becomes "0." (Spark's 0), never "." (Arrow refuses)
        whole = pc.replace_substring_regex(_blank_bad(text, good, "0"), r"^([+-]?)\.", r"\10.")
        exact = pc.replace_substring_regex(whole, r"^([^.]*\.[0-9]*?)0+$", r"\1")
        values = pc.cast(exact, value_type)
        return _null_bad(values, good), pc.invert(good)
    if name == "date":
        good = pc.match_substring_regex(text, _DATE_TEXT)
        stamp = pc.strptime(_blank_bad(text, good, "2000-01-01"), format="%Y-%m-%d", unit="s", error_is_null=True)
        # strptime is lenient ("2024-02-30" -> March 1st): keep only texts that round-trip, and year >= 1.
        good = pc.fill_null(pc.and_(good, pc.equal(pc.strftime(stamp, format="%Y-%m-%d"), text)), False)
        good = pc.and_(good, pc.greater_equal(pc.utf8_slice_codeunits(text, 0, 4), "0001"))
        days = pc.cast(_blank_bad(stamp, good, pa.scalar(0, pa.timestamp("s"))), pa.date32())
        return _null_bad(days, good), pc.invert(good)
    if name == "timestamp":
        good = pc.match_substring_regex(text, _TIMESTAMP_TEXT)
        head = pc.utf8_slice_codeunits(text, 0, 19)
        stamp = pc.strptime(_blank_bad(head, good, "2000-01-01 00:00:00"), format="%Y-%m-%d %H:%M:%S", unit="s",
                            error_is_null=True)  # seconds: strftime of "%S" then has no fraction to compare
        good = pc.fill_null(pc.and_(good, pc.equal(pc.strftime(stamp, format="%Y-%m-%d %H:%M:%S"), head)), False)
        good = pc.and_(good, pc.greater_equal(pc.utf8_slice_codeunits(text, 0, 4), "0001"))
        fraction = pc.utf8_rpad(pc.utf8_slice_codeunits(text, 20, 26), width=6, padding="0")
        micros = pc.cast(_blank_bad(fraction, good, "000000"), pa.int64())
        stamp = pc.cast(pc.cast(_blank_bad(stamp, good, pa.scalar(0, pa.timestamp("s"))), pa.timestamp("us")),
                        pa.int64())
        values = pc.cast(pc.add(stamp, micros), pa.timestamp("us"))
        return _null_bad(values, good), pc.invert(good)
    raise AssertionError(f"unparsed partition type {hive_type}")  # pragma: no cover


def _decimal_text_mask(text: pa.StringArray, precision: int, scale: int) -> pa.BooleanArray:
    """Texts that denote a value of ``decimal(precision, scale)`` exactly (extra trailing zeros allowed)."""
    integer_digits = precision - scale
    int_part = f"0*[0-9]{{0,{integer_digits}}}" if integer_digits else "0*"
    frac_part = f"(\\.[0-9]{{0,{scale}}}0*)?" if scale else "(\\.0*)?"
    shape = pc.match_substring_regex(text, f"^[+-]?{int_part}{frac_part}$")
    return pc.and_(shape, pc.match_substring_regex(text, "[0-9]"))


def _blank_bad(values: pa.Array, good: pa.BooleanArray, filler: object) -> pa.Array:
    """Replace values that failed validation so a following cast cannot raise."""
    return pc.if_else(good, values, filler)


def _null_bad(values: pa.Array, good: pa.BooleanArray) -> pa.Array:
    return pc.if_else(good, values, pa.scalar(None, values.type))
