"""Hypothesis strategies for builder specs (see ``oracle.py`` for the spec shape).

Biased towards what breaks SARG implementations: few column names and literals (so leaves repeat and must be
de-duplicated), YES_NO_NULL and other constants, NOT over AND/OR, ORs of ANDs near and past the 256-combination CNF
threshold, and literals whose Java printing is tricky (doubles Java 17 prints oddly, NaN, -0.0, decimal scales,
timestamps with fractions, dates in the 1582 calendar gap, strings with spaces and unpaired surrogates).
"""

from __future__ import annotations

import datetime as dt
import decimal
import struct

from hypothesis import strategies as st

from storage_handler.sarg import LeafOperator, LeafType, TruthValue

from .oracle import date_range_sample

COLUMNS = ["x", "y", "z", "event id", "ünï", ""]

TRICKY_FLOATS = [
    0.0, -0.0, 1.0, -1.5, 0.1, 0.001, 1e-4, 1e7, 9999999.0, 1e10, 1.0e23, 2.0**62, 2.0**63, 2.82879384806159e17,
    1.9400994884341945e25, 5e-324, 2.2250738585072014e-308, 1.7976931348623157e308, float("nan"), float("inf"),
    float("-inf"), 123456789.0, 0.30000000000000004,
]  # fmt: skip
TRICKY_DECIMALS = [
    "12.50", "12.5", "0", "-0", "0.000", "1E+10", "1E-38", "-0.0001", "99999999999999999999999999999999999999",
    "0.12345678901234567890123456789012345678", "100", "1E+2",
]  # fmt: skip
TRICKY_STRINGS = ["abc", "a b", "", "(x)", "null", "\ud800 lone", "é€𝄞", "line\nbreak", "  "]


def _bits_to_float(bits: int) -> float:
    return struct.unpack(">d", struct.pack(">Q", bits))[0]


floats = st.one_of(
    st.sampled_from(TRICKY_FLOATS),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(0, 2**64 - 1).map(_bits_to_float),
    st.integers(-(10**17), 10**17).flatmap(lambda n: st.integers(-30, 30).map(lambda e: n * 10.0**e)),
)


@st.composite
def hive_decimals(draw: st.DrawFn) -> decimal.Decimal:
    """Decimals Hive holds exactly: at most 38 digits and scale 38 (trailing zeros allowed in the input)."""
    if draw(st.booleans()):
        return decimal.Decimal(draw(st.sampled_from(TRICKY_DECIMALS)))
    scale = draw(st.integers(0, 38))
    digits = draw(st.integers(1, 38))
    integer_digits = draw(st.integers(0, max(0, 38 - scale)))
    number = draw(st.integers(0, 10 ** min(digits, integer_digits + scale) - 1))
    trailing = draw(st.integers(0, 3))
    sign = draw(st.integers(0, 1))
    coefficient = tuple(int(c) for c in str(number)) + (0,) * trailing
    return decimal.Decimal((sign, coefficient, -scale - trailing))


dates = st.one_of(st.dates(), st.sampled_from(date_range_sample()))
timestamps = st.one_of(
    st.datetimes(),
    st.builds(
        dt.datetime.combine,
        st.sampled_from(date_range_sample()),
        st.times(),
    ),
    st.sampled_from(
        [dt.datetime(2024, 1, 2, 10, 11, 12, 500000), dt.datetime(1970, 1, 1), dt.datetime(1, 1, 1)]
    ),
)

LITERALS = {
    LeafType.LONG: st.one_of(st.sampled_from([0, 1, -1, 2, 42]), st.integers(-(2**63), 2**63 - 1)),
    LeafType.FLOAT: floats,
    LeafType.STRING: st.one_of(st.sampled_from(TRICKY_STRINGS), st.text(max_size=8)),
    LeafType.DATE: dates,
    LeafType.DECIMAL: hive_decimals(),
    LeafType.TIMESTAMP: timestamps,
    LeafType.BOOLEAN: st.booleans(),
}


@st.composite
def leaves(draw: st.DrawFn, allow_nulls: bool = True) -> tuple:
    """A ("leaf", op, type, column, *literals) node; sometimes a null column/literal (Hive: YES_NO_NULL)."""
    op = draw(st.sampled_from(list(LeafOperator)))
    leaf_type = draw(st.sampled_from(list(LeafType)))
    column: str | None = draw(st.sampled_from(COLUMNS))
    literal = LITERALS[leaf_type]
    if allow_nulls and draw(st.integers(0, 30)) == 0:
        column = None
    if op is LeafOperator.IS_NULL:
        lits: list = []
    elif op is LeafOperator.IN:
        element = st.one_of(st.none(), literal) if allow_nulls and draw(st.booleans()) else literal
        lits = draw(st.lists(element, min_size=1, max_size=4))
    elif op is LeafOperator.BETWEEN:
        lits = [draw(literal), draw(literal)]
    else:
        lits = [draw(literal)]
    if allow_nulls and lits and op is not LeafOperator.IN and draw(st.integers(0, 30)) == 0:
        lits[draw(st.integers(0, len(lits) - 1))] = None
    return ("leaf", op, leaf_type, column, *lits)


def small_leaves() -> st.SearchStrategy[tuple]:
    """Leaves over a tiny pool of columns and literals, so that equal leaves recur within a tree."""
    return st.builds(
        lambda op, column, value: (
            "leaf",
            op,
            LeafType.LONG,
            column,
            *([] if op is LeafOperator.IS_NULL else [value, value + 1][: _arity(op)]),
        ),
        st.sampled_from(list(LeafOperator)),
        st.sampled_from(["x", "y", "z"]),
        st.integers(0, 3),
    )


def _arity(op: LeafOperator) -> int:
    return 2 if op in (LeafOperator.BETWEEN, LeafOperator.IN) else 1


constants = st.sampled_from(list(TruthValue)).map(lambda tv: ("lit", tv))
base_nodes = st.one_of(leaves(), small_leaves(), small_leaves(), constants)


def _extend(children: st.SearchStrategy) -> st.SearchStrategy:
    return st.one_of(
        st.lists(children, min_size=1, max_size=5).map(lambda kids: ("and", *kids)),
        st.lists(children, min_size=1, max_size=5).map(lambda kids: ("or", *kids)),
        children.map(lambda kid: ("not", kid)),
    )


trees = st.recursive(base_nodes, _extend, max_leaves=24)
specs = st.lists(trees, min_size=0, max_size=3)


@st.composite
def cnf_stress(draw: st.DrawFn) -> list:
    """An OR of ANDs whose CNF expansion lands just below, at, or above 256 combinations, possibly negated or
    nested in another OR, with extra non-AND disjuncts and duplicate leaves."""
    widths = draw(
        st.sampled_from(
            [
                [16, 16],
                [16, 17],
                [2, 128],
                [2, 129],
                [4, 4, 4, 4],
                [4, 4, 4, 5],
                [3, 3, 3, 3, 3],
                [7, 7, 7],
                [257],
            ]
        )
    )
    conjunctions = [("and", *draw(st.lists(small_leaves(), min_size=w, max_size=w))) for w in widths]
    extras = draw(st.lists(st.one_of(small_leaves(), constants), max_size=2))
    tree = ("or", *conjunctions, *extras)
    if draw(st.booleans()):
        tree = ("not", ("not", tree))
    if draw(st.booleans()):
        tree = ("or", tree, ("and", *draw(st.lists(small_leaves(), min_size=1, max_size=3))))
    return [tree, *draw(st.lists(trees, max_size=1))]
