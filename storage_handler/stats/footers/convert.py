"""Turn one Parquet statistics bound into a value of the table column's type, conservatively.

Why a module of its own: every rule that decides whether a footer bound can be trusted lives here, in one place, so
the rules can be read (and reviewed) together. A converter returns ``None`` when it cannot give a bound that is
guaranteed to hold; ``None`` always means "unknown", never "no value".

The rules:

* Integers: physical INT32/INT64 with their logical signedness (unsigned stats are re-read as unsigned). A bound
  outside the table type's range is unknown (the reader would overflow or fail, we cannot say what it returns).
* Floats (float, double): a NaN bound is unknown, and ``-0.0``/``+0.0`` are widened (min ``0.0`` -> ``-0.0``, max
  ``-0.0`` -> ``+0.0``) because writers disagree on which zero they record. Whether NaN can be present at all is
  decided by the caller (``footer.py``): Arrow's writer leaves NaN out of min/max, so footer float bounds are only
  used with a proof that there is no NaN. Integer files read as a float column are rounded outward.
* Decimals: physical INT32, INT64, FIXED_LEN_BYTE_ARRAY or BYTE_ARRAY (big-endian two's complement), any
  precision/scale. Widened to the table's scale exactly; a file with more places than the column (narrowed by
  ALTER TABLE: Spark refuses it, Hive rounds half-up) and a bound that needs more digits than the table's
  precision are unknown.
* Strings: raw bytes decoded as UTF-8 (Python's code-point order equals UTF-8 byte order, Hive's ``Text`` order).
  A min that ends inside a multi-byte character (a writer truncated it at a byte boundary) keeps its valid prefix,
  still a lower bound; a max that is not valid UTF-8 is unknown. A ``varchar(n)`` column's values are read whole by
  Spark and cut to ``n`` characters by Hive: its min is cut (a cut value is never above the value, and cutting is
  monotone, so the cut min bounds both readings) and its max is not (the whole max is above both). ``char(n)`` is
  not bounded: Hive pads and compares without trailing spaces, which is not monotone in byte order.
* Dates: INT32 days. Timestamps: INT64 in ms, µs or ns, with or without ``isAdjustedToUTC``, stored as the raw value
  converted to µs, i.e. zone-less UTC wall time (``storage_handler.types`` reads zoned columns the same way); ns are
  floored for the min and ceiled for the max. INT96 is never trusted (its sort order is undefined in the format).
  A date before 1582-10-15 or a timestamp before 1900-01-02 is unknown: Spark rebases such values from the hybrid
  Julian calendar when the file asks for it (legacy writers, Spark 2) or the session does
  (``datetimeRebaseModeInRead=LEGACY``), shifting them by days, so a bound in the file's own numbers may not hold
  for the values Spark reads (1900-01-01Z is Spark's own limit for timestamps; a day more covers files written in
  local time).
* Booleans: as is. Binary and anything else: not bounded.
* A file column Spark refuses to read as the table's type (:func:`spark_reads`: an INT64 file under an ``int``
  column, a double under ``float``, an INT32 under ``decimal(9,2)``, a decimal with fewer integer digits than the
  column's) has no statistics at all, not even a null count: the query reads the file and fails as it does
  without the handler, instead of being answered (``count``, ``min``, ``max``) or pruned from numbers of values
  no reader returns.

Bounds are returned as Arrow-ready Python scalars of the index's column type: ``int`` (integers; dates as days since
1970-01-01; timestamps as µs since 1970-01-01 00:00 zone-less), ``float``, ``Decimal`` (exactly the table's scale),
``str``, ``bool``. Ints avoid Python ``datetime``'s 1..9999 year range.
"""

from __future__ import annotations

import json
import math
import struct
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from storage_handler.types import HiveType

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
#: the first date and timestamp (µs) a bound may be (see the module docstring): 1582-10-15, 1900-01-02 00:00
FIRST_TRUSTED_DAY = -141427
FIRST_TRUSTED_US = -2208902400 * 1_000_000
_MULTIPLY_TO_US = {"MILLIS": 1000, "MICROS": 1}
_JSON_UNITS = {"milliseconds": "MILLIS", "microseconds": "MICROS", "nanoseconds": "NANOS"}
_CONVERTED_INTS = {
    "INT_8": (8, True), "INT_16": (16, True), "INT_32": (32, True), "INT_64": (64, True),
    "UINT_8": (8, False), "UINT_16": (16, False), "UINT_32": (32, False), "UINT_64": (64, False),
}
_STRING_LOGICAL = {"STRING", "ENUM", "JSON"}
_STRING_CONVERTED = {"UTF8", "ENUM", "JSON"}


@dataclass(frozen=True, slots=True)
class Source:
    """What a Parquet leaf column holds, as far as its statistics are concerned.

    ``kind`` is one of ``int``, ``float``, ``decimal``, ``string``, ``binary``, ``bool``, ``date``, ``timestamp``,
    ``int96``, ``unknown``.
    """

    kind: str
    physical: str
    bits: int = 0  # int: physical width (32/64) used to re-read unsigned raw values
    width: int = 0  # int: the annotated width (8, 16, 32, 64; the physical one when not annotated)
    signed: bool = True
    precision: int = 0
    scale: int = 0
    unit: str = ""  # timestamp: MILLIS, MICROS, NANOS


def classify(column: Any) -> Source:
    """Classify a ``pyarrow.parquet.ColumnSchema`` from its physical, logical and legacy converted types."""
    physical = str(column.physical_type)
    try:
        logical = json.loads(column.logical_type.to_json())
    except (ValueError, AttributeError):
        logical = {"Type": "None"}
    ltype = str(logical.get("Type", "None")).upper()
    converted = str(column.converted_type or "NONE").upper()
    if physical == "BOOLEAN":
        return Source("bool", physical)
    if physical == "FLOAT" or physical == "DOUBLE":
        return Source("float", physical, bits=32 if physical == "FLOAT" else 64)
    if physical == "INT96":
        return Source("int96", physical)
    if ltype == "DECIMAL" or converted == "DECIMAL":
        precision = int(logical.get("precision", column.precision))
        scale = int(logical.get("scale", column.scale))
        return Source("decimal", physical, precision=precision, scale=scale)
    if physical in ("INT32", "INT64"):
        width = 32 if physical == "INT32" else 64
        if ltype == "INT":
            return Source("int", physical, bits=width, signed=bool(logical.get("isSigned", True)),
                          width=int(logical.get("bitWidth", width)))
        if ltype == "DATE" or converted == "DATE":
            return Source("date", physical) if physical == "INT32" else Source("unknown", physical)
        if ltype == "TIMESTAMP":
            unit = _JSON_UNITS.get(str(logical.get("timeUnit", "")).lower())
            return Source("timestamp", physical, unit=unit) if unit and width == 64 else Source("unknown", physical)
        if converted in ("TIMESTAMP_MILLIS", "TIMESTAMP_MICROS") and width == 64:
            return Source("timestamp", physical, unit=converted.split("_")[1])
        if converted in _CONVERTED_INTS:
            return Source("int", physical, bits=width, signed=_CONVERTED_INTS[converted][1],
                          width=_CONVERTED_INTS[converted][0])
        if ltype == "NONE" and converted == "NONE":
            return Source("int", physical, bits=width, signed=True, width=width)
        return Source("unknown", physical)  # TIME, INTERVAL, ...
    if physical == "BYTE_ARRAY":
        if ltype in _STRING_LOGICAL or converted in _STRING_CONVERTED:
            return Source("string", physical)
        if ltype == "NONE" and converted == "NONE":
            return Source("binary", physical)
        return Source("unknown", physical)  # BSON, geometry, variant, ...
    if physical == "FIXED_LEN_BYTE_ARRAY" and ltype == "NONE" and converted == "NONE":
        return Source("binary", physical)
    return Source("unknown", physical)  # FLOAT16, UUID, INTERVAL ...


def spark_reads(source: Source, target: HiveType) -> bool:
    """Whether Spark's Parquet reader reads a file column of ``source`` as the table type ``target`` (measured
    on pyspark 3.5, 4.0 and 4.3 with ``spark.read.schema``; ``tests/compat/test_spark_reads.py`` checks it
    on the line that runs the tests).

    Decision: the rules are Spark 4's, whose reader widens (INT32 and dates to ``bigint``/``double``, INT32/INT64
    to decimals with room for every value, ``float`` to ``double``, a decimal to more places and digits). Spark
    3.5 refuses those widenings; there a file only Spark 4 reads keeps its statistics, so a query that prunes it
    (or is answered from the index for it) does not fail where Spark 3.5 fails reading it -- the rows it returns
    are the ones such a file holds. Nanosecond timestamps keep theirs too: no Spark line reads them as
    ``timestamp`` (every query reading such a file fails, with or without the handler), the handler's own reader
    (``read_table``, ``format("hsh")``) does, and prunes by them -- a table of pandas' default files is usable
    there. Anything unlisted (INT96 but as ``timestamp``, unknown logical types) is not read: its statistics are
    unknown, which only keeps files."""
    name, kind = target.name, source.kind
    if name in ("string", "varchar", "char", "binary"):
        return kind in ("string", "binary")
    if kind == "int":
        if source.bits == 64:
            if not source.signed:
                return name == "decimal" and (target.precision, target.scale) == (20, 0)
            return name == "bigint" or name == "decimal" and _integer_digits(target) >= 20
        if not source.signed:  # UINT_8 / UINT_16 are read as INT32 is; UINT_32 only as wider types
            return name in ("bigint", "double") if source.width == 32 else name in _INT32_WIDENS
        return name in _INT32_WIDENS or name == "decimal" and _integer_digits(target) >= 10
    if kind == "date":
        return name in _INT32_WIDENS
    if kind == "float":
        return name == "double" or name == "float" and source.physical == "FLOAT"
    if kind == "decimal":
        return name == "decimal" and (target.scale or 0) >= source.scale and \
            _integer_digits(target) >= source.precision - source.scale
    if kind == "bool":
        return name == "boolean"
    if kind == "timestamp":
        return name in ("timestamp", "bigint")
    if kind == "int96":
        return name == "timestamp"
    return False


def spark_reads_registered(file_type: HiveType, target: HiveType) -> bool:
    """:func:`spark_reads` for a file column known by the Hive type registration infers from it (``int`` an
    INT32, ``bigint`` an INT64, ``double`` a DOUBLE, a decimal its own precision and scale): whether a table column
    of ``target`` reads files whose column registers as ``file_type`` (``hsh sync`` after ``ALTER TABLE``)."""
    name = file_type.name
    if str(file_type) == str(target):
        return True
    width = {"tinyint": 8, "smallint": 16, "int": 32, "bigint": 64}.get(name)
    if width is not None:
        source = Source("int", "INT64" if width == 64 else "INT32", bits=max(width, 32), width=width)
    elif name in ("float", "double"):
        source = Source("float", "FLOAT" if name == "float" else "DOUBLE", bits=32 if name == "float" else 64)
    elif name == "decimal":
        source = Source("decimal", "FIXED_LEN_BYTE_ARRAY", precision=file_type.precision or 10,
                        scale=file_type.scale or 0)
    elif name in ("date", "boolean", "string", "binary"):
        source = Source({"boolean": "bool"}.get(name, name), "")
    else:
        return False  # timestamps, varchar, complex types: only as themselves
    return spark_reads(source, target)


#: table types Spark 4 reads an INT32 file column (signed, or unsigned of 8/16 bits) or a date as
_INT32_WIDENS = frozenset({"tinyint", "smallint", "int", "bigint", "double", "date"})


def _integer_digits(target: HiveType) -> int:
    return (target.precision or 10) - (target.scale or 0)


def convert_bound(raw: Any, source: Source, target: HiveType, upper: bool) -> Any:
    """The table-typed bound for a raw Parquet min (``upper=False``) or max (``upper=True``), or None if unknown."""
    name = target.name
    kind = source.kind
    if kind == "int":
        value = _int_value(raw, source)
        if target.is_integer:
            lo, hi = target.integer_range
            return value if lo <= value <= hi else None
        if name in ("float", "double"):
            return _int_to_float(value, name == "float", upper)
        if name == "decimal":
            return _to_decimal(value, 0, target, upper)
        return None
    if kind == "float":
        if name not in ("float", "double") or not isinstance(raw, float):
            return None
        return float_bound(raw, name == "float", upper)
    if kind == "decimal":
        if name != "decimal":
            return None
        unscaled = int.from_bytes(raw, "big", signed=True) if isinstance(raw, bytes) else int(raw)
        return _to_decimal(unscaled, source.scale, target, upper)
    if kind in ("string", "binary"):
        if name not in ("string", "varchar") or not isinstance(raw, bytes):
            return None
        text = _utf8_bound(raw, upper)
        if text is not None and name == "varchar" and target.length is not None and not upper:
            text = text[: target.length]
        return text
    if kind == "bool":
        return bool(raw) if name == "boolean" else None
    if kind == "date":
        return int(raw) if name == "date" and int(raw) >= FIRST_TRUSTED_DAY else None
    if kind == "timestamp":
        return _timestamp_us(int(raw), source.unit, upper) if name == "timestamp" else None
    return None  # int96, binary to non-string, unknown


def float_bound(value: float, to_float32: bool, upper: bool) -> float | None:
    """A float bound made safe: NaN -> unknown, zeros widened, rounded outward when narrowed to float32."""
    if math.isnan(value):
        return None
    if to_float32 and not math.isinf(value):
        narrowed = _to_float32_outward(value, upper)
        if narrowed is None:
            return None
        value = narrowed
    if value == 0.0:
        return 0.0 if upper else -0.0
    return value


def _int_value(raw: Any, source: Source) -> int:
    value = int(raw)
    if not source.signed and value < 0:
        value += 1 << source.bits  # unsigned stats come back from pyarrow as the signed physical value
    return value


def _int_to_float(value: int, to_float32: bool, upper: bool) -> float | None:
    """Nearest float (or float32) rounded outward so that it still bounds the exact integer."""
    try:
        f = float(value)
    except OverflowError:
        return None
    if to_float32:
        f32 = _to_float32_outward(f, upper)
        if f32 is None:
            return None
        f = f32
        while (upper and f < value) or (not upper and f > value):  # double rounding: step once more
            f = _float32_step(f, upper)
        return f
    if upper and f < value:
        f = math.nextafter(f, math.inf)
    elif not upper and f > value:
        f = math.nextafter(f, -math.inf)
    return f


def _to_float32_outward(value: float, upper: bool) -> float | None:
    try:
        f = struct.unpack("<f", struct.pack("<f", value))[0]
    except OverflowError:
        return None
    if math.isinf(f):
        return None
    if upper and f < value or not upper and f > value:
        f = _float32_step(f, upper)
    return f


def _float32_step(f: float, up: bool) -> float:
    """The next float32 after ``f`` towards +inf (``up``) or -inf."""
    bits = struct.unpack("<i", struct.pack("<f", f))[0]
    if f == 0.0:
        bits = 1 if up else -(2**31) + 1  # smallest subnormal of the right sign
    elif (f > 0) == up:
        bits += 1
    else:
        bits -= 1
    return struct.unpack("<f", struct.pack("<i", bits))[0]


def _to_decimal(unscaled: int, scale: int, target: HiveType, upper: bool) -> Decimal | None:
    """Rescale an unscaled value to the target scale; None when it needs too many digits, or when the file has more
    decimal places than the column (a column narrowed by ALTER TABLE): Spark refuses to read such a file and Hive
    rounds each value half-up, so a bound rounded outward would be no value the reader sees (``min``/``max``
    were answered from it), and the file is read instead."""
    t_scale = target.scale or 0
    t_precision = target.precision or 10
    if t_scale < scale:
        return None
    value = unscaled * 10 ** (t_scale - scale)
    if abs(value) >= 10**t_precision:
        return None
    digits = tuple(int(d) for d in str(abs(value)))
    return Decimal((1 if value < 0 else 0, digits, -t_scale))


def _utf8_bound(raw: bytes, upper: bool) -> str | None:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        if upper:
            return None
        if exc.reason == "unexpected end of data":
            return raw[: exc.start].decode("utf-8", errors="strict")  # valid prefix: still a lower bound
        return None


def _timestamp_us(value: int, unit: str, upper: bool) -> int | None:
    if unit == "NANOS":
        result = -((-value) // 1000) if upper else value // 1000  # ceil the max, floor the min
    else:
        result = value * _MULTIPLY_TO_US[unit]
    return result if FIRST_TRUSTED_US <= result <= INT64_MAX else None
