"""Which filters Spark hands the Python data source still carry the query's exact values.

Spark converts each filter value on its way from the JVM to Python, and two of those conversions change values
(Spark 4.3, found by comparing with plain Spark):

* **Decimals** are rebuilt as ``Decimal(unscaled) * 10 ** -scale`` in Python's default 28-digit context, so a
  literal with more than 28 significant digits arrives rounded. A value with 28 digits may be such a result.
* **Dates and timestamps** pass through ``java.sql.Date``/``Timestamp``, whose hybrid Julian calendar has no
  1582-10-05..14: those days arrive as 1582-10-15.

Pruning with a changed value can skip a file that holds a matching row, so a filter with such a value is left
out of pruning; Spark still applies it to every row. The native scan is not affected: it reads the literals in
the JVM (``java/hsh/spark/FilterJson.java``).
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

from storage_handler.decode.filters import Filter, Not

#: pyspark's decimal context precision; a value with this many digits may have been rounded to it
_DECIMAL_DIGITS = 28
#: the day every date of the Gregorian gap arrives as, and the days a timestamp so moved can fall on in any zone
_GAP_DATE = dt.date(1582, 10, 15)
_GAP_TIMESTAMP_DAYS = (dt.date(1582, 10, 14), dt.date(1582, 10, 16))


def is_exact(value: Any) -> bool:
    """False for a value that may not be what the query said (see the module docstring)."""
    if isinstance(value, Decimal):
        return len(value.as_tuple().digits) < _DECIMAL_DIGITS
    if isinstance(value, dt.datetime):
        day = value.astimezone(dt.UTC).date() if value.tzinfo else value.date()
        return not _GAP_TIMESTAMP_DAYS[0] <= day <= _GAP_TIMESTAMP_DAYS[1]
    if isinstance(value, dt.date):
        return value != _GAP_DATE
    if isinstance(value, (tuple, list)):
        return all(is_exact(v) for v in value)
    return True


def carries_exact_values(f: Filter) -> bool:
    """Whether every value in ``f`` (an ``In`` list's too, a ``Not``'s child's too) is exact."""
    if isinstance(f, Not):
        return carries_exact_values(f.child)
    return is_exact(getattr(f, "value", None))
