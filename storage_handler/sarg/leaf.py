"""Predicate leaves: one comparison of one column with literals, as Hive's ``PredicateLeaf``.

A leaf's literal must be of the Python class its type names (Hive checks the Java class the same way and refuses a
mismatch): an ``int`` for a FLOAT column is a caller bug that would otherwise surface as a wrong prune much later.
The checks and Hive-compatible printing of literals live in :mod:`storage_handler.sarg.literals`.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from storage_handler.errors import FilterError
from storage_handler.sarg.literals import check_literal, format_literal, java_string_key, literal_key


class LeafOperator(enum.Enum):
    """Hive's ``PredicateLeaf.Operator``: the comparisons a leaf can make."""

    EQUALS = "EQUALS"
    NULL_SAFE_EQUALS = "NULL_SAFE_EQUALS"
    LESS_THAN = "LESS_THAN"
    LESS_THAN_EQUALS = "LESS_THAN_EQUALS"
    IN = "IN"
    BETWEEN = "BETWEEN"
    IS_NULL = "IS_NULL"


class LeafType(enum.Enum):
    """Hive's ``PredicateLeaf.Type``; the Python class a literal must have is in ``literals.LITERAL_CLASSES``."""

    LONG = "LONG"
    FLOAT = "FLOAT"
    STRING = "STRING"
    DATE = "DATE"
    DECIMAL = "DECIMAL"
    TIMESTAMP = "TIMESTAMP"
    BOOLEAN = "BOOLEAN"


#: Operators that compare with exactly one literal (``literal`` set, ``literal_list`` empty).
SINGLE_LITERAL_OPERATORS = frozenset(
    {
        LeafOperator.EQUALS,
        LeafOperator.NULL_SAFE_EQUALS,
        LeafOperator.LESS_THAN,
        LeafOperator.LESS_THAN_EQUALS,
    }
)


@dataclass(frozen=True, slots=True)
class PredicateLeaf:
    """``column_name <operator> literal(s)``, validated on construction.

    ``literal`` is set for EQUALS, NULL_SAFE_EQUALS, LESS_THAN and LESS_THAN_EQUALS; IN has ``literal_list`` with at
    least one element (an element may be ``None``: Hive keeps ``x IN (1, NULL)`` as ``(IN x 1 null)``), BETWEEN has
    exactly ``(lower, upper)``, IS_NULL has neither.
    """

    operator: LeafOperator
    type: LeafType
    column_name: str
    literal: Any = None
    literal_list: tuple[Any, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.operator, LeafOperator):
            raise FilterError(f"Leaf operator must be a LeafOperator, got {self.operator!r}")
        if not isinstance(self.type, LeafType):
            raise FilterError(f"Leaf type must be a LeafType, got {self.type!r}")
        if not isinstance(self.column_name, str):
            raise FilterError(f"Leaf column name must be a str, got {self.column_name!r}")
        if isinstance(self.literal_list, list):
            object.__setattr__(self, "literal_list", tuple(self.literal_list))
        if not isinstance(self.literal_list, tuple):
            raise FilterError(
                f"literal_list of the {self.operator.value} leaf on column {self.column_name!r} must be a tuple, "
                f"got {self.literal_list!r}"
            )
        self._check_shape()
        where = f"{self.type.value}.{self.operator.value} leaf on column {self.column_name!r}"
        if self.literal is not None:
            check_literal(self.type.value, self.literal, where)
        for item in self.literal_list:
            if item is not None:
                check_literal(self.type.value, item, where)

    def _check_shape(self) -> None:
        """Which of literal / literal_list an operator uses is fixed; anything else is a malformed leaf."""
        op, lit, lits = self.operator, self.literal, self.literal_list
        what = f"{op.value} leaf on column {self.column_name!r}"
        if op in SINGLE_LITERAL_OPERATORS:
            if lit is None or lits:
                raise FilterError(
                    f"The {what} needs exactly one non-null literal (got {lit!r}, list {lits!r})"
                )
        elif op is LeafOperator.IN:
            if lit is not None or not lits:
                raise FilterError(f"The {what} needs a non-empty literal_list and no literal")
        elif op is LeafOperator.BETWEEN:
            if lit is not None or len(lits) != 2 or lits[0] is None or lits[1] is None:
                raise FilterError(f"The {what} needs literal_list=(lower, upper), both non-null")
        elif lit is not None or lits:
            raise FilterError(f"The {what} takes no literal")

    def key(self) -> tuple[Any, ...]:
        """Identity of this leaf as Hive's ``PredicateLeafImpl.equals`` sees it (used to de-duplicate leaves).

        Differs from ``==`` where Java does: NaN equals NaN, -0.0 differs from 0.0, 12.50 equals 12.5, a date in
        the 1582 Julian/Gregorian gap equals the date ten days later (``java.sql.Date`` normalizes it so), and
        strings compare as UTF-16.
        """
        type_name = self.type.value
        literal = None if self.literal is None else literal_key(type_name, self.literal)
        items = tuple(None if x is None else literal_key(type_name, x) for x in self.literal_list)
        return (self.operator, self.type, java_string_key(self.column_name), literal, items)

    def to_string(self) -> str:
        """Hive's ``PredicateLeafImpl.toString()``: ``(EQUALS x 1)``, ``(IN x 1 2 null)``, ``(IS_NULL z)``."""
        type_name = self.type.value
        parts = [self.operator.value, self.column_name]
        if self.literal is not None:
            parts.append(format_literal(type_name, self.literal))
        else:
            parts.extend("null" if x is None else format_literal(type_name, x) for x in self.literal_list)
        return "(" + " ".join(parts) + ")"

    def __str__(self) -> str:
        return self.to_string()
