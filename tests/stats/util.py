"""Small helpers for the stats tests: write a Parquet file, read its stats."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from storage_handler.stats import ColumnStats, FileStats, StatsOptions, read_file_stats
from storage_handler.types import parse_schema_text


def write(folder: Path | str, name: str, table: pa.Table, **kwargs: object) -> str:
    """Write ``table`` to ``folder/name`` (folders created) and return the path."""
    path = os.path.join(str(folder), name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    pq.write_table(table, path, **kwargs)
    return path


def file_stats(path: str, schema: str, scan_floats: bool = False) -> FileStats:
    return read_file_stats(path, parse_schema_text(schema), StatsOptions(scan_float_columns=scan_floats))


def col(path: str, schema: str, name: str | None = None, scan_floats: bool = False) -> ColumnStats:
    """Stats of one column; ``schema`` like ``"x int"``, the column defaults to the first one."""
    cols = parse_schema_text(schema)
    return file_stats(path, schema, scan_floats).column(name or cols[0][0])
