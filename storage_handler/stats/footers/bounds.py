"""A table column's min, max and null count for many files (or row groups) at once, from raw footer statistics.

This is where a footer's per-row-group statistics become one conservative answer per file, vectorized over every
file of a chunk (:class:`~storage_handler.stats.footers.raw.RawFooters`). The rules, per file and column:

* Row groups with no rows are ignored. A row group whose statistics could not be read (``ERROR``), or whose null
  count is outside ``[0, rows]`` (a footer that contradicts itself), makes the column unknown in that file: bounds
  and null count.
* Null counts are summed; unknown if any row group lacks one.
* A row group holding only nulls contributes no bounds; any other row group must have a min and a max, or the
  file's bound is unknown. Float and double bounds are never taken from a footer (``convert.py``: Arrow's writers
  leave NaN out of min/max and pyarrow 26 exposes no NaN count), so they are unknown.
* Each min/max becomes a value of the table column's type by :func:`storage_handler.stats.footers.convert.convert_bound`
  (one rule per value, read there); the common conversions run here in numpy/Arrow, checked against
  ``convert_bound`` by property tests, and the rest call it value by value.
* Integer and decimal columns: a row group with one bound outside the table column's range (a wider file type,
  an unsigned one) bounds nothing -- the reader wraps or refuses such values -- so both of its bounds are
  unknown.
* Decimals stored as bytes: bounds only from writers that ordered them right (:mod:`.writers`).
* The file's bound is the smallest min and the largest max of its row groups, unknown if any of them is.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from storage_handler.stats.footers.convert import (
    FIRST_TRUSTED_DAY,
    FIRST_TRUSTED_US,
    INT64_MAX,
    INT64_MIN,
    Source,
    convert_bound,
)
from storage_handler.stats.footers.raw import (
    ERROR,
    HAS_MIN_MAX,
    HAS_NULL_COUNT,
    STATS_SET,
    RawFooters,
    decode_raw,
)
from storage_handler.stats.footers.writers import DECIMAL_BYTES, orders_decimal_bytes
from storage_handler.types import HiveType, hive_to_arrow

_STRINGS = ("string", "varchar")


def column_stats(raw: RawFooters, chunks: np.ndarray, owner: np.ndarray, n: int, source: Source,
                 hive_type: HiveType) -> tuple[pa.Array, pa.Array, pa.Array]:
    """Min, max (typed ``hive_to_arrow(hive_type)``) and null count (int64) of ``n`` files, null = unknown.

    ``chunks`` are the chunk rows of this column (:meth:`RawFooters.chunks_of`) and ``owner[i]`` the file (0..n-1)
    of ``chunks[i]``; a "file" may also be one row group (the reader prunes row groups with the same rules).
    """
    target = hive_to_arrow(hive_type)
    rows = raw.rg_rows[chunks]
    flags = raw.flags[chunks]
    nulls = raw.null_count[chunks]
    live = rows != 0
    has_nulls = (flags & STATS_SET != 0) & (flags & HAS_NULL_COUNT != 0)
    contradicts = has_nulls & ((nulls < 0) | (nulls > rows))
    poisoned = _any(live & ((flags & ERROR != 0) | contradicts), owner, n)

    counted = live & has_nulls
    total = np.zeros(n, np.int64)
    np.add.at(total, owner[counted], nulls[counted])
    null_count = _masked(pa.array(total, pa.int64()), poisoned | _any(live & ~has_nulls, owner, n))

    needs_bounds = live & ~(has_nulls & (nulls == rows))  # an all-null row group bounds nothing
    usable = needs_bounds & (flags & STATS_SET != 0) & (flags & HAS_MIN_MAX != 0) & (source.kind != "float")
    if source.kind == "decimal" and source.physical in DECIMAL_BYTES and usable.any():
        usable &= _writers_order_decimal_bytes(raw, chunks)
    unknown = poisoned | _any(needs_bounds & ~usable, owner, n)
    at = np.flatnonzero(usable)
    lo = convert_values(raw.mins.take(pa.array(chunks[at])), source, hive_type, upper=False)
    hi = convert_values(raw.maxs.take(pa.array(chunks[at])), source, hive_type, upper=True)
    if _family(hive_type) in ("integer", "decimal"):
        # a value out of the column's range is wrapped (or refused) by the reader: a row group with one bound
        # out of range holds values no in-range bound of it limits, so neither bound counts
        lost = np.asarray(pc.or_(lo.is_null(), hi.is_null()).to_numpy(zero_copy_only=False), bool)
        lo, hi = _masked(lo, lost), _masked(hi, lost)
    mins = _per_file(lo, owner[at], n, "min", target, unknown)
    maxs = _per_file(hi, owner[at], n, "max", target, unknown)
    return mins, maxs, null_count


def _writers_order_decimal_bytes(raw: RawFooters, chunks: np.ndarray) -> np.ndarray:
    """Per chunk row: whether its file's writer ordered decimals stored as bytes right (:mod:`.writers`)."""
    files = raw.file_of(chunks)
    trusted = np.array([orders_decimal_bytes(w) for w in raw.writers], bool)
    return trusted[files] if len(trusted) else np.zeros(len(chunks), bool)


def _any(mask: np.ndarray, owner: np.ndarray, n: int) -> np.ndarray:
    """Per file: whether ``mask`` holds for any of its chunks."""
    return np.bincount(owner[mask], minlength=n)[:n] > 0


def _masked(values: pa.Array, unknown: np.ndarray) -> pa.Array:
    if not unknown.any():
        return values
    return pc.if_else(pa.array(unknown), pa.nulls(len(values), values.type), values)


def _per_file(values: pa.Array, owner: np.ndarray, n: int, how: str, target: pa.DataType,
              unknown: np.ndarray) -> pa.Array:
    """The smallest (``how="min"``) or largest value of each file; null where a file has no value or any of its
    values is unknown (null)."""
    unknown = unknown | _any(np.asarray(values.is_null().to_numpy(zero_copy_only=False), bool), owner, n)
    if len(values) == 0:
        return pa.nulls(n, target)
    counts = np.bincount(owner, minlength=n)[:n]
    if counts.max() > 1:  # files of several row groups: Arrow's grouped min/max
        grouped = pa.table({"file": pa.array(owner), "v": values}).group_by("file").aggregate([("v", how)])
        owner = grouped.column("file").to_numpy()
        values = grouped.column(f"v_{how}").combine_chunks()
    where = np.full(n, -1, np.int64)
    where[owner] = np.arange(len(owner))
    where[unknown] = -1
    index = pa.array(where, pa.int64(), mask=where < 0)
    return values.take(index).cast(target)


# ---------------------------------------------------------------------------------------------- values
def convert_values(raw: pa.LargeBinaryArray, source: Source, hive_type: HiveType, upper: bool) -> pa.Array:
    """:func:`convert_bound` of every plain-encoded value of ``raw``: typed values, null where unknown."""
    target = hive_to_arrow(hive_type)
    if len(raw) == 0 or _never(source, hive_type):
        return pa.nulls(len(raw), target)
    fast = _FAST.get((source.kind, _family(hive_type)))
    result = fast(raw, source, hive_type, upper) if fast is not None else None
    if result is not None:
        return result
    return pa.array([_one(v, source, hive_type, upper) for v in raw.to_pylist()], target)


def _one(value: bytes | None, source: Source, hive_type: HiveType, upper: bool) -> Any:
    try:
        return convert_bound(decode_raw(value, source.physical), source, hive_type, upper)
    except Exception:  # noqa: BLE001 - a value the rule cannot read: unknown, never an error
        return None


def _family(hive_type: HiveType) -> str:
    return "integer" if hive_type.is_integer else hive_type.name


_TARGETS = {  # the table types convert_bound can give a value of, per kind of Parquet column
    "int": {"integer", "float", "double", "decimal"}, "float": {"float", "double"}, "decimal": {"decimal"},
    "string": set(_STRINGS), "binary": set(_STRINGS), "bool": {"boolean"}, "date": {"date"},
    "timestamp": {"timestamp"},
}


def _never(source: Source, hive_type: HiveType) -> bool:
    """Combinations ``convert_bound`` always answers None for (no value needs to be looked at)."""
    return _family(hive_type) not in _TARGETS.get(source.kind, set())


def _fixed(raw: pa.LargeBinaryArray, width: int) -> np.ndarray | None:
    """The values as an (n, width) byte matrix, or None unless every value has exactly ``width`` bytes."""
    lengths = pc.binary_length(raw)
    if pc.min_max(lengths).as_py() != {"min": width, "max": width}:
        return None
    offsets = np.frombuffer(raw.buffers()[1], np.int64, len(raw) + 1, raw.offset * 8)
    data = np.frombuffer(raw.buffers()[2], np.uint8)[offsets[0]:offsets[-1]]
    return data.reshape(len(raw), width)


def _ints(raw: pa.LargeBinaryArray, source: Source) -> np.ndarray | None:
    """Little-endian INT32/INT64 values, re-read as unsigned where the logical type says so."""
    width = 4 if source.physical == "INT32" else 8
    matrix = _fixed(raw, width)
    if matrix is None:
        return None
    signed = matrix.copy().view(f"<i{width}").reshape(-1)
    return signed if source.signed else signed.view(f"<u{width}")


def _integers(raw: pa.LargeBinaryArray, source: Source, hive_type: HiveType, upper: bool) -> pa.Array | None:
    values = _ints(raw, source)
    if values is None:
        return None
    lo, hi = hive_type.integer_range
    if values.dtype.kind == "u":  # unsigned: never below lo; above INT64_MAX never fits a Hive integer
        ok = values <= np.uint64(hi)
        values = np.where(ok, values, 0).astype(np.int64)
    else:
        values = values.astype(np.int64)
        ok = (values >= lo) & (values <= hi)
    return pa.array(values, pa.int64(), mask=~ok).cast(hive_to_arrow(hive_type))


def _dates(raw: pa.LargeBinaryArray, source: Source, hive_type: HiveType, upper: bool) -> pa.Array | None:
    values = _ints(raw, source)
    if values is None:
        return None
    days = values.astype(np.int32)
    return pa.array(days, pa.int32(), mask=days < FIRST_TRUSTED_DAY).cast(pa.date32())


_PER_US = {"MILLIS": 1000, "MICROS": 1}


def _timestamps(raw: pa.LargeBinaryArray, source: Source, hive_type: HiveType, upper: bool) -> pa.Array | None:
    values = _ints(raw, source)
    if values is None or values.dtype != np.int64:
        return None
    if source.unit == "NANOS":
        micros = values // 1000 + ((values % 1000 != 0) & upper)  # floor the min, ceil the max
        ok = np.ones(len(values), bool)
    else:
        factor = _PER_US[source.unit]
        ok = (values >= -(INT64_MIN // -factor)) & (values <= INT64_MAX // factor)
        micros = np.where(ok, values, 0) * factor
    ok &= micros >= FIRST_TRUSTED_US
    return pa.array(micros, pa.int64(), mask=~ok).cast(pa.timestamp("us"))


def _strings(raw: pa.LargeBinaryArray, source: Source, hive_type: HiveType, upper: bool) -> pa.Array | None:
    try:
        text = raw.cast(pa.large_string())
    except pa.ArrowInvalid:
        return None  # some value is not UTF-8 (a min cut inside a character): the rule, value by value
    if hive_type.name == "varchar" and hive_type.length is not None and not upper:  # see convert.py's rule
        text = pc.utf8_slice_codeunits(text, 0, hive_type.length)  # cuts characters, as Python's text[:n]
    return text.cast(pa.string())


def _booleans(raw: pa.LargeBinaryArray, source: Source, hive_type: HiveType, upper: bool) -> pa.Array | None:
    matrix = _fixed(raw, 1)
    return None if matrix is None else pa.array((matrix[:, 0] & 1).astype(bool))


def _decimals(raw: pa.LargeBinaryArray, source: Source, hive_type: HiveType, upper: bool) -> pa.Array | None:
    """Same scale only (another scale goes value by value through the rule, `convert._to_decimal`)."""
    if (hive_type.scale or 0) != source.scale:
        return None
    if source.physical in ("INT32", "INT64"):
        unscaled = _ints(raw, Source("int", source.physical))
    else:  # big-endian two's complement bytes: up to 8 of them here
        lengths = pc.binary_length(raw)
        width = pc.min_max(lengths).as_py()
        if width["min"] != width["max"] or not 1 <= (width["max"] or 0) <= 8:
            return None
        matrix = _fixed(raw, width["max"])
        if matrix is None:
            return None
        padded = np.zeros((len(raw), 8), np.uint8)
        padded[:, 8 - matrix.shape[1]:] = matrix
        padded[:, : 8 - matrix.shape[1]] = np.where(matrix[:, :1] >= 0x80, 0xFF, 0)
        unscaled = padded.view(">i8").reshape(-1).astype(np.int64)
    if unscaled is None:
        return None
    unscaled = unscaled.astype(np.int64)
    limit = 10 ** (hive_type.precision or 10)  # digits beyond the table's precision: unknown
    ok = (unscaled > -limit) & (unscaled < limit) if limit <= INT64_MAX else np.ones(len(unscaled), bool)
    words = np.zeros((len(unscaled), 2), np.int64)
    words[:, 0] = unscaled
    words[:, 1] = np.where(unscaled < 0, -1, 0)
    target = hive_to_arrow(hive_type)
    body = pa.py_buffer(words.astype("<i8").tobytes())
    validity = pa.array(ok).buffers()[1] if not ok.all() else None
    return pa.Array.from_buffers(target, len(unscaled), [validity, body], null_count=int((~ok).sum()))


_FAST: dict[tuple[str, str], Callable[[pa.LargeBinaryArray, Source, HiveType, bool], pa.Array | None]] = {
    ("int", "integer"): _integers,
    ("date", "date"): _dates,
    ("timestamp", "timestamp"): _timestamps,
    ("string", "string"): _strings, ("string", "varchar"): _strings,
    ("binary", "string"): _strings, ("binary", "varchar"): _strings,
    ("bool", "boolean"): _booleans,
    ("decimal", "decimal"): _decimals,
}
