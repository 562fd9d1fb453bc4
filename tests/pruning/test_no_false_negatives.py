"""No false negatives: every file holding a row that matches the predicate is kept.

Each generated "file" is a small column of values (nulls, NaN, +-0.0, type extremes); its statistics are computed
here the way a conservative index would (NaN present -> bounds unknown). The predicate is then evaluated row by row
with SQL's three-valued semantics, independently of both evaluators.
"""

from __future__ import annotations

import math
from typing import Any

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from storage_handler.pruning import PredicateEvaluator
from storage_handler.pruning.domain import UnconvertibleLiteral
from storage_handler.pruning.tree import leaf_from_sarg
from storage_handler.sarg import LeafOperator, SearchArgument, TruthValue
from storage_handler.types import HiveType, parse_hive_type
from tests.helpers import examples
from tests.pruning.helpers import index_table
from tests.pruning.scalar_oracle import _cmp, _in_domain, _literal, _Unknown
from tests.pruning.strategies import BOUNDS, LITERALS, OPERATORS, build_sarg, trees

TV = TruthValue
TYPES = ["int", "bigint", "double", "float", "decimal(5,2)", "string", "date", "timestamp", "boolean"]


def _is_nan(v: object) -> bool:
    return isinstance(v, float) and math.isnan(v)


def file_stats(values: list[Any]) -> dict[str, Any]:
    present = [v for v in values if v is not None]
    nan = any(_is_nan(v) for v in present)
    ordered = sorted((v for v in present if not _is_nan(v)), key=_key)
    lo = hi = None
    if ordered and not nan:
        lo, hi = ordered[0], ordered[-1]
    return {"num_records": len(values), "min": {"c": lo}, "max": {"c": hi},
            "nulls": {"c": sum(v is None for v in values)}}


def _key(v: object) -> Any:
    from functools import cmp_to_key

    return cmp_to_key(_cmp)(v)


def row_leaf(op: LeafOperator, literals: tuple[Any, ...], value: Any, hive_type: HiveType) -> TruthValue:
    """SQL semantics of one leaf for one row (literals already converted, NaN compares false)."""
    if op == LeafOperator.IS_NULL:
        return TV.YES if value is None else TV.NO
    if value is None:
        return TV.NO if op == LeafOperator.NULL_SAFE_EQUALS else TV.NULL
    if _is_nan(value):
        return TV.NO

    def eq(v: Any) -> bool:
        return _in_domain(v, hive_type) and _cmp(value, v) == 0

    if op in (LeafOperator.EQUALS, LeafOperator.NULL_SAFE_EQUALS):
        ok = eq(literals[0])
    elif op == LeafOperator.LESS_THAN:
        ok = _cmp(value, literals[0]) < 0
    elif op == LeafOperator.LESS_THAN_EQUALS:
        ok = _cmp(value, literals[0]) <= 0
    elif op == LeafOperator.IN:
        ok = any(eq(v) for v in literals)
    else:
        ok = _cmp(literals[0], value) <= 0 <= _cmp(literals[1], value)
    return TV.YES if ok else TV.NO


def row_matches(sarg: SearchArgument, value: Any, hive_type: HiveType) -> bool:
    values = []
    for i, predicate in enumerate(sarg.leaves):
        leaf = leaf_from_sarg(i, predicate)
        try:
            literals = tuple(_literal(v, hive_type) for v in leaf.literals)
        except (_Unknown, UnconvertibleLiteral):
            values.append(TV.NULL)  # the evaluator keeps the file whatever this leaf says (YES_NO_NULL)
            continue
        values.append(row_leaf(leaf.operator, literals, value, hive_type))
    return sarg.evaluate(values) is TV.YES


@st.composite
def case(draw: st.DrawFn) -> tuple[str, list[list[Any]], SearchArgument]:
    type_text = draw(st.sampled_from(TYPES))
    pool = BOUNDS[type_text]
    files = draw(st.lists(st.lists(st.sampled_from(pool + [None]), max_size=5), min_size=1, max_size=6))
    literal_pool = LITERALS[type_text]

    @st.composite
    def leaf(d: st.DrawFn) -> tuple[str, str, tuple[Any, ...]]:
        op = d(st.sampled_from(OPERATORS))
        if op == "is_null":
            return op, "c", ()
        first = d(st.sampled_from(literal_pool))
        same = [v for v in literal_pool if type(v) is type(first)]
        if op == "between":
            return op, "c", (first, d(st.sampled_from(same)))
        if op == "in_":
            return op, "c", (first, *d(st.lists(st.sampled_from(same), max_size=3)))
        return op, "c", (first,)

    try:
        sarg = build_sarg(draw(trees(leaf())))
    except Exception:  # noqa: BLE001 - a literal the builder refuses
        from hypothesis import reject

        reject()
    return type_text, files, sarg


@settings(max_examples=examples(400), deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.filter_too_much])
@given(case())
def test_every_file_with_a_matching_row_is_kept(generated: tuple[str, list[list[Any]], SearchArgument]) -> None:
    type_text, files, sarg = generated
    hive_type = parse_hive_type(type_text)
    table = index_table([("c", hive_type)], [file_stats(values) for values in files])
    keep = PredicateEvaluator(sarg, [("c", hive_type)]).eval(table).to_pylist()
    for values, kept in zip(files, keep, strict=True):
        if any(row_matches(sarg, v, hive_type) for v in values):
            assert kept, f"{sarg.to_old_string()} pruned a file holding a match: {values}"


def test_index_table_round_trip_of_generated_stats() -> None:
    table = index_table([("c", parse_hive_type("double"))], [file_stats([1.0, None, -0.0]), file_stats([math.nan])])
    assert table.column("min_values").to_pylist() == [{"c": -0.0}, {"c": None}]
    assert table.column("null_count").to_pylist() == [{"c": 1}, {"c": 0}]
    assert isinstance(table, pa.Table)
