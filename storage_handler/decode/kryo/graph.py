"""Kryo 4's object graph: class resolution, reference tracking and the serializers Hive's filters use.

A reader for exactly what ``Kryo.writeObject`` produces with Kryo's defaults (reference tracking on, class names
written in full for unregistered classes, ``FieldSerializer`` for plain classes), in two flavors:

* ``"hive"``: Hive's ``SerializationUtilities`` Kryo (``hive.io.filter.expr.serialized``): ids 10-31 registered,
  Hive's own serializers for ``java.sql.Date``/``Timestamp`` and ``Arrays.asList`` lists;
* ``"plain"``: ``new Kryo()`` (Spark's ``sarg.pushdown``): only Kryo's primitives registered, dates and
  timestamps as variable-length millis (``Timestamp(long)`` then keeps only milliseconds).

Everything that depends on the writer's jars -- registrations, which serializer a class has, field lists -- comes
from one release's table (:class:`~storage_handler.decode.kryo.layouts.ReleaseLayouts`); this module holds only
Kryo's format and one reader per serializer class (:data:`SERIALIZER_READERS`). The reader notes whether it
consulted a table entry that differs between releases (:attr:`GraphReader.release_dependent`): when it did not,
every supported release reads the bytes the same way.

Decoded values: Java objects written by ``FieldSerializer`` become :class:`JavaObject` (class name + fields),
enum constants :class:`JavaEnum`, ``java.sql.Date``/``Timestamp`` :class:`JavaInstant`, lists and arrays Python
lists, strings and boxed primitives the Python value. Anything else -- a class whose layout we do not know, a
reference to an object not read yet, bytes left over -- raises :class:`KryoFormatError`: the reader never
guesses, because a guess could decode into a *different* filter.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from storage_handler.decode.kryo.layouts import VARIANT, Flavor, ReleaseLayouts
from storage_handler.decode.kryo.stream import KryoFormatError, KryoInput

#: Classes of newer Hive releases (3.x, 4.x): meeting one means the filter was written by another Hive version.
_NEWER_HIVE_CLASSES = frozenset({
    "org.apache.hadoop.hive.common.type.Date", "org.apache.hadoop.hive.common.type.Timestamp",
    "org.apache.hadoop.hive.common.type.TimestampTZ", "org.apache.hadoop.hive.serde2.io.DateWritableV2",
    "org.apache.hadoop.hive.serde2.io.TimestampWritableV2",
})
_WRAPPERS = frozenset({
    "java.lang.Boolean", "java.lang.Byte", "java.lang.Character", "java.lang.Double", "java.lang.Float",
    "java.lang.Integer", "java.lang.Long", "java.lang.Short",
})
_PENDING = object()


class UnknownClassError(KryoFormatError):
    """The bytes name a class this decoder has no layout for (not in a filter the release's Hive writes)."""


@dataclass(eq=False, slots=True)
class JavaObject:
    """An object written by Kryo's ``FieldSerializer``; mutable while its fields are read (references may point
    at it before it is complete, as in Kryo)."""

    cls: str
    fields: dict[str, Any] = field(default_factory=dict)

    def __getitem__(self, name: str) -> Any:
        return self.fields[name]


@dataclass(frozen=True, slots=True)
class JavaEnum:
    cls: str
    name: str


@dataclass(frozen=True, slots=True)
class JavaInstant:
    """A ``java.sql.Date`` or ``java.sql.Timestamp``: epoch milliseconds (and the timestamp's nanoseconds)."""

    cls: str
    millis: int
    nanos: int


def _is_instance(value: Any, cls: str, arrays: Mapping[str, bool]) -> bool:
    """Whether a value read earlier can be what a back-reference to a ``cls`` points at."""
    if isinstance(value, (JavaObject, JavaEnum, JavaInstant)):
        return value.cls == cls
    if isinstance(value, list):
        return cls in ("java.util.ArrayList", "java.util.Arrays$ArrayList", "[J") or cls in arrays
    if isinstance(value, str):
        return cls == "java.lang.String"
    return isinstance(value, bytes) and cls == "[B"


def class_of(value: Any) -> str:
    """The Java class name of a decoded value (for error messages and reference checks)."""
    if isinstance(value, (JavaObject, JavaEnum, JavaInstant)):
        return value.cls
    return {str: "java.lang.String", bool: "java.lang.Boolean", int: "java.lang.Integer", float: "java.lang.Double",
            list: "java.util.List", bytes: "[B"}.get(type(value), type(value).__name__)


class GraphReader:
    """Reads one object graph from ``data`` (the bytes of one ``writeObject`` call) with ``release``'s tables."""

    def __init__(self, data: bytes, flavor: Flavor, release: ReleaseLayouts, label: str | None = None) -> None:
        self.input = KryoInput(data)
        self.flavor = flavor
        self.release = release
        self.label = label or release.name  # "Hive 2.3.10": who the error messages say wrote the filter
        self.registered = release.registered[flavor]
        self.serializers = release.serializers[flavor]
        self.fields = release.fields
        self.variant_classes = VARIANT.classes[flavor]
        self.variant_ids = VARIANT.ids[flavor]
        #: Whether a table entry that differs between supported releases was consulted.
        self.release_dependent = False
        self.names: dict[int, str] = {}
        self.refs: list[Any] = []

    # ------------------------------------------------------------------------------------------- entry point
    def read_root(self, cls: str) -> Any:
        """``kryo.readObject(input, cls)`` for the whole input; trailing bytes are an error."""
        value = self.read_object(cls, may_be_null=False)
        if not self.input.at_end():
            raise KryoFormatError(
                f"{len(self.input.data) - self.input.position} bytes are left after the {cls.rsplit('.', 1)[-1]}"
            )
        return value

    # ------------------------------------------------------------------------------------------- classes
    def read_class(self) -> str | None:
        """``Kryo.readClass``: 0 is null, 1 a class name (or a name read before), n >= 2 registered id n - 2."""
        code = self.input.length("class id")
        if code == 0:
            return None
        if code == 1:
            return self._read_name()
        if code - 2 in self.variant_ids:
            self.release_dependent = True
        registered = self.registered.get(code - 2)
        if registered is None:
            raise UnknownClassError(
                f"class id {code - 2} is not registered by {self._who()}: the filter was written by a different "
                "Hive or Kryo version (or the bytes are corrupt)"
            )
        if registered not in self.serializers:
            raise UnknownClassError(
                f"class id {code - 2} ({registered} in {self.label}) is never part of a filter: the bytes were "
                "written by a different Hive version, which registers other classes under these ids (or are corrupt)"
            )
        return registered

    def _read_name(self) -> str:
        name_id = self.input.length("class name id")
        known = self.names.get(name_id)
        if known is not None:
            return known
        if name_id != len(self.names):
            raise KryoFormatError(f"class name id {name_id} appears before id {len(self.names)} was defined")
        name = self.input.string()
        if not name or name in self.names.values():
            raise KryoFormatError(f"class name {name!r} for id {name_id} is empty or defined twice")
        self.names[name_id] = name
        return name

    def _who(self) -> str:
        return f"{self.label}'s SerializationUtilities" if self.flavor == "hive" else "a plain Kryo 4"

    # ------------------------------------------------------------------------------------------- references
    def read_class_and_object(self) -> Any:
        """``Kryo.readClassAndObject``: the class, then the object (or a reference to one read before)."""
        cls = self.read_class()
        if cls is None:
            return None
        return self.read_object(cls, may_be_null=False)

    def read_object(self, cls: str, *, may_be_null: bool) -> Any:
        """``readObject`` / ``readObjectOrNull`` of a known class: reference marker, then the serializer's bytes."""
        if cls in _WRAPPERS:  # Kryo tracks no references for boxed primitives
            if may_be_null and self.input.length("null marker") == 0:
                return None
            return self._read_value(cls, -1)
        marker = self.input.length("reference")
        if marker == 0:
            if may_be_null:
                return None
            raise KryoFormatError(f"a {cls} that cannot be null is written as null")
        if marker >= 2:
            return self._reference(marker - 2, cls)
        ref = len(self.refs)
        self.refs.append(_PENDING)
        value = self._read_value(cls, ref)
        self.refs[ref] = value
        return value

    def _reference(self, index: int, cls: str) -> Any:
        if index >= len(self.refs) or self.refs[index] is _PENDING:
            raise KryoFormatError(f"reference {index} points at an object not read yet ({len(self.refs)} so far)")
        value = self.refs[index]
        if cls in self.variant_classes:
            self.release_dependent = True
        if not _is_instance(value, cls, self.release.arrays):
            raise KryoFormatError(f"reference {index} should be a {cls} but is a {class_of(value)}")
        return value

    # ------------------------------------------------------------------------------------------- serializers
    def _read_value(self, cls: str, ref: int) -> Any:
        """The serializer's bytes for ``cls``. Objects and lists are read here, not in helpers: a filter nests
        them level by level, and fewer Python frames per level let deeper filters decode."""
        if cls in self.variant_classes:
            self.release_dependent = True
        serializer = self.serializers.get(cls)
        if serializer == "FieldSerializer":
            obj = JavaObject(cls)
            self.refs[ref] = obj
            values = obj.fields
            for name, kind in self.fields[cls]:
                if kind == "":
                    values[name] = self.read_class_and_object()
                elif kind in _PRIMITIVE_FIELDS:
                    values[name] = _PRIMITIVE_FIELDS[kind](self.input)
                else:
                    values[name] = self.read_object(kind, may_be_null=True)
            return obj
        if serializer == "CollectionSerializer" and cls == "java.util.ArrayList":
            items: list[Any] = []
            self.refs[ref] = items
            count = self.input.length("list size")
            self._check_count(count)
            for _ in range(count):
                items.append(self.read_class_and_object())
            return items
        read = SERIALIZER_READERS.get(serializer) if serializer is not None else None
        if read is None:
            raise self._unknown(cls)
        return read(self, cls, ref)

    def _unknown(self, cls: str) -> UnknownClassError:
        if cls in _NEWER_HIVE_CLASSES or cls.startswith("org.apache.hive.com.esotericsoftware"):
            return UnknownClassError(f"class {cls} is written by a newer Hive than 2.3 (or a differently shaded "
                                     f"Kryo); this decoder reads what {self.label} writes")
        if cls.startswith("org.apache.hadoop.hive.ql.plan.ExprNode"):
            return UnknownClassError(f"expression node class {cls} is not one this decoder reads (it reads columns, "
                                     "constants, struct fields and functions; not Tez's runtime values)")
        if cls.startswith("org.apache.hadoop.hive.ql.udf."):
            return UnknownClassError(f"function class {cls} is not one this decoder knows (its fields are "
                                     f"not in the layouts of the functions {self.label} commonly pushes)")
        return UnknownClassError(f"class {cls} is not part of a filter {self.label} writes")

    def _enum(self, cls: str, ref: int) -> JavaEnum:
        constants = self.release.enums.get(cls)
        if constants is None:
            raise self._unknown(cls)
        ordinal = self.input.length("enum ordinal") - 1
        if not 0 <= ordinal < len(constants):
            raise KryoFormatError(f"enum {cls} has no constant number {ordinal}")
        return JavaEnum(cls, constants[ordinal])

    def _arrays_as_list(self, cls: str, ref: int) -> list[Any]:
        count = self.input.length("list size")
        self._check_count(count)
        if self.read_class() is None:
            raise KryoFormatError("an Arrays.asList list has no element class")
        return [self.read_class_and_object() for _ in range(count)]

    def _object_array(self, cls: str, ref: int) -> list[Any] | None:
        final = self.release.arrays.get(cls)
        if final is None:
            raise self._unknown(cls)
        count = self.input.length("array length")
        if count == 0:
            return None
        self._check_count(count - 1)
        items: list[Any] = []
        self.refs[ref] = items
        element = cls[2:-1]
        for _ in range(count - 1):
            if final:
                items.append(self.read_object(element, may_be_null=True))
            else:
                items.append(self.read_class_and_object())
        return items

    def _check_count(self, count: int) -> None:
        # Every element takes at least one byte: a larger count is corrupt (and must not allocate gigabytes).
        if count > len(self.input.data) - self.input.position:
            raise KryoFormatError(f"a collection of {count} elements cannot fit in the remaining bytes")

    def _bytes(self, cls: str, ref: int) -> bytes | None:
        count = self.input.length("array length")
        return None if count == 0 else self.input.raw(count - 1)

    def _longs(self, cls: str, ref: int) -> list[int] | None:
        count = self.input.length("array length")
        if count == 0:
            return None
        self._check_count(count - 1)
        return [self.input.varlong(zigzag=True) for _ in range(count - 1)]

    def _string(self, cls: str, ref: int) -> str:
        value = self.input.string()
        if value is None:
            raise KryoFormatError("a string written as a non-null reference holds null")
        return value

    def _hive_date(self, cls: str, ref: int) -> JavaInstant:
        """Hive's ``SqlDateSerializer``: ``writeLong(getTime())``, 8 fixed bytes."""
        if cls != "java.sql.Date":
            raise self._unknown(cls)
        return JavaInstant(cls, self.input.fixed_long(), 0)

    def _hive_timestamp(self, cls: str, ref: int) -> JavaInstant:
        """Hive's ``TimestampSerializer``: ``writeLong(getTime())`` then ``writeInt(getNanos())``, fixed bytes."""
        if cls != "java.sql.Timestamp":
            raise self._unknown(cls)
        millis, nanos = self.input.fixed_long(), self.input.fixed_int()
        if not 0 <= nanos <= 999_999_999 or millis % 1000 != nanos // 1_000_000:
            raise KryoFormatError(f"timestamp millis {millis} and nanos {nanos} disagree")
        return JavaInstant(cls, millis, nanos)

    def _kryo_date(self, cls: str, ref: int) -> JavaInstant:
        """Kryo's ``DateSerializer``: ``writeLong(getTime(), true)``; ``new Timestamp(millis)`` keeps millis only."""
        millis = self.input.varlong()
        if cls == "java.sql.Timestamp":
            return JavaInstant(cls, millis, millis % 1000 * 1_000_000)
        if cls != "java.sql.Date":
            raise self._unknown(cls)
        return JavaInstant(cls, millis, 0)


def _read_inline(reader: GraphReader, cls: str, ref: int) -> Any:
    """Serializers :meth:`GraphReader._read_value` reads itself; reaching here means a class they do not cover."""
    raise reader._unknown(cls)


def _boxed(read: Callable[[KryoInput], Any]) -> Callable[[GraphReader, str, int], Any]:
    return lambda reader, cls, ref: read(reader.input)


_PRIMITIVE_FIELDS: dict[str, Callable[[KryoInput], Any]] = {
    "boolean": KryoInput.boolean,
    "byte": KryoInput.signed_byte,
    "char": lambda i: chr(i.char()),
    "short": KryoInput.short,
    "int": lambda i: i.varint(zigzag=True),  # FieldSerializer's varint fields (Kryo's default)
    "long": lambda i: i.varlong(zigzag=True),
    "float": KryoInput.float32,
    "double": KryoInput.float64,
}
#: Serializer class (as the release tables name it) -> its reader. ``FieldSerializer`` and ``CollectionSerializer``
#: (ArrayList) are read inline in :meth:`GraphReader._read_value`; a serializer missing here is refused.
SERIALIZER_READERS: dict[str, Callable[[GraphReader, str, int], Any]] = {
    "FieldSerializer": _read_inline,
    "CollectionSerializer": _read_inline,  # java.util.ArrayList only
    "DefaultSerializers$StringSerializer": GraphReader._string,
    "DefaultSerializers$IntSerializer": _boxed(lambda i: i.varint(zigzag=True)),
    "DefaultSerializers$LongSerializer": _boxed(lambda i: i.varlong(zigzag=True)),
    "DefaultSerializers$BooleanSerializer": _boxed(KryoInput.boolean),
    "DefaultSerializers$ByteSerializer": _boxed(KryoInput.signed_byte),
    "DefaultSerializers$ShortSerializer": _boxed(KryoInput.short),
    "DefaultSerializers$CharSerializer": _boxed(lambda i: chr(i.char())),
    "DefaultSerializers$FloatSerializer": _boxed(KryoInput.float32),
    "DefaultSerializers$DoubleSerializer": _boxed(KryoInput.float64),
    "DefaultSerializers$EnumSerializer": GraphReader._enum,
    "DefaultSerializers$DateSerializer": GraphReader._kryo_date,
    "DefaultArraySerializers$ByteArraySerializer": GraphReader._bytes,
    "DefaultArraySerializers$LongArraySerializer": GraphReader._longs,
    "DefaultArraySerializers$ObjectArraySerializer": GraphReader._object_array,
    "SerializationUtilities$ArraysAsListSerializer": GraphReader._arrays_as_list,
    "SerializationUtilities$SqlDateSerializer": GraphReader._hive_date,
    "SerializationUtilities$TimestampSerializer": GraphReader._hive_timestamp,
}
