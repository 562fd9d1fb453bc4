"""hive-storage-handler: file-level data skipping for Hive-registered Parquet tables read by Spark."""

from __future__ import annotations

__version__ = "0.1.0"
