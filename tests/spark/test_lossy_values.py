"""Which filter values the Python data source may trust (:mod:`storage_handler.spark.lossy_values`)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from storage_handler.decode.filters import EqualTo, In, IsNull, Not
from storage_handler.spark.lossy_values import carries_exact_values, is_exact


def test_decimals_with_as_many_digits_as_pyspark_keeps_may_be_rounded() -> None:
    assert is_exact(Decimal("1.5")) and is_exact(Decimal("9" * 27))
    assert not is_exact(Decimal("9" * 28)) and not is_exact(Decimal("1." + "0" * 27))


def test_the_day_gregorian_gap_dates_collapse_to() -> None:
    assert not is_exact(dt.date(1582, 10, 15))
    assert is_exact(dt.date(1582, 10, 4)) and is_exact(dt.date(1582, 10, 16)) and is_exact(dt.date(1400, 1, 1))
    utc = dt.UTC
    assert not is_exact(dt.datetime(1582, 10, 15, 12, tzinfo=utc))
    assert not is_exact(dt.datetime(1582, 10, 15, 23, tzinfo=dt.timezone(dt.timedelta(hours=-10))))  # 10-16 UTC
    assert not is_exact(dt.datetime(1582, 10, 15, 3))  # zone-less: its own wall-clock day
    assert is_exact(dt.datetime(1582, 10, 20, tzinfo=utc)) and is_exact(dt.datetime(2024, 1, 1))


def test_filters_are_judged_by_every_value_they_hold() -> None:
    assert carries_exact_values(EqualTo(("d",), dt.date(2024, 1, 1)))
    assert not carries_exact_values(In(("d",), (dt.date(2024, 1, 1), dt.date(1582, 10, 15))))
    assert not carries_exact_values(Not(EqualTo(("w",), Decimal("9" * 30))))
    assert carries_exact_values(IsNull(("d",)))
