"""The project's one Thrift stack for Parquet's own structures: a compact-protocol codec, and Parquet's field ids
by name (``parquet.thrift`` of parquet-format 2.10).

Why: pyarrow aborts the whole process (a C++ exception escaping ``ColumnChunkMetaData.statistics``) when a
column chunk's min or max is too short to decode; :mod:`storage_handler.stats.footers.guard` reads the footer's
Thrift first to find such chunks without touching them. The bloom-filter header in front of each filter's bitset
(:mod:`storage_handler.stats.membership.parquet_bloom`) is read with the same codec. The tests use it to rewrite
footers into odd cases (drop a statistic, change the writer, truncate a value).

A struct decodes to a list of ``[field_id, type, value]`` (order kept, so an untouched footer re-encodes byte for
byte); a list to ``(element_type, [values])``; binary to ``bytes``; integers to ``int``; booleans to ``bool``.
Readers name fields through the classes below (plain ``int`` constants: an ``IntEnum`` made the guard 35 %
slower) and :func:`get` (never a bare field number), which returns the value itself; :func:`field` returns the mutable ``[id, type, value]`` entry for the tests' rewrites.

Why not classes generated from ``parquet.thrift``: the generated Python decodes every field of every column
chunk into objects (slower than this on the footers of 100,000 files), it cannot re-encode a footer byte for
byte, and it would add the Thrift compiler to the build.
"""

from __future__ import annotations

import struct
from typing import Any

STOP, TRUE, FALSE, BYTE, I16, I32, I64, DOUBLE, BINARY, LIST, SET, MAP, STRUCT = range(13)
Struct = list  # list[list[Any]]: [field_id, type, value]


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def byte(self) -> int:
        value = self.data[self.pos]
        self.pos += 1
        return value

    def varint(self) -> int:
        shift = result = 0
        while True:
            b = self.byte()
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return result
            shift += 7

    def zigzag(self) -> int:
        n = self.varint()
        return (n >> 1) ^ -(n & 1)

    def value(self, kind: int) -> Any:
        if kind in (TRUE, FALSE):
            return kind == TRUE
        if kind == BYTE:
            return struct.unpack("b", bytes([self.byte()]))[0]
        if kind in (I16, I32, I64):
            return self.zigzag()
        if kind == DOUBLE:
            self.pos += 8
            return struct.unpack("<d", self.data[self.pos - 8:self.pos])[0]
        if kind == BINARY:
            n = self.varint()
            self.pos += n
            return self.data[self.pos - n:self.pos]
        if kind in (LIST, SET):
            header = self.byte()
            size, elem = header >> 4, header & 0x0F
            if size == 15:
                size = self.varint()
            if elem in (TRUE, FALSE):
                return (elem, [self.byte() == TRUE for _ in range(size)])
            return (elem, [self.value(elem) for _ in range(size)])
        if kind == MAP:
            size = self.varint()
            if size == 0:
                return (0, 0, [])
            types = self.byte()
            k, v = types >> 4, types & 0x0F
            return (k, v, [(self.value(k), self.value(v)) for _ in range(size)])
        if kind == STRUCT:
            return self.struct()
        raise ValueError(f"unknown compact type {kind}")

    def struct(self) -> Struct:
        fields: Struct = []
        last = 0
        while True:
            header = self.byte()
            kind = header & 0x0F
            if kind == STOP:
                return fields
            delta = header >> 4
            fid = last + delta if delta else self.zigzag()
            fields.append([fid, kind, self.value(kind)])
            last = fid


def decode(data: bytes) -> Struct:
    return _Reader(data).struct()


def decode_prefix(data: bytes) -> tuple[Struct, int]:
    """The struct at the start of ``data`` and how many bytes it took (a header followed by a payload)."""
    reader = _Reader(data)
    return reader.struct(), reader.pos


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        if n < 0x80:
            out.append(n)
            return bytes(out)
        out.append((n & 0x7F) | 0x80)
        n >>= 7


def _zigzag(n: int) -> bytes:
    return _varint((n << 1) ^ (n >> 63))


def _value(kind: int, value: Any) -> bytes:
    if kind == BYTE:
        return struct.pack("b", value)
    if kind in (I16, I32, I64):
        return _zigzag(value)
    if kind == DOUBLE:
        return struct.pack("<d", value)
    if kind == BINARY:
        return _varint(len(value)) + value
    if kind in (LIST, SET):
        elem, items = value
        head = bytes([(len(items) << 4) | elem]) if len(items) < 15 else bytes([0xF0 | elem]) + _varint(len(items))
        if elem in (TRUE, FALSE):
            return head + bytes(TRUE if v else FALSE for v in items)
        return head + b"".join(_value(elem, v) for v in items)
    if kind == MAP:
        k, v, items = value
        if not items:
            return b"\0"
        return _varint(len(items)) + bytes([(k << 4) | v]) + b"".join(_value(k, a) + _value(v, b) for a, b in items)
    if kind == STRUCT:
        return encode(value)
    raise ValueError(f"cannot encode compact type {kind}")


def encode(fields: Struct) -> bytes:
    out = bytearray()
    last = 0
    for fid, kind, value in fields:
        if kind in (TRUE, FALSE):
            kind = TRUE if value else FALSE
        delta = fid - last
        out += bytes([(delta << 4) | kind]) if 0 < delta <= 15 else bytes([kind]) + _zigzag(fid)
        if kind not in (TRUE, FALSE):
            out += _value(kind, value)
        last = fid
    out.append(STOP)
    return bytes(out)


def field(fields: Struct, fid: int) -> list[Any] | None:
    """The ``[field_id, type, value]`` entry of ``fid``, or None (the tests rewrite values through it)."""
    return next((f for f in fields if f[0] == fid), None)


def get(fields: Struct, fid: int, kind: int | None = None) -> Any:
    """The value of field ``fid`` (None when absent, or when ``kind`` is given and the field has another type);
    a list field's value is its items."""
    for entry in fields:
        if entry[0] == fid:
            found = entry[1]
            if kind is not None and found != kind and not (kind == TRUE and found == FALSE):
                return None
            return entry[2][1] if found in (LIST, SET) else entry[2]
    return None


class FileMetaData:
    VERSION = 1
    SCHEMA = 2
    NUM_ROWS = 3
    ROW_GROUPS = 4
    KEY_VALUE_METADATA = 5
    CREATED_BY = 6
    COLUMN_ORDERS = 7


class RowGroup:
    COLUMNS = 1
    TOTAL_BYTE_SIZE = 2
    NUM_ROWS = 3


class ColumnChunk:
    FILE_PATH = 1
    FILE_OFFSET = 2
    META_DATA = 3


class ColumnMetaData:
    TYPE = 1
    ENCODINGS = 2
    PATH_IN_SCHEMA = 3
    CODEC = 4
    NUM_VALUES = 5
    TOTAL_UNCOMPRESSED_SIZE = 6
    TOTAL_COMPRESSED_SIZE = 7
    KEY_VALUE_METADATA = 8
    DATA_PAGE_OFFSET = 9
    INDEX_PAGE_OFFSET = 10
    DICTIONARY_PAGE_OFFSET = 11
    STATISTICS = 12
    ENCODING_STATS = 13
    BLOOM_FILTER_OFFSET = 14
    BLOOM_FILTER_LENGTH = 15


class Statistics:
    MAX = 1  # deprecated: signed order only
    MIN = 2
    NULL_COUNT = 3
    DISTINCT_COUNT = 4
    MAX_VALUE = 5  # in the column order's sort order
    MIN_VALUE = 6
    IS_MAX_VALUE_EXACT = 7
    IS_MIN_VALUE_EXACT = 8


class ColumnOrder:
    TYPE_ORDER = 1  # a union: the only member defined


class BloomFilterHeader:
    NUM_BYTES = 1
    ALGORITHM = 2  # union: BLOCK = 1
    HASH = 3  # union: XXHASH = 1
    COMPRESSION = 4  # union: UNCOMPRESSED = 1


def split_file(data: bytes) -> tuple[bytes, Struct]:
    """A Parquet file's bytes before the footer, and the footer decoded."""
    n = int.from_bytes(data[-8:-4], "little")
    return data[:-8 - n], decode(data[-8 - n:-8])


def join_file(body: bytes, footer: Struct) -> bytes:
    encoded = encode(footer)
    return body + encoded + len(encoded).to_bytes(4, "little") + b"PAR1"


def footer_bytes(metadata: Any) -> bytes:
    """The Thrift bytes of a footer pyarrow has read (``pyarrow.parquet.FileMetaData`` pickles as them)."""
    return bytes(metadata.__reduce__()[1][0])
