"""TruthValue as a set of possible row outcomes, and its vectorized form.

Hive's seven TruthValues are exactly the non-empty subsets of the row outcomes {YES, NO, NULL}: ``YES_NO_NULL``
means "rows may be true, false or unknown". We encode a TruthValue as a 3-bit set -- ``YES=1, NO=2, NULL=4`` -- so
``YES_NULL=5``, ``NO_NULL=6``, ``YES_NO=3``, ``YES_NO_NULL=7``. Hive's ``and``/``or``/``not`` tables are then the
set-wise lifting of Kleene's three-valued logic (``tests/pruning/test_truth_codes.py`` checks all 49 pairs against
``storage_handler.sarg.TruthValue``):

* AND: YES possible iff YES possible in every operand; NO iff NO possible in some operand; NULL iff every operand
  can be YES or NULL and some operand can be NULL.
* OR: the dual (swap YES and NO). NOT swaps the YES and NO bits.

A file is *needed* unless its value is NO, NULL or NO_NULL -- i.e. iff the YES bit is set.

Vectorized, a column of TruthValues is three bit-packed boolean "planes" (``yes``, ``no``, ``null``); the formulas
above become a handful of bitmap AND/OR/NOT kernels (a few microseconds per million files), far cheaper than int8
arithmetic. A plane may also be a Python ``bool`` meaning "the same for every file", which folds away constants
such as ``YES_NO_NULL`` leaves without allocating arrays.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeAlias

import pyarrow as pa
import pyarrow.compute as pc

from storage_handler.sarg import TruthValue

YES, NO, NULL = 1, 2, 4
_NAME_BY_CODE = {1: "YES", 2: "NO", 4: "NULL", 3: "YES_NO", 5: "YES_NULL", 6: "NO_NULL", 7: "YES_NO_NULL"}
_CODE_BY_NAME = {name: code for code, name in _NAME_BY_CODE.items()}

Plane: TypeAlias = pa.BooleanArray | bool


def code_of(value: TruthValue) -> int:
    """The 3-bit code of a TruthValue."""
    return _CODE_BY_NAME[value.name]


def truth_of(code: int) -> TruthValue:
    """The TruthValue of a 3-bit code (1..7)."""
    return TruthValue[_NAME_BY_CODE[code]]


def is_needed(code: int) -> bool:
    """Hive's ``isNeeded``: everything except NO, NULL and NO_NULL."""
    return bool(code & YES)


# ------------------------------------------------------------------ scalar codes (oracle, explain)
def and_codes(codes: Sequence[int]) -> int:
    """Set-wise Kleene AND of any number of codes (the empty AND is YES)."""
    every_yes, some_no, some_null, every_yes_or_null = True, False, False, True
    for c in codes:
        every_yes &= bool(c & YES)
        some_no |= bool(c & NO)
        some_null |= bool(c & NULL)
        every_yes_or_null &= bool(c & (YES | NULL))
    return (YES if every_yes else 0) | (NO if some_no else 0) | (NULL if some_null and every_yes_or_null else 0)


def or_codes(codes: Sequence[int]) -> int:
    """Set-wise Kleene OR of any number of codes (the empty OR is NO)."""
    return not_code(and_codes([not_code(c) for c in codes]))


def not_code(code: int) -> int:
    """Swap the YES and NO bits."""
    return ((code & YES) << 1) | ((code & NO) >> 1) | (code & NULL)


# ------------------------------------------------------------------ plane helpers (constant-folding)
def p_and(a: Plane, b: Plane) -> Plane:
    if a is False or b is False:
        return False
    if a is True:
        return b
    if b is True:
        return a
    return pc.and_(a, b)


def p_or(a: Plane, b: Plane) -> Plane:
    if a is True or b is True:
        return True
    if a is False:
        return b
    if b is False:
        return a
    return pc.or_(a, b)


def p_not(a: Plane) -> Plane:
    if isinstance(a, bool):
        return not a
    return pc.invert(a)


def p_all(planes: Sequence[Plane]) -> Plane:
    result: Plane = True
    for p in planes:
        result = p_and(result, p)
    return result


def p_any(planes: Sequence[Plane]) -> Plane:
    result: Plane = False
    for p in planes:
        result = p_or(result, p)
    return result


def materialize(plane: Plane, length: int) -> pa.BooleanArray:
    """A plane as a full boolean array without nulls."""
    if isinstance(plane, bool):
        return pc.fill_null(pa.nulls(length, pa.bool_()), plane)
    return plane


@dataclass(frozen=True, slots=True)
class TruthPlanes:
    """One TruthValue per file, as three boolean planes: may a row be YES / NO / NULL."""

    yes: Plane
    no: Plane
    null: Plane

    @staticmethod
    def constant(code: int) -> TruthPlanes:
        return TruthPlanes(bool(code & YES), bool(code & NO), bool(code & NULL))

    def to_codes(self, length: int) -> pa.Int8Array:
        """Materialize as int8 codes 1..7 (see the module docstring); for reporting, not the hot path."""
        out = pc.cast(materialize(self.yes, length), pa.int8())
        out = pc.add(out, pc.multiply(pc.cast(materialize(self.no, length), pa.int8()), pa.scalar(2, pa.int8())))
        return pc.add(out, pc.multiply(pc.cast(materialize(self.null, length), pa.int8()), pa.scalar(4, pa.int8())))

    def needed(self, length: int) -> pa.BooleanArray:
        """The keep mask: the YES bit."""
        return materialize(self.yes, length)

    def certain(self, length: int) -> pa.BooleanArray:
        """Exactly ``YES``: every row of the container satisfies the predicate (no row false, none unknown)."""
        return materialize(p_and(self.yes, p_and(p_not(self.no), p_not(self.null))), length)


def planes_and(children: Sequence[TruthPlanes]) -> TruthPlanes:
    """N-ary AND over planes, with the formulas of the module docstring."""
    some_null = p_any([c.null for c in children])
    return TruthPlanes(
        yes=p_all([c.yes for c in children]),
        no=p_any([c.no for c in children]),
        null=p_and(some_null, p_all([p_or(c.yes, c.null) for c in children])) if some_null is not False else False,
    )


def planes_or(children: Sequence[TruthPlanes]) -> TruthPlanes:
    """N-ary OR over planes: the dual of :func:`planes_and`."""
    some_null = p_any([c.null for c in children])
    return TruthPlanes(
        yes=p_any([c.yes for c in children]),
        no=p_all([c.no for c in children]),
        null=p_and(some_null, p_all([p_or(c.no, c.null) for c in children])) if some_null is not False else False,
    )


def planes_not(child: TruthPlanes) -> TruthPlanes:
    return TruthPlanes(yes=child.no, no=child.yes, null=child.null)
