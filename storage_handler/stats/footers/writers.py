"""Which writers' footer bounds can be believed where pyarrow believes them all.

pyarrow already drops the statistics of writers known to have ordered values wrongly (PARQUET-251 / 686: byte
arrays compared as signed bytes by parquet-mr before 1.8, unsigned types before 1.10). It keeps one more known-bad
case, because its sort order for DECIMAL is "signed" whatever the physical type: **decimals stored as bytes**
(``FIXED_LEN_BYTE_ARRAY`` / ``BYTE_ARRAY``, big-endian two's complement), whose only correct order flips the first
byte's sign bit and then compares bytes unsigned. Two families of writers compared them otherwise:

* parquet-mr before 1.10 (Hive 2.x bundles 1.8.1 and writes every decimal this way; Spark 2.0-2.3 above 18
  digits): signed bytes throughout, so 1.28 (``00 80``) sorts below 1.00 (``00 64``). parquet-java's own reader
  ignores these bounds (no column order, DECIMAL's legacy order is unknown); pyarrow does not.
* parquet-cpp, and parquet-cpp-arrow before 4.0 (PARQUET-1655): a lexicographic compare of signed chars.
  PARQUET-2003 asks every reader to ignore them.

Decision: such bounds are believed only from writers known to order them right -- parquet-mr (parquet-java)
1.10 and later, parquet-cpp-arrow 4.0 and later -- and are unknown from every other writer, including a footer
with no ``created_by``: an unknown writer's bounds mean "keep the file". Decimals stored as INT32 / INT64 are
plain signed integers and every writer ordered those right.
"""

from __future__ import annotations

import functools
import re

#: decimal-as-bytes bounds are right from these writers at these versions and later
_FIXED_DECIMAL_ORDER = {"parquet-mr": (1, 10, 0), "parquet-cpp-arrow": (4, 0, 0)}
_CREATED_BY = re.compile(r"^\s*(\S+)\s+version\s+(\d+)\.(\d+)(?:\.(\d+))?")
DECIMAL_BYTES = frozenset({"FIXED_LEN_BYTE_ARRAY", "BYTE_ARRAY"})


@functools.lru_cache(maxsize=256)
def orders_decimal_bytes(created_by: str) -> bool:
    """Whether the writer named by a footer's ``created_by`` (``parquet-mr version 1.12.3 (build ...)``,
    ``parquet-cpp-arrow version 16.1.0``) ordered decimals stored as bytes correctly in its min/max."""
    match = _CREATED_BY.match(created_by or "")
    if match is None:
        return False
    fixed = _FIXED_DECIMAL_ORDER.get(match.group(1).lower())
    version = (int(match.group(2)), int(match.group(3)), int(match.group(4) or 0))
    return fixed is not None and version >= fixed
