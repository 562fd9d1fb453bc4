"""Hive's seven-valued logic for predicate results over a *set* of rows.

A leaf evaluated against a file's statistics cannot say "true" or "false" for every row; it says which of the
outcomes YES (a row qualifies), NO (a row does not) and NULL (the predicate is unknown for a row) may occur. The
and/or/not tables below are Hive's (``SearchArgument.TruthValue`` in storage-api 2.8.1), including its quirks, so a
file pruned here is pruned by Hive too; they are checked against the real jar for all 49 pairs in the tests.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from types import MappingProxyType


class TruthValue(enum.Enum):
    """The set of outcomes a predicate may have over some rows: Hive's ``SearchArgument.TruthValue``."""

    YES = "YES"
    NO = "NO"
    NULL = "NULL"
    YES_NULL = "YES_NULL"
    NO_NULL = "NO_NULL"
    YES_NO = "YES_NO"
    YES_NO_NULL = "YES_NO_NULL"

    def or_(self, right: TruthValue | None) -> TruthValue:
        """Hive's ``or``; ``None`` stands for "no value yet" (how Hive folds a list), giving ``self``."""
        if right is None:
            return self
        return _OR_TABLE[self, right]

    def and_(self, right: TruthValue | None) -> TruthValue:
        """Hive's ``and``; ``None`` stands for "no value yet", giving ``self``."""
        if right is None:
            return self
        return _AND_TABLE[self, right]

    def not_(self) -> TruthValue:
        """Hive's ``not``: YES<->NO, YES_NULL<->NO_NULL; NULL, YES_NO, YES_NO_NULL stay."""
        return _NOT_TABLE[self]

    def is_needed(self) -> bool:
        """Whether rows with this outcome must be read: only NO, NULL and NO_NULL allow skipping."""
        return self not in (TruthValue.NO, TruthValue.NULL, TruthValue.NO_NULL)


def _hive_or(this: TruthValue, right: TruthValue) -> TruthValue:
    """The decision sequence of Hive's ``TruthValue.or``; the order of the tests is what defines the table."""
    t = TruthValue
    if right is this:
        return this
    if t.YES in (this, right):
        return t.YES
    if t.YES_NULL in (this, right):
        return t.YES_NULL
    if right is t.NO:
        return this
    if this is t.NO:
        return right
    if this is t.NULL:
        return t.NULL if right is t.NO_NULL else t.YES_NULL
    if right is t.NULL:
        return t.NULL if this is t.NO_NULL else t.YES_NULL
    return t.YES_NO_NULL


def _hive_and(this: TruthValue, right: TruthValue) -> TruthValue:
    """The decision sequence of Hive's ``TruthValue.and`` (the mirror image of ``or``)."""
    t = TruthValue
    if right is this:
        return this
    if t.NO in (this, right):
        return t.NO
    if t.NO_NULL in (this, right):
        return t.NO_NULL
    if right is t.YES:
        return this
    if this is t.YES:
        return right
    if this is t.NULL:
        return t.NULL if right is t.YES_NULL else t.NO_NULL
    if right is t.NULL:
        return t.NULL if this is t.YES_NULL else t.NO_NULL
    return t.YES_NO_NULL


_OR_TABLE: dict[tuple[TruthValue, TruthValue], TruthValue] = {
    (a, b): _hive_or(a, b) for a in TruthValue for b in TruthValue
}
_AND_TABLE: dict[tuple[TruthValue, TruthValue], TruthValue] = {
    (a, b): _hive_and(a, b) for a in TruthValue for b in TruthValue
}
_NOT_TABLE: dict[TruthValue, TruthValue] = {
    TruthValue.YES: TruthValue.NO,
    TruthValue.NO: TruthValue.YES,
    TruthValue.NULL: TruthValue.NULL,
    TruthValue.YES_NULL: TruthValue.NO_NULL,
    TruthValue.NO_NULL: TruthValue.YES_NULL,
    TruthValue.YES_NO: TruthValue.YES_NO,
    TruthValue.YES_NO_NULL: TruthValue.YES_NO_NULL,
}

#: Read-only views of the tables, for vectorized evaluators that want to build lookup arrays once.
OR_TABLE: Mapping[tuple[TruthValue, TruthValue], TruthValue] = MappingProxyType(_OR_TABLE)
AND_TABLE: Mapping[tuple[TruthValue, TruthValue], TruthValue] = MappingProxyType(_AND_TABLE)
NOT_TABLE: Mapping[TruthValue, TruthValue] = MappingProxyType(_NOT_TABLE)
