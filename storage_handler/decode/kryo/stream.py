"""Kryo 4's primitive encodings, read from a byte string: what ``com.esotericsoftware.kryo.io.Input`` reads.

Only the encodings Hive's filters use, each exactly as Kryo 4.0 writes it (checked against ``kryo-shaded-4.0.3``
in the pyspark wheel by ``tests/decode/test_kryo_conformance.py``):

* variable-length ints and longs: 7 bits per byte, least significant group first, high bit = "more"; an int
  takes at most 5 bytes, a long at most 9 (the ninth byte carries 8 bits). Fields and ``Integer``/``Long`` values
  are zigzag-encoded ("not optimized for positive"); lengths, class ids and reference ids are not;
* fixed-width big-endian ``short``, ``int``, ``long``, ``float`` and ``double``; ``boolean`` is one byte 0 or 1;
* strings: ASCII text of 2..63 characters is written as bytes with the high bit set on the last one; anything
  else (null, empty, one character, long or non-ASCII text) as a length (6 bits in the first byte, whose high bit
  is set, then 7 per byte) followed by the UTF-16 code units, each in one to three bytes.

The reader is strict where Kryo's own reader is lenient (a fifth varint byte with stray bits, a malformed
character): Kryo's writer never produces those bytes, so they mean the input is not what Hive wrote.
"""

from __future__ import annotations

import re
import struct

from storage_handler.errors import FilterError

_DOUBLE = struct.Struct(">d")
_FLOAT = struct.Struct(">f")
_INT = struct.Struct(">i")
_LONG = struct.Struct(">q")
_SHORT = struct.Struct(">h")
_CHAR = struct.Struct(">H")
_HIGH_BIT = re.compile(rb"[\x80-\xff]")


class KryoFormatError(FilterError):
    """The bytes are not a valid Kryo 4 stream of the classes Hive writes (truncated, corrupt, another format)."""


class KryoInput:
    """A cursor over ``data``; every read raises :class:`KryoFormatError` instead of running past the end."""

    __slots__ = ("data", "position")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.position = 0

    def _take(self, count: int) -> bytes:
        start = self.position
        end = start + count
        if end > len(self.data):
            raise KryoFormatError(f"the bytes end early (needed {count} more at offset {start} of {len(self.data)})")
        self.position = end
        return self.data[start:end]

    def at_end(self) -> bool:
        return self.position == len(self.data)

    def byte(self) -> int:
        """One unsigned byte."""
        if self.position >= len(self.data):
            raise KryoFormatError(f"the bytes end early (offset {self.position})")
        value = self.data[self.position]
        self.position += 1
        return value

    def boolean(self) -> bool:
        value = self.byte()
        if value > 1:
            raise KryoFormatError(f"boolean byte {value} at offset {self.position - 1} is neither 0 nor 1")
        return value == 1

    def signed_byte(self) -> int:
        value = self.byte()
        return value - 256 if value > 127 else value

    def short(self) -> int:
        return int(_SHORT.unpack(self._take(2))[0])

    def char(self) -> int:
        return int(_CHAR.unpack(self._take(2))[0])

    def fixed_int(self) -> int:
        return int(_INT.unpack(self._take(4))[0])

    def fixed_long(self) -> int:
        return int(_LONG.unpack(self._take(8))[0])

    def float32(self) -> float:
        return float(_FLOAT.unpack(self._take(4))[0])

    def float64(self) -> float:
        return float(_DOUBLE.unpack(self._take(8))[0])

    def varint(self, *, zigzag: bool = False) -> int:
        """A 32-bit variable-length int (``readVarInt``); ``zigzag`` for values written "not optimized positive"."""
        position = self.position
        if position < len(self.data) and self.data[position] < 0x80:  # one byte: most ids, counts and markers
            self.position = position + 1
            value = self.data[position]
            return (value >> 1) ^ -(value & 1) if zigzag else value
        result = 0
        for shift in (0, 7, 14, 21):
            b = self.byte()
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                break
        else:
            b = self.byte()
            if b > 0x0F:
                raise KryoFormatError(f"a 5-byte varint ends in byte {b:#04x} at offset {self.position - 1}")
            result |= b << 28
        if zigzag:
            return (result >> 1) ^ -(result & 1)
        return result - (1 << 32) if result >= 1 << 31 else result

    def varlong(self, *, zigzag: bool = False) -> int:
        """A 64-bit variable-length long (``readVarLong``); the ninth byte, if any, holds 8 bits."""
        result = 0
        for shift in range(0, 56, 7):
            b = self.byte()
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                break
        else:
            result |= self.byte() << 56
        if zigzag:
            return (result >> 1) ^ -(result & 1)
        return result - (1 << 64) if result >= 1 << 63 else result

    def length(self, what: str) -> int:
        """A non-negative count written with ``writeVarInt(n, true)``."""
        position = self.position
        if position < len(self.data) and self.data[position] < 0x80:
            self.position = position + 1
            return self.data[position]
        value = self.varint()
        if value < 0:
            raise KryoFormatError(f"{what} {value} at offset {self.position} is negative")
        return value

    def string(self) -> str | None:
        """``Input.readString``: None for Java's null."""
        if self.position >= len(self.data):
            raise KryoFormatError(f"the bytes end early (a string at offset {self.position})")
        if not self.data[self.position] & 0x80:
            return self._ascii()
        count = self._utf8_length()
        if count == 0:
            return None
        return self._utf8(count - 1)

    def _ascii(self) -> str:
        start = self.position
        last = _HIGH_BIT.search(self.data, start)
        if last is None:
            raise KryoFormatError(f"an ASCII string from offset {start} never ends")
        end = last.start()
        self.position = end + 1
        return self.data[start:end].decode("ascii") + chr(self.data[end] & 0x7F)

    def _utf8_length(self) -> int:
        b = self.byte()
        result = b & 0x3F
        if b & 0x40:
            for shift in (6, 13, 20):
                b = self.byte()
                result |= (b & 0x7F) << shift
                if not b & 0x80:
                    return result
            b = self.byte()
            if b > 0x0F:
                raise KryoFormatError(f"a string length ends in byte {b:#04x} at offset {self.position - 1}")
            result |= b << 27
        return result

    def _utf8(self, count: int) -> str:
        if count > len(self.data) - self.position:
            raise KryoFormatError(f"a string of {count} characters at offset {self.position} runs past the end")
        units = bytearray()
        for _ in range(count):
            b = self.byte()
            kind = b >> 4
            if kind < 8:
                unit = b
            elif kind in (12, 13):
                unit = (b & 0x1F) << 6 | self._continuation()
            elif kind == 14:
                unit = (b & 0x0F) << 12 | self._continuation() << 6 | self._continuation()
            else:
                raise KryoFormatError(f"byte {b:#04x} at offset {self.position - 1} does not start a character")
            units += unit.to_bytes(2, "little")
        # Java strings are UTF-16: a surrogate pair written as two units is one character; a lone surrogate stays.
        return units.decode("utf-16-le", "surrogatepass")

    def _continuation(self) -> int:
        b = self.byte()
        if b >> 6 != 2:
            raise KryoFormatError(f"byte {b:#04x} at offset {self.position - 1} is not a character continuation")
        return b & 0x3F

    def raw(self, count: int) -> bytes:
        return self._take(count)
