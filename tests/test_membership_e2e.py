"""No false negatives with bloom filters and value lists, end to end (issue 17, "the one rule").

The random tables, storage changes, predicates and the full-scan oracle of ``no_false_negatives_oracle.py``,
with every column that can have one given a bloom filter and/or a value list (a random, often small, cap, so some
files keep a list and some do not; a random false-positive rate). The predicates' literals come mostly from the
data and its neighbours, so many files are ruled out by a filter rather than by min/max: every file holding a row
for which the predicate is TRUE must still be kept.
"""

from __future__ import annotations

import tempfile

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from storage_handler.stats.membership.bloom import MEMBERSHIP_TYPES
from storage_handler.stats.membership.spec import MembershipSpec
from tests.e2e_strategies import Scenario, scenarios
from tests.helpers import examples
from tests.no_false_negatives_oracle import run_scenario


@st.composite
def with_membership(draw: st.DrawFn) -> tuple[Scenario, MembershipSpec]:
    sc = draw(scenarios())
    eligible = [c.name for c in sc.columns if c.hive.name in MEMBERSHIP_TYPES]
    blooms = tuple(c for c in eligible if draw(st.integers(0, 3)))  # most eligible columns
    lists = tuple(c for c in eligible if draw(st.booleans()))
    spec = MembershipSpec(blooms, draw(st.sampled_from([0.3, 0.05, 0.01])), lists,
                          draw(st.sampled_from([1, 2, 3, 8, 64])))
    return sc, spec


@settings(max_examples=examples(100), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])
@given(with_membership())
def test_every_file_with_a_matching_row_is_kept_with_filters(case: tuple[Scenario, MembershipSpec]) -> None:
    sc, spec = case
    with tempfile.TemporaryDirectory() as tmp:
        pruned = run_scenario(sc, tmp, spec)
    event("pruned some files" if pruned else "pruned nothing")
    event("with filters" if not spec.is_empty else "no eligible column")
