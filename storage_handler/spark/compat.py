"""What differs between the pyspark lines this package supports (3.5, 4.0 through 4.3), in one place.

Every module under ``storage_handler/spark/`` imports on every line; a feature that needs a newer pyspark asks
:func:`require` when it is used and fails with one line naming the version and the feature:

=======================================  ==========  ===================================================
pyspark API                              from        used by
=======================================  ==========  ===================================================
``pyspark.sql.datasource`` (DataSource)  4.0         ``spark.read.format("hsh")``
data-source filter push-down             4.1         ``.option("pruneByQueryFilters", "true")``
``to_arrow_schema(timezone=)``           4.2         the data source's reader (4.0/4.1: ``timestamp_utc``)
=======================================  ==========  ===================================================

The session extension (Java), ``read_table`` and the prune service need none of these: they run on every line.
"""

from __future__ import annotations

import functools
from typing import Any

from storage_handler.decode import filters as ours
from storage_handler.errors import UnsupportedSparkError

PYTHON_DATA_SOURCE = (4, 0)
FILTER_PUSHDOWN = (4, 1)


@functools.cache
def pyspark_version() -> tuple[int, int]:
    """(major, minor) of the importable pyspark."""
    import pyspark

    major, minor = pyspark.__version__.split(".")[:2]
    return int(major), int(minor)


def require(minimum: tuple[int, int], feature: str) -> None:
    """One line naming ``feature`` and the versions, unless the pyspark in use is at least ``minimum``."""
    if pyspark_version() < minimum:
        import pyspark

        raise UnsupportedSparkError(
            f"{feature} needs pyspark {minimum[0]}.{minimum[1]} or newer; this is pyspark {pyspark.__version__}"
        )


def has(minimum: tuple[int, int]) -> bool:
    return pyspark_version() >= minimum


def arrow_schema(schema: Any) -> Any:
    """The Arrow schema pyspark expects batches of ``schema`` (a ``StructType``) in: timestamps in UTC."""
    from pyspark.sql.pandas.types import to_arrow_schema

    if pyspark_version() >= (4, 2):
        return to_arrow_schema(schema, timezone="UTC")
    return to_arrow_schema(schema, timestamp_utc=True)  # type: ignore[call-arg]  # pyspark 4.0, 4.1


def from_pyspark(f: Any) -> ours.Filter:
    """A pyspark data-source filter (4.1+) as the project's own (same name, same fields); raises
    ``KeyError`` for a class it does not know (a newer pyspark's), which the caller leaves out of pruning."""
    cls = ours.BY_NAME[type(f).__name__]
    if cls is ours.Not:
        return ours.Not(from_pyspark(f.child))
    if cls in (ours.IsNull, ours.IsNotNull):
        return cls(tuple(f.attribute))  # type: ignore[call-arg]
    if cls is ours.In:
        return ours.In(tuple(f.attribute), tuple(f.value))
    return cls(tuple(f.attribute), f.value)  # type: ignore[call-arg]
