"""Hive types: parse Hive type strings, and map them to and from Arrow types.

One place for every type rule in the project. Decisions, so nobody has to guess:

* Unsigned Arrow integers widen to the next signed Hive type (uint8 -> smallint ...); ``uint64`` has no lossless
  Hive type and is refused.
* ``varchar(n)`` and ``char(n)`` are read as Arrow strings; the length is kept on the Hive side only.
* Every Arrow timestamp unit and time zone maps to Hive ``timestamp``; reading back yields microseconds without a
  zone (Hive's timestamp is zone-less; a zoned Parquet column is shown as its UTC wall-clock time).
* A column's type comes from its Parquet schema, never from the Arrow schema a writer stored beside it
  (``ARROW:schema``): ``binary_view``, ``large_string``, ``list_view``, dictionaries, ``date64`` and durations
  are stored as plain ``BYTE_ARRAY`` / ``LIST`` / ``INT32 DATE`` / ``INT64`` and Spark reads them so
  (:func:`parquet_arrow_type`). Two files with one Parquet schema therefore always get one Hive type.
* ``float16``, ``uint64``, intervals, unions, times ... are refused with a message that names the column and its
  Arrow type.
"""

from __future__ import annotations

import decimal
import re
from collections.abc import Iterable
from dataclasses import dataclass

import pyarrow as pa

from storage_handler.errors import SchemaError

PRIMITIVES = frozenset(
    {"tinyint", "smallint", "int", "bigint", "float", "double", "boolean", "string", "binary", "date",
     "timestamp", "decimal", "varchar", "char"}
)
# Decimal arithmetic context wide enough for decimal(38, s) and any literal we accept: the default context has 28
# digits and would silently round a 38-digit literal (a wrong prune).
EXACT_DECIMALS = decimal.Context(prec=200, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN)

_INTEGER_RANGES = {
    "tinyint": (-(2**7), 2**7 - 1),
    "smallint": (-(2**15), 2**15 - 1),
    "int": (-(2**31), 2**31 - 1),
    "bigint": (-(2**63), 2**63 - 1),
}


@dataclass(frozen=True, slots=True)
class HiveType:
    """A parsed Hive type. ``name`` is lower case; parameters only where the type has them."""

    name: str
    precision: int | None = None
    scale: int | None = None
    length: int | None = None
    children: tuple[tuple[str, HiveType], ...] = ()  # struct fields; array: (("element", t),); map: key, value
    #: a Spark 4 string column's collation other than binary (``string collate UTF8_LCASE``): its comparisons are
    #: not byte order, so its statistics prune nothing (``input_format``)
    collation: str | None = None

    def __str__(self) -> str:
        if self.collation is not None:
            return f"{self.name} collate {self.collation}"
        if self.name == "decimal":
            return f"decimal({self.precision},{self.scale})"
        if self.name in ("varchar", "char"):
            return f"{self.name}({self.length})"
        if self.name == "array":
            return f"array<{self.children[0][1]}>"
        if self.name == "map":
            return f"map<{self.children[0][1]},{self.children[1][1]}>"
        if self.name == "struct":
            return "struct<" + ",".join(f"{n}:{t}" for n, t in self.children) + ">"
        return self.name

    @property
    def is_primitive(self) -> bool:
        return self.name in PRIMITIVES

    @property
    def is_integer(self) -> bool:
        return self.name in _INTEGER_RANGES

    @property
    def is_string(self) -> bool:
        return self.name in ("string", "varchar", "char")

    @property
    def integer_range(self) -> tuple[int, int]:
        return _INTEGER_RANGES[self.name]


_TOKEN = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_.]*|\d+|[<>(),:])")  # dots: qualified collation names


def parse_hive_type(text: str) -> HiveType:
    """Parse a Hive type string such as ``decimal(10,2)`` or ``map<string,array<int>>``."""
    tokens = _tokenize(text)
    pos, result = _parse(tokens, 0, text)
    if pos != len(tokens):
        raise SchemaError(f"cannot parse Hive type {text!r}: unexpected {tokens[pos]!r}")
    return result


def _tokenize(text: str) -> list[str]:
    tokens: list[str] = []
    pos = 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        m = _TOKEN.match(text, pos)
        if not m:
            raise SchemaError(f"cannot parse Hive type {text!r} at position {pos}")
        tokens.append(m.group(1))
        pos = m.end()
    return tokens


def _expect(tokens: list[str], pos: int, tok: str, text: str) -> int:
    if pos >= len(tokens) or tokens[pos] != tok:
        found = tokens[pos] if pos < len(tokens) else "end of text"
        raise SchemaError(f"cannot parse Hive type {text!r}: expected {tok!r}, found {found!r}")
    return pos + 1


def _parse(tokens: list[str], pos: int, text: str) -> tuple[int, HiveType]:
    if pos >= len(tokens):
        raise SchemaError(f"cannot parse Hive type {text!r}: it ends early")
    name = tokens[pos].lower()
    pos += 1
    if name in ("integer",):
        name = "int"
    if name == "string" and pos < len(tokens) and tokens[pos].lower() == "collate":
        if pos + 1 >= len(tokens):
            raise SchemaError(f"cannot parse Hive type {text!r}: a collation name must follow 'collate'")
        collation = tokens[pos + 1]
        binary = collation.upper().rsplit(".", 1)[-1] == "UTF8_BINARY"  # Spark's default: byte order, as plain
        return pos + 2, HiveType("string", collation=None if binary else collation)
    if name == "decimal":
        precision, scale = 10, 0  # Hive's defaults for a bare `decimal`
        if pos < len(tokens) and tokens[pos] == "(":
            precision = int(tokens[pos + 1])
            pos += 2
            if tokens[pos] == ",":
                scale = int(tokens[pos + 1])
                pos += 2
            pos = _expect(tokens, pos, ")", text)
        if not (1 <= precision <= 38 and 0 <= scale <= precision):
            raise SchemaError(f"invalid Hive type {text!r}: decimal needs 1 <= precision <= 38, 0 <= scale <= precision")
        return pos, HiveType("decimal", precision=precision, scale=scale)
    if name in ("varchar", "char"):
        pos = _expect(tokens, pos, "(", text)
        length = int(tokens[pos])
        pos = _expect(tokens, pos + 1, ")", text)
        return pos, HiveType(name, length=length)
    if name == "array":
        pos = _expect(tokens, pos, "<", text)
        pos, element = _parse(tokens, pos, text)
        pos = _expect(tokens, pos, ">", text)
        return pos, HiveType("array", children=(("element", element),))
    if name == "map":
        pos = _expect(tokens, pos, "<", text)
        pos, key = _parse(tokens, pos, text)
        pos = _expect(tokens, pos, ",", text)
        pos, value = _parse(tokens, pos, text)
        pos = _expect(tokens, pos, ">", text)
        return pos, HiveType("map", children=(("key", key), ("value", value)))
    if name == "struct":
        pos = _expect(tokens, pos, "<", text)
        fields: list[tuple[str, HiveType]] = []
        while True:
            field_name = tokens[pos]
            pos = _expect(tokens, pos + 1, ":", text)
            pos, field_type = _parse(tokens, pos, text)
            fields.append((field_name.lower(), field_type))
            if tokens[pos] == ",":
                pos += 1
                continue
            pos = _expect(tokens, pos, ">", text)
            return pos, HiveType("struct", children=tuple(fields))
    if name not in PRIMITIVES:
        raise SchemaError(f"unsupported Hive type {name!r} in {text!r}")
    return pos, HiveType(name)


# ---------------------------------------------------------------- Arrow -> Hive
def parquet_arrow_type(arrow_type: pa.DataType) -> pa.DataType:
    """The Arrow type of what Parquet stores for ``arrow_type``: the type Arrow reads the column as without the
    writer's stored ``ARROW:schema``, and the one Spark's reader sees.

    Why: pyarrow restores the stored schema when it reads a footer, so a ``binary_view`` column and a ``binary``
    column (both plain ``BYTE_ARRAY`` on disk) would read as different types, and which one a group of files
    sharing a Parquet schema got depended on the file that opened its chunk."""
    t = arrow_type
    if isinstance(t, pa.ExtensionType):
        return parquet_arrow_type(t.storage_type)
    if pa.types.is_dictionary(t):
        return parquet_arrow_type(t.value_type)
    if pa.types.is_large_string(t) or _is(t, "string_view"):
        return pa.string()
    if pa.types.is_large_binary(t) or _is(t, "binary_view"):
        return pa.binary()
    if pa.types.is_duration(t):
        return pa.int64()  # INT64 without an annotation
    if pa.types.is_date64(t):
        return pa.date32()
    if (pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)
            or is_list_view(t)):
        return pa.list_(t.value_field.with_type(parquet_arrow_type(t.value_type)))
    if pa.types.is_map(t):
        return pa.map_(parquet_arrow_type(t.key_type), parquet_arrow_type(t.item_type))
    if pa.types.is_struct(t):
        return pa.struct([t.field(i).with_type(parquet_arrow_type(t.field(i).type)) for i in range(t.num_fields)])
    return t


def _is(t: pa.DataType, kind: str) -> bool:
    """``pa.types.is_<kind>(t)`` where this pyarrow has the kind (the view types came with pyarrow 16)."""
    test = getattr(pa.types, f"is_{kind}", None)
    return bool(test is not None and test(t))


def is_list_view(t: pa.DataType) -> bool:
    """Whether ``t`` is a ``list_view`` / ``large_list_view`` (stored as a plain Parquet ``LIST``)."""
    return _is(t, "list_view") or _is(t, "large_list_view")


def parquet_arrow_schema(schema: pa.Schema) -> pa.Schema:
    """``schema`` with every field's type as :func:`parquet_arrow_type` gives it, and no metadata."""
    return pa.schema([fld.with_type(parquet_arrow_type(fld.type)) for fld in schema])


def arrow_to_hive(arrow_type: pa.DataType, column: str = "?") -> HiveType:
    """Map an Arrow type to the Hive type a Parquet column of that type is registered as."""
    t = arrow_type
    if pa.types.is_dictionary(t):
        return arrow_to_hive(t.value_type, column)
    simple = {
        pa.int8(): "tinyint", pa.int16(): "smallint", pa.int32(): "int", pa.int64(): "bigint",
        pa.uint8(): "smallint", pa.uint16(): "int", pa.uint32(): "bigint",
        pa.float32(): "float", pa.float64(): "double", pa.bool_(): "boolean",
        pa.string(): "string", pa.large_string(): "string", pa.utf8(): "string",
        pa.binary(): "binary", pa.large_binary(): "binary", pa.date32(): "date", pa.date64(): "date",
    }
    if t in simple:
        return HiveType(simple[t])
    if _is(t, "string_view"):
        return HiveType("string")
    if pa.types.is_fixed_size_binary(t):
        return HiveType("binary")
    if pa.types.is_timestamp(t):
        return HiveType("timestamp")
    if pa.types.is_decimal(t):
        if t.precision > 38:
            raise SchemaError(
                f"column {column!r}: Arrow type {t} has precision {t.precision}; Hive decimals allow at most 38 digits"
            )
        return HiveType("decimal", precision=t.precision, scale=t.scale)
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return HiveType("array", children=(("element", arrow_to_hive(t.value_type, column)),))
    if pa.types.is_map(t):
        return HiveType(
            "map", children=(("key", arrow_to_hive(t.key_type, column)), ("value", arrow_to_hive(t.item_type, column)))
        )
    if pa.types.is_struct(t):
        return HiveType(
            "struct",
            children=tuple((t.field(i).name.lower(), arrow_to_hive(t.field(i).type, column)) for i in range(t.num_fields)),
        )
    raise SchemaError(
        f"column {column!r} has Arrow type {t}, which Hive cannot represent; "
        "rewrite the column as a supported type (integers up to int64, float, double, decimal(p<=38), string, "
        "binary, boolean, date, timestamp, list, map, struct) or drop it from the files"
    )


# ---------------------------------------------------------------- Hive -> Arrow
def hive_to_arrow(hive_type: HiveType | str) -> pa.DataType:
    """The Arrow type a Hive column is read back as (what Spark's schema for the column corresponds to)."""
    t = parse_hive_type(hive_type) if isinstance(hive_type, str) else hive_type
    simple = {
        "tinyint": pa.int8(), "smallint": pa.int16(), "int": pa.int32(), "bigint": pa.int64(),
        "float": pa.float32(), "double": pa.float64(), "boolean": pa.bool_(), "string": pa.string(),
        "varchar": pa.string(), "char": pa.string(), "binary": pa.binary(), "date": pa.date32(),
        "timestamp": pa.timestamp("us"),
    }
    if t.name in simple:
        return simple[t.name]
    if t.name == "decimal":
        return pa.decimal128(t.precision or 10, t.scale or 0)
    if t.name == "array":
        return pa.list_(hive_to_arrow(t.children[0][1]))
    if t.name == "map":
        return pa.map_(hive_to_arrow(t.children[0][1]), hive_to_arrow(t.children[1][1]))
    if t.name == "struct":
        return pa.struct([pa.field(n, hive_to_arrow(c)) for n, c in t.children])
    raise SchemaError(f"no Arrow type for Hive type {t}")


def hive_columns_text(columns: Iterable[tuple[str, HiveType]]) -> tuple[str, str]:
    """Hive's job-property encoding of a schema: ``columns`` comma-separated, ``columns.types`` colon-separated."""
    cols = list(columns)
    return ",".join(n for n, _ in cols), ":".join(str(t) for _, t in cols)


def split_top_level(text: str, sep: str) -> list[str]:
    """Split on ``sep`` outside ``<...>`` and ``(...)``: ``"a:struct<x:int>"`` -> ``["a", "struct<x:int>"]``."""
    parts: list[str] = []
    depth, start = 0, 0
    for i, ch in enumerate(text):
        if ch in "<(":
            depth += 1
        elif ch in ">)":
            depth -= 1
        elif ch == sep and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def parse_schema_text(text: str) -> list[tuple[str, HiveType]]:
    """Parse ``'a int, b decimal(10,2), c map<string,int>'`` into (lower-cased name, type) pairs."""
    result: list[tuple[str, HiveType]] = []
    for part in split_top_level(text, ","):
        part = part.strip()
        if not part:
            continue
        name, _, type_text = part.partition(" ")
        if not type_text.strip():
            raise SchemaError(f"schema entry {part!r} needs a name and a type, e.g. 'a int'")
        result.append((name.strip("`").lower(), parse_hive_type(type_text.strip())))
    return result
