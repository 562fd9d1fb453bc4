"""The Kryo layouts of each supported Hive release, as data: one generated table per release.

Kryo's bytes carry no field names, lengths or versions: a reader must know, per class, how the writing JVM's
classes serialize it. That knowledge differs between Hive releases -- more exactly, between the jar sets a Hive
release runs with -- so it is kept as one table per release (``hive_<release>.py``, generated from that release's
jars by ``python -m tests.decode.kryo_oracle`` and checked against them by ``tests/decode/test_kryo_layouts.py``),
never as branches in the reader. Each table holds:

* ``HIVE_REGISTERED`` / ``PLAIN_REGISTERED``: class ids registered by Hive's ``SerializationUtilities`` Kryo
  (``hive.io.filter.expr.serialized``) and by a plain ``new Kryo()`` (``sarg.pushdown``, Spark's ORC path);
* ``HIVE_SERIALIZERS`` / ``PLAIN_SERIALIZERS``: the serializer each Kryo uses for each class a filter holds -- the
  value layout (Hive writes ``java.sql.Timestamp`` as 8 + 4 fixed bytes, Kryo's default as variable-length millis);
  the reader has one function per serializer (:data:`~storage_handler.decode.kryo.graph.SERIALIZER_READERS`);
* ``FIELDS``: for ``FieldSerializer`` classes, the fields in Kryo's order (sorted by name, transient and static
  fields left out); a field's kind is a primitive type name, ``""`` for a field written with its class first
  (declared type not final), or the final class whose serializer writes it without one;
* ``ENUMS`` (constants by ordinal) and ``ARRAYS`` (whether an object array's elements are written without class).

What differs between the supported releases is listed in each generated module's docstring. In short: Hive's own
serialization code is the same bytecode in 2.3.9 and 2.3.10; the bytes differ only where a filter holds Hadoop's
``org.apache.hadoop.io.Text``, whose fields changed between Hadoop 3.3.4 (the jars Hive 2.3.9 is tested with here,
from the pyspark 3.5 wheel) and Hadoop 3.5.0 (Hive 2.3.10's, from pyspark 4.x). A "release" below therefore names
a verified jar set: ``JARS`` in each module says which.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType, ModuleType
from typing import Literal, TypeVar

from storage_handler.decode.kryo.layouts import hive_2_3_9, hive_2_3_10

Flavor = Literal["hive", "plain"]
K = TypeVar("K")
FLAVORS: tuple[Flavor, ...] = ("hive", "plain")


@dataclass(frozen=True, slots=True, eq=False)
class ReleaseLayouts:
    """One release's generated tables (read-only: typed as ``Mapping``, never changed after loading)."""

    version: str
    jars: tuple[str, ...]
    registered: Mapping[Flavor, Mapping[int, str]]
    serializers: Mapping[Flavor, Mapping[str, str]]
    fields: Mapping[str, tuple[tuple[str, str], ...]]
    enums: Mapping[str, tuple[str, ...]]
    arrays: Mapping[str, bool]

    @property
    def name(self) -> str:
        return f"Hive {self.version}"

    def describe(self) -> str:
        """``Hive 2.3.10 (hive-exec-2.3.10-core.jar, hadoop-client-api-3.5.0.jar, ...)``."""
        return f"{self.name} ({', '.join(self.jars)})"


def _load(module: ModuleType) -> ReleaseLayouts:
    # Plain dicts behind read-only types: the reader looks them up once per object, and a MappingProxyType
    # lookup costs noticeably more than a dict's.
    return ReleaseLayouts(
        version=module.VERSION,
        jars=tuple(module.JARS),
        registered={"hive": module.HIVE_REGISTERED, "plain": module.PLAIN_REGISTERED},
        serializers={"hive": module.HIVE_SERIALIZERS, "plain": module.PLAIN_SERIALIZERS},
        fields=module.FIELDS,
        enums=module.ENUMS,
        arrays=module.ARRAYS,
    )


#: The supported releases, newest first (the order they are tried in when the bytes must tell).
RELEASES: Mapping[str, ReleaseLayouts] = MappingProxyType(
    {layouts.version: layouts for layouts in map(_load, (hive_2_3_10, hive_2_3_9))})
SUPPORTED: tuple[str, ...] = tuple(sorted(RELEASES, key=lambda v: tuple(int(p) for p in v.split("."))))


@dataclass(frozen=True, slots=True)
class Variant:
    """What a reader may consult without the answer depending on the release: everything except these.

    ``classes[flavor]``: class names whose serializer, fields, enum constants or array flag differ between some
    supported releases (or exist in only some); ``ids[flavor]``: registration ids that differ. A decode that never
    looked any of them up reads the same in every supported release.
    """

    classes: Mapping[Flavor, frozenset[str]]
    ids: Mapping[Flavor, frozenset[int]]


def _differing(tables: Sequence[Mapping[K, object]]) -> set[K]:
    """The keys whose entries are not the same in all ``tables`` (or are missing from some)."""
    keys: set[K] = set().union(*tables)
    return {key for key in keys if len({repr(table.get(key)) for table in tables}) > 1}


def _variant(releases: Sequence[ReleaseLayouts]) -> Variant:
    shared = (_differing([r.fields for r in releases]) | _differing([r.enums for r in releases])
              | _differing([r.arrays for r in releases]))
    classes = {flavor: frozenset(shared | _differing([r.serializers[flavor] for r in releases])) for flavor in FLAVORS}
    ids = {flavor: frozenset(_differing([r.registered[flavor] for r in releases])) for flavor in FLAVORS}
    return Variant(MappingProxyType(classes), MappingProxyType(ids))


VARIANT = _variant(list(RELEASES.values()))
