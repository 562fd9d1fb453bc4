"""Parquet's split-block bloom filter (SBBF): the structure, its hash, and building and probing it vectorized.

Why Parquet's and not ORC's: the index stores filters per file, and Parquet files may already carry SBBFs in their
footers (Spark's ``parquet.bloom.filter.enabled#col``, Arrow's ``bloom_filter_options``). With the same hash,
block layout and value encoding, a footer's filters can become the index's filter without reading the column
(``parquet_bloom.py``), and the tests compare our bytes with the bytes those writers produce. The format, from the
Parquet specification (``BloomFilter.md``):

* hash: XXH64 (seed 0) of the value's *plain encoding* (INT32/INT64 little-endian, a BYTE_ARRAY's bytes without
  the length, a FIXED_LEN_BYTE_ARRAY's bytes);
* the bitset is ``z`` blocks of 256 bits (eight little-endian 32-bit words); block ``((h >> 32) * z) >> 32``;
* in that block, word ``i`` gets bit ``((low32(h) * SALT[i]) mod 2**32) >> 27``.

Values are encoded as Spark writes the *table's* type (``canonical_hashes``): tinyint, smallint, int and date as
INT32; bigint and timestamp (UTC wall-clock microseconds, as the index stores timestamps) as INT64; decimal(p, s)
as its unscaled value in INT32 (p <= 9), INT64 (p <= 18) or big-endian FIXED_LEN_BYTE_ARRAY of the fewest bytes
that hold p digits; string and varchar as UTF-8 bytes. A query's literal is converted to the column's domain first
(``pruning/domain.py``) and then encoded by the same function, so equal values always hash equally.

Vectorized: XXH64 of fixed-width values (up to 31 bytes) is computed with numpy over the whole column (checked
bit for bit against the ``xxhash`` library by the tests); variable-length strings are hashed by ``xxhash``'s C
implementation, one call per distinct value. Probing a literal against every file's filter is one numpy gather.
"""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import xxhash

from storage_handler.arrow_compat import one_array
from storage_handler.types import HiveType

BYTES_PER_BLOCK = 32
MIN_BYTES = 32
MAX_BYTES = 1 << 20  # per file and column: Parquet writers' default ceiling too
SALTS = np.array([0x47B6137B, 0x44974D91, 0x8824AD5B, 0xA2B7289D, 0x705495C7, 0x2DF1424B, 0x9EFC4947, 0x5C6BFB31],
                 dtype=np.uint32)
_P1 = np.uint64(0x9E3779B185EBCA87)
_P2 = np.uint64(0xC2B2AE3D27D4EB4F)
_P3 = np.uint64(0x165667B19E3779F9)
_P4 = np.uint64(0x85EBCA77C2B2AE63)
_P5 = np.uint64(0x27D4EB2F165667C5)
INT32_TYPES = frozenset({"tinyint", "smallint", "int", "date"})
INT64_TYPES = frozenset({"bigint", "timestamp"})
STRING_TYPES = frozenset({"string", "varchar"})
#: Hive types a bloom filter or value list can be kept for. ``char`` is left out (Hive compares it ignoring pad
#: spaces), floats and doubles too (NaN and -0.0 have no single encoding), booleans need no filter.
MEMBERSHIP_TYPES = INT32_TYPES | INT64_TYPES | STRING_TYPES | {"decimal"}


def optimal_num_bytes(distinct: int, fpp: float) -> int:
    """Bitset size for ``distinct`` values at false-positive rate ``fpp``: parquet-mr's formula
    (``-8 n / ln(1 - p^(1/8))`` bits), rounded up to a power of two, within [32 B, 1 MiB]."""
    if distinct <= 0:
        return MIN_BYTES
    bits = -8.0 * distinct / math.log(1.0 - fpp ** (1.0 / 8.0))
    wanted = max(MIN_BYTES, math.ceil(bits / 8.0))
    return min(MAX_BYTES, 1 << (wanted - 1).bit_length())


# ------------------------------------------------------------------------------------------------ XXH64
def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << np.uint64(r)) | (x >> np.uint64(64 - r))


def xxh64_rows(rows: np.ndarray) -> np.ndarray:
    """XXH64 (seed 0) of each row of an ``(n, width)`` uint8 matrix, ``width < 32``: the short-input path of the
    reference algorithm, lane by lane, over all rows at once."""
    n, width = rows.shape
    if width >= 32:
        raise ValueError(f"xxh64_rows handles values shorter than 32 bytes, not {width}")
    rows = np.ascontiguousarray(rows, dtype=np.uint8)
    with np.errstate(over="ignore"):
        acc = np.full(n, _P5 + np.uint64(width), dtype=np.uint64)
        pos = 0
        while pos + 8 <= width:
            lane = np.ascontiguousarray(rows[:, pos:pos + 8]).view("<u8").reshape(n).astype(np.uint64)
            k1 = _rotl(lane * _P2, 31) * _P1
            acc = _rotl(acc ^ k1, 27) * _P1 + _P4
            pos += 8
        if pos + 4 <= width:
            lane = np.ascontiguousarray(rows[:, pos:pos + 4]).view("<u4").reshape(n).astype(np.uint64)
            acc = _rotl(acc ^ (lane * _P1), 23) * _P2 + _P3
            pos += 4
        while pos < width:
            acc = _rotl(acc ^ (rows[:, pos].astype(np.uint64) * _P5), 11) * _P1
            pos += 1
        acc ^= acc >> np.uint64(33)
        acc *= _P2
        acc ^= acc >> np.uint64(29)
        acc *= _P3
        acc ^= acc >> np.uint64(32)
    return acc


def _fixed_rows(values: np.ndarray, width: int) -> np.ndarray:
    """Little-endian integers as an ``(n, width)`` byte matrix (their Parquet plain encoding)."""
    data = np.ascontiguousarray(values.astype(f"<i{width}"))
    return data.view(np.uint8).reshape(len(values), width)


def decimal_bytes(precision: int) -> int:
    """The fewest bytes of a two's complement integer holding every unscaled value of ``precision`` digits
    (Spark's ``minBytesForPrecision``; Arrow writes the same width)."""
    width = 1
    while 2 ** (8 * width - 1) < 10**precision:
        width += 1
    return width


def _decimal_rows(values: pa.Array, precision: int) -> np.ndarray:
    """Unscaled decimal128 values in the plain encoding Spark writes for ``precision``."""
    arr = values.cast(pa.decimal128(values.type.precision, values.type.scale))
    n = len(arr)
    raw = np.frombuffer(arr.buffers()[1], dtype=np.uint8)[arr.offset * 16:(arr.offset + n) * 16].reshape(n, 16)
    if precision <= 9:
        return np.ascontiguousarray(raw[:, :4])
    if precision <= 18:
        return np.ascontiguousarray(raw[:, :8])
    width = decimal_bytes(precision)
    return np.ascontiguousarray(raw[:, :width][:, ::-1])  # the low bytes, big-endian


def canonical_hashes(values: pa.Array | pa.ChunkedArray, hive_type: HiveType) -> np.ndarray:
    """XXH64 of each non-null value of a column of ``hive_type`` (values already of ``hive_to_arrow(type)``), in
    the encoding of the module docstring; nulls are skipped, as ORC and Parquet do."""
    values = one_array(values)
    values = values.drop_null() if values.null_count else values
    name = hive_type.name
    if len(values) == 0:
        return np.zeros(0, dtype=np.uint64)
    if name in INT32_TYPES:
        ints = pc.cast(values, pa.int32()).to_numpy(zero_copy_only=False)
        return xxh64_rows(_fixed_rows(ints, 4))
    if name in INT64_TYPES:
        if name == "timestamp":
            values = pc.cast(values, pa.timestamp("us", values.type.tz))
        ints = pc.cast(values.view(pa.int64()) if name == "timestamp" else values, pa.int64())
        return xxh64_rows(_fixed_rows(ints.to_numpy(zero_copy_only=False), 8))
    if name == "decimal":
        return xxh64_rows(_decimal_rows(values, hive_type.precision or 10))
    if name in STRING_TYPES:
        raw = values.cast(pa.binary()) if not pa.types.is_binary(values.type) else values
        return np.fromiter((xxhash.xxh64_intdigest(v) for v in raw.to_pylist()), dtype=np.uint64, count=len(raw))
    raise ValueError(f"no bloom filter encoding for Hive type {hive_type}")


# ------------------------------------------------------------------------------------------------ the bitset
def _word_masks(keys: np.ndarray) -> np.ndarray:
    """``(n, 8)`` bit positions (0..31) the eight salts pick for each 32-bit key."""
    with np.errstate(over="ignore"):
        return (keys.astype(np.uint32)[:, None] * SALTS[None, :]) >> np.uint32(27)


def build(hashes: np.ndarray, num_bytes: int) -> bytes:
    """A filter of ``num_bytes`` (a power of two, >= 32) holding every hash."""
    if num_bytes < MIN_BYTES or num_bytes & (num_bytes - 1):
        raise ValueError(f"a split-block bloom filter has a power-of-two size of at least 32 bytes, not {num_bytes}")
    blocks = num_bytes // BYTES_PER_BLOCK
    hashes = np.asarray(hashes, dtype=np.uint64)
    block = ((hashes >> np.uint64(32)) * np.uint64(blocks)) >> np.uint64(32)
    bits = _word_masks(hashes & np.uint64(0xFFFFFFFF)).astype(np.int64)
    positions = (block.astype(np.int64)[:, None] * 8 + np.arange(8)) * 32 + bits
    bitmap = np.zeros(num_bytes * 8, dtype=bool)
    bitmap[positions.ravel()] = True
    return np.packbits(bitmap, bitorder="little").tobytes()


def filter_for(hashes: np.ndarray, fpp: float) -> bytes:
    """A filter sized for the distinct hashes given (duplicates are harmless) at rate ``fpp``."""
    distinct = np.unique(np.asarray(hashes, dtype=np.uint64))
    return build(distinct, optimal_num_bytes(len(distinct), fpp))


def fold(bitset: bytes, num_bytes: int) -> bytes:
    """The same filter at a smaller power-of-two size.

    The block index ``((h >> 32) * z) >> 32`` of a power-of-two ``z`` is the top ``log2 z`` bits of ``h >> 32``, so
    halving ``z`` maps block ``2j`` and ``2j + 1`` to ``j``: OR-ing them gives exactly the filter built at half the
    size. Lets filters of different sizes (one per row group) merge into one.
    """
    words = np.frombuffer(bitset, dtype="<u4").reshape(-1, 8)
    blocks = num_bytes // BYTES_PER_BLOCK
    if len(words) % blocks or blocks & (blocks - 1):
        raise ValueError(f"cannot fold a {len(bitset)}-byte filter to {num_bytes} bytes")
    return np.bitwise_or.reduce(words.reshape(blocks, -1, 8), axis=1).astype("<u4").tobytes()


def union(bitsets: list[bytes], num_bytes: int) -> bytes:
    """One filter holding everything any of ``bitsets`` holds, at ``num_bytes`` (no larger than the smallest)."""
    folded = [np.frombuffer(fold(b, num_bytes), dtype="<u4") for b in bitsets]
    return np.bitwise_or.reduce(np.stack(folded), axis=0).astype("<u4").tobytes()


def ruled_out(filters: pa.Array | pa.ChunkedArray, value_hash: int) -> np.ndarray:
    """Per file (entry of a binary array of filters): True where the filter proves the value absent.

    A null, empty or malformed filter (size not a power-of-two multiple of 32 bytes) proves nothing.
    """
    filters = one_array(filters)
    if not pa.types.is_binary(filters.type):
        filters = filters.cast(pa.binary())
    n = len(filters)
    if n == 0:
        return np.zeros(0, dtype=bool)
    offsets = np.frombuffer(filters.buffers()[1], dtype=np.int32)[filters.offset:filters.offset + n + 1]
    lengths = np.diff(offsets).astype(np.int64)
    valid = pc.is_valid(filters).to_numpy(zero_copy_only=False) & (lengths >= MIN_BYTES) & \
        ((lengths & (lengths - 1)) == 0)
    data_buffer = filters.buffers()[2]
    if not valid.any() or data_buffer is None:
        return np.zeros(n, dtype=bool)
    data = np.frombuffer(data_buffer, dtype=np.uint8)
    h = np.uint64(value_hash)
    blocks = np.where(valid, lengths // BYTES_PER_BLOCK, 0).astype(np.uint64)
    block = ((h >> np.uint64(32)) * blocks) >> np.uint64(32)
    start = np.where(valid, offsets[:-1].astype(np.int64) + block.astype(np.int64) * BYTES_PER_BLOCK, 0)
    gathered = data[start[:, None] + np.arange(BYTES_PER_BLOCK)]
    words = np.ascontiguousarray(gathered).view("<u4").reshape(n, 8)
    masks = (np.uint32(1) << _word_masks(np.array([value_hash & 0xFFFFFFFF], dtype=np.uint64))[0]).astype(np.uint32)
    present = ((words & masks) == masks).all(axis=1)
    return valid & ~present


def might_contain(bitset: bytes, value_hash: int) -> bool:
    """One filter, one hash (tests and explain)."""
    return not bool(ruled_out(pa.array([bitset], pa.binary()), value_hash)[0])


def estimated_fpp(bitset: bytes) -> float:
    """The probability that an absent value passes this filter: the mean over blocks of the product of each
    word's fill ratio (what ``describe`` and the benchmark report)."""
    words = np.frombuffer(bitset, dtype="<u4").reshape(-1, 8)
    fill = np.unpackbits(words.view(np.uint8), bitorder="little").reshape(-1, 8, 32).sum(axis=2) / 32.0
    return float(np.prod(fill, axis=1).mean())
