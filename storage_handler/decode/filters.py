"""Spark's data-source filter vocabulary, owned by this project.

Spark hands a scan its pushed predicates as ``org.apache.spark.sql.sources.Filter`` objects; the JVM side of the
native scan serializes them (``FilterJson.java``, read back by :mod:`storage_handler.spark.filter_json`), and
pyspark's Python data-source API (4.1 and newer) passes the same shapes as ``pyspark.sql.datasource`` objects.
The handler decodes both into a SearchArgument through these classes, not pyspark's: pyspark 3.5 and 4.0 have no
such classes, and the prune service must run on every Spark line. The names and fields match Spark's (and
``contract.json``'s ``filters`` section, which both languages check), so a filter reads the same everywhere.

``attribute`` is a column path, ``("x",)`` for a top-level column (a nested field has more parts and is not
pruned by). Values are Python objects: ``None``, ``bool``, ``int``, ``float``, ``Decimal``, ``str``, ``bytes``,
``datetime.date``, ``datetime.datetime`` (aware for Spark's ``TIMESTAMP``, naive for ``TIMESTAMP_NTZ``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

ColumnPath = tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Filter:
    """Base of every filter (never instantiated itself)."""


@dataclass(frozen=True, slots=True)
class Comparison(Filter):
    """A column compared with one value."""

    attribute: ColumnPath
    value: Any


class EqualTo(Comparison):
    __slots__ = ()


class EqualNullSafe(Comparison):
    __slots__ = ()


class GreaterThan(Comparison):
    __slots__ = ()


class GreaterThanOrEqual(Comparison):
    __slots__ = ()


class LessThan(Comparison):
    __slots__ = ()


class LessThanOrEqual(Comparison):
    __slots__ = ()


class StringStartsWith(Comparison):
    __slots__ = ()


class StringEndsWith(Comparison):
    __slots__ = ()


class StringContains(Comparison):
    __slots__ = ()


@dataclass(frozen=True, slots=True)
class In(Filter):
    """The column equals one of ``value`` (Spark's field name for the list)."""

    attribute: ColumnPath
    value: tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class IsNull(Filter):
    attribute: ColumnPath


@dataclass(frozen=True, slots=True)
class IsNotNull(Filter):
    attribute: ColumnPath


@dataclass(frozen=True, slots=True)
class Not(Filter):
    child: Filter


@dataclass(frozen=True, slots=True)
class And(Filter):
    """Both hold. Spark's Python data-source API never passes one (its filters are AND-ed); the JVM side does."""

    left: Filter
    right: Filter


@dataclass(frozen=True, slots=True)
class Or(Filter):
    """Either holds (see :class:`And`)."""

    left: Filter
    right: Filter


#: every filter class by its Spark name: the names ``contract.json`` lists
BY_NAME: dict[str, type[Filter]] = {
    cls.__name__: cls
    for cls in (EqualTo, EqualNullSafe, GreaterThan, GreaterThanOrEqual, LessThan, LessThanOrEqual,
                StringStartsWith, StringEndsWith, StringContains, In, IsNull, IsNotNull, Not, And, Or)
}
