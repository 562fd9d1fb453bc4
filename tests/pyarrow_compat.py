"""What the installed pyarrow can write, for tests that write Parquet files with newer writer options.

The product supports pyarrow 14 and newer (the low end is tested in ``.venvs/pyspark-3.5``). Reading is the
product's job; writing odd files is the tests'. A writer option an old pyarrow lacks is dropped where the file is
still a meaningful case (``store_decimal_as_integer``: decimals are then written as fixed-length bytes, which
the reader must handle too), and a test that needs the option itself (bloom filters) is skipped, naming it.
"""

from __future__ import annotations

import functools
import io

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

_PROBES = {
    "store_decimal_as_integer": True,
    "bloom_filter_options": {"c": True},
}


@functools.cache
def can_write(option: str) -> bool:
    """Whether ``pq.write_table`` accepts ``option`` in this pyarrow."""
    try:
        pq.write_table(pa.table({"c": [1]}), io.BytesIO(), **{option: _PROBES[option]})
    except TypeError:
        return False
    return True


def writer_options(**options: object) -> dict[str, object]:
    """``options`` without ``store_decimal_as_integer`` where this pyarrow cannot write it."""
    if "store_decimal_as_integer" in options and not can_write("store_decimal_as_integer"):
        options.pop("store_decimal_as_integer")
    return options


needs_bloom_writer = pytest.mark.skipif(
    not can_write("bloom_filter_options"),
    reason=f"pyarrow {pa.__version__} cannot write Parquet bloom filters (bloom_filter_options)",
)
