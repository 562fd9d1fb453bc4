"""Hypothesis strategies for random expression trees in the canonical form the HiveQL parser produces."""

from __future__ import annotations

from decimal import Decimal

from hypothesis import strategies as st

from storage_handler.errors import FilterError
from storage_handler.expr.nodes import (
    BIGINT,
    DOUBLE,
    Call,
    Column,
    Constant,
    Expr,
    and_,
    between,
    call,
    decimal_type_of,
    in_,
    lit,
    not_,
    or_,
)
from storage_handler.types import HiveType, parse_hive_type

SCHEMA: dict[str, HiveType] = {
    name: parse_hive_type(text)
    for name, text in {
        "i": "int", "t": "tinyint", "s": "smallint", "l": "bigint", "f": "float", "d": "double",
        "dec": "decimal(10,2)", "str": "string", "vc": "varchar(10)", "ch": "char(3)", "dt": "date",
        "ts": "timestamp", "b": "boolean", "bin": "binary", "a`b": "int", "select": "string", "x y": "date",
        "ünï": "string",
    }.items()
}
columns = st.sampled_from([Column(n, t) for n, t in SCHEMA.items()])


def _decimal(value: Decimal) -> Constant | None:
    try:
        return Constant(value, decimal_type_of(value))
    except FilterError:
        return None


_text = st.text(st.characters(exclude_categories=("Cs",)), max_size=12)
constants = st.one_of(
    st.integers(-(2**31), 2**31 - 1).map(lit),
    st.integers(-(2**63), 2**63 - 1).map(lambda v: Constant(v, BIGINT)),
    st.integers(-128, 127).map(lambda v: Constant(v, parse_hive_type("tinyint"))),
    st.integers(-(2**15), 2**15 - 1).map(lambda v: Constant(v, parse_hive_type("smallint"))),
    st.floats().map(lambda v: Constant(v, DOUBLE)),
    st.floats(width=32).map(lambda v: Constant(v, parse_hive_type("float"))),
    st.decimals(allow_nan=False, allow_infinity=False).map(_decimal).filter(lambda c: c is not None),
    _text.map(lit),
    st.binary(max_size=8).map(lit),
    st.dates().map(lit),
    st.datetimes().map(lit),
    st.booleans().map(lit),
    st.just(Constant(None, None)),
    st.sampled_from(["int", "string", "date", "decimal(5,1)"]).map(lambda t: Constant(None, parse_hive_type(t))),
)
atoms = st.one_of(columns, constants)


def _calls(children: st.SearchStrategy[Expr]) -> st.SearchStrategy[Expr]:
    two = st.tuples(children, children)
    return st.one_of(
        st.tuples(st.sampled_from(["=", "<>", "<", "<=", ">", ">=", "<=>", "like", "rlike", "+", "*", "div", "%"]),
                  children, children).map(lambda t: call(t[0], t[1], t[2])),
        st.lists(children, min_size=2, max_size=4).map(lambda xs: and_(*xs)),
        st.lists(children, min_size=2, max_size=4).map(lambda xs: or_(*xs)),
        children.map(not_),
        children.map(lambda x: call("isnull", x)),
        children.map(lambda x: call("isnotnull", x)),
        st.tuples(children, st.lists(children, min_size=1, max_size=3)).map(lambda t: in_(t[0], *t[1])),
        st.tuples(children, children, children, st.booleans()).map(
            lambda t: between(t[0], t[1], t[2], invert=t[3])),
        columns.map(lambda c: call("negative", c)),
        columns.map(lambda c: Call("cast", (c, lit("decimal(12,3)")))),
        two.map(lambda t: call("coalesce", t[0], t[1])),
        children.map(lambda x: call("upper", x)),
    )


def _canonical(expr: Expr) -> bool:
    """and/or children are never the same junction (the parser flattens them)."""
    if isinstance(expr, Call):
        if expr.function in ("and", "or") and any(
            isinstance(a, Call) and a.function == expr.function for a in expr.args
        ):
            return False
        return all(_canonical(a) for a in expr.args)
    return True


expressions = st.recursive(atoms, _calls, max_leaves=12).filter(_canonical)
