"""Property tests: our SearchArguments print and evaluate exactly like Hive's jar (storage-api 2.8.1).

Each hypothesis example is a batch of random builder specs sent to the Java oracle in one round trip; both
``toString()`` and ``toOldString()``, the compact expression, the leaf count and ``evaluate`` over random leaf
values must be identical. Shrunk counterexamples are kept as plain unit tests in ``test_hive_examples.py``.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from storage_handler.errors import FilterError
from storage_handler.sarg import TruthValue
from tests.helpers import examples

from .oracle import HiveOracle, assert_same_as_hive, build
from .strategies import cnf_stress, specs

_HEALTH = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture]


def _evals_for(data: st.DataObject, spec_list: list) -> list[list[list[TruthValue]]]:
    """Random leaf values for each spec (sized by our leaf count; a mismatch shows up in the strings anyway)."""
    result: list[list[list[TruthValue]]] = []
    for spec in spec_list:
        try:
            count = len(build(spec).leaves)
        except FilterError:
            result.append([])
            continue
        values = st.lists(st.sampled_from(list(TruthValue)), min_size=count, max_size=count)
        result.append(data.draw(st.lists(values, min_size=1, max_size=3)))
    return result


@settings(max_examples=examples(200), deadline=None, suppress_health_check=_HEALTH)
@given(batch=st.lists(specs, min_size=15, max_size=40), data=st.data())
def test_random_trees_match_hive(hive_oracle: HiveOracle, batch: list, data: st.DataObject) -> None:
    assert_same_as_hive(hive_oracle, batch, _evals_for(data, batch))


@settings(max_examples=examples(60), deadline=None, suppress_health_check=_HEALTH)
@given(batch=st.lists(cnf_stress(), min_size=2, max_size=6), data=st.data())
def test_cnf_threshold_shapes_match_hive(hive_oracle: HiveOracle, batch: list, data: st.DataObject) -> None:
    assert_same_as_hive(hive_oracle, batch, _evals_for(data, batch))
