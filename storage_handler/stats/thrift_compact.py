"""A generic Thrift compact-protocol codec for Parquet footers.

Why: pyarrow aborts the whole process (a C++ exception escaping ``ColumnChunkMetaData.statistics``) when a
column chunk's min or max is too short to decode; :mod:`storage_handler.stats.footer_guard` reads the footer's
Thrift first to find such chunks without touching them. The tests also use it to rewrite footers into odd cases
(drop a statistic, change the writer, truncate a value).

A struct decodes to a list of ``[field_id, type, value]`` (order kept, so an untouched footer re-encodes byte for
byte); a list to ``(element_type, [values])``; binary to ``bytes``; integers to ``int``; booleans to ``bool``.
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
    """The ``[field_id, type, value]`` entry of ``fid``, or None."""
    return next((f for f in fields if f[0] == fid), None)


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
