"""Decimals stored as bytes: bounds only from writers that ordered them right (``footers/writers.py``)."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from storage_handler.stats import ColumnStats
from storage_handler.stats.footers import thrift_compact as tc
from storage_handler.stats.footers.writers import orders_decimal_bytes
from tests.pyarrow_compat import can_write, writer_options
from tests.stats.util import col

VALUES = [Decimal("1.00"), Decimal("1.28"), Decimal("2.56")]  # unscaled 00 64, 00 80, 01 00


@pytest.mark.parametrize(("created_by", "trusted"), [
    ("parquet-mr version 1.8.1 (build 4aba4dae7bb0d4edbcf7923ae1339f28fd3f7fcf)", False),  # Hive 2.x
    ("parquet-mr version 1.9.0 (build x)", False), ("parquet-mr version 1.10.0", True),
    ("parquet-mr version 1.10", True), ("parquet-mr version 1.13.1 (build db4183109d5b)", True),
    ("parquet-cpp version 1.5.1-SNAPSHOT", False), ("parquet-cpp-arrow version 3.0.0", False),
    ("parquet-cpp-arrow version 4.0.0", True), ("parquet-cpp-arrow version 26.0.1", True),
    ("impala version 4.0", False), ("DuckDB version v1.1.0", False), ("", False), ("parquet-mr", False),
])
def test_which_writers_ordered_decimal_bytes_right(created_by: str, trusted: bool) -> None:
    assert orders_decimal_bytes(created_by) is trusted


def _signed_bytes(b: bytes) -> list[int]:
    return [x - 256 if x >= 128 else x for x in b]


def _legacy_file(path: Path, created_by: str, *, as_integer: bool = False) -> None:
    """``VALUES`` as decimal(10,2), the footer rewritten as ``created_by`` would have written it: no column orders,
    min/max in the deprecated fields, ordered by signed bytes (min 1.28, max 2.56) unless stored as an integer."""
    pq.write_table(pa.table({"x": pa.array(VALUES, pa.decimal128(10, 2))}), path,
                   **(writer_options(store_decimal_as_integer=True) if as_integer else {}))
    body, footer = tc.split_file(path.read_bytes())
    footer[:] = [f for f in footer if f[0] not in (tc.FileMetaData.CREATED_BY, tc.FileMetaData.COLUMN_ORDERS)]
    footer.append([tc.FileMetaData.CREATED_BY, tc.BINARY, created_by.encode()])
    footer.sort(key=lambda f: f[0])
    if not as_integer:
        raw = [int(v * 100).to_bytes(5, "big", signed=True) for v in VALUES]
        group = tc.get(footer, tc.FileMetaData.ROW_GROUPS, tc.LIST)[0]
        meta = tc.get(tc.get(group, tc.RowGroup.COLUMNS, tc.LIST)[0], tc.ColumnChunk.META_DATA, tc.STRUCT)
        stats = tc.get(meta, tc.ColumnMetaData.STATISTICS, tc.STRUCT)
        keep = (tc.Statistics.NULL_COUNT, tc.Statistics.DISTINCT_COUNT)
        stats[:] = [f for f in stats if f[0] in keep]
        stats += [[tc.Statistics.MAX, tc.BINARY, max(raw, key=_signed_bytes)],
                  [tc.Statistics.MIN, tc.BINARY, min(raw, key=_signed_bytes)]]
        stats.sort(key=lambda f: f[0])
    path.write_bytes(tc.join_file(body, footer))


def test_hive_2s_decimal_bounds_are_unknown(tmp_path: Path) -> None:
    """parquet-mr 1.8.1 ordered 1.28 below 1.00: pyarrow reports min 1.28 (x = 1.00 pruned, min(x) answered 1.28
    from the index); Spark reads 1.00. The bounds are unknown now, the null count still counts."""
    path = tmp_path / "f.parquet"
    _legacy_file(path, "parquet-mr version 1.8.1 (build 4aba4dae7bb0d4edbcf7923ae1339f28fd3f7fcf)")
    assert pq.read_metadata(path).row_group(0).column(0).statistics.min == Decimal("1.28")  # what pyarrow believes
    assert col(str(path), "x decimal(10,2)") == ColumnStats(None, None, 0)


@pytest.mark.skipif(not can_write("store_decimal_as_integer"),
                    reason=f"pyarrow {pa.__version__} cannot store decimals as integers")
def test_decimals_stored_as_integers_keep_their_bounds_from_any_writer(tmp_path: Path) -> None:
    path = tmp_path / "f.parquet"
    _legacy_file(path, "parquet-mr version 1.8.1 (build x)", as_integer=True)
    assert col(str(path), "x decimal(10,2)") == ColumnStats(Decimal("1.00"), Decimal("2.56"), 0)


def test_a_current_writers_decimal_bytes_keep_their_bounds(tmp_path: Path) -> None:
    path = tmp_path / "f.parquet"
    pq.write_table(pa.table({"x": pa.array(VALUES, pa.decimal128(10, 2))}), path)
    assert pq.read_metadata(path).schema.column(0).physical_type == "FIXED_LEN_BYTE_ARRAY"
    assert col(str(path), "x decimal(10,2)") == ColumnStats(Decimal("1.00"), Decimal("2.56"), 0)
